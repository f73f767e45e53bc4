"""Bug hunt: projection's inputs and messages (``run --project REF.K.P``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from admixspec.cli import main
from admixspec.io.snps import match_snps

from .conftest import fit_reference_run, write_cohort
from .conftest import run_cli as run

_COMPLEMENT = str.maketrans("ACGT", "TGCA")


@pytest.fixture
def cohort_fixture(tmp_path) -> Path:
    """80 admixed individuals of K = 2 at 800 SNPs, as PLINK."""
    return write_cohort(tmp_path / "sim", 80, 800)


@pytest.fixture
def reference_run_fixture(cohort_fixture, tmp_path) -> Path:
    """A reference run ``ref/ref.2.{P,P.snps,Q,json}`` on the cohort's first 40."""
    (tmp_path / "ref").mkdir()
    return fit_reference_run(cohort_fixture, 40, tmp_path / "ref" / "ref")


def project(cohort, p_path, out, capsys, *extra):
    return run(["run", f"{cohort}.bed", "-K", "2", "--project", p_path, "--out", out,
                "-s", "1", *extra], capsys)


class TestReferenceQ:
    def test_a_reference_q_of_other_columns_than_p__is_an_error_naming_it(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        # it was ignored without a word: the projection silently went uncorrected
        q_path = reference_run_fixture.with_suffix(".Q")
        q_path.write_text("".join(f"{line} 0.0\n"
                                  for line in q_path.read_text().splitlines()))
        code, out, err = project(cohort_fixture, reference_run_fixture,
                                 tmp_path / "target", capsys, "-q")
        assert (code, out) == (1, "")
        assert err == (
            f"admixspec: error: {q_path}: has 3 columns but ref.2.P has K = 2: not the "
            "reference run's Q, which a projection reads to correct for the sampling "
            "noise of P (move it away, or give --plain-projection)\n")
        assert not list(tmp_path.glob("target.*"))

    def test_a_reference_q_whose_rows_do_not_sum_to_1__is_an_error_naming_its_row(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        # read_q took "0.5 0.6" as a reference individual's ancestry proportions
        q_path = reference_run_fixture.with_suffix(".Q")
        lines = q_path.read_text().splitlines()
        lines[2] = "0.5 0.6"
        q_path.write_text("\n".join(lines) + "\n")
        code, _, err = project(cohort_fixture, reference_run_fixture,
                               tmp_path / "target", capsys, "-q")
        assert code == 1
        assert err.startswith(f"admixspec: error: {q_path}: row 3 sums to 1.1, not 1")

    def test_a_reference_q_rounded_to_6_decimals__is_accepted(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        q_path = reference_run_fixture.with_suffix(".Q")
        lines = q_path.read_text().splitlines()
        lines[0] = "0.333334 0.666667"  # sums to 1.000001
        q_path.write_text("\n".join(lines) + "\n")
        code, _, err = project(cohort_fixture, reference_run_fixture,
                               tmp_path / "target", capsys, "-q")
        assert (code, err) == (0, "")
        assert "Projection: corrected" in Path(f"{tmp_path}/target.2.log").read_text()

    def test_plain_projection__does_not_read_the_reference_q(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        reference_run_fixture.with_suffix(".Q").write_text("0.5 0.6\n")
        code, _, err = project(cohort_fixture, reference_run_fixture,
                               tmp_path / "target", capsys, "-q", "--plain-projection")
        assert (code, err) == (0, "")

    def test_a_reference_q_of_5000_rows__the_log_says_p_is_not_corrected(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        # the log said "the reference's Q ... gives the sampling noise of its P",
        # then the projection went uncorrected (5000 individuals or more) unsaid
        q_path = reference_run_fixture.with_suffix(".Q")
        rows = q_path.read_text().splitlines()
        q_path.write_text("\n".join(rows * 125) + "\n")
        assert project(cohort_fixture, reference_run_fixture, tmp_path / "target",
                       capsys, "-q")[0] == 0
        log = Path(f"{tmp_path}/target.2.log").read_text()
        assert ("Projection: not corrected for the sampling noise of P: its reference "
                "has 5000 individuals, at least 5000, and P is taken as exact") in log
        assert "Projection: corrected" not in log


class TestMinOverlap:
    def test_min_overlap_0_with_no_snp_matched__says_none_match(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        # read "only 0 of its 800 SNPs (0.0%) ... below the minimum overlap 0%"
        table = reference_run_fixture.with_name("ref.2.P.snps")
        snps = pd.read_csv(table, sep="\t", dtype=str)
        snps["chrom"], snps["id"] = "7", "other" + snps["id"]
        snps.to_csv(table, sep="\t", index=False)
        code, _, err = project(cohort_fixture, reference_run_fixture,
                               tmp_path / "target", capsys, "-q", "--min-overlap", "0")
        assert code == 1
        assert err.startswith(
            f"admixspec: error: {table}: none of its 800 SNPs match the target's by "
            "chromosome, position and alleles or by ID: a projection needs at least "
            "one")
        assert "minimum overlap" not in err

    def test_min_overlap_without_project__is_a_usage_error(
            self, cohort_fixture, tmp_path, capsys):
        # it was silently ignored
        code, _, err = run(["run", f"{cohort_fixture}.bed", "-K", "2", "--min-overlap",
                            "0.9", "--out", tmp_path / "x"], capsys)
        assert code == 2
        assert err == ("admixspec: error: --min-overlap is an option of --project, "
                       "which was not given\n")


def _variants(*alleles) -> pd.DataFrame:
    return pd.DataFrame({"chrom": "1", "pos": np.arange(1, len(alleles) + 1),
                         "id": [f"s{i}" for i in range(len(alleles))],
                         "counted": [a[0] for a in alleles],
                         "other": [a[1] for a in alleles]})


class TestMissingAllele:
    def test_plink_allele_0__matches_either_allele_on_the_same_strand(self):
        # G/0 (a monomorphic SNP in PLINK) against G/A was dropped as "other alleles"
        reference = _variants("GA", "GA", "G0", "G0", "G0", "G0")
        target = _variants("G0", "A0", "GA", "AG", "G0", "CT")
        match = match_snps(reference, target)
        assert match.reference.tolist() == [0, 1, 2, 3, 4]
        assert match.flip.tolist() == [False, True, False, True, False]
        assert match.counts["allele_mismatch"] == 1  # G/0 against C/T: strand unknown

    def test_plink_allele_0__the_run_keeps_a_monomorphic_target_snp(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        bim = Path(f"{cohort_fixture}.bim")
        table = pd.read_csv(bim, sep="\t", header=None, dtype=str)
        mono = int(np.flatnonzero((table[4] + table[5]).isin(["AG", "GA", "CT", "TC"])
                                  )[0])
        table.loc[mono, 4] = "0"
        table.to_csv(bim, sep="\t", header=False, index=False)
        assert project(cohort_fixture, reference_run_fixture, tmp_path / "target",
                       capsys, "-q")[0] == 0
        assert "0 with other alleles" in Path(f"{tmp_path}/target.2.log").read_text()


class TestKeepAmbiguous:
    @pytest.fixture
    def flipped_fixture(self, cohort_fixture, tmp_path) -> Path:
        """The cohort on the other strand (every allele complemented)."""
        table = pd.read_csv(f"{cohort_fixture}.bim", sep="\t", header=None, dtype=str)
        table[4] = table[4].str.translate(_COMPLEMENT)
        table[5] = table[5].str.translate(_COMPLEMENT)
        table.to_csv(tmp_path / "flip.bim", sep="\t", header=False, index=False)
        for suffix in (".bed", ".fam"):
            Path(f"{tmp_path}/flip{suffix}").write_bytes(
                Path(f"{cohort_fixture}{suffix}").read_bytes())
        return tmp_path / "flip"

    def test_keep_ambiguous_on_the_other_strand__warns_of_mis_oriented_snps(
            self, flipped_fixture, reference_run_fixture, tmp_path, capsys):
        # the A/T and C/G SNPs were matched as given, silently mis-oriented
        reference = pd.read_csv(reference_run_fixture.with_name("ref.2.P.snps"),
                                sep="\t", dtype=str)
        n_ambiguous = int((reference["counted"].str.translate(_COMPLEMENT)
                           == reference["other"]).sum())
        code, _, err = project(flipped_fixture, reference_run_fixture,
                               tmp_path / "target", capsys, "-q", "--keep-ambiguous")
        assert code == 0
        assert (f"the {n_ambiguous} strand-ambiguous (A/T, C/G) SNPs kept as given "
                "(never complemented) likely mis-oriented") in err

    def test_keep_ambiguous_on_the_same_strand__does_not_warn(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        code, _, err = project(cohort_fixture, reference_run_fixture,
                               tmp_path / "target", capsys, "-q", "--keep-ambiguous")
        assert (code, err) == (0, "")


class TestBareP:
    def test_bare_p__the_p_rows_line_does_not_cite_a_snp_matching(
            self, cohort_fixture, tmp_path, capsys):
        # "P rows: ... (SNP matching above)", but a bare P is matched by nothing
        full = tmp_path / "full"
        assert main([str(a) for a in ["run", f"{cohort_fixture}.bed", "-K", "2",
                                      "--out", full, "-s", "1", "-q"]]) == 0
        bare = tmp_path / "bare"
        bare.mkdir()
        (bare / "full.2.P").write_bytes(Path(f"{full}.2.P").read_bytes())
        assert project(cohort_fixture, bare / "full.2.P", tmp_path / "target",
                       capsys, "-q")[0] == 0
        line = next(line for line in Path(f"{tmp_path}/target.2.log").read_text()
                    .splitlines() if line.startswith("P rows:"))
        assert "SNP matching" not in line
        assert "no SNP table" in line
