"""Monomorphic SNPs: kept in P and in the log-likelihood, left out of the fit.

ADMIXTURE writes one ``.P`` row per ``.bim`` row, so ``paste data.bim
out.K.P`` pairs SNPs with their frequencies; a SNP with one observed allele
(or none) is one of those rows. Such a SNP carries no information on Q: its
maximum-likelihood frequency is the observed one, 0 or 1, clipped to the box
``[P_MIN, P_MAX]``, the same in every component, so its likelihood is
``observed alleles x log(1 - P_MIN)`` whatever Q is. :func:`admixspec.fit_admixture`
therefore fits the polymorphic SNPs only (the estimators' SNP samples, moments
and passes are not spent on constants) and then :func:`complete_snps` puts
the monomorphic ones back:

* P gains their rows, in input order: the observed frequency clipped to the
  box, and 0.5 for a SNP with no called genotype (whose likelihood is 0 for
  any frequency);
* the log-likelihood gains their constant, so it is ADMIXTURE's
  log-likelihood of all SNPs (the maximum over (Q, P) of the fit with them
  equals the fit without them plus the constant);
* the log says how many there were.

Projection keeps every SNP: with P fixed, a SNP monomorphic in the projected
individuals still tells which component they come from.
"""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np

from ..core.exceptions import InputError
from ..core.genotypes import allele_counts, snp_statistics
from ..core.parameters import P_MAX, P_MIN
from .result import AdmixtureResult

__all__ = ["complete_snps", "monomorphic_snps"]

logger = logging.getLogger(__name__)

#: Fewest polymorphic SNPs a fit needs (as :func:`admixspec.core.filters.check_usable`
#: asks of the SNPs left after filtering).
MIN_POLYMORPHIC = 2

#: SNPs :func:`survey_calls` counts at a time.
SURVEY_SNPS = 4096


def monomorphic_snps(G: np.ndarray):
    """Which SNPs have a single observed allele (or no call), and their counts.

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)

    Returns
    -------
    mask : numpy.ndarray, bool, shape (n_snps,)
        True for a monomorphic SNP (as :func:`admixspec.core.filters.filter_monomorphic`
        removes them).
    counts : tuple of numpy.ndarray, int64, shape (n_snps,)
        ``(counted, observed)`` allele counts
        (:func:`admixspec.core.genotypes.allele_counts`).

    Examples
    --------
    >>> G = np.array([[0, 1, 2, -1], [0, 2, 2, -1]], dtype=np.int8)
    >>> monomorphic_snps(G)[0].tolist()
    [True, False, True, True]
    """
    counted, observed = allele_counts(G)
    mask = (counted == 0) | (counted == observed)
    return mask, (counted, observed)


def check_polymorphic(n_polymorphic: int, n_snps: int, path=None) -> None:
    """Raise :class:`InputError` unless :data:`MIN_POLYMORPHIC` SNPs vary.

    ``admixspec run`` keeps monomorphic SNPs (P has a row for each), so the
    reader's :func:`~admixspec.core.filters.check_usable` counts them as
    usable; a fit, which leaves them out, needs SNPs that vary.

    Examples
    --------
    >>> check_polymorphic(0, 200)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.InputError: fewer than 2 usable SNPs left after
    filtering (0 left: the other 200 have one observed allele, or none)
    """
    if n_polymorphic < MIN_POLYMORPHIC:
        raise InputError(
            f"fewer than {MIN_POLYMORPHIC} usable SNPs left after filtering "
            f"({n_polymorphic} left: the other {n_snps - n_polymorphic} have one "
            "observed allele, or none)", path=path)


def survey_calls(G: np.ndarray, *, chunk_snps: int = SURVEY_SNPS):
    """Whether enough SNPs vary, and which individuals have no call at all.

    Counts blocks of SNPs only until :data:`MIN_POLYMORPHIC` polymorphic SNPs
    are found and every individual has a call: on usable data that is the
    first block, not a pass over the matrix (the fit counts every SNP later).

    Parameters
    ----------
    G : numpy.ndarray, int8, shape (n_individuals, n_snps)
    chunk_snps : int
        SNPs counted at a time.

    Returns
    -------
    n_polymorphic : int
        Polymorphic SNPs found: exact when below :data:`MIN_POLYMORPHIC` (all
        SNPs were counted), else a lower bound.
    uncalled : numpy.ndarray, int64
        Rows of the individuals with no called genotype.

    Examples
    --------
    >>> G = np.array([[0, 1, -1], [-1, -1, -1], [2, 2, 0]], dtype=np.int8)
    >>> n_polymorphic, uncalled = survey_calls(G, chunk_snps=1)
    >>> n_polymorphic, uncalled.tolist()
    (2, [1])
    """
    n_individuals, n_snps = G.shape
    uncalled = np.arange(n_individuals)
    n_polymorphic = 0
    for start in range(0, n_snps, chunk_snps):
        if n_polymorphic >= MIN_POLYMORPHIC and uncalled.size == 0:
            break
        block = slice(start, min(start + chunk_snps, n_snps))
        if n_polymorphic < MIN_POLYMORPHIC:
            called, counted, missing = snp_statistics(np.ascontiguousarray(G[:, block]))
            varies = (counted > 0) & (counted < 2 * called)
            n_polymorphic += int(np.count_nonzero(varies))
            uncalled = uncalled[missing[uncalled] == block.stop - start]
        else:  # only the rows still without a call need reading
            uncalled = uncalled[(G[uncalled, block] < 0).all(axis=1)]
    return n_polymorphic, uncalled


def complete_snps(result: AdmixtureResult, mask: np.ndarray, counts) -> AdmixtureResult:
    """A fit of the polymorphic SNPs, with the monomorphic ones put back.

    Parameters
    ----------
    result : AdmixtureResult
        Fit of the SNPs where ``mask`` is False, P of shape
        (``(~mask).sum()``, K).
    mask, counts
        From :func:`monomorphic_snps` of all SNPs.

    Returns
    -------
    AdmixtureResult
        P of shape (n_snps, K) in input order, the log-likelihood of all
        SNPs, ``diagnostics["monomorphic"]`` (how many, their constant), and
        its last ``Loglikelihood:`` log line preceded by a line on them.

    Examples
    --------
    >>> G = np.array([[0, 1, 2], [0, 2, 0]], dtype=np.int8)
    >>> mask, counts = monomorphic_snps(G)
    >>> fit = AdmixtureResult(np.ones((2, 1)), np.array([[0.75], [0.5]]), -5.0,
    ...                       log_lines=["Loglikelihood: -5.000000"])
    >>> full = complete_snps(fit, mask, counts)
    >>> full.P[:, 0].round(5).tolist(), full.log_lines[-1]
    ([1e-05, 0.75, 0.5], 'Loglikelihood: -5.000040')
    """
    counted, observed = counts
    n_mono = int(mask.sum())
    P = np.empty((mask.size, result.P.shape[1]))
    P[~mask] = result.P
    frequency = np.where(observed[mask] > 0,
                         counted[mask] / np.maximum(observed[mask], 1), 0.5)
    P[mask] = np.clip(frequency, P_MIN, P_MAX)[:, None]
    # each observed allele of a monomorphic SNP has probability P_MAX = 1 - P_MIN
    constant = float(observed[mask].sum()) * math.log(P_MAX)
    loglik = float(result.loglik) + constant
    lines = list(result.log_lines)
    last = max((i for i, line in enumerate(lines) if line.startswith("Loglikelihood:")),
               default=len(lines))
    note = (f"Monomorphic SNPs: {n_mono} of {mask.size} have one observed allele (or "
            "none): not fitted (they carry no information on Q); their P is the "
            f"observed frequency clipped to [{P_MIN:g}, {P_MAX:g}] and they add "
            f"{constant:.6f} to the loglikelihood")
    lines[last:last + 1] = [note, f"Loglikelihood: {loglik:.6f}"]
    # the fit logged its own log-likelihood, of the polymorphic SNPs only: the
    # console's last word must be the files' (every SNP)
    logger.info("%s", note)
    logger.info("Loglikelihood: %.6f", loglik)
    diagnostics = {**result.diagnostics,
                   "monomorphic": {"snps": n_mono, "loglik": constant}}
    return dataclasses.replace(result, P=P, loglik=loglik, log_lines=lines,
                               diagnostics=diagnostics)
