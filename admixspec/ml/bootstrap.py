"""Block-bootstrap standard errors of Q (ADMIXTURE's ``-B``).

Each replicate resamples blocks of contiguous SNPs with replacement (so
linkage within a block is kept), refits starting from the point estimate,
aligns its components to the point estimate by Hungarian matching, and
contributes to the standard deviation (``Q_se``) and mean offset (``Q_bias``)
of each proportion, the two files ADMIXTURE writes as ``.Q_se`` and
``.Q_bias``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..core.exceptions import UsageError
from ..core.metrics import match_components
from ..core.validation import SEED, Dosage, Interval, validate_params
from .likelihood import loglikelihood
from .refine import fit_ml

__all__ = ["BootstrapResult", "bootstrap"]


class BootstrapResult(NamedTuple):
    """Bootstrap summaries, each float64 of shape (n_individuals, K).

    Attributes
    ----------
    Q_se : numpy.ndarray
        Standard deviation of the replicate estimates (ddof = 1).
    Q_bias : numpy.ndarray
        Mean replicate estimate minus the point estimate.
    """

    Q_se: np.ndarray
    Q_bias: np.ndarray


@validate_params({"dosage": Dosage(), "K": Interval(int, 1),
                  "n_replicates": Interval(int, 2),
                  "block_size": Interval(int, 1, allow_none=True),
                  "tol": Interval(float, 0, closed="neither", allow_none=True),
                  "threads": Interval(int, 1, allow_none=True), "seed": SEED})
def bootstrap(dosage, K: int, *, Q_ref=None, P_ref=None, n_replicates: int = 200,
              block_size: int | None = None, seed=None, fit: Callable | None = None,
              tol: float | None = None, threads: int | None = None) -> BootstrapResult:
    """Standard errors of Q by a bootstrap over blocks of contiguous SNPs.

    Parameters
    ----------
    dosage : array_like or Genotypes, int8, shape (n_individuals, n_snps)
    K : int
    Q_ref, P_ref : numpy.ndarray, optional
        Point estimate, shapes (n_individuals, K) and (n_snps, K); fitted by
        :func:`admixspec.ml.refine.fit_ml` when omitted. Replicates are aligned
        to ``Q_ref``.
    n_replicates : int
        Number of bootstrap replicates (ADMIXTURE's default 200).
    block_size : int, optional
        SNPs per resampled block; default ``ceil(n_snps / 200)`` (200 blocks).
    seed : int, optional
        Seed of the resampling and the fits.
    fit : callable, optional
        ``fit(replicate_dosage, K, seed, snps) -> (Q, P)``, ``snps`` the
        replicate's columns of ``dosage`` (int64, resampled with repeats: the
        rows of a fixed P it keeps); default the ML fit started from
        ``(Q_ref, P_ref[snps])``.
    tol : float, optional
        Convergence tolerance of the default replicate fits; default
        ``max(1e-4, 1e-8 |L|)``, ``L`` the point estimate's log-likelihood.
    threads : int, optional

    Returns
    -------
    BootstrapResult

    Raises
    ------
    UsageError
        A ``block_size`` that leaves a single block (at least the SNPs).

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols
    >>> sim = simulate_balding_nichols(30, 1000, 2, fst=0.2, seed=6)
    >>> se, bias = bootstrap(sim.genotypes.dosage, 2, n_replicates=5, seed=0)
    >>> se.shape, bool(0 < se.mean() < 0.1)
    ((30, 2), True)
    """
    G = dosage
    m, n = G.shape
    block = math.ceil(n / 200) if block_size is None else block_size
    starts = np.arange(0, n, block)
    n_draw = len(starts)
    if n_draw < 2:  # every replicate would be the data itself: a standard error of 0
        raise UsageError(f"block_size={block} leaves one block of the {n} SNPs: "
                         "resampling needs at least 2 blocks")
    rng = np.random.default_rng(seed)
    if Q_ref is None or P_ref is None:
        full = fit_ml(G, K, Q0=Q_ref, P0=P_ref, seed=seed,
                      tol=1e-4 if tol is None else tol, threads=threads)
        Q_ref, P_ref = full.Q, full.P
    Q_ref = np.asarray(Q_ref, dtype=np.float64)
    P_ref = np.asarray(P_ref, dtype=np.float64)
    if fit is None and tol is None:  # only the default refits read it
        tol = max(1e-4, 1e-8 * abs(loglikelihood(G, Q_ref, P_ref, threads=threads)))
    total = np.zeros_like(Q_ref)
    total_sq = np.zeros_like(Q_ref)
    for _ in range(n_replicates):
        chosen = rng.integers(0, n_draw, size=n_draw)
        idx = np.concatenate([np.arange(s, min(s + block, n)) for s in starts[chosen]])
        G_rep = np.ascontiguousarray(G[:, idx])
        rep_seed = int(rng.integers(0, 2**31))
        if fit is None:
            res = fit_ml(G_rep, K, Q0=Q_ref, P0=P_ref[idx], seed=rep_seed, tol=tol,
                         threads=threads, batches=1)
            Q = res.Q
        else:
            Q, _ = fit(G_rep, K, rep_seed, idx)
        Q = np.asarray(Q)[:, match_components(Q_ref, Q)]
        total += Q
        total_sq += Q * Q
    mean = total / n_replicates
    var = np.maximum(total_sq - n_replicates * mean * mean, 0.0) / (n_replicates - 1)
    return BootstrapResult(np.sqrt(var), mean - Q_ref)
