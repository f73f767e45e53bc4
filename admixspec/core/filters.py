"""Variant and individual filters, and checks that the data are usable.

Each filter returns a new :class:`~admixspec.core.genotypes.Genotypes` and appends
one entry to its ``filter_log``::

    {"filter": "maf", "unit": "variants", "removed": 12,
     "reason": "minor allele frequency < 0.05"}

:func:`apply_filters` runs them in PLINK's order: ``--mind`` (individuals
with too many missing calls), then ``--geno`` (SNPs with too many missing
calls), then monomorphic sites, then ``--maf``, and last LD pruning
(``--indep-pairwise``), which PLINK too applies to the variants that pass the
other filters. Thresholds follow PLINK:
an individual/SNP is removed when its missing fraction is *strictly greater*
than ``mind``/``geno``, a SNP when its minor allele frequency is *strictly
less* than ``maf``. Frequencies are computed over called genotypes only,
each counting two alleles, on every chromosome: PLINK counts a male's
chromosome X (and Y) call as one allele and his heterozygous X calls as
missing, so ``plink --maf`` on X keeps slightly other SNPs (the HapMap3
tutorial data's 722 X SNPs: 668 against 666 at ``--maf 0.01``). admixspec
reads no sex and fits every SNP as diploid, as ADMIXTURE does.

LD pruning (:func:`filter_indep_pairwise`) needs scikit-allel, the optional
``allel`` extra (``pip install 'admixspec[allel]'``).

The biallelic-SNP filter (multiallelic sites, indels, symbolic alleles) runs
inside the readers, which cannot represent other variants; its counts are in
the ``"biallelic_snp"`` entry they write.
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np
import pandas as pd

from .exceptions import InputError, UsageError, import_optional
from .genotypes import Genotypes, minor_allele_counts, snp_statistics
from .validation import Interval

__all__ = [
    "apply_filters",
    "check_K",
    "check_thresholds",
    "check_usable",
    "filter_geno",
    "filter_indep_pairwise",
    "filter_maf",
    "filter_mind",
    "filter_monomorphic",
    "log_entry",
    "parse_indep_pairwise",
    "select_individuals",
    "select_snps",
    "snp_filters",
    "snp_statistics",
]

def log_entry(name: str, unit: str, removed: int, reason: str) -> dict:
    """One ``filter_log`` entry, in the form the module docstring shows."""
    return {"filter": name, "unit": unit, "removed": int(removed), "reason": reason}


def _log(genotypes: Genotypes, name: str, unit: str, removed: int, reason: str) -> None:
    genotypes.filter_log.append(log_entry(name, unit, removed, reason))


def _unchanged(genotypes: Genotypes) -> Genotypes:
    """The same data under its own filter log, the dosage shared, not copied.

    A filter that removes nothing must not copy the int8 matrix: the copy
    doubled the reader's peak memory on every cohort (the monomorphic filter
    always runs).
    """
    return dataclasses.replace(genotypes, filter_log=list(genotypes.filter_log))


def _keep_snps(genotypes: Genotypes, keep: np.ndarray) -> Genotypes:
    if keep.all():
        return _unchanged(genotypes)
    return genotypes.subset(snps=np.flatnonzero(keep))


def _check_fraction(value: float, name: str, upper: float = 1.0) -> None:
    Interval(float, 0, upper).check(name, value)


def check_thresholds(*, maf: float = 0.0, geno: float = 1.0, mind: float = 1.0) -> None:
    """Raise :class:`UsageError` unless maf is in [0, 0.5] and geno, mind in [0, 1]."""
    _check_fraction(maf, "maf", upper=0.5)
    _check_fraction(geno, "geno")
    _check_fraction(mind, "mind")


def select_individuals(missing, n_snps: int, mind: float) -> tuple[np.ndarray, dict]:
    """The individuals that ``--mind`` keeps, from their missing calls.

    Parameters
    ----------
    missing : numpy.ndarray, int, shape (n_individuals,)
        Missing calls per individual (:func:`snp_statistics`).
    n_snps : int
        SNPs the calls were counted over (none: everyone is kept).
    mind : float
        Threshold, checked by the caller.

    Returns
    -------
    keep : numpy.ndarray, bool, shape (n_individuals,)
    entry : dict
        The filter's log entry.
    """
    keep = np.asarray(missing) / max(n_snps, 1) <= mind
    return keep, log_entry("mind", "individuals", np.count_nonzero(~keep),
                           f"missing-call fraction > {mind:g}")


def snp_filters(*, maf: float = 0.0, geno: float = 1.0,
                drop_monomorphic: bool = True) -> dict:
    """:func:`select_snps`'s keyword arguments for PLINK-style thresholds.

    ``geno`` 1 and ``maf`` 0 remove nothing and are left out of the log, as
    :func:`apply_filters` has always done: they become None.
    """
    return {"geno": geno if geno < 1.0 else None, "maf": maf if maf > 0.0 else None,
            "drop_monomorphic": drop_monomorphic}


def filter_mind(genotypes: Genotypes, mind: float) -> Genotypes:
    """Remove individuals whose missing-call fraction exceeds ``mind``.

    Examples
    --------
    >>> import numpy as np
    >>> g = Genotypes.from_array(np.array([[0, 1], [-1, -1], [2, 1]]))
    >>> filter_mind(g, 0.5).n_individuals
    2
    """
    _check_fraction(mind, "mind")
    _, _, missing_rows = snp_statistics(genotypes.dosage)
    keep, entry = select_individuals(missing_rows, genotypes.n_snps, mind)
    result = (_unchanged(genotypes) if keep.all()
              else genotypes.subset(individuals=np.flatnonzero(keep)))
    result.filter_log.append(entry)
    return result


def select_snps(called, allele_sum, n_individuals: int, *, geno=None, maf=None,
                drop_monomorphic: bool = True) -> tuple[np.ndarray, list]:
    """The SNPs that ``--geno``, the monomorphic filter and ``--maf`` keep.

    From the SNPs' counts alone: a SNP's counts do not depend on which other
    SNPs are kept, so one :func:`snp_statistics` pass serves all three, and no
    genotype is copied to decide.

    Parameters
    ----------
    called, allele_sum : numpy.ndarray, int, shape (n_snps,)
        From :func:`snp_statistics`.
    n_individuals : int
    geno, maf : float, optional
        Thresholds, checked by the caller; None turns the filter off.
    drop_monomorphic : bool

    Returns
    -------
    keep : numpy.ndarray, bool, shape (n_snps,)
    entries : list of dict
        A log entry per filter that is on, in PLINK's order, each counting the
        SNPs it removes among those the filters before it kept (as applying
        them one after the other would).
    """
    tests = []
    if geno is not None:
        missing = (n_individuals - called) / max(n_individuals, 1)
        tests.append(("geno", missing <= geno, f"missing-call fraction > {geno:g}"))
    if drop_monomorphic or maf is not None:
        frequency = minor_allele_counts(allele_sum, 2 * called) / (
            2.0 * np.maximum(called, 1))
    if drop_monomorphic:
        tests.append(("monomorphic", (frequency > 0) & (called > 0),
                      "monomorphic (one observed allele) or no called genotype"))
    if maf is not None:
        tests.append(("maf", frequency >= maf, f"minor allele frequency < {maf:g}"))
    keep = np.ones(len(called), dtype=bool)
    entries = []
    for name, passes, reason in tests:
        entries.append(log_entry(name, "variants", np.count_nonzero(keep & ~passes),
                                 reason))
        keep &= passes
    return keep, entries


def _filter_snps(genotypes: Genotypes, **thresholds) -> Genotypes:
    """:func:`select_snps` on ``genotypes``: one count pass, one subset."""
    called, allele_sum, _ = snp_statistics(genotypes.dosage)
    keep, entries = select_snps(called, allele_sum, genotypes.n_individuals,
                                **thresholds)
    result = _keep_snps(genotypes, keep)
    result.filter_log.extend(entries)
    return result


def filter_geno(genotypes: Genotypes, geno: float) -> Genotypes:
    """Remove SNPs whose missing-call fraction exceeds ``geno``."""
    _check_fraction(geno, "geno")
    return _filter_snps(genotypes, geno=geno, drop_monomorphic=False)


def filter_monomorphic(genotypes: Genotypes) -> Genotypes:
    """Remove SNPs with a single observed allele (or no called genotype).

    Examples
    --------
    >>> import numpy as np
    >>> g = Genotypes.from_array(np.array([[0, 1, 2], [0, 2, -1]]))
    >>> filter_monomorphic(g).n_snps
    1
    """
    return _filter_snps(genotypes)


def filter_maf(genotypes: Genotypes, maf: float) -> Genotypes:
    """Remove SNPs whose minor allele frequency is below ``maf``."""
    _check_fraction(maf, "maf", upper=0.5)
    return _filter_snps(genotypes, maf=maf, drop_monomorphic=False)


def parse_indep_pairwise(values) -> tuple[int, int, float]:
    """Validate PLINK's ``--indep-pairwise WINDOW STEP R2`` parameters.

    Parameters
    ----------
    values : sequence of 3 (str or number)
        Window size in SNPs, step in SNPs, and the r² threshold.

    Returns
    -------
    (window, step, r2) : tuple of (int, int, float)

    Raises
    ------
    UsageError
        Not three values; a window in kilobases (PLINK's ``kb`` suffix, not
        supported here); a window below 2 or a step below 1 SNP; a step
        longer than the window; r² outside [0, 1) (PLINK refuses 1 too).

    Examples
    --------
    >>> parse_indep_pairwise(["50", "5", "0.2"])
    (50, 5, 0.2)
    >>> parse_indep_pairwise(["500kb", "1", "0.2"])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.UsageError: --indep-pairwise: a window in kilobases
    ('500kb') is not supported; give the window as a SNP count (e.g. 50)
    """
    values = list(values)
    if len(values) != 3:
        raise UsageError(
            f"--indep-pairwise takes 3 values (WINDOW STEP R2), got {len(values)}"
        )
    window, step, r2 = (str(value).strip() for value in values)
    if window.lower().endswith("kb"):
        raise UsageError(
            f"--indep-pairwise: a window in kilobases ({window!r}) is not supported; "
            "give the window as a SNP count (e.g. 50)"
        )
    try:
        window_snps, step_snps, threshold = int(window), int(step), float(r2)
    except ValueError:
        raise UsageError(
            f"--indep-pairwise: expected WINDOW STEP R2 as integer, integer, number; "
            f"got {window!r} {step!r} {r2!r}"
        ) from None
    if window_snps < 2:
        raise UsageError(
            f"--indep-pairwise: WINDOW must be at least 2 SNPs, got {window}"
        )
    if step_snps < 1:
        raise UsageError(f"--indep-pairwise: STEP must be at least 1 SNP, got {step}")
    if step_snps > window_snps:
        # SNPs between two windows would never be compared (PLINK 2 refuses too)
        raise UsageError(
            f"--indep-pairwise: STEP ({step}) must not exceed WINDOW ({window})"
        )
    if not 0.0 <= threshold <= 1.0:
        raise UsageError(f"--indep-pairwise: R2 must lie in [0, 1], got {r2}")
    if threshold == 1.0:
        # no r^2 exceeds 1, yet scikit-allel's float32 r^2 of two copies can
        raise UsageError(
            f"--indep-pairwise: R2 must be below 1 (as in PLINK: no pair has r^2 "
            f"above 1), got {r2}"
        )
    return window_snps, step_snps, threshold


#: scikit-allel's r is float32, its r^2 off by up to about 4e-7: a pair whose
#: r^2 equals R2 would be pruned about half the time, where PLINK keeps it.
_R2_SLACK = 1e-6


def _check_sorted(genotypes: Genotypes, columns: np.ndarray) -> None:
    """Raise :class:`InputError` unless one chromosome's SNPs are in position order.

    Windows of consecutive SNPs are only neighbourhoods on sorted data; PLINK
    refuses to LD-prune an unsorted fileset too.
    """
    positions = genotypes.variants["pos"].to_numpy()[columns]
    descents = np.flatnonzero(np.diff(positions) < 0)
    if len(descents):
        ids = genotypes.variants["id"].to_numpy()
        first, second = columns[descents[0]], columns[descents[0] + 1]
        raise InputError(
            "--indep-pairwise needs the SNPs of each chromosome in position order, "
            f"but {ids[second]!r} (position {positions[descents[0] + 1]}) follows "
            f"{ids[first]!r} (position {positions[descents[0]]}) on chromosome "
            f"{genotypes.variants['chrom'].to_numpy()[first]}; sort the input "
            "first (e.g. plink --make-bed)",
            path=genotypes.source,
        )


def filter_indep_pairwise(
    genotypes: Genotypes, window: int, step: int, r2: float
) -> Genotypes:
    """LD-prune SNPs as ``plink --indep-pairwise WINDOW STEP R2`` does.

    Within windows of ``window`` SNPs, moved ``step`` SNPs at a time, one SNP
    of every pair whose squared genotype-dosage correlation exceeds ``r2`` is
    removed (:func:`allel.locate_unlinked`; missing calls are left out of
    each pair's correlation, as in PLINK). Windows never span two
    chromosomes. A pair whose r² equals ``r2`` is kept, as in PLINK
    (scikit-allel's float32 r² is compared with ``r2`` + 1e-6). Of a
    correlated pair, scikit-allel removes the later SNP
    where PLINK 1.9 removes the one with the lower minor allele frequency,
    so the two keep similar but not identical sets (see
    ``benchmarks/ld_pruning.py``).

    Chromosomes are pruned one at a time: the only temporary is one
    chromosome's dosage block, transposed to SNP-major as scikit-allel wants.

    Parameters
    ----------
    genotypes : Genotypes
        dosage shape (n_individuals, n_snps); SNPs in position order within
        each chromosome (else :class:`InputError`, as PLINK refuses).
    window, step : int
        Window size and step, in SNPs.
    r2 : float in [0, 1)
        Largest r² a kept pair may have.

    Returns
    -------
    Genotypes
        The kept SNPs, in input order; ``filter_log`` gains an
        ``"indep_pairwise"`` entry.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> unlinked = rng.integers(0, 3, size=(40, 3))
    >>> g = Genotypes.from_array(np.column_stack([unlinked, unlinked[:, 0]]))
    >>> filter_indep_pairwise(g, 50, 5, 0.5).variants["id"].tolist()
    ['snp0', 'snp1', 'snp2']
    """
    window, step, r2 = parse_indep_pairwise((window, step, r2))
    allel = import_optional(
        "allel", extra="allel", needed_for="--indep-pairwise", package="scikit-allel"
    )
    keep = np.zeros(genotypes.n_snps, dtype=bool)
    chrom = genotypes.variants["chrom"].astype(str).to_numpy()
    for name in pd.unique(chrom):
        columns = np.flatnonzero(chrom == name)
        _check_sorted(genotypes, columns)
        snp_major = np.ascontiguousarray(genotypes.dosage[:, columns].T)
        keep[columns] = allel.locate_unlinked(
            snp_major, size=window, step=step, threshold=r2 + _R2_SLACK
        )
    result = _keep_snps(genotypes, keep)
    _log(
        result, "indep_pairwise", "variants", np.count_nonzero(~keep),
        f"LD pruning: r^2 > {r2:g} with a kept SNP within {window} SNPs (step {step})",
    )
    return result


def apply_filters(
    genotypes: Genotypes,
    *,
    maf: float = 0.0,
    geno: float = 1.0,
    mind: float = 1.0,
    drop_monomorphic: bool = True,
    indep_pairwise=None,
) -> Genotypes:
    """Apply ``--mind``, ``--geno``, the monomorphic filter, ``--maf``, then LD pruning.

    A filter whose threshold keeps everything (``mind=1``, ``geno=1``,
    ``maf=0``) is skipped and leaves no log entry.

    Parameters
    ----------
    genotypes : Genotypes or array_like
        A bare dosage array, shape (n_individuals, n_snps), is wrapped first
        (:meth:`Genotypes.from_array`, which checks its values).
    maf : float in [0, 0.5]
        Minimum minor allele frequency.
    geno : float in [0, 1]
        Maximum missing-call fraction per SNP.
    mind : float in [0, 1]
        Maximum missing-call fraction per individual.
    drop_monomorphic : bool
        Remove SNPs with one observed allele.
    indep_pairwise : tuple (window, step, r2), optional
        LD pruning as PLINK's ``--indep-pairwise`` (see
        :func:`filter_indep_pairwise`), applied last; ``None`` skips it. Its
        windows count the monomorphic SNPs that pass ``geno`` and ``maf``, as
        PLINK's do (it has no monomorphic filter) and as with
        ``drop_monomorphic=False``; those are dropped after pruning.

    Returns
    -------
    Genotypes
        The filtered data (sharing the input's dosage array when no filter
        removed anything); ``filter_log`` extended.

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols
    >>> g = simulate_balding_nichols(30, 400, 2, missing_rate=0.02, seed=3).genotypes
    >>> out = apply_filters(g, maf=0.05, geno=0.1)
    >>> [entry["filter"] for entry in out.filter_log]
    ['geno', 'monomorphic', 'maf']
    """
    check_thresholds(maf=maf, geno=geno, mind=mind)
    if indep_pairwise is not None:
        indep_pairwise = parse_indep_pairwise(indep_pairwise)
    # a bare array had no .dosage (AttributeError from inside a filter)
    result = (genotypes if isinstance(genotypes, Genotypes)
              else Genotypes.from_array(genotypes))
    if mind < 1.0:
        result = filter_mind(result, mind)
    thresholds = snp_filters(maf=maf, geno=geno, drop_monomorphic=drop_monomorphic)
    if indep_pairwise is not None:
        return _filter_and_prune(result, thresholds, indep_pairwise)
    if (drop_monomorphic or thresholds["geno"] is not None
            or thresholds["maf"] is not None):
        result = _filter_snps(result, **thresholds)
    return result


def _filter_and_prune(genotypes: Genotypes, thresholds: dict,
                      indep_pairwise) -> Genotypes:
    """The SNP filters, then LD pruning, with monomorphic SNPs in the windows.

    PLINK has no monomorphic filter, so its windows count the monomorphic
    SNPs that ``--maf`` leaves (and ``run``, which keeps them, prunes so too):
    those are dropped after pruning, which never removes one (their r is
    undefined). The log keeps the filters' order.
    """
    if not thresholds["drop_monomorphic"] or thresholds["maf"] is not None:
        return filter_indep_pairwise(_filter_snps(genotypes, **thresholds),
                                     *indep_pairwise)
    windows = _filter_snps(genotypes, **dict(thresholds, drop_monomorphic=False))
    result = _filter_snps(filter_indep_pairwise(windows, *indep_pairwise))
    log = result.filter_log
    log[-2], log[-1] = log[-1], log[-2]  # monomorphic before indep_pairwise
    return result


def check_usable(genotypes: Genotypes, *, individuals: int = 2) -> None:
    """Raise :class:`InputError` unless ``individuals`` individuals and 2 SNPs remain.

    A projection onto a fixed P fits each individual alone, so it needs one
    (``individuals=1``); every other fit compares individuals.

    Examples
    --------
    >>> import numpy as np
    >>> check_usable(Genotypes.from_array(np.zeros((1, 5))))
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.InputError: fewer than 2 individuals left after
    filtering (1 left)
    """
    if genotypes.n_individuals < individuals:
        raise InputError(
            f"fewer than {individuals} individual{'s' if individuals > 1 else ''} "
            f"left after filtering ({genotypes.n_individuals} left)",
            path=genotypes.source,
        )
    if genotypes.n_snps < 2:
        raise InputError(
            f"fewer than 2 usable SNPs left after filtering ({genotypes.n_snps} left)",
            path=genotypes.source,
        )


def check_K(K: int, n_individuals: int) -> None:
    """Raise :class:`UsageError` unless ``1 <= K < n_individuals``.

    Examples
    --------
    >>> check_K(3, 60)
    >>> check_K(0, 60)
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.UsageError: K must be at least 1, got 0
    """
    if (isinstance(K, bool) or not isinstance(K, numbers.Real)
            or not float(K).is_integer()):
        raise UsageError(f"K must be an integer, got {K!r}")
    if K < 1:
        raise UsageError(f"K must be at least 1, got {K}")
    if K >= n_individuals:
        raise UsageError(
            f"K must be smaller than the number of individuals ({n_individuals}), "
            f"got {K}"
        )
