"""Diagonal completion, whitening and the masked third-moment least squares."""

import numpy as np
import pytest

from admixspec.core.frequencies import frequency_blocks
from admixspec.spectral import denoise
from admixspec.spectral.denoise import (
    complete_diagonal,
    masked_tensor_operator,
    solve_masked_tensor,
    whiten,
    whiten_in_subspace,
)
from admixspec.spectral.moments import second_moments, whitened_third_moment_terms
from admixspec.spectral.tensor import symmetrize

from .conftest import blas_threads, blas_threads_in
from .reference import dense_third_moment, distinct_mask, masked_least_squares_tensor


def _binomial_data(m=9, n=4000, K=3, seed=0):
    rng = np.random.default_rng(seed)
    Q = rng.dirichlet(np.ones(K), size=m)
    H = (rng.random((K, n)) < 0.4).astype(float)  # binary allele frequencies
    dosage = rng.binomial(2, Q @ H).astype(np.int8)
    return dosage, Q, H


class TestCompleteDiagonal:
    def test_complete_diagonal__recovers_low_rank_diagonal(self):
        rng = np.random.default_rng(1)
        A = rng.random((30, 3))
        low_rank = A @ A.T
        R, n_iter = complete_diagonal(low_rank + np.diag(rng.random(30)), 3)
        np.testing.assert_allclose(R, low_rank, atol=1e-8)
        assert n_iter > 1

    def test_complete_diagonal__keeps_off_diagonal(self):
        rng = np.random.default_rng(2)
        M = rng.random((10, 10))
        M = M + M.T
        R, _ = complete_diagonal(M, 2)
        off = ~np.eye(10, dtype=bool)
        np.testing.assert_array_equal(R[off], M[off])


    def test_complete_diagonal__same_bits_every_call_above_dense_limit(self):
        # Lanczos (m > _DENSE_LIMIT) must not take ARPACK's varying random
        # start: the same input gave different last bits from call to call,
        # and so did every seed
        rng = np.random.default_rng(4)
        A = rng.random((450, 3))
        M = A @ A.T + np.diag(rng.random(450))
        first, _ = complete_diagonal(M, 3)
        for _ in range(3):
            again, _ = complete_diagonal(M, 3)
            assert again.tobytes() == first.tobytes()

    def test_complete_diagonal__lanczos_agrees_with_dense(self, monkeypatch):
        rng = np.random.default_rng(5)
        A = rng.random((300, 4))
        M = A @ A.T + np.diag(rng.random(300))
        assert 300 > denoise._DENSE_LIMIT
        lanczos, _ = complete_diagonal(M, 4)
        monkeypatch.setattr(denoise, "_DENSE_LIMIT", 300)
        dense, _ = complete_diagonal(M, 4)
        np.testing.assert_allclose(lanczos, dense, rtol=1e-9, atol=1e-12)

    @pytest.mark.parametrize("individuals, serial", [(290, True), (310, False)])
    def test_complete_diagonal__runs_blas_serially_below_the_size_where_its_threads_pay(
            self, monkeypatch, individuals, serial):
        # Lanczos' matrix-vector products are too small for BLAS's threads;
        # above the limit the completion keeps the caller's
        from threadpoolctl import threadpool_limits

        seen = blas_threads_in(monkeypatch, denoise, "_complete")
        monkeypatch.setattr(denoise, "SERIAL_BLAS_BELOW", 300)
        rng = np.random.default_rng(6)
        A = rng.random((individuals, 3))
        low_rank = A @ A.T
        with threadpool_limits(limits=2, user_api="blas"):
            callers = blas_threads()
            R, _ = complete_diagonal(low_rank + np.diag(rng.random(individuals)), 3)
        assert seen == [{1} if serial else callers]
        np.testing.assert_allclose(np.diag(R), np.diag(low_rank), rtol=1e-7)


class TestWhiten:
    def test_whiten__gives_identity(self):
        rng = np.random.default_rng(3)
        A = rng.random((12, 4))
        white = whiten(A @ A.T, 4)
        np.testing.assert_allclose(white.K_white.T @ (A @ A.T) @ white.K_white,
                                   np.eye(4), atol=1e-10)
        np.testing.assert_allclose(white.K_white.T @ white.B, np.eye(4), atol=1e-10)

    def test_whiten__rejects_rank_deficient(self):
        A = np.ones((5, 1))
        with pytest.raises(ValueError, match="rank"):
            whiten(A @ A.T, 2)


class TestMaskedTensor:
    def test_operator__matches_dense_masked_sum(self):
        rng = np.random.default_rng(4)
        m, K = 6, 3
        B = rng.normal(size=(m, K))
        T = symmetrize(rng.normal(size=(K, K, K)))
        full = np.einsum("abc,ia,jb,kc->ijk", T, B, B, B)  # T(b_i, b_j, b_k)
        masked = np.where(distinct_mask(m), full, 0.0)
        expected = np.einsum("ijk,ia,jb,kc->abc", masked, B, B, B)
        np.testing.assert_allclose(masked_tensor_operator(T, B), expected, atol=1e-10)

    def test_contraction_order_found_once__gives_einsums_bytes(self):
        rng = np.random.default_rng(6)
        T = symmetrize(rng.normal(size=(4, 4, 4)))
        B = rng.normal(size=(50, 4))
        for _ in range(2):  # the second call takes the cached order
            np.testing.assert_array_equal(
                denoise._contract("abc,ia,ib->ic", T, B, B),
                np.einsum("abc,ia,ib->ic", T, B, B, optimize=True))

    def test_solve__matches_dense_least_squares(self):
        dosage, _, _ = _binomial_data()
        X = dosage / 2.0
        moments = second_moments(frequency_blocks(dosage, block_size=1000))
        R, _ = complete_diagonal(moments.M2, 3)
        white = whiten(R, 3)
        terms = whitened_third_moment_terms(frequency_blocks(dosage, block_size=700),
                                            white.B)
        W, info = solve_masked_tensor(terms, white.B)
        expected = masked_least_squares_tensor(dense_third_moment(X), white.B.T)
        np.testing.assert_allclose(W, symmetrize(expected), atol=1e-9)
        assert info["relative_residual"] < 1e-10

    def test_streamed_terms__match_dense_third_moment(self):
        dosage, _, _ = _binomial_data(m=5, n=300)
        X = dosage / 2.0
        B = np.random.default_rng(5).normal(size=(5, 2))
        terms = whitened_third_moment_terms(frequency_blocks(dosage, block_size=64), B)
        M3 = dense_third_moment(X)
        np.testing.assert_allclose(terms.full,
                                   np.einsum("abc,ai,bj,ck->ijk", M3, B, B, B),
                                   atol=1e-12)
        np.testing.assert_allclose(terms.cube, np.einsum("aaa->a", M3), atol=1e-12)
        np.testing.assert_allclose(terms.pair, np.einsum("aac,ck->ak", M3, B),
                                   atol=1e-12)


class TestWhitenInSubspace:
    def test_whiten_in_subspace__recovers_core_despite_diagonal(self):
        rng = np.random.default_rng(6)
        U, _ = np.linalg.qr(rng.normal(size=(40, 3)))
        A = rng.normal(size=(3, 3))
        low_rank = U @ (A @ A.T) @ U.T
        M2 = low_rank + np.diag(rng.random(40))  # the diagonal is not used
        white = whiten_in_subspace(U.T @ M2 @ U, np.diag(M2), U)
        np.testing.assert_allclose(white.K_white.T @ low_rank @ white.K_white, np.eye(3),
                                   atol=1e-9)
        np.testing.assert_allclose(white.K_white.T @ white.B, np.eye(3), atol=1e-10)
        np.testing.assert_allclose(white.eigenvalues, np.linalg.eigvalsh(A @ A.T)[::-1],
                                   rtol=1e-9)

    def test_whiten_in_subspace__matches_whiten_for_exact_low_rank(self):
        rng = np.random.default_rng(7)
        A = rng.random((25, 3))
        R = A @ A.T
        U = np.linalg.qr(A)[0]
        anchored, plain = whiten_in_subspace(U.T @ R @ U, np.diag(R), U), whiten(R, 3)
        np.testing.assert_allclose(anchored.eigenvalues, plain.eigenvalues, rtol=1e-9)
        np.testing.assert_allclose(np.abs(anchored.K_white.T @ plain.B), np.eye(3),
                                   atol=1e-8)

    def test_whiten_in_subspace__rejects_core_not_positive_definite(self):
        rng = np.random.default_rng(8)
        U, _ = np.linalg.qr(rng.normal(size=(20, 2)))
        R = np.outer(U[:, 0], U[:, 0]) - 0.5 * np.outer(U[:, 1], U[:, 1])
        with pytest.raises(ValueError, match="rank"):
            whiten_in_subspace(U.T @ R @ U, np.diag(R), U)
