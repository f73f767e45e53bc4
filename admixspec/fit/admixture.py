"""``fit_admixture``: the one entry point of every estimator, at every size.

``admixspec run`` is one call of :func:`fit_admixture` per K, whatever the
input's size and wherever it lives:

* genotypes in memory with at most ``reference_size`` individuals are fitted
  by the estimator ``method`` names (:func:`admixspec.fit.pipeline.fit_in_memory`);
* a larger cohort in memory is fitted on a random reference of
  ``reference_size`` individuals and everyone else is projected
  (:func:`admixspec.fit.reference.fit_with_reference`). Without a
  ``reference_size`` given, the reference serves the spectral stage, whose
  moments grow with the square of the individuals: a fit that never runs it
  (plain ML, the default on data without rare alleles) fits everyone, and a
  maximum-likelihood estimate after it ends with maximum likelihood on
  everyone (the cohort's estimate, as ADMIXTURE's);
* genotypes left on disk (:func:`admixspec.io.reader.open_genotypes` streams
  what exceeds the memory budget) get the same reference fit on the SNPs that
  fit in memory, then streamed passes (:func:`admixspec.fit.reference.fit_streamed`);
* the likelihood passes run on the CPU, a GPU (``device``) or a Dask cluster
  (inside :func:`admixspec.backends.distributed.use_client`);
* SNPs with one observed allele are left out of the fit and put back into P
  and the log-likelihood (:mod:`admixspec.fit.monomorphic`), so P has a row
  per SNP given, as ADMIXTURE's;
* ``runs > 1`` fits from distinct starts and returns the best, with the
  modes the runs form (:mod:`admixspec.fit.runs`); cross-validation and the
  bootstrap then describe the final fit (:func:`admixspec.fit.pipeline.add_extras`).

Paths (reported in :attr:`AdmixtureResult.path` and in the run log):
``single-population``, ``spectral``, ``spectral+ml`` and ``ml-fallback`` for
the default (:mod:`admixspec.fit.default`); ``ml-svd`` and ``ml-random`` for
``method="ml"``; ``supervised``; ``projection``; a reference fit adds
``+projection``, the fit of everyone after it ``+joint``, a streamed one
``+streamed``.
"""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np

from ..backends import default_device
from ..backends.distributed.cluster import check_workers_read
from ..core.exceptions import UsageError
from ..core.filters import check_K
from ..core.genotypes import allele_counts
from ..core.threads import thread_limit
from ..core.validation import (
    SEED,
    Dosage,
    Frequencies,
    Increasing,
    Interval,
    Mask,
    Options,
    validate_params,
)
from ..io.streamed import warn_workspace_floor
from ..spectral.estimate import DEFAULT_WINDOWS
from .choice import premise_absent
from .default import rare_allele_share
from .monomorphic import check_polymorphic, complete_snps, monomorphic_snps
from .pipeline import FitOptions, add_extras, fit_in_memory
from .reference import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_REFERENCE_SIZE,
    check_reference_size,
    fit_streamed,
    fit_with_reference,
)
from .result import AdmixtureResult
from .runs import fit_runs

__all__ = ["METHODS", "ML_INITS", "AdmixtureResult", "fit_admixture"]

logger = logging.getLogger("admixspec")

#: Estimators :func:`fit_admixture` dispatches to (``"auto"`` picks one).
METHODS = ("auto", "spectral", "ml", "supervised", "projection")
#: Starts of plain maximum likelihood (``method="ml"``).
ML_INITS = ("svd", "random")
#: What a fit of genotypes streamed from disk cannot do (they need them in memory).
_IN_MEMORY_ONLY = ("cv", "bootstrap", "P", "labels")


def _check_combination(options: FitOptions, K: int, *, reference_size, runs: int,
                       n_individuals: int) -> None:
    """Refuse the options that one fit cannot honour together.

    Raises
    ------
    UsageError
        A reference sample (``reference_size``) with a projection or
        supervised fit, which fit everyone, or with a bootstrap (whose
        replicates would refit the reference alone: standard errors of its
        rows, which ``PREFIX.K.Q_se`` could not tell from everyone's); a
        reference sample of no more individuals than K; ``reference_q``
        without projection; ``reference_members`` without ``reference_q``
        or of another length than the individuals; ``runs > 1`` of a
        projection or supervised fit.
    """
    method = options.method
    everyone = method in ("projection", "supervised")
    if everyone and reference_size is not None:
        raise UsageError("a reference (--reference-size) cannot be combined with "
                         "projection or supervised fits (--project, --supervised), "
                         "which fit everyone")
    if (options.bootstrap and reference_size is not None
            and reference_size < n_individuals):
        raise UsageError(f"the bootstrap (-B) estimates everyone's standard errors, but "
                         f"a reference of {reference_size} of the {n_individuals} "
                         "individuals (--reference-size) fits only its own: give "
                         f"--reference-size {n_individuals} or more, or drop -B")
    size = reference_size or DEFAULT_REFERENCE_SIZE
    if size < n_individuals:  # a reference sample is drawn (before any pass)
        check_reference_size(K, size)
    if options.reference_q is not None and method != "projection":
        raise UsageError("reference_q (the reference's Q) is used only by projection")
    members = options.reference_members
    if members is not None and options.reference_q is None:
        raise UsageError("reference_members (who of the individuals are the rows of "
                         "reference_q) is used only with reference_q")
    if members is not None and len(members) != n_individuals:
        raise UsageError(f"reference_members has {len(members)} entries but the "
                         f"genotypes have {n_individuals} individuals")
    if everyone and runs > 1:
        raise UsageError(f"runs > 1 (--runs) are for unsupervised fits: a {method} "
                         "fit does not depend on its start")


def _resolve_method(method, init, labels, P):
    """The estimator to run and the ML start, checked against what was given."""
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


def _fitted_snps(genotypes, method, streamed):
    """The SNPs a fit estimates: all but the monomorphic ones, and their counts.

    Returns ``(mask, counts, fitted, fitted_counts)``: the monomorphic SNPs
    (None when there are none or every SNP is fitted), the allele counts of
    all SNPs and of the fitted ones (None when not counted), and the fitted
    genotypes. The fitted SNPs' counts go to the default, which would
    otherwise count them again.
    """
    if streamed or method == "projection":
        # the streamed filters drop monomorphic SNPs as they read; with P
        # fixed, every SNP tells the components apart
        return None, None, genotypes, None
    mask, counts = monomorphic_snps(genotypes)
    # without SNPs that vary there is nothing to fit (the starts would index
    # an empty matrix)
    check_polymorphic(int(mask.size - np.count_nonzero(mask)), mask.size)
    if not mask.any():
        return None, counts, genotypes, counts
    return (mask, counts, np.ascontiguousarray(genotypes[:, ~mask]),
            tuple(c[~mask] for c in counts))


def _check_folds(folds: int, genotypes, counts) -> None:
    """Refuse more cross-validation folds than observed genotype entries.

    Folds partition the observed entries; an empty fold has no error (its
    mean deviance is 0 / 0). ``counts`` are the allele counts of every SNP
    (:func:`admixspec.fit.monomorphic.monomorphic_snps`'), or None to count.
    """
    observed = (counts or allele_counts(genotypes))[1]
    n_entries = int(observed.sum()) // 2  # two observed alleles per call
    if folds > n_entries:
        raise UsageError(f"cv={folds} folds (--cv) exceed the {n_entries} observed "
                         f"genotype entries they partition: use at most {n_entries}")


def _check_streamed(options: FitOptions) -> None:
    wanted = [name for name in _IN_MEMORY_ONLY
              if getattr(options, name) is not None
              and getattr(options, name) is not False]
    if wanted:
        raise UsageError(f"{', '.join(wanted)}: not available when the genotypes are "
                         "streamed from disk; raise --memory")


def _needs_no_spectral_stage(options: FitOptions, genotypes, counts) -> bool:
    """Whether a fit in memory never runs the spectral stage, so needs no reference.

    The default's reference exists for the spectral stage, whose moments grow
    with the square of the individuals. Plain maximum likelihood never runs
    it, and neither does the default where the cohort's allele counts rule
    out its premise (:func:`admixspec.fit.choice.premise_absent`): both then
    fit everyone from the start, as ADMIXTURE does, rather than a reference,
    its projection and then everyone. ``counts`` are ``genotypes``' allele
    counts (:func:`admixspec.fit.monomorphic.monomorphic_snps`'), not counted again.
    """
    if options.method == "ml":
        return True
    return (options.method == "spectral" and options.refine == "auto"
            and premise_absent(rare_allele_share(genotypes, counts=counts)) is not None)


@validate_params({
    "genotypes": Dosage(streamed=True),
    "K": Interval(int, 1),
    "method": Options(*METHODS),
    "init": Options(None, "spectral", *ML_INITS),
    "P": Frequencies(allow_none=True),
    "refine": Options("auto", True, False),
    "tol": Interval(float, 0, closed="neither"),
    "max_iter": Interval(int, 1),
    "cv": Interval(int, 2, allow_none=True),
    "bootstrap": Interval(int, 2, allow_none=True),
    "threads": Interval(int, 1, allow_none=True),
    "device": Options(None, "auto", "cpu", "cuda"),
    "reference_size": Interval(int, 2, allow_none=True),
    "chunk_size": Interval(int, 1),
    "runs": Interval(int, 1),
    "projection_correction": Options("auto", True, False),
    "reference_members": Mask(allow_none=True),
    "seed": SEED,
    "windows": Increasing(Interval(float, 0, 0.5, closed="right")),
    "n_starts": Interval(int, 2, allow_none=True),
})
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
    reference_size: int | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    runs: int = 1,
    reference_q=None,
    projection_correction: bool | str = "auto",
    reference_members=None,
) -> AdmixtureResult:
    """Estimate ancestry proportions Q and ancestral frequencies P.

    The single entry point of every estimator: ``admixspec run`` makes one
    call of it per K, so a script gets the same Q, P, log-likelihood and log
    text (:meth:`AdmixtureResult.format_log`) as the command line, at any size.

    Parameters
    ----------
    genotypes : Genotypes, array_like or StreamedGenotypes
        Copies of the counted allele (0/1/2), -1 for missing, shape
        (n_individuals, n_snps); or genotypes left on disk
        (:func:`admixspec.io.reader.open_genotypes`), fitted by streaming.
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
        Fixed allele frequencies for projection (e.g. a reference ``.P``),
        in [0, 1].
    seed : int, optional
        Seed for every random choice (the reference draw, eigenpair starts,
        SNP samples, CV folds, bootstrap resamples); the same seed gives the
        same output.
    refine : {"auto", True, False}
        Spectral method only: maximise the likelihood from the spectral
        estimate always (True), never (False), or as the data say ("auto",
        :func:`admixspec.fit.choice.choose_estimator`).
    tol : float
        Log-likelihood change that stops maximum likelihood (ADMIXTURE's ``-C``).
    max_iter : int
        Iteration limit of maximum likelihood.
    cv : int, optional
        Folds of cross-validation to run on the fit (``--cv``): at least 2,
        and at most the observed genotype entries they partition.
    bootstrap : int, optional
        Bootstrap replicates for standard errors of Q (``-B``), at least 2.
    windows : sequence of float
        Upper ends of the minor-allele-frequency windows scanned for the
        moment SNPs (see :func:`admixspec.spectral.estimate.spectral_scan`).
        Where rare alleles are plentiful (a rare-allele share of at least
        :data:`~admixspec.fit.choice.MIN_RARE_SHARE`), windows ending above
        :data:`~admixspec.spectral.estimate.COMMON_WINDOW_END` are recorded in
        the scan but not scored, unless no window ends below it.
    n_starts : int, optional
        Random starts of the eigenpair solver (default: the solver's).
    threads : int, optional
        Threads for every stage of the fit (the numba kernels, NumPy's and
        SciPy's BLAS); default: numba's and BLAS's settings.
    callback : callable, optional
        Receives each maximum-likelihood iteration's record (see
        :class:`admixspec.ml.refine.IterationInfo`).
    device : {"auto", "cpu", "cuda"}, optional
        Where the maximum-likelihood fits (refinement, plain ML, supervised,
        projection, CV, bootstrap) run their likelihood passes (see
        :func:`admixspec.backends.default_device`); the spectral stage stays
        on the CPU. Default: the device an enclosing block set, else ``"auto"``.
    reference_size : int, optional
        Cohorts of more individuals are fitted on a random reference of this
        many (seeded by ``seed``; ``AdmixtureResult.reference`` holds its
        rows) and everyone else is projected onto its P (``--reference-size``;
        :mod:`admixspec.fit.reference`); at least 2. Default: everyone where
        the fit runs no spectral stage (plain ML; the default where the
        cohort's allele counts rule its premise out), else a reference of
        :data:`~admixspec.fit.reference.DEFAULT_REFERENCE_SIZE` (5,000) for
        the spectral stage and the choice, and, when the estimate is maximum
        likelihood, maximum likelihood on everyone from the reference's P and
        the projected Q (path ``+joint``). Streamed from disk the reference is
        always fitted (its start needs the genotypes in memory); the joint fit
        follows on a GPU, which holds everyone's genotypes, and not on the
        CPU, where it would read the file once per iteration.
        Projection and supervised fits use everyone, and take none.
    chunk_size : int
        Individuals projected at once onto a reference's P.
    runs : int
        Fits from distinct starts (``--runs``): the default path first, then
        maximum likelihood from random starts seeded ``seed + 1``, ``seed +
        2``, ...; the best log-likelihood's is returned (of runs within
        :data:`~admixspec.fit.modes.LOGLIK_TIE` of it, the earliest; run 1
        where it is the spectral estimate the default chose over maximum
        likelihood) with
        every run's Q and the modes they form in ``modes``
        (:mod:`admixspec.fit.runs`). Cross-validation and the bootstrap run on
        the returned run only.
        Projection and supervised fits, whose answer does not depend on a
        start, take 1.
    reference_q : array_like, float, shape (n_reference, K), optional
        Projection: the Q of the individuals ``P`` was fitted on (the
        reference run's ``.Q``), which tells how noisy ``P`` is; with it the
        projection is corrected for that noise (``projection_correction``).
    projection_correction : {"auto", True, False}
        Correct projected Q for the sampling noise of the reference's P
        (:mod:`admixspec.ml.debias`): plain projection pulls Q towards the
        mean, by about ``1 / (4 F N)`` for a reference of ``N`` individuals per
        component of F_ST ``F``. ``"auto"``: when the reference (``reference_q``,
        or the reference of a large cohort) has fewer than
        :data:`~admixspec.fit.pipeline.CORRECTION_MAX_REFERENCE` individuals;
        False gives ADMIXTURE's plain projection.
    reference_members : array_like, bool, shape (n_individuals,), optional
        Projection with ``reference_q``: True for the individuals of
        ``genotypes`` that were among those ``P`` was fitted on (the rows of
        ``reference_q``; e.g. everyone projected onto a reference fitted on
        some of them). P's noise is not independent of their genotypes, and
        the correction, which assumes it is, moves their Q away from the
        truth: they get the plain projection, the others the corrected one,
        the same rows as without ``reference_members``.
        ``diagnostics["projection_correction"]["reference_members"]`` counts
        them.

    Returns
    -------
    AdmixtureResult

    Raises
    ------
    UsageError
        An argument outside its range (``cv`` above the observed genotype
        entries included; ``P`` outside [0, 1]), a method without the input it needs
        (``P``, ``labels``) or with one it does not use, or cross-validation,
        bootstrap, projection or supervised fits of genotypes streamed from disk.
    InputError
        Genotypes that are not 0, 1, 2 or -1, too few individuals for K,
        fewer than 2 polymorphic SNPs (except for projection), or a ``.bed``
        streamed from disk that the workers of a Dask client
        (:func:`admixspec.backends.distributed.use_client`) cannot read,
        raised before any fit.

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols, q_error
    >>> sim = simulate_balding_nichols(40, 3000, 2, fst=0.3, alpha=0.3, seed=2)
    >>> result = fit_admixture(sim.genotypes, 2, seed=1)
    >>> result.Q.shape, bool(q_error(sim.Q, result.Q) < 0.05)
    ((40, 2), True)
    >>> result.log_lines[-1] == f"Loglikelihood: {result.loglik:.6f}"
    True

    A cohort larger than ``reference_size`` is fitted on a reference and
    projected:

    >>> sim = simulate_balding_nichols(300, 3000, 2, fst=0.2, alpha=0.5, seed=2)
    >>> result = fit_admixture(sim.genotypes, 2, reference_size=100, seed=1)
    >>> result.Q.shape, result.path.endswith("+projection"), len(result.reference)
    ((300, 2), True, 100)
    >>> bool(q_error(sim.Q, result.Q) < 0.05)
    True

    Several runs, grouped into modes:

    >>> sim = simulate_balding_nichols(40, 2000, 2, fst=0.3, alpha=0.3, seed=2)
    >>> result = fit_admixture(sim.genotypes, 2, seed=1, runs=3)
    >>> result.modes.n_runs, bool(result.loglik == max(result.modes.logliks))
    (3, True)
    """
    method, init = _resolve_method(method, init, labels, P)
    streamed = hasattr(genotypes, "chunks")
    n_individuals = genotypes.n_individuals if streamed else genotypes.shape[0]
    # a projection fits each individual alone against P: K may exceed them
    check_K(K, math.inf if method == "projection" else n_individuals)
    options = FitOptions(method=method, init=init, labels=labels, P=P,
                         reference_q=reference_q, reference_members=reference_members,
                         projection_correction=projection_correction, seed=seed,
                         refine=refine, tol=tol, max_iter=max_iter, cv=cv,
                         bootstrap=bootstrap, windows=windows, n_starts=n_starts,
                         threads=threads, callback=callback)
    everyone = method in ("projection", "supervised")
    _check_combination(options, K, reference_size=reference_size, runs=runs,
                       n_individuals=n_individuals)
    # a reference asked for is fitted and projected; the default's serves the
    # spectral stage, and maximum likelihood ends on everyone (fit.reference)
    joint = reference_size is None
    reference_size = reference_size or DEFAULT_REFERENCE_SIZE

    if streamed:
        _check_streamed(options)
        # under a Dask client, workers that cannot read a streamed .bed fail
        # the fit now, not after its reference fit
        check_workers_read(genotypes)
        warn_workspace_floor(genotypes, K, reference_size=reference_size,
                             spectral=method == "spectral")
    # every pass below on ``threads`` threads, the spectral stage's included
    with thread_limit(threads), default_device(device):
        mask, counts, fitted, fitted_counts = _fitted_snps(genotypes, method, streamed)
        if cv is not None:  # here, before the fit (streamed genotypes take no cv)
            _check_folds(cv, genotypes, counts)

        def fit_one(options: FitOptions) -> AdmixtureResult:
            if streamed:
                result = fit_streamed(fitted, K, reference_size=reference_size,
                                      chunk_size=chunk_size, options=options,
                                      joint=joint)
            # asked per fit: the runs after the first (runs > 1) are plain ML
            elif (everyone or n_individuals <= reference_size
                  or (joint and _needs_no_spectral_stage(options, genotypes, counts))):
                result = fit_in_memory(fitted, K, options, counts=fitted_counts)
            else:
                result = fit_with_reference(fitted, K, reference_size=reference_size,
                                            chunk_size=chunk_size, options=options,
                                            joint=joint)
            return result if mask is None else complete_snps(result, mask, counts)

        core = dataclasses.replace(options, cv=None, bootstrap=None)
        result = fit_one(core) if runs == 1 else fit_runs(fit_one, core, runs=runs)
        add_extras(result, genotypes, options)
        return result
