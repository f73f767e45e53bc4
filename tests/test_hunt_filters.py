"""Input filters and LD pruning held to PLINK's semantics (bug hunt)."""

import importlib.util

import numpy as np
import pytest

from admixspec.core.exceptions import InputError, UsageError
from admixspec.core.filters import (
    apply_filters,
    filter_indep_pairwise,
    parse_indep_pairwise,
)
from admixspec.core.genotypes import Genotypes

needs_allel = pytest.mark.skipif(
    importlib.util.find_spec("allel") is None,
    reason="scikit-allel (the 'allel' extra) not installed",
)


def unlinked(n_snps: int = 6, seed: int = 3) -> Genotypes:
    rng = np.random.default_rng(seed)
    return Genotypes.from_array(rng.integers(0, 3, size=(40, n_snps)))


def test_parse_indep_pairwise__step_longer_than_window_is_a_usage_error():
    # SNPs between windows would never be compared; plink2 refuses the same
    with pytest.raises(UsageError, match=r"STEP \(10\) must not exceed WINDOW \(5\)"):
        parse_indep_pairwise(["5", "10", "0.2"])


def test_parse_indep_pairwise__step_equal_to_window_is_accepted():
    assert parse_indep_pairwise(["5", "5", "0.2"]) == (5, 5, 0.2)


def test_cli__step_longer_than_window_is_one_line_exit_2(tmp_path, capsys):
    from admixspec.cli import main
    from admixspec.io import write_plink

    write_plink(tmp_path / "toy", unlinked())
    status = main(["info", str(tmp_path / "toy.bed"), "--indep-pairwise", "5", "10",
                   "0.2"])
    err = capsys.readouterr().err.splitlines()
    assert status == 2
    assert err == ["admixspec: error: --indep-pairwise: STEP (10) must not exceed "
                   "WINDOW (5)"]


@needs_allel
def test_filter_indep_pairwise__unsorted_positions_are_an_input_error_naming_the_snps():
    genotypes = unlinked()
    genotypes.variants["pos"] = [1, 2, 100, 4, 5, 6]
    with pytest.raises(InputError, match=r"'snp3' \(position 4\) follows 'snp2' "
                                         r"\(position 100\) on chromosome 1"):
        filter_indep_pairwise(genotypes, 5, 1, 0.2)


@needs_allel
def test_filter_indep_pairwise__sorted_within_each_chromosome_is_accepted():
    genotypes = unlinked()
    genotypes.variants["chrom"] = ["1", "1", "1", "2", "2", "2"]
    genotypes.variants["pos"] = [10, 20, 20, 5, 6, 7]  # ties and a new chromosome
    assert filter_indep_pairwise(genotypes, 5, 1, 0.999).n_snps == 6


@needs_allel
def test_cli__unsorted_bim_with_indep_pairwise_exits_1_naming_the_file(tmp_path,
                                                                       capsys):
    from admixspec.cli import main
    from admixspec.io import write_plink

    write_plink(tmp_path / "toy", unlinked())
    bim = tmp_path / "toy.bim"
    lines = bim.read_text().splitlines()
    fields = lines[2].split("\t")
    fields[3] = "100"
    lines[2] = "\t".join(fields)
    bim.write_text("\n".join(lines) + "\n")
    status = main(["info", str(tmp_path / "toy.bed"), "--indep-pairwise", "5", "1",
                   "0.2"])
    err = capsys.readouterr().err.splitlines()
    assert status == 1
    assert len(err) == 1 and "toy.bed: --indep-pairwise needs the SNPs" in err[0]


def test_apply_filters__thresholds_equal_to_the_value_keep_as_plink_does():
    # 20 individuals: 2 missing calls = 0.1 missing; 2 hets among 18 called
    # = MAF 2/36; a SNP exactly at --geno and one exactly at --maf are kept.
    dosage = np.full((20, 3), 2)
    dosage[:2, 0] = -1                      # missing fraction exactly 0.1
    dosage[2:8, 0] = 1
    dosage[:4, 1] = 1                       # MAF exactly 4/40 = 0.1
    dosage[:3, 2] = 1                       # MAF 3/40 < 0.1
    genotypes = Genotypes.from_array(dosage)
    result = apply_filters(genotypes, geno=0.1, maf=0.1)
    assert result.variants["id"].tolist() == ["snp0", "snp1"]


@pytest.mark.parametrize("r2", ["1", "1.0"])
def test_parse_indep_pairwise__r2_of_one_is_refused_as_plink_does(r2):
    # no r^2 exceeds 1, yet float32 r^2 of identical SNPs pruned a quarter of them
    with pytest.raises(UsageError, match="R2 must be below 1"):
        parse_indep_pairwise(["5", "1", r2])


def test_parse_indep_pairwise__r2_of_zero_is_accepted_as_plink_does():
    assert parse_indep_pairwise(["5", "1", "0"]) == (5, 1, 0.0)


def tied_pairs(target, n_pairs: int = 12, seed: int = 0) -> list:
    """Dosage pairs (complete calls) whose r^2 is exactly ``target``."""
    from fractions import Fraction

    rng = np.random.default_rng(seed)
    pairs = []
    while len(pairs) < n_pairs:
        n = int(rng.integers(8, 41))
        x = rng.integers(0, 3, n)
        y = x.copy()
        changed = rng.choice(n, int(rng.integers(1, n)), replace=False)
        y[changed] = rng.integers(0, 3, len(changed))
        cov = n * int(x @ y) - int(x.sum()) * int(y.sum())
        var_x = n * int(x @ x) - int(x.sum()) ** 2
        var_y = n * int(y @ y) - int(y.sum()) ** 2
        if var_x and var_y and Fraction(cov * cov, var_x * var_y) == target:
            pairs.append(np.column_stack([x, y]))
    return pairs


@needs_allel
@pytest.mark.parametrize("target", ["1/9", "1/4", "4/9"])
def test_filter_indep_pairwise__pair_with_r2_equal_to_threshold_is_kept(target):
    # plink1.9 and plink2 keep both SNPs of every such pair (r^2 > R2 prunes)
    from fractions import Fraction

    target = Fraction(target)
    kept = [filter_indep_pairwise(Genotypes.from_array(pair), 2, 1,
                                  float(target)).n_snps
            for pair in tied_pairs(target)]
    assert kept == [2] * len(kept)


@needs_allel
def test_filter_indep_pairwise__pair_just_above_threshold_is_pruned():
    pair = tied_pairs(0.25, n_pairs=1)[0]
    assert filter_indep_pairwise(Genotypes.from_array(pair), 2, 1, 0.2499).n_snps == 1


def copies_around_monomorphic() -> Genotypes:
    """snp0, 3 monomorphic SNPs, snp4 = a copy of snp0, then an unlinked snp5."""
    rng = np.random.default_rng(2)
    first = rng.integers(0, 3, 40)
    fixed = np.full(40, 2)
    return Genotypes.from_array(np.column_stack(
        [first, fixed, fixed, fixed, first, rng.integers(0, 3, 40)]))


@needs_allel
def test_apply_filters__monomorphic_snps_count_in_ld_windows_as_in_plink():
    # plink1.9 --indep-pairwise 4 1 0.5 keeps snp0 snp4 snp5 (the copy is 4
    # SNPs away, outside the window); run (which keeps monomorphic SNPs) too
    result = apply_filters(copies_around_monomorphic(), indep_pairwise=(4, 1, 0.5))
    assert result.variants["id"].tolist() == ["snp0", "snp4", "snp5"]
    assert [(e["filter"], e["removed"]) for e in result.filter_log] == [
        ("monomorphic", 3), ("indep_pairwise", 0)]


@needs_allel
def test_apply_filters__info_and_run_prune_the_same_snps():
    genotypes = copies_around_monomorphic()
    info = apply_filters(genotypes, geno=0.5, indep_pairwise=(4, 1, 0.5))
    run = apply_filters(genotypes, geno=0.5, indep_pairwise=(4, 1, 0.5),
                        drop_monomorphic=False)
    polymorphic = run.variants["id"].isin(["snp0", "snp4", "snp5"])
    assert info.variants["id"].tolist() == run.variants["id"][polymorphic].tolist()
    assert [e["filter"] for e in info.filter_log] == [
        "geno", "monomorphic", "indep_pairwise"]
