"""Numba kernel of the ML start's exact constrained least squares per row.

Called by :func:`admixspec.ml.start.solve_rows` for the rows whose
unconstrained solution leaves the bounds; each row is one small quadratic
programme solved by the block-relaxation map's primal active-set method
(:func:`admixspec.ml._kernels.newton.active_set_step`), warm-started at the
bounds that held the row's previous solution.
"""

from __future__ import annotations

import numba

from .newton import active_set_step, qp_scratch

#: Distance from a bound within which a previous solution's entry counts as on it.
AT_BOUND = 1e-9


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
        x, gv, d, out, lo, hi, Cw, iwork, work = qp_scratch(K)
        for k in range(K):
            lo[k] = lower
            hi[k] = upper
        for r in range(t, n, n_threads):
            for k in range(K):
                x[k] = X0[r, k]
                # warm start: the bounds that held the previous solution
                iwork[0, k] = (-1 if x[k] - lower <= AT_BOUND else
                               1 if not simplex and upper - x[k] <= AT_BOUND else 0)
            for k in range(K):
                s = B[r, k]
                for e in range(K):
                    s -= C[k, e] * x[e]
                gv[k] = s
            active_set_step(x, gv, C, lo, hi, simplex, iwork, d, work, out)
            for k in range(K):
                X_out[r, k] = out[k]
