"""``fit_admixture``: the public estimator, spectral first, likelihood where needed.

Paths (reported in :attr:`AdmixtureResult.path` and in the run log):

``single-population``
    ``K = 1``: Q is all ones and P the sample allele frequencies, the exact
    maximum-likelihood answer.
``spectral``
    The spectral estimate (:mod:`admixspec.spectral.estimate`) with P re-estimated by
    maximum likelihood given Q on all SNPs.
``spectral+ml``
    The spectral estimate refined by maximising ADMIXTURE's likelihood
    (:func:`admixspec.ml.refine.fit_ml`) from it.
``ml-fallback``
    The spectral candidates were insufficient (fewer than K, or a rank-
    deficient moment matrix): maximum likelihood from the SVD start, with the
    reason in ``diagnostics["fallback_reason"]``.

Refinement with ``refine="auto"`` is decided by a measured rule (see
:func:`refinement_decision`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from . import __version__
from .exceptions import UsageError
from .filters import check_K
from .genotypes import allele_counts, minor_allele_counts
from .ml.likelihood import P_MAX, P_MIN, Engine, check_dosage, loglikelihood, thread_limit
from .ml.initial import p_given_q
from .ml.refine import MLResult, fit_ml
from .spectral.estimate import DEFAULT_WINDOWS, snp_sample, spectral_scan

__all__ = [
    "AdmixtureResult",
    "fit_admixture",
    "rare_allele_share",
    "refinement_decision",
]

logger = logging.getLogger("admixspec")

#: Entries (individuals x SNPs) in the likelihood scoring sample of the search.
_SCORING_ENTRIES = 200_000
#: Fewest moment SNPs before the rarity window is widened.
_MIN_MOMENT_SNPS = 200


@dataclass
class AdmixtureResult:
    """Estimated ancestry of one K.

    Attributes
    ----------
    Q : numpy.ndarray, float64, shape (n_individuals, K)
        Ancestry proportions; rows sum to one.
    P : numpy.ndarray, float64, shape (n_snps, K)
        Ancestral frequencies of the counted allele, in [1e-5, 1 - 1e-5].
    loglik : float
        ADMIXTURE's binomial log-likelihood of (Q, P).
    K : int
    path : str
        Which estimator produced Q (see the module docstring).
    n_iter : int
        Likelihood iterations run after the spectral stage (0 if none).
    converged : bool
        Whether those iterations met the tolerance (True when none ran).
    timings : dict
        Seconds per stage.
    diagnostics : dict
        Counts of eigenpairs, candidates and subsets, the refinement decision,
        and other facts worth logging.
    history : list
        Per-iteration records of the likelihood stage.
    """

    Q: np.ndarray
    P: np.ndarray
    loglik: float
    K: int
    path: str
    n_iter: int = 0
    converged: bool = True
    timings: dict = field(default_factory=dict)
    diagnostics: dict = field(default_factory=dict)
    history: list = field(default_factory=list)


def rare_allele_share(dosage, *, counts=None) -> float:
    """Share of polymorphic SNPs whose sample minor-allele frequency is <= 5%.

    The spectral estimator is exact when counted alleles are private to one
    population, and rare alleles are its source of private alleles. Sequence
    data and coalescent simulations are rich in them (measured: 0.57-0.59 on
    msprime data of the paper's setting and on ``data/``); genotyping arrays
    and Balding-Nichols simulations are not (HapMap3 0.12, 1000 Genomes
    thinned array 0.03, Balding-Nichols 0.04-0.11).

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (n_individuals, n_snps)
    counts : tuple of numpy.ndarray, optional
        :func:`admixspec.genotypes.allele_counts` of ``dosage``, if already computed.

    Returns
    -------
    float
    """
    counted, observed = allele_counts(dosage) if counts is None else counts
    minor = minor_allele_counts(counted, observed)
    polymorphic = minor > 0
    if not np.any(polymorphic):
        return 0.0
    return float(np.mean(minor[polymorphic] <= 0.05 * observed[polymorphic]))


#: Rare-allele share above which the private-allele premise is taken to hold.
RARE_SHARE_THRESHOLD = 0.25


def refinement_decision(Q, rare_share, *, anchor_threshold=0.95,
                        rare_threshold=RARE_SHARE_THRESHOLD):
    """Whether maximum likelihood should refine a spectral estimate.

    Maximum likelihood is identifiable, and then at least as accurate as the
    spectral estimate, when every component has an *anchor*: an individual
    (nearly) entirely of that ancestry. Without anchors the likelihood is
    nearly flat along directions that mix components and the ML optimum
    drifts (measured on the paper's msprime setting, alpha = 1: spectral Q
    error 0.038, ML from the spectral start 0.138, the same optimum as from a
    random start). The spectral estimate is kept only where it is
    trustworthy: the data must be rich in rare alleles (see
    :func:`rare_allele_share`); on array-like or Balding-Nichols data the
    spectral candidates are biased (measured: Q error 0.095 against ML's
    0.032 at alpha = 1, F_ST = 0.1) and ML is used.

    Parameters
    ----------
    Q : numpy.ndarray, shape (n_individuals, K)
        The spectral estimate.
    rare_share : float
        :func:`rare_allele_share` of the data.
    anchor_threshold : float
        Smallest proportion that makes an individual an anchor.
    rare_threshold : float
        Smallest rare-allele share for which the spectral estimate is kept.

    Returns
    -------
    refine : bool
    reason : str
    """
    anchors = Q.max(axis=0)
    if np.all(anchors >= anchor_threshold):
        return True, (
            f"every component has an individual with proportion >= {anchor_threshold} "
            f"(min {anchors.min():.3f}): likelihood is identifiable"
        )
    if rare_share < rare_threshold:
        return True, (
            f"only {rare_share:.0%} of SNPs have a minor allele frequency <= 5% "
            f"(< {rare_threshold:.0%}): too few private alleles to trust the spectral "
            "estimate"
        )
    return False, (
        f"component(s) {np.flatnonzero(anchors < anchor_threshold).tolist()} have no "
        f"individual with proportion >= {anchor_threshold} (max {anchors.min():.3f}) and "
        f"{rare_share:.0%} of SNPs are rare: likelihood is flat along mixing directions, "
        "keeping the spectral estimate"
    )


def _p_given_q(G, Q, *, max_passes=20, relative_tol=1e-7, threads=None):
    """Allele frequencies for a fixed Q: least squares, then EM steps on P only.

    Every EM step raises the likelihood; the steps stop when one gains less
    than ``relative_tol * |loglik|`` or after ``max_passes`` passes over the
    data, so the spectral path stays a small multiple of one pass (a full
    P-only EM to ADMIXTURE's 1e-4 tolerance took ~100 passes, longer than the
    spectral estimate itself).

    Returns
    -------
    P : numpy.ndarray, shape (n_snps, K)
    loglik : float
        Log-likelihood of (Q, P).
    passes : int
    """
    with thread_limit(threads):
        engine = Engine(G, Q.shape[1])
        P = np.clip(p_given_q(G, Q), P_MIN, P_MAX)
        previous = -np.inf
        passes = 0
        for passes in range(1, max_passes + 1):
            _, P_next, loglik = engine.em(Q, P, update_q=False)  # loglik of (Q, P)
            if loglik - previous < relative_tol * abs(loglik):
                break
            P, previous = P_next, loglik
        else:
            P = P_next
            loglik = engine.loglik(Q, P)
    return P, float(loglik), passes


def _single_population(counts, n_individuals):
    counted, observed = counts
    frequency = counted / np.maximum(observed, 1)
    P = np.clip(frequency, P_MIN, P_MAX)[:, None]
    Q = np.ones((n_individuals, 1))
    return Q, P


def _model_fill(G, Q):
    """Imputation of missing calls by the model's expected frequency ``(Q P^T)_ij``.

    Given the ancestral frequencies, individuals are independent, so an
    imputed entry's expectation equals the missing entry's: off-diagonal
    moments stay unbiased (mean imputation pulls them towards the average
    individual).
    """
    P = p_given_q(G, Q)

    def fill(columns):
        return np.clip(Q @ P[columns].T, 0.0, 1.0)

    return fill


def _spectral(G, K, *, counts, windows, n_starts, seed, timings, diagnostics):
    """Run the window scan; return Q or None (with the reason in diagnostics).

    With missing genotypes the scan runs twice: first with each missing call
    imputed by its SNP's mean frequency, then by the first estimate's model
    (:func:`_model_fill`).
    """
    rng = np.random.default_rng(seed)
    m, n = G.shape
    clock = time.perf_counter()
    size = int(np.clip(_SCORING_ENTRIES // m, 500, n))
    sample = snp_sample(G, size, rng)
    rescore = snp_sample(G, min(n, 10 * size), rng)

    def scan(fill=None):
        return spectral_scan(
            G, K, sample=sample, rescore_sample=rescore, windows=windows, fill=fill,
            counts=counts,
            min_snps=min(_MIN_MOMENT_SNPS, max(2 * K, n // 10)), n_starts=n_starts,
            seed=seed, progress=logger.info,
        )

    best, scan_log = scan()
    if best is not None and best.Q is not None and np.any(G < 0):
        logger.info("missing genotypes: rescanning with model-based imputation")
        diagnostics["missing_imputation"] = "model (Q P^T of a first pass)"
        best, scan_log = scan(_model_fill(G, best.Q))
    timings["spectral"] = time.perf_counter() - clock
    diagnostics["windows"] = scan_log
    if best is None:
        diagnostics["fallback_reason"] = "no rarity window gave a usable whitened tensor"
        return None
    diagnostics.update(best.details)
    diagnostics["moment_snps"] = int(best.n_moment_snps)
    diagnostics["eigenpairs"] = int(len(best.eigen.values))
    diagnostics["stable_eigenpairs"] = int(np.sum(best.eigen.stable))
    diagnostics["candidates"] = int(len(best.candidates))
    if best.search is None:
        diagnostics["fallback_reason"] = (
            f"the whitened tensor gave {len(best.candidates)} usable candidates, "
            f"fewer than K={K}"
        )
        return None
    diagnostics["subsets"] = int(best.search.n_subsets)
    diagnostics["near_feasible_subsets"] = int(best.search.n_feasible)
    diagnostics["search_strategy"] = best.search.strategy
    diagnostics["infeasibility"] = float(best.search.infeasibility)
    return best.Q


def fit_admixture(
    genotypes,
    K: int,
    *,
    seed: int | None = None,
    refine: bool | str = "auto",
    tol: float = 1e-4,
    max_iter: int = 1000,
    windows=DEFAULT_WINDOWS,
    n_starts: int | None = None,
    threads: int | None = None,
    callback=None,
) -> AdmixtureResult:
    """Estimate ancestry proportions Q and ancestral frequencies P.

    Parameters
    ----------
    genotypes : Genotypes or array_like, int8, shape (n_individuals, n_snps)
        Copies of the counted allele (0/1/2), -1 for missing.
    K : int
        Number of ancestral populations, ``1 <= K < n_individuals``.
    seed : int, optional
        Seed for every random choice (eigenpair starts, SNP samples, EM
        mini-batches); the same seed gives the same output.
    refine : {"auto", True, False}
        Maximise the likelihood from the spectral estimate: always (True),
        never (False), or unless :func:`refinement_decision` finds the
        likelihood flat and the spectral estimate trustworthy ("auto").
    tol : float
        Log-likelihood change that stops EM (ADMIXTURE's ``-C``).
    max_iter : int
        EM iteration limit.
    windows : sequence of float
        Upper ends of the minor-allele-frequency windows scanned for the
        moment SNPs (see :func:`admixspec.spectral.estimate.spectral_scan`).
    n_starts : int, optional
        Random starts of the eigenpair solver (default: the solver's).
    threads : int, optional
        Threads for the likelihood kernels and BLAS.
    callback : callable, optional
        Receives each EM iteration's record (see
        :class:`admixspec.ml.refine.IterationInfo`).

    Returns
    -------
    AdmixtureResult

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols, q_error
    >>> sim = simulate_balding_nichols(40, 3000, 2, fst=0.3, alpha=0.3, seed=2)
    >>> result = fit_admixture(sim.genotypes, 2, seed=1)
    >>> result.Q.shape, bool(q_error(sim.Q, result.Q) < 0.05)
    ((40, 2), True)
    """
    if refine not in ("auto", True, False):
        raise UsageError(f"refine must be 'auto', True or False, got {refine!r}")
    G = check_dosage(genotypes)
    m, n = G.shape
    check_K(K, m)
    K = int(K)
    timings: dict = {}
    diagnostics: dict = {"version": __version__}
    start = time.perf_counter()
    counts = allele_counts(G)  # one pass, shared by every stage below
    if K == 1:
        Q, P = _single_population(counts, m)
        loglik = loglikelihood(G, Q, P, threads=threads)
        timings["total"] = time.perf_counter() - start
        return AdmixtureResult(Q, P, loglik, 1, "single-population", timings=timings,
                               diagnostics=diagnostics)

    Q = _spectral(G, K, counts=counts, windows=windows, n_starts=n_starts,
                  seed=seed, timings=timings, diagnostics=diagnostics)
    ml: MLResult | None = None
    if Q is None:
        logger.warning("spectral estimate unavailable (%s); maximum likelihood from the "
                       "SVD start", diagnostics["fallback_reason"])
        path = "ml-fallback"
        ml = fit_ml(G, K, init="svd", tol=tol, max_iter=max_iter, seed=seed,
                    callback=callback, threads=threads)
    else:
        share = rare_allele_share(G, counts=counts)
        diagnostics["rare_allele_share"] = share
        decision, reason = (
            (refine, "requested") if refine != "auto" else refinement_decision(Q, share)
        )
        diagnostics["refine"] = bool(decision)
        diagnostics["refine_reason"] = reason
        logger.info("refinement: %s (%s)", "yes" if decision else "no", reason)
        if decision:
            path = "spectral+ml"
            ml = fit_ml(G, K, Q0=Q, tol=tol, max_iter=max_iter, seed=seed,
                        callback=callback, threads=threads)
        else:
            path = "spectral"
            clock = time.perf_counter()
            P, loglik, n_p = _p_given_q(G, Q, threads=threads)
            timings["p_given_q"] = time.perf_counter() - clock
            diagnostics["p_iterations"] = int(n_p)
    if ml is not None:
        Q, P, loglik = ml.Q, ml.P, ml.loglik
        if not np.isfinite(loglik):  # the engine's record of an unfinished fit
            loglik = loglikelihood(G, Q, P, threads=threads)
        timings["likelihood"] = float(ml.timings.get("total", 0.0))
    timings["total"] = time.perf_counter() - start
    logger.info("K=%d: %s estimate, log-likelihood %.6f", K, path, loglik)
    return AdmixtureResult(
        Q=Q,
        P=P,
        loglik=float(loglik),
        K=K,
        path=path,
        n_iter=0 if ml is None else ml.n_iter,
        converged=True if ml is None else ml.converged,
        timings=timings,
        diagnostics=diagnostics,
        history=[] if ml is None else list(ml.history),
    )
