"""``fit_admixture``: the one entry point of every estimator.

By default spectral first, likelihood where needed; ``method=`` selects plain
maximum likelihood, the supervised fit or projection instead, so
``admixspec run`` is one call of :func:`fit_admixture` per K.

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
``ml-svd``, ``ml-random``
    ``method="ml"``: maximum likelihood from that start.
``supervised``
    ``method="supervised"``: ADMIXTURE's supervised fit
    (:func:`admixspec.ml.project.fit_supervised`).
``projection``
    ``method="projection"``: Q by maximum likelihood with P fixed
    (:func:`admixspec.ml.project.project`).

Refinement with ``refine="auto"`` is decided by the rare-allele share and
the anchors of the spectral Q (:func:`admixspec.choice.choose_estimator`).
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
from .ml.bootstrap import BootstrapResult
from .ml.chunks import least_squares_p
from .ml.bootstrap import bootstrap as bootstrap_q
from .ml.crossval import CVResult, cross_validate, format_cv
from .ml.initial import p_given_q
from .ml.likelihood import (
    P_MAX,
    P_MIN,
    Engine,
    check_dosage,
    loglikelihood,
    thread_limit,
)
from .ml.project import fit_supervised, project
from .gpu.device import default_device
from .ml.refine import fit_ml, format_iteration
from .result import FitResult
from .choice import choose_estimator
from .spectral.estimate import DEFAULT_WINDOWS, snp_sample, spectral_scan

__all__ = [
    "AdmixtureResult",
    "METHODS",
    "fit_admixture",
    "rare_allele_share",
]

logger = logging.getLogger("admixspec")

#: Entries (individuals x SNPs) in the likelihood scoring sample of the search.
_SCORING_ENTRIES = 200_000
#: Fewest moment SNPs before the rarity window is widened. 1,000 rather than 200:
#: on one Balding-Nichols replicate of the realistic suite a 253-SNP window's
#: noise looked decomposable and won the scan (Q error 0.205; 0.087 with this
#: floor), and no other of its 55 data sets changed (benchmarks/spectral_second_pass.py).
_MIN_MOMENT_SNPS = 1000


@dataclass
class AdmixtureResult(FitResult):
    """Estimated ancestry of one K, as ``admixspec run`` reports it.

    The :class:`~admixspec.result.FitResult` fields (Q, P, loglik, n_iter,
    converged, history, timings, diagnostics) and:

    Attributes
    ----------
    path : str
        Which estimator produced Q (see the module docstring).
    log_lines : list of str
        The fit's lines of ``PREFIX.K.log``, in order: EM iterations, the
        estimator and its reasons, the log-likelihood, the CV error and
        bootstrap (when asked for); :meth:`format_log` joins them.
    cv : admixspec.ml.crossval.CVResult or None
        Cross-validation error, when ``cv`` was asked for.
    bootstrap : admixspec.ml.bootstrap.BootstrapResult or None
        Bootstrap standard errors and bias of Q, when asked for.
    """

    path: str = ""
    log_lines: list = field(default_factory=list)
    cv: CVResult | None = None
    bootstrap: BootstrapResult | None = None

    def format_log(self) -> str:
        """The fit's log text, one line per entry of :attr:`log_lines`."""
        return "".join(f"{line}\n" for line in self.log_lines)

    def record(self) -> dict:
        """JSON-ready facts of the fit (the body of ``PREFIX.K.json``)."""
        record = {
            "path": self.path, "loglik": float(self.loglik), "n_iter": int(self.n_iter),
            "converged": bool(self.converged), "timings": self.timings,
            "diagnostics": self.diagnostics,
        }
        if self.cv is not None:
            record["cv_error"] = float(self.cv.error)
            record["cv_fold_errors"] = self.cv.fold_errors.tolist()
        return record


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
        # through the engine's chunks: G placed once (a Dask cluster would take it twice)
        P = np.clip(least_squares_p(engine.chunks, Q), P_MIN, P_MAX)
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


#: Estimators :func:`fit_admixture` dispatches to (``"auto"`` picks one).
METHODS = ("auto", "spectral", "ml", "supervised", "projection")
#: Starts of plain maximum likelihood (``method="ml"``).
ML_INITS = ("svd", "random")


class _FitLog:
    """Collects a fit's log lines; records EM iterations and forwards them."""

    def __init__(self, callback=None):
        self.lines: list[str] = []
        self.history: list = []
        self._callback = callback

    def add(self, line: str) -> None:
        self.lines.append(line)
        logger.info("%s", line)

    def iteration(self, info) -> None:
        # the engine itself logs each iteration; only record it here
        self.history.append(info)
        self.lines.append(format_iteration(info))
        if self._callback is not None:
            self._callback(info)

    def convergence(self, n_iter: int, converged: bool) -> None:
        if n_iter:
            self.add(
                f"Converged in {n_iter} iterations" if converged else
                f"Not converged: stopped at the iteration limit ({n_iter} iterations)"
            )


def _resolve_method(method, init, labels, P):
    """The estimator to run and the ML start, checked against what was given."""
    if method not in METHODS:
        raise UsageError(f"method must be one of {METHODS}, got {method!r}")
    if init not in (None, "spectral", *ML_INITS):
        raise UsageError(f"init must be 'spectral', 'svd' or 'random', got {init!r}")
    if method == "auto":
        method = ("projection" if P is not None else "supervised" if labels is not None
                  else "ml" if init in ML_INITS else "spectral")
    if method == "projection" and P is None:
        raise UsageError("method='projection' needs the fixed allele frequencies P")
    if method == "supervised" and labels is None:
        raise UsageError("method='supervised' needs the reference labels")
    if method != "projection" and P is not None:
        raise UsageError(f"P is used only by method='projection', not {method!r}")
    if method != "supervised" and labels is not None:
        raise UsageError(f"labels are used only by method='supervised', not {method!r}")
    if method == "ml":
        init = init or "svd"
        if init not in ML_INITS:
            raise UsageError(f"method='ml' starts from 'svd' or 'random', not {init!r}")
    elif init not in (None, "spectral") and method == "spectral":
        raise UsageError(
            f"method='spectral' starts from the spectral estimate, not {init!r}"
        )
    return method, init


def _fit_projection(G, K, P, *, tol, max_iter, threads, log):
    P = np.clip(np.array(P, dtype=np.float64, ndmin=2), P_MIN, P_MAX)
    if P.shape[1] != K:
        raise UsageError(f"P has {P.shape[1]} columns (components) but K={K}")
    Q = project(G, P, tol=tol, max_iter=max_iter, threads=threads,
                callback=log.iteration)
    log.add("Estimator: projection onto fixed P")
    n_iter = len(log.history)
    # project() warns when it stops at max_iter; it returns Q only
    log.convergence(n_iter, n_iter < max_iter)
    return AdmixtureResult(Q, P, loglikelihood(G, Q, P, threads=threads), n_iter,
                           n_iter < max_iter, path="projection")


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


def _choose_and_fit(G, K, Q, *, counts, refine, tol, max_iter, seed, threads, log,
                    timings, diagnostics):
    """Keep the spectral Q (P given Q) or maximise the likelihood from it.

    Returns ``(path, ml, P, loglik)``: ``ml`` is the :class:`MLResult` of a
    refinement (then ``P`` and ``loglik`` are None), else None.
    """
    diagnostics["rare_allele_share"] = rare_allele_share(G, counts=counts)
    decision, reason = refine, "requested"
    starts = {"spectral estimate": (Q, None)}
    if refine == "auto":
        choice = choose_estimator(Q, diagnostics["rare_allele_share"])
        timings["choice"] = choice.seconds
        decision, reason = choice.estimator == "spectral+ml", choice.reason
        diagnostics["choice"] = choice.record()
    diagnostics["refine"] = bool(decision)
    diagnostics["refine_reason"] = reason
    logger.info("refinement: %s (%s)", "yes" if decision else "no", reason)
    if decision:
        ml = _best_ml_fit(G, K, starts, tol=tol, max_iter=max_iter, seed=seed,
                          threads=threads, log=log, diagnostics=diagnostics)
        return "spectral+ml", ml, None, None
    clock = time.perf_counter()
    P, loglik, n_p = _p_given_q(G, Q, threads=threads)
    timings["p_given_q"] = time.perf_counter() - clock
    diagnostics["p_iterations"] = int(n_p)
    return "spectral", None, P, loglik


def _best_ml_fit(G, K, starts, *, tol, max_iter, seed, threads, log, diagnostics):
    """Maximum likelihood from each start; the fit with the highest log-likelihood.

    ``starts`` maps a name to ``(Q0, P0)``. The spectral path passes one, the
    spectral estimate (issue 19: one ML fit; the held-out rule's training-fit
    start went with that rule). Ties keep the first.
    """
    fits = {name: fit_ml(G, K, Q0=Q0, P0=P0, tol=tol, max_iter=max_iter, seed=seed,
                         callback=log.iteration, threads=threads)
            for name, (Q0, P0) in starts.items()}
    logliks = {name: fit.loglik if np.isfinite(fit.loglik)
               else loglikelihood(G, fit.Q, fit.P, threads=threads)
               for name, fit in fits.items()}
    best = max(logliks, key=logliks.get)
    if len(fits) > 1:
        diagnostics["ml_starts"] = logliks
        diagnostics["ml_start"] = best
        log.add("ML starts: " + "; ".join(f"{name} {value:.6f}"
                                          for name, value in logliks.items())
                + f"; kept the {best}'s")
    return fits[best]


def _log_spectral(log, path, diagnostics):
    d = diagnostics
    log.add(f"Estimator: {path}")
    if "eigenpairs" in d:
        log.add(
            f"Spectral: {d['moment_snps']} moment SNPs (minor allele frequency <= "
            f"{d['max_frequency']:g}), {d['eigenpairs']} eigenpairs "
            f"({d['stable_eigenpairs']} Newton-stable), {d['local_maxima']} local "
            "maxima, "
            f"{d['candidates']} candidates, {d['subsets']} subsets searched"
        )
    for key in ("refine_reason", "fallback_reason"):
        if key in d:
            log.add(f"{key.replace('_', ' ').capitalize()}: {d[key]}")


def _fit_spectral_path(G, K, *, refine, tol, max_iter, seed, windows, n_starts,
                       threads, log):
    """The default pipeline: spectral estimate, then maybe maximum likelihood."""
    timings: dict = {}
    diagnostics: dict = {"version": __version__}
    counts = allele_counts(G)  # one pass, shared by every stage below
    if K == 1:
        Q, P = _single_population(counts, G.shape[0])
        log.add("Estimator: single-population")
        return AdmixtureResult(Q, P, loglikelihood(G, Q, P, threads=threads),
                               timings=timings, diagnostics=diagnostics,
                               path="single-population")
    Q = _spectral(G, K, counts=counts, windows=windows, n_starts=n_starts,
                  seed=seed, timings=timings, diagnostics=diagnostics)
    if Q is None:
        logger.warning("spectral estimate unavailable (%s); maximum likelihood from the "
                       "SVD start", diagnostics["fallback_reason"])
        path, P, loglik = "ml-fallback", None, None
        ml = fit_ml(G, K, init="svd", tol=tol, max_iter=max_iter, seed=seed,
                    callback=log.iteration, threads=threads)
    else:
        path, ml, P, loglik = _choose_and_fit(
            G, K, Q, counts=counts, refine=refine, tol=tol, max_iter=max_iter,
            seed=seed, threads=threads, log=log, timings=timings,
            diagnostics=diagnostics,
        )
    n_iter, converged = 0, True
    if ml is not None:
        Q, P, loglik, n_iter, converged = ml.Q, ml.P, ml.loglik, ml.n_iter, ml.converged
        if not np.isfinite(loglik):  # the engine's record of an unfinished fit
            loglik = loglikelihood(G, Q, P, threads=threads)
        timings["likelihood"] = float(ml.timings.get("total", 0.0))
    _log_spectral(log, path, diagnostics)
    log.convergence(n_iter, converged)
    return AdmixtureResult(Q, P, float(loglik), n_iter, converged, timings=timings,
                           diagnostics=diagnostics, path=path)


def _add_cv(result, G, folds, *, seed, threads, log):
    clock = time.perf_counter()
    result.cv = cross_validate(G, result.K, folds=folds, seed=seed,
                               start=(result.Q, result.P), threads=threads)
    result.timings["cv"] = time.perf_counter() - clock
    log.add(format_cv(result.K, result.cv))


def _add_bootstrap(result, G, replicates, *, seed, threads, log):
    clock = time.perf_counter()
    result.bootstrap = bootstrap_q(G, result.K, Q_ref=result.Q, P_ref=result.P,
                                   n_replicates=replicates, seed=seed, threads=threads)
    result.timings["bootstrap"] = time.perf_counter() - clock
    log.add(f"Bootstrap: {replicates} replicates over blocks of SNPs")


def fit_admixture(
    genotypes,
    K: int,
    *,
    method: str = "auto",
    init: str | None = None,
    labels=None,
    P=None,
    seed: int | None = None,
    refine: bool | str = "auto",
    tol: float = 1e-4,
    max_iter: int = 1000,
    cv: int | None = None,
    bootstrap: int | None = None,
    windows=DEFAULT_WINDOWS,
    n_starts: int | None = None,
    threads: int | None = None,
    callback=None,
    device: str | None = None,
) -> AdmixtureResult:
    """Estimate ancestry proportions Q and ancestral frequencies P.

    The single entry point of every estimator: ``admixspec run`` makes one
    call of it per K, so a script gets the same Q, P, log-likelihood and log
    text (:meth:`AdmixtureResult.format_log`) as the command line.

    Parameters
    ----------
    genotypes : Genotypes or array_like, int8, shape (n_individuals, n_snps)
        Copies of the counted allele (0/1/2), -1 for missing.
    K : int
        Number of ancestral populations, ``1 <= K < n_individuals``.
    method : {"auto", "spectral", "ml", "supervised", "projection"}
        ``"spectral"``: the spectral estimate, refined by maximum likelihood
        per ``refine`` (paths ``spectral``, ``spectral+ml``, ``ml-fallback``,
        ``single-population``); ``"ml"``: plain maximum likelihood from the
        ``init`` start (path ``ml-svd``/``ml-random``); ``"supervised"``:
        ADMIXTURE's supervised fit with reference ``labels``;
        ``"projection"``: Q by maximum likelihood with ``P`` fixed.
        ``"auto"`` (run's behaviour): projection when ``P`` is given, else
        supervised when ``labels`` are, else ML when ``init`` is ``"svd"`` or
        ``"random"``, else spectral.
    init : {"spectral", "svd", "random"}, optional
        Start of the fit (``--init``); ``"svd"`` or ``"random"`` mean plain ML.
    labels : sequence of str or None, length n_individuals, optional
        Reference population per individual, ``None``/``"-"`` for individuals
        to estimate (see :func:`admixspec.ml.project.fit_supervised`).
    P : array_like, float, shape (n_snps, K), optional
        Fixed allele frequencies for projection (e.g. a reference ``.P``).
    seed : int, optional
        Seed for every random choice (eigenpair starts, SNP samples, EM
        mini-batches, CV folds, bootstrap resamples); the same seed gives the
        same output.
    refine : {"auto", True, False}
        Spectral method only: maximise the likelihood from the spectral
        estimate always (True), never (False), or when few SNPs are rare
        (the spectral premise is absent) or every component has anchors
        ("auto", :func:`admixspec.choice.choose_estimator`).
    tol : float
        Log-likelihood change that stops EM (ADMIXTURE's ``-C``).
    max_iter : int
        EM iteration limit.
    cv : int, optional
        Folds of cross-validation to run on the fit (``--cv``).
    bootstrap : int, optional
        Bootstrap replicates for standard errors of Q (``-B``).
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
    device : {"auto", "cpu", "cuda"}, optional
        Where the maximum-likelihood fits (refinement, plain ML, supervised,
        projection, CV, bootstrap) run their likelihood passes (see
        :func:`admixspec.gpu.default_device`); the spectral stage stays on the
        CPU. Default: ``"auto"``.

    Returns
    -------
    AdmixtureResult

    Raises
    ------
    UsageError
        An unknown ``method``/``init``/``refine``, a method without the input
        it needs (``P``, ``labels``), or an input it does not use.

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols, q_error
    >>> sim = simulate_balding_nichols(40, 3000, 2, fst=0.3, alpha=0.3, seed=2)
    >>> result = fit_admixture(sim.genotypes, 2, seed=1)
    >>> result.Q.shape, bool(q_error(sim.Q, result.Q) < 0.05)
    ((40, 2), True)
    >>> result.log_lines[-1] == f"Loglikelihood: {result.loglik:.6f}"
    True
    """
    if refine not in ("auto", True, False):
        raise UsageError(f"refine must be 'auto', True or False, got {refine!r}")
    method, init = _resolve_method(method, init, labels, P)
    G = check_dosage(genotypes)
    check_K(K, G.shape[0])
    K = int(K)
    start = time.perf_counter()
    log = _FitLog(callback)
    common = {"tol": tol, "max_iter": max_iter, "threads": threads, "log": log}
    with default_device(device):  # every fit_ml below, CV and bootstrap included
        if method == "projection":
            result = _fit_projection(G, K, P, **common)
        elif method == "supervised":
            result = _fit_supervised(G, K, labels, seed=seed, **common)
        elif method == "ml":
            result = _fit_plain_ml(G, K, init, seed=seed, **common)
        else:
            result = _fit_spectral_path(G, K, refine=refine, seed=seed, windows=windows,
                                        n_starts=n_starts, **common)
        logger.info("K=%d: %s estimate, log-likelihood %.6f", K, result.path,
                    result.loglik)
        log.add(f"Loglikelihood: {result.loglik:.6f}")
        if cv:
            _add_cv(result, G, cv, seed=seed, threads=threads, log=log)
        if bootstrap:
            _add_bootstrap(result, G, bootstrap, seed=seed, threads=threads, log=log)
    result.history, result.log_lines = log.history, log.lines
    result.timings["total"] = time.perf_counter() - start
    return result
