"""Bug hunt: projecting individuals who were in the reference P was fitted on.

The correction for P's sampling noise (:mod:`admixspec.ml.debias`) assumes
that the projected individuals are new to P. Those P was fitted on are not:
the correction moved their Q away from the truth (mean |Q - truth| 0.052
corrected, 0.028 plain, on 150 members of a reference fitted with ``--keep``)
and ADMIXTURE's own HapMap3 P and Q, self-projected, by up to 0.144. They now
get the plain projection; the others keep the corrected one, bit for bit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from admixspec import fit_admixture, simulate_balding_nichols
from admixspec.cli import main
from admixspec.core.exceptions import UsageError
from admixspec.io import write_plink

N_REFERENCE = 60


@pytest.fixture(scope="module")
def members_fixture():
    """120 individuals, K = 2; P and Q fitted on the first 60 (the reference)."""
    sim = simulate_balding_nichols(120, 2000, 2, fst=0.1, alpha=0.5, seed=4)
    G = sim.genotypes.dosage
    reference = fit_admixture(G[:N_REFERENCE], 2, method="ml", seed=1)
    members = np.arange(len(G)) < N_REFERENCE
    return sim, G, reference, members


def mean_error(Q, truth) -> float:
    """Mean |Q - truth| over the two components' better-matching order."""
    return min(float(np.abs(Q - truth).mean()),
               float(np.abs(Q[:, ::-1] - truth).mean()))


class TestReferenceMembersInTheLibrary:
    def test_members__get_exactly_the_plain_projections_rows(self, members_fixture):
        _, G, ref, members = members_fixture
        fit = fit_admixture(G, 2, P=ref.P, reference_q=ref.Q, reference_members=members)
        plain = fit_admixture(G, 2, P=ref.P, reference_q=ref.Q,
                              projection_correction=False)
        np.testing.assert_array_equal(fit.Q[members], plain.Q[members])

    def test_non_members__get_exactly_the_corrected_rows_as_without_members(
            self, members_fixture):
        _, G, ref, members = members_fixture
        fit = fit_admixture(G, 2, P=ref.P, reference_q=ref.Q, reference_members=members)
        corrected = fit_admixture(G, 2, P=ref.P, reference_q=ref.Q)
        np.testing.assert_array_equal(fit.Q[~members], corrected.Q[~members])
        # the members' rows are not the corrected ones: the argument did something
        assert not np.allclose(fit.Q[members], corrected.Q[members], atol=1e-3)

    def test_members__closer_to_the_truth_than_corrected(self, members_fixture):
        sim, G, ref, members = members_fixture
        fit = fit_admixture(G, 2, P=ref.P, reference_q=ref.Q, reference_members=members)
        corrected = fit_admixture(G, 2, P=ref.P, reference_q=ref.Q)
        truth = sim.Q[members]
        assert mean_error(fit.Q[members], truth) < 0.9 * mean_error(
            corrected.Q[members], truth)

    def test_members__counted_in_diagnostics_and_log(self, members_fixture):
        _, G, ref, members = members_fixture
        fit = fit_admixture(G, 2, P=ref.P, reference_q=ref.Q, reference_members=members)
        assert fit.diagnostics["projection_correction"] == {
            "reference_size": N_REFERENCE, "reference_members": N_REFERENCE}
        assert (f"Projection: {N_REFERENCE} of the 120 individuals are among the "
                "reference's, which P was fitted on: they get the plain projection "
                "(the correction is for individuals new to P, whose genotypes P's "
                "noise does not depend on)") in fit.log_lines

    def test_all_members__the_plain_projection_and_no_correction_line(
            self, members_fixture):
        _, G, ref, _ = members_fixture
        fit = fit_admixture(G[:N_REFERENCE], 2, P=ref.P, reference_q=ref.Q,
                            reference_members=np.ones(N_REFERENCE, dtype=bool))
        plain = fit_admixture(G[:N_REFERENCE], 2, P=ref.P, projection_correction=False)
        np.testing.assert_array_equal(fit.Q, plain.Q)
        assert not any(line.startswith("Projection: corrected")
                       for line in fit.log_lines)

    def test_members__also_in_a_cross_validation_folds_refit(self, members_fixture):
        # the folds refit the projection as the point estimate was: with every
        # individual a member that is the plain projection's
        _, G, ref, _ = members_fixture
        everyone = np.ones(N_REFERENCE, dtype=bool)
        fit = fit_admixture(G[:N_REFERENCE], 2, P=ref.P, reference_q=ref.Q,
                            reference_members=everyone, cv=3, seed=1)
        plain = fit_admixture(G[:N_REFERENCE], 2, P=ref.P, projection_correction=False,
                              cv=3, seed=1)
        assert fit.cv.error == plain.cv.error

    @pytest.mark.parametrize(("members", "message"), [
        ([0, 1] * 60, "reference_members must be a 1-d array of booleans (one True or "
                      "False per individual); got an array of int64, shape (120,)"),
        ([True] * 119, "reference_members has 119 entries but the genotypes have 120 "
                       "individuals"),
    ])
    def test_bad_members__one_line_usage_error(self, members_fixture, members, message):
        _, G, ref, _ = members_fixture
        with pytest.raises(UsageError) as error:
            fit_admixture(G, 2, P=ref.P, reference_q=ref.Q, reference_members=members)
        assert str(error.value) == message

    def test_members_without_reference_q__usage_error(self, members_fixture):
        _, G, ref, members = members_fixture
        with pytest.raises(UsageError, match="used only with reference_q"):
            fit_admixture(G, 2, P=ref.P, reference_members=members)


def run(argv, capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def q_lines(prefix: Path) -> list[str]:
    return Path(f"{prefix}.2.Q").read_text().splitlines()


@pytest.fixture(scope="module")
def cohort_fixture(tmp_path_factory) -> Path:
    """The 120 individuals as PLINK (IDs ind0 ... ind119), and the first 60 alone."""
    folder = tmp_path_factory.mktemp("members")
    sim = simulate_balding_nichols(120, 2000, 2, fst=0.1, alpha=0.5, seed=4)
    write_plink(folder / "sim", sim.genotypes)
    write_plink(folder / "first",
                sim.genotypes.subset(individuals=np.arange(N_REFERENCE)))
    return folder / "sim"


class TestReferenceMembersOnTheCommandLine:
    def test_run_project__a_keep_references_members_get_the_plain_rows(
            self, cohort_fixture, tmp_path, capsys):
        keep = tmp_path / "ref.keep"
        keep.write_text("".join(f"ind{i}\n" for i in range(N_REFERENCE)))
        bed = f"{cohort_fixture}.bed"
        assert run(["run", bed, "-K", "2", "--keep", keep, "--out", tmp_path / "ref",
                    "-s", "1", "-q"], capsys)[0] == 0
        project = ["run", bed, "-K", "2", "--project", tmp_path / "ref.2.P", "-q"]
        assert run([*project, "--out", tmp_path / "members"], capsys) == (0, "")
        assert run([*project, "--plain-projection", "--out", tmp_path / "plain"],
                   capsys)[0] == 0
        # the same reference without its JSON: its IDs unknown, everyone corrected
        # (as before reference members were told apart)
        bare = tmp_path / "bare"
        bare.mkdir()
        for suffix in (".P", ".P.snps", ".Q"):
            shutil.copy(tmp_path / f"ref.2{suffix}", bare / f"ref.2{suffix}")
        code, err = run(["run", bed, "-K", "2", "--project", bare / "ref.2.P",
                         "--out", tmp_path / "unknown"], capsys)
        assert code == 0
        assert "the IDs of the reference's individuals are not found" in err
        members, plain = q_lines(tmp_path / "members"), q_lines(tmp_path / "plain")
        unknown = q_lines(tmp_path / "unknown")
        assert members[:N_REFERENCE] == plain[:N_REFERENCE]
        assert members[N_REFERENCE:] == unknown[N_REFERENCE:]
        assert members[:N_REFERENCE] != unknown[:N_REFERENCE]
        record = json.loads(Path(f"{tmp_path}/members.2.json").read_text())
        assert record["diagnostics"]["projection_correction"]["reference_members"] == (
            N_REFERENCE)
        assert (f"Projection: {N_REFERENCE} of the 120 individuals are among the "
                "reference's") in Path(f"{tmp_path}/members.2.log").read_text()

    def test_run_project__a_references_members_found_by_its_inputs_fam(
            self, cohort_fixture, tmp_path, capsys):
        # a reference run on a file of its own (no --keep: its JSON lists no
        # samples), its individuals named by that input's .fam
        first = cohort_fixture.with_name("first.bed")
        assert run(["run", first, "-K", "2", "--out", tmp_path / "ref", "-s", "1",
                    "-q"], capsys)[0] == 0
        assert "samples" not in json.loads(Path(f"{tmp_path}/ref.2.json").read_text())
        code, err = run(["run", f"{cohort_fixture}.bed", "-K", "2", "--project",
                         tmp_path / "ref.2.P", "--out", tmp_path / "members", "-q"],
                        capsys)
        assert (code, err) == (0, "")
        record = json.loads(Path(f"{tmp_path}/members.2.json").read_text())
        assert record["diagnostics"]["projection_correction"]["reference_members"] == (
            N_REFERENCE)

    def test_run_project__no_member_logic_with_plain_projection(
            self, cohort_fixture, tmp_path, capsys):
        first = cohort_fixture.with_name("first.bed")
        assert run(["run", first, "-K", "2", "--out", tmp_path / "ref", "-s", "1",
                    "-q"], capsys)[0] == 0
        assert run(["run", f"{cohort_fixture}.bed", "-K", "2", "--project",
                    tmp_path / "ref.2.P", "--plain-projection", "--out",
                    tmp_path / "plain", "-q"], capsys) == (0, "")
        record = json.loads(Path(f"{tmp_path}/plain.2.json").read_text())
        assert "projection_correction" not in record["diagnostics"]
