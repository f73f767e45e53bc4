"""Accuracy metrics for ancestry proportions, invariant to label switching.

Admixture components are identifiable only up to a permutation, so every
comparison between two Q matrices first matches columns with the Hungarian
algorithm (:func:`scipy.optimize.linear_sum_assignment`) on the summed
absolute differences. :func:`assign_components` is the one place admixspec
matches components; :func:`align_components` (overlap, across K) and the
binary latent model's ``w_error`` (squared distance) call it with their own
costs.
"""

from __future__ import annotations

import numpy as np

from .exceptions import UsageError

__all__ = ["align_components", "assign_components", "match_components", "q_error"]


def assign_components(cost, *, maximize: bool = False) -> np.ndarray:
    """Optimal one-to-one assignment of reference to estimated components.

    Parameters
    ----------
    cost : array_like, float, shape (K_ref, K_est)
        ``cost[k, l]``: the cost (or, with ``maximize``, the gain) of matching
        reference component ``k`` to estimated component ``l``.
    maximize : bool
        Maximise the summed entries instead of minimising them.

    Returns
    -------
    numpy.ndarray, int64, shape (K_ref,)
        ``perm[k]``, the estimated component matched to reference component
        ``k``; -1 for reference components left unmatched (when
        ``K_est < K_ref``).

    Examples
    --------
    >>> assign_components([[5.0, 1.0], [1.0, 5.0], [2.0, 3.0]]).tolist()
    [1, 0, -1]
    """
    # imported here: scipy.optimize takes 0.34 s to import, and a plain run
    # (which every K of `admixspec run` pays for) never aligns components
    from scipy.optimize import linear_sum_assignment

    cost = np.asarray(cost, dtype=float)
    rows, cols = linear_sum_assignment(cost, maximize=maximize)
    perm = np.full(cost.shape[0], -1, dtype=np.int64)
    perm[rows] = cols
    return perm


def match_components(Q_true, Q_est) -> np.ndarray:
    """Permutation of the estimated components that best matches the truth.

    Parameters
    ----------
    Q_true : array_like, float, shape (n_individuals, K)
        Reference proportions.
    Q_est : array_like, float, shape (n_individuals, K_est)
        Estimated proportions, ``K_est >= K`` (extra estimated components
        are left unmatched).

    Returns
    -------
    numpy.ndarray, int64, shape (K,)
        ``perm`` such that ``Q_est[:, perm[k]]`` is matched to ``Q_true[:, k]``.

    Examples
    --------
    >>> import numpy as np
    >>> Q = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> match_components(Q, Q[:, ::-1]).tolist()
    [1, 0]
    """
    Q_true = np.asarray(Q_true, dtype=float)
    Q_est = np.asarray(Q_est, dtype=float)
    if Q_true.ndim != 2 or Q_est.ndim != 2 or Q_true.shape[0] != Q_est.shape[0]:
        raise UsageError("Q_true and Q_est must be 2-d with the same number of rows")
    if Q_est.shape[1] < Q_true.shape[1]:
        raise UsageError("Q_est needs at least as many columns as Q_true")
    _check_finite(Q_true, "Q_true")
    _check_finite(Q_est, "Q_est")
    return assign_components(np.abs(Q_true[:, :, None] - Q_est[:, None, :]).sum(axis=0))


def q_error(Q_true, Q_est) -> float:
    """Mean absolute error of proportions after optimal column matching.

    Parameters
    ----------
    Q_true, Q_est : array_like, float, shape (n_individuals, K)
        Reference and estimated proportions with the same K.

    Returns
    -------
    float
        ``mean(|Q_true - Q_est[:, perm]|)`` over all entries, with ``perm``
        from :func:`match_components`.

    Examples
    --------
    >>> import numpy as np
    >>> Q = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> round(q_error(Q, Q[:, ::-1]), 12)
    0.0
    """
    Q_true = np.asarray(Q_true, dtype=float)
    Q_est = np.asarray(Q_est, dtype=float)
    if Q_true.shape != Q_est.shape:
        raise UsageError(f"shapes differ: {Q_true.shape} vs {Q_est.shape}")
    perm = match_components(Q_true, Q_est)
    return float(np.mean(np.abs(Q_true - Q_est[:, perm])))


def _check_finite(Q: np.ndarray, name: str) -> None:
    """Refuse NaN or infinite proportions (SciPy's assignment raised its own error)."""
    if not np.isfinite(Q).all():
        i, k = np.argwhere(~np.isfinite(Q))[0]
        raise UsageError(f"{name} must be finite, got {Q[i, k]} in row {i}, "
                         f"column {k}")


def _overlap(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Shared mass ``sum_i min(A[i, a], B[i, b])``, shape (K_A, K_B)."""
    return np.minimum(A[:, :, None], B[:, None, :]).sum(axis=0)


def align_components(Qs) -> list[np.ndarray]:
    """Permutations that give each ancestral component one colour across panels.

    Panels are visited in numeric K order (ties keep their input order, so
    several runs at one K are aligned to each other). Each panel's columns are
    matched to the already-aligned columns of the panel before it by the
    Hungarian algorithm, maximising their overlap
    ``sum_i min(Q_prev[i, a], Q[i, b])``; at a larger K the unmatched
    columns become new components, numbered by decreasing mean proportion.

    Parameters
    ----------
    Qs : sequence of array_like, float, shape (n_individuals, K_j)
        Ancestry proportions of one set of individuals (same rows) at any K.

    Returns
    -------
    list of numpy.ndarray, int64, shape (K_j,)
        In input order: ``perm`` such that ``Q[:, perm]`` is the aligned
        panel, i.e. aligned column (colour) ``c`` is original column
        ``perm[c]``. The smallest-K panel keeps its own order.

    Examples
    --------
    >>> import numpy as np
    >>> Q2 = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5]])
    >>> Q3 = np.array([[0.0, 0.1, 0.9], [0.8, 0.1, 0.1], [0.1, 0.4, 0.5]])
    >>> [p.tolist() for p in align_components([Q3, Q2])]
    [[2, 0, 1], [0, 1]]
    """
    mats = [np.asarray(Q, dtype=float) for Q in Qs]
    if not mats:
        return []
    n = mats[0].shape[0]
    for j, Q in enumerate(mats):
        if Q.ndim != 2 or Q.shape[0] != n:
            raise UsageError(
                f"every Q needs the same individuals: Q #{j} has shape {Q.shape}, "
                f"the first has {n} rows"
            )
        _check_finite(Q, f"Q #{j}")
    order = sorted(range(len(mats)), key=lambda j: mats[j].shape[1])
    perms: list[np.ndarray | None] = [None] * len(mats)
    previous = None
    for j in order:
        Q = mats[j]
        K = Q.shape[1]
        if previous is None:
            perm = np.arange(K, dtype=np.int64)
        else:
            matched = assign_components(_overlap(previous, Q), maximize=True)
            perm = np.full(max(K, previous.shape[1]), -1, dtype=np.int64)
            perm[: len(matched)] = matched
            leftover = np.setdiff1d(np.arange(K), matched)
            leftover = leftover[np.argsort(-Q[:, leftover].mean(axis=0), kind="stable")]
            free = np.flatnonzero(perm < 0)
            perm[free[: len(leftover)]] = leftover
            perm = perm[perm >= 0]
        perms[j] = perm
        previous = Q[:, perm]
    return perms  # type: ignore[return-value]
