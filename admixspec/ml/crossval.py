"""ADMIXTURE-style cross-validation for choosing K.

ADMIXTURE's ``--cv=v`` (Alexander & Lange 2011) partitions the *observed
genotype entries* into ``v`` folds; for each fold it masks those entries,
refits on the rest (starting from the full-data estimate) and predicts the
masked genotypes by ``mu = 2 Q P^T``. The reported ``CV error`` is the mean
binomial deviance ``d(g, mu) = g log(g/mu) + (2-g) log((2-g)/(2-mu))`` over
the held-out entries (checked here: the in-sample mean of ``d`` at
ADMIXTURE's own HapMap3 estimates is 0.5486/0.4744/0.4665 for K = 1/2/3,
against its CV errors 0.5525/0.4819/0.4784).

Folds are assigned by a hash of each entry's index and the seed, so no
per-entry index array is stored: memory is one masked int8 copy of the
dosage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..core.exceptions import UsageError
from ..core.parameters import check_params
from ..core.threads import thread_limit
from ..core.validation import SEED, Dosage, Interval, validate_params
from ._kernels.likelihood import deviance_kernel, mask_fold_kernel
from .likelihood import loglikelihood
from .refine import fit_ml

__all__ = ["CVResult", "cross_validate", "format_cv"]


class CVResult(NamedTuple):
    """Cross-validation error of one K.

    Attributes
    ----------
    error : float
        Mean deviance over all held-out entries (ADMIXTURE's ``CV error``).
    fold_errors : numpy.ndarray, float64, shape (folds,)
        Mean deviance within each fold.
    """

    error: float
    fold_errors: np.ndarray


def format_cv(K: int, result: CVResult) -> str:
    """ADMIXTURE's line, e.g. ``CV error (K=3): 0.47835``.

    Examples
    --------
    >>> import numpy as np
    >>> format_cv(3, CVResult(0.478351, np.array([0.478351])))
    'CV error (K=3): 0.47835'
    """
    return f"CV error (K={K}): {result.error:.5f}"


def _check_folds_hold_entries(counts: np.ndarray) -> None:
    """Refuse a fold that held no observed entry: its error would be 0 / 0.

    Entries are dealt to the folds at random, so a few observed entries can
    leave a fold empty even when there are more entries than folds. Checked on
    the folds' own counts, after their fits: a check before them would cost a
    pass over the genotypes per fold, for data sets small enough to fit at once.
    """
    empty = np.flatnonzero(counts == 0)
    if len(empty):
        raise UsageError(
            f"cross-validation fold {empty[0] + 1} of {len(counts)} holds none of the "
            f"{int(counts.sum())} observed genotype entries (they are dealt to the "
            "folds at random): use fewer folds (--cv)")


@validate_params({"dosage": Dosage(), "K": Interval(int, 1), "folds": Interval(int, 2),
                  "tol": Interval(float, 0, closed="neither", allow_none=True),
                  "threads": Interval(int, 1, allow_none=True), "seed": SEED})
def cross_validate(dosage, K: int, *, folds: int = 5, seed=None,
                   fit: Callable | None = None, start=None, tol: float | None = None,
                   threads: int | None = None) -> CVResult:
    """v-fold cross-validation error of the admixture model with K components.

    Parameters
    ----------
    dosage : array_like or Genotypes, int8, shape (n_individuals, n_snps)
        -1 marks missing genotypes (never held out).
    K : int
        Number of components.
    folds : int
        Number of folds v (ADMIXTURE's default 5).
    seed : int, optional
        Seed of the fold assignment and of the fits.
    fit : callable, optional
        ``fit(dosage_with_fold_masked, K, seed) -> (Q, P)``; default: the ML
        fit (:func:`admixspec.ml.refine.fit_ml`) started from the full-data
        estimate, as ADMIXTURE does.
    start : tuple of arrays (Q, P), optional
        Full-data estimate for the default ``fit``; computed when omitted.
    tol : float, optional
        Convergence tolerance (log-likelihood gain) of the default fold fits;
        default ``max(1e-4, 1e-8 |L|)`` with ``L`` the full-data
        log-likelihood: the held-out deviance moves by far less than its
        printed precision below that, and EM creeps along flat directions.
    threads : int, optional

    Returns
    -------
    CVResult

    Raises
    ------
    UsageError
        A fold that holds no observed genotype entry (too few entries for
        ``folds``).

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols
    >>> sim = simulate_balding_nichols(40, 1500, 2, fst=0.3, seed=5)
    >>> G = sim.genotypes.dosage
    >>> cross_validate(G, 2, seed=1).error < cross_validate(G, 1, seed=1).error
    True
    """
    G = dosage
    rng = np.random.default_rng(seed)
    fold_seed = int(rng.integers(0, 2**62))
    if fit is None:
        if start is None:
            full = fit_ml(G, K, seed=seed, tol=1e-4 if tol is None else tol,
                          threads=threads)
            start = (full.Q, full.P)
        Q_start, P_start = start
        if tol is None:
            tol = max(1e-4, 1e-8 * abs(loglikelihood(G, Q_start, P_start,
                                                     threads=threads)))

        def fit(Gm, K_, s):
            res = fit_ml(Gm, K_, Q0=Q_start, P0=P_start, seed=s, tol=tol,
                         threads=threads, batches=1)
            return res.Q, res.P

    masked = np.empty_like(G)
    totals = np.zeros(folds)
    counts = np.zeros(folds)
    for f in range(folds):
        with thread_limit(threads):
            mask_fold_kernel(G, masked, f, folds, fold_seed)
        Q, P = fit(masked, K, None if seed is None else int(rng.integers(0, 2**31)))
        Q, P = check_params(Q, P, *G.shape)
        with thread_limit(threads):
            totals[f], counts[f] = deviance_kernel(G, P, Q, f, folds, fold_seed)
    _check_folds_hold_entries(counts)
    return CVResult(float(totals.sum() / counts.sum()), totals / counts)
