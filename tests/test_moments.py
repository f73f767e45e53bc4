"""Moments streamed over SNP blocks: block sizes, and memory flat in the SNP count."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.core import frequencies
from admixspec.core.frequencies import block_size_for, frequency_blocks
from admixspec.spectral.estimate import snp_sample, spectral_scan
from admixspec.spectral.moments import second_moments


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


class TestScanMemory:
    def test_spectral_scan__peak_memory_does_not_grow_with_snps(self, monkeypatch):
        # blocks of 218 SNPs; with a block size fixed in SNPs, or one m x m sum
        # per window, the peak grew with the SNPs (measured +46% for 4x SNPs
        # at 1,000 individuals)
        monkeypatch.setattr(frequencies, "BLOCK_ENTRIES", 2**16)
        small, large = _scan_peak_bytes(3000), _scan_peak_bytes(12000)
        assert large < 1.1 * small
