import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.exceptions import InputError, UsageError
from admixspec.ml.likelihood import (
    P_MAX,
    P_MIN,
    em_step,
    loglikelihood,
    prediction_deviance,
    thread_limit,
)


def _naive_loglik(G, Q, P):
    F = Q @ P.T
    obs = G >= 0
    g = np.where(obs, G, 0).astype(float)
    return float(np.sum(np.where(obs, g * np.log(F) + (2 - g) * np.log1p(-F), 0.0)))


def _naive_em(G, Q, P):
    F = Q @ P.T
    obs = G >= 0
    g = np.where(obs, G, 0).astype(float)
    h = np.where(obs, 2 - G, 0).astype(float)
    a = g / F
    b = h / (1 - F)
    A = a.T @ Q
    B = b.T @ Q
    P_new = np.clip(P * A / (P * A + (1 - P) * B), P_MIN, P_MAX)
    Q_new = Q * (a @ P + b @ (1 - P)) / (2 * obs.sum(axis=1))[:, None]
    Q_new = np.maximum(Q_new, 1e-5)
    Q_new /= Q_new.sum(axis=1, keepdims=True)
    return Q_new, P_new


@pytest.fixture
def sim_fixture():
    sim = simulate_balding_nichols(37, 301, 3, fst=0.2, missing_rate=0.05, seed=11)
    return sim.genotypes.dosage, sim.Q, np.clip(sim.P, P_MIN, P_MAX)


class TestLoglikelihood:
    def test_loglikelihood__equals_naive_sum_with_missing(self, sim_fixture):
        G, Q, P = sim_fixture
        assert loglikelihood(G, Q, P) == pytest.approx(_naive_loglik(G, Q, P), rel=1e-12)

    def test_loglikelihood__same_for_one_and_two_threads(self, sim_fixture):
        G, Q, P = sim_fixture
        one = loglikelihood(G, Q, P, threads=1)
        two = loglikelihood(G, Q, P, threads=2)
        assert one == pytest.approx(two, rel=1e-12)

    def test_loglikelihood__missing_entries_contribute_nothing(self, sim_fixture):
        G, Q, P = sim_fixture
        G2 = G.copy()
        G2[:, :50] = -1
        expected = _naive_loglik(G[:, 50:], Q, P[50:])
        assert loglikelihood(G2, Q, P) == pytest.approx(expected, rel=1e-12)

    def test_loglikelihood__rejects_bad_dosage_and_shapes(self, sim_fixture):
        G, Q, P = sim_fixture
        with pytest.raises(InputError):
            loglikelihood(np.full((2, 2), 3, dtype=np.int8), np.ones((2, 1)),
                          np.full((2, 1), 0.5))
        with pytest.raises(UsageError):
            loglikelihood(G, Q[:-1], P)


class TestEMStep:
    def test_em_step__matches_dense_formula(self, sim_fixture):
        G, Q, P = sim_fixture
        Q1, P1, ll0 = em_step(G, Q, P)
        Qn, Pn = _naive_em(G, Q, P)
        np.testing.assert_allclose(P1, Pn, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(Q1, Qn, rtol=1e-10, atol=1e-12)
        assert ll0 == pytest.approx(_naive_loglik(G, Q, P), rel=1e-12)

    def test_em_step__never_lowers_loglikelihood(self, sim_fixture):
        G, _, _ = sim_fixture
        rng = np.random.default_rng(0)
        Q = rng.dirichlet(np.ones(3), size=G.shape[0])
        P = rng.uniform(0.05, 0.95, size=(G.shape[1], 3))
        lls = []
        for _ in range(5):
            Q, P, ll = em_step(G, Q, P)
            lls.append(ll)
        assert np.all(np.diff(lls) >= -1e-9)


class TestDeviance:
    def test_prediction_deviance__matches_dense_formula(self, sim_fixture):
        G, Q, P = sim_fixture
        mu = 2 * Q @ P.T
        obs = G >= 0
        g = G.astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(g > 0, g * np.log(g / mu), 0) + np.where(
                g < 2, (2 - g) * np.log((2 - g) / (2 - mu)), 0)
        assert prediction_deviance(G, Q, P) == pytest.approx(d[obs].mean(), rel=1e-10)


class TestThreadLimit:
    def test_thread_limit__rejects_zero(self):
        with pytest.raises(UsageError), thread_limit(0):
            pass
