import warnings

import numpy as np
import pytest

from admixspec import ConvergenceWarning, UsageError, q_error, simulate_balding_nichols
from admixspec.ml.likelihood import loglikelihood
from admixspec.ml.refine import (
    DEFAULT_STARTS,
    IterationInfo,
    fit_ml,
    format_iteration,
    format_summary,
)


@pytest.fixture(scope="module")
def sim_fixture():
    return simulate_balding_nichols(80, 3000, 3, fst=0.15, alpha=0.5, seed=21)


class TestFitML:
    def test_fit_ml__recovers_true_q(self, sim_fixture):
        res = fit_ml(sim_fixture.genotypes.dosage, 3, seed=0)
        assert res.converged
        assert q_error(sim_fixture.Q, res.Q) < 0.03
        assert res.Q.shape == (80, 3) and res.P.shape == (3000, 3)
        np.testing.assert_allclose(res.Q.sum(axis=1), 1.0)

    def test_fit_ml__reported_loglik_is_that_of_returned_parameters(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        res = fit_ml(G, 3, seed=0)
        assert res.loglik == pytest.approx(loglikelihood(G, res.Q, res.P), rel=1e-12)

    def test_fit_ml__random_and_svd_starts_reach_same_loglik(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        svd = fit_ml(G, 3, seed=0)
        rnd = [fit_ml(G, 3, init="random", seed=s).loglik for s in range(3)]
        assert abs(svd.loglik - max(rnd)) < 1e-6 * abs(max(rnd))
        assert svd.loglik >= max(rnd) - 1e-6 * abs(max(rnd))

    def test_fit_ml__loglik_above_truth(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        res = fit_ml(G, 3, seed=0)
        assert res.loglik > loglikelihood(G, sim_fixture.Q, sim_fixture.P)

    def test_fit_ml__same_seed_same_result(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        a = fit_ml(G, 3, seed=5, init="random", threads=1)
        b = fit_ml(G, 3, seed=5, init="random", threads=1)
        np.testing.assert_array_equal(a.Q, b.Q)

    def test_fit_ml__warm_start_from_truth_converges_fast(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        res = fit_ml(G, 3, Q0=sim_fixture.Q, P0=sim_fixture.P)
        assert res.converged and res.init == "given"
        assert q_error(sim_fixture.Q, res.Q) < 0.03

    def test_fit_ml__k1_is_allele_frequency(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        res = fit_ml(G, 1)
        freq = np.where(G >= 0, G, 0).sum(axis=0) / (2.0 * (G >= 0).sum(axis=0))
        np.testing.assert_allclose(res.P[:, 0], np.clip(freq, 1e-5, 1 - 1e-5))
        np.testing.assert_allclose(res.Q, 1.0)

    def test_fit_ml__max_iter_warns(self, sim_fixture):
        with pytest.warns(ConvergenceWarning):
            res = fit_ml(sim_fixture.genotypes.dosage, 3, init="random", seed=0,
                         max_iter=2)
        assert not res.converged and res.n_iter == 2

    def test_fit_ml__limit_reached_in_mini_batch_phase_reports_true_loglik(
        self, sim_fixture
    ):
        G = sim_fixture.genotypes.dosage
        with pytest.warns(ConvergenceWarning):
            res = fit_ml(G, 3, init="random", seed=0, max_iter=1, batches=4)
        assert res.history[0].stage == "EM-batch"
        assert res.loglik == pytest.approx(loglikelihood(G, res.Q, res.P), rel=1e-12)

    def test_fit_ml__block_relaxation_matches_em_optimum_in_fewer_passes(
            self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        newton = fit_ml(G, 3, seed=0, accel="newton")
        em = fit_ml(G, 3, seed=0, accel="squarem")
        assert newton.converged and em.converged
        assert newton.loglik == pytest.approx(em.loglik, rel=1e-7)
        assert newton.n_passes < em.n_passes / 2

    def test_fit_ml__block_relaxation_never_lowers_loglik(self, sim_fixture):
        res = fit_ml(sim_fixture.genotypes.dosage, 3, init="random", seed=3)
        assert all(h.delta >= 0 for h in res.history[1:])
        assert {h.stage for h in res.history} <= {"QN", "EM"}

    def test_fit_ml__callback_gets_every_iteration(self, sim_fixture):
        seen = []
        res = fit_ml(sim_fixture.genotypes.dosage, 3, seed=0, callback=seen.append)
        assert len(seen) == res.n_iter == len(res.history)
        assert all(isinstance(i, IterationInfo) for i in seen)
        assert seen[-1].loglik == pytest.approx(res.loglik)

    def test_fit_ml__every_start_s_passes_and_iterations_are_counted(self, sim_fixture):
        res = fit_ml(sim_fixture.genotypes.dosage, 3, init="random", seed=2, starts=3,
                     screen_iter=4)
        starts = [h.start for h in res.history]
        # the screen: each start in turn, 4 iterations each (none converges that fast)
        assert starts[:12] == [0, 1, 2] * 4
        assert set(starts[12:]) <= {starts[-1]}
        # one pass to start each chain, two per iteration, one more per EM
        # fallback, and the ridge searches' own
        n_em = sum(h.stage == "EM" for h in res.history)
        n_ridge = sum(h.ridge_passes for h in res.history)
        assert res.n_passes == 3 + 2 * res.n_iter + n_em + n_ridge

    def test_fit_ml__screen_continues_the_best_start(self, sim_fixture):
        res = fit_ml(sim_fixture.genotypes.dosage, 3, init="random", seed=2, starts=3,
                     screen_iter=4)
        screened = {h.start: h.loglik for h in res.history[:12]}
        assert res.history[-1].start == max(screened, key=screened.get)
        assert res.loglik >= max(screened.values())

    def test_fit_ml__one_start_unless_none_is_given(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        mine = fit_ml(G, 3, init="random", seed=2)
        given = fit_ml(G, 3, Q0=mine.Q, P0=mine.P)
        assert {h.start for h in mine.history} == set(range(DEFAULT_STARTS))
        assert {h.start for h in given.history} == {0}

    def test_fit_ml__one_start_is_the_init_start_alone(self, sim_fixture):
        from admixspec.ml.start import subspace_starts

        G = sim_fixture.genotypes.dosage
        ((Q0, P0),) = subspace_starts(G, 3, 1, seed=4)
        a = fit_ml(G, 3, seed=4, starts=1)
        b = fit_ml(G, 3, Q0=Q0, P0=P0)
        np.testing.assert_array_equal(a.Q, b.Q)
        assert a.n_passes == b.n_passes

    def test_fit_ml__bad_parameters_raise(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        with pytest.raises(UsageError):
            fit_ml(G, 0)
        with pytest.raises(UsageError):
            fit_ml(G, 2, init="nonsense")
        with pytest.raises(UsageError, match="accel"):
            fit_ml(G, 2, accel="anderson")
        with pytest.raises(UsageError, match="starts"):
            fit_ml(G, 2, starts=0)
        with pytest.raises(UsageError, match="starts"):
            fit_ml(G, 2, starts=2, accel="squarem")
        with pytest.raises(UsageError):
            fit_ml(G, 2, Q0=np.ones((3, 2)) / 2, P0=np.full((3000, 2), 0.5))


class TestFormatting:
    def test_format_iteration__admixture_layout(self):
        line = format_iteration(IterationInfo(12, "EM", 1.5, -3799887.17, 0.0018, 1))
        assert line == ("12 (EM) \tElapsed: 1.500\tLoglikelihood: -3.79989e+06"
                        "\t(delta): 0.0018")
        line = format_iteration(IterationInfo(3, "QN", 1.5, -3799887.17, 0.0018, 1))
        assert line.startswith("3 (QN/Block) \tElapsed: 1.500")
        line = format_iteration(IterationInfo(4, "QN", 1.5, -3799887.17, 0.0018, 1, 2))
        assert line.startswith("4 (QN/Block, start 2) \tElapsed: 1.500")

    def test_format_summary__ends_with_loglikelihood_line(self, sim_fixture):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = fit_ml(sim_fixture.genotypes.dosage, 2, seed=0, max_iter=3)
        assert format_summary(res).splitlines()[-1] == f"Loglikelihood: {res.loglik:.6f}"
