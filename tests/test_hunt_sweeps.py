"""Cross-validation folds, several runs and their modes: defects found by hand."""

import numpy as np
import pytest

from admixspec import UsageError, fit_admixture, simulate_balding_nichols
from admixspec.cli import main
from admixspec.fit.modes import LOGLIK_TIE, find_modes
from admixspec.ml.crossval import cross_validate


def _tiny():
    """10 individuals x 3 SNPs: 30 observed entries, too few for 25 folds."""
    return simulate_balding_nichols(10, 3, 2, fst=0.3, seed=3).genotypes.dosage


class TestEmptyFolds:
    def test_cross_validate__an_empty_fold_is_a_usage_error_not_a_null_error(self):
        G = _tiny()

        def fit(Gm, K, seed):
            return np.full((G.shape[0], K), 1 / K), np.full((G.shape[1], K), 0.5)

        with pytest.raises(UsageError, match=r"fold \d+ of 25 holds none of the 30 "
                           r"observed genotype entries.*use fewer folds"):
            cross_validate(G, 2, folds=25, seed=1, fit=fit)

    def test_cross_validate__every_fold_error_is_a_number_when_folds_are_few(self):
        result = cross_validate(_tiny(), 2, folds=2, seed=1)
        assert np.isfinite(result.fold_errors).all() and np.isfinite(result.error)

    def test_run_cv__an_empty_fold_exits_2_with_one_line_and_writes_nothing(
            self, tmp_path, capsys):
        prefix = str(tmp_path / "tiny")
        assert main(["simulate", "--model", "balding-nichols", "-K", "2", "-m", "10",
                     "--n-snps", "3", "--seed", "3", "--out", prefix, "-q"]) == 0
        capsys.readouterr()
        out = str(tmp_path / "cv")
        assert main(["run", prefix + ".bed", "-K", "2", "--cv", "25", "--out", out,
                     "-q"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "holds none of the 30 observed" in err[0]
        assert not list(tmp_path.glob("cv.*"))


def _three_runs():
    Q = simulate_balding_nichols(40, 10, 2, seed=2).Q
    other = np.roll(Q, 7, axis=0)  # a different solution
    return Q, other


class TestLoglikelihoodTies:
    def test_find_modes__loglikelihoods_within_the_tie_go_to_the_earliest_run(self):
        Q, _ = _three_runs()
        modes = find_modes([Q, Q[:, ::-1], Q], logliks=[-10.0, -10.0 + 0.5 * LOGLIK_TIE,
                                                          -10.0 + 0.9 * LOGLIK_TIE])
        assert modes.reference == 0 and modes.modes[0].representative == 0

    def test_find_modes__a_gain_beyond_the_tie_is_kept(self):
        Q, _ = _three_runs()
        modes = find_modes([Q, Q[:, ::-1]], logliks=[-10.0, -10.0 + 2 * LOGLIK_TIE])
        assert modes.reference == 1

    def test_find_modes__the_kept_run_represents_its_mode(self):
        # run 1 is kept (earliest within the tie of run 2, in another mode);
        # run 0, of run 1's mode, ties run 1 but not run 2
        Q, other = _three_runs()
        modes = find_modes([Q, Q, other],
                           logliks=[-1.2 * LOGLIK_TIE, -0.5 * LOGLIK_TIE, 0.0])
        assert modes.reference == 1
        mode = modes.modes[modes.labels[1] - 1]
        assert mode.representative == 1
        row = modes.table().set_index("mode").loc[mode.mode]
        assert row["best"] and row["representative"] == "2"

    def test_fit_admixture_runs__keeps_the_earliest_of_tied_random_starts(self):
        # six random starts end on one maximum, log-likelihoods within 1e-5;
        # the highest by a hair is a later run than the earliest tied one
        sim = simulate_balding_nichols(30, 400, 2, fst=0.3, seed=3)
        result = fit_admixture(sim.genotypes, 2, init="random", runs=6, seed=10,
                               threads=1)
        ll = np.array([row["loglik"] for row in result.diagnostics["runs"]])
        tied = np.flatnonzero(ll >= ll.max() - LOGLIK_TIE)
        assert int(np.argmax(ll)) != tied[0]  # a near tie, not an exact one
        assert result.modes.reference == tied[0]
        assert result.loglik == ll[tied[0]]


class TestRunsLog:
    @pytest.mark.parametrize(("init", "start"), [
        ("random", "maximum likelihood from a random start"),
        ("svd", "maximum likelihood from the SVD start"),
    ])
    def test_runs_line__names_the_first_runs_own_start(self, init, start):
        sim = simulate_balding_nichols(30, 400, 2, fst=0.3, seed=3)
        result = fit_admixture(sim.genotypes, 2, init=init, runs=2, seed=10, threads=1)
        line = next(line for line in result.log_lines if line.startswith("Runs: "))
        assert f"run 10 {start}, seed 11" in line and "default path" not in line
        assert result.diagnostics["runs"][0]["start"] == start

    def test_runs_line__unseeded_runs_are_named_runs_not_seeds(self):
        sim = simulate_balding_nichols(30, 400, 2, fst=0.3, seed=3)
        result = fit_admixture(sim.genotypes, 2, init="svd", runs=3, threads=1)
        line = next(line for line in result.log_lines if line.startswith("Runs: "))
        assert "run 1 maximum likelihood from the SVD start, runs 2-3 maximum" in line
        assert "seed" not in line


class TestModesTable:
    def test_modes_tsv__keeps_the_loglikelihoods_six_decimals(self, tmp_path):
        from admixspec.io.modes import read_modes, write_modes

        Q, other = _three_runs()
        modes = find_modes([Q, other], logliks=[-123456789.123456, -123456789.523456])
        prefix = tmp_path / "r"
        write_modes(prefix, 2, modes)
        table = read_modes(f"{prefix}.2.modes.tsv")
        # at 10 significant digits they were written -123456789.1 and -123456789.5
        assert table["best_loglik"].tolist() == pytest.approx(
            [-123456789.123456, -123456789.523456], abs=1e-6)
        text = (tmp_path / "r.2.modes.tsv").read_text()
        assert "\t-123456789.123456\t" in text

    def test_modes_tsv__unknown_loglikelihoods_are_na(self, tmp_path):
        from admixspec.io.modes import read_modes, write_modes

        Q, other = _three_runs()
        write_modes(tmp_path / "r", 2, find_modes([Q, other]))
        table = read_modes(tmp_path / "r.2.modes.tsv")
        assert table["best_loglik"].isna().all() and table["mean_loglik"].isna().all()
        assert "\tNA\tNA\t" in (tmp_path / "r.2.modes.tsv").read_text()


class TestBootstrapBlocks:
    def test_bootstrap__a_single_block_is_a_usage_error_not_a_zero_standard_error(self):
        from admixspec.ml.bootstrap import bootstrap

        sim = simulate_balding_nichols(20, 200, 2, fst=0.2, seed=1)
        calls = []

        def fit(G, K, seed, snps):
            calls.append(seed)
            return sim.Q, sim.P[snps]

        with pytest.raises(UsageError, match="leaves one block of the 200 SNPs"):
            bootstrap(sim.genotypes.dosage, 2, Q_ref=sim.Q, P_ref=sim.P, block_size=200,
                      n_replicates=3, seed=1, fit=fit)
        assert calls == []

    def test_bootstrap__two_blocks_resample(self):
        from admixspec.ml.bootstrap import bootstrap

        sim = simulate_balding_nichols(20, 200, 2, fst=0.2, seed=1)
        result = bootstrap(sim.genotypes.dosage, 2, block_size=100, n_replicates=4,
                           seed=1)
        assert result.Q_se.shape == (20, 2) and np.isfinite(result.Q_se).all()
