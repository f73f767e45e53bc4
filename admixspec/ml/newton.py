"""ADMIXTURE's block relaxation: constrained Newton steps for P, then Q.

One application of the map ``(Q, P) -> (Q', P')`` (Alexander, Novembre &
Lange 2009) is

1. for every SNP ``j``, one Newton step on the SNP's log-likelihood
   ``L_j(p_j) = sum_i g_ij log f_ij + (2 - g_ij) log(1 - f_ij)`` from the old
   ``(Q, P)``, restricted to the box ``[P_MIN, P_MAX]^K``;
2. for every individual ``i``, one Newton step on its log-likelihood with the
   *new* P, restricted to the simplex (entries ``>= Q_MIN``).

Both blocks' gradients and Hessians are sums over the genotypes of
``w1 = g / f - (2 - g) / (1 - f)`` and ``w2 = g / f^2 + (2 - g) / (1 - f)^2``
(the first and minus the second derivative of the genotype's log-likelihood in
``f``). The kernel reads each SNP block of the int8 dosage matrix from memory
once: it sweeps the block (64 SNPs x all individuals, which stays in cache)
for the P statistics, solves the block's P steps, and sweeps it again with
the new P for the Q statistics, so one map costs one read of the genotypes
and two sweeps of arithmetic. The log-likelihood of the input ``(Q, P)``
comes out of the first sweep.

Each Newton step maximises the quadratic model ``g.d - d'Cd/2`` under the
row's constraints by a small primal active-set method (all rows at once,
inside the kernels): variables that leave the feasible set are fixed at their
bound, fixed variables whose multiplier has the wrong sign are released, and
the equality-constrained (simplex) or unconstrained (box) system on the free
variables is solved by Cholesky.
"""

from __future__ import annotations

import numba
import numpy as np

from .chunks import map_sum
from .likelihood import (
    BLOCK_SIZE,
    P_MAX,
    P_MIN,
    Q_MIN,
    _FAST,
    _LOG_EVERY,
    _block_frequencies,
    _block_snp_logliks,
    _flush_logs,
    _flush_snp_logs,
    _genotype_factor,
    _join_rows,
    _load_block,
    project_q,
    snp_blocks,
)

__all__ = ["BlockNewton"]

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
    K = x.shape[0]
    state = iwork[0]
    for k in range(K):
        state[k] = 0
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
def _step_bounds(x, floor, ceil, lo, hi):
    """Per-entry bounds of one step: ``_TO_BOUND`` of the way to ``floor``/``ceil``."""
    for k in range(x.shape[0]):
        lo[k] = x[k] - _TO_BOUND * (x[k] - floor)
        hi[k] = x[k] + _TO_BOUND * (ceil - x[k])


@numba.njit(cache=True, inline="always", error_model="numpy", fastmath=True)
def _genotype_weights(G, i, j0, L, s1, want_ll):
    """Derivative weights of the block's genotypes of individual ``i`` (see module notes).

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
        r1 = 1.0 / fj
        r2 = 1.0 / (1.0 - fj)
        a = gf * r1
        b = hf * r2
        ga[jj] = a
        w1[jj] = a - b
        w2[jj] = a * r1 + b * r2
        if want_ll:
            prod[jj] *= _genotype_factor(gf, fj) if observed else 1.0


@numba.njit(cache=True, error_model="numpy", fastmath=True)
def _p_statistics(G, Q, PT, j0, L, tri_r, tri_c, gP, HP, A, llj, s1):
    """Sweep one block at (Q, P): each SNP's gradient, curvature, EM numerator, log-likelihood.

    ``gP`` (K, B): gradient; ``HP`` (K(K+1)/2, B): minus the Hessian's upper
    triangle; ``A`` (K, B): ``sum_i q_ik g_ij / f_ij`` (the EM update's
    numerator); ``llj`` (B,): log-likelihood per SNP. ``s1`` is the (5, B)
    scratch of :func:`_genotype_weights`.
    """
    m, K = Q.shape
    f, w1, w2, prod, ga = s1[0], s1[1], s1[2], s1[3], s1[4]
    gP[:, :L] = 0.0
    HP[:, :L] = 0.0
    A[:, :L] = 0.0
    llj[:L] = 0.0
    since = 0
    for i in range(m):
        _block_frequencies(Q, i, PT, L, f)
        _genotype_weights(G, i, j0, L, s1, True)
        since += 1
        if since == _LOG_EVERY:
            _flush_snp_logs(prod, L, llj)
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
    _flush_snp_logs(prod, L, llj)


@numba.njit(cache=True, error_model="numpy")
def _p_newton_block(PT, gP, HP, L, tri_r, tri_c, PN, qp):
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
        _step_bounds(x, P_MIN, P_MAX, lo, hi)
        constrained_newton_step(x, gv, C, lo, hi, False, iwork, d, work, out)
        for k in range(K):
            PN[k, jj] = out[k]


@numba.njit(cache=True, error_model="numpy")
def _em_where_worse(PT, gP, A, L, ll_old, ll_new, PN):
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
def _q_statistics(G, Q, PT, j0, L, tri_r, tri_c, PP, stats, want_ll, s1):
    """Sweep one block at (Q, P): add each individual's gradient and curvature to ``stats``.

    ``stats`` (m, K + K(K+1)/2). Returns the block's log-likelihood when
    ``want_ll`` (else 0).
    """
    m, K = Q.shape
    nt = tri_r.shape[0]
    f, w1, w2, prod = s1[0], s1[1], s1[2], s1[3]
    for s in range(nt):
        for jj in range(L):
            PP[s, jj] = PT[tri_r[s], jj] * PT[tri_c[s], jj]
    ll = 0.0
    since = 0
    for i in range(m):
        _block_frequencies(Q, i, PT, L, f)
        _genotype_weights(G, i, j0, L, s1, want_ll)
        if want_ll:
            since += 1
            if since == _LOG_EVERY:
                ll += _flush_logs(prod, L)
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
    if want_ll:
        ll += _flush_logs(prod, L)
    return ll


def _qp_scratch(K):
    """Scratch arrays of one constrained Newton solve (see ``constrained_newton_step``)."""
    return (np.empty(K), np.empty(K), np.empty(K), np.empty(K), np.empty(K), np.empty(K),
            np.empty((K, K)), np.empty((2, K), dtype=np.int64), np.empty((K + 3, K)))


_qp_scratch_jit = numba.njit(cache=True)(_qp_scratch)


@numba.njit(**_FAST)
def _relax_kernel(G, P, Q, starts, lengths, tri_r, tri_c, P_out, Q_stats, update_p):
    """Block relaxation over every SNP block: the P step, then the Q statistics.

    With ``update_p``, each block's P rows take one box-constrained Newton
    step from the statistics of (Q, P); a row whose log-likelihood the step
    lowers (checked on the block while it is in cache) takes its EM update
    instead; the rows are written to ``P_out``. Then every individual's Q
    gradient and curvature are accumulated with the new P into the thread
    rows of ``Q_stats`` (T, m, K + K(K+1)/2). Returns the per-thread
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
        PP = np.zeros((nt, BLOCK_SIZE))
        gP = np.zeros((K, BLOCK_SIZE))
        A = np.zeros((K, BLOCK_SIZE))
        HP = np.zeros((nt, BLOCK_SIZE))
        ll_old = np.zeros(BLOCK_SIZE)
        ll_new = np.zeros(BLOCK_SIZE)
        s1 = np.ones((5, BLOCK_SIZE))
        qp = _qp_scratch_jit(K)
        ll = 0.0
        for blk in range(t, n_blocks, n_threads):
            j0 = starts[blk]
            L = lengths[blk]
            _load_block(P, j0, L, PT)
            if update_p:
                _p_statistics(G, Q, PT, j0, L, tri_r, tri_c, gP, HP, A, ll_old, s1)
                _p_newton_block(PT, gP, HP, L, tri_r, tri_c, PN, qp)
                _block_snp_logliks(G, Q, PN, j0, L, s1[0], s1[3], ll_new)
                em_rows[t] += _em_where_worse(PT, gP, A, L, ll_old, ll_new, PN)
                for jj in range(L):
                    ll += ll_old[jj]
                    for k in range(K):
                        P_out[j0 + jj, k] = PN[k, jj]
                ll += _q_statistics(G, Q, PN, j0, L, tri_r, tri_c, PP, Q_stats[t],
                                    False, s1)
            else:
                ll += _q_statistics(G, Q, PT, j0, L, tri_r, tri_c, PP, Q_stats[t],
                                    True, s1)
        ll_thread[t] = ll
    return ll_thread, em_rows


@numba.njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def _q_newton_kernel(Q, stats, tri_r, tri_c, frozen, Q_out, n_threads):
    """Simplex-constrained Newton step for every row of Q not ``frozen``.

    ``stats`` (m, K + K(K+1)/2) holds each row's gradient and the upper
    triangle of minus its Hessian (summed over threads).
    """
    m, K = Q.shape
    nt = tri_r.shape[0]
    for t in numba.prange(n_threads):
        x, gv, d, out, lo, hi, C, iwork, work = _qp_scratch_jit(K)
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
            _step_bounds(x, Q_MIN, 1.0, lo, hi)
            constrained_newton_step(x, gv, C, lo, hi, True, iwork, d, work, out)
            for k in range(K):
                Q_out[i, k] = out[k]


def _relax_chunk(G, P, Q, tri_r, tri_c, update_p):
    """The block-relaxation sweep of one chunk of SNPs (a ``GenotypeChunks.map`` task).

    Returns the chunk's new P rows (None unless ``update_p``) and, to be added
    over chunks (:func:`~admixspec.ml.chunks.map_sum`), the Q statistics
    (m, K + K(K+1)/2), the log-likelihood of the input (Q, P) on the chunk
    and the number of P rows that fell back to EM.
    """
    starts, lengths = snp_blocks(G.shape[1])
    T = numba.get_num_threads()
    stats = np.zeros((T, Q.shape[0], Q.shape[1] + len(tri_r)))
    P_new = np.empty_like(P) if update_p else P
    ll, em_rows = _relax_kernel(G, P, Q, starts, lengths, tri_r, tri_c, P_new, stats,
                                update_p)
    return (P_new if update_p else None), (stats.sum(axis=0), ll.sum(), int(em_rows.sum()))


class BlockNewton:
    """The block-relaxation map over one dosage matrix (see the module notes).

    Parameters
    ----------
    engine : admixspec.ml.likelihood.Engine
        Holds the dosage and its SNP blocks; its ``passes`` counter counts
        one pass per map (the genotypes are read from memory once).
    frozen_rows : numpy.ndarray, int64, optional
        Rows of Q held fixed (supervised fits).

    Attributes
    ----------
    sweeps : int
        Sweeps of arithmetic over the genotypes: when P is updated, three
        per map (the P statistics, the check of the P step, the Q
        statistics), each over a block while it is in cache; else one.
    em_rows : int
        P rows whose Newton step lowered their log-likelihood and which took
        their EM update instead.
    """

    def __init__(self, engine, frozen_rows=None):
        self.engine = engine
        self.tri_r, self.tri_c = triangle_pairs(engine.K)
        self.frozen = np.zeros(engine.m, dtype=np.bool_)
        if frozen_rows is not None:
            self.frozen[frozen_rows] = True
        self.sweeps = 0
        self.em_rows = 0

    def step(self, Q, P, *, update_p=True):
        """Apply the map once.

        Parameters
        ----------
        Q : numpy.ndarray, float64, shape (n_individuals, K)
        P : numpy.ndarray, float64, shape (n_snps, K)
        update_p : bool
            False holds P fixed (projection): only the Q step is taken.

        Returns
        -------
        Q_new : numpy.ndarray, float64, shape (n_individuals, K)
        P_new : numpy.ndarray, float64, shape (n_snps, K)
            ``P`` itself when ``update_p`` is false.
        loglik : float
            Log-likelihood of the *input* (Q, P).
        """
        eng = self.engine
        rows, (stats, ll, em_rows) = map_sum(eng.chunks, _relax_chunk, P, Q, self.tri_r,
                                             self.tri_c, update_p)
        P_new = _join_rows(rows, P) if update_p else P
        self.em_rows += int(em_rows)
        eng.passes += 1
        self.sweeps += 3 if update_p else 1
        return self.q_step(Q, stats), P_new, float(ll)

    def q_step(self, Q, stats):
        """The Q half of the map: a simplex-constrained Newton step per unfrozen row.

        ``stats`` (n_individuals, K + K(K+1)/2) holds each row's gradient and
        the upper triangle of minus its Hessian, summed over SNPs.
        """
        Q_new = np.empty_like(Q)
        _q_newton_kernel(Q, stats, self.tri_r, self.tri_c, self.frozen, Q_new,
                         numba.get_num_threads())
        project_q(Q_new)
        Q_new[self.frozen] = Q[self.frozen]
        return Q_new
