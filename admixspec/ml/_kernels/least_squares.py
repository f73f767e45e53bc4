"""Numba kernels of the ML start's exact constrained least squares per row.

Called by :mod:`admixspec.ml.start`: :func:`constrained_ls_rows` for the rows
of a Q step whose unconstrained solution leaves the simplex, and
:func:`box_ls_p_rows` for a whole P step. Each row outside its bounds is one
small quadratic programme solved by the block-relaxation map's primal
active-set method (:func:`admixspec.ml._kernels.newton.active_set_step`),
warm-started at the bounds that held the row's previous solution.
"""

from __future__ import annotations

import numba
import numpy as np

from .newton import active_set_step, qp_scratch

#: Distance from a bound within which a previous solution's entry counts as on it.
AT_BOUND = 1e-9


@numba.njit(cache=True, error_model="numpy")
def _solve_row(x0, b, C, lower, upper, simplex, scratch, x_out):
    """``argmin x'Cx/2 - b'x`` of one row under its bounds, from the feasible ``x0``.

    ``scratch`` is :func:`~admixspec.ml._kernels.newton.qp_scratch`'s tuple
    with ``lo``/``hi`` filled with the bounds; the solution goes to ``x_out``.
    """
    x, gv, d, out, lo, hi, Cw, iwork, work = scratch
    K = x.shape[0]
    for k in range(K):
        x[k] = x0[k]
        # warm start: the bounds that held the previous solution
        iwork[0, k] = (-1 if x[k] - lower <= AT_BOUND else
                       1 if not simplex and upper - x[k] <= AT_BOUND else 0)
    for k in range(K):
        s = b[k]
        for e in range(K):
            s -= C[k, e] * x[e]
        gv[k] = s
    active_set_step(x, gv, C, lo, hi, simplex, iwork, d, work, out)
    for k in range(K):
        x_out[k] = out[k]


@numba.njit(cache=True)
def _bounded_scratch(K, lower, upper):
    """:func:`qp_scratch` with the rows' bounds in its ``lo`` and ``hi``."""
    scratch = qp_scratch(K)
    scratch[4][:] = lower
    scratch[5][:] = upper
    return scratch


@numba.njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def constrained_ls_rows(X0, B, C, lower, upper, simplex, X_out, n_threads):
    """Exact ``min x'Cx/2 - b'x`` per row under the box or the simplex.

    Parameters
    ----------
    X0 : numpy.ndarray, float64, shape (n_rows, K)
        Feasible rows to start the active-set solver from.
    B : numpy.ndarray, float64, shape (n_rows, K)
        Linear terms ``b``, one row per problem.
    C : numpy.ndarray, float64, shape (K, K)
        The shared positive semi-definite quadratic term.
    lower, upper : float
        Entry bounds (``upper`` unused for the simplex).
    simplex : bool
        Rows must also sum to one.
    X_out : numpy.ndarray, float64, shape (n_rows, K)
        Receives the solutions.
    n_threads : int
        Threads the rows are shared between.
    """
    n, K = X0.shape
    for t in numba.prange(n_threads):
        scratch = _bounded_scratch(K, lower, upper)
        for r in range(t * n // n_threads, (t + 1) * n // n_threads):
            _solve_row(X0[r], B[r], C, lower, upper, simplex, scratch, X_out[r])


@numba.njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def box_ls_p_rows(f, q_sum, V, M, C, C_inv, lower, upper, X0, X_out, n_threads):
    """The subspace ALS's P step: every SNP's box-constrained least-squares row.

    Row ``j``'s linear term is ``b_j = f_j q_sum + V_j M`` (the rank-r
    frequencies' product with Q, :class:`admixspec.ml.start.SubspaceStart`).
    Its solution without the bounds is ``b_j C_inv``; a row that leaves the box
    ``[lower, upper]`` is solved exactly from ``X0[j]`` instead. One parallel
    sweep over the rows, where NumPy made several serial ones.

    Parameters
    ----------
    f : numpy.ndarray, float64, shape (n_snps,)
    q_sum : numpy.ndarray, float64, shape (K,)
        Q's column sums.
    V : numpy.ndarray, float64, shape (n_snps, r)
    M : numpy.ndarray, float64, shape (r, K)
        ``(U S)^T Q``.
    C : numpy.ndarray, float64, shape (K, K)
        ``Q^T Q`` with its ridge.
    C_inv : numpy.ndarray, float64, shape (K, K)
        Its inverse, or an empty (0, 0) array when it has none: every row is
        then solved by the active-set method.
    lower, upper : float
    X0 : numpy.ndarray, float64, shape (n_snps, K)
        The previous P (feasible).
    X_out : numpy.ndarray, float64, shape (n_snps, K)
    n_threads : int
    """
    n, K = X0.shape
    r = V.shape[1]
    invertible = C_inv.shape[0] == K
    for t in numba.prange(n_threads):
        scratch = _bounded_scratch(K, lower, upper)
        b = np.empty(K)
        for j in range(t * n // n_threads, (t + 1) * n // n_threads):
            for k in range(K):
                s = f[j] * q_sum[k]
                for e in range(r):
                    s += V[j, e] * M[e, k]
                b[k] = s
            inside = invertible
            if invertible:
                for k in range(K):
                    s = 0.0
                    for e in range(K):
                        s += b[e] * C_inv[e, k]
                    X_out[j, k] = s
                    inside = inside and lower <= s <= upper
            if not inside:
                _solve_row(X0[j], b, C, lower, upper, False, scratch, X_out[j])
