import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.core.parameters import P_MAX, P_MIN, Q_MIN
from admixspec.ml._kernels.newton import _RIDGE, constrained_newton_step
from admixspec.ml.initial import random_init
from admixspec.ml.likelihood import Engine, loglikelihood
from admixspec.ml.newton import BlockNewton


def _solve(x, g, C, lo, hi, simplex):
    K = len(x)
    out = np.empty(K)
    constrained_newton_step(x, g, C, np.full(K, lo), np.full(K, hi), simplex,
                            np.empty((2, K), np.int64), np.empty(K),
                            np.empty((K + 3, K)), out)
    return out


def _random_problem(rng, K):
    A = rng.normal(size=(K, 3 * K))
    return A @ A.T + 0.1 * np.eye(K), rng.normal(scale=5.0, size=K)


def _kkt_residual(x, g, C, y, lo, hi, simplex):
    """Largest violation of the KKT conditions of max g.d - d'Cd/2 at d = y - x."""
    r = g - C @ (y - x)
    at_lo = y <= lo + 1e-12
    at_hi = (y >= hi - 1e-12) if not simplex else np.zeros_like(at_lo)
    free = ~(at_lo | at_hi)
    nu = r[free].mean() if simplex and free.any() else 0.0
    r = r - nu
    return max(np.abs(r[free]).max(initial=0.0), r[at_lo].max(initial=0.0),
               (-r[at_hi]).max(initial=0.0))


def _kkt_bound(C, x, y):
    """What the solver's ridge allows: it solves (C + rho I) d = g on the free set,
    rho = _RIDGE trace(C) / K, which leaves r = g - C d = rho d there (shifted by the
    simplex's multiplier: up to 2 rho |d|). Measured: at most 2.09 rho max|d| over
    6,000 box and 6,000 simplex problems (K = 2, 3, 4, 5, 7, 10; 20 seeds x 50
    each; at most 2.6e-8 absolute), so 4 rho max|d|, plus 1e-11 for rounding."""
    rho = _RIDGE * np.trace(C) / len(x)
    return 4 * rho * np.abs(y - x).max() + 1e-11


class TestConstrainedNewtonStep:
    @pytest.mark.parametrize("K", [2, 4, 7])
    def test_box_step__satisfies_kkt(self, K):
        rng = np.random.default_rng(K)
        for _ in range(50):
            C, g = _random_problem(rng, K)
            x = rng.uniform(0.0, 1.0, K)
            y = _solve(x, g, C, 0.0, 1.0, False)
            assert np.all((y >= 0.0) & (y <= 1.0))
            assert _kkt_residual(x, g, C, y, 0.0, 1.0, False) < _kkt_bound(C, x, y)

    @pytest.mark.parametrize("K", [2, 4, 7])
    def test_simplex_step__satisfies_kkt(self, K):
        rng = np.random.default_rng(10 + K)
        for _ in range(50):
            C, g = _random_problem(rng, K)
            x = rng.dirichlet(np.ones(K))
            y = _solve(x, g, C, 0.0, 1.0, True)
            assert y.sum() == pytest.approx(1.0) and y.min() >= 0.0
            assert _kkt_residual(x, g, C, y, 0.0, 1.0, True) < _kkt_bound(C, x, y)

    def test_unconstrained_optimum_inside__is_the_newton_step(self):
        C = np.array([[2.0, 0.5], [0.5, 1.0]])
        g = np.array([0.1, -0.05])
        x = np.array([0.5, 0.5])
        np.testing.assert_allclose(_solve(x, g, C, 0.0, 1.0, False),
                                   x + np.linalg.solve(C, g))


@pytest.fixture(scope="module")
def sim_fixture():
    return simulate_balding_nichols(60, 2000, 3, fst=0.15, alpha=0.5, seed=3)


class TestBlockNewton:
    def test_step__reports_input_loglik_and_stays_in_box(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        Q, P = random_init(*G.shape, 3, seed=0)
        Q1, P1, ll = BlockNewton(Engine(G, 3)).step(Q, P)
        assert ll == pytest.approx(loglikelihood(G, Q, P), rel=1e-10)
        assert P1.min() >= P_MIN and P1.max() <= P_MAX
        assert Q1.min() >= Q_MIN * 0.99
        np.testing.assert_allclose(Q1.sum(axis=1), 1.0)

    def test_step__climbs_faster_than_em(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        engine = Engine(G, 3)
        newton = BlockNewton(engine)
        Q, P = random_init(*G.shape, 3, seed=1)
        Qn, Pn, Qe, Pe = Q, P, Q, P
        for _ in range(10):
            Qn, Pn, _ = newton.step(Qn, Pn)
            Qe, Pe, _ = engine.em(Qe, Pe)
        assert loglikelihood(G, Qn, Pn) > loglikelihood(G, Qe, Pe)

    def test_step__q_half_uses_the_p_rows_kept_after_em_fallbacks(self, sim_fixture):
        # the kernel takes the Q statistics in the sweep that measures each Newton
        # row and moves those of the rows that fall back to EM: the map must still
        # be its definition, a Q step at the P it returns
        G = sim_fixture.genotypes.dosage.copy()
        G[np.random.default_rng(3).random(G.shape) < 0.05] = -1  # missing calls
        newton = BlockNewton(Engine(G, 3))
        Q, P, _ = newton.step(*random_init(*G.shape, 3, seed=0))
        Q1, P1, _ = newton.step(Q, P)  # the second map has rows that fall back
        assert newton.em_rows > 0
        Q_at_p1, _, _ = BlockNewton(Engine(G, 3)).step(Q, P1, update_p=False)
        np.testing.assert_allclose(Q1, Q_at_p1, rtol=1e-12, atol=1e-14)

    def test_step__frozen_rows_and_fixed_p_are_kept(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        Q, P = random_init(*G.shape, 3, seed=2)
        Q1, P1, _ = BlockNewton(Engine(G, 3), frozen_rows=np.arange(5)).step(
            Q, P, update_p=False)
        assert P1 is P
        np.testing.assert_array_equal(Q1[:5], Q[:5])
        assert not np.allclose(Q1[5:], Q[5:])

    def test_q_only_steps__reach_the_projection_optimum(self, sim_fixture):
        # with P fixed each row's problem is concave: Newton converges to the
        # point where the projected gradient vanishes
        G = sim_fixture.genotypes.dosage
        P = sim_fixture.P
        newton = BlockNewton(Engine(G, 3))
        Q = np.full((G.shape[0], 3), 1 / 3)
        for _ in range(30):
            Q, _, _ = newton.step(Q, P, update_p=False)
        lls = [loglikelihood(G, Q, P)]
        rng = np.random.default_rng(0)
        for _ in range(5):
            Qp = np.abs(Q + rng.normal(scale=1e-3, size=Q.shape))
            lls.append(loglikelihood(G, Qp / Qp.sum(axis=1, keepdims=True), P))
        assert lls[0] >= max(lls[1:])
