"""Numba kernels of the ML start's exact constrained least squares per row.

Called by :mod:`admixspec.ml.start`: :func:`constrained_ls_rows` for the rows
of a Q step whose unconstrained solution leaves the simplex, and
:func:`box_ls_p_rows` for a whole P step. Each row outside its bounds is one
small quadratic programme solved by a primal active-set method, warm-started
at the bounds that held the row's previous solution: the block-relaxation
map's (:func:`admixspec.ml._kernels.newton.active_set_step`), or, in the P
step, where every row shares one matrix, :func:`_box_row`, which reuses the
inverse of each free set's submatrix across the rows.
"""

from __future__ import annotations

import numba
import numpy as np

from .newton import (
    _MAX_ACTIVE_SET,
    _cholesky_solve,
    _substitute,
    active_set_step,
    qp_scratch,
)

#: Distance from a bound within which a previous solution's entry counts as on it.
AT_BOUND = 1e-9
#: Largest K whose free sets' inverses the P step keeps (2^K of K x K per
#: thread: 0.8 MB at 10); above it every row is solved by factoring.
MAX_CACHED_K = 10
#: :func:`_box_row`'s record of a free set: inverse not computed, computed, singular.
_UNKNOWN, _INVERTED, _SINGULAR = 0, 1, 2


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


@numba.njit(cache=True, error_model="numpy")
def _invert_free(C, free, factor, inverse):
    """``inverse[F, F] = C[F, F]^-1`` (zero elsewhere) for the free set ``F``.

    ``free`` is a bit mask of the free entries; ``factor`` (K, K) is scratch
    for the Cholesky factor (the Newton step's
    :func:`~admixspec.ml._kernels.newton._cholesky_solve`). Returns False when
    ``C[F, F]`` is not positive definite.
    """
    K = C.shape[0]
    idx = np.empty(K, np.int64)
    n = 0
    for k in range(K):
        if free >> k & 1:
            idx[n] = k
            n += 1
    factor[:, :] = C
    unit = np.zeros(K)
    column = np.empty(K)
    inverse[:, :] = 0.0
    for c in range(n):
        unit[:] = 0.0
        unit[c] = 1.0
        if c == 0:
            if not _cholesky_solve(factor, n, idx, unit, column):
                return False
        else:  # the factor is in place: substitution only
            _substitute(factor, n, idx, unit, column)
        for a in range(n):
            inverse[idx[a], idx[c]] = column[a]
    return True


@numba.njit(cache=True, error_model="numpy", inline="always")
def _wrong_bound(b, C, x, free, low):
    """The held entry whose multiplier is most wrongly signed, or -1 when none is.

    An entry's multiplier is the gradient ``b - C x`` it is held against: it
    should push a low entry down and a high one up.
    """
    worst = -1
    most = 0.0
    for k in range(x.shape[0]):
        if not free >> k & 1:
            push = b[k]
            for e in range(x.shape[0]):
                push -= C[k, e] * x[e]
            if low >> k & 1:
                push = -push
            if push < most:
                most = push
                worst = k
    return worst


@numba.njit(cache=True, error_model="numpy")
def _box_row(x0, b, C, lower, upper, inverses, known, factor, x, rhs, x_out):
    """``argmin x'Cx/2 - b'x`` over the box ``[lower, upper]^K``, from ``x0``'s bounds.

    The primal active-set method of
    :func:`~admixspec.ml._kernels.newton.active_set_step` with the bounds
    held as bit masks: the free entries solve ``C_FF x_F = b_F - C_FA x_A``
    with the free set's inverse from ``inverses`` (computed on first use,
    ``known`` records which). Returns False, writing nothing, when a free
    set's submatrix is singular (the caller then factors the row's own
    system).
    """
    K = x0.shape[0]
    full = (1 << K) - 1
    low = 0
    high = 0
    for k in range(K):
        if x0[k] - lower <= AT_BOUND:
            low |= 1 << k
        elif upper - x0[k] <= AT_BOUND:
            high |= 1 << k
    for _ in range(K + _MAX_ACTIVE_SET):  # as many passes as active_set_step
        free = full & ~(low | high)
        if known[free] == _UNKNOWN:
            known[free] = (_INVERTED if _invert_free(C, free, factor, inverses[free])
                           else _SINGULAR)
        if known[free] == _SINGULAR:
            return False
        for k in range(K):
            x[k] = lower if low >> k & 1 else upper if high >> k & 1 else 0.0
        for c in range(K):
            r = b[c]
            if free >> c & 1:
                for e in range(K):
                    if not free >> e & 1:
                        r -= C[c, e] * x[e]
            rhs[c] = r
        inverse = inverses[free]
        for a in range(K):
            if free >> a & 1:
                s = 0.0
                for c in range(K):
                    s += inverse[a, c] * rhs[c]
                x[a] = s
        held = low | high
        for k in range(K):
            if free >> k & 1:
                if x[k] < lower:
                    low |= 1 << k
                elif x[k] > upper:
                    high |= 1 << k
        if low | high != held:  # a free entry left the box: hold it there
            continue
        worst = _wrong_bound(b, C, x, free, low)
        if worst < 0:
            break
        low &= ~(1 << worst)
        high &= ~(1 << worst)
    for k in range(K):
        x_out[k] = min(max(x[k], lower), upper)
    return True


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
    cached = K <= MAX_CACHED_K
    sets = 1 << K if cached else 1
    for t in numba.prange(n_threads):
        scratch = _bounded_scratch(K, lower, upper)
        b = np.empty(K)
        x = np.empty(K)
        rhs = np.empty(K)
        factor = np.empty((K, K))
        inverses = np.empty((sets, K, K))
        known = np.zeros(sets, np.int8)
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
            if not inside and not (cached and _box_row(X0[j], b, C, lower, upper,
                                                       inverses, known, factor, x,
                                                       rhs, X_out[j])):
                _solve_row(X0[j], b, C, lower, upper, False, scratch, X_out[j])
