"""Second- and third-order moments of genotype data, streamed over SNP blocks.

In the admixture model the *samples* are SNPs and the *features* are
individuals: ``x_j = g_j / 2`` is the column of individual frequencies at SNP
``j`` and ``E[x_j | h_j] = W^T h_j`` with ``W = Q^T``. Binomial noise is
independent across individuals, so moment entries whose indices are all
distinct are unbiased; the diagonal of ``M2`` and the repeated-index entries
of ``M3`` are not, and are handled by :mod:`admixspec.spectral.denoise`.

Nothing here forms an ``m x m x m`` array: the third moment is only ever
needed contracted with an ``m x K`` matrix, and every data-sized quantity is a
sum over SNPs, accumulated block by block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg.blas

from ..core.exceptions import InputError
from ..core.frequencies import frequency_blocks

__all__ = [
    "SecondMoments",
    "ThirdMomentTerms",
    "add_outer_products",
    "fill_upper",
    "second_moments",
    "unbiased_second_moment",
    "whitened_third_moment_terms",
]

#: Rows of the symmetric matrix copied at a time by :func:`fill_upper`: its
#: temporaries are this many rows (a few MiB at 5,000 individuals).
_FILL_ROWS = 64


def add_outer_products(total, x):
    """``total += x @ x.T`` on the lower triangle of ``total``, in place.

    One BLAS symmetric rank-k update (``dsyrk``): half the products of
    ``x @ x.T`` and no ``m x m`` temporary, which at 5,000 individuals is
    191 MiB. The upper triangle is left as it was; :func:`fill_upper` copies
    the lower one there before the matrix is read whole.

    Parameters
    ----------
    total : numpy.ndarray, float64, shape (m, m), C-contiguous
    x : numpy.ndarray, float64, shape (m, b)
    """
    # total.T is total's memory seen in Fortran order, whose upper triangle
    # is total's lower one
    updated = scipy.linalg.blas.dsyrk(1.0, np.ascontiguousarray(x).T, beta=1.0,
                                      c=total.T, trans=1, overwrite_c=1)
    if not np.shares_memory(updated, total):  # the wrapper copied (never seen)
        total[...] = updated.T


def fill_upper(total):
    """Copy the lower triangle of a square matrix onto its upper one, in place.

    Parameters
    ----------
    total : numpy.ndarray, shape (m, m)

    Returns
    -------
    numpy.ndarray
        ``total``, now symmetric.
    """
    m = total.shape[0]
    for start in range(0, m, _FILL_ROWS):  # row blocks: no m x m temporary
        stop = min(start + _FILL_ROWS, m)
        total[start:stop, stop:] = total[stop:, start:stop].T
        square = total[start:stop, start:stop]
        above = np.triu_indices(stop - start, 1)
        square[above] = square.T[above]
    return total

@dataclass
class SecondMoments:
    """Uncentred second moment of the individuals' allele frequencies.

    Attributes
    ----------
    M2 : numpy.ndarray, float64, shape (m, m)
        ``(1/n) sum_j x_j x_j^T``; its diagonal is biased by binomial noise.
    mean : numpy.ndarray, float64, shape (m,)
        ``(1/n) sum_j x_j``.
    n_snps : int
        Number of SNPs summed over.
    """

    M2: np.ndarray
    mean: np.ndarray
    n_snps: int


def second_moments(blocks) -> SecondMoments:
    """Accumulate the second moment over an iterable of frequency blocks.

    Parameters
    ----------
    blocks : iterable of (columns, x)
        As yielded by :func:`admixspec.core.frequencies.frequency_blocks`.

    Returns
    -------
    SecondMoments
    """
    M2 = None
    total = None
    n = 0
    for _, x in blocks:
        if M2 is None:
            M2 = np.zeros((x.shape[0], x.shape[0]))
            total = np.zeros(x.shape[0])
        add_outer_products(M2, x)
        total += x.sum(axis=1)
        n += x.shape[1]
    if M2 is None or n == 0:
        raise InputError("no SNPs to compute moments from")
    M2 /= n
    return SecondMoments(M2=fill_upper(M2), mean=total / n, n_snps=n)


def unbiased_second_moment(dosage, *, snps=None):
    """``(1/n) sum_j x_j x_j^T`` with its diagonal's binomial noise removed.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (m, n_all)
        Copies of the counted allele, -1 for missing (imputed by the SNP's
        mean, as :func:`admixspec.core.frequencies.frequency_blocks` does).
    snps : numpy.ndarray of int, optional
        Columns to use (default all).

    Returns
    -------
    numpy.ndarray, float64, shape (m, m)
        Off the diagonal the second moment of ``x = g/2``; on it
        ``(1/n) sum_j x_ij^2`` less a quarter of individual ``i``'s share of
        heterozygous calls, an unbiased estimate of ``(1/n) sum_j pi_ij^2``
        (imputed entries carry no binomial noise and keep their square).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> dosage = rng.binomial(2, 0.5, size=(200, 20_000)).astype(np.int8)
    >>> M = unbiased_second_moment(dosage)
    >>> bool(np.allclose(np.diag(M), 0.25, atol=0.01))  # pi^2, not pi^2 + pi(1-pi)/2
    True
    """
    heterozygous = np.zeros(dosage.shape[0])
    index = None if snps is None else np.asarray(snps)

    def counted(blocks):  # the heterozygous calls, on the blocks' one read
        for positions, x in blocks:
            columns = positions if index is None else index[positions]
            heterozygous[:] += np.count_nonzero(dosage[:, columns] == 1, axis=1)
            yield positions, x

    second = second_moments(counted(frequency_blocks(dosage, snps=snps)))
    M2 = second.M2
    M2[np.diag_indices_from(M2)] -= heterozygous / (4 * second.n_snps)
    return M2


@dataclass
class ThirdMomentTerms:
    """The data-sized pieces of the masked third-moment right-hand side.

    With ``B`` (m, K) fixed and ``z_j = B^T x_j``:

    Attributes
    ----------
    full : numpy.ndarray, shape (K, K, K)
        ``(1/n) sum_j z_j^{(x)3}`` (all index triples).
    pair : numpy.ndarray, shape (m, K)
        Row ``a`` is ``(1/n) sum_j x_ja^2 z_j`` (the ``a = b`` terms).
    cube : numpy.ndarray, shape (m,)
        ``(1/n) sum_j x_ja^3`` (the ``a = b = c`` terms).
    """

    full: np.ndarray
    pair: np.ndarray
    cube: np.ndarray


def whitened_third_moment_terms(blocks, B) -> ThirdMomentTerms:
    """Stream the three sums needed by the masked least squares.

    Parameters
    ----------
    blocks : iterable of (columns, x)
        Frequency blocks, x of shape (m, block).
    B : numpy.ndarray, shape (m, K)
        Rows ``b_a``: ``B = (K^+)^T`` of the whitening.

    Returns
    -------
    ThirdMomentTerms
    """
    m, K = B.shape
    full = np.zeros((K, K, K))
    pair = np.zeros((m, K))
    cube = np.zeros(m)
    n = 0
    for _, x in blocks:
        z = B.T @ x  # (K, block)
        # sum_j z_j (x) z_j (x) z_j as one BLAS product: (K*K, block) @ (block, K)
        outer = (z[:, None, :] * z[None, :, :]).reshape(K * K, -1)
        full += (outer @ z.T).reshape(K, K, K)
        squared = x * x
        pair += squared @ z.T
        cube += (squared * x).sum(axis=1)
        n += x.shape[1]
    return ThirdMomentTerms(full=full / n, pair=pair / n, cube=cube / n)
