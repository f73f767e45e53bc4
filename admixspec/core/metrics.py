"""Accuracy metrics for ancestry proportions, invariant to label switching.

Admixture components are identifiable only up to a permutation, so every
comparison between two Q matrices first matches columns with the Hungarian
algorithm (:func:`scipy.optimize.linear_sum_assignment`) on the summed
absolute differences. :func:`assign_components` is the one place admixspec
matches components; the plots (overlap) and the binary latent model's
``w_error`` (squared distance) call it with their own costs.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from .exceptions import UsageError

__all__ = ["assign_components", "match_components", "q_error"]


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
