"""Numba kernels of ADMIXTURE's block relaxation: constrained Newton steps per row.

Called by :class:`admixspec.ml.newton.BlockNewton`; the GPU back end compiles
the per-row solve (:func:`constrained_newton_step` and its helpers) for the
device from this very source.
"""

from __future__ import annotations

import numba
import numpy as np

from ...core.chunks import BLOCK_SIZE
from ...core.parameters import P_MAX, P_MIN, Q_MIN
from . import FAST
from .likelihood import (
    LOG_EVERY,
    block_frequencies,
    flush_snp_logs,
    genotype_factor,
    load_block,
)

# Relative ridge added to each Hessian before factoring: keeps a component
# that no genotype informs (e.g. a frequency where every individual has
# Q ~ 0 for that component) from making the system singular.
_RIDGE = 1e-9
# A step may cover at most this fraction of the distance from each entry to
# its bound. The log-likelihood is far from quadratic near the bounds: an
# entry whose optimum lies just inside one (a frequency near 1) is thrown
# onto it by a full Newton step, and every genotype that disagrees then
# costs log(1e-5). Entries that belong on a bound reach it geometrically.
_TO_BOUND = 0.9
# Active-set iterations per row: each adds or releases at least one bound.
_MAX_ACTIVE_SET = 3


def triangle_pairs(K: int):
    """Row and column indices (int64 arrays) of the upper triangle of a K x K matrix."""
    rows, cols = np.triu_indices(K)
    return rows.astype(np.int64), cols.astype(np.int64)


# --------------------------------------------------------------------------
# the per-row constrained Newton step
# --------------------------------------------------------------------------
@numba.njit(cache=True, error_model="numpy")
def _cholesky_solve(M, n, idx, b, out):
    """Solve ``M[idx][:, idx] y = b[:n]`` in place of a Cholesky factor of M's submatrix.

    ``M`` (K, K) is overwritten in its ``idx`` rows/columns by the lower factor;
    ``out[:n]`` receives ``y``. Returns False when the matrix is not positive.
    """
    for a in range(n):
        ia = idx[a]
        for c in range(a + 1):
            ic = idx[c]
            s = M[ia, ic]
            for e in range(c):
                s -= M[ia, idx[e]] * M[ic, idx[e]]
            if a == c:
                if s <= 0.0:
                    return False
                M[ia, ia] = np.sqrt(s)
            else:
                M[ia, ic] = s / M[ic, ic]
    _substitute(M, n, idx, b, out)
    return True


@numba.njit(cache=True, error_model="numpy")
def _substitute(M, n, idx, b, out):
    """``out[:n] = y`` solving ``L L^T y = b[:n]`` with the lower factor ``L`` held in
    ``M``'s ``idx`` rows/columns (as :func:`_cholesky_solve` leaves it)."""
    for a in range(n):
        s = b[a]
        for e in range(a):
            s -= M[idx[a], idx[e]] * out[e]
        out[a] = s / M[idx[a], idx[a]]
    for a in range(n - 1, -1, -1):
        s = out[a]
        for e in range(a + 1, n):
            s -= M[idx[e], idx[a]] * out[e]
        out[a] = s / M[idx[a], idx[a]]


@numba.njit(cache=True, error_model="numpy")
def _free_step(x, g, C, lo, hi, simplex, state, idx, d, work):
    """Maximise ``g.d - d'Cd/2`` over the free variables, the fixed ones at their bound.

    ``state[k]`` is 0 (free), -1 (at ``lo[k]``) or +1 (at ``hi[k]``). Writes ``d``;
    returns the simplex multiplier (0 for a box). ``idx`` (K,) int64 and
    ``work`` (K + 3, K) float64 are scratch.
    """
    K = x.shape[0]
    M = work[:K]
    b = work[K]
    u = work[K + 1]
    v = work[K + 2]
    n = 0
    fixed_sum = 0.0
    for k in range(K):
        if state[k] < 0:
            d[k] = lo[k] - x[k]
            fixed_sum += d[k]
        elif state[k] > 0:
            d[k] = hi[k] - x[k]
            fixed_sum += d[k]
        else:
            idx[n] = k
            n += 1
    if n == 0:
        return 0.0
    trace = 0.0
    for a in range(n):
        trace += C[idx[a], idx[a]]
    ridge = _RIDGE * trace / n + 1e-300
    for a in range(n):
        ka = idx[a]
        s = g[ka]
        for k in range(K):
            if state[k] != 0:
                s -= C[ka, k] * d[k]
        b[a] = s
        for c in range(n):
            M[ka, idx[c]] = C[ka, idx[c]]
        M[ka, ka] += ridge
    if not _cholesky_solve(M, n, idx, b, u):
        for a in range(n):
            d[idx[a]] = 0.0
        return 0.0
    nu = 0.0
    if simplex:
        # d_F = u - nu v with C_FF v = 1 and sum(d_F) = -fixed_sum
        for a in range(n):
            b[a] = 1.0
        # the factor is in M: solve again by substitution only
        _substitute(M, n, idx, b, v)
        su = 0.0
        sv = 0.0
        for a in range(n):
            su += u[a]
            sv += v[a]
        nu = (su + fixed_sum) / sv
    for a in range(n):
        d[idx[a]] = u[a] - nu * v[a] if simplex else u[a]
    return nu


@numba.njit(cache=True, error_model="numpy")
def constrained_newton_step(x, g, C, lo, hi, simplex, iwork, d, work, out):
    """One Newton step of a concave row objective under box or simplex constraints.

    Parameters
    ----------
    x : numpy.ndarray, float64, shape (K,)
        Current row (feasible).
    g : numpy.ndarray, float64, shape (K,)
        Gradient of the objective at ``x``.
    C : numpy.ndarray, float64, shape (K, K)
        Minus its Hessian (positive semi-definite).
    lo, hi : numpy.ndarray, float64, shape (K,)
        Bounds of the entries (``hi`` is ignored for the simplex).
    simplex : bool
        Whether the row must also keep its sum (``sum(d) = 0``).
    iwork : numpy.ndarray, int64, shape (2, K)
        Scratch: the active set and the free indices.
    d : numpy.ndarray, float64, shape (K,)
        Scratch: the step.
    work : numpy.ndarray, float64, shape (K + 3, K)
        Scratch.
    out : numpy.ndarray, float64, shape (K,)
        Receives the new row, inside the bounds.
    """
    for k in range(x.shape[0]):
        iwork[0, k] = 0
    active_set_step(x, g, C, lo, hi, simplex, iwork, d, work, out)


@numba.njit(cache=True, error_model="numpy")
def active_set_step(x, g, C, lo, hi, simplex, iwork, d, work, out):
    """:func:`constrained_newton_step` from the active set in ``iwork[0]``.

    ``iwork[0, k]`` is 0 (free), -1 (held at ``lo[k]``) or +1 (held at
    ``hi[k]``) on entry: a guess (e.g. the bounds that held the previous
    solution) that the active-set iterations then correct.
    """
    K = x.shape[0]
    state = iwork[0]
    for _ in range(K + _MAX_ACTIVE_SET):
        nu = _free_step(x, g, C, lo, hi, simplex, state, iwork[1], d, work)
        added = False
        for k in range(K):
            if state[k] == 0:
                if x[k] + d[k] < lo[k]:
                    state[k] = -1
                    added = True
                elif not simplex and x[k] + d[k] > hi[k]:
                    state[k] = 1
                    added = True
        if added:
            continue
        # release the bound whose multiplier has the wrong sign most strongly
        worst = -1
        worst_r = 0.0
        for k in range(K):
            if state[k] != 0:
                r = g[k] - nu
                for e in range(K):
                    r -= C[k, e] * d[e]
                r = r * state[k]  # > 0 when the bound holds the variable back
                if r < worst_r:
                    worst_r = r
                    worst = k
        if worst < 0:
            break
        state[worst] = 0
    total = 0.0
    for k in range(K):
        v = x[k] + d[k]
        v = max(v, lo[k])
        if not simplex:
            v = min(v, hi[k])
        out[k] = v
        total += v
    if simplex:
        for k in range(K):
            out[k] /= total


@numba.njit(cache=True, inline="always")
def step_bounds(x, floor, ceil, lo, hi):
    """Per-entry bounds of one step: ``_TO_BOUND`` of the way to ``floor``/``ceil``."""
    for k in range(x.shape[0]):
        lo[k] = x[k] - _TO_BOUND * (x[k] - floor)
        hi[k] = x[k] + _TO_BOUND * (ceil - x[k])


@numba.njit(cache=True, inline="always", error_model="numpy", fastmath=True)
def genotype_weights(G, i, j0, L, s1, want_ll):
    """Derivative weights of the block's genotypes of individual ``i`` (module notes).

    ``s1`` rows: f (input), then ``w1 = g/f - (2-g)/(1-f)``, ``w2 = g/f^2 +
    (2-g)/(1-f)^2``, the likelihood-factor products (multiplied in when
    ``want_ll``) and ``g/f``; weights are 0 for a missing genotype.
    """
    f, w1, w2, prod, ga = s1[0], s1[1], s1[2], s1[3], s1[4]
    for jj in range(L):
        g = G[i, j0 + jj]
        observed = g >= 0
        gf = np.float64(g) if observed else 0.0
        hf = 2.0 - gf if observed else 0.0
        fj = f[jj]
        # one division, not two: the sweep's slowest instruction
        r = 1.0 / (fj * (1.0 - fj))
        r1 = (1.0 - fj) * r
        r2 = fj * r
        a = gf * r1
        b = hf * r2
        ga[jj] = a
        w1[jj] = a - b
        w2[jj] = a * r1 + b * r2
        if want_ll:
            prod[jj] *= genotype_factor(gf, fj) if observed else 1.0


@numba.njit(cache=True, error_model="numpy", fastmath=True)
def p_statistics(G, Q, PT, j0, L, tri_r, tri_c, gP, HP, A, llj, s1):
    """Sweep one block at (Q, P): each SNP's gradient, curvature, EM numerator, loglik.

    ``gP`` (K, B): gradient; ``HP`` (K(K+1)/2, B): minus the Hessian's upper
    triangle; ``A`` (K, B): ``sum_i q_ik g_ij / f_ij`` (the EM update's
    numerator); ``llj`` (B,): log-likelihood per SNP. ``s1`` is the (5, B)
    scratch of :func:`genotype_weights`.
    """
    m, K = Q.shape
    f, w1, w2, prod, ga = s1[0], s1[1], s1[2], s1[3], s1[4]
    gP[:, :L] = 0.0
    HP[:, :L] = 0.0
    A[:, :L] = 0.0
    llj[:L] = 0.0
    since = 0
    for i in range(m):
        block_frequencies(Q, i, PT, L, f)
        genotype_weights(G, i, j0, L, s1, True)
        since += 1
        if since == LOG_EVERY:
            flush_snp_logs(prod, L, llj)
            since = 0
        for k in range(K):
            q = Q[i, k]
            for jj in range(L):
                gP[k, jj] += q * w1[jj]
                A[k, jj] += q * ga[jj]
        for s in range(tri_r.shape[0]):
            qq = Q[i, tri_r[s]] * Q[i, tri_c[s]]
            for jj in range(L):
                HP[s, jj] += qq * w2[jj]
    flush_snp_logs(prod, L, llj)


@numba.njit(cache=True, error_model="numpy")
def p_newton_block(PT, gP, HP, L, tri_r, tri_c, PN, qp):
    """Box-constrained Newton step of each SNP row of the block into ``PN``."""
    K = PT.shape[0]
    x, gv, d, out, lo, hi, C, iwork, work = qp
    for jj in range(L):
        for k in range(K):
            x[k] = PT[k, jj]
            gv[k] = gP[k, jj]
        for s in range(tri_r.shape[0]):
            C[tri_r[s], tri_c[s]] = HP[s, jj]
            C[tri_c[s], tri_r[s]] = HP[s, jj]
        step_bounds(x, P_MIN, P_MAX, lo, hi)
        constrained_newton_step(x, gv, C, lo, hi, False, iwork, d, work, out)
        for k in range(K):
            PN[k, jj] = out[k]


@numba.njit(cache=True, error_model="numpy")
def em_where_worse(PT, gP, A, L, ll_old, ll_new, PN):
    """Replace the Newton row of every SNP whose log-likelihood fell by its EM update.

    The EM update ``p A / (p A + (1 - p) B)`` with ``B = A - gradient`` never
    lowers the SNP's log-likelihood. Returns how many rows were replaced.
    """
    n_bad = 0
    for jj in range(L):
        if ll_new[jj] >= ll_old[jj]:
            continue
        n_bad += 1
        for k in range(PT.shape[0]):
            p = PT[k, jj]
            num = p * A[k, jj]
            den = num + (1.0 - p) * (A[k, jj] - gP[k, jj])
            if den > 0.0:
                p = num / den
            PN[k, jj] = min(max(p, P_MIN), P_MAX)
    return n_bad


@numba.njit(cache=True, error_model="numpy", fastmath=True)
def q_statistics(G, Q, PT, j0, L, tri_r, tri_c, PP, stats, s1, llj):
    """Sweep one block at (Q, P): add each individual's gradient, curvature to ``stats``.

    ``stats`` (m, K + K(K+1)/2); ``llj[:L]`` receives each SNP's
    log-likelihood at (Q, P).
    """
    m, K = Q.shape
    nt = tri_r.shape[0]
    f, w1, w2, prod = s1[0], s1[1], s1[2], s1[3]
    for s in range(nt):
        for jj in range(L):
            PP[s, jj] = PT[tri_r[s], jj] * PT[tri_c[s], jj]
    llj[:L] = 0.0
    since = 0
    for i in range(m):
        block_frequencies(Q, i, PT, L, f)
        genotype_weights(G, i, j0, L, s1, True)
        since += 1
        if since == LOG_EVERY:
            flush_snp_logs(prod, L, llj)
            since = 0
        for k in range(K):
            acc = 0.0
            for jj in range(L):
                acc += PT[k, jj] * w1[jj]
            stats[i, k] += acc
        for s in range(nt):
            acc = 0.0
            for jj in range(L):
                acc += PP[s, jj] * w2[jj]
            stats[i, K + s] += acc
    flush_snp_logs(prod, L, llj)


@numba.njit(cache=True, error_model="numpy")
def restate_q_statistics(G, Q, newton, PN, j0, L, ll_old, ll_new, tri_r, tri_c, stats,
                         cols):
    """Move the Q statistics of the SNPs that fell back to EM onto their EM rows.

    :func:`q_statistics` swept the block with every SNP's Newton row
    (``newton``, (K, >= L)) and measured the rows on the way, which saves a
    sweep of the block; the rows that lowered their SNP's log-likelihood
    (``ll_new`` below ``ll_old``, as in :func:`em_where_worse`) now hold
    their EM update in ``PN``. For those SNPs alone (few: 0-4% of a map's)
    each individual's terms at the Newton row are taken out of ``stats`` and
    the terms at the EM row put in. ``cols`` (>= L,) int64 is scratch.
    """
    n_bad = 0
    for jj in range(L):
        if not ll_new[jj] >= ll_old[jj]:
            cols[n_bad] = jj
            n_bad += 1
    m, K = Q.shape
    for i in range(m):
        for c in range(n_bad):
            jj = cols[c]
            g = G[i, j0 + jj]
            if g < 0:
                continue
            for row, sign in ((newton, -1.0), (PN, 1.0)):
                fj = 0.0
                for k in range(K):
                    fj += Q[i, k] * row[k, jj]
                a = g / fj
                b = (2.0 - g) / (1.0 - fj)
                w1 = sign * (a - b)
                w2 = sign * (a / fj + b / (1.0 - fj))
                for k in range(K):
                    stats[i, k] += row[k, jj] * w1
                for s in range(tri_r.shape[0]):
                    stats[i, K + s] += row[tri_r[s], jj] * row[tri_c[s], jj] * w2


def _qp_scratch(K):
    """Scratch arrays of one constrained Newton solve (``constrained_newton_step``)."""
    return (np.empty(K), np.empty(K), np.empty(K), np.empty(K), np.empty(K), np.empty(K),
            np.empty((K, K)), np.empty((2, K), dtype=np.int64), np.empty((K + 3, K)))


qp_scratch = numba.njit(cache=True)(_qp_scratch)


@numba.njit(**FAST)
def relax_kernel(G, P, Q, starts, lengths, tri_r, tri_c, P_out, Q_stats, update_p):
    """Block relaxation over every SNP block: the P step, then the Q statistics.

    With ``update_p``, each block's P rows take one box-constrained Newton
    step from the statistics of (Q, P); then every individual's Q gradient
    and curvature are accumulated with the new P into the thread rows of
    ``Q_stats`` (T, m, K + K(K+1)/2), in the same sweep that measures each new
    row; a row whose log-likelihood the step lowers takes its EM update
    instead, its Q statistics moved with it (:func:`restate_q_statistics`);
    the rows are written to ``P_out``. Returns the per-thread
    log-likelihood of the input (Q, P) and the per-thread count of P rows
    that fell back to EM.
    """
    n_threads = Q_stats.shape[0]
    m, K = Q.shape
    nt = tri_r.shape[0]
    n_blocks = starts.shape[0]
    ll_thread = np.zeros(n_threads)
    em_rows = np.zeros(n_threads, dtype=np.int64)
    for t in numba.prange(n_threads):
        PT = np.zeros((K, BLOCK_SIZE))
        PN = np.zeros((K, BLOCK_SIZE))
        newton = np.zeros((K, BLOCK_SIZE))
        cols = np.zeros(BLOCK_SIZE, dtype=np.int64)
        PP = np.zeros((nt, BLOCK_SIZE))
        gP = np.zeros((K, BLOCK_SIZE))
        A = np.zeros((K, BLOCK_SIZE))
        HP = np.zeros((nt, BLOCK_SIZE))
        ll_old = np.zeros(BLOCK_SIZE)
        ll_new = np.zeros(BLOCK_SIZE)
        s1 = np.ones((5, BLOCK_SIZE))
        qp = qp_scratch(K)
        ll = 0.0
        for blk in range(t, n_blocks, n_threads):
            j0 = starts[blk]
            L = lengths[blk]
            load_block(P, j0, L, PT)
            if update_p:
                p_statistics(G, Q, PT, j0, L, tri_r, tri_c, gP, HP, A, ll_old, s1)
                p_newton_block(PT, gP, HP, L, tri_r, tri_c, PN, qp)
                q_statistics(G, Q, PN, j0, L, tri_r, tri_c, PP, Q_stats[t], s1, ll_new)
                newton[:, :L] = PN[:, :L]
                n_bad = em_where_worse(PT, gP, A, L, ll_old, ll_new, PN)
                if n_bad > 0:
                    restate_q_statistics(G, Q, newton, PN, j0, L, ll_old, ll_new, tri_r,
                                         tri_c, Q_stats[t], cols)
                em_rows[t] += n_bad
                for jj in range(L):
                    ll += ll_old[jj]
                    for k in range(K):
                        P_out[j0 + jj, k] = PN[k, jj]
            else:
                q_statistics(G, Q, PT, j0, L, tri_r, tri_c, PP, Q_stats[t], s1, ll_old)
                for jj in range(L):
                    ll += ll_old[jj]
        ll_thread[t] = ll
    return ll_thread, em_rows


@numba.njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def q_newton_kernel(Q, stats, tri_r, tri_c, frozen, Q_out, n_threads):
    """Simplex-constrained Newton step for every row of Q not ``frozen``.

    ``stats`` (m, K + K(K+1)/2) holds each row's gradient and the upper
    triangle of minus its Hessian (summed over threads).
    """
    m, K = Q.shape
    nt = tri_r.shape[0]
    for t in numba.prange(n_threads):
        x, gv, d, out, lo, hi, C, iwork, work = qp_scratch(K)
        for i in range(t, m, n_threads):
            if frozen[i]:
                for k in range(K):
                    Q_out[i, k] = Q[i, k]
                continue
            for k in range(K):
                x[k] = Q[i, k]
                gv[k] = stats[i, k]
            for s in range(nt):
                C[tri_r[s], tri_c[s]] = stats[i, K + s]
                C[tri_c[s], tri_r[s]] = stats[i, K + s]
            step_bounds(x, Q_MIN, 1.0, lo, hi)
            constrained_newton_step(x, gv, C, lo, hi, True, iwork, d, work, out)
            for k in range(K):
                Q_out[i, k] = out[k]
