"""The randomized SVD's centred genotype blocks, in one pass over the int8 block.

:func:`admixspec.ml.initial._randomized_svd` reads the genotypes as float32
blocks of ``G / 2 - f`` (0 where a call is missing) several times. NumPy made
each block in five passes (the cast, the halving, the subtraction, the
missing mask and its assignment); this kernel makes it in one, with the same
float32 operations in the same order, so the values are the same bits.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(parallel=True, cache=True, nogil=True)
def centre_block(block, f, scale, out):
    """``out = (block / 2 - f) * scale`` in float32, 0 where ``block < 0``.

    Parameters
    ----------
    block : numpy.ndarray, int8, shape (n_individuals, width)
    f : numpy.ndarray, float32, shape (width,)
        Allele frequencies of the block's SNPs.
    scale : numpy.ndarray, float32, shape (width,) or (0,)
        Per-SNP factors; empty for none.
    out : numpy.ndarray, float32, shape (n_individuals, width)
    """
    m, width = block.shape
    half = np.float32(0.5)
    scaled = scale.shape[0] > 0
    for i in numba.prange(m):
        for j in range(width):
            g = block[i, j]
            if g < 0:
                out[i, j] = np.float32(0.0)
            elif scaled:
                out[i, j] = (np.float32(g) * half - f[j]) * scale[j]
            else:
                out[i, j] = np.float32(g) * half - f[j]
