"""The VCF call rules, decoded in one read, against the rules written in NumPy."""

import numpy as np
import pytest

from admixspec.io.calls import decode_calls


def rules_in_numpy(alleles, n_alt):
    """The VCF rules, mask by mask: (dosage (n, b), counts, first bad record)."""
    first = alleles[..., 0]
    second = alleles[..., 1] if alleles.shape[-1] > 1 else np.full_like(first, -2)
    haploid = (second == -2) & (first >= 0)
    half = ((first < 0) & (second >= 0)) | ((first >= 0) & (second == -1))
    dosage = (first == 0).astype(np.int8) + (second == 0).astype(np.int8)
    dosage[haploid] *= 2
    missing = (first < 0) | (second == -1) | half
    poly = (alleles[..., 2:] != -2).any(axis=-1) & ~missing
    missing |= poly
    dosage[missing] = -1
    counts = [np.count_nonzero(haploid), np.count_nonzero(half), np.count_nonzero(poly)]
    bad = np.flatnonzero((alleles.max(axis=(1, 2)) > n_alt)
                         | (alleles.min(axis=(1, 2)) < -2))
    return dosage.T, counts, (int(bad[0]) if len(bad) else None)


def random_alleles(seed, ploidy, dtype, *, records=40, samples=30):
    """Allele indices -2..2 with fills and missing calls at every position."""
    rng = np.random.default_rng(seed)
    alleles = rng.integers(-2, 3, size=(records, samples, ploidy)).astype(dtype)
    n_alt = rng.integers(2, 4, size=records)
    return alleles, n_alt


class TestDecodeCalls:
    @pytest.mark.parametrize("ploidy", [1, 2, 3])
    @pytest.mark.parametrize("dtype", [np.int8, np.int16])
    def test_decode_calls__equals_the_rules_in_numpy(self, ploidy, dtype):
        alleles, n_alt = random_alleles(ploidy, ploidy, dtype)
        counts = np.zeros(3, dtype=np.int64)
        dosage, bad = decode_calls(alleles, n_alt, counts)
        expected, expected_counts, expected_bad = rules_in_numpy(alleles, n_alt)
        assert bad is expected_bad is None
        np.testing.assert_array_equal(dosage, expected)
        np.testing.assert_array_equal(counts, expected_counts)

    def test_decode_calls__accumulates_counts_over_blocks(self):
        alleles, n_alt = random_alleles(0, 3, np.int16)
        counts = np.zeros(3, dtype=np.int64)
        decode_calls(alleles[:15], n_alt[:15], counts)
        decode_calls(alleles[15:], n_alt[15:], counts)
        np.testing.assert_array_equal(counts, rules_in_numpy(alleles, n_alt)[1])

    def test_decode_calls__writes_into_a_view_of_a_wider_matrix(self):
        # the streamed readers decode straight into their chunk's columns
        alleles, n_alt = random_alleles(1, 2, np.int8)
        wide = np.full((30, 50), 7, dtype=np.int8)
        decode_calls(alleles, n_alt, np.zeros(3, dtype=np.int64), out=wide[:, 5:45])
        np.testing.assert_array_equal(wide[:, 5:45], rules_in_numpy(alleles, n_alt)[0])
        assert (wide[:, :5] == 7).all() and (wide[:, 45:] == 7).all()

    def test_decode_calls__reads_a_view_without_the_phase_column(self):
        alleles, n_alt = random_alleles(2, 3, np.int16)
        with_phase = np.concatenate([alleles, np.ones_like(alleles[..., :1])], axis=-1)
        counts = np.zeros(3, dtype=np.int64)
        dosage, _ = decode_calls(with_phase[..., :-1], n_alt, counts)
        np.testing.assert_array_equal(dosage, rules_in_numpy(alleles, n_alt)[0])

    @pytest.mark.parametrize("value", [3, 9, -3])
    def test_decode_calls__names_the_first_record_out_of_range(self, value):
        alleles, n_alt = random_alleles(3, 2, np.int16)
        n_alt[:] = 2
        alleles[17, 4, 1] = value
        alleles[25, 0, 0] = value
        counts = np.zeros(3, dtype=np.int64)
        _, bad = decode_calls(alleles, n_alt, counts)
        assert bad == 17
        assert not counts.any()  # a refused block adds nothing
