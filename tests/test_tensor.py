"""Tests of admixspec.spectral.tensor: helpers and the batched O-NCM eigenpair solver."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from admixspec.core.exceptions import UsageError
from admixspec.spectral.tensor import (
    eigenpairs,
    multilinear,
    near_eigenpairs,
    new_pairs,
    symmetrize,
    tensor_apply,
    third_moment,
)


def _random_symmetric(d, seed):
    return symmetrize(np.random.default_rng(seed).standard_normal((d, d, d)))


def _odeco(d, seed):
    """T = sum_i w_i v_i^3 with orthonormal v_i and its 2^d - 1 known eigenpairs."""
    rng = np.random.default_rng(seed)
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    w = rng.uniform(0.5, 2.0, d)
    T = np.einsum("i,ai,bi,ci->abc", w, V, V, V)
    vecs, vals = [], []
    for k in range(1, d + 1):
        for S in itertools.combinations(range(d), k):
            S = list(S)
            lam = 1.0 / np.sqrt(np.sum(1.0 / w[S] ** 2))
            vecs.append(lam * (V[:, S] @ (1.0 / w[S])))
            vals.append(lam)
    return T, np.array(vecs), np.array(vals)


class TestHelpers:
    def test_symmetrize__is_symmetric_and_idempotent(self):
        T = np.random.default_rng(0).standard_normal((4, 4, 4))
        S = symmetrize(T)
        for perm in itertools.permutations(range(3)):
            np.testing.assert_allclose(S.transpose(perm), S, atol=1e-15)
        np.testing.assert_allclose(symmetrize(S), S, atol=1e-15)

    def test_multilinear__matches_einsum(self):
        rng = np.random.default_rng(1)
        T = rng.standard_normal((4, 4, 4))
        A, B, C = (rng.standard_normal((4, k)) for k in (2, 3, 5))
        want = np.einsum("abc,ai,bj,ck->ijk", T, A, B, C)
        np.testing.assert_allclose(multilinear(T, A, B, C), want, atol=1e-12)
        u = rng.standard_normal(4)
        np.testing.assert_allclose(
            multilinear(T, np.eye(4), u, u), np.einsum("abc,b,c->a", T, u, u), atol=1e-12
        )

    def test_tensor_apply__batched_matches_single(self):
        T = _random_symmetric(5, 2)
        U = np.random.default_rng(3).standard_normal((7, 5))
        batched = tensor_apply(T, U)
        for row, u in zip(batched, U, strict=True):
            np.testing.assert_allclose(row, np.einsum("abc,b,c->a", T, u, u), atol=1e-12)

    def test_third_moment__matches_einsum_across_blocks(self):
        Z = np.random.default_rng(4).standard_normal((101, 3))
        want = np.einsum("ni,nj,nk->ijk", Z, Z, Z) / 101
        np.testing.assert_allclose(third_moment(Z, block_size=10), want, atol=1e-13)

    def test_bad_shape__raises_usage_error(self):
        with pytest.raises(UsageError):
            eigenpairs(np.zeros((3, 3, 2)))


class TestEigenpairs:
    @pytest.mark.parametrize("d", [2, 3, 5])
    def test_odeco__returns_exactly_the_known_pairs(self, d):
        T, vecs, vals = _odeco(d, seed=d)
        r = eigenpairs(T, seed=0)
        assert len(r) == 2**d - 1
        assert r.stable.all()
        # each known pair matched by exactly one found pair, to machine precision
        dots = r.vectors @ vecs.T
        match = np.argmax(dots, axis=0)
        assert len(set(match.tolist())) == len(vals)
        np.testing.assert_allclose(r.vectors[match], vecs, atol=1e-10)
        np.testing.assert_allclose(r.values[match], vals, atol=1e-12)

    @pytest.mark.parametrize("d", [3, 5, 6, 8])
    def test_random__residuals_count_and_rerun(self, d):
        T = _random_symmetric(d, seed=10 + d)
        r = eigenpairs(T, seed=1)
        assert len(r) >= 1
        assert len(r) <= 2**d - 1
        assert r.residuals.max() < 1e-10
        assert (r.values >= 0).all()
        assert np.all(np.diff(r.values) <= 0)
        np.testing.assert_allclose(np.linalg.norm(r.vectors, axis=1), 1.0, atol=1e-12)
        # pairwise distinct up to sign
        G = np.abs(r.vectors @ r.vectors.T) - np.eye(len(r))
        assert G.max() < 1 - 1e-8
        for s in (2,):
            other = eigenpairs(T, seed=s)
            assert new_pairs(r, other).size == 0
            assert new_pairs(other, r).size == 0

    def test_seed__same_seed_same_output(self):
        T = _random_symmetric(4, seed=5)
        a, b = eigenpairs(T, seed=7, n_starts=500), eigenpairs(T, seed=7, n_starts=500)
        np.testing.assert_array_equal(a.vectors, b.vectors)
        np.testing.assert_array_equal(a.hits, b.hits)

    def test_hits__sum_to_converged_starts(self):
        T = _random_symmetric(4, seed=6)
        r = eigenpairs(T, seed=0, n_starts=2000)
        assert r.hits.sum() == r.n_converged
        assert r.n_converged > 0.9 * r.n_starts

    @pytest.mark.parametrize("d", [3, 5, 7])
    def test_rounds__stop_early_with_the_full_budgets_pairs(self, d):
        T = _random_symmetric(d, seed=20 + d)
        every = eigenpairs(T, seed=3, first_round=4000 * d)
        rounds = eigenpairs(T, seed=3)
        assert rounds.n_starts < every.n_starts == 4000 * d
        assert rounds.n_new_second_half == 0
        assert new_pairs(every, rounds).size == 0
        np.testing.assert_allclose(rounds.vectors, every.vectors, atol=1e-12)

    def test_rounds__double_until_a_second_half_finds_nothing_new(self):
        T = _random_symmetric(6, seed=31)
        r = eigenpairs(T, seed=0, n_starts=8000, first_round=10)
        rounds = np.log2(r.n_starts / 10)
        assert rounds == int(rounds) >= 2
        assert r.n_new_second_half == 0
        # the round before it, over the same first starts, still found new pairs
        before = eigenpairs(T, seed=0, n_starts=8000, first_round=r.n_starts // 2)
        before_alone = eigenpairs(T, seed=0, n_starts=r.n_starts // 2,
                                  first_round=r.n_starts // 2)
        assert before.n_starts == r.n_starts
        assert before_alone.n_new_second_half > 0

    def test_rounds__leave_a_generator_as_the_full_budget_does(self):
        T = _random_symmetric(4, seed=8)
        early, full = np.random.default_rng(5), np.random.default_rng(5)
        eigenpairs(T, seed=early)
        eigenpairs(T, seed=full, first_round=16_000)
        assert early.random() == full.random()

    def test_rounds__a_budget_under_16_starts_still_runs(self):
        r = eigenpairs(_odeco(2, seed=2)[0], seed=0, n_starts=3)
        assert r.n_starts in (2, 3)
        assert len(r) >= 1

    def test_first_round__outside_the_budget_raises(self):
        with pytest.raises(UsageError, match="first_round"):
            eigenpairs(_random_symmetric(3, seed=1), n_starts=100, first_round=200)


class TestNearEigenpairs:
    def test_exact_pairs__found_with_zero_residual(self):
        T, vecs, vals = _odeco(3, seed=3)
        r = near_eigenpairs(T, seed=0)
        exact = r.residuals < 1e-10
        assert exact.sum() == 7
        np.testing.assert_allclose(np.sort(r.values[exact]), np.sort(vals), atol=1e-10)

    def test_vanished_pair__leaves_a_near_zero_minimum(self):
        # walk from a 3-pair to a 1-pair 2x2x2 tensor; just past the fold two pairs
        # have collided and vanished: O-NCM finds 1 pair, the residual minimum remains
        rng = np.random.default_rng(0)
        Ts = [symmetrize(rng.standard_normal((2, 2, 2))) for _ in range(20)]
        counts = [len(eigenpairs(T, seed=0, n_starts=400)) for T in Ts]
        A, B = Ts[counts.index(3)], Ts[counts.index(1)]
        lo, hi = 0.0, 1.0
        for _ in range(30):
            c = 0.5 * (lo + hi)
            if len(eigenpairs((1 - c) * A + c * B, seed=0, n_starts=400)) == 3:
                lo = c
            else:
                hi = c
        fold = eigenpairs((1 - lo) * A + lo * B, seed=0, n_starts=400)
        u_fold = fold.vectors[np.argmin(fold.margins)]
        T = (1 - hi - 1e-4) * A + (hi + 1e-4) * B
        assert len(eigenpairs(T, seed=0, n_starts=400)) == 1
        near = near_eigenpairs(T, seed=0)
        ghost = np.argmax(near.residuals)
        assert len(near) == 2
        assert 0 < near.residuals[ghost] < 1e-3
        assert abs(near.vectors[ghost] @ u_fold) > 1 - 1e-4
