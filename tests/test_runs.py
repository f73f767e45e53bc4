"""Several fits of one K (fit_admixture(runs=N), run --runs); monomorphic SNPs."""

import json
from pathlib import Path

import numpy as np
import pytest

from admixspec import fit_admixture, loglikelihood, q_error, simulate_balding_nichols
from admixspec.cli import main
from admixspec.core.exceptions import UsageError
from admixspec.core.parameters import P_MAX, P_MIN
from admixspec.fit.modes import LOGLIK_TIE
from admixspec.fit.monomorphic import complete_snps, monomorphic_snps
from admixspec.fit.pipeline import FitOptions, is_spectral_estimate
from admixspec.fit.runs import run_options
from admixspec.io import read_q
from admixspec.io.modes import read_modes

from .conftest import DATA
from .reference import simulate_structured

BED = str(DATA / "example.bed")


@pytest.fixture(scope="module")
def sim_fixture():
    return simulate_balding_nichols(60, 1500, 3, fst=0.15, alpha=0.5, seed=4)


@pytest.fixture(scope="module")
def runs_fixture(sim_fixture):
    return fit_admixture(sim_fixture.genotypes, 3, seed=7, runs=4)


class TestRunOptions:
    def test_default_first__then_random_ml_with_successive_seeds(self):
        options = run_options(FitOptions(seed=10, cv=5, bootstrap=20), 3)
        assert [(o.method, o.init, o.seed) for o in options] == [
            ("spectral", None, 10), ("ml", "random", 11), ("ml", "random", 12)]
        assert all(o.cv is None and o.bootstrap is None for o in options)

    def test_no_seed__every_run_unseeded(self):
        assert [o.seed for o in run_options(FitOptions(seed=None), 3)] == [None] * 3


class TestSpectralEstimatePaths:
    @pytest.mark.parametrize(
        ("path", "spectral"),
        [("spectral", True), ("spectral+projection", True),
         ("spectral+streamed", True), ("spectral+streamed+projection", True),
         ("spectral+ml", False), ("spectral+ml+projection+joint", False),
         ("ml-svd", False), ("ml-fallback", False), ("ml-random+streamed", False),
         ("single-population", False), ("supervised", False)],
    )
    def test_is_spectral_estimate__a_projection_or_streamed_p_keeps_the_spectral_q(
            self, path, spectral):
        # what --runs, --cv and -B treat as the spectral estimate, not an ML fit
        assert is_spectral_estimate(path) is spectral


class TestFitRuns:
    def test_best_run__has_the_best_loglikelihood_of_all(self, runs_fixture):
        modes = runs_fixture.modes
        assert modes.n_runs == 4
        assert runs_fixture.loglik == max(modes.logliks)
        table = runs_fixture.diagnostics["runs"]
        assert [row["run"] for row in table] == ["7", "8", "9", "10"]
        assert [row["loglik"] for row in table] == modes.logliks.tolist()
        np.testing.assert_array_equal(runs_fixture.Q, modes.aligned[modes.reference])

    def test_spectral_first_run__is_kept_over_ml_runs_of_higher_likelihood(self):
        # private alleles: the default keeps the spectral estimate, and ML from
        # random starts runs to the corners (Q error 0.054 against 0.019)
        dosage, Q, _ = simulate_structured("private", m=100, n=5000, alpha=1.0, seed=5)
        single = fit_admixture(dosage, 3, seed=0)
        result = fit_admixture(dosage, 3, seed=0, runs=3)
        assert single.path == result.path == "spectral"
        np.testing.assert_array_equal(result.Q, single.Q)
        assert result.modes.reference == 0
        assert max(result.modes.logliks[1:]) > result.loglik
        assert q_error(Q, result.Q) < 0.5 * q_error(Q, result.modes.aligned[1])
        assert any(line.startswith("Runs: 3 fits of K=3") and "kept run 0, the spectral "
                   "estimate the default chose" in line for line in result.log_lines)

    def test_first_run__is_the_single_fit(self, sim_fixture, runs_fixture):
        single = fit_admixture(sim_fixture.genotypes, 3, seed=7)
        assert runs_fixture.diagnostics["runs"][0]["loglik"] == single.loglik
        assert runs_fixture.diagnostics["runs"][0]["path"] == single.path

    def test_log__names_every_run_and_the_modes(self, runs_fixture):
        lines = runs_fixture.log_lines
        assert sum(line.startswith("Run ") for line in lines) == 4
        assert any(line.startswith("Modes (K=3): ") for line in lines)
        assert any(line.startswith("Mode 1: ") for line in lines)
        finals = [line for line in lines if line.startswith("Loglikelihood: ")]
        assert finals and finals[-1] == f"Loglikelihood: {runs_fixture.loglik:.6f}"

    def test_record__carries_the_modes(self, runs_fixture):
        record = runs_fixture.record()
        assert record["modes"]["n_runs"] == 4
        assert [row["run"] for row in record["modes"]["runs"]] == ["7", "8", "9", "10"]

    def test_cv_and_bootstrap__once_on_the_best_run(self, sim_fixture):
        result = fit_admixture(sim_fixture.genotypes, 3, seed=7, runs=2, cv=2,
                               bootstrap=3)
        assert result.cv is not None and result.bootstrap is not None
        assert result.bootstrap.Q_se.shape == result.Q.shape
        assert sum(line.startswith("CV error (K=3)") for line in result.log_lines) == 1
        # the cross-validation of the best run's fit, whichever run that was
        single = fit_admixture(sim_fixture.genotypes, 3, seed=7, cv=2)
        if result.diagnostics["runs"][0]["loglik"] == result.loglik:
            assert result.cv.error == single.cv.error

    def test_projection_with_runs__usage_error(self, sim_fixture):
        with pytest.raises(UsageError, match="does not depend on its start"):
            fit_admixture(sim_fixture.genotypes, 3, P=sim_fixture.P, runs=2)

    def test_reference_cohort__every_run_projects_everyone(self, sim_fixture):
        result = fit_admixture(sim_fixture.genotypes, 3, seed=7, runs=2,
                               reference_size=40)
        assert result.Q.shape == (60, 3) and result.modes.aligned.shape == (2, 60, 3)
        assert result.path.endswith("+projection")


def _with_monomorphic(G):
    """G with a fixed-0, a fixed-2, an all-missing and a fixed-0-with-missing column."""
    m = G.shape[0]
    zero, two = np.zeros(m, np.int8), np.full(m, 2, np.int8)
    none = np.full(m, -1, np.int8)
    gappy = zero.copy()
    gappy[::3] = -1
    columns = [zero, two, none, gappy]
    where = [0, 5, 17, G.shape[1] - 1]
    full = G.copy()
    for offset, (at, column) in enumerate(zip(where, columns, strict=True)):
        full = np.insert(full, at + offset, column, axis=1)
    mask = np.zeros(full.shape[1], bool)
    mask[[at + offset for offset, at in enumerate(where)]] = True
    return full, mask


@pytest.fixture(scope="module")
def polymorphic_fixture(sim_fixture):
    """The simulation's genotypes without its own monomorphic SNPs."""
    G = sim_fixture.genotypes.dosage
    return np.ascontiguousarray(G[:, ~monomorphic_snps(G)[0]])


class TestMonomorphic:
    def test_mask__finds_exactly_the_monomorphic_snps(self, polymorphic_fixture):
        G, mask = _with_monomorphic(polymorphic_fixture)
        found, (counted, observed) = monomorphic_snps(G)
        np.testing.assert_array_equal(found, mask)
        assert observed[mask].tolist()[2] == 0  # the all-missing one

    def test_fit__same_q_all_p_rows_and_admixture_loglik(self, polymorphic_fixture):
        G0 = polymorphic_fixture
        G, mask = _with_monomorphic(G0)
        plain = fit_admixture(G0, 3, seed=3)
        full = fit_admixture(G, 3, seed=3)
        np.testing.assert_array_equal(full.Q, plain.Q)
        assert full.P.shape == (G.shape[1], 3)
        np.testing.assert_array_equal(full.P[~mask], plain.P)
        np.testing.assert_array_equal(full.P[mask],
                                      [[P_MIN] * 3, [P_MAX] * 3, [0.5] * 3, [P_MIN] * 3])
        # ADMIXTURE's log-likelihood of every SNP: the constant of the monomorphic ones
        assert full.loglik == pytest.approx(loglikelihood(G, full.Q, full.P), rel=1e-12)
        assert full.loglik < plain.loglik
        assert full.diagnostics["monomorphic"]["snps"] == 4
        assert full.log_lines[-1] == f"Loglikelihood: {full.loglik:.6f}"
        assert full.log_lines[-2].startswith("Monomorphic SNPs: 4 of ")

    def test_complete_snps__no_loglikelihood_line_appends_one(self):
        from admixspec.fit.result import AdmixtureResult

        G = np.array([[0, 1], [0, 2]], dtype=np.int8)
        mask, counts = monomorphic_snps(G)
        fit = AdmixtureResult(np.ones((2, 1)), np.array([[0.75]]), -2.0)
        full = complete_snps(fit, mask, counts)
        assert full.log_lines[-1] == f"Loglikelihood: {full.loglik:.6f}"
        assert full.loglik == pytest.approx(-2.0 + 4 * np.log(P_MAX))


@pytest.fixture(scope="module")
def cli_runs_fixture(tmp_path_factory):
    """The example fitted three times at K = 2 by ``admixspec run --runs 3``."""
    out = tmp_path_factory.mktemp("runs") / "example"
    assert main(["run", BED, "-K", "2", "--runs", "3", "--out", str(out), "-q"]) == 0
    return out


class TestRunCommand:
    def test_writes_the_modes_and_names_them_in_the_log(self, cli_runs_fixture):
        out = cli_runs_fixture
        table = read_modes(f"{out}.2.modes.tsv")
        assert table["n_runs"].sum() == 3
        for row in table.itertuples():
            assert Path(out.parent / row.q_file).is_file()
            assert read_q(out.parent / row.q_file).shape == (60, 2)
        log = Path(f"{out}.2.log").read_text()
        assert "Modes (K=2): " in log and "Run 43: " in log and "Run 45: " in log
        record = json.loads(Path(f"{out}.2.json").read_text())
        logliks = [row["loglik"] for row in record["modes"]["runs"]]
        first_best = next(ll for ll in logliks if ll >= max(logliks) - LOGLIK_TIE)
        assert record["loglik"] == first_best

    def test_plot_modes__one_panel_per_mode(self, cli_runs_fixture, tmp_path):
        from admixspec.plot import plot_ancestry

        n_modes = len(read_modes(f"{cli_runs_fixture}.2.modes.tsv"))
        fig = plot_ancestry(str(cli_runs_fixture), modes=True)
        assert len(fig.axes) == n_modes
        assert fig.axes[0].get_ylabel().startswith("K=2\nmode 1")
        assert main(["plot", str(cli_runs_fixture), "--modes", "-o",
                     str(tmp_path / "modes.png"), "-q"]) == 0

    @pytest.mark.parametrize("subcommand", ["plot", "report"])
    def test_modes_of_a_K_not_run__one_line_data_error(self, subcommand,
                                                       cli_runs_fixture, tmp_path,
                                                       capsys):
        if subcommand == "report":
            pytest.importorskip("bokeh",
                                reason="the report needs Bokeh (admixspec[report])")
        prefix = cli_runs_fixture
        modes = ["--modes"] if subcommand == "plot" else []
        out = tmp_path / ("modes.png" if subcommand == "plot" else "modes.html")
        assert main([subcommand, str(prefix), *modes, "-K", "2", "3", "-o",
                     str(out)]) == 1
        missing = ("no Q matrix with K = 3 to plot (found K = 2 in" if modes
                   else f"no {prefix}.3.Q (found K = 2 for")
        assert capsys.readouterr().err.splitlines() == [
            f"admixspec: error: {missing} {prefix})"]
        assert not out.exists()

    def test_projection_with_runs__one_line_usage_error(self, cli_runs_fixture, tmp_path,
                                                         capsys):
        status = main(["run", BED, "-K", "2", "--runs", "2", "--project",
                       f"{cli_runs_fixture}.2.P", "--out", str(tmp_path / "x")])
        err = capsys.readouterr().err.strip().splitlines()
        assert status == 2
        assert err[-1].startswith("admixspec: error: runs > 1 (--runs)")
