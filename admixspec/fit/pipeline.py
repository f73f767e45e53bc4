"""One fit of genotypes held in memory, by the estimator its options name.

:func:`fit_in_memory` is what :func:`admixspec.fit_admixture` runs on a
cohort in memory, and on the reference of a larger one
(:mod:`admixspec.fit.reference`): the default (:mod:`admixspec.fit.default`),
plain maximum likelihood, the supervised fit or projection;
:func:`add_extras` then adds cross-validation and the bootstrap when asked for.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

import numpy as np

from ..core.exceptions import UsageError
from ..core.parameters import P_MAX, P_MIN
from ..ml.bootstrap import bootstrap as bootstrap_q
from ..ml.crossval import cross_validate, format_cv
from ..ml.debias import debiased_project, p_covariance
from ..ml.likelihood import loglikelihood
from ..ml.project import fit_supervised, project
from ..ml.refine import fit_ml
from ..spectral.estimate import DEFAULT_WINDOWS
from .default import fit_default
from .result import AdmixtureResult, FitLog

__all__ = ["CORRECTION_MAX_REFERENCE", "FIXED_REFERENCE_METHODS", "FitOptions",
           "add_bootstrap", "add_cv",
           "add_extras", "correct_projection", "correction_line", "fit_in_memory",
           "is_spectral_estimate", "members_line"]

logger = logging.getLogger("admixspec")


@dataclass(frozen=True)
class FitOptions:
    """The options of one fit, as :func:`admixspec.fit_admixture` resolved them.

    ``method`` is never ``"auto"`` here, and ``init`` is the ML start of
    ``method="ml"`` (else None or ``"spectral"``); the others are
    :func:`admixspec.fit_admixture`'s arguments.
    """

    method: str = "spectral"
    init: str | None = None
    labels: object = None
    P: object = None
    reference_q: object = None
    reference_members: object = None
    projection_correction: bool | str = "auto"
    seed: int | None = None
    refine: bool | str = "auto"
    tol: float = 1e-4
    max_iter: int = 1000
    cv: int | None = None
    bootstrap: int | None = None
    windows: tuple = DEFAULT_WINDOWS
    n_starts: int | None = None
    threads: int | None = None
    callback: object = None


#: A reference of at least this many individuals gets no projection correction
#: under ``projection_correction="auto"`` (benchmarks/projection_shrinkage.py).
CORRECTION_MAX_REFERENCE = 5000


def correct_projection(correction, reference_size: int) -> bool:
    """Whether to correct projected Q for P's sampling noise (ml.debias).

    ``correction`` is True, False or ``"auto"``: corrected when the reference
    has fewer than :data:`CORRECTION_MAX_REFERENCE` individuals.
    """
    if correction == "auto":
        return reference_size < CORRECTION_MAX_REFERENCE
    return bool(correction)


def correction_line(reference_size: int) -> str:
    """The log line of a corrected projection."""
    return (f"Projection: corrected for the sampling noise of P, estimated from "
            f"{reference_size} reference individuals (corrected log-likelihood; "
            "plain projection shrinks Q towards the mean)")


def members_line(n_members: int, n_individuals: int) -> str:
    """The log line of a projection told which individuals P was fitted on."""
    if not n_members:
        return (f"Projection: none of the {n_individuals} individuals are among "
                "the reference's, which P was fitted on")
    return (f"Projection: {n_members} of the {n_individuals} individuals are among "
            "the reference's, which P was fitted on: they get the plain projection "
            "(the correction is for individuals new to P, whose genotypes P's noise "
            "does not depend on)")


def _correct(G, P, Q, reference_q, members, *, log):
    """Q corrected for P's noise (:mod:`admixspec.ml.debias`) but the members' rows.

    ``members`` (bool, shape (n_individuals,), or None) marks the individuals
    P was fitted on: P's noise is not independent of their genotypes, and
    the correction, which assumes it is, moved their Q away from the truth
    (simulation: mean |Q - truth| 0.052 corrected, 0.028 plain). Their rows
    keep the plain projection ``Q``. The others are corrected together with
    them, as without ``members``, so their rows are bit for bit those of a
    projection without ``members`` (corrected apart, the block arithmetic
    moved them by up to 3e-8).

    Returns
    -------
    Q : numpy.ndarray, float64, shape (n_individuals, K)
    record : dict
        ``diagnostics["projection_correction"]``: ``reference_size``, and
        ``reference_members`` (their number) when ``members`` is given.
    """
    record = {"reference_size": len(reference_q)}
    if members is None or not members.all():
        corrected = debiased_project(G, P, p_covariance(None, reference_q, P), Q)
        Q = corrected if members is None else np.where(members[:, None], Q, corrected)
        log.add(correction_line(len(reference_q)))
    if members is not None:
        record["reference_members"] = int(np.count_nonzero(members))
        log.add(members_line(record["reference_members"], len(Q)))
    return Q, record


def _fit_projection(G, K, P, *, reference_q, members, correction, tol, max_iter,
                    threads, log):
    P = np.clip(np.array(P, dtype=np.float64, ndmin=2), P_MIN, P_MAX)
    if P.shape[1] != K:
        raise UsageError(f"P has {P.shape[1]} columns (components) but K={K}")
    Q = project(G, P, tol=tol, max_iter=max_iter, threads=threads,
                callback=log.iteration)
    log.add("Estimator: projection onto fixed P")
    n_iter = len(log.history)
    # project() warns when it stops at max_iter; it returns Q only
    log.convergence(n_iter, n_iter < max_iter)
    diagnostics = {}
    if reference_q is not None and correct_projection(correction, len(reference_q)):
        reference_q = np.asarray(reference_q, dtype=np.float64)
        if reference_q.ndim != 2 or reference_q.shape[1] != K:
            raise UsageError(f"the reference's Q must have K={K} columns, got shape "
                             f"{reference_q.shape}")
        Q, diagnostics["projection_correction"] = _correct(G, P, Q, reference_q,
                                                           members, log=log)
    return AdmixtureResult(Q, P, loglikelihood(G, Q, P, threads=threads), n_iter,
                           n_iter < max_iter, path="projection", diagnostics=diagnostics)


def _fit_supervised(G, K, labels, *, tol, max_iter, seed, threads, log):
    fit = fit_supervised(G, K, labels, tol=tol, max_iter=max_iter, seed=seed,
                         threads=threads, callback=log.iteration)
    log.add(f"Estimator: supervised maximum likelihood, references {fit.populations}")
    log.convergence(fit.n_iter, fit.converged)
    return AdmixtureResult(fit.Q, fit.P, fit.loglik, fit.n_iter, fit.converged,
                           timings=dict(fit.timings), path="supervised",
                           diagnostics={"populations": list(fit.populations)})


def _fit_plain_ml(G, K, init, *, tol, max_iter, seed, threads, log):
    fit = fit_ml(G, K, init=init, tol=tol, max_iter=max_iter, seed=seed,
                 threads=threads, callback=log.iteration)
    log.add(f"Estimator: maximum likelihood from a {init} start")
    log.convergence(fit.n_iter, fit.converged)
    return AdmixtureResult(fit.Q, fit.P, fit.loglik, fit.n_iter, fit.converged,
                           timings=dict(fit.timings), path=f"ml-{init}",
                           diagnostics={"data_passes": float(fit.n_passes)})


#: Methods whose CV folds and bootstrap replicates are refitted as the point
#: estimate was: a supervised fit keeps its reference individuals' Q one-hot,
#: a projection its P (a replicate's resampled rows of it) and its correction.
#: Refitted unsupervised, the reference rows got bootstrap standard errors up
#: to 0.033 where they have none, and a projection re-estimated its fixed P.
FIXED_REFERENCE_METHODS = ("supervised", "projection")


def _refit(options: FitOptions):
    """``options``' estimator as a CV fold's or bootstrap replicate's refit.

    Returns
    -------
    callable
        ``fit(dosage, K, seed, snps=None) -> (Q, P)``, ``snps`` the dosage's
        columns of a fixed ``options.P`` (all when None).
    """
    def fit(G, K, seed, snps=None):
        P = options.P
        if snps is not None and P is not None:
            P = np.asarray(P)[snps]
        estimate = _estimate(G, K, replace(options, seed=seed, P=P), FitLog())
        return estimate.Q, estimate.P

    return fit


def is_spectral_estimate(path: str) -> bool:
    """Whether a fit's ``path`` ends at the spectral estimate, no ML fit after it.

    Parameters
    ----------
    path : str
        :attr:`AdmixtureResult.path`, its stages joined by ``+``.

    Returns
    -------
    bool

    Examples
    --------
    >>> [is_spectral_estimate(path) for path in
    ...  ("spectral", "spectral+streamed+projection", "spectral+ml", "ml-svd")]
    [True, True, False, False]
    """
    first, *later = path.split("+")
    # a reference's projection or a streamed P leave its Q the spectral one;
    # "+joint" is maximum likelihood on everyone
    return first == "spectral" and not {"ml", "joint"} & set(later)


def add_cv(result, G, options: FitOptions, *, log):
    """Cross-validate ``result``'s fit of ``G`` (``options.cv`` folds).

    Sets ``result.cv``. ``G`` (int8, shape (n_individuals, n_snps)) holds the
    individuals of ``result.Q``'s rows; the log gains ADMIXTURE's ``CV
    error`` line.

    A supervised or projection fit's folds are refitted as it was
    (:data:`FIXED_REFERENCE_METHODS`). Otherwise every fold's fit starts, as
    ADMIXTURE's do, from the full data's maximum-likelihood estimate. The
    spectral estimate is not one: started there, every fold runs a whole
    fit, long at a K above the data's where
    the likelihood is flat, and may climb to a lower mode than plain ML's.
    So when the default kept it, plain ML is fitted once first
    (:func:`~admixspec.ml.crossval.cross_validate` without a start) and the
    folds start from that (docs/benchmarks.md, "Cross-validation of a
    spectral estimate").
    """
    clock = time.perf_counter()
    fit = _refit(options) if options.method in FIXED_REFERENCE_METHODS else None
    start = None if is_spectral_estimate(result.path) else (result.Q, result.P)
    if fit is not None:
        log.add(f"CV: each fold refitted as the point estimate was ({result.path})")
    elif start is None:
        log.add("CV: the folds start from a maximum-likelihood fit of the full data "
                "(the spectral estimate is not one)")
    result.cv = cross_validate(G, result.K, folds=options.cv, seed=options.seed,
                               fit=fit, start=start, threads=options.threads)
    result.timings["cv"] = time.perf_counter() - clock
    log.add(format_cv(result.K, result.cv))


def add_bootstrap(result, G, options: FitOptions, *, log):
    """SNP-block bootstrap standard errors of ``result.Q`` (``result.bootstrap``).

    ``options.bootstrap`` replicates, each refitted by the estimator that
    made ``result``: maximum likelihood from the point estimate, as
    ADMIXTURE's ``-B`` does; a supervised fit or a projection onto the
    replicate's rows of P (:data:`FIXED_REFERENCE_METHODS`); or, where the
    default kept the spectral estimate, the replicate's spectral estimate
    (``refine=False``). From the
    spectral estimate, maximum likelihood drifts to its own optimum, so the
    replicates' spread and mean offset would describe that drift rather than
    the estimate reported (docs/benchmarks.md, "The bootstrap of a spectral
    estimate").
    """
    clock = time.perf_counter()
    if options.method in FIXED_REFERENCE_METHODS:
        fit = _refit(options)
        refitted = f", each refitted as the point estimate was ({result.path})"
    elif is_spectral_estimate(result.path):
        fit = _refit(replace(options, refine=False))
        refitted = ", each refitted by its spectral estimate"
    else:
        fit, refitted = None, ""  # ML from the point estimate, bootstrap's own
    replicates = options.bootstrap
    result.bootstrap = bootstrap_q(G, result.K, Q_ref=result.Q, P_ref=result.P,
                                   n_replicates=replicates, seed=options.seed, fit=fit,
                                   threads=options.threads)
    result.timings["bootstrap"] = time.perf_counter() - clock
    log.add(f"Bootstrap: {replicates} replicates over blocks of SNPs{refitted}")


def add_extras(result: AdmixtureResult, G, options: FitOptions) -> None:
    """Cross-validation and the bootstrap of a finished fit, as ``options`` ask.

    They describe the individuals the fit estimated: everyone, or its
    reference when there was one (``result.reference``), as a fit of the
    reference alone would run them. Sets ``result.cv``/``result.bootstrap``
    and appends their log lines.

    Parameters
    ----------
    result : AdmixtureResult
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        The genotypes of ``result.Q``'s rows and ``result.P``'s SNPs.
    options : FitOptions
    """
    if not (options.cv or options.bootstrap):
        return
    if result.reference is not None:
        G = G[result.reference]
    log = FitLog()
    # the fitted individuals' Q; the timings dict is shared with result
    part = replace(result, Q=result.Q if result.reference is None
                   else result.Q[result.reference])
    if options.cv:
        add_cv(part, G, options, log=log)
    if options.bootstrap:
        add_bootstrap(part, G, options, log=log)
    result.cv, result.bootstrap = part.cv, part.bootstrap
    result.log_lines = list(result.log_lines) + log.lines


def _estimate(G, K: int, o: FitOptions, log: FitLog, *, counts=None) -> AdmixtureResult:
    """The estimator ``o.method`` names, on genotypes in memory."""
    common = {"tol": o.tol, "max_iter": o.max_iter, "threads": o.threads, "log": log}
    if o.method == "projection":
        return _fit_projection(G, K, o.P, reference_q=o.reference_q,
                               members=o.reference_members,
                               correction=o.projection_correction, **common)
    if o.method == "supervised":
        return _fit_supervised(G, K, o.labels, seed=o.seed, **common)
    if o.method == "ml":
        return _fit_plain_ml(G, K, o.init, seed=o.seed, **common)
    return fit_default(G, K, refine=o.refine, seed=o.seed, windows=o.windows,
                       n_starts=o.n_starts, counts=counts, **common)


def fit_in_memory(G: np.ndarray, K: int, options: FitOptions, *,
                  counts=None) -> AdmixtureResult:
    """Fit Q and P of genotypes in memory with the estimator ``options`` name.

    Cross-validation and the bootstrap (``options.cv``, ``options.bootstrap``)
    are not run here but by :func:`add_extras`, once the fit is final (after
    the best of several runs is chosen, and the monomorphic SNPs are back).

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Checked dosage.
    K : int
    options : FitOptions
    counts : tuple of numpy.ndarray, optional
        ``(counted, observed)`` allele counts of ``G``'s SNPs
        (:func:`admixspec.core.genotypes.allele_counts`), when the caller has
        them: the default estimator then makes no pass of its own to count.

    Returns
    -------
    AdmixtureResult
    """
    start = time.perf_counter()
    log = FitLog(options.callback)
    result = _estimate(G, K, options, log, counts=counts)
    logger.info("K=%d: %s estimate, log-likelihood %.6f", K, result.path, result.loglik)
    log.add(f"Loglikelihood: {result.loglik:.6f}")
    result.history, result.log_lines = log.history, log.lines
    result.timings["total"] = time.perf_counter() - start
    return result
