"""The default's choice between the spectral estimate and maximum likelihood.

Maximum likelihood (ML, ADMIXTURE's answer) is the default's reference: where
every component has individuals (nearly) unadmixed in it, the likelihood
identifies Q and ML is the most accurate estimator. Where nobody is, the
likelihood is nearly flat along the equivalence directions ``(Q A, P A^-T)``
and ML's optimum runs along them to the edge of the parameter box; the spectral
estimate, which identifies those directions from the moments of (nearly)
private alleles, is then far more accurate — unless shared drift or array data
break its premise and bias it. The two failures leave one observable trace:

* ML's run to the box edge fits allele frequencies P to the training
  individuals' noise, so its P predicts *new* individuals worse than the
  spectral P;
* a biased spectral estimate's P misses structure that ML's captures, so it
  predicts new individuals worse than ML's P.

:func:`choose_estimator` holds out a random, seeded quarter of the individuals
(below 200 individuals: every individual once, in four folds, so that the
comparison always pools at least 50 held-out individuals where there are that
many), fits both estimators on the others, places each held-out individual by maximum
likelihood with each fit's P fixed (:func:`admixspec.ml.project.project`), and
keeps the spectral estimate only when its P predicts the held-out genotypes
*substantially* better: with ``d`` the held-out individuals' mean
log-likelihood gain of ML's P over the spectral P divided by the standard
deviation of those gains (a standardised effect size), the spectral estimate is
kept when ``d <= EFFECT_THRESHOLD``. A tie goes to ML, whose answer is then also
ADMIXTURE's. An effect size rather than a z-score (``d`` times the square root
of the held-out count), because the question is how much better, not how sure:
a fixed z threshold asks for a larger loss from fewer held-out individuals, and
so kept ML's overfitted Q on the seed paper's 50-individual setting.
docs/method.md ("Choosing the estimator") gives the measurements behind the
rule and its threshold.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..core.exceptions import ConvergenceWarning
from ..core.parameters import P_MAX, P_MIN
from ..core.threads import thread_limit
from ..ml.project import project
from ..ml.refine import fit_ml

__all__ = ["EFFECT_THRESHOLD", "EstimatorChoice", "HOLDOUT_FRACTION", "choose_estimator",
           "individual_logliks"]

logger = logging.getLogger("admixspec")

#: Share of individuals held out to compare the estimators.
HOLDOUT_FRACTION = 0.25
#: Standardised effect size (mean / standard deviation over held-out individuals)
#: of ML's held-out log-likelihood gain at or below which the spectral estimate
#: is kept (its P predicts new individuals substantially better). Chosen on
#: benchmarks/realistic_suite.py (docs/benchmarks.md): the threshold whose
#: default came closest to the better estimator on every setting.
EFFECT_THRESHOLD = -0.57
#: Fewest held-out individuals for a comparison (an effect size over fewer is noise).
MIN_HELD_OUT = 8
#: Held-out individuals the comparison pools when there are that many: below
#: ``MIN_COMPARED / HOLDOUT_FRACTION`` individuals one random quarter is too few
#: for a stable effect size (its standard error is about one over the square
#: root of the count), so every individual is held out once, in
#: ``1 / HOLDOUT_FRACTION`` folds, each with its own training fit.
MIN_COMPARED = 50
#: Log-likelihood gain per observed genotype that stops the training ML fit: the
#: comparison needs its P, not its last digits (measured on the suite: z-scores
#: move by < 0.05 from tol = 1e-4 to this, at a third of the iterations).
TRAIN_TOL_PER_GENOTYPE = 1e-6
#: Entries (individuals x SNPs) per block of the per-individual log-likelihood.
_BLOCK_ENTRIES = 1 << 22


@dataclass
class EstimatorChoice:
    """Outcome of :func:`choose_estimator`.

    Attributes
    ----------
    estimator : str
        ``"spectral"`` or ``"spectral+ml"``.
    reason : str
        One sentence with the numbers the rule used.
    evidence : dict
        ``held_out`` (individuals), ``gain_per_individual`` (mean held-out
        log-likelihood of ML's P minus the spectral P's), ``gain_se`` (its
        standard error), ``effect`` (the mean over the standard deviation of
        the gains), ``effect_threshold``, ``z`` (mean over standard error),
        ``seconds``.
    ml_start : tuple of numpy.ndarray or None
        ``(Q, P)``, shapes (n_individuals, K) and (n_snps, K): the training
        fit's P, its Q of the training individuals and the held-out
        individuals' projections onto that P. Maximum likelihood on everyone
        starts here, near its optimum, instead of repeating the training fit's
        climb from the spectral estimate. None when nothing was fitted.
    """

    estimator: str
    reason: str
    evidence: dict = field(default_factory=dict)
    ml_start: tuple | None = None


def individual_logliks(G, Q, P, *, threads=None) -> np.ndarray:
    """ADMIXTURE's binomial log-likelihood of each individual (missing calls skipped).

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
    Q : numpy.ndarray, float, shape (n_individuals, K)
    P : numpy.ndarray, float, shape (n_snps, K)
    threads : int, optional
        Threads for BLAS.

    Returns
    -------
    numpy.ndarray, float64, shape (n_individuals,)
    """
    m, n = G.shape
    P = np.clip(P, P_MIN, P_MAX)  # the parameter box of the likelihood kernels
    width = max(1, _BLOCK_ENTRIES // max(m, 1))
    total = np.zeros(m)
    with thread_limit(threads):
        for j0 in range(0, n, width):  # SNP blocks bound the memory
            g = G[:, j0:j0 + width]
            f = Q @ P[j0:j0 + width].T
            terms = g * np.log(f) + (2 - g) * np.log1p(-f)
            total += np.where(g >= 0, terms, 0.0).sum(axis=1)
    return total


def _held_out_folds(m, rng) -> list[np.ndarray]:
    """Disjoint sorted sets of held-out individuals (see :data:`MIN_COMPARED`).

    One random quarter when that holds at least ``MIN_COMPARED`` individuals;
    else every individual once, in ``1 / HOLDOUT_FRACTION`` folds.
    """
    held_out = max(MIN_HELD_OUT, round(HOLDOUT_FRACTION * m))
    if held_out >= MIN_COMPARED:
        return [np.sort(rng.choice(m, size=held_out, replace=False))]
    order = rng.permutation(m)
    return [np.sort(fold) for fold in np.array_split(order, round(1 / HOLDOUT_FRACTION))]


def _compare_on_fold(G, test, Q_spectral, fit_p, rng, *, tol, max_iter, threads):
    """ML's held-out log-likelihood gain over the spectral P, one per held-out individual.

    Returns ``(gains, Q_start, P_start)``: the training ML fit's P, its Q of the
    training individuals and the held-out individuals' projections onto that P.
    """
    train = np.setdiff1d(np.arange(G.shape[0]), test)
    G_train, G_test = G[train], G[test]
    P_spectral = np.clip(fit_p(G_train, Q_spectral[train]), P_MIN, P_MAX)
    train_tol = max(tol, TRAIN_TOL_PER_GENOTYPE * np.count_nonzero(G_train >= 0))
    with warnings.catch_warnings():
        # these fits only score P; the user's own fit warns about its convergence
        warnings.simplefilter("ignore", ConvergenceWarning)
        ml = fit_ml(G_train, Q_spectral.shape[1], Q0=Q_spectral[train], tol=train_tol,
                    max_iter=max_iter, seed=int(rng.integers(0, 2**31)), threads=threads)
        placed = [project(G_test, P, tol=tol, max_iter=max_iter, threads=threads)
                  for P in (P_spectral, ml.P)]
    spectral, likelihood = (individual_logliks(G_test, Q, P, threads=threads)
                            for Q, P in zip(placed, (P_spectral, ml.P)))
    Q_start = np.empty_like(Q_spectral)
    Q_start[train], Q_start[test] = ml.Q, placed[1]
    return likelihood - spectral, Q_start, ml.P


def choose_estimator(G, Q_spectral, fit_p, *, seed=None, tol=1e-4, max_iter=1000,
                     threads=None) -> EstimatorChoice:
    """Spectral estimate or ML, by held-out-individual likelihood (see the module notes).

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Genotypes, -1 missing.
    Q_spectral : numpy.ndarray, float64, shape (n_individuals, K)
        The spectral estimate of all individuals.
    fit_p : callable
        ``fit_p(G_subset, Q_subset) -> P``: the spectral path's allele
        frequencies given Q (so the comparison scores the P the spectral path
        would report).
    seed : int, optional
        Seed of the held-out split and of the training ML fit.
    tol, max_iter, threads
        As in :func:`admixspec.ml.refine.fit_ml` (also for the projections).

    Returns
    -------
    EstimatorChoice

    Notes
    -----
    The spectral Q of the training individuals is taken from the full-data
    estimate rather than refitted: its moments saw the held-out individuals,
    but only through allele-frequency averages over all individuals, and a
    refit would double the spectral stage's cost.
    """
    clock = time.perf_counter()
    m = G.shape[0]
    if m < 2 * MIN_HELD_OUT:
        return EstimatorChoice("spectral+ml", (
            f"{m} individuals are too few to hold out {MIN_HELD_OUT}: maximum "
            "likelihood (identifiable or not, the spectral estimate cannot be checked)"),
            {"held_out": 0})
    rng = np.random.default_rng(seed)
    folds = _held_out_folds(m, rng)
    logger.info("choosing the estimator: maximum likelihood without %s held-out "
                "individuals, %d fold(s)", "/".join(str(len(f)) for f in folds),
                len(folds))
    differences, ml_start = [], None
    for test in folds:
        gains, Q_start, P_start = _compare_on_fold(
            G, test, Q_spectral, fit_p, rng, tol=tol, max_iter=max_iter, threads=threads)
        differences.append(gains)
        if ml_start is None:  # the full fit starts from the first fold's
            ml_start = (Q_start, P_start)
    difference = np.concatenate(differences)
    mean = float(difference.mean())
    sd = float(difference.std(ddof=1))
    # identical predictions: a tie
    effect = mean / sd if sd > 0 else 0.0
    z = effect * np.sqrt(len(difference))
    evidence = {"held_out": len(difference), "folds": len(folds),
                "gain_per_individual": mean,
                "gain_se": sd / np.sqrt(len(difference)), "effect": float(effect),
                "effect_threshold": EFFECT_THRESHOLD, "z": float(z),
                "seconds": time.perf_counter() - clock}
    summary = (f"held-out individuals ({len(difference)} of {m}, {len(folds)} "
               f"fold(s)) placed on ML's allele "
               f"frequencies gain {mean:.2f} log-likelihood units each over the "
               f"spectral ones, standard deviation {sd:.2f} (effect {effect:.2f}, "
               f"z = {z:.1f}; spectral kept at effect <= {EFFECT_THRESHOLD:g})")
    if effect > EFFECT_THRESHOLD:
        verdict = ("better than" if mean > 0 else "not substantially worse than")
        return EstimatorChoice(
            "spectral+ml", f"{summary}: ML's allele frequencies predict new "
            f"individuals {verdict} the spectral ones; maximum likelihood, as ADMIXTURE",
            evidence, ml_start)
    return EstimatorChoice(
        "spectral", f"{summary}: maximum likelihood overfits along directions the "
        "likelihood cannot identify; keeping the spectral estimate",
        evidence, ml_start)
