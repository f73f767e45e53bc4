"""Reference fit + projection: Q and P from a random reference, everyone else projected.

The spectral stage forms individuals x individuals moments, so its memory
and time grow with the square of the number of individuals. For cohorts
beyond a few thousand people :func:`admixspec.fit_admixture` fits Q and P on
a random *reference* of ``reference_size`` individuals (any of its
estimators), then estimates every other individual's Q with that P fixed
(ADMIXTURE's projection, :func:`admixspec.ml.project.project`), one chunk of
individuals at a time. Given P individuals are independent, so the projected
Q of one person does not depend on who else is projected.

:func:`fit_with_reference` does this in memory, :func:`fit_streamed` for
genotypes left on disk (``run --memory``).
"""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from ..backends import current_device
from ..core.exceptions import UsageError
from ..core.threads import thread_limit
from ..ml.debias import debiased_project, p_covariance
from ..ml.likelihood import Engine, loglikelihood, make_engine
from ..ml.project import maximize_p, project
from ..ml.refine import accelerated_em, format_iteration
from ..spectral.estimate import HINT_INDIVIDUALS, k_hint
from .pipeline import FitOptions, correct_projection, correction_line, fit_in_memory
from .result import AdmixtureResult

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_REFERENCE_SIZE",
    "REFERENCE_RULE",
    "check_reference_size",
    "fit_streamed",
    "fit_with_reference",
    "reference_hint",
    "reference_individuals",
]

logger = logging.getLogger("admixspec")

#: Default reference size. The spectral stage's traced peak at 5,000 x 20,000 is
#: 500 MiB: one m x m second moment (191 MiB, four times as much at 10,000),
#: the rescoring sample's frequencies (m x 5,000 doubles) and a frequency block
#: (docs/benchmarks.md, "The spectral stage's memory"); its m^2 n product
#: dominates the time; 5,000 individuals (10,000 allele copies) estimate P with
#: a sampling error well below the Q error of one projected individual.
DEFAULT_REFERENCE_SIZE = 5000
#: Individuals projected per chunk (the chunk's int8 genotypes are copied).
DEFAULT_CHUNK_SIZE = 5000
#: How the reference is drawn, as the log and JSON record it.
REFERENCE_RULE = (
    "sorted(numpy.random.default_rng(seed).choice(n_individuals, size, replace=False))"
)


def reference_individuals(n_individuals: int, size: int, *, seed=None) -> np.ndarray:
    """Rows of the reference: ``size`` of ``n_individuals`` drawn without replacement.

    Parameters
    ----------
    n_individuals : int
    size : int
        Reference size; all individuals when ``size >= n_individuals``.
    seed : int, optional

    Returns
    -------
    numpy.ndarray, int64, shape (min(size, n_individuals),)
        Row indices in increasing order (:data:`REFERENCE_RULE`).

    Examples
    --------
    >>> reference_individuals(10, 3, seed=1).tolist()
    [3, 4, 7]
    """
    if size >= n_individuals:
        return np.arange(n_individuals, dtype=np.int64)
    rng = np.random.default_rng(seed)
    rows = rng.choice(n_individuals, size=int(size), replace=False)
    return np.sort(rows).astype(np.int64)


def check_reference_size(K: int, size: int) -> None:
    """Refuse a reference of no more individuals than K (as ``check_K`` a cohort).

    Parameters
    ----------
    K : int
    size : int
        Individuals in the reference.

    Raises
    ------
    UsageError
        ``K >= size``.
    """
    if K >= size:
        raise UsageError(f"K={K} needs a reference of more than {K} individuals, got "
                         f"{size} (reference_size, --reference-size)")


def reference_sample(genotypes, reference_size: int, *, seed=None):
    """The reference individuals and the SNPs of their in-memory fit, read from disk.

    The reference's int8 genotypes may take half of ``genotypes.memory_bytes``:
    all kept SNPs when they fit, else a random subset (``seed``) of as many
    as fit, but at least 64 (all of them when there are fewer), in file
    order. The sample is read once per run: the file keeps it
    (:meth:`admixspec.io.streamed.StreamedGenotypes.read`) for every K.

    Parameters
    ----------
    genotypes : admixspec.io.streamed.StreamedGenotypes
    reference_size : int
    seed : int, optional

    Returns
    -------
    rows : numpy.ndarray, int64
        Reference individuals (:func:`reference_individuals`).
    snps : numpy.ndarray, int64
        Positions of the SNPs read, increasing.
    G : numpy.ndarray, int8, shape (len(rows), len(snps))
    """
    source = genotypes.chunks
    rows = reference_individuals(source.n_individuals, reference_size, seed=seed)
    # at least 64 SNPs, whatever the budget (all of them when there are fewer)
    fit_snps = max(int(genotypes.memory_bytes / 2 // len(rows)), 64)
    snps = np.arange(source.n_snps, dtype=np.int64)
    if fit_snps < source.n_snps:
        rng = np.random.default_rng(seed)
        snps = np.sort(rng.choice(source.n_snps, fit_snps, replace=False))
    return rows, snps, genotypes.read(rows=rows, columns=snps)


def reference_hint(genotypes, reference_size: int, *, seed=None):
    """The run's spectral hint for K, on the reference a fit would draw.

    The hint's moments are individuals x individuals, so it takes at most
    :data:`admixspec.spectral.estimate.HINT_INDIVIDUALS` of them: in memory
    the first draw of :func:`reference_individuals` at that size, read in
    place (no copy of their rows); for genotypes left on disk a sample of
    the reference's sample (:func:`reference_sample`), which the file keeps
    for the fit that reads it next, so the hint reads nothing of its own.

    Parameters
    ----------
    genotypes : Genotypes or admixspec.io.streamed.StreamedGenotypes
    reference_size : int
        The fit's reference (everyone when it is at least the cohort).
    seed : int, optional

    Returns
    -------
    admixspec.spectral.estimate.KHint
    """
    if hasattr(genotypes, "chunks"):
        return k_hint(reference_sample(genotypes, reference_size, seed=seed)[2],
                      seed=seed)
    rows = reference_individuals(genotypes.n_individuals,
                                 min(reference_size, HINT_INDIVIDUALS), seed=seed)
    return k_hint(genotypes.dosage, individuals=rows, seed=seed)


def _project_chunks(read, rows, P, *, chunk_size, tol, max_iter, threads,
                    covariance=None):
    """Project individuals ``rows`` onto P, ``chunk_size`` at a time.

    ``read(chunk)`` gives the int8 genotypes of the individuals ``chunk``
    (rows of the in-memory matrix, or read from disk for a streamed input;
    on a GPU, their streamed source, which the device engine reads once):
    only one chunk of individuals is in memory at a time, and each converges
    by itself, as ADMIXTURE's projection of a file of that many people would.
    With P's sampling ``covariance`` (shape (n_snps, K, K)) each chunk's Q is
    then corrected for it (:func:`admixspec.ml.debias.debiased_project`).
    """
    K = P.shape[1]
    Q = np.empty((len(rows), K))
    iterations = []
    for start in range(0, len(rows), chunk_size):
        chunk = rows[start : start + chunk_size]
        counter = []
        G = read(chunk)
        # From uniform proportions, not least squares: the likelihood is concave
        # in Q for a fixed P, so the start changes only the iterations (0 or 1
        # more on four Balding-Nichols settings, the same Q to 1e-10; 35 against
        # 29 over the five chunks of a streamed CPU run, docs/benchmarks.md),
        # while least squares is a pass over the chunk on the host, for a GPU a
        # decode of the file (14.1 s of the 91.4 s of a 10,000 x 500,000 run,
        # docs/gpu.md).
        Q_chunk = project(G, P, Q0=np.full((len(chunk), K), 1 / K), tol=tol,
                          max_iter=max_iter, threads=threads, callback=counter.append)
        if covariance is not None:  # on a GPU, G is the chunk's streamed source
            dosage = G if isinstance(G, np.ndarray) else G.read()
            Q_chunk = debiased_project(dosage, P, covariance, Q_chunk)
        Q[start : start + len(chunk)] = Q_chunk
        iterations.append(len(counter))
        logger.info("projected %d of %d individuals", start + len(chunk), len(rows))
    return Q, iterations


def _reference_log(fit: AdmixtureResult, fitted_snps: int | None = None) -> list:
    """The reference fit's log, "Loglikelihood:" renamed "Reference loglikelihood:".

    "Loglikelihood:" (the line ADMIXTURE's log readers take) is kept for
    everyone's, which the caller appends. ``fitted_snps``: the fit saw only
    that many SNPs (a streamed reference sample), which the line then says.
    """
    name = "Reference loglikelihood" + (
        "" if fitted_snps is None else f" (on the {fitted_snps} SNPs fitted in memory)")
    return [f"{name}:{line[len('Loglikelihood:'):]}"
            if line.startswith("Loglikelihood:") else line for line in fit.log_lines]


def fit_with_reference(G: np.ndarray, K: int, *, reference_size: int, chunk_size: int,
                       options: FitOptions, joint: bool = False) -> AdmixtureResult:
    """Fit Q and P on a random reference, then project everyone else onto P.

    With ``joint``, when the reference's estimate is maximum likelihood, the
    fit ends with maximum likelihood on everyone, started from the
    reference's P and everyone's Q (the projection's for the others): the
    reference then serves the spectral stage, whose moments grow with the
    square of the individuals, and the choice, while the answer is the
    maximum-likelihood estimate of the whole cohort, as ADMIXTURE's. A spectral
    estimate kept as it is stays reference + projection.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Checked dosage of more than ``reference_size`` individuals.
    K : int
    reference_size : int
        Individuals in the reference.
    chunk_size : int
        Individuals projected at once.
    options : FitOptions
        The reference fit's (cross-validation and bootstrap then describe the
        reference); the projection uses its ``tol``, ``max_iter`` and ``threads``.
    joint : bool
        End maximum-likelihood estimates with maximum likelihood on everyone.

    Returns
    -------
    AdmixtureResult
        Q of shape (n_individuals, K) in the input's row order, the
        reference's P, and the log-likelihood of all individuals; ``path``
        ends in ``+projection`` (``+projection+joint`` after the joint fit, whose
        Q and P these are); ``reference`` holds the reference's rows and
        ``diagnostics["reference"]`` the size, seed, :data:`REFERENCE_RULE`,
        the reference's log-likelihood and the projection's iterations per
        chunk.
    """
    m = G.shape[0]
    rows = reference_individuals(m, reference_size, seed=options.seed)
    start = time.perf_counter()
    logger.info("reference: fitting %s",
                _reference_words(len(rows), m, seed=options.seed))
    fit = fit_in_memory(G[rows], K, options)
    reference_seconds = time.perf_counter() - start
    others = np.setdiff1d(np.arange(m), rows, assume_unique=True)
    Q = np.empty((m, fit.Q.shape[1]))
    Q[rows] = fit.Q
    joint = joint and "ml" in fit.path
    # a start for the joint fit needs no correction for P's noise
    correction = options.projection_correction
    corrected = not joint and correct_projection(correction, len(rows))
    Q[others], iterations = _project_chunks(
        lambda chunk: G[chunk], others, fit.P, chunk_size=chunk_size, tol=options.tol,
        max_iter=options.max_iter, threads=options.threads,
        covariance=p_covariance(G[rows], fit.Q, fit.P) if corrected else None,
    )
    projected = time.perf_counter() - start - reference_seconds
    diagnostics = dict(fit.diagnostics)
    diagnostics["reference"] = {
        "size": len(rows), "n_individuals": m, "seed": options.seed,
        "rule": REFERENCE_RULE, "projected": len(others),
        "chunk_size": chunk_size, "reference_loglik": float(fit.loglik),
        "projection_iterations": iterations, "projection_corrected": corrected,
    }
    lines = _reference_log(fit) + [
        (f"Reference: {len(rows)} of {m} individuals drawn at random (seed "
         f"{options.seed}); the other {len(others)} projected onto its P in chunks of "
         f"{chunk_size}"),
    ] + ([correction_line(len(rows))] if corrected else [])
    # the joint fit's log-likelihood replaces this one
    loglik = np.nan if joint else loglikelihood(G, Q, fit.P, threads=options.threads)
    lines.append(f"Loglikelihood: {loglik:.6f}")
    timings = {**fit.timings, "reference_fit": reference_seconds,
               "projection": projected}
    result = dataclasses.replace(
        fit, Q=Q, loglik=float(loglik), path=f"{fit.path}+projection",
        diagnostics=diagnostics, timings=timings, log_lines=lines, reference=rows,
    )
    if joint:
        result = _with_joint(result, G, options)
    result.timings["total"] = time.perf_counter() - start
    return result


def _with_joint(result: AdmixtureResult, genotypes, options: FitOptions):
    """``result`` refined by maximum likelihood on everyone, from its Q and P.

    ``genotypes`` is the dosage in memory or a streamed source (on a GPU,
    whose engine copies it to the device once). Q, P, log-likelihood,
    iterations and convergence become the joint fit's, ``path`` gains
    ``+joint``, the log the joint fit's iterations (before the last line,
    everyone's "Loglikelihood:", which is replaced) and the JSON
    ``diagnostics["joint"]`` and ``timings["joint"]``.
    """
    start = time.perf_counter()
    m, K = result.Q.shape
    logger.info("maximum likelihood on all %d individuals, from the reference's P and "
                "the projected Q", m)
    history: list = []
    with thread_limit(options.threads):
        refined = _ml_from(make_engine(genotypes, K), result.Q, result.P,
                           tol=options.tol, max_iter=options.max_iter,
                           seed=options.seed, callback=history.append)
    lines = [*result.log_lines[:-1],
             f"Joint maximum likelihood on all {m} individuals, from the reference's P "
             "and the projected Q:",
             *(format_iteration(info) for info in history),
             _convergence_line(refined.n_iter, refined.converged),
             f"Loglikelihood: {refined.loglik:.6f}"]
    diagnostics = {**result.diagnostics, "joint": {"n_iter": int(refined.n_iter),
                                                   "converged": bool(refined.converged)}}
    return dataclasses.replace(
        result, Q=refined.Q, P=refined.P, loglik=float(refined.loglik),
        n_iter=refined.n_iter, converged=refined.converged, path=f"{result.path}+joint",
        diagnostics=diagnostics, log_lines=lines,
        timings={**result.timings, "joint": time.perf_counter() - start})


def _ml_from(engine, Q, P, *, tol, max_iter, seed, callback=None):
    """Accelerated block relaxation from ``(Q, P)`` on an engine (memory or stream)."""
    return accelerated_em(engine, Q, P, tol=tol, max_iter=max_iter,
                          rng=np.random.default_rng(seed), callback=callback)


def _convergence_line(n_iter: int, converged: bool) -> str:
    """ADMIXTURE's line on how a maximization ended."""
    if converged:
        return f"Converged in {n_iter} iterations"
    return f"Not converged: stopped at the iteration limit ({n_iter} iterations)"


# --------------------------------------------------------------------------- streamed


def fit_streamed(genotypes, K: int, *, reference_size: int, chunk_size: int,
                 options: FitOptions, joint: bool = False) -> AdmixtureResult:
    """:func:`fit_with_reference` for genotypes left on disk (streamed chunk by chunk).

    1. The reference's genotypes on the SNPs that fit half the budget
       (:func:`reference_sample`) get the in-memory pipeline
       (:func:`admixspec.fit.pipeline.fit_in_memory`: spectral estimate, the
       choice of refinement, maximum likelihood).
    2. When that was a subset of the SNPs, P on every SNP follows from the
       reference's Q by streamed EM passes, and, when step 1 refined by
       maximum likelihood, the reference's (Q, P) are refined on every SNP by
       streamed block relaxation.
    3. Everyone else's Q is projected onto P (P fixed) in chunks of
       individuals, as :func:`fit_with_reference` projects them: each chunk
       (at most ``chunk_size`` individuals, fewer if their genotypes would
       take more than half the budget) is read from disk once and projected
       in memory, so the projected Q equals the in-memory path's.

    On a GPU (:func:`admixspec.backends.current_device`), the streamed passes
    of steps 2 and 3 run on the device: each engine copies its individuals'
    genotypes there once, in the ``.bed``'s own bytes, one chunk of SNPs at a
    time (:class:`admixspec.backends.gpu.engine.CudaEngine`), so the host
    holds no int8 matrix beyond the reference sample of step 1, and a
    projection chunk is ``chunk_size`` individuals whatever the budget.
    There ``joint`` adds step 4 as :func:`fit_with_reference` does: maximum
    likelihood on everyone, whose genotypes the device holds. On the CPU
    every iteration of it would read the whole file again, so there the fit
    stays reference + projection (the log says so; a ``--memory`` that holds
    the genotypes gives the joint fit in memory).

    Parameters
    ----------
    genotypes : admixspec.io.streamed.StreamedGenotypes
    K, reference_size, chunk_size, options
        As in :func:`fit_with_reference`; cross-validation, bootstrap,
        projection and supervised fits need the genotypes in memory
        (:func:`admixspec.fit_admixture` refuses them).

    Returns
    -------
    AdmixtureResult
        As :func:`fit_with_reference`'s; ``diagnostics["streamed"]`` records
        the chunks and the SNPs of the in-memory reference fit.
    """
    start = time.perf_counter()
    source = genotypes.chunks
    m, n = source.n_individuals, source.n_snps
    o = options
    rows, snps, G_ref = reference_sample(genotypes, reference_size, seed=o.seed)
    logger.info("reference: %s on %d of %d SNPs in memory",
                _reference_words(len(rows), m, seed=o.seed), len(snps), n)
    fit = fit_in_memory(G_ref, K, o)
    Q_ref, P, n_iter, converged = fit.Q, fit.P, fit.n_iter, fit.converged
    history: list = []
    on_device = current_device() == "cuda"
    with thread_limit(o.threads):
        reference = source.subset(rows=rows)
        if len(snps) < n:
            engine = make_engine(reference, K)  # a GPU's reads the file once, here
            refine = "ml" in fit.path
            P = maximize_p(reference, Q_ref, threads=o.threads, engine=engine,
                           P0=_p_start(fit, snps, n) if refine else None).P
            if refine:
                logger.info("reference: maximum likelihood on all %d SNPs, streamed", n)
                refined = _ml_from(engine, Q_ref, P, tol=o.tol,
                                       max_iter=o.max_iter, seed=o.seed,
                                       callback=history.append)
                Q_ref, P = refined.Q, refined.P
                n_iter, converged = refined.n_iter, refined.converged
            del engine  # frees the device's copy before the projection's
        others = np.setdiff1d(np.arange(m), rows, assume_unique=True)
        Q = np.empty((m, K))
        Q[rows] = Q_ref
        if on_device:  # each chunk's engine copies its genotypes from the file
            def read(chunk):
                return source.subset(rows=chunk)
        else:
            fitting = max(1, int(genotypes.memory_bytes / 2 // max(n, 1)))
            chunk_size = min(chunk_size, fitting)

            def read(chunk):
                return source.subset(rows=chunk).read()
        iterations = []
        joint = joint and "ml" in fit.path and len(others) > 0
        if joint and not on_device:
            logger.info("maximum likelihood on the reference only: on the CPU, one on "
                        "all %d individuals would read the file once per iteration", m)
            joint = False
        # a start for the joint fit needs no correction for P's noise
        corrected = not joint and correct_projection(o.projection_correction, len(rows))
        if len(others):
            logger.info("projecting %d individuals onto P, %d at a time read from disk",
                        len(others), chunk_size)
            # the reference's genotypes tell which calls are missing when they
            # hold every SNP (as in memory); else every call counts as made
            called = G_ref if len(snps) == n else None
            Q[others], iterations = _project_chunks(
                read, others, P, chunk_size=chunk_size, tol=o.tol, max_iter=o.max_iter,
                threads=o.threads,
                covariance=p_covariance(called, Q_ref, P) if corrected else None)
        loglik = np.nan if joint else Engine(source, K).loglik(Q, P)
    projection = {"projection_chunk_size": chunk_size,
                  "projection_iterations": iterations,
                  "projection_corrected": corrected and len(others) > 0}
    result = _streamed_result(fit, Q, P, loglik, n_iter, converged, source, rows, snps,
                              history, projection)
    if joint:
        result = _with_joint(result, source, o)
    result.timings["total"] = time.perf_counter() - start
    return dataclasses.replace(result, reference=rows if len(rows) < m else None)


def _reference_words(size: int, m: int, *, seed=None) -> str:
    """The reference for the log: everyone, or how many of ``m`` were drawn.

    Examples
    --------
    >>> _reference_words(300, 300), _reference_words(100, 300, seed=2)
    ('all 300 individuals', '100 of 300 individuals (random, seed 2)')
    """
    if size >= m:
        return f"all {m} individuals"
    drawn = "random" if seed is None else f"random, seed {seed}"
    return f"{size} of {m} individuals ({drawn})"


def _p_start(fit, snps, n):
    """A start for P on every SNP: the in-memory fit's P on its SNPs, 0.5 elsewhere.

    It starts the EM passes of :func:`maximize_p` where maximum likelihood
    follows them and settles P whatever its start: on three Balding-Nichols
    settings the fit from this start took 0 or 1 more iterations and 0-3 more
    passes than from least squares, to the same optimum. Least squares costs
    a pass over the file on the host besides: 15.7 s of the 91.4 s of a
    10,000 x 500,000 default run on a GPU (docs/gpu.md), where the passes
    themselves run on the device.
    """
    P0 = np.full((n, fit.P.shape[1]), 0.5)
    P0[snps] = fit.P
    return P0


def _streamed_result(fit, Q, P, loglik, n_iter, converged, source, rows, snps, history,
                     projection):
    """The fit's result with everyone's Q, the streamed P, and what was streamed."""
    m, n = source.n_individuals, source.n_snps
    path = fit.path + ("" if len(snps) == n else "+streamed") + \
        ("+projection" if len(rows) < m else "")
    diagnostics = dict(fit.diagnostics)
    diagnostics["streamed"] = {
        "chunks": len(source.bounds), "chunk_snps": int(source.chunk_snps),
        "reference_size": len(rows), "reference_snps": len(snps),
        "reference_loglik_subset": float(fit.loglik), **projection,
    }
    lines = _reference_log(fit, None if len(snps) == n else len(snps))
    if history:
        lines.append(f"Reference maximum likelihood on all {n} SNPs, streamed:")
        lines += [format_iteration(info) for info in history]
        lines.append(_convergence_line(n_iter, converged))
    lines += [
        (f"Streamed: {m} individuals x {n} SNPs read from disk in {len(source.bounds)} "
         f"chunks of up to {source.chunk_snps} SNPs; reference "
         f"{_reference_words(len(rows), m)}, fitted in memory on {len(snps)} SNPs"),
    ] + ([correction_line(len(rows))] if projection["projection_corrected"] else []) + [
        f"Loglikelihood: {loglik:.6f}",
    ]
    return dataclasses.replace(
        fit, Q=Q, P=P, loglik=float(loglik), n_iter=n_iter, converged=converged,
        path=path, diagnostics=diagnostics, log_lines=lines,
        timings=dict(fit.timings))
