"""The call-counting pass as numba kernels: one read of an int8 matrix.

:func:`admixspec.core.genotypes.snp_statistics` imports this module when it
first counts, so that importing the core does not import numba. NumPy's
version of the pass made a boolean mask of each block and reduced the block
three times; a kernel reads each call once. Counting every chunk of a
10,000 x 60,000 ``.bed``, decoding included, took 2.74 s before these kernels
and the row-wise decoder, 0.97 s after, at two threads (docs/benchmarks.md,
"Counting calls in one read, decoding in rows").
"""

from __future__ import annotations

import numba
import numpy as np

#: SNP columns a thread counts at a time in an individual-major matrix: their
#: int16 sums (16 KiB) stay in the core's first-level cache while rows pass.
TILE_SNPS = 4096

#: Rows added into the int16 sums before they are moved to int64: at most
#: two copies a call, 2 x 16,000 < 2**15.
TILE_ROWS = 16_000


def count_calls(dosage):
    """Per-SNP calls and allele sums, per-individual missing calls.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (n_individuals, n_snps)
        -1 missing. Every reader and :func:`~admixspec.core.genotypes.check_dosage`
        give C order, which the kernel reads along its rows; other layouts are
        counted correctly, more slowly.

    Returns
    -------
    called, allele_sum : numpy.ndarray, int64, shape (n_snps,)
    missing_rows : numpy.ndarray, int64, shape (n_individuals,)
    """
    n, m = dosage.shape
    called = np.empty(m, dtype=np.int64)
    allele_sum = np.empty(m, dtype=np.int64)
    missing_rows = np.empty(n, dtype=np.int64)
    _count(dosage, called, allele_sum, missing_rows, numba.get_num_threads())
    return called, allele_sum, missing_rows


@numba.njit(parallel=True, cache=True, nogil=True)
def _count(dosage, called, allele_sum, missing_rows, threads):
    """:func:`count_calls` into its three arrays, overwritten.

    Threads take tiles of :data:`TILE_SNPS` SNPs, so no two add to the same
    SNP, and add each row's missing calls into their own row of partial
    counts, summed at the end.
    """
    n, m = dosage.shape
    tiles = -(-m // TILE_SNPS)
    bands = max(1, min(threads, tiles))
    missing_part = np.zeros((bands, n), dtype=np.int64)
    for band in numba.prange(bands):
        missing_tile = np.empty(TILE_SNPS, dtype=np.int16)
        sum_tile = np.empty(TILE_SNPS, dtype=np.int16)
        for tile in range(band, tiles, bands):
            first, last = tile * TILE_SNPS, min((tile + 1) * TILE_SNPS, m)
            called[first:last] = n
            allele_sum[first:last] = 0
            for top in range(0, n, TILE_ROWS):
                rows = dosage[top:top + TILE_ROWS, first:last]
                _add_rows(rows, missing_tile, sum_tile, missing_part[band, top:])
                called[first:last] -= missing_tile[:last - first]
                allele_sum[first:last] += sum_tile[:last - first]
    missing_rows[:] = missing_part.sum(axis=0)


@numba.njit(cache=True, nogil=True)
def _add_rows(rows, missing_tile, sum_tile, missing_per_row):
    """Each column's missing calls and allele sum in int16, each row's missing added."""
    width = rows.shape[1]
    missing_tile[:width] = 0
    sum_tile[:width] = 0
    for i in range(rows.shape[0]):
        row = rows[i]
        missing = 0
        for j in range(width):
            is_missing = np.int16(row[j] < 0)
            missing += is_missing
            missing_tile[j] += is_missing
            # a missing call is -1: adding its flag adds nothing to the sum
            sum_tile[j] += row[j] + is_missing
        missing_per_row[i] += missing
