"""Reference fit + projection: Q and P from a random reference, everyone else projected.

The spectral stage forms individuals x individuals moments, so its memory
and time grow with the square of the number of individuals. For cohorts
beyond a few thousand people :func:`fit_with_reference` fits Q and P on a
random *reference* of ``reference_size`` individuals (any estimator of
:func:`admixspec.fit_admixture`), then estimates every other individual's Q
with that P fixed (ADMIXTURE's projection, :func:`admixspec.ml.project.project`),
one chunk of individuals at a time. Given P individuals are independent, so
the projected Q of one person does not depend on who else is projected.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from .exceptions import UsageError
from .ml.likelihood import check_dosage, loglikelihood
from .ml.project import project
from .model import AdmixtureResult, fit_admixture

__all__ = [
    "DEFAULT_REFERENCE_SIZE",
    "REFERENCE_RULE",
    "fit_with_reference",
    "reference_individuals",
]

logger = logging.getLogger("admixspec")

#: Default reference size. The spectral stage holds about three m x m
#: matrices (0.6 GB at m = 5,000, 2.4 GB at 10,000) and scoring samples of
#: about m x 5,500 doubles, and its m^2 n product dominates the time; 5,000
#: individuals (10,000 allele copies) estimate P with a sampling error well
#: below the Q error of one projected individual.
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
    if isinstance(size, bool) or int(size) != size or size < 2:
        raise UsageError(
            f"--reference-size must be an integer of at least 2, got {size!r}")
    if size >= n_individuals:
        return np.arange(n_individuals, dtype=np.int64)
    rng = np.random.default_rng(seed)
    rows = rng.choice(n_individuals, size=int(size), replace=False)
    return np.sort(rows).astype(np.int64)


def _project_chunks(G, rows, P, *, chunk_size, tol, max_iter, threads):
    """Project ``G[rows]`` onto P, ``chunk_size`` individuals at a time."""
    Q = np.empty((len(rows), P.shape[1]))
    iterations = []
    for start in range(0, len(rows), chunk_size):
        chunk = rows[start : start + chunk_size]
        counter = []
        Q[start : start + len(chunk)] = project(
            G[chunk], P, tol=tol, max_iter=max_iter, threads=threads,
            callback=counter.append,
        )
        iterations.append(len(counter))
        logger.info("projected %d of %d individuals", start + len(chunk), len(rows))
    return Q, iterations


def fit_with_reference(
    genotypes,
    K: int,
    *,
    reference_size: int = DEFAULT_REFERENCE_SIZE,
    seed: int | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    tol: float = 1e-4,
    max_iter: int = 1000,
    threads: int | None = None,
    **fit_options,
) -> AdmixtureResult:
    """Fit Q and P on a random reference, then project everyone else onto P.

    Parameters
    ----------
    genotypes : Genotypes or array_like, int8, shape (n_individuals, n_snps)
        Copies of the counted allele (0/1/2), -1 for missing.
    K : int
    reference_size : int
        Individuals in the reference (at least 2); with ``reference_size >=
        n_individuals`` this is :func:`admixspec.fit_admixture` on everyone.
    seed : int, optional
        Seeds the reference draw (:func:`reference_individuals`) and the
        reference fit.
    chunk_size : int
        Individuals projected at once.
    tol, max_iter, threads
        As for :func:`admixspec.fit_admixture`; also used by the projection.
    **fit_options
        Passed to :func:`admixspec.fit_admixture` for the reference fit
        (``refine``, ``init``, ``cv``, ...; cross-validation and bootstrap
        then describe the reference).

    Returns
    -------
    AdmixtureResult
        Q of shape (n_individuals, K) in the input's row order, the
        reference's P, and the log-likelihood of all individuals; ``path``
        ends in ``+projection``. ``diagnostics["reference"]`` records the
        size, seed, :data:`REFERENCE_RULE`, the reference's log-likelihood
        and the projection's iterations per chunk.

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols, q_error
    >>> sim = simulate_balding_nichols(300, 3000, 2, fst=0.2, alpha=0.5, seed=2)
    >>> result = fit_with_reference(sim.genotypes, 2, reference_size=100, seed=1)
    >>> result.Q.shape, result.path.endswith("+projection")
    ((300, 2), True)
    >>> bool(q_error(sim.Q, result.Q) < 0.05)
    True
    """
    if isinstance(chunk_size, bool) or int(chunk_size) != chunk_size or chunk_size < 1:
        raise UsageError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    G = check_dosage(genotypes)
    m = G.shape[0]
    rows = reference_individuals(m, reference_size, seed=seed)
    options = {"seed": seed, "tol": tol, "max_iter": max_iter, "threads": threads,
               **fit_options}
    if len(rows) == m:
        return fit_admixture(genotypes, K, **options)
    start = time.perf_counter()
    logger.info("reference: fitting %d of %d individuals (random, seed %s)",
                len(rows), m, seed)
    fit = fit_admixture(G[rows], K, **options)
    reference_seconds = time.perf_counter() - start
    others = np.setdiff1d(np.arange(m), rows, assume_unique=True)
    Q = np.empty((m, fit.Q.shape[1]))
    Q[rows] = fit.Q
    Q[others], iterations = _project_chunks(
        G, others, fit.P, chunk_size=int(chunk_size), tol=tol, max_iter=max_iter,
        threads=threads,
    )
    loglik = loglikelihood(G, Q, fit.P, threads=threads)
    diagnostics = dict(fit.diagnostics)
    diagnostics["reference"] = {
        "size": len(rows), "n_individuals": m, "seed": seed,
        "rule": REFERENCE_RULE, "projected": len(others),
        "chunk_size": int(chunk_size), "reference_loglik": float(fit.loglik),
        "projection_iterations": iterations,
    }
    total = time.perf_counter() - start
    timings = {**fit.timings, "reference_fit": reference_seconds,
               "projection": total - reference_seconds, "total": total}
    # "Loglikelihood:" (the line ADMIXTURE's log readers take) is everyone's
    lines = [f"Reference l{line[1:]}" if line.startswith("Loglikelihood:") else line
             for line in fit.log_lines]
    lines += [
        (f"Reference: {len(rows)} of {m} individuals drawn at random (seed {seed}); "
         f"the other {len(others)} projected onto its P in chunks of {chunk_size}"),
        f"Loglikelihood: {loglik:.6f}",
    ]
    return dataclasses.replace(
        fit, Q=Q, loglik=float(loglik), path=f"{fit.path}+projection",
        diagnostics=diagnostics, timings=timings, log_lines=lines,
    )
