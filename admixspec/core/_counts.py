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
        -1 missing; any memory order (the kernel follows it).

    Returns
    -------
    called, allele_sum : numpy.ndarray, int64, shape (n_snps,)
    missing_rows : numpy.ndarray, int64, shape (n_individuals,)
    """
    n, m = dosage.shape
    called = np.empty(m, dtype=np.int64)
    allele_sum = np.empty(m, dtype=np.int64)
    missing_rows = np.empty(n, dtype=np.int64)
    threads = numba.get_num_threads()
    if dosage.flags.f_contiguous and not dosage.flags.c_contiguous:
        _count_snp_major(dosage.T, called, allele_sum, missing_rows, threads)
    else:
        _count_individual_major(dosage, called, allele_sum, missing_rows, threads)
    return called, allele_sum, missing_rows


@numba.njit(parallel=True, cache=True, nogil=True)
def _count_individual_major(dosage, called, allele_sum, missing_rows, threads):
    """Counts of a matrix whose rows (individuals) are contiguous.

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
            first, width = tile * TILE_SNPS, min(TILE_SNPS, m - tile * TILE_SNPS)
            called[first:first + width] = n
            allele_sum[first:first + width] = 0
            for top in range(0, n, TILE_ROWS):
                missing_tile[:width] = 0
                sum_tile[:width] = 0
                for i in range(top, min(top + TILE_ROWS, n)):
                    row = dosage[i, first:first + width]
                    missing = 0
                    for j in range(width):
                        is_missing = np.int16(row[j] < 0)
                        missing += is_missing
                        missing_tile[j] += is_missing
                        # a missing call is -1: adding its flag adds nothing
                        sum_tile[j] += row[j] + is_missing
                    missing_part[band, i] += missing
                for j in range(width):
                    called[first + j] -= missing_tile[j]
                    allele_sum[first + j] += sum_tile[j]
    _sum_rows(missing_part, missing_rows)


@numba.njit(parallel=True, cache=True, nogil=True)
def _count_snp_major(snp_rows, called, allele_sum, missing_rows, threads):
    """Counts of a matrix stored SNP by SNP (``snp_rows`` is its transpose).

    Each thread counts a band of SNPs and its own row of per-individual
    missing counts, summed at the end.
    """
    m, n = snp_rows.shape
    bands = max(1, min(threads, m))
    missing_part = np.zeros((bands, n), dtype=np.int64)
    for band in numba.prange(bands):
        for j in range(band * m // bands, (band + 1) * m // bands):
            missing = 0
            total = 0
            for i in range(n):
                is_missing = np.int64(snp_rows[j, i] < 0)
                missing += is_missing
                missing_part[band, i] += is_missing
                total += snp_rows[j, i] + is_missing
            called[j] = n - missing
            allele_sum[j] = total
    _sum_rows(missing_part, missing_rows)


@numba.njit(cache=True, nogil=True)
def _sum_rows(parts, out):
    """``out[:] = parts.sum(axis=0)`` for int64 partial counts."""
    out[:] = 0
    for band in range(parts.shape[0]):
        for i in range(parts.shape[1]):
            out[i] += parts[band, i]
