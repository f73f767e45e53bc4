"""The default estimator: the spectral estimate, then ML where that is better.

Paths (reported in :attr:`~admixspec.fit.result.AdmixtureResult.path` and the run log):

``single-population``
    ``K = 1``: Q is all ones and P the sample allele frequencies, the exact
    maximum-likelihood answer.
``spectral``
    The spectral estimate (:mod:`admixspec.spectral.estimate`) with P
    re-estimated by maximum likelihood given Q on all SNPs.
``spectral+ml``
    Maximum likelihood (:func:`admixspec.ml.refine.fit_ml`) chosen on the
    spectral estimate: with ``refine="auto"`` plain maximum likelihood's own
    fit (from its SVD starts, as ``init="svd"``, same seed, bit for bit), with
    ``refine=True`` the spectral estimate refined from it.
``ml-fallback``
    The spectral candidates were insufficient (fewer than K, or a rank-
    deficient moment matrix): maximum likelihood from the SVD start, with the
    reason in ``diagnostics["fallback_reason"]``.
``ml-svd``
    With ``refine="auto"``, too few rare alleles for the spectral premise
    (:func:`admixspec.fit.choice.premise_absent`): plain maximum likelihood
    (:func:`admixspec.ml.refine.fit_ml` from its SVD starts, as ``init="svd"``),
    decided before the spectral stage, which is skipped unless the fit misses
    one of its corners in an unclustered cohort
    (:func:`admixspec.fit.choice.second_look`); where that look keeps the
    spectral estimate, the path is ``spectral``.

With ``refine="auto"`` the choice between the spectral estimate and maximum
likelihood is :func:`admixspec.fit.choice.premise_absent`'s, before the
spectral stage, then :func:`admixspec.fit.choice.choose_estimator`'s.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import NamedTuple

import numpy as np

from .._version import __version__
from ..core.frequencies import least_squares_p
from ..core.genotypes import allele_counts, minor_allele_counts
from ..core.parameters import P_MAX, P_MIN, clip_proportions
from ..ml.likelihood import loglikelihood
from ..ml.project import maximize_p
from ..ml.refine import fit_ml
from ..spectral.estimate import snp_sample, spectral_scan
from .choice import (
    SECOND_LOOK_INDIVIDUALS,
    EstimatorChoice,
    choose_estimator,
    cluster_excess,
    premise_absent,
    second_look,
)
from .result import AdmixtureResult

__all__ = ["fit_default", "rare_allele_share"]

logger = logging.getLogger("admixspec")

#: Entries (individuals x SNPs) in the likelihood scoring sample of the search.
SCORING_ENTRIES = 200_000
#: Fewest moment SNPs before the rarity window is widened. 1,000 rather than 200:
#: on one Balding-Nichols replicate of the realistic suite a 253-SNP window's
#: noise looked decomposable and won the scan (Q error 0.205; 0.087 with this
#: floor), and no other of its 55 data sets changed (benchmarks/spectral_second_pass.py).
MIN_MOMENT_SNPS = 1000


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
        :func:`admixspec.core.genotypes.allele_counts` of ``dosage``, if already
        computed.

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
    P = least_squares_p(G, Q)

    def fill(columns):
        return np.clip(Q @ P[columns].T, 0.0, 1.0)

    return fill


class SpectralStage(NamedTuple):
    """What the spectral stage found.

    Attributes
    ----------
    Q : numpy.ndarray, float64, shape (n_individuals, K), or None
        None when the candidates were insufficient (the reason is in
        ``diagnostics["fallback_reason"]``).
    diagnostics : dict
        The window scan and the chosen window's facts.
    seconds : float
    """

    Q: np.ndarray | None
    diagnostics: dict
    seconds: float


def spectral_stage(G, K, *, counts, windows, n_starts, seed,
                   common_windows=True) -> SpectralStage:
    """Run the window scan (:func:`admixspec.spectral.estimate.spectral_scan`).

    With missing genotypes the scan runs twice: first with each missing call
    imputed by its SNP's mean frequency, then by the first estimate's model
    (:func:`_model_fill`). ``common_windows``: as the scan's.
    """
    rng = np.random.default_rng(seed)
    m, n = G.shape
    clock = time.perf_counter()
    size = int(np.clip(SCORING_ENTRIES // m, 500, n))
    sample = snp_sample(G, size, rng)
    rescore = snp_sample(G, min(n, 10 * size), rng)
    diagnostics: dict = {}

    def scan(fill=None):
        return spectral_scan(
            G, K, sample=sample, rescore_sample=rescore, windows=windows, fill=fill,
            counts=counts, common_windows=common_windows,
            min_snps=min(MIN_MOMENT_SNPS, max(2 * K, n // 10)), n_starts=n_starts,
            seed=seed, progress=logger.info,
        )

    best, scan_log = scan()
    # a SNP with fewer than 2 m observed alleles has a missing call: no m x n mask
    if best is not None and best.Q is not None and np.any(counts[1] < 2 * m):
        logger.info("missing genotypes: rescanning with model-based imputation")
        diagnostics["missing_imputation"] = "model (Q P^T of a first pass)"
        best, scan_log = scan(_model_fill(G, best.Q))
    seconds = time.perf_counter() - clock
    diagnostics["windows"] = scan_log
    if best is None:
        diagnostics["fallback_reason"] = "no rarity window gave a usable whitened tensor"
        return SpectralStage(None, diagnostics, seconds)
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
        return SpectralStage(None, diagnostics, seconds)
    diagnostics["subsets"] = int(best.search.n_subsets)
    diagnostics["near_feasible_subsets"] = int(best.search.n_feasible)
    diagnostics["search_strategy"] = best.search.strategy
    diagnostics["infeasibility"] = float(best.search.infeasibility)
    # into ADMIXTURE's box (entries >= Q_MIN), as every other path's Q: the
    # simplex projection of the candidates leaves exact zeros, and the path
    # "spectral" then reported the log-likelihood of a Q outside the box,
    # not what admixspec.loglikelihood gives for the Q and P it wrote
    Q = clip_proportions(np.array(best.Q, dtype=np.float64))
    return SpectralStage(Q, diagnostics, seconds)


class Outcome(NamedTuple):
    """The default's answer: its path and the fit or estimate behind it.

    Attributes
    ----------
    path : str
        ``"spectral"``, ``"spectral+ml"``, ``"ml-svd"`` or ``"ml-fallback"``.
    ml : admixspec.ml.refine.MLResult or None
        The maximum-likelihood fit, on every path but ``"spectral"``.
    Q, P : numpy.ndarray or None
        The spectral path's Q and its P (given Q), else None.
    loglik : float or None
        Their log-likelihood, else None.
    diagnostics : dict
        The choice's evidence and reason.
    timings : dict
        Seconds of the choice (``choice``) and of P given Q (``p_given_q``).
    """

    path: str
    ml: object
    Q: np.ndarray | None
    P: np.ndarray | None
    loglik: float | None
    diagnostics: dict
    timings: dict


def _choose_and_fit(G, K, Q, *, rare_share, refine, tol, max_iter, seed, threads,
                    log) -> Outcome:
    """Keep the spectral Q (P given Q) or maximise the likelihood."""
    diagnostics = {"rare_allele_share": rare_share}
    timings = {}
    decision, reason = refine, "requested"
    if refine == "auto":
        choice = choose_estimator(Q, rare_share)
        timings["choice"] = choice.seconds
        decision, reason = choice.estimator == "spectral+ml", choice.reason
        diagnostics["choice"] = choice.record()
    diagnostics["refine"] = bool(decision)
    diagnostics["refine_reason"] = reason
    logger.info("refinement: %s (%s)", "yes" if decision else "no", reason)
    if decision:
        # Chosen by the rule, the fit is plain ML's own (its SVD starts). The
        # spectral estimate, once screened beside them, won the screen on 33 of
        # 60 mosaic data sets but every fit ended at plain ML's optimum (within
        # 5e-5 log-likelihood units), in 9.8% more time (docs/benchmarks.md).
        # Asked for (refine=True), it is the start.
        diagnostics["ml_start"] = ("plain maximum likelihood's own (its SVD + ALS "
                                   "starts, as --init svd)" if refine == "auto"
                                   else "the spectral estimate (--refine)")
        return _ml_fit(G, K, "spectral+ml", Q0=None if refine == "auto" else Q,
                       diagnostics=diagnostics, timings=timings, tol=tol,
                       max_iter=max_iter, seed=seed, threads=threads, log=log)
    return _spectral_answer(G, Q, diagnostics, timings, threads=threads)


def _ml_fit(G, K, path, *, tol, max_iter, seed, threads, log, Q0=None,
            diagnostics=None, timings=None) -> Outcome:
    """Maximum likelihood (:func:`fit_ml`) as path ``path``: plain ML from its SVD
    starts, or from ``Q0``."""
    ml = fit_ml(G, K, Q0=Q0, tol=tol, max_iter=max_iter, seed=seed,
                callback=log.iteration, threads=threads)
    return Outcome(path, ml, None, None, None, diagnostics or {}, timings or {})


def _ml_without_spectral(G, K, choice: EstimatorChoice, *, run_spectral,
                         **fit) -> Outcome:
    """Plain maximum likelihood, chosen before the spectral stage (path ``ml-svd``),
    then its second look (:func:`_second_look`).

    Where the spectral premise is absent the rule chooses maximum likelihood
    whatever the spectral Q, and that Q would only be one more start, which
    never won the screen on such data (HapMap3 K = 3-5, 1000 Genomes K = 5:
    docs/benchmarks.md): the spectral stage is skipped and the fit is plain
    ML's for the same seed, bit for bit, unless the second look keeps the
    spectral estimate (path ``spectral``). ``run_spectral()``: the spectral
    stage on these genotypes; ``fit``: :func:`_ml_fit`'s options.
    """
    outcome = _ml_fit(G, K, "ml-svd", **fit)
    looked, spectral = _second_look(G, K, outcome.ml.Q, choice,
                                    run_spectral=run_spectral, seed=fit["seed"])
    outcome.timings["choice"] = looked.seconds
    if spectral is not None:
        outcome.timings["spectral"] = spectral.seconds
    keep_spectral = looked.estimator == "spectral"
    logger.info("refinement: %s (%s)", "no" if keep_spectral else "yes", looked.reason)
    outcome.diagnostics.update(
        rare_allele_share=choice.statistics["rare_allele_share"],
        choice=looked.record(), refine=not keep_spectral, refine_reason=looked.reason,
        spectral_stage=("run for the second look at maximum likelihood's fit (the "
                        "reason below)" if spectral is not None
                        else "skipped (the reason below)"))
    if not keep_spectral:
        return outcome
    outcome.diagnostics.update(spectral.diagnostics)
    outcome.timings["likelihood"] = float(outcome.ml.timings.get("total", 0.0))
    return _spectral_answer(G, spectral.Q, outcome.diagnostics, outcome.timings,
                            threads=fit["threads"])


def _second_look(G, K, Q_ml, choice, *, run_spectral, seed):
    """:func:`admixspec.fit.choice.second_look`, computing what each step asks for.

    Returns the final choice, whose ``seconds`` are the premise's and the
    look's own (the cluster statistic's included, the spectral stage's not),
    and the spectral stage's result (None where it did not run).
    """
    clock = time.perf_counter()
    step, looked = second_look(Q_ml, choice)
    excess = spectral = None
    if step == "cluster" and G.shape[0] > SECOND_LOOK_INDIVIDUALS:
        step, looked = second_look(Q_ml, choice, skipped=(
            f"more than {SECOND_LOOK_INDIVIDUALS:,} individuals"))
    elif step == "cluster":
        excess = cluster_excess(G, K, seed=seed)
        step, looked = second_look(Q_ml, choice, excess=excess)
    if step == "spectral-stage":
        spectral = run_spectral()
        step, looked = second_look(Q_ml, choice, excess=excess, Q_spectral=spectral.Q,
                                   skipped=spectral.diagnostics.get("fallback_reason"))
    stage = spectral.seconds if spectral is not None else 0.0
    looked.seconds = choice.seconds + time.perf_counter() - clock - stage
    return looked, spectral


def _spectral_answer(G, Q, diagnostics, timings, *, threads) -> Outcome:
    """The spectral estimate with its P re-estimated given Q (path ``spectral``)."""
    clock = time.perf_counter()
    P, loglik, n_p = maximize_p(G, Q, threads=threads)
    timings["p_given_q"] = time.perf_counter() - clock
    diagnostics["p_iterations"] = int(n_p)
    return Outcome("spectral", None, Q, P, loglik, diagnostics, timings)


def _log_spectral(log, path, diagnostics):
    d = diagnostics
    log.add(f"Estimator: {path}")
    if "spectral_stage" in d:
        log.add(f"Spectral stage: {d['spectral_stage']}")
    if "eigenpairs" in d:
        # fewer candidates than K: no subset search ran (fallback_reason says so)
        searched = f", {d['subsets']} subsets searched" if "subsets" in d else ""
        log.add(
            f"Spectral: {d['moment_snps']} moment SNPs (minor allele frequency <= "
            f"{d['max_frequency']:g}), {d['eigenpairs']} eigenpairs "
            f"({d['stable_eigenpairs']} Newton-stable), {d['local_maxima']} local "
            f"maxima, {d['candidates']} candidates{searched}"
        )
    for key in ("refine_reason", "fallback_reason"):
        if key in d:
            log.add(f"{key.replace('_', ' ').capitalize()}: {d[key]}")
    if "ml_start" in d:
        log.add(f"ML start: {d['ml_start']}")


def fit_default(G, K, *, refine, tol, max_iter, seed, windows, n_starts, threads,
                log, counts=None) -> AdmixtureResult:
    """The default pipeline: spectral estimate, then maybe maximum likelihood.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Checked dosage.
    K : int
    refine, tol, max_iter, seed, windows, n_starts, threads
        As :func:`admixspec.fit_admixture`'s.
    log : FitLog
    counts : tuple of numpy.ndarray, optional
        ``(counted, observed)`` allele counts of G's SNPs, when the caller has
        them (:func:`admixspec.core.genotypes.allele_counts`).

    Returns
    -------
    AdmixtureResult
    """
    timings: dict = {}
    diagnostics: dict = {"version": __version__}
    if counts is None:  # one pass, shared by every stage below
        counts = allele_counts(G)
    if K == 1:
        Q, P = _single_population(counts, G.shape[0])
        log.add("Estimator: single-population")
        return AdmixtureResult(Q, P, loglikelihood(G, Q, P, threads=threads),
                               timings=timings, diagnostics=diagnostics,
                               path="single-population")
    rare_share = rare_allele_share(G, counts=counts)
    absent = premise_absent(rare_share)  # None where rare alleles are plentiful
    fit = dict(tol=tol, max_iter=max_iter, seed=seed, threads=threads, log=log)
    # where rare alleles are plentiful, common SNPs' windows never won the scan
    # and were its costliest passes (COMMON_WINDOW_END's note)
    run_spectral = functools.partial(spectral_stage, G, K, counts=counts,
                                     windows=windows, n_starts=n_starts, seed=seed,
                                     common_windows=absent is not None)
    if refine == "auto" and absent is not None:
        outcome = _ml_without_spectral(G, K, absent, run_spectral=run_spectral, **fit)
    else:
        spectral = run_spectral()
        timings["spectral"] = spectral.seconds
        diagnostics.update(spectral.diagnostics)
        if spectral.Q is None:
            logger.warning("spectral estimate unavailable (%s); maximum likelihood "
                           "from the SVD start", diagnostics["fallback_reason"])
            outcome = _ml_fit(G, K, "ml-fallback", **fit)
        else:
            outcome = _choose_and_fit(G, K, spectral.Q, rare_share=rare_share,
                                      refine=refine, **fit)
    timings.update(outcome.timings)
    diagnostics.update(outcome.diagnostics)
    return _result(G, outcome, timings, diagnostics, log=log, threads=threads)


def _result(G, outcome: Outcome, timings, diagnostics, *, log,
            threads) -> AdmixtureResult:
    """The outcome's result: its ML fit's, or the spectral Q with its P."""
    ml, Q, P, loglik = outcome.ml, outcome.Q, outcome.P, outcome.loglik
    n_iter, converged = 0, True
    if ml is not None:
        Q, P, loglik, n_iter, converged = ml.Q, ml.P, ml.loglik, ml.n_iter, ml.converged
        if not np.isfinite(loglik):  # the engine's record of an unfinished fit
            loglik = loglikelihood(G, Q, P, threads=threads)
        timings["likelihood"] = float(ml.timings.get("total", 0.0))
    _log_spectral(log, outcome.path, diagnostics)
    log.convergence(n_iter, converged)
    return AdmixtureResult(Q, P, float(loglik), n_iter, converged, timings=timings,
                           diagnostics=diagnostics, path=outcome.path)
