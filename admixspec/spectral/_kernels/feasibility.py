"""How far candidate subsets' raw proportions are from the simplex, a subset a step.

The subset search scores every subset it visits (up to 200,000 enumerated at
K = 3 or 4, a few thousand per swap search at larger K) by the negative mass
and row-sum error of ``Q_S = V_S^T (V_S V_S^T)^-1``. In NumPy each batch took
a K x K eigendecomposition per subset and an (m x K) x (K x K) product; here
each subset is one Cholesky factorisation of its K x K Gram matrix, its
inverse, and one pass over the individuals that sums the score without
forming ``Q_S`` (docs/benchmarks.md, "The subset search in numba").
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _inverse_by_cholesky(G, L, W):
    """``G^-1`` into ``W`` by ``G = L L^T``; False unless ``G`` is positive definite."""
    K = G.shape[0]
    for j in range(K):
        pivot = G[j, j]
        for t in range(j):
            pivot -= L[j, t] * L[j, t]
        if not pivot > 0.0:
            return False
        L[j, j] = np.sqrt(pivot)
        for i in range(j + 1, K):
            acc = G[i, j]
            for t in range(j):
                acc -= L[i, t] * L[j, t]
            L[i, j] = acc / L[j, j]
    # columns of L^-1 by forward substitution, then W = L^-T L^-1
    for j in range(K):
        for i in range(K):
            acc = 1.0 if i == j else 0.0
            for t in range(j, i):
                acc -= L[i, t] * W[t, j]
            W[i, j] = acc / L[i, i] if i >= j else 0.0
    for i in range(K):
        for j in range(i, K):
            acc = 0.0
            for t in range(j, K):
                acc += W[t, i] * W[t, j]
            L[i, j] = acc
    for i in range(K):
        for j in range(i, K):
            W[i, j] = L[i, j]
            W[j, i] = L[i, j]
    return True


@numba.njit(parallel=True, cache=True, nogil=True)
def subset_infeasibility(vectors, gram, subsets, max_condition, out, unsure):
    """Score each subset's distance from the simplex; flag the ill-conditioned.

    ``out[t]`` is the total negative mass of ``Q_t = V_S^T G_S^-1`` plus the
    total deviation of its row sums from one, with ``V_S`` the subset's
    candidate rows and ``G_S = V_S V_S^T``.

    Parameters
    ----------
    vectors : numpy.ndarray, float64, shape (c, m)
        Candidate rows.
    gram : numpy.ndarray, float64, shape (c, c)
        ``vectors @ vectors.T``.
    subsets : numpy.ndarray, int64, shape (b, K)
    max_condition : float
        A subset whose Gram matrix has 1-norm condition number at least this
        (an upper bound on its 2-norm condition number) is flagged.
    out : numpy.ndarray, float64, shape (b,)
    unsure : numpy.ndarray, bool, shape (b,)
        True where ``G_S`` is not positive definite or reaches
        ``max_condition``: those scores are left for the caller.
    """
    b, K = subsets.shape
    m = vectors.shape[1]
    for t in numba.prange(b):
        S = subsets[t]
        G = np.empty((K, K))
        for i in range(K):
            for j in range(K):
                G[i, j] = gram[S[i], S[j]]
        L = np.zeros((K, K))
        W = np.zeros((K, K))
        if not _inverse_by_cholesky(G, L, W):
            unsure[t] = True
            continue
        norm, inverse_norm = 0.0, 0.0
        for j in range(K):
            column, inverse_column = 0.0, 0.0
            for i in range(K):
                column += abs(G[i, j])
                inverse_column += abs(W[i, j])
            norm = max(norm, column)
            inverse_norm = max(inverse_norm, inverse_column)
        if not norm * inverse_norm < max_condition:
            unsure[t] = True
            continue
        unsure[t] = False
        # Q_S^T row by row, so that the inner loop runs along the individuals
        Qt = np.zeros((K, m))
        for a in range(K):
            row = vectors[S[a]]
            for c in range(K):
                weight = W[a, c]
                for individual in range(m):
                    Qt[c, individual] += row[individual] * weight
        score = 0.0
        for individual in range(m):
            row_sum = 0.0
            for c in range(K):
                value = Qt[c, individual]
                row_sum += value
                if value < 0.0:
                    score -= value
            score += abs(row_sum - 1.0)
        out[t] = score
