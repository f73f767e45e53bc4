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
    n, m = matrix.shape
    # a band of columns per thread, each with its own rows of partial counts
    bands = max(1, min(numba.get_num_threads(), -(-m // TILE_COLUMNS)))
    row_parts = np.zeros((2, bands, n), dtype=np.int64)
    column_missing = np.empty(m, dtype=np.int64)
    column_sum = np.empty(m, dtype=np.int64)
    _count(matrix, row_parts, column_missing, column_sum)
    row_missing, row_sum = row_parts.sum(axis=1)
    if snp_major:
        return dosage.shape[0] - row_missing, row_sum, column_missing
    return dosage.shape[0] - column_missing, column_sum, row_missing


@numba.njit(parallel=True, cache=True, nogil=True)
def _count(matrix, row_parts, column_missing, column_sum):
    """Missing calls and allele sums of every column, and partial ones of rows.

    Band ``b`` of ``row_parts`` (2, bands, rows) takes the tiles of
    :data:`TILE_COLUMNS` columns ``b, b + bands, ...``, so no two threads add
    to the same column or the same partial row count; written with loops, not
    array expressions, which numba would compile into parallel loops too.
    """
    n, m = matrix.shape
    bands = row_parts.shape[1]
    tiles = -(-m // TILE_COLUMNS)
    for band in numba.prange(bands):
        missing_tile = np.empty(TILE_COLUMNS, dtype=np.int16)
        sum_tile = np.empty(TILE_COLUMNS, dtype=np.int16)
        for tile in range(band, tiles, bands):
            first, last = tile * TILE_COLUMNS, min((tile + 1) * TILE_COLUMNS, m)
            for j in range(first, last):
                column_missing[j] = 0
                column_sum[j] = 0
            for top in range(0, n, TILE_ROWS):
                _add_rows(matrix[top:top + TILE_ROWS, first:last], missing_tile,
                          sum_tile, row_parts[0, band, top:], row_parts[1, band, top:])
                for j in range(first, last):
                    column_missing[j] += missing_tile[j - first]
                    column_sum[j] += sum_tile[j - first]


@numba.njit(cache=True, nogil=True)
def _add_rows(rows, missing_tile, sum_tile, row_missing, row_sum):
    """Each column's missing calls and allele sum in int16; each row's added."""
    width = rows.shape[1]
    for j in range(width):
        missing_tile[j] = 0
        sum_tile[j] = 0
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
