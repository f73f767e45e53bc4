"""Several fits of one K from distinct starts, and their modes (``run --runs N``).

The likelihood of ADMIXTURE's model has local maxima: on the HapMap3 tutorial
data at K = 4 and 5 fits from different starts end in solutions that differ
in which small family gets a component. :func:`fit_runs` (what
:func:`admixspec.fit_admixture` runs for ``runs > 1``) makes ``runs`` fits of
one K and groups them into modes (:func:`admixspec.fit.modes.find_modes`):

* run 1 is the default path, exactly the fit ``runs=1`` makes (same
  estimator, same seed);
* runs 2, 3, ... are maximum likelihood from random starts (``Q ~
  Dirichlet(1)``, ``P ~ Uniform(0, 1)``; :func:`admixspec.ml.initial.random_init`)
  seeded ``seed + 1``, ``seed + 2``, ... . The default path is built to be
  reproducible: given the data its spectral estimate and its choice barely
  depend on the seed, so re-running it with other seeds would mostly find
  its own optimum again. Random starts are what ADMIXTURE and fastmixture
  users vary with ``-s``/``--seed``, and they reach the other basins (on the
  HapMap3 data at K = 4, 4 of 5 such runs ended in maxima the default did not
  find; ``docs/make_report_figure.py``).

The result is the run with the best log-likelihood (ties, within
:data:`~admixspec.fit.modes.LOGLIK_TIE`, go to the earliest run: run 1, the
default, where it is one of them), with every run's Q, log-likelihood and mode attached
(:attr:`~admixspec.fit.result.AdmixtureResult.modes`); except where run 1
is the spectral estimate, which the default's choice preferred to maximum
likelihood: every ML run's log-likelihood exceeds it, so ranking by it
would undo the choice (on private-allele data at Dirichlet(1) and (10),
``runs=4`` reported Q errors of 0.054 and 0.25 where run 1's were 0.019
and 0.039). Run 1 is then the result, and the ML runs show the likelihood's
modes beside it. So ``--runs`` never loses the default's answer.
Cross-validation and the bootstrap, which describe one solution, run once, on
the kept run (:func:`admixspec.fit.pipeline.add_extras`).

For a cohort larger than ``reference_size`` each run fits its own reference,
drawn with its own seed (the run's seed is the fit's only seed), and projects
everyone else onto its P: its modes then also show how much the reference
draw matters.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from .modes import DEFAULT_THRESHOLD, LOGLIK_TIE, find_modes
from .pipeline import FitOptions, is_spectral_estimate
from .result import AdmixtureResult

__all__ = ["fit_runs", "run_options"]

logger = logging.getLogger("admixspec")


def run_options(options: FitOptions, runs: int) -> list[FitOptions]:
    """The options of each run: the default's, then ML from random starts.

    Parameters
    ----------
    options : FitOptions
        The call's options (run 1's, cross-validation and bootstrap removed).
    runs : int
        Number of runs, >= 1.

    Returns
    -------
    list of FitOptions, length ``runs``
        Run ``r`` (0-based) > 0: ``method="ml"``, ``init="random"``, seed
        ``options.seed + r`` (None when ``options.seed`` is None).

    Examples
    --------
    >>> [(o.method, o.init, o.seed) for o in run_options(FitOptions(seed=43), 3)]
    [('spectral', None, 43), ('ml', 'random', 44), ('ml', 'random', 45)]
    """
    first = dataclasses.replace(options, cv=None, bootstrap=None)
    seed = options.seed
    return [first] + [
        dataclasses.replace(first, method="ml", init="random",
                            seed=None if seed is None else seed + r)
        for r in range(1, runs)
    ]


def _run_names(options: list[FitOptions]) -> list[str]:
    """Runs are named by their seed (what reproduces them), else numbered."""
    if any(o.seed is None for o in options):
        return [str(r + 1) for r in range(len(options))]
    return [str(o.seed) for o in options]


def _describe(option: FitOptions) -> str:
    if option.method != "ml":
        return "the default path"
    return ("maximum likelihood from a random start" if option.init == "random"
            else f"maximum likelihood from the {str(option.init).upper()} start")


def fit_runs(fit_one, options: FitOptions, *, runs: int,
             threshold: float = DEFAULT_THRESHOLD) -> AdmixtureResult:
    """Fit one K ``runs`` times from distinct starts; the kept run, with the modes.

    Parameters
    ----------
    fit_one : callable
        ``fit_one(options) -> AdmixtureResult``: one fit of the genotypes with
        these :class:`~admixspec.fit.pipeline.FitOptions` (what
        :func:`admixspec.fit_admixture` dispatches to).
    options : FitOptions
        The call's options (run 1's); cross-validation and the bootstrap are
        the caller's, on the kept run.
    runs : int
        Number of fits, >= 1 (:func:`run_options` says which).
    threshold : float
        CLUMPP G' line of the modes (:func:`admixspec.fit.modes.find_modes`).

    Returns
    -------
    AdmixtureResult
        The kept run's fit: the best log-likelihood's (ties within
        :data:`~admixspec.fit.modes.LOGLIK_TIE`: the earliest run), or run 1
        where it is the spectral estimate; with
        ``modes`` (:class:`~admixspec.fit.modes.ModesResult`, runs in order),
        ``diagnostics["runs"]`` (per run: name, seed, start, path,
        log-likelihood, iterations, converged, seconds, mode), its log lines
        extended by one line per run and the modes' lines, and
        ``timings["runs"]`` (seconds of all fits).
    """
    starts = run_options(options, runs)
    names = _run_names(starts)
    clock = time.perf_counter()
    fits, seconds = [], []
    for name, option in zip(names, starts, strict=True):
        began = time.perf_counter()
        fit = fit_one(option)
        seconds.append(time.perf_counter() - began)
        fits.append(fit)
        logger.info("run %s (%s): %s, log-likelihood %.6f (%.1f s)", name,
                    _describe(option), fit.path, fit.loglik, seconds[-1])
    kept = 0 if is_spectral_estimate(fits[0].path) else None  # see the module notes
    modes = find_modes([fit.Q for fit in fits], logliks=[fit.loglik for fit in fits],
                       threshold=threshold, run_names=names, reference=kept)
    best = fits[modes.reference]
    table = [
        {"run": name, "seed": option.seed, "start": _describe(option), "path": fit.path,
         "loglik": float(fit.loglik), "n_iter": int(fit.n_iter),
         "converged": bool(fit.converged), "seconds": seconds[r],
         "mode": int(modes.labels[r])}
        for r, (name, option, fit) in enumerate(zip(names, starts, fits, strict=True))
    ]
    what = "seed" if options.seed is not None else "run"  # unseeded: run numbers
    seeds = f"{what}s {names[1]}-{names[-1]}" if runs > 2 else f"{what} {names[-1]}"
    kept_text = (f"kept the best log-likelihood's (the earliest of runs within "
                 f"{LOGLIK_TIE:g} of it), run {names[modes.reference]}"
                 if kept is None else
                 f"kept run {names[0]}, the spectral estimate the default chose over "
                 "maximum likelihood (whose log-likelihood is higher wherever it is "
                 "fitted)")
    lines = list(best.log_lines) + [
        f"Runs: {runs} fits of K={best.K}: run {names[0]} {_describe(starts[0])}, "
        + (f"{seeds} maximum likelihood from random starts; " if runs > 2 else
           f"{seeds} maximum likelihood from a random start; " if runs > 1 else "")
        + kept_text,
    ] + [
        f"Run {row['run']}: {row['path']}, loglikelihood {row['loglik']:.6f}, "
        f"{row['n_iter']} iterations, mode {row['mode']}"
        for row in table
    ] + modes.log_lines()
    for line in lines[len(best.log_lines):]:
        logger.info("%s", line)
    return dataclasses.replace(
        best, log_lines=lines, modes=modes,
        diagnostics={**best.diagnostics, "runs": table},
        timings={**best.timings, "runs": time.perf_counter() - clock},
    )
