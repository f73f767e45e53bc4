"""PLINK-style filters, their log entries, and the usability checks."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from admixspec import Genotypes, InputError, UsageError, simulate_balding_nichols
from admixspec.core.exceptions import MissingDependencyError
from admixspec.core.filters import (
    apply_filters,
    check_K,
    check_usable,
    filter_geno,
    filter_indep_pairwise,
    filter_maf,
    filter_mind,
    filter_monomorphic,
    parse_indep_pairwise,
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

    @pytest.mark.parametrize("layout", ["C", "F", "strided"])
    def test_snp_statistics__same_counts_in_every_memory_order(self, layout):
        # the kernel follows the matrix's memory order; 9,000 SNPs span three tiles
        dosage = np.random.default_rng(5).integers(-1, 3, size=(60, 9000), dtype=np.int8)
        view = {"C": dosage, "F": np.asfortranarray(dosage),
                "strided": dosage[::2, 1::3]}[layout]
        called, sums, missing = snp_statistics(view)
        masked = np.ma.masked_equal(view, -1)
        assert called.tolist() == masked.count(axis=0).tolist()
        assert sums.tolist() == np.asarray(masked.sum(axis=0).filled(0)).tolist()
        assert missing.tolist() == (view == -1).sum(axis=1).tolist()

    def test_snp_statistics__exact_past_the_int16_partial_sums(self):
        # rows are added in int16 (up to TILE_ROWS of them) before int64
        from admixspec.core._counts import TILE_ROWS

        dosage = np.full((2 * TILE_ROWS + 5, 3), 2, dtype=np.int8)
        dosage[::7, 1] = -1
        called, sums, missing = snp_statistics(dosage)
        n, n_missing = len(dosage), len(dosage[::7])
        assert called.tolist() == [n, n - n_missing, n]
        assert sums.tolist() == [2 * n, 2 * (n - n_missing), 2 * n]
        assert missing.sum() == n_missing


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

    @settings(max_examples=25, deadline=None)
    @given(arrays(np.int8, st.tuples(st.integers(2, 8), st.integers(1, 30)),
                  elements=st.integers(-1, 2)),
           st.floats(0.0, 0.9), st.floats(0.01, 0.5))
    def test_apply_filters__one_count_pass_removes_what_each_filter_in_turn_would(
        self, dosage, geno, maf
    ):
        genotypes = Genotypes.from_array(dosage)
        together = apply_filters(genotypes, geno=geno, maf=maf)
        in_turn = filter_maf(filter_monomorphic(filter_geno(genotypes, geno)), maf)
        assert together.variants["id"].tolist() == in_turn.variants["id"].tolist()
        assert together.filter_log == in_turn.filter_log
        np.testing.assert_array_equal(together.dosage, in_turn.dosage)

    def test_apply_filters__defaults_only_drop_monomorphic(self, toy_fixture):
        result = apply_filters(toy_fixture)
        assert [e["filter"] for e in result.filter_log] == ["monomorphic"]
        assert apply_filters(toy_fixture, drop_monomorphic=False).n_snps == 6

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [({"maf": 0.6}, "maf must be in"), ({"geno": -0.1}, "geno must be in"),
         ({"mind": 1.5}, "mind must be in")],
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


DATA = Path(__file__).resolve().parent.parent / "data"
needs_allel = pytest.mark.skipif(
    importlib.util.find_spec("allel") is None,
    reason="scikit-allel (the 'allel' extra) not installed",
)


def linked_toy(chrom=None) -> Genotypes:
    """5 unlinked SNPs, then a copy of snp0 (r^2 = 1) with 2 calls missing."""
    rng = np.random.default_rng(11)
    unlinked = rng.integers(0, 3, size=(60, 5)).astype(np.int8)
    copy = unlinked[:, 0].copy()
    copy[:2] = -1
    genotypes = Genotypes.from_array(np.column_stack([unlinked, copy]))
    if chrom is not None:
        genotypes.variants["chrom"] = chrom
    return genotypes


def r_squared(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-column squared correlation of two (n, k) complete dosage matrices."""
    a = (a - a.mean(axis=0)) / a.std(axis=0)
    b = (b - b.mean(axis=0)) / b.std(axis=0)
    return (a * b).mean(axis=0) ** 2


@needs_allel
class TestIndepPairwise:
    def test_filter_indep_pairwise__removes_the_later_copy_within_the_window(self):
        result = filter_indep_pairwise(linked_toy(), 6, 1, 0.5)
        assert result.variants["id"].tolist() == ["snp0", "snp1", "snp2", "snp3", "snp4"]
        assert removed(result, "indep_pairwise") == 1

    def test_filter_indep_pairwise__copy_outside_the_window_is_kept(self):
        assert filter_indep_pairwise(linked_toy(), 5, 5, 0.5).n_snps == 6

    def test_filter_indep_pairwise__windows_do_not_span_chromosomes(self):
        genotypes = linked_toy(chrom=["1"] * 5 + ["2"])
        assert filter_indep_pairwise(genotypes, 50, 5, 0.5).n_snps == 6

    def test_filter_indep_pairwise__kept_pairs_in_a_shared_window_are_below_r2(self):
        from admixspec.io import read_genotypes

        genotypes = read_genotypes(DATA / "example.bed")  # msprime data, dense LD
        window, step, threshold = 20, 5, 0.2
        result = filter_indep_pairwise(genotypes, window, step, threshold)
        kept = np.flatnonzero(genotypes.variants["id"].isin(result.variants["id"]))
        dosage = genotypes.dosage.astype(float)
        assert 0 < len(kept) < genotypes.n_snps
        # Two SNPs fewer than window - step + 1 apart always share a window.
        for offset in range(1, len(kept)):
            first, second = kept[:-offset], kept[offset:]
            close = second - first <= window - step
            if not close.any():
                break
            pairs = r_squared(dosage[:, first[close]], dosage[:, second[close]])
            assert pairs.max() <= threshold + 1e-5

    def test_apply_filters__prunes_after_the_other_filters(self):
        genotypes = simulate_balding_nichols(40, 300, 2, seed=5).genotypes
        result = apply_filters(genotypes, maf=0.05, indep_pairwise=("50", "5", "0.2"))
        assert [e["filter"] for e in result.filter_log] == [
            "monomorphic", "maf", "indep_pairwise"
        ]
        unpruned = apply_filters(genotypes, maf=0.05)
        expected = filter_indep_pairwise(unpruned, 50, 5, 0.2)
        assert result.variants.equals(expected.variants)

    def test_cli__info_reports_the_pruning_line(self, capsys):
        from admixspec.cli import main
        from admixspec.io import read_genotypes

        assert main(["info", str(DATA / "example.bed"), "--indep-pairwise", "50", "5",
                     "0.2"]) == 0
        pruned = read_genotypes(DATA / "example.bed", indep_pairwise=(50, 5, 0.2))
        n_removed = 10000 - pruned.n_snps
        assert f"indep_pairwise: {n_removed} variants removed" in capsys.readouterr().out



class TestIndepPairwiseArguments:
    def test_cli__kb_window_is_a_one_line_usage_error(self, capsys):
        from admixspec.cli import main

        status = main(["info", str(DATA / "example.bed"), "--indep-pairwise", "500kb",
                       "1", "0.2"])
        err = capsys.readouterr().err.splitlines()
        assert status == 2
        assert len(err) == 1
        assert "a window in kilobases ('500kb') is not supported" in err[0]

    def test_filter_indep_pairwise__without_allel_names_the_extra(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "allel", None)
        with pytest.raises(MissingDependencyError, match=r"admixspec\[allel\]"):
            filter_indep_pairwise(linked_toy(), 6, 1, 0.5)

    @pytest.mark.parametrize(
        ("values", "message"),
        [
            (("50", "5"), "takes 3 values"),
            (("50kb", "1", "0.2"), "kilobases"),
            (("50", "0", "0.2"), "STEP must be at least 1"),
            (("1", "1", "0.2"), "WINDOW must be at least 2"),
            (("50", "5", "1.5"), r"R2 must lie in \[0, 1\]"),
            (("fifty", "5", "0.2"), "expected WINDOW STEP R2"),
        ],
    )
    def test_parse_indep_pairwise__bad_values_are_usage_errors(self, values, message):
        with pytest.raises(UsageError, match=message):
            parse_indep_pairwise(values)


class TestFilterMemory:
    def test_apply_filters__nothing_removed_shares_the_dosage(self):
        genotypes = simulate_balding_nichols(20, 300, 2, seed=1).genotypes
        genotypes = filter_monomorphic(genotypes)  # 7 monomorphic SNPs copied away
        result = apply_filters(genotypes, mind=0.5, geno=0.5)
        assert [e["removed"] for e in result.filter_log[1:]] == [0, 0, 0]
        assert np.shares_memory(result.dosage, genotypes.dosage)  # no int8 copy
        assert [e["filter"] for e in genotypes.filter_log] == ["monomorphic"]
