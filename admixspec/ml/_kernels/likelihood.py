"""Numba kernels of ADMIXTURE's likelihood, its EM map and cross-validation deviance.

Called by :class:`admixspec.ml.likelihood.Engine` and :mod:`admixspec.ml.crossval`;
they read an int8 dosage block by block (:data:`admixspec.core.chunks.BLOCK_SIZE`
SNPs) and never form an individuals x SNPs float array.
"""

from __future__ import annotations

import numba
import numpy as np

from ...core._binomial import LOG_EVERY, genotype_factor
from ...core.chunks import BLOCK_SIZE
from ...core.parameters import P_MAX, P_MIN
from . import FAST


@numba.njit(cache=True, inline="always", error_model="numpy", fastmath=True)
def block_frequencies(Q, i, PT, L, f):
    """f[jj] = sum_k Q[i, k] PT[k, jj] for the block's L SNPs."""
    K = Q.shape[1]
    for jj in range(L):
        f[jj] = 0.0
    for k in range(K):
        q = Q[i, k]
        for jj in range(L):
            f[jj] += q * PT[k, jj]


@numba.njit(cache=True, inline="always", error_model="numpy", fastmath=True)
def load_block(P, j0, L, PT):
    """PT[k, jj] = P[j0 + jj, k]: the block's frequencies, SNPs contiguous."""
    for k in range(P.shape[1]):
        for jj in range(L):
            PT[k, jj] = P[j0 + jj, k]


@numba.njit(cache=True, inline="always", error_model="numpy", fastmath=True)
def flush_logs(prod, L):
    """Sum of log(prod[:L]); resets the products to 1."""
    total = 0.0
    for jj in range(L):
        total += np.log(prod[jj])
        prod[jj] = 1.0
    return total


@numba.njit(cache=True, inline="always", error_model="numpy", fastmath=True)
def flush_snp_logs(prod, L, llj):
    """llj[jj] += log(prod[jj]) for the block's SNPs; resets the products to 1."""
    for jj in range(L):
        llj[jj] += np.log(prod[jj])
        prod[jj] = 1.0


@numba.njit(cache=True, error_model="numpy", fastmath=True)
def block_snp_logliks(G, Q, PT, j0, L, f, prod, llj):
    """Log-likelihood of each SNP of a block at (Q, P) into ``llj[:L]``.

    ``PT`` (K, >= L) is the block's P transposed (:func:`load_block`); ``f`` and
    ``prod`` are scratch of length >= L, ``prod`` all ones on entry and on exit.
    Products of likelihood factors are logged every ``LOG_EVERY`` individuals.
    """
    m = Q.shape[0]
    llj[:L] = 0.0
    since = 0
    for i in range(m):
        block_frequencies(Q, i, PT, L, f)
        for jj in range(L):
            g = G[i, j0 + jj]
            prod[jj] *= genotype_factor(np.float64(g), f[jj]) if g >= 0 else 1.0
        since += 1
        if since == LOG_EVERY:
            flush_snp_logs(prod, L, llj)
            since = 0
    flush_snp_logs(prod, L, llj)


@numba.njit(**FAST)
def em_kernel(G, P, Q, starts, lengths, P_out, Q_acc, n_obs, update_p, want_ll):
    """One EM sweep over the listed SNP blocks.

    Writes the EM update of ``P`` for the swept SNPs into ``P_out`` (if
    ``update_p``), adds ``sum_j p_jk a_ij + (1 - p_jk) b_ij`` into the thread
    rows of ``Q_acc`` (T, m, K) and observed counts into ``n_obs`` (T, m);
    returns the per-thread log-likelihood of (Q, P) on the swept SNPs.
    """
    n_threads = Q_acc.shape[0]
    m, K = Q.shape
    n_blocks = starts.shape[0]
    ll_thread = np.zeros(n_threads)
    for t in numba.prange(n_threads):
        PT = np.zeros((K, BLOCK_SIZE))
        A = np.zeros((K, BLOCK_SIZE))
        B = np.zeros((K, BLOCK_SIZE))
        f = np.empty(BLOCK_SIZE)
        a = np.empty(BLOCK_SIZE)
        bb = np.empty(BLOCK_SIZE)
        prod = np.ones(BLOCK_SIZE)
        ll = 0.0
        for b in range(t, n_blocks, n_threads):
            j0 = starts[b]
            L = lengths[b]
            load_block(P, j0, L, PT)
            for k in range(K):
                for jj in range(L):
                    A[k, jj] = 0.0
                    B[k, jj] = 0.0
            since = 0
            for i in range(m):
                block_frequencies(Q, i, PT, L, f)
                count = 0
                b_sum = 0.0
                for jj in range(L):
                    g = G[i, j0 + jj]
                    observed = g >= 0
                    gf = np.float64(g) if observed else 0.0
                    hf = 2.0 - gf if observed else 0.0
                    fj = f[jj]
                    r = 1.0 / (fj * (1.0 - fj))
                    a[jj] = gf * (1.0 - fj) * r  # g / f
                    bb[jj] = hf * fj * r  # (2 - g) / (1 - f)
                    b_sum += bb[jj]
                    count += 1 if observed else 0
                    if want_ll:  # loop-invariant: LLVM unswitches it
                        prod[jj] *= genotype_factor(gf, fj) if observed else 1.0
                since += 1
                if want_ll and since == LOG_EVERY:
                    ll += flush_logs(prod, L)
                    since = 0
                for k in range(K):
                    acc = 0.0
                    for jj in range(L):
                        acc += PT[k, jj] * (a[jj] - bb[jj])
                    Q_acc[t, i, k] += acc + b_sum
                n_obs[t, i] += count
                if update_p:
                    for k in range(K):
                        q = Q[i, k]
                        for jj in range(L):
                            A[k, jj] += q * a[jj]
                            B[k, jj] += q * bb[jj]
            if want_ll and since > 0:
                ll += flush_logs(prod, L)
            if update_p:
                for k in range(K):
                    for jj in range(L):
                        p = PT[k, jj]
                        num = p * A[k, jj]
                        den = num + (1.0 - p) * B[k, jj]
                        if den > 0.0:
                            p = num / den
                        P_out[j0 + jj, k] = min(max(p, P_MIN), P_MAX)
        ll_thread[t] = ll
    return ll_thread


@numba.njit(**FAST)
def loglik_kernel(G, P, Q, starts, lengths, n_threads):
    """Per-thread log-likelihood sums over the listed SNP blocks."""
    K = Q.shape[1]
    n_blocks = starts.shape[0]
    ll_thread = np.zeros(n_threads)
    for t in numba.prange(n_threads):
        PT = np.zeros((K, BLOCK_SIZE))
        f = np.empty(BLOCK_SIZE)
        prod = np.ones(BLOCK_SIZE)
        llj = np.zeros(BLOCK_SIZE)
        ll = 0.0
        for b in range(t, n_blocks, n_threads):
            j0 = starts[b]
            L = lengths[b]
            load_block(P, j0, L, PT)
            block_snp_logliks(G, Q, PT, j0, L, f, prod, llj)
            for jj in range(L):
                ll += llj[jj]
        ll_thread[t] = ll
    return ll_thread


@numba.njit(cache=True, inline="always")
def fold_of(i, j, n, seed, n_folds):
    """Pseudo-random fold of entry (i, j): splitmix64 of its flat index."""
    z = np.uint64(i) * np.uint64(n) + np.uint64(j) + np.uint64(seed)
    z = (z + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & np.uint64(
        0xFFFFFFFFFFFFFFFF
    )
    z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & np.uint64(
        0xFFFFFFFFFFFFFFFF
    )
    z = z ^ (z >> np.uint64(31))
    return np.int64(z % np.uint64(n_folds))


@numba.njit(parallel=True, cache=True, nogil=True)
def mask_fold_kernel(G, out, fold, n_folds, seed):
    """Copy ``G`` into ``out`` with the entries of ``fold`` set missing."""
    m, n = G.shape
    for i in numba.prange(m):
        for j in range(n):
            g = G[i, j]
            if g >= 0 and fold_of(i, j, n, seed, n_folds) == fold:
                out[i, j] = -1
            else:
                out[i, j] = g


@numba.njit(parallel=True, cache=True, nogil=True)
def deviance_kernel(G, P, Q, fold, n_folds, seed):
    """Sum and count of binomial deviances over observed entries of ``fold``.

    ``fold < 0`` means every observed entry.
    """
    m, n = G.shape
    K = Q.shape[1]
    dev_row = np.zeros(m)
    cnt_row = np.zeros(m)
    for i in numba.prange(m):
        dev = 0.0
        cnt = 0.0
        for j in range(n):
            g = G[i, j]
            if g < 0:
                continue
            if fold >= 0 and fold_of(i, j, n, seed, n_folds) != fold:
                continue
            f = 0.0
            for k in range(K):
                f += Q[i, k] * P[j, k]
            mu = 2.0 * f
            if g == 0:
                dev += 2.0 * np.log(2.0 / (2.0 - mu))
            elif g == 1:
                dev += np.log(1.0 / mu) + np.log(1.0 / (2.0 - mu))
            else:
                dev += 2.0 * np.log(2.0 / mu)
            cnt += 1.0
        dev_row[i] = dev
        cnt_row[i] = cnt
    return dev_row.sum(), cnt_row.sum()
