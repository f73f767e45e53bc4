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

#: Columns a thread counts at a time: their int16 sums (16 KiB) stay in the
#: core's first-level cache while the rows pass.
TILE_COLUMNS = 4096

#: Rows added into the int16 sums before they are moved to int64: at most
#: two copies a call, 2 x 16,000 < 2**15.
TILE_ROWS = 16_000


def count_calls(dosage):
    """Per-SNP calls and allele sums, per-individual missing calls.

    The kernel counts a C-ordered matrix along its rows, giving the missing
    calls and allele sums of both its rows and its columns; a Fortran-ordered
    one is counted as its transpose, with the two margins' roles swapped.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (n_individuals, n_snps)
        -1 missing.

    Returns
    -------
    called, allele_sum : numpy.ndarray, int64, shape (n_snps,)
    missing_rows : numpy.ndarray, int64, shape (n_individuals,)
    """
    snp_major = dosage.flags.f_contiguous and not dosage.flags.c_contiguous
    matrix = dosage.T if snp_major else dosage
    margins = [np.empty(size, dtype=np.int64)
               for size in (matrix.shape[0], matrix.shape[0],
                            matrix.shape[1], matrix.shape[1])]
    _count(matrix, *margins, numba.get_num_threads())
    row_missing, row_sum, column_missing, column_sum = margins
    if snp_major:
        return dosage.shape[0] - row_missing, row_sum, column_missing
    return dosage.shape[0] - column_missing, column_sum, row_missing


@numba.njit(parallel=True, cache=True, nogil=True)
def _count(matrix, row_missing, row_sum, column_missing, column_sum, threads):
    """Missing calls and allele sums of every row and column, overwritten.

    Threads take tiles of :data:`TILE_COLUMNS` columns, so no two add to the
    same column, and add each row's counts into their own rows of partial
    counts, summed at the end.
    """
    n, m = matrix.shape
    tiles = -(-m // TILE_COLUMNS)
    bands = max(1, min(threads, tiles))
    missing_part = np.zeros((bands, n), dtype=np.int64)
    sum_part = np.zeros((bands, n), dtype=np.int64)
    for band in numba.prange(bands):
        missing_tile = np.empty(TILE_COLUMNS, dtype=np.int16)
        sum_tile = np.empty(TILE_COLUMNS, dtype=np.int16)
        for tile in range(band, tiles, bands):
            first, last = tile * TILE_COLUMNS, min((tile + 1) * TILE_COLUMNS, m)
            column_missing[first:last] = 0
            column_sum[first:last] = 0
            for top in range(0, n, TILE_ROWS):
                _add_rows(matrix[top:top + TILE_ROWS, first:last], missing_tile,
                          sum_tile, missing_part[band, top:], sum_part[band, top:])
                column_missing[first:last] += missing_tile[:last - first]
                column_sum[first:last] += sum_tile[:last - first]
    row_missing[:] = missing_part.sum(axis=0)
    row_sum[:] = sum_part.sum(axis=0)


@numba.njit(cache=True, nogil=True)
def _add_rows(rows, missing_tile, sum_tile, row_missing, row_sum):
    """Each column's missing calls and allele sum in int16; each row's added."""
    width = rows.shape[1]
    missing_tile[:width] = 0
    sum_tile[:width] = 0
    for i in range(rows.shape[0]):
        row = rows[i]
        missing = 0
        total = 0
        for j in range(width):
            is_missing = np.int16(row[j] < 0)
            # a missing call is -1: adding its flag adds nothing to the sum
            value = row[j] + is_missing
            missing += is_missing
            total += value
            missing_tile[j] += is_missing
            sum_tile[j] += value
        row_missing[i] += missing
        row_sum[i] += total
