"""Moments streamed over SNP blocks: block sizes, and memory flat in the SNP count."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.core import frequencies
from admixspec.core.frequencies import block_size_for, frequency_blocks
from admixspec.spectral.estimate import snp_sample, spectral_scan
from admixspec.spectral.moments import (
    add_outer_products,
    fill_upper,
    second_moments,
    unbiased_second_moment,
)


class TestFrequencyBlocks:
    @pytest.mark.parametrize("m", [1, 300, 1000, 10**6])
    def test_block_size_for__bounded_entries_and_at_least_64_snps(self, m):
        size = block_size_for(m)
        assert size >= 64
        assert size == 64 or size * m <= frequencies.BLOCK_ENTRIES

    def test_frequency_blocks__default_blocks_follow_the_individuals(self, monkeypatch):
        monkeypatch.setattr(frequencies, "BLOCK_ENTRIES", 50 * 200)
        dosage = simulate_balding_nichols(50, 1000, 2, missing_rate=0.05,
                                          seed=1).genotypes.dosage
        blocks = list(frequency_blocks(dosage))
        assert [x.shape[1] for _, x in blocks] == [200] * 5
        _, whole = next(frequency_blocks(dosage, block_size=1000))
        np.testing.assert_array_equal(np.hstack([x for _, x in blocks]), whole)
        np.testing.assert_allclose(second_moments(blocks).M2, whole @ whole.T / 1000)

    @pytest.mark.parametrize("missing", [False, True])
    def test_frequency_blocks__flipped_columns_count_the_other_allele(self, missing):
        # x = g / 2, a missing call its SNP's mean, then 1 - x where flipped
        dosage = np.array([[0, 1, 2, 2], [2, -1 if missing else 1, 0, 1],
                           [1, 2, 1, 0]], dtype=np.int8)
        snps, flip = np.array([3, 1, 0]), np.array([True, True, False])
        expected = dosage[:, snps] / 2.0
        if missing:
            expected[1, 1] = 0.75  # the mean of 1/2 and 1
        expected[:, flip] = 1.0 - expected[:, flip]
        x = np.hstack([x for _, x in frequency_blocks(dosage, snps=snps, flip=flip,
                                                      block_size=2)])
        np.testing.assert_array_equal(x, expected)


def _scan_peak_bytes(n_snps: int) -> int:
    """Peak traced memory of a spectral scan of 300 individuals (data made before)."""
    dosage = simulate_balding_nichols(300, n_snps, 3, fst=0.1, alpha=0.5,
                                      seed=1).genotypes.dosage
    rng = np.random.default_rng(0)
    sample, rescore = snp_sample(dosage, 300, rng), snp_sample(dosage, 1000, rng)
    tracemalloc.start()
    try:
        spectral_scan(dosage, 3, sample=sample, rescore_sample=rescore, seed=1)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_add_outer_products__right_when_the_blas_wrapper_copies(monkeypatch):
    import scipy.linalg.blas

    dsyrk = scipy.linalg.blas.dsyrk

    def copying(*args, c, **kwargs):  # updates a copy of c, as f2py may
        return dsyrk(*args, c=c.copy(order="F"), **kwargs)

    monkeypatch.setattr(scipy.linalg.blas, "dsyrk", copying)
    x = np.random.default_rng(0).random((70, 9))
    total = np.zeros((70, 70))
    add_outer_products(total, x)
    add_outer_products(total, x)
    np.testing.assert_allclose(fill_upper(total), 2 * x @ x.T, rtol=1e-13)


class TestScanMemory:
    def test_second_moments__one_individuals_square_and_equal_to_the_product(self):
        # a symmetric rank-k update in place: no m x m product beside the sum
        m = 600  # several of fill_upper's row blocks
        dosage = simulate_balding_nichols(m, 2000, 3, missing_rate=0.02,
                                          seed=2).genotypes.dosage
        blocks = list(frequency_blocks(dosage, block_size=100))
        tracemalloc.start()
        try:
            M2 = second_moments(blocks).M2
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1.25 * m * m * 8
        whole = np.hstack([x for _, x in blocks])
        np.testing.assert_allclose(M2, whole @ whole.T / 2000, rtol=1e-12)
        np.testing.assert_array_equal(M2, M2.T)

    def test_spectral_scan__peak_memory_grows_only_by_per_snp_counts(self, monkeypatch):
        # blocks of 218 SNPs; with a block size fixed in SNPs, or one m x m sum
        # per window, the peak grew with the SNPs (measured +46% for 4x SNPs
        # at 1,000 individuals). With no m x m product and no float copy of
        # the scoring samples the peak is small enough that the per-SNP counts
        # and indices (8 bytes each) show: they may grow, a block may not (an
        # int8 column is 300 bytes here, a float one 2,400)
        monkeypatch.setattr(frequencies, "BLOCK_ENTRIES", 2**16)
        small, large = _scan_peak_bytes(3000), _scan_peak_bytes(12000)
        assert (large - small) / 9000 < 64


class TestUnbiasedSecondMoment:
    def test_unbiased_second_moment__diagonal_is_the_noise_free_one(self):
        # E[(g/2)^2] = pi^2 + pi(1 - pi)/2: the raw diagonal is inflated; less a
        # quarter of the heterozygous share it estimates (1/n) sum_j pi_ij^2
        sim = simulate_balding_nichols(60, 20_000, 3, fst=0.1, alpha=0.5, seed=4)
        pi = sim.Q @ sim.P.T
        target = (pi**2).mean(axis=1)
        dosage = sim.genotypes.dosage
        raw = np.diag(second_moments(frequency_blocks(dosage)).M2)
        unbiased = np.diag(unbiased_second_moment(dosage))
        assert np.abs(raw - target).min() > 0.05
        # per individual within four standard errors of 20,000 SNPs' mean; no bias
        np.testing.assert_allclose(unbiased, target, atol=0.015)
        assert abs(np.mean(unbiased - target)) < 0.002

    def test_unbiased_second_moment__off_diagonal_is_the_second_moment(self):
        sim = simulate_balding_nichols(30, 3_000, 2, missing_rate=0.1, seed=5)
        dosage = sim.genotypes.dosage
        snps = np.arange(0, 3_000, 3)
        raw = second_moments(frequency_blocks(dosage, snps=snps)).M2
        unbiased = unbiased_second_moment(dosage, snps=snps)
        off = ~np.eye(30, dtype=bool)
        np.testing.assert_array_equal(unbiased[off], raw[off])
        # imputed calls carry no binomial noise: only observed heterozygotes count
        heterozygous = (dosage[:, snps] == 1).sum(axis=1)
        np.testing.assert_allclose(np.diag(raw) - np.diag(unbiased),
                                   heterozygous / (4 * len(snps)))
