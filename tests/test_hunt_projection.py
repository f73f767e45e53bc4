"""Bug hunt: projection onto a reference's P (``run --project``, a reference sample)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from admixspec import fit_admixture, project, simulate_balding_nichols
from admixspec.cli import main
from admixspec.core.exceptions import InputError, UsageError
from admixspec.core.filters import check_usable
from admixspec.core.genotypes import Genotypes
from admixspec.ml.debias import p_covariance

from .conftest import fit_reference_run, write_cohort
from .conftest import run_cli as run


@pytest.fixture
def cohort_fixture(tmp_path) -> Path:
    """120 admixed individuals of K = 2, as PLINK."""
    return write_cohort(tmp_path / "sim", 120, 1500)


@pytest.fixture
def reference_run_fixture(cohort_fixture, tmp_path) -> Path:
    """A reference run ``ref.2.{P,P.snps,Q,json}`` on the cohort's first 60."""
    return fit_reference_run(cohort_fixture, 60, tmp_path / "ref")


def reference_record(prefix: Path) -> dict:
    return json.loads(Path(f"{prefix}.2.json").read_text())["diagnostics"]["reference"]


class TestPlainProjectionOfAReferenceSample:
    def test_plain_projection__accepted_with_reference_size_and_not_corrected(
            self, cohort_fixture, tmp_path, capsys):
        # --plain-projection's help says the correction applies to the
        # projection of --reference-size, and fit_admixture takes
        # projection_correction=False with reference_size, but the command line
        # refused "--plain-projection is an option of --project, which was not
        # given": the correction could not be turned off there
        common = ["run", f"{cohort_fixture}.bed", "-K", "2", "--reference-size", "40",
                  "-s", "1", "-q"]
        code, _, err = run([*common, "--plain-projection", "--out", tmp_path / "plain"],
                           capsys)
        assert (code, err) == (0, "")
        assert run([*common, "--out", tmp_path / "corrected"], capsys)[0] == 0
        plain, corrected = reference_record(tmp_path / "plain"), reference_record(
            tmp_path / "corrected")
        assert (plain["projection_corrected"], corrected["projection_corrected"]) == (
            False, True)
        assert "Projection: corrected" not in Path(f"{tmp_path}/plain.2.log").read_text()

    def test_plain_projection__still_refused_without_project_or_reference_size(
            self, cohort_fixture, tmp_path, capsys):
        code, _, err = run(["run", f"{cohort_fixture}.bed", "-K", "2",
                            "--plain-projection", "--out", tmp_path / "x"], capsys)
        assert code == 2
        assert err == ("admixspec: error: --plain-projection is an option of "
                       "--project, which was not given\n")


class TestProjectStart:
    @pytest.mark.parametrize("value", [np.nan, np.inf])
    def test_project__a_non_finite_start_is_a_usage_error(self, value):
        # a NaN start ran max_iter iterations and returned a Q of NaN, with only a
        # ConvergenceWarning
        sim = simulate_balding_nichols(20, 500, 2, fst=0.2, seed=3)
        Q0 = np.full((20, 2), 0.5)
        Q0[3, 1] = value
        with pytest.raises(UsageError) as error:
            project(sim.genotypes.dosage, sim.P, Q0=Q0)
        assert str(error.value) == f"Q0 must hold finite numbers: Q0[3, 1] = {value:g}"


class TestReferenceQ:
    @pytest.mark.parametrize(("row", "shown"), [((0.0, 0.0), "0 0"),
                                                ((np.nan, 0.5), "nan 0.5"),
                                                ((-0.5, 1.5), "-0.5 1.5")])
    def test_p_covariance__a_row_that_is_no_proportions_is_an_input_error(
            self, row, shown):
        # a row of zeros (or NaN) made every SNP's covariance NaN: the corrected
        # projection then never moved Q, while the log said it was corrected
        Q_ref = np.full((5, 2), 0.5)
        Q_ref[2] = row
        with pytest.raises(InputError) as error:
            p_covariance(None, Q_ref, np.full((4, 2), 0.3))
        assert str(error.value) == (
            "the reference's Q must hold ancestry proportions (numbers >= 0, each row "
            f"summing to more than 0): row 3 is {shown} (1 such row)")

    def test_fit_admixture__a_reference_q_without_rows_is_an_input_error(self):
        # no rows made P's covariance the ridge's inverse (1e9), which pushed every
        # projected Q to a corner of the simplex
        sim = simulate_balding_nichols(20, 500, 2, fst=0.2, seed=3)
        with pytest.raises(InputError) as error:
            fit_admixture(sim.genotypes, 2, P=sim.P, reference_q=np.zeros((0, 2)))
        assert str(error.value) == (
            "the reference's Q has no individuals: it cannot tell how noisy P is")

    def test_run_project__a_reference_q_row_of_zeros_is_a_one_line_error(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        q_path = reference_run_fixture.with_suffix(".Q")
        lines = q_path.read_text().splitlines()
        lines[1] = "0.000000 0.000000"
        q_path.write_text("\n".join(lines) + "\n")
        code, out, err = run(["run", f"{cohort_fixture}.bed", "-K", "2", "--project",
                              reference_run_fixture, "--out", tmp_path / "target",
                              "-q"], capsys)
        assert (code, out) == (1, "")
        # the file's rows are checked as it is read, naming it
        assert err == (
            f"admixspec: error: {q_path}: row 2 sums to 0, not 1: not a Q matrix of "
            "ancestry proportions (a .P file's rows do not sum to 1)\n")
        assert not list(tmp_path.glob("target.*"))


class TestReferenceKept:
    def test_run_project__refuses_to_overwrite_the_reference_runs_files(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        # `run ref.bed -K 2 --project ref.2.P` (the default prefix is the input's
        # name) replaced the reference's P by its matched rows, its Q by the
        # projected one and its JSON by a projection's, after which projections
        # onto ref.2.P were no longer corrected
        prefix = tmp_path / "ref"
        files = [Path(f"{prefix}.2.{kind}") for kind in ("P", "P.snps", "Q", "json")]
        before = [path.read_bytes() for path in files]
        code, out, err = run(["run", f"{cohort_fixture}.bed", "-K", "2", "--project",
                              reference_run_fixture, "--out", prefix], capsys)
        assert (code, out) == (2, "")
        assert err == (f"admixspec: error: --project {reference_run_fixture} is this "
                       f"run's output {prefix}.2.P: the projection would overwrite the "
                       "reference run's P, Q and JSON; give another --out\n")
        assert [path.read_bytes() for path in files] == before

    def test_run_project__another_prefix_beside_the_reference_is_written(
            self, cohort_fixture, reference_run_fixture, tmp_path, capsys):
        code, _, err = run(["run", f"{cohort_fixture}.bed", "-K", "2", "--project",
                            reference_run_fixture, "--out", tmp_path / "target", "-q"],
                           capsys)
        assert (code, err) == (0, "")
        assert Path(f"{tmp_path}/target.2.Q").is_file()


class TestFewTargetIndividuals:
    # "fewer than 2 individuals" and "K must be smaller than the number of
    # individuals" refused placing one new sample, which a projection fits alone
    @pytest.mark.parametrize("n_targets", [1, 2])
    def test_run_project__places_fewer_individuals_than_K_plus_one(
            self, reference_run_fixture, cohort_fixture, tmp_path, capsys, n_targets):
        keep = tmp_path / "targets.keep"
        keep.write_text("".join(f"ind{i}\n" for i in range(100, 100 + n_targets)))
        code, _, err = run(["run", f"{cohort_fixture}.bed", "-K", "2", "--keep", keep,
                            "--project", reference_run_fixture, "--out",
                            tmp_path / "few", "-q"], capsys)
        assert code == 0, err
        few = np.loadtxt(tmp_path / "few.2.Q", ndmin=2)
        everyone = tmp_path / "all"
        assert main([str(a) for a in ["run", f"{cohort_fixture}.bed", "-K", "2",
                                      "--project", reference_run_fixture, "--out",
                                      everyone, "-q"]]) == 0
        # each target's projection is its own: the same Q as among all 120
        among_all = np.loadtxt(f"{everyone}.2.Q")[100:100 + n_targets]
        np.testing.assert_allclose(few, among_all, atol=2e-6)

    def test_fit_admixture__projects_one_individual(self):
        sim = simulate_balding_nichols(40, 2000, 3, fst=0.2, alpha=0.5, seed=3)
        one = fit_admixture(sim.genotypes.dosage[:1], 3, P=sim.P)
        np.testing.assert_allclose(one.Q, project(sim.genotypes.dosage[:1], sim.P))

    def test_check_usable__a_projection_needs_one_individual(self):
        empty = Genotypes.from_array(np.zeros((0, 5), dtype=np.int8))
        with pytest.raises(InputError, match=r"fewer than 1 individual left after "
                           r"filtering \(0 left\)"):
            check_usable(empty, individuals=1)
        check_usable(Genotypes.from_array(np.zeros((1, 5), dtype=np.int8)),
                     individuals=1)
