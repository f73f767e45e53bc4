"""Reference fit + projection, tested against the simulation's truth."""

from __future__ import annotations

import json

import numpy as np
import pytest

from admixspec import UsageError, fit_admixture, simulate_balding_nichols
from admixspec.cli import main
from admixspec.core.metrics import match_components, q_error
from admixspec.fit.reference import reference_individuals
from admixspec.io import read_genotypes, read_q, write_p, write_plink
from admixspec.io.reader import open_streamed
from admixspec.ml.debias import debiased_project, p_covariance
from admixspec.ml.likelihood import loglikelihood
from admixspec.ml.project import project


@pytest.fixture(scope="module")
def cohort_fixture():
    # 1,000 reference individuals for 2,000 SNPs: P's sampling noise adds
    # about 10% to a projected individual's Q error (measured 1.09x)
    return simulate_balding_nichols(2000, 2000, 3, fst=0.1, alpha=0.5, seed=3)


@pytest.fixture(scope="module")
def cohort_fit_fixture(cohort_fixture):
    return fit_admixture(cohort_fixture.genotypes, 3, reference_size=1000, seed=3)


@pytest.fixture
def small_fixture():
    return simulate_balding_nichols(300, 1500, 2, fst=0.15, alpha=0.5, seed=4)


class TestReferenceIndividuals:
    def test_reference_individuals__sorted_distinct_and_seeded(self):
        rows = reference_individuals(1000, 100, seed=5)
        assert len(np.unique(rows)) == 100
        assert np.all(np.diff(rows) > 0)
        np.testing.assert_array_equal(rows, reference_individuals(1000, 100, seed=5))
        assert not np.array_equal(rows, reference_individuals(1000, 100, seed=6))

    def test_reference_individuals__all_when_size_exceeds_cohort(self):
        assert reference_individuals(5, 10, seed=0).tolist() == [0, 1, 2, 3, 4]

    @pytest.mark.parametrize("size", [1, 2.5, True])
    def test_fit_admixture__bad_reference_size_is_a_usage_error(self, size):
        G = simulate_balding_nichols(10, 50, 2, seed=1).genotypes
        with pytest.raises(UsageError, match="reference_size must be an integer >= 2"):
            fit_admixture(G, 2, reference_size=size)


    @pytest.mark.parametrize("size", [2, 3])
    def test_fit_admixture__reference_of_at_most_k_individuals_is_a_usage_error(
            self, size, tmp_path):
        sim = simulate_balding_nichols(40, 200, 3, seed=1)
        message = rf"K=3 needs a reference of more than 3 individuals, got {size} "
        with pytest.raises(UsageError, match=message):
            fit_admixture(sim.genotypes, 3, reference_size=size, seed=1)
        write_plink(tmp_path / "cohort", sim.genotypes)  # and streamed from disk
        streamed = open_streamed(tmp_path / "cohort.bed", memory_bytes=4_000)
        with pytest.raises(UsageError, match=message):
            fit_admixture(streamed, 3, reference_size=size, seed=1, device="cpu")


class TestFitWithReference:
    def test_fit_with_reference__projected_error_near_reference_error(
        self, cohort_fixture, cohort_fit_fixture
    ):
        sim, result = cohort_fixture, cohort_fit_fixture
        Q = result.Q[:, match_components(sim.Q, result.Q)]
        rows = reference_individuals(2000, 1000, seed=3)
        projected = np.setdiff1d(np.arange(2000), rows)
        error_reference = np.abs(Q[rows] - sim.Q[rows]).mean()
        error_projected = np.abs(Q[projected] - sim.Q[projected]).mean()
        assert error_reference < 0.04
        assert error_projected < 1.2 * error_reference

    def test_fit_with_reference__reference_rows_are_the_reference_fit(
        self, cohort_fixture
    ):
        # the spectral estimate, reproducible to rounding (an ML refinement's
        # stopping iteration can differ between two identical calls)
        rows = reference_individuals(2000, 1000, seed=3)
        alone = fit_admixture(cohort_fixture.genotypes.dosage[rows], 3, seed=3,
                              refine=False)
        result = fit_admixture(cohort_fixture.genotypes, 3, reference_size=1000,
                                    seed=3, refine=False)
        np.testing.assert_allclose(result.Q[rows], alone.Q, atol=1e-10)
        np.testing.assert_allclose(result.P, alone.P, atol=1e-10)
        record = result.diagnostics["reference"]
        assert record["size"] == 1000
        assert record["projected"] == 1000
        assert record["reference_loglik"] == pytest.approx(alone.loglik, rel=1e-12)

    def test_fit_with_reference__chunks_do_not_change_the_projection(
        self, small_fixture
    ):
        # converged tightly, so that chunks stopping at different iterations agree
        options = {"reference_size": 100, "seed": 1, "refine": False, "tol": 1e-9}
        whole = fit_admixture(small_fixture.genotypes, 2, **options)
        chunked = fit_admixture(small_fixture.genotypes, 2, chunk_size=7, **options)
        np.testing.assert_allclose(chunked.Q, whole.Q, atol=1e-6)
        rows = reference_individuals(300, 100, seed=1)
        others = np.setdiff1d(np.arange(300), rows)
        G = small_fixture.genotypes.dosage
        direct = project(G[others], whole.P, tol=1e-9)
        # a reference of 100 (< 5000): the projection is corrected for P's noise
        V = p_covariance(G[rows], whole.Q[rows], whole.P)
        corrected = debiased_project(G[others], whole.P, V, direct)
        np.testing.assert_allclose(whole.Q[others], corrected, atol=1e-6)
        assert len(chunked.diagnostics["reference"]["projection_iterations"]) == 29
        plain = fit_admixture(small_fixture.genotypes, 2, projection_correction=False,
                              **options)
        np.testing.assert_allclose(plain.Q[others], direct, atol=1e-6)
        assert not plain.diagnostics["reference"]["projection_corrected"]

    def test_fit_with_reference__log_and_loglik_cover_everyone(self, small_fixture):
        result = fit_admixture(small_fixture.genotypes, 2, reference_size=100,
                                    seed=1)
        assert result.path.endswith("+projection")
        assert result.log_lines[-1] == f"Loglikelihood: {result.loglik:.6f}"
        assert sum(line.startswith("Loglikelihood:") for line in result.log_lines) == 1
        assert "Reference: 100 of 300 individuals drawn at random (seed 1)" in "\n".join(
            result.log_lines)

    def test_fit_with_reference__reference_of_everyone_is_the_plain_fit(
        self, small_fixture
    ):
        result = fit_admixture(small_fixture.genotypes, 2, reference_size=300,
                                    seed=1, refine=False)
        plain = fit_admixture(small_fixture.genotypes, 2, seed=1, refine=False)
        np.testing.assert_array_equal(result.Q, plain.Q)
        assert "reference" not in result.diagnostics and result.reference is None

    def test_fit_with_reference__bad_chunk_size(self, small_fixture):
        with pytest.raises(UsageError, match="chunk_size must be an integer >= 1"):
            fit_admixture(small_fixture.genotypes, 2, reference_size=100,
                               chunk_size=0)


class TestJointFit:
    """The default's reference serves the spectral stage; ML ends on everyone."""

    @pytest.fixture
    def default_reference_100(self, monkeypatch):
        # the default's reference (5,000) at a size a test can exceed
        monkeypatch.setattr("admixspec.fit.admixture.DEFAULT_REFERENCE_SIZE", 100)

    def test_default_reference__ml_ends_at_everyones_maximum_likelihood(
        self, small_fixture, default_reference_100
    ):
        # refine=True: the spectral stage runs on the reference, ML follows
        G, options = small_fixture.genotypes, {"seed": 1, "refine": True}
        joint = fit_admixture(G, 2, **options)
        projected = fit_admixture(G, 2, reference_size=100, **options)
        everyone = fit_admixture(G, 2, method="ml", seed=1, reference_size=300)
        assert joint.path == "spectral+ml+projection+joint"
        assert projected.path == "spectral+ml+projection"
        assert joint.reference.tolist() == projected.reference.tolist()
        # the joint fit starts where reference + projection ends, and climbs
        # to the optimum a fit of everyone from the start reaches
        assert joint.loglik > projected.loglik + 1.0
        assert joint.loglik == pytest.approx(everyone.loglik, rel=1e-7)
        assert joint.loglik == pytest.approx(loglikelihood(G.dosage, joint.Q, joint.P),
                                             rel=1e-12)
        assert q_error(small_fixture.Q, joint.Q) < q_error(small_fixture.Q, projected.Q)
        assert joint.diagnostics["joint"]["converged"]
        log = "\n".join(joint.log_lines)
        assert "Joint maximum likelihood on all 300 individuals" in log
        assert joint.log_lines[-1] == f"Loglikelihood: {joint.loglik:.6f}"
        assert sum(line.startswith("Loglikelihood:") for line in joint.log_lines) == 1
        assert not joint.diagnostics["reference"]["projection_corrected"]

    @pytest.mark.parametrize("options", [{"method": "ml"}, {}])
    def test_default_reference__no_spectral_stage_fits_everyone_from_the_start(
        self, small_fixture, default_reference_100, options
    ):
        # plain ML, and the default on data without rare alleles (Balding-Nichols:
        # its spectral stage is skipped), need no reference: everyone is fitted
        # as a cohort within the reference size would be
        G = small_fixture.genotypes
        result = fit_admixture(G, 2, seed=1, **options)
        alone = fit_admixture(G, 2, seed=1, reference_size=300, **options)
        assert result.path == "ml-svd" and result.reference is None
        np.testing.assert_array_equal(result.Q, alone.Q)

    def test_default_reference__a_spectral_estimate_stays_projected(
        self, small_fixture, default_reference_100
    ):
        result = fit_admixture(small_fixture.genotypes, 2, seed=1, refine=False)
        assert result.path == "spectral+projection"
        assert "joint" not in result.diagnostics

    def test_streamed_on_the_cpu__stays_reference_and_projection(
        self, small_fixture, default_reference_100, tmp_path, caplog
    ):
        # every iteration on everyone would read the file again there
        write_plink(tmp_path / "cohort", small_fixture.genotypes)
        streamed = open_streamed(tmp_path / "cohort.bed", memory_bytes=40_000)
        with caplog.at_level("INFO", logger="admixspec"):
            result = fit_admixture(streamed, 2, method="ml", seed=1, device="cpu")
        assert result.path.endswith("+projection")
        assert "maximum likelihood on the reference only: on the CPU" in caplog.text


class TestCli:
    def test_run__reference_size_writes_q_in_input_order(self, small_fixture, tmp_path):
        write_plink(tmp_path / "cohort", small_fixture.genotypes)
        out = tmp_path / "out"
        assert main(["run", str(tmp_path / "cohort.bed"), "-K", "2", "--seed", "1",
                     "--reference-size", "100", "--no-refine", "-C", "1e-9",
                     "--out", str(out)]) == 0
        expected = fit_admixture(small_fixture.genotypes, 2, reference_size=100,
                                      seed=1, refine=False, tol=1e-9)
        np.testing.assert_allclose(read_q(tmp_path / "out.2.Q"), expected.Q, atol=1e-5)
        ids = (tmp_path / "out.2.ref").read_text().split()
        rows = reference_individuals(300, 100, seed=1)
        assert ids == small_fixture.genotypes.samples[rows].tolist()
        record = json.loads((tmp_path / "out.2.json").read_text())
        assert record["diagnostics"]["reference"]["seed"] == 1
        assert "Reference: 100 of 300" in (tmp_path / "out.2.log").read_text()

    def test_run__reference_no_larger_than_a_K_is_refused_before_any_K_is_written(
            self, small_fixture, tmp_path, capsys):
        # K = 2 was fitted and written, then K = 3 failed at its fit
        write_plink(tmp_path / "cohort", small_fixture.genotypes)
        code = main(["run", str(tmp_path / "cohort.bed"), "-K", "2", "3",
                     "--reference-size", "3", "--out", str(tmp_path / "o"), "-q"])
        assert code == 2
        assert capsys.readouterr().err.splitlines() == [
            "admixspec: error: K=3 needs a reference of more than 3 individuals, got 3 "
            "(reference_size, --reference-size)"]
        assert sorted(p.name for p in tmp_path.glob("o*")) == []

    def test_run__bootstrap_with_a_smaller_reference_is_a_usage_error(
            self, small_fixture, tmp_path, capsys):
        # it wrote .Q_se/.Q_bias of the 100 reference rows beside a .Q of 300
        write_plink(tmp_path / "cohort", small_fixture.genotypes)
        code = main(["run", str(tmp_path / "cohort.bed"), "-K", "2", "-B", "3",
                     "--reference-size", "100", "--out", str(tmp_path / "o"), "-q"])
        assert code == 2
        assert capsys.readouterr().err.splitlines() == [
            "admixspec: error: the bootstrap (-B) estimates everyone's standard "
            "errors, but a reference of 100 of the 300 individuals (--reference-size) "
            "fits only its own: give --reference-size 300 or more, or drop -B"]
        assert not list(tmp_path.glob("o.*"))

    def test_run__reference_size_with_project_is_a_usage_error(self, small_fixture,
                                                                tmp_path, capsys):
        write_plink(tmp_path / "cohort", small_fixture.genotypes)
        n_snps = read_genotypes(tmp_path / "cohort.bed").n_snps  # as run filters them
        write_p(tmp_path / "x.P", np.full((n_snps, 2), 0.5))
        code = main(["run", str(tmp_path / "cohort.bed"), "-K", "2", "--reference-size",
                     "100", "--project", str(tmp_path / "x.P"),
                     "--out", str(tmp_path / "o")])
        assert code == 2
        assert "(--reference-size) cannot be combined with projection" in (
            capsys.readouterr().err)
