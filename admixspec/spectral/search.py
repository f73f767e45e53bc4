"""Likelihood-maximising choice of K candidates (replaces the paper's KS filter).

For a subset S of K candidates, ``W_S = V_S^+``, ``Q_S = W_S^T`` with each row
projected onto the probability simplex, ``P_S`` the least-squares allele
frequencies given ``Q_S`` clipped to ``[1e-5, 1 - 1e-5]``, and the score is the
binomial log-likelihood of a SNP sample. All size-K subsets are scored while
their number is within a budget; beyond it a swap local search runs from
several starts. Finalists are rescored on a larger SNP sample.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..core.exceptions import UsageError
from ..core.parameters import P_MAX, P_MIN, simplex_projection
from ._kernels.feasibility import subset_infeasibility
from ._kernels.likelihood import subset_logliks

__all__ = [
    "SubsetSearchResult",
    "infeasibility",
    "likelihood_scores",
    "binomial_loglik",
    "q_from_candidates",
    "search_subsets",
]


#: Upper bound on floats in one batched scoring array (b subsets x m x s).
_BATCH_FLOATS = 2**24
#: Smallest ratio of a subset's Gram eigenvalues (squared singular values)
#: that :func:`infeasibility` inverts: the inverse then loses at most about
#: 1e-8 relative (machine precision times the ratio's inverse); below it the
#: subset's pseudo-inverse comes from its singular value decomposition.
_GRAM_RCOND = 1e-8


def q_from_candidates(vectors):
    """Proportions from a set of candidate columns of ``W^+``.

    Parameters
    ----------
    vectors : numpy.ndarray, shape (..., K, m)
        Candidate rows (one per component).

    Returns
    -------
    numpy.ndarray, shape (..., m, K)
        ``pinv(V^T)^T`` with rows projected onto the simplex.
    """
    W = np.linalg.pinv(np.swapaxes(vectors, -1, -2))  # (..., K, m)
    return simplex_projection(np.swapaxes(W, -1, -2))


def _least_squares_p(Q, x):
    """Clipped least-squares frequencies: Q (..., m, K), x (m, s) -> (..., s, K)."""
    gram = np.swapaxes(Q, -1, -2) @ Q
    cross = np.swapaxes(Q, -1, -2) @ x  # (..., K, s)
    P = np.swapaxes(np.linalg.solve(gram + 1e-12 * np.eye(Q.shape[-1]), cross), -1, -2)
    return np.clip(P, P_MIN, P_MAX)


def binomial_loglik(dosage, Q, P):
    """Binomial log-likelihood of dosages given Q and P, batched over subsets.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (m, s)
        Copies of the counted allele, -1 for missing (not counted).
    Q : numpy.ndarray, shape (..., m, K)
    P : numpy.ndarray, shape (..., s, K)

    Returns
    -------
    numpy.ndarray, shape (...)
    """
    m, K = Q.shape[-2:]
    batch = Q.shape[:-2]
    out = np.empty(int(np.prod(batch)))
    subset_logliks(np.ascontiguousarray(dosage, dtype=np.int8),
                   np.ascontiguousarray(Q, dtype=np.float64).reshape(-1, m, K),
                   np.ascontiguousarray(P, dtype=np.float64).reshape(-1, P.shape[-2], K),
                   P_MIN, P_MAX, out)
    return out.reshape(batch)


def infeasibility(vectors, subsets):
    """How far each subset's raw proportions are from the probability simplex.

    For the true candidates ``Q_S = pinv(V_S^T)^T`` estimates Q, whose rows are
    on the simplex; a subset that mixes components gives rows with negative
    entries whenever the individuals' proportions are spread out (the
    identifiability condition of the admixture model). The score is the total
    negative mass plus the total deviation of row sums from one; it needs no
    genotypes, so it is cheap for every subset.

    For a subset of full rank ``pinv(V_S^T)^T = V_S^T (V_S V_S^T)^-1``: a
    numba kernel inverts each subset's K x K Gram matrix by its Cholesky
    factor and sums the score in one pass over the individuals
    (:func:`admixspec.spectral._kernels.feasibility.subset_infeasibility`;
    docs/benchmarks.md, "The subset search in numba"). A subset whose Gram
    matrix may be ill-conditioned (1-norm condition number at least half of
    ``1 / _GRAM_RCOND``, a bound on the 2-norm's) takes the eigendecomposition,
    and below :data:`_GRAM_RCOND` its pseudo-inverse.

    Parameters
    ----------
    vectors : numpy.ndarray, shape (c, m)
    subsets : numpy.ndarray of int, shape (b, K)

    Returns
    -------
    numpy.ndarray, shape (b,)
        Zero for a feasible subset; larger is worse.
    """
    vectors = np.ascontiguousarray(vectors, dtype=np.float64)
    subsets = np.ascontiguousarray(subsets, dtype=np.int64)
    gram = vectors @ vectors.T
    out = np.empty(len(subsets))
    unsure = np.empty(len(subsets), dtype=bool)
    # kappa_2 <= kappa_1, so a subset under half the bound is well inside it
    subset_infeasibility(vectors, gram, subsets, 0.5 / _GRAM_RCOND, out, unsure)
    if unsure.any():
        out[unsure] = _infeasibility_by_eigh(vectors, gram, subsets[unsure])
    return out


def _infeasibility_by_eigh(vectors, gram, subsets):
    """:func:`infeasibility` through each subset's Gram eigendecomposition.

    For the subsets the kernel leaves unsure (ill-conditioned or singular
    Gram matrices), which take the pseudo-inverse below :data:`_GRAM_RCOND`.
    """
    out = np.empty(len(subsets))
    m = vectors.shape[1]
    batch = max(1, _BATCH_FLOATS // (4 * m * subsets.shape[1] + 1))
    for start in range(0, len(subsets), batch):
        chosen_rows = subsets[start : start + batch]
        chosen = vectors[chosen_rows]  # (b, K, m)
        values, basis = np.linalg.eigh(gram[chosen_rows[:, :, None],
                                            chosen_rows[:, None, :]])
        ill = values[:, 0] <= _GRAM_RCOND * values[:, -1]
        values[ill] = 1.0
        Q_raw = np.swapaxes(chosen, -1, -2) @ (
            (basis / values[:, None, :]) @ np.swapaxes(basis, -1, -2))
        if ill.any():
            Q_raw[ill] = np.swapaxes(
                np.linalg.pinv(np.swapaxes(chosen[ill], -1, -2)), -1, -2)
        negative = np.maximum(-Q_raw, 0.0).sum(axis=(1, 2))
        off_sum = np.abs(Q_raw.sum(axis=2) - 1.0).sum(axis=1)
        out[start : start + batch] = negative + off_sum
    return out


def likelihood_scores(vectors, subsets, dosage, x):
    """Log-likelihood of each subset's (Q, P) on a SNP sample.

    Parameters
    ----------
    vectors : numpy.ndarray, shape (c, m)
    subsets : numpy.ndarray of int, shape (b, K)
    dosage, x : numpy.ndarray, shape (m, s)
        A :class:`admixspec.spectral.estimate.ScoringSample`.

    Returns
    -------
    numpy.ndarray, shape (b,)
    """
    m, s = dosage.shape
    scores = np.empty(len(subsets))
    batch = max(1, _BATCH_FLOATS // (m * s + 1))
    for start in range(0, len(subsets), batch):
        Q = q_from_candidates(vectors[subsets[start : start + batch]])  # (b, m, K)
        P = _least_squares_p(Q, x)
        scores[start : start + batch] = binomial_loglik(dosage, Q, P)
    return scores


@dataclass
class SubsetSearchResult:
    """Outcome of the subset search.

    Attributes
    ----------
    subset : numpy.ndarray of int, shape (K,)
        Positions of the chosen candidates.
    loglik : float
        Log-likelihood of the chosen subset on the rescoring sample.
    infeasibility : float
        Its distance from the simplex (see :func:`infeasibility`).
    strategy : str
        ``"exhaustive"`` or ``"swap-search"``.
    n_subsets : int
        Subsets whose infeasibility was evaluated.
    n_feasible : int
        Subsets within the tolerance of the most feasible one, compared by
        likelihood.
    finalists : list of tuple
        ``(subset, infeasibility, sample loglik, rescored loglik)``.
    """

    subset: np.ndarray
    loglik: float
    infeasibility: float
    strategy: str
    n_subsets: int
    n_feasible: int
    finalists: list


def _swap_descent(score, c, starts):
    """Best-improvement swap local search of range(c)'s subsets, each the starts' size.

    ``score(subsets)`` returns infeasibilities (lower is better). Returns
    every subset evaluated with its score.
    """
    seen: dict[tuple, float] = {}
    for start in starts:
        current = tuple(sorted(int(i) for i in start))
        if current not in seen:
            seen[current] = score(np.array([current]))[0]
        while True:
            neighbours = _swaps(current, c)
            fresh = [n for n in neighbours if n not in seen]
            if fresh:
                seen.update(zip(fresh, score(np.array(fresh)), strict=True))
            best = min(neighbours, key=seen.__getitem__)
            if seen[best] >= seen[current]:
                break
            current = best
    return seen


def _swaps(current, c):
    """Every sorted subset one swap from ``current`` (a sorted tuple), as tuples."""
    members = np.array(current)
    outside = np.setdiff1d(np.arange(c), members)
    k = len(members)
    neighbours = np.repeat(members[None, :], k * len(outside), axis=0)
    neighbours[np.arange(len(neighbours)), np.repeat(np.arange(k), len(outside))] = (
        np.tile(outside, k))
    neighbours.sort(axis=1)
    return list(map(tuple, neighbours.tolist()))


def search_subsets(
    candidates,
    K,
    sample,
    rescore_sample,
    *,
    required=(),
    feasibility_tolerance=None,
    max_exhaustive=200_000,
    max_likelihood=2_000,
    n_restarts=20,
    n_finalists=5,
    seed=None,
) -> SubsetSearchResult:
    """Choose the K candidates that best explain the genotypes.

    Subsets (always containing the ``required`` candidates) are ranked first
    by :func:`infeasibility` (how far their raw Q is from the simplex; free to
    compute), then, among those within ``feasibility_tolerance`` of the most
    feasible, by the binomial log-likelihood on a SNP sample; the best
    ``n_finalists`` are rescored on a larger sample. Measured on simulations,
    the likelihood alone cannot separate the true subset from mixtures of it
    when no individual is close to unadmixed (the likelihood is nearly flat
    along mixing directions), while the simplex constraint can.

    Parameters
    ----------
    candidates : numpy.ndarray, shape (c, m)
        Candidate vectors (``c >= K``).
    K : int
    sample, rescore_sample : tuple (dosage, x)
        SNP samples (see :func:`likelihood_scores`).
    required : sequence of int
        Candidates every subset must contain (at most K).
    feasibility_tolerance : float, optional
        Default ``0.002 m``: subsets this close to the most feasible one are
        compared by likelihood.
    max_exhaustive : int
        Largest number of subsets enumerated; beyond it a swap local search
        (from the first candidates and ``n_restarts`` random starts)
        explores the subsets.
    max_likelihood : int
        Most subsets scored by likelihood.
    n_restarts : int
    n_finalists : int
    seed : int, optional

    Returns
    -------
    SubsetSearchResult
    """
    c, m = candidates.shape
    required = np.asarray(required, dtype=np.int64)
    if c < K or len(required) > K:
        raise UsageError(f"need at least K={K} candidates and at most K required, "
                         f"got {c}")
    free = np.setdiff1d(np.arange(c), required)
    k = K - len(required)
    tolerance = 0.002 * m if feasibility_tolerance is None else feasibility_tolerance

    def complete(chosen):  # positions in `free` -> full candidate subsets
        chosen = np.asarray(chosen, dtype=np.int64).reshape(-1, k)
        return np.hstack([np.broadcast_to(required, (len(chosen), len(required))),
                          free[chosen]])

    if math.comb(len(free), k) <= max_exhaustive:
        strategy = "exhaustive"
        subsets = complete(list(itertools.combinations(range(len(free)), k)))
        values = infeasibility(candidates, subsets)
    else:
        strategy = "swap-search"
        rng = np.random.default_rng(seed)
        starts = [range(k)] + [
            rng.choice(len(free), size=k, replace=False) for _ in range(n_restarts)
        ]
        seen = _swap_descent(
            lambda chosen: infeasibility(candidates, complete(chosen)),
            len(free), starts,
        )
        subsets = complete(list(seen))
        values = np.array(list(seen.values()))
    order = np.argsort(values, kind="stable")
    near = order[values[order] <= values[order[0]] + tolerance][:max_likelihood]
    sample_ll = likelihood_scores(candidates, subsets[near], *sample)
    top = near[np.argsort(-sample_ll, kind="stable")[:n_finalists]]
    rescored = likelihood_scores(candidates, subsets[top], *rescore_sample)
    best = int(np.argmax(rescored))
    lookup = dict(zip(near.tolist(), sample_ll.tolist(), strict=True))
    finalists = [
        (subsets[i].tolist(), float(values[i]), lookup[int(i)], float(r))
        for i, r in zip(top, rescored, strict=True)
    ]
    return SubsetSearchResult(
        subset=subsets[top[best]],
        loglik=float(rescored[best]),
        infeasibility=float(values[top[best]]),
        strategy=strategy,
        n_subsets=len(subsets),
        n_feasible=int(np.sum(values <= values[order[0]] + tolerance)),
        finalists=finalists,
    )
