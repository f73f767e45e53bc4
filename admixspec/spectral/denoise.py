"""Denoising for binomial noise: diagonal completion of M2, whitening, and
the masked least-squares whitened third moment.

Binomial genotype noise is independent across individuals, so only the
off-diagonal entries of ``M2`` and the all-distinct entries of ``M3`` are
unbiased (seed paper, appendix "Matrix and tensor denoising"). The diagonal of
``M2`` is treated as missing and completed from a rank-K fit; the whitened
tensor is the least-squares fit to the all-distinct entries of ``M3``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse.linalg

from ..core.exceptions import InputError
from ..core.threads import serial_blas_below
from .moments import ThirdMomentTerms
from .tensor import symmetrize

__all__ = [
    "Whitening",
    "complete_diagonal",
    "masked_tensor_operator",
    "masked_tensor_rhs",
    "solve_masked_tensor",
    "whiten",
    "whiten_in_subspace",
]


#: Above this size the top eigenpairs come from Lanczos iterations (eigsh),
#: warm-started from the previous iteration's vectors. Measured on the K hint's
#: rank-10 completion, which the hint ran until it unbiased its diagonal
#: instead, on the HapMap3 tutorial data, dense against Lanczos: 0.11-0.17
#: against 0.16-0.22 s at 150 individuals, about the same at 200, 0.23-0.27
#: against 0.13-0.15 s at 250 and 0.49-0.53 against 0.28-0.30 s at 324 (one
#: thread, the same hint; docs/benchmarks.md, benchmarks/k_hint_speed.py
#: --dense-limits).
_DENSE_LIMIT = 250


def _top_eigenpairs(matrix, K, start=None):
    """Largest-K (algebraic) eigenpairs of a symmetric matrix, descending.

    Dense ``eigh`` for small matrices; Lanczos (``scipy.sparse.linalg.eigsh``,
    O(m^2) per iteration, warm-started from ``start``) for large ones.
    """
    m = matrix.shape[0]
    if m <= _DENSE_LIMIT or K >= m - 1:
        values, vectors = scipy.linalg.eigh(matrix, subset_by_index=(m - K, m - 1))
    else:
        # ARPACK's own random start vector varies between calls and processes, which
        # made the same seed give different bits; the all-ones direction is fixed
        # and overlaps the leading eigenvector of a non-negative moment matrix.
        v0 = np.full(m, 1.0 / np.sqrt(m)) if start is None else start.sum(axis=1)
        values, vectors = scipy.sparse.linalg.eigsh(matrix, k=K, which="LA", v0=v0,
                                                    tol=1e-12)
        order = np.argsort(values)
        values, vectors = values[order], vectors[:, order]
    return values[::-1], vectors[:, ::-1]


#: Individuals below which :func:`complete_diagonal` runs BLAS on one thread.
#: Its Lanczos iterations are matrix-vector products and its dense solves are
#: small: BLAS's threads, synchronised at every one, slowed them. At two
#: threads, BLAS on two against one: the K hint's former rank-10 completion on
#: 1,000 of 1000 Genomes' individuals 1.69-2.42 against 0.77-0.92 s; completions of
#: random matrices 0.56-0.68 against 0.23-0.29 s at 2,000 (rank 10), about even
#: at 4,000 (rank 5) and 1.19-1.25 against 1.35-1.53 s at 5,000
#: (docs/benchmarks.md).
SERIAL_BLAS_BELOW = 4000

#: Iteration cap of :func:`complete_diagonal`. Where the K-th eigenvalue is
#: close to the noise bulk the iteration does not converge: it drifts along a
#: direction that leaves the off-rank residual unchanged (HapMap3 tutorial
#: data, K = 4: residual 1.401e-3 after 60, 300 and 5,000 iterations). There
#: the 240 iterations after the 60th took 1.9 s, a third of the spectral
#: stage, and the estimate they led to was 710 log-likelihood units lower
#: (K = 5: 606); the chosen window of every fit of the estimator-choice grid
#: converged within 51, and its 58 replicate-1 spectral estimates with rare
#: alleles are unchanged by the cap, byte for byte (benchmarks/choice_grid.py
#: recheck).
COMPLETION_ITERATIONS = 60


def complete_diagonal(M2, K, *, tol=1e-9, max_iter=COMPLETION_ITERATIONS,
                      overwrite=False):
    """Fill the diagonal of ``M2`` so that the matrix is (close to) rank K.

    Iterates: top-K eigenpairs ``(lambda_i, v_i)`` of the current matrix ``R``;
    ``R_jj <- (sum_i lambda_i v_i v_i^T)_jj``; off-diagonal kept from ``M2``;
    until the diagonal moves by less than ``tol`` relative to its size.

    Parameters
    ----------
    M2 : numpy.ndarray, shape (m, m)
        Symmetric second moment with a biased diagonal.
    K : int
        Target rank.
    tol : float
        Relative change of the diagonal that stops the iteration.
    max_iter : int
        Iteration cap.
    overwrite : bool
        Replace the diagonal of ``M2`` itself (a float64 array), not of a
        copy: at 5,000 individuals the copy is 191 MiB.

    Returns
    -------
    R : numpy.ndarray, shape (m, m)
        ``M2`` with its diagonal replaced (``M2`` itself with ``overwrite``).
    n_iter : int
        Iterations used.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> A = rng.random((8, 2)); low_rank = A @ A.T
    >>> noisy = low_rank + np.diag(rng.random(8))
    >>> R, _ = complete_diagonal(noisy, 2)
    >>> bool(np.allclose(np.diag(R), np.diag(low_rank), atol=1e-6))
    True
    """
    R = M2 if overwrite and M2.dtype == np.float64 else np.array(M2, dtype=float)
    with serial_blas_below(R.shape[0], SERIAL_BLAS_BELOW):
        n_iter = _complete(R, K, tol, max_iter)
    return R, n_iter


def _complete(R, K, tol, max_iter):
    """:func:`complete_diagonal`'s iterations on ``R`` in place; the count used."""
    diagonal = np.diag(R).copy()
    n_iter = 0
    vectors = None
    for n_iter in range(1, max_iter + 1):  # noqa: B007 - returned after the loop
        values, vectors = _top_eigenpairs(R, K, vectors)
        new_diagonal = np.einsum("ik,k,ik->i", vectors, values, vectors)
        change = np.linalg.norm(new_diagonal - diagonal)
        np.fill_diagonal(R, new_diagonal)
        scale = max(np.linalg.norm(new_diagonal), np.finfo(float).tiny)
        diagonal = new_diagonal
        if change <= tol * scale:
            break
    return n_iter


@dataclass
class Whitening:
    """Whitening of a rank-K second moment.

    Attributes
    ----------
    K_white : numpy.ndarray, shape (m, K)
        ``K`` with ``K^T M2 K = I_K`` (``V Lambda^{-1/2}``).
    B : numpy.ndarray, shape (m, K)
        ``(K^+)^T = V Lambda^{1/2}``; row ``a`` is ``b_a``.
    eigenvalues : numpy.ndarray, shape (K,)
        Top-K eigenvalues of the denoised M2, descending.
    """

    K_white: np.ndarray
    B: np.ndarray
    eigenvalues: np.ndarray


def whiten(M2, K) -> Whitening:
    """Whitening matrix from the top-K eigenpairs of a denoised second moment.

    Parameters
    ----------
    M2 : numpy.ndarray, shape (m, m)
    K : int

    Returns
    -------
    Whitening

    Raises
    ------
    InputError
        If one of the top-K eigenvalues is not positive (rank < K).
    """
    values, vectors = _top_eigenpairs(M2, K)
    if values[-1] <= 0:
        raise InputError(
            f"the denoised second moment has rank < {K} "
            f"(eigenvalue {values[-1]:.3g}); too few independent components"
        )
    root = np.sqrt(values)
    return Whitening(K_white=vectors / root, B=vectors * root, eigenvalues=values)


def whiten_in_subspace(projected, diagonal, U) -> Whitening:
    """Whitening of a second moment whose column space is already known.

    In the admixture model every SNP set's second moment
    ``E[x x^T] = Q E[h h^T] Q^T`` has the column space of Q; only the K x K
    core ``E[h h^T]`` depends on which SNPs are summed. A set of rare SNPs
    estimates that space badly (few informative SNPs, shared haplotypes
    correlating them), so the space ``U`` comes from all SNPs and only the
    core from the chosen ones: ``C`` minimises
    ``sum_{a != b} (M2_ab - (U C U^T)_ab)^2`` over the unbiased off-diagonal
    entries, and the whitening is that of ``U C U^T``.

    Parameters
    ----------
    projected : numpy.ndarray, shape (K, K)
        ``U^T M2 U`` of the chosen SNPs' second moment (any diagonal).
    diagonal : numpy.ndarray, shape (m,)
        The diagonal of that ``M2``.
    U : numpy.ndarray, shape (m, K)
        Orthonormal basis of the column space.

    Returns
    -------
    Whitening
        ``K_white`` and ``B`` with columns in the span of ``U``.

    Raises
    ------
    InputError
        If the fitted core is not positive definite.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> A = rng.random((10, 2)); M2 = A @ A.T + np.diag(rng.random(10))
    >>> U = np.linalg.qr(A)[0]
    >>> white = whiten_in_subspace(U.T @ M2 @ U, np.diag(M2), U)
    >>> bool(np.allclose(white.K_white.T @ (A @ A.T) @ white.K_white, np.eye(2)))
    True
    """
    m, K = U.shape
    # normal equations of the masked problem: C - sum_a (u_a^T C u_a) u_a u_a^T
    # = U^T M2 U - sum_a M2_aa u_a u_a^T, a K^2 x K^2 linear system
    outer = np.einsum("ap,aq->apq", U, U).reshape(m, K * K)
    operator = np.eye(K * K) - outer.T @ outer
    rhs = np.asarray(projected, dtype=float) - (outer.T @ diagonal).reshape(K, K)
    core = np.linalg.solve(operator, rhs.reshape(-1)).reshape(K, K)
    values, rotation = np.linalg.eigh(0.5 * (core + core.T))
    values, rotation = values[::-1], rotation[:, ::-1]
    if values[-1] <= 0:
        raise InputError(
            f"the second moment restricted to the column space has rank < {K} "
            f"(eigenvalue {values[-1]:.3g}); too few informative SNPs"
        )
    vectors = U @ rotation
    root = np.sqrt(values)
    return Whitening(K_white=vectors / root, B=vectors * root, eigenvalues=values)


@functools.lru_cache(maxsize=32)
def _contraction_path(subscripts, *shapes):
    """``np.einsum``'s greedy contraction order for operands of these shapes."""
    return np.einsum_path(subscripts, *(np.empty(shape) for shape in shapes),
                          optimize="greedy")[0]


def _contract(subscripts, *operands):
    """``np.einsum(subscripts, *operands, optimize=True)``, its order found once.

    The order depends on the shapes alone; the conjugate-gradient solves
    repeat the same few contractions, and finding the order again at every
    call (NumPy's ``einsum_path``, in Python) took about 0.04 s of a 0.6-0.8 s
    spectral stage on ADAMIXTURE's demo data. The same order gives the same
    bytes.
    """
    path = _contraction_path(subscripts, *(operand.shape for operand in operands))
    return np.einsum(subscripts, *operands, optimize=path)


def _pair_tensor(B, Y):
    """``sum_a b_a (x) b_a (x) y_a`` for rows of B and Y (both (m, K))."""
    return _contract("ap,aq,ar->pqr", B, B, Y)


def masked_tensor_rhs(terms: ThirdMomentTerms, B):
    """``A*(M3) = sum over distinct (a,b,c) of M3_abc b_a (x) b_b (x) b_c``.

    Inclusion–exclusion over the index coincidences (method.md §3).

    Parameters
    ----------
    terms : ThirdMomentTerms
        Streamed sums for the same ``B``.
    B : numpy.ndarray, shape (m, K)

    Returns
    -------
    numpy.ndarray, shape (K, K, K), symmetric
    """
    pair = _pair_tensor(B, terms.pair)
    cube = _contract("a,ap,aq,ar->pqr", terms.cube, B, B, B)
    return symmetrize(terms.full) - 3.0 * symmetrize(pair) + 2.0 * cube


def masked_tensor_operator(T, B, gram=None):
    """Apply the normal operator ``A*A`` of the masked problem to a symmetric T.

    ``A*A(T) = sum over distinct (a,b,c) of T(b_a, b_b, b_c) b_a (x) b_b (x) b_c``,
    at O(m K^3) cost.

    Parameters
    ----------
    T : numpy.ndarray, shape (K, K, K), symmetric
    B : numpy.ndarray, shape (m, K)
    gram : numpy.ndarray, shape (K, K), optional
        ``B^T B`` if already computed.

    Returns
    -------
    numpy.ndarray, shape (K, K, K), symmetric
    """
    G = B.T @ B if gram is None else gram
    full = _contract("abc,ai,bj,ck->ijk", T, G, G, G)
    w = _contract("abc,ia,ib->ic", T, B, B)  # T(b_a, b_a, .)
    pair = _pair_tensor(B, w @ G)
    diag_values = np.einsum("ic,ic->i", w, B)  # T(b_a, b_a, b_a)
    cube = _contract("a,ap,aq,ar->pqr", diag_values, B, B, B)
    return full - 3.0 * symmetrize(pair) + 2.0 * cube


def solve_masked_tensor(terms: ThirdMomentTerms, B, *, tol=1e-12, max_iter=500):
    """Whitened third moment by masked least squares over distinct triples.

    Solves ``A*A(W) = A*(M3)`` over symmetric K x K x K tensors by conjugate
    gradients preconditioned with ``(B^T B)^{-1}`` on every mode (the exact
    inverse when the mask is dropped).

    Parameters
    ----------
    terms : ThirdMomentTerms
    B : numpy.ndarray, shape (m, K)
    tol : float
        Relative residual norm that stops CG.
    max_iter : int

    Returns
    -------
    W : numpy.ndarray, shape (K, K, K), symmetric
    info : dict
        ``{"iterations", "relative_residual"}``.
    """
    G = B.T @ B
    G_inv = np.linalg.inv(G)

    def precondition(T):
        return _contract("abc,ai,bj,ck->ijk", T, G_inv, G_inv, G_inv)

    rhs = masked_tensor_rhs(terms, B)
    solution = precondition(rhs)
    residual = rhs - masked_tensor_operator(solution, B, G)
    z = precondition(residual)
    direction = z.copy()
    rz = np.vdot(residual, z)
    rhs_norm = max(np.linalg.norm(rhs), np.finfo(float).tiny)
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 - reported in info
        if np.linalg.norm(residual) <= tol * rhs_norm:
            break
        applied = masked_tensor_operator(direction, B, G)
        step = rz / np.vdot(direction, applied)
        solution = solution + step * direction
        residual = residual - step * applied
        z = precondition(residual)
        rz_new = np.vdot(residual, z)
        direction = z + (rz_new / rz) * direction
        rz = rz_new
    info = {
        "iterations": iterations,
        "relative_residual": float(np.linalg.norm(residual) / rhs_norm),
    }
    return symmetrize(solution), info
