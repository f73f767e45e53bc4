"""Projection corrected for the sampling noise of the reference's P (ml.debias)."""

import numpy as np
import pytest

from admixspec import (
    fit_admixture,
    fit_ml,
    loglikelihood,
    project,
    simulate_balding_nichols,
)
from admixspec.core.exceptions import UsageError
from admixspec.core.metrics import match_components
from admixspec.ml.debias import (
    corrected_loglikelihood,
    debiased_project,
    effective_sizes,
    p_covariance,
    p_covariance_from_sizes,
)


def _naive_corrected(G, Q, P, V):
    """l*(q) entry by entry, with Python loops (tiny sizes only)."""
    out = np.zeros(len(Q))
    for i in range(G.shape[0]):
        for j in range(G.shape[1]):
            if G[i, j] < 0:
                continue
            f = float(Q[i] @ P[j])
            g = G[i, j]
            out[i] += g * np.log(f) + (2 - g) * np.log(1 - f)
            out[i] += float(Q[i] @ V[j] @ Q[i]) / (f * (1 - f))
    return out


@pytest.fixture(scope="module")
def small_reference_fixture():
    """A reference of 40 individuals fitted by ML, and 300 others to project."""
    sim = simulate_balding_nichols(340, 4000, 3, fst=0.05, alpha=0.5, seed=11)
    G = sim.genotypes.dosage
    ref = fit_ml(G[:40], 3, seed=2)
    perm = match_components(sim.Q[:40], ref.Q)
    Q_ref, P = ref.Q[:, perm], ref.P[:, perm]
    plain = project(G[40:], P)
    V = p_covariance(G[:40], Q_ref, P)
    return sim, G, Q_ref, P, plain, V


class TestCovariance:
    def test_one_component__binomial_variance(self):
        rng = np.random.default_rng(0)
        G = rng.integers(0, 3, size=(50, 8)).astype(np.int8)
        p = G.sum(0) / 100
        V = p_covariance(G, np.ones((50, 1)), p[:, None])
        np.testing.assert_allclose(V[:, 0, 0], p * (1 - p) / 100, rtol=1e-6)

    def test_missing_calls__carry_no_information(self):
        G = np.array([[0, 2], [1, -1], [2, -1], [1, 1]], dtype=np.int8)
        V = p_covariance(G, np.ones((4, 1)), np.array([[0.5], [0.5]]))
        assert V[1, 0, 0] == pytest.approx(2 * V[0, 0, 0])
        # no genotypes: every call counted
        V_all = p_covariance(None, np.ones((4, 1)), np.array([[0.5], [0.5]]))
        np.testing.assert_allclose(V_all[:, 0, 0], [V[0, 0, 0]] * 2)

    def test_sizes_and_effective_sizes__invert_each_other(self):
        P = np.array([[0.3, 0.6], [0.1, 0.9], [0.5, 0.2]])
        V = p_covariance_from_sizes(P, [20.0, 80.0])
        np.testing.assert_allclose(effective_sizes(P, V), [20.0, 80.0])
        assert V[0, 0, 1] == 0.0


class TestCorrectedLoglikelihood:
    def test_matches_the_naive_sum(self):
        rng = np.random.default_rng(3)
        G = rng.integers(-1, 3, size=(4, 6)).astype(np.int8)
        Q = rng.dirichlet(np.ones(3), size=4)
        P = rng.uniform(0.05, 0.95, size=(6, 3))
        A = rng.normal(size=(6, 3, 3)) * 0.01
        V = A @ A.transpose(0, 2, 1)
        np.testing.assert_allclose(corrected_loglikelihood(G, Q, P, V),
                                   _naive_corrected(G, Q, P, V), rtol=1e-12)

    def test_no_noise__is_the_loglikelihood(self):
        rng = np.random.default_rng(4)
        G = rng.integers(0, 3, size=(3, 5)).astype(np.int8)
        Q = rng.dirichlet(np.ones(2), size=3)
        P = rng.uniform(0.1, 0.9, size=(5, 2))
        total = corrected_loglikelihood(G, Q, P, np.zeros((5, 2, 2))).sum()
        assert total == pytest.approx(loglikelihood(G, Q, P), rel=1e-12)


class TestDebiasedProject:
    def test_no_noise__the_plain_projection(self, small_reference_fixture):
        _, G, _, P, plain, _ = small_reference_fixture
        same = debiased_project(G[40:], P, np.zeros((P.shape[0], 3, 3)), plain)
        np.testing.assert_allclose(same, plain, atol=2e-3)

    def test_raises_the_corrected_loglikelihood_of_everyone(
            self, small_reference_fixture):
        _, G, _, P, plain, V = small_reference_fixture
        fixed = debiased_project(G[40:], P, V, plain)
        before = corrected_loglikelihood(G[40:], plain, P, V)
        after = corrected_loglikelihood(G[40:], fixed, P, V)
        assert np.all(after >= before - 1e-9) and np.mean(after > before + 1e-6) > 0.9
        np.testing.assert_allclose(fixed.sum(axis=1), 1.0)
        assert fixed.min() > 0

    def test_closer_to_truth_than_plain_projection(self, small_reference_fixture):
        sim, G, _, P, plain, V = small_reference_fixture
        truth = sim.Q[40:]
        fixed = debiased_project(G[40:], P, V, plain)

        def slope(Q):
            x, y = truth - 1 / 3, Q - 1 / 3
            return (x * y).sum() / (x * x).sum()

        def rmse(Q):
            return np.sqrt(((Q - truth) ** 2).mean())

        # plain projection on 40 reference individuals (about 13 per component) is
        # strongly shrunk: measured slope 0.31; corrected 0.59, the first-order bias
        # removed, a higher-order part left at this size
        # (benchmarks/projection_shrinkage.py)
        assert slope(plain) < 0.5
        assert abs(1 - slope(fixed)) < 0.7 * abs(1 - slope(plain))
        assert rmse(fixed) < 0.8 * rmse(plain)


class TestFitAdmixtureProjection:
    def test_reference_q__corrects_unless_asked_not_to(self, small_reference_fixture):
        _, G, Q_ref, P, plain, V = small_reference_fixture
        corrected = fit_admixture(G[40:], 3, P=P, reference_q=Q_ref)
        expected = debiased_project(G[40:], P, p_covariance(None, Q_ref, P), plain)
        np.testing.assert_allclose(corrected.Q, expected, atol=1e-6)
        assert corrected.diagnostics["projection_correction"]["reference_size"] == 40
        assert any(line.startswith("Projection: corrected") for line in
                   corrected.log_lines)
        off = fit_admixture(G[40:], 3, P=P, reference_q=Q_ref,
                            projection_correction=False)
        np.testing.assert_allclose(off.Q, plain, atol=1e-6)

    def test_reference_q_without_projection__usage_error(self, small_reference_fixture):
        _, G, Q_ref, _, _, _ = small_reference_fixture
        with pytest.raises(UsageError, match="used only by projection"):
            fit_admixture(G[:40], 3, reference_q=Q_ref)

    def test_monomorphic_reference_snps__not_corrected(self, small_reference_fixture):
        # SNPs monomorphic in the reference (P at its bounds, as a run writes them)
        # must not change the corrected projection: the target's genotypes there are
        # all 0, which plain projection ignores to first order
        _, G, _, P, plain, V = small_reference_fixture
        without = debiased_project(G[40:], P, V, plain, tol=1e-10)
        P_mono = np.vstack([P, np.full((200, 3), 1e-5)])
        V_added = p_covariance(np.zeros((40, 200), np.int8), np.full((40, 3), 1 / 3),
                               P_mono[-200:])
        V_mono = np.concatenate([V, V_added])
        G_mono = np.hstack([G[40:], np.zeros((300, 200), np.int8)])
        with_mono = debiased_project(G_mono, P_mono, V_mono, plain, tol=1e-10)
        np.testing.assert_allclose(with_mono, without, atol=1e-3)
