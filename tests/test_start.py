"""The maximum-likelihood start: exact constrained ALS in the SVD subspace."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import lsq_linear

from admixspec import fit_ml, loglikelihood, q_error, simulate_balding_nichols
from admixspec.core.frequencies import allele_frequencies
from admixspec.core.parameters import P_MAX, P_MIN, Q_MIN
from admixspec.ml._kernels.least_squares import (
    MAX_CACHED_K,
    box_ls_p_rows,
    constrained_ls_rows,
)
from admixspec.ml.start import (
    SubspaceStart,
    _ridged_inverse,
    _simplex_rows,
    fisher_weights,
    subspace_als,
    subspace_starts,
)

from .conftest import blas_threads, blas_threads_in


@pytest.fixture(scope="module")
def sim_fixture():
    return simulate_balding_nichols(150, 4000, 4, fst=0.1, alpha=0.3, seed=3)


@pytest.fixture(scope="module")
def als_problem(sim_fixture):
    """f, U S, V of the fixture's rank-3 SVD and a uniform starting P (K = 4)."""
    G = sim_fixture.genotypes.dosage
    f, US, V = _factors(G, 3)
    P0 = np.random.default_rng(0).uniform(P_MIN, P_MAX, size=(G.shape[1], 4))
    return f, US, V, P0


@pytest.fixture(scope="module")
def tight_als(als_problem):
    """Accelerated ALS from ``als_problem`` run to a tight tolerance (1e-9)."""
    return subspace_als(*als_problem, tol=1e-9)


def _factors(G, r, seed=0):
    """f, U S and V of a plain truncated SVD of G/2 - f (dense, for tests)."""
    f = allele_frequencies(G)
    X = np.where(G >= 0, G / 2.0 - f, 0.0)
    U, S, Vt = np.linalg.svd(X, full_matrices=False)
    return f, U[:, :r] * S[:r], Vt[:r].T


class TestRowSolver:
    # up to MAX_CACHED_K the rows share the free sets' inverses; above it each
    # row factors its own system
    @pytest.mark.parametrize("K", [5, MAX_CACHED_K + 1])
    def test_box_rows__match_bounded_least_squares(self, K):
        rng = np.random.default_rng(0)
        A = rng.random((30, K))
        Y = rng.normal(0.5, 0.6, size=(200, 30))  # many rows hit a bound
        C, B = A.T @ A, Y @ A
        X0 = np.full((200, K), 0.5)
        # the P step's kernel with b = B: no frequency term, V = B, M = I
        X = np.empty_like(X0)
        box_ls_p_rows(np.zeros(200), np.zeros(K), B, np.eye(K), *_ridged_inverse(C),
                      P_MIN, P_MAX, X0, X, 1)
        expected = np.array([lsq_linear(A, y, bounds=(P_MIN, P_MAX), tol=1e-12).x
                             for y in Y])
        assert np.mean((X <= P_MIN + 1e-12) | (X >= P_MAX - 1e-12)) > 0.2
        np.testing.assert_allclose(X, expected, atol=1e-7)

    def test_box_rows__with_a_singular_free_block_are_solved_by_factoring(self):
        # a component no row informs (a zero column) leaves C singular without
        # its ridge: free sets holding it have no inverse, and their rows take
        # the factoring solver, which every row of constrained_ls_rows takes
        rng = np.random.default_rng(2)
        A = rng.random((30, 4))
        A[:, 2] = 0.0
        Y = rng.normal(0.5, 0.6, size=(200, 30))
        C, B = A.T @ A, Y @ A
        X0 = np.full((200, 4), 0.5)
        X = np.empty_like(X0)
        box_ls_p_rows(np.zeros(200), np.zeros(4), B, np.eye(4), C, np.empty((0, 0)),
                      P_MIN, P_MAX, X0, X, 1)
        factored = np.empty_like(X0)
        constrained_ls_rows(X0, B, C, P_MIN, P_MAX, False, factored, 1)
        np.testing.assert_array_equal(X, factored)

    def test_simplex_rows__satisfy_the_optimality_conditions(self):
        # min x'Cx/2 - b'x over {x >= Q_MIN, sum x = 1}: the gradient C x - b is
        # equal on the free entries and no lower on the entries at the floor
        rng = np.random.default_rng(1)
        A = rng.random((40, 4))
        C = A.T @ A
        B = rng.normal(size=(300, 4)) * 20
        X = _simplex_rows(np.full((300, 4), 0.25), B, C, 1)
        np.testing.assert_allclose(X.sum(axis=1), 1.0)
        assert X.min() >= Q_MIN * (1 - 1e-12)
        grad = X @ C - B
        free = X > Q_MIN * (1 + 1e-9)
        at_floor = ~free
        assert at_floor.any()
        for g, fr, fl in zip(grad, free, at_floor, strict=True):
            level = g[fr].mean()
            np.testing.assert_allclose(g[fr], level, atol=1e-6 * np.abs(g).max())
            assert np.all(g[fl] >= level - 1e-6 * np.abs(g).max())

    @pytest.mark.parametrize("inverse", [True, False])
    def test_p_step__is_each_snp_s_bounded_least_squares(self, sim_fixture, inverse):
        # the P step's one kernel against a per-row solver, on rows inside and on
        # the box; without the Gram matrix's inverse every row takes the active set
        G = sim_fixture.genotypes.dosage[:, :300]
        f, US, V = _factors(G, 3)
        V = np.ascontiguousarray(V)  # as SubspaceStart holds it
        Q = sim_fixture.Q
        C, C_inv = _ridged_inverse(Q.T @ Q)
        P = np.empty((300, 4))
        box_ls_p_rows(f, Q.sum(axis=0), V, US.T @ Q, C,
                      C_inv if inverse else np.empty((0, 0)), P_MIN, P_MAX,
                      np.full((300, 4), 0.5), P, 2)
        Y = f[None, :] + US @ V.T
        expected = np.array([lsq_linear(Q, y, bounds=(P_MIN, P_MAX), tol=1e-12).x
                             for y in Y.T])
        on_bound = (P <= P_MIN + 1e-12) | (P >= P_MAX - 1e-12)
        assert 0.05 < np.mean(on_bound.any(axis=1)) < 0.95  # both kinds of rows
        np.testing.assert_allclose(P, expected, atol=1e-6)
        if inverse:  # the P step is this kernel, whatever the thread count
            start = SubspaceStart(f, US, V)
            np.testing.assert_array_equal(start.p_step(Q, np.full((300, 4), 0.5)), P)


class TestSubspaceALS:
    def test_objective__equals_the_dense_weighted_residual(self, sim_fixture):
        G = sim_fixture.genotypes.dosage[:, :500]
        f, US, V = _factors(G, 3)
        problem = SubspaceStart(f, US, V)
        Q, P = sim_fixture.Q, sim_fixture.P[:500]
        Y = f[None, :] + US @ V.T
        dense = float(np.sum(fisher_weights(f)[None, :] * (Y - Q @ P.T) ** 2))
        assert problem.objective(Q, P) == pytest.approx(dense, rel=1e-10)

    def test_plain_als__never_increases_the_objective(self, als_problem):
        f, US, V, P = als_problem
        problem = SubspaceStart(f, US, V)
        Q = problem.q_step(P, np.full((US.shape[0], 4), 0.25))
        values = [problem.objective(Q, P)]
        for _ in range(15):
            Q, P = problem.als(Q, P)
            values.append(problem.objective(Q, P))
        assert np.all(np.diff(values) <= 1e-9 * values[0])

    def test_acceleration__reaches_the_same_objective_in_fewer_maps(
            self, als_problem, tight_als):
        # both run to a tight tolerance, so that both reach the minimum
        _, _, fast = tight_als
        _, _, slow = subspace_als(*als_problem, tol=1e-9, accelerate=False)
        assert fast["maps"] < slow["maps"]
        assert fast["objective"] == pytest.approx(slow["objective"], rel=1e-5)


class TestSubspaceStarts:
    def test_start__near_the_optimum_and_the_truth(self, sim_fixture):
        # measured (seeds 0-2): 8.7-8.8e-4 relative below the optimum (the
        # previous SVD start, since deleted: 9.4e-4), Q 0.0252 from the truth
        # (0.0287), converged in 10 iterations (9)
        G = sim_fixture.genotypes.dosage
        ((Q, P),) = subspace_starts(G, 4, 3, seed=0)
        optimum = fit_ml(G, 4, seed=0, tol=1e-6).loglik
        gap = (optimum - loglikelihood(G, Q, P)) / abs(optimum)
        assert 0 < gap < 9.4e-4  # closer than the previous start
        assert q_error(sim_fixture.Q, Q) < 0.03
        assert fit_ml(G, 4, Q0=Q, P0=P).n_iter <= 12

    def test_default_tolerance__fewer_maps_and_the_tight_start_s_optimum(
            self, sim_fixture, als_problem, tight_als):
        # the start need only lie in the optimum's basin (ALS_TOL's note)
        G = sim_fixture.genotypes.dosage
        loose, tight = subspace_als(*als_problem), tight_als
        assert loose[2]["maps"] < tight[2]["maps"]
        ends = [fit_ml(G, 4, Q0=Q, P0=P).loglik for Q, P, _ in (loose, tight)]
        assert ends[0] == pytest.approx(ends[1], rel=1e-9)

    def test_same_seed__same_starts(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        a = subspace_starts(G, 4, 1, seed=5)
        b = subspace_starts(G, 4, 1, seed=5)
        np.testing.assert_array_equal(a[0][0], b[0][0])
        np.testing.assert_array_equal(a[0][1], b[0][1])

    def test_one_start__when_the_data_determine_the_subspace(self, sim_fixture):
        starts = subspace_starts(sim_fixture.genotypes.dosage, 4, 3, seed=0)
        assert len(starts) == 1

    def test_several_starts__on_a_flat_spectrum(self):
        # two populations fitted with K = 4: beyond the first direction the
        # singular values are a flat bulk, and the starts mix it differently
        sim = simulate_balding_nichols(120, 3000, 2, fst=0.2, alpha=0.5, seed=4)
        starts = subspace_starts(sim.genotypes.dosage, 4, 3, seed=0)
        assert len(starts) == 3
        for Q, P in starts:
            assert Q.shape == (120, 4) and P.shape == (3000, 4)
            np.testing.assert_allclose(Q.sum(axis=1), 1.0)
            assert Q.min() >= Q_MIN * (1 - 1e-12)
            assert P_MIN <= P.min() <= P.max() <= P_MAX
        assert q_error(starts[0][0], starts[1][0]) > 1e-3
        assert q_error(starts[1][0], starts[2][0]) > 1e-3

    def test_options__mixes_and_standardized_svd_give_valid_starts(self):
        sim = simulate_balding_nichols(120, 3000, 2, fst=0.2, alpha=0.5, seed=4)
        G = sim.genotypes.dosage
        new = subspace_starts(G, 4, 3, seed=0)
        mixed = subspace_starts(G, 4, 3, seed=0, mix=True)
        scaled = subspace_starts(G, 4, 3, seed=0, standardize=True)
        # the first start is the first sketch's either way; the others differ
        np.testing.assert_array_equal(new[0][0], mixed[0][0])
        assert q_error(new[1][0], mixed[1][0]) > 1e-3
        for Q, P in mixed + scaled:
            np.testing.assert_allclose(Q.sum(axis=1), 1.0)
            assert P_MIN <= P.min() <= P.max() <= P_MAX
        assert q_error(new[0][0], scaled[0][0]) > 1e-3

    def test_k1__is_the_allele_frequency(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        ((Q, P),) = subspace_starts(G, 1, 3, seed=0)
        np.testing.assert_allclose(Q, 1.0)
        np.testing.assert_allclose(P[:, 0], np.clip(allele_frequencies(G), P_MIN, P_MAX))


class TestCentredBlock:
    """The randomized SVD's blocks: one numba pass, NumPy's float32 bits."""

    @pytest.mark.parametrize("scaled", [False, True])
    def test_centred_block__same_bits_as_the_numpy_formula(self, scaled):
        from admixspec.ml.initial import _CHUNK, _centred_block

        rng = np.random.default_rng(7)
        G = rng.integers(-1, 3, size=(37, _CHUNK + 300)).astype(np.int8)
        f = rng.uniform(0.0, 1.0, G.shape[1])
        scale = rng.uniform(0.5, 3.0, G.shape[1]) if scaled else None
        for j0 in (0, _CHUNK):  # a full block, then the short last one
            block = G[:, j0 : j0 + _CHUNK]
            # the formula the kernel replaced, in NumPy's float32 steps
            expected = block.astype(np.float32)
            expected *= 0.5
            expected -= f[j0 : j0 + _CHUNK].astype(np.float32)
            expected[block < 0] = 0.0
            if scaled:
                expected *= scale[j0 : j0 + _CHUNK].astype(np.float32)
            X = _centred_block(G, f, j0, scale)
            assert X.dtype == np.float32 and X.flags.c_contiguous
            np.testing.assert_array_equal(X.view(np.int32), expected.view(np.int32))


@pytest.mark.parametrize("individuals, serial", [(50, True), (60, False)])
def test_randomized_svd_runs_blas_serially_below_the_size_where_its_threads_pay(
        monkeypatch, individuals, serial):
    """BLAS's threads, idle between the sketch's small products, would take the
    cores from the centring kernel: below ``SERIAL_BLAS_BELOW`` individuals
    the sketch runs BLAS on one thread (above it, on the caller's threads),
    and its singular values are a dense SVD's."""
    from threadpoolctl import threadpool_limits

    from admixspec.ml import initial

    seen = blas_threads_in(monkeypatch, initial, "_range_svd")
    monkeypatch.setattr(initial, "SERIAL_BLAS_BELOW", 55)
    G = simulate_balding_nichols(individuals, 600, 3, fst=0.3, alpha=0.1,
                                 seed=4).genotypes.dosage
    f = allele_frequencies(G)
    with threadpool_limits(limits=2, user_api="blas"):
        callers = blas_threads()
        U, S, _ = initial._randomized_svd(G, f, 2, n_power=2,
                                          rng=np.random.default_rng(0))
    assert seen == [{1} if serial else callers]
    dense = np.linalg.svd(np.where(G >= 0, G / 2.0 - f, 0.0), compute_uv=False)
    np.testing.assert_allclose(S[:2], dense[:2], rtol=1e-3)
