"""PLINK-style filters, their log entries, and the usability checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from admixspec import Genotypes, InputError, UsageError, simulate_balding_nichols
from admixspec.filters import (
    apply_filters,
    check_K,
    check_usable,
    filter_geno,
    filter_maf,
    filter_mind,
    filter_monomorphic,
    snp_statistics,
)

# 5 individuals x 6 SNPs.
#   snp0: polymorphic, MAF 0.3     snp1: monomorphic (all 2)
#   snp2: 3/5 missing              snp3: MAF 0.1 (one het)
#   snp4: no calls at all          snp5: polymorphic, 1 missing
DOSAGE = np.array(
    [
        [0, 2, -1, 1, -1, 0],
        [1, 2, -1, 2, -1, 1],
        [2, 2, -1, 2, -1, 2],
        [2, 2, 0, 2, -1, -1],
        [2, 2, 1, 2, -1, 1],
    ],
    dtype=np.int8,
)


@pytest.fixture
def toy_fixture() -> Genotypes:
    return Genotypes.from_array(DOSAGE)


def removed(genotypes: Genotypes, name: str) -> int:
    return next(e["removed"] for e in genotypes.filter_log if e["filter"] == name)


class TestSnpStatistics:
    def test_snp_statistics__counts_calls_and_alleles(self):
        called, sums, missing = snp_statistics(DOSAGE)
        assert called.tolist() == [5, 5, 2, 5, 0, 4]
        assert sums.tolist() == [7, 10, 1, 9, 0, 4]
        assert missing.tolist() == [2, 2, 2, 2, 1]

    @settings(max_examples=30, deadline=None)
    @given(arrays(np.int8, st.tuples(st.integers(1, 7), st.integers(0, 20)),
                  elements=st.integers(-1, 2)))
    def test_snp_statistics__matches_masked_sums(self, dosage):
        called, sums, missing = snp_statistics(dosage)
        masked = np.ma.masked_equal(dosage, -1)
        assert called.tolist() == masked.count(axis=0).tolist()
        assert sums.tolist() == np.asarray(masked.sum(axis=0).filled(0)).tolist()
        assert missing.tolist() == (dosage == -1).sum(axis=1).tolist()


class TestFilters:
    def test_filter_monomorphic__removes_single_allele_and_uncalled(self, toy_fixture):
        result = filter_monomorphic(toy_fixture)
        assert result.variants["id"].tolist() == ["snp0", "snp2", "snp3", "snp5"]
        assert removed(result, "monomorphic") == 2

    def test_filter_maf__strictly_below_threshold_removed(self, toy_fixture):
        kept = filter_monomorphic(toy_fixture)
        assert filter_maf(kept, 0.1).n_snps == 4  # MAF 0.1 is not < 0.1
        result = filter_maf(kept, 0.11)
        assert result.variants["id"].tolist() == ["snp0", "snp2", "snp5"]
        assert removed(result, "maf") == 1

    def test_filter_geno__strictly_above_threshold_removed(self, toy_fixture):
        result = filter_geno(toy_fixture, 0.2)
        assert result.variants["id"].tolist() == ["snp0", "snp1", "snp3", "snp5"]
        assert removed(result, "geno") == 2
        assert filter_geno(toy_fixture, 0.6).n_snps == 5  # snp2 missing 0.6 kept

    def test_filter_mind__removes_individuals(self):
        genotypes = Genotypes.from_array(DOSAGE[:, [0, 1, 3, 5]])
        result = filter_mind(genotypes, 0.2)
        assert result.samples.tolist() == ["ind0", "ind1", "ind2", "ind4"]
        entry = result.filter_log[-1]
        assert entry == {
            "filter": "mind", "unit": "individuals", "removed": 1,
            "reason": "missing-call fraction > 0.2",
        }

    def test_apply_filters__plink_order_and_log(self, toy_fixture):
        result = apply_filters(toy_fixture, maf=0.2, geno=0.5, mind=0.5)
        assert [e["filter"] for e in result.filter_log] == [
            "mind", "geno", "monomorphic", "maf"
        ]
        assert [e["removed"] for e in result.filter_log] == [0, 2, 1, 1]
        assert result.variants["id"].tolist() == ["snp0", "snp5"]
        # the input is not modified
        assert toy_fixture.n_snps == 6 and toy_fixture.filter_log == []

    def test_apply_filters__defaults_only_drop_monomorphic(self, toy_fixture):
        result = apply_filters(toy_fixture)
        assert [e["filter"] for e in result.filter_log] == ["monomorphic"]
        assert apply_filters(toy_fixture, drop_monomorphic=False).n_snps == 6

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [({"maf": 0.6}, "maf must lie in"), ({"geno": -0.1}, "geno must lie in"),
         ({"mind": 1.5}, "mind must lie in")],
    )
    def test_apply_filters__out_of_range_threshold_is_usage_error(
        self, toy_fixture, kwargs, message
    ):
        with pytest.raises(UsageError, match=message):
            apply_filters(toy_fixture, **kwargs)

    def test_apply_filters__maf_on_simulation_matches_frequencies(self):
        genotypes = simulate_balding_nichols(50, 2000, 2, seed=4).genotypes
        result = apply_filters(genotypes, maf=0.1)
        counted = result.dosage.sum(axis=0)  # no missing calls; 100 alleles per SNP
        assert np.all(np.minimum(counted, 100 - counted) >= 10)
        assert result.n_snps + sum(e["removed"] for e in result.filter_log) == 2000


class TestChecks:
    def test_check_usable__one_individual(self):
        with pytest.raises(InputError, match="fewer than 2 individuals"):
            check_usable(Genotypes.from_array(np.zeros((1, 10))))

    def test_check_usable__one_snp_names_source(self):
        genotypes = Genotypes.from_array(np.zeros((5, 1)))
        genotypes.source = "data/x.bed"
        with pytest.raises(InputError, match=r"^data/x\.bed: fewer than 2 usable SNPs"):
            check_usable(genotypes)

    @pytest.mark.parametrize(("K", "n"), [(0, 10), (-1, 10), (10, 10), (11, 10)])
    def test_check_K__out_of_range_is_usage_error(self, K, n):
        with pytest.raises(UsageError, match="K must be"):
            check_K(K, n)

    @pytest.mark.parametrize(("K", "n"), [(1, 2), (9, 10)])
    def test_check_K__valid(self, K, n):
        assert check_K(K, n) is None

    def test_check_K__non_integer(self):
        with pytest.raises(UsageError, match="integer"):
            check_K(2.5, 10)
