"""The parameter space of ADMIXTURE's model: bounds of P and Q, and moving into it.

ADMIXTURE keeps allele frequencies in ``[P_MIN, P_MAX]`` and ancestry
proportions on the simplex with every entry at least ``Q_MIN``; so does every
estimator here. Two different operations put a Q on the simplex:

* :func:`clip_proportions` clips entries at ``Q_MIN`` and rescales each row
  (cheap; for iterates that are already near the simplex);
* :func:`simplex_projection` is the Euclidean projection of each row onto the
  simplex (for least-squares solutions that can be far off it).
"""

from __future__ import annotations

import numpy as np

from .exceptions import UsageError

__all__ = [
    "P_MAX",
    "P_MIN",
    "Q_MIN",
    "check_params",
    "clip_proportions",
    "simplex_projection",
]

#: Lower bound of ancestral allele frequencies (ADMIXTURE's bound).
P_MIN = 1e-5
#: Upper bound of ancestral allele frequencies.
P_MAX = 1.0 - 1e-5
#: Lower bound of ancestry proportions before renormalisation.
Q_MIN = 1e-5


def clip_proportions(Q: np.ndarray) -> np.ndarray:
    """In place: clip Q at ``Q_MIN`` and rescale rows to sum to one.

    Parameters
    ----------
    Q : numpy.ndarray, float64, shape (n_individuals, K)

    Returns
    -------
    numpy.ndarray
        ``Q`` itself.

    Examples
    --------
    >>> clip_proportions(np.array([[0.0, 3.0]])).round(6).tolist()
    [[3e-06, 0.999997]]
    """
    np.maximum(Q, Q_MIN, out=Q)
    Q /= Q.sum(axis=1, keepdims=True)
    return Q


def simplex_projection(Y):
    """Euclidean projection of each row onto the probability simplex.

    Sort-based algorithm of Duchi et al. (2008), vectorised over rows and any
    leading batch dimensions.

    Parameters
    ----------
    Y : numpy.ndarray, shape (..., K)

    Returns
    -------
    numpy.ndarray, shape (..., K)
        Non-negative rows summing to one.

    Examples
    --------
    >>> simplex_projection(np.array([[0.5, 0.7], [-1.0, 0.2]])).tolist()
    [[0.4, 0.6], [0.0, 1.0]]
    """
    Y = np.asarray(Y, dtype=float)
    K = Y.shape[-1]
    ordered = -np.sort(-Y, axis=-1)
    cumulative = np.cumsum(ordered, axis=-1) - 1.0
    ranks = np.arange(1, K + 1)
    positive = ordered - cumulative / ranks > 0
    rho = K - np.argmax(positive[..., ::-1], axis=-1)  # last True, 1-based
    theta = (np.take_along_axis(cumulative, (rho - 1)[..., None], axis=-1)
             / rho[..., None])
    return np.maximum(Y - theta, 0.0)


def check_params(Q, P, n_individuals: int, n_snps: int):
    """Check the shapes of Q and P and move them into the parameter box.

    Parameters
    ----------
    Q : array_like, float, shape (n_individuals, K)
    P : array_like, float, shape (n_snps, K)
    n_individuals, n_snps : int

    Returns
    -------
    Q : numpy.ndarray, float64, shape (n_individuals, K)
        A C-contiguous copy, clipped below at ``Q_MIN``, rows rescaled.
    P : numpy.ndarray, float64, shape (n_snps, K)
        A C-contiguous copy clipped to ``[P_MIN, P_MAX]``.

    Raises
    ------
    UsageError
        Wrong numbers of rows, different K, or values that are not finite.
    """
    Q = np.array(Q, dtype=np.float64, order="C", ndmin=2)
    P = np.array(P, dtype=np.float64, order="C", ndmin=2)
    if Q.shape[0] != n_individuals:
        raise UsageError(f"Q has {Q.shape[0]} rows, expected {n_individuals}")
    if P.shape[0] != n_snps:
        raise UsageError(f"P has {P.shape[0]} rows, expected {n_snps}")
    if Q.shape[1] != P.shape[1]:
        raise UsageError(f"Q has K={Q.shape[1]} columns but P has K={P.shape[1]}")
    if not (np.all(np.isfinite(Q)) and np.all(np.isfinite(P))):
        raise UsageError("Q and P must be finite")
    np.clip(P, P_MIN, P_MAX, out=P)
    clip_proportions(Q)
    return Q, P
