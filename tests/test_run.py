"""``admixspec run``: outputs, determinism, input agreement and usage errors."""

import json
from pathlib import Path

import numpy as np
import pytest

from admixspec import fit_admixture, simulate_balding_nichols
from admixspec.cli import main
from admixspec.core.metrics import q_error
from admixspec.io import read_genotypes, read_q, write_plink
from admixspec.io.admixture import format_matrix

from .conftest import DATA, blas_threads

BED = str(DATA / "example.bed")
VCF = str(DATA / "example.vcf.gz")


def _bytes(prefix, kind):
    return Path(f"{prefix}.3.{kind}").read_bytes()


@pytest.fixture(scope="module")
def run_fixture(tmp_path_factory):
    """One default run of K = 3 on the bundled example."""
    out = tmp_path_factory.mktemp("run") / "example"
    assert main(["run", BED, "-K", "3", "--out", str(out), "-q"]) == 0
    return out


class TestOutputs:
    def test_writes_admixture_files(self, run_fixture):
        Q = read_q(f"{run_fixture}.3.Q")
        assert Q.shape == (60, 3)
        np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-5)
        lines = Path(f"{run_fixture}.3.P").read_text().splitlines()
        assert len(lines) == 10_000 and len(lines[0].split()) == 3

    def test_log_and_json_report_the_path_and_loglik(self, run_fixture):
        log = Path(f"{run_fixture}.3.log").read_text()
        record = json.loads(Path(f"{run_fixture}.3.json").read_text())
        assert f"Loglikelihood: {record['loglik']:.6f}" in log
        assert f"Estimator: {record['path']}" in log
        assert record["path"] in ("spectral", "spectral+ml", "ml-fallback", "ml-svd")
        assert record["version"] and record["seed"] == 43
        assert "spectral" in record["timings"]

    def test_estimate_is_close_to_truth(self, run_fixture):
        truth = read_q(DATA / "example.truth.Q")
        assert q_error(truth, read_q(f"{run_fixture}.3.Q")) < 0.03

    def test_same_seed__byte_identical_q_and_p(self, run_fixture, tmp_path):
        again = tmp_path / "again"
        assert main(["run", BED, "-K", "3", "--out", str(again), "-q"]) == 0
        for kind in ("Q", "P"):
            assert _bytes(again, kind) == _bytes(run_fixture, kind)

    def test_vcf_and_plink__identical_q(self, run_fixture, tmp_path):
        from_vcf = tmp_path / "vcf"
        assert main(["run", VCF, "-K", "3", "--out", str(from_vcf), "-q"]) == 0
        assert _bytes(from_vcf, "Q") == _bytes(run_fixture, "Q")

    def test_projection_onto_fitted_p__reproduces_q(self, run_fixture, tmp_path):
        projected = tmp_path / "projected"
        args = ["run", BED, "-K", "3", "--project", f"{run_fixture}.3.P",
                "--out", str(projected), "-q"]
        assert main(args) == 0
        fitted = read_q(f"{run_fixture}.3.Q")
        assert np.mean(np.abs(read_q(f"{projected}.3.Q") - fitted)) < 0.01


class TestUsageErrors:
    def test_K_above_the_individuals__one_line_exit_2(self, tmp_path, capsys):
        # K below 1 is refused when -K is parsed (tests/test_cli.py)
        status = main(["run", BED, "-K", "60", "--out", str(tmp_path / "x")])
        err = capsys.readouterr().err.strip().splitlines()
        assert status == 2
        assert len(err) >= 1 and err[-1].startswith(f"admixspec: error: {BED}: K")
        assert not list(tmp_path.iterdir())

    def test_missing_input__exit_1(self, tmp_path, capsys):
        status = main(["run", str(tmp_path / "none.bed"), "-K", "2"])
        assert status == 1
        assert "none" in capsys.readouterr().err


class TestOnePath:
    """``run`` is one :func:`admixspec.fit_admixture` call per K, at every size."""

    @pytest.mark.slow  # each case fits 6,000 individuals twice: 1-2 minutes
    @pytest.mark.parametrize(("flags", "options", "path", "reference"), [
        # the spectral stage runs on a reference of 5,000, the other 1,000 projected
        (["--no-refine"], {"refine": False}, "spectral+projection", 5000),
        # Balding-Nichols data lack rare alleles: no spectral stage, everyone fitted
        ([], {}, "ml-svd", None),
    ])
    def test_above_the_default_reference_size__run_writes_fit_admixtures_bytes(
            self, tmp_path, flags, options, path, reference):
        sim = simulate_balding_nichols(6000, 300, 2, fst=0.2, alpha=0.5, seed=5)
        write_plink(tmp_path / "cohort", sim.genotypes)
        bed = str(tmp_path / "cohort.bed")
        out = tmp_path / "run"
        assert main(["run", bed, "-K", "2", "--seed", "3", "-j", "1", "-q", *flags,
                     "--out", str(out)]) == 0
        result = fit_admixture(read_genotypes(bed), 2, seed=3, threads=1, **options)
        assert result.path == path
        assert (None if result.reference is None else len(result.reference)) == reference
        assert Path(f"{out}.2.Q").read_text() == format_matrix(result.Q, "Q")
        assert Path(f"{out}.2.P").read_text() == format_matrix(result.P, "P")


def test_fit_admixture__runs_every_stage_on_its_threads(monkeypatch):
    """``threads`` (``-j``) holds for the spectral stage too, numba's and BLAS's
    threads alike: it had run on every core."""
    import numba

    from admixspec import simulate_admixture
    from admixspec.fit import default

    seen = []
    stage = default.spectral_stage

    def spy(*args, **kwargs):
        seen.append((numba.get_num_threads(), blas_threads()))
        return stage(*args, **kwargs)

    monkeypatch.setattr(default, "spectral_stage", spy)
    sim = simulate_admixture(60, 3, alpha=0.5, n_snps=3000, seed=1)
    before = (numba.get_num_threads(), blas_threads())
    fit_admixture(sim.genotypes, 3, threads=1, seed=0, refine=False)
    assert seen == [(1, {1})]
    assert (numba.get_num_threads(), blas_threads()) == before
