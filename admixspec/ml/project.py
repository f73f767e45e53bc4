"""Projection onto fixed allele frequencies, and the supervised fit.

* :func:`maximize_p` — Q fixed, P by maximum likelihood (the spectral
  path's allele frequencies);
* :func:`project` — P fixed (e.g. a fitted reference panel), each
  individual's Q by maximum likelihood: the Q-only block-relaxation (Newton)
  map of :mod:`admixspec.ml.newton`, accelerated, over SNP blocks in parallel.
  Individuals are independent given P, so a new cohort is placed without
  influencing the reference.
* :func:`fit_supervised` — ADMIXTURE's ``--supervised``: individuals with a
  reference-population label keep Q fixed at that population's one-hot vector
  (ADMIXTURE prints them as ``0.99999 0.00001``; here the same box value
  ``1 - (K-1) Q_MIN``); P and the unlabelled individuals' Q are estimated.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..core.exceptions import ConvergenceWarning, InputError, UsageError
from ..core.frequencies import allele_frequencies, least_squares_p, least_squares_q
from ..core.genotypes import UNKNOWN_LABELS
from ..core.parameters import P_MAX, P_MIN, clip_proportions
from ..core.threads import thread_limit
from ..core.validation import SEED, Dosage, Frequencies, Interval, validate_params
from .likelihood import Engine, make_engine
from .refine import MLResult, _Fixed, accelerated_em

__all__ = ["PGivenQ", "SupervisedResult", "UNKNOWN_LABELS", "fit_supervised",
           "maximize_p", "project", "reference_populations"]


class PGivenQ(NamedTuple):
    """What :func:`maximize_p` returns.

    Attributes
    ----------
    P : numpy.ndarray, float64, shape (n_snps, K)
    loglik : float
        Log-likelihood of (Q, P).
    passes : int
        EM passes over the genotypes.
    """

    P: np.ndarray
    loglik: float
    passes: int


def maximize_p(G, Q, *, P0=None, max_passes=20, relative_tol=1e-7, threads=None,
               engine=None) -> PGivenQ:
    """Allele frequencies for a fixed Q by ML: least squares (or ``P0``), then EM on P.

    Every EM step raises the likelihood; the steps stop when one gains less
    than ``relative_tol * |loglik|`` or after ``max_passes`` passes over the
    data, so the spectral path stays a small multiple of one pass (a full
    P-only EM to ADMIXTURE's 1e-4 tolerance took ~100 passes, longer than the
    spectral estimate itself).

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps), or GenotypeChunks
        Checked dosage, or a chunk source.
    Q : numpy.ndarray, float64, shape (n_individuals, K)
    P0 : numpy.ndarray, float64, shape (n_snps, K), optional
        Start of the EM passes instead of the least-squares P, which takes a
        pass over ``G`` on the host (for genotypes on a GPU, a decode of the
        file there).
    max_passes : int
    relative_tol : float
    threads : int, optional
    engine : Engine, optional
        An engine already holding ``G`` to run the EM passes on (a GPU's,
        say); default the CPU's.

    Returns
    -------
    PGivenQ
    """
    with thread_limit(threads):
        engine = Engine(G, Q.shape[1]) if engine is None else engine
        # through the engine's chunks: G placed once (a Dask cluster would take it twice)
        P = least_squares_p(engine.chunks, Q) if P0 is None else P0
        P = np.clip(P, P_MIN, P_MAX)
        previous = -np.inf
        passes = 0
        for passes in range(1, max_passes + 1):  # noqa: B007 - returned after the loop
            _, P_next, loglik = engine.em(Q, P, update_q=False)  # loglik of (Q, P)
            if loglik - previous < relative_tol * abs(loglik):
                break
            P, previous = P_next, loglik
        else:
            P = P_next
            loglik = engine.loglik(Q, P)
    return PGivenQ(P, float(loglik), passes)




@validate_params({"dosage": Dosage(), "P": Frequencies(),
                  "tol": Interval(float, 0, closed="neither"),
                  "max_iter": Interval(int, 1),
                  "threads": Interval(int, 1, allow_none=True)})
def project(dosage, P, *, Q0=None, tol: float = 1e-4, max_iter: int = 1000,
            threads: int | None = None, callback=None) -> np.ndarray:
    """Maximum-likelihood ancestry proportions with P held fixed.

    Parameters
    ----------
    dosage : array_like or Genotypes, int8, shape (n_individuals, n_snps)
        Genotypes of the individuals to place (-1 missing), on the same SNPs
        and counted alleles as ``P``.
    P : array_like, float, shape (n_snps, K)
        Fixed ancestral frequencies in [0, 1] (e.g. a reference fit's ``.P``);
        other values are refused, not clipped.
    Q0 : array_like, float, shape (n_individuals, K), optional
        Start (finite numbers, clipped at ``Q_MIN`` and rows rescaled to sum
        to one); default a least-squares fit projected onto the simplex.
    tol : float
        Stop when an iteration gains less log-likelihood than this.
    max_iter : int
        Iteration limit (then :class:`ConvergenceWarning`).
    threads : int, optional
        Threads for the kernels.
    callback : callable, optional
        Receives :class:`admixspec.ml.refine.IterationInfo` per iteration.

    Returns
    -------
    numpy.ndarray, float64, shape (n_individuals, K)
        Rows on the simplex.

    Raises
    ------
    UsageError
        ``P`` without one row per SNP, or ``Q0`` of another shape or holding
        a non-finite number.

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols
    >>> sim = simulate_balding_nichols(40, 3000, 3, fst=0.2, seed=3)
    >>> Q = project(sim.genotypes.dosage, sim.P)
    >>> float(abs(Q - sim.Q).mean()) < 0.03
    True
    """
    G = dosage  # or, from a streamed fit (unchecked), a GenotypeChunks source
    m, n = G.shape if isinstance(G, np.ndarray) else (G.n_individuals, G.n_snps)
    P = np.clip(np.array(P, dtype=np.float64, order="C", ndmin=2), P_MIN, P_MAX)
    if P.shape[0] != n:
        raise UsageError(f"P has {P.shape[0]} rows but the data have {n} SNPs")
    if Q0 is not None:
        Q0 = np.array(Q0, dtype=np.float64)
        if Q0.shape != (m, P.shape[1]):
            raise UsageError(f"Q0 must have shape {(m, P.shape[1])}")
        if not np.isfinite(Q0).all():  # a NaN start ran max_iter and returned NaN
            i, j = np.argwhere(~np.isfinite(Q0))[0]
            raise UsageError(f"Q0 must hold finite numbers: Q0[{i}, {j}] = {Q0[i, j]:g}")
    with thread_limit(threads):
        Q = least_squares_q(G, P) if Q0 is None else clip_proportions(Q0)
        engine = make_engine(G, P.shape[1])  # the engine a back end set, else the CPU's
        fit = accelerated_em(engine, Q, P, tol=tol, max_iter=max_iter, update_p=False,
                             callback=callback)
    if not fit.converged:
        warnings.warn(f"projection stopped at max_iter={max_iter}", ConvergenceWarning,
                      stacklevel=2)
    return fit.Q


@dataclass
class SupervisedResult(MLResult):
    """:class:`MLResult` of a supervised fit, with the component order.

    Attributes
    ----------
    populations : list of str
        Reference population of each of the first ``len(populations)``
        components (further components, if K is larger, are unsupervised).
    """

    populations: list = field(default_factory=list)


def _parse_labels(labels, m):
    labels = list(labels)
    if len(labels) != m:
        raise InputError(f"{len(labels)} population labels for {m} individuals")
    clean = [_clean_label(x) for x in labels]
    return clean, list(dict.fromkeys(x for x in clean if x is not None))


def _clean_label(label) -> str | None:
    """A label's population name, stripped; None where it names none."""
    name = None if label is None else str(label).strip()
    return None if name in UNKNOWN_LABELS else name


def reference_populations(labels) -> list[str]:
    """The populations ``labels`` name, in order of first appearance.

    Parameters
    ----------
    labels : sequence of str or None
        As :func:`fit_supervised` takes them (:data:`UNKNOWN_LABELS` and
        ``None`` name none).

    Returns
    -------
    list of str
        Component ``k`` of a supervised fit is population ``k``.

    Examples
    --------
    >>> reference_populations(["YRI", "-", "CEU", "YRI", None])
    ['YRI', 'CEU']
    """
    return list(dict.fromkeys(name for x in labels
                              if (name := _clean_label(x)) is not None))


def _warn_same_names(populations) -> None:
    """Warn of labels that differ only in case (two components, one population?)."""
    folded: dict = {}
    for name in populations:
        folded.setdefault(name.casefold(), []).append(name)
    for names in folded.values():
        if len(names) > 1:
            warnings.warn(
                f"the labels {', '.join(map(repr, names))} differ only in case: each is "
                "a reference population of its own (a component each); spell a "
                "population one way", UserWarning, stacklevel=4)


@validate_params({"dosage": Dosage(), "K": Interval(int, 1, allow_none=True),
                  "tol": Interval(float, 0, closed="neither"),
                  "max_iter": Interval(int, 1),
                  "threads": Interval(int, 1, allow_none=True), "seed": SEED})
def fit_supervised(dosage, K: int | None, labels, *, tol: float = 1e-4,
                   max_iter: int = 1000, seed=None, threads: int | None = None,
                   callback=None) -> SupervisedResult:
    """ADMIXTURE's supervised fit: reference individuals' Q fixed one-hot.

    Parameters
    ----------
    dosage : array_like or Genotypes, int8, shape (n_individuals, n_snps)
    K : int or None
        Number of components; ``None`` means the number of reference
        populations. Must be at least that number.
    labels : sequence of str or None, length n_individuals
        Reference population per individual, or ``None``/``"-"``/``"."`` for
        individuals to estimate. Component ``k`` is the ``k``-th population
        in order of first appearance.
    tol, max_iter, seed, threads, callback
        As in :func:`admixspec.ml.refine.fit_ml`.

    Returns
    -------
    SupervisedResult

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols
    >>> sim = simulate_balding_nichols(60, 2000, 2, fst=0.2, unadmixed_fraction=0.5,
    ...                                seed=4)
    >>> labels = [p if i < 30 else "-" for i, p in enumerate(sim.populations)]
    >>> res = fit_supervised(sim.genotypes.dosage, 2, labels)
    >>> res.populations, bool(res.Q[:30].max(axis=1).min() > 0.99)
    (['pop1', 'pop2'], True)
    """
    t_start = time.perf_counter()
    G = dosage
    m, n = G.shape
    clean, populations = _parse_labels(labels, m)
    if not populations:
        names = ", ".join(repr(x) for x in sorted(UNKNOWN_LABELS - {""}))
        raise InputError("no individual has a reference population label (every "
                         f"label is empty or one of {names}, which name none)")
    K = len(populations) if K is None else K
    if K < len(populations):
        raise UsageError(f"K={K} is smaller than the {len(populations)} reference "
                         f"populations in the labels ({', '.join(populations)})")
    _warn_same_names(populations)
    index = {p: k for k, p in enumerate(populations)}
    rows = np.array([i for i, x in enumerate(clean) if x is not None], dtype=np.int64)
    comps = np.array([index[clean[i]] for i in rows], dtype=np.int64)
    values = np.zeros((len(rows), K))
    values[np.arange(len(rows)), comps] = 1.0
    clip_proportions(values)
    rng = np.random.default_rng(seed)
    with thread_limit(threads):
        # start: reference frequencies per labelled population, random otherwise
        P = rng.uniform(0.05, 0.95, size=(n, K))
        for k in range(len(populations)):
            P[:, k] = allele_frequencies(G[rows[comps == k]])
        np.clip(P, P_MIN, P_MAX, out=P)
        Q = least_squares_q(G, P)
        Q[rows] = values
        engine = make_engine(G, K)  # the engine a back end set, else the CPU's
        t_init = time.perf_counter() - t_start
        fit = accelerated_em(engine, Q, P, tol=tol, max_iter=max_iter,
                             fixed=_Fixed(rows, values), callback=callback)
    total = time.perf_counter() - t_start
    if not fit.converged:
        warnings.warn(f"supervised fit stopped at max_iter={max_iter}",
                      ConvergenceWarning, stacklevel=2)
    return SupervisedResult(fit.Q, fit.P, fit.loglik, fit.n_iter, fit.converged,
                            fit.history,
                            {"init": t_init, "em": total - t_init, "total": total},
                            engine.passes, "supervised", populations)
