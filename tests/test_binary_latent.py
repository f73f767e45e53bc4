"""Tests of admixspec.spectral.binary_latent.

Algorithms 1-2 of the seed paper and baselines.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from admixspec.core.exceptions import UsageError
from admixspec.spectral.binary_latent import (
    estimate_rank_and_noise,
    fit_als,
    fit_binary_latent,
    fit_oracle,
    polish_candidates,
    simulate_binary_latent,
    w_error,
    wls_step,
)


def _rigid_data(d=5, m=12, n_random=300, seed=0):
    """sigma = 0 data whose H holds every e_i and e_i + e_j (rigid: paper eq. rigid)."""
    rng = np.random.default_rng(seed)
    eye = np.eye(d)
    rows = [eye[i] for i in range(d)]
    rows += [eye[i] + eye[j] for i, j in itertools.combinations(range(d), 2)]
    H = np.vstack(rows + [(rng.random((n_random, d)) < 0.4).astype(float)])
    W = rng.standard_normal((d, m))
    return H @ W, H, W


def _correlated_data(n, seed, sigma=0.4, d=6, m=30):
    """h = rounding of N(a, R): means a ~ U(0.3, 0.6), R = 0.25 (0.6 I + 0.4 11^T)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.3, 0.6, d)
    R = 0.25 * (0.6 * np.eye(d) + 0.4 * np.ones((d, d)))
    return simulate_binary_latent(n, d=d, m=m, sigma=sigma, a=a, R=R, seed=rng)


class TestAlgorithm1:
    def test_sigma0_rigid__recovers_w_exactly(self):
        X, H, W = _rigid_data()
        fit = fit_binary_latent(X, sigma=0.0, seed=0)
        assert fit.d == 5
        assert fit.info["n_binary"] == 5
        assert w_error(W, fit.W) * W.size < 1e-20

    def test_sigma0_estimated__recovers_w_exactly(self):
        X, H, W = _rigid_data(d=4, m=9, seed=1)
        fit = fit_binary_latent(X, seed=0)
        assert (fit.d, fit.sigma) == (4, 0.0)
        assert w_error(W, fit.W) * W.size < 1e-20


class TestAlgorithm2:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_correlated_h__selects_true_candidates_near_oracle(self, seed):
        # d = 6, m = 30, sigma = 0.4, n = 1e5 (the setting). The criterion held
        # in 20/20 realisations with the default, 6/20 without polishing and 3/20 for
        # the paper's algorithm: `benchmarks/paper_simulation.py --study candidates`
        data = _correlated_data(100_000, seed=seed)
        fit = fit_binary_latent(data.X, 6, 0.4, seed=0)
        V_true = np.linalg.pinv(data.W)  # (m, d)
        dist = np.linalg.norm(fit.candidates[:, None, :] - V_true.T[None], axis=2)
        nearest = dist.argmin(axis=0)
        assert dist.min(axis=0).max() < 0.05  # every true candidate is present
        assert sorted(nearest.tolist()) == sorted(fit.selected.tolist())  # and chosen
        oracle = w_error(data.W, fit_oracle(data.X, data.H))
        # measured 1.37, 1.63, 1.52 x the oracle for seeds 0-2 (1.16-1.69 for
        # seeds 0-9): 3x leaves 1.8x headroom over the worst
        assert w_error(data.W, fit.W) < 3 * oracle

    def test_polish__brings_error_near_oracle(self):
        # the paper's Algorithm 2 is consistent but ~8x the oracle at n = 1e5; polished
        # candidates are M-estimates of the true ones (1.1-2x the oracle measured)
        data = _correlated_data(100_000, seed=3)
        oracle = w_error(data.W, fit_oracle(data.X, data.H))
        paper = fit_binary_latent(data.X, 6, 0.4, near_pairs=False, polish=False,
                                  binary_test=None, seed=0)
        fit = fit_binary_latent(data.X, 6, 0.4, seed=0)
        assert fit.info["n_polished"] >= 6
        assert w_error(data.W, fit.W) < 3 * oracle < w_error(data.W, paper.W)

    def test_binary_z__separates_true_from_spurious_candidates(self):
        # a true candidate's projection is a noisy binary variable (z ~ N(0, 1)); a
        # spurious one (far from every column of W^+) is not
        data = simulate_binary_latent(100_000, d=5, m=15, sigma=0.6, seed=21)
        fit = fit_binary_latent(data.X, 5, 0.6, seed=0)
        V_true = np.linalg.pinv(data.W).T
        dist = np.linalg.norm(fit.candidates[:, None] - V_true[None], axis=2).min(axis=1)
        assert np.all(np.abs(fit.binary_z[dist < 0.05]) < 4)
        assert np.sum(dist < 0.05) >= 5
        assert np.all(fit.binary_z[dist > 0.2] > 4)

    def test_missing_true_candidate__found_from_random_starts(self):
        # n = 1e4, sigma = 0.8: one true candidate leaves no (near-)eigenpair; only 5
        # candidates pass the binary test, so random starts are polished too
        rng = np.random.default_rng([7, 2, 6])
        data = simulate_binary_latent(10_000, d=6, m=30, sigma=0.8,
                                      a=rng.uniform(0.2, 0.5, 6), R=0.25 * np.eye(6),
                                      seed=rng)
        oracle = w_error(data.W, fit_oracle(data.X, data.H))
        off = fit_binary_latent(data.X, 6, 0.8, random_starts=0, seed=2)
        fit = fit_binary_latent(data.X, 6, 0.8, seed=2)
        assert fit.info["n_random_start"] >= 1
        # measured 3.69x the oracle here (3.64x and 5.12x for the next two rng
        # seeds, [7, 2, 7] and [7, 2, 8]): 6x; without random starts 1654x
        assert w_error(data.W, fit.W) < 6 * oracle
        assert w_error(data.W, off.W) > 100 * oracle

    def test_error_falls_with_n(self):
        errs = []
        for n in (3_000, 30_000):
            data = simulate_binary_latent(n, d=3, m=10, sigma=0.3, seed=5)
            errs.append(w_error(data.W, fit_binary_latent(data.X, 3, 0.3, seed=0).W))
        assert errs[1] < errs[0] / 3

    def test_split_half__also_recovers(self):
        data = simulate_binary_latent(40_000, d=3, m=10, sigma=0.2, seed=13)
        fit = fit_binary_latent(data.X, 3, 0.2, seed=0, split="half")
        assert w_error(data.W, fit.W) < 1e-3

    def test_round_score__recovers_at_low_noise(self):
        # the paper: eq. score_round "works extremely well for small sigma"
        data = simulate_binary_latent(40_000, d=3, m=10, sigma=0.05, seed=13)
        fit = fit_binary_latent(data.X, 3, 0.05, seed=0, score="round")
        assert w_error(data.W, fit.W) < 1e-4

    def test_estimated_d_and_sigma(self):
        data = simulate_binary_latent(50_000, d=4, m=16, sigma=0.3, seed=7)
        d, s = estimate_rank_and_noise(data.X)
        assert d == 4
        assert abs(s - 0.3) < 0.01
        fit = fit_binary_latent(data.X, seed=0)
        assert fit.estimated == {"d": True, "sigma": True}
        assert w_error(data.W, fit.W) < 1e-3

    def test_seed__same_output(self):
        data = simulate_binary_latent(5_000, d=3, m=8, sigma=0.3, seed=8)
        a = fit_binary_latent(data.X, 3, 0.3, seed=1, split="half")
        b = fit_binary_latent(data.X, 3, 0.3, seed=1, split="half")
        np.testing.assert_array_equal(a.W, b.W)

    def test_bad_options__raise_usage_error(self):
        X = np.random.default_rng(0).standard_normal((50, 4))
        with pytest.raises(UsageError):
            fit_binary_latent(X, 2, 0.1, score="bogus")
        with pytest.raises(UsageError):
            fit_binary_latent(X, 2, -1.0)


class TestBaselines:
    def test_oracle__exact_without_noise(self):
        data = simulate_binary_latent(500, d=3, m=7, sigma=0.0, seed=9)
        assert w_error(data.W, fit_oracle(data.X, data.H)) < 1e-25

    def test_wls__improves_perturbed_estimate(self):
        data = simulate_binary_latent(20_000, d=4, m=12, sigma=0.3, seed=10)
        W0 = data.W + 0.03 * np.random.default_rng(0).standard_normal(data.W.shape)
        assert w_error(data.W, wls_step(data.X, W0, 0.3)) < 0.5 * w_error(data.W, W0)

    def test_als__low_noise_reaches_oracle_accuracy(self):
        data = simulate_binary_latent(20_000, d=3, m=10, sigma=0.1, seed=11)
        W, H, it = fit_als(data.X, 3, seed=0)
        oracle = w_error(data.W, fit_oracle(data.X, data.H))
        assert w_error(data.W, W) < 3 * oracle
        assert H.shape == (20_000, 3)
        assert set(np.unique(H).tolist()) <= {0.0, 1.0}


class TestPolishCandidates:
    def test_perturbed_true_candidates__return_to_truth(self):
        data = simulate_binary_latent(50_000, d=4, m=12, sigma=0.3, seed=11)
        V = np.linalg.pinv(data.W).T  # true candidates as rows
        basis = np.linalg.pinv(data.W)  # columns span the signal subspace
        start = V + 0.05 * np.random.default_rng(0).standard_normal(V.shape)
        polished, moved = polish_candidates(data.X, basis, start, 0.3, seed=0)
        assert moved.all()
        before = np.linalg.norm(start - V, axis=1)
        after = np.linalg.norm(polished - V, axis=1)
        assert (after < before / 5).all()

    def test_far_start__left_unchanged(self):
        # a start with no true candidate nearby either converges to some other zero of
        # the binary residual or is returned as given, never moved further than allowed
        data = simulate_binary_latent(20_000, d=3, m=8, sigma=0.3, seed=12)
        basis = np.linalg.pinv(data.W)
        start = np.random.default_rng(1).standard_normal((20, 8))
        polished, moved = polish_candidates(data.X, basis, start, 0.3, max_move=0.5)
        move = np.linalg.norm(polished - start, axis=1) / np.linalg.norm(start, axis=1)
        assert np.all(move[moved] <= 0.5)
        assert np.array_equal(polished[~moved], start[~moved])

    def test_needs_positive_sigma(self):
        data = simulate_binary_latent(100, d=2, m=4, sigma=0.1, seed=0)
        with pytest.raises(UsageError):
            polish_candidates(data.X, np.linalg.pinv(data.W), np.zeros((1, 4)), 0.0)


class TestLikelihoodSubset:
    def test_spurious_candidate_ranked_first__swapped_out(self):
        # more candidates than d pass the binary test; the KS order put a wrong one
        # (a perturbed copy of a true candidate) among the first d
        from admixspec.spectral.binary_latent import _likelihood_subset

        data = simulate_binary_latent(20_000, d=4, m=12, sigma=0.5, seed=31)
        V = np.linalg.pinv(data.W).T  # true candidates (rows)
        wrong = V[3] + 0.3 * V[2]
        cand = np.vstack([V, wrong])
        pool = np.array([0, 1, 2, 4, 3])  # the wrong one fourth, the true one fifth
        chosen, swaps = _likelihood_subset(data.X, cand, pool, 4, 0.5,
                                           np.random.default_rng(0))
        assert sorted(chosen.tolist()) == [0, 1, 2, 3]
        assert swaps == 1
