"""Genotypes left on disk and read one chunk of SNPs at a time (``run --memory``).

:class:`StreamedChunks` is the part of a streamed
:class:`admixspec.core.chunks.GenotypeChunks` source that does not depend on
the file format: the kept individuals and SNPs, the chunks, one reused int8
buffer, the per-individual call counts and the filters. A format supplies
only the decoding of a range of kept SNPs
(:class:`admixspec.io.bed_chunks.BedChunks` for PLINK ``.bed``,
:class:`admixspec.io.vcz.VczChunks` for VCF Zarr).
:func:`admixspec.io.reader.open_streamed` opens either, filtered as
:func:`admixspec.read_genotypes` filters.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.chunks import add_sums, chunk_bounds
from ..core.filters import check_thresholds, select_individuals, select_snps, snp_filters
from ..core.genotypes import snp_statistics
from .errors import reading

__all__ = ["StreamedChunks", "StreamedGenotypes", "chunk_snps_for", "filter_streamed",
           "warn_workspace_floor", "workspace_floor"]

logger = logging.getLogger("admixspec")

#: Seconds between progress lines of a filtering pass.
PROGRESS_INTERVAL = 10.0


def chunk_snps_for(n_individuals: int, budget_bytes: float) -> int:
    """SNPs per chunk (a multiple of 64) for about ``budget_bytes`` of int8 genotypes.

    Examples
    --------
    >>> chunk_snps_for(1000, 1e6)
    960
    """
    return max(64, int(budget_bytes // max(n_individuals, 1)) // 64 * 64)


def workspace_floor(n_individuals: int, n_snps: int, K: int, *, reference: int,
                    spectral: bool) -> list[tuple[float, str]]:
    """What a streamed fit holds in memory whatever its budget: (bytes, what) pairs.

    The budget sizes the chunks and the reference's SNPs, but not below 64
    SNPs (:func:`chunk_snps_for`,
    :func:`admixspec.fit.reference.reference_sample`), and not the arrays
    the fit's sizes fix: the spectral stage's individuals x individuals
    moments of the reference, and P. Each is counted once, so the sum is a
    lower bound (the fit holds several P, and more than one moment matrix).

    Parameters
    ----------
    n_individuals, n_snps : int
        The streamed genotypes' kept individuals and SNPs.
    K : int
    reference : int
        Individuals of the reference fitted in memory.
    spectral : bool
        Whether that fit runs the spectral stage (not plain maximum likelihood).

    Returns
    -------
    list of (float, str)
        The largest first.

    Examples
    --------
    >>> [round(size / 2**20, 1) for size, _ in workspace_floor(
    ...     2000, 20000, 3, reference=2000, spectral=True)]
    [30.5, 0.5, 0.1, 0.1]
    """
    parts = [(8.0 * n_snps * K, f"P, {n_snps} x {K} float64"),
             (64.0 * n_individuals, f"a chunk of 64 SNPs x {n_individuals} individuals"),
             (64.0 * reference, f"the reference's 64 SNPs x {reference} individuals")]
    if spectral:
        parts.append((8.0 * reference * reference,
                      f"the spectral stage's {reference} x {reference} float64 "
                      "moments of the reference individuals"))
    return sorted(parts, key=lambda part: -part[0])


def warn_workspace_floor(genotypes, K: int, *, reference_size: int,
                         spectral: bool) -> None:
    """Log a warning when a streamed fit's :func:`workspace_floor` exceeds its budget.

    ``--memory`` sizes what it can (the chunks, the reference's SNPs); a
    budget below what the fit holds whatever the budget is exceeded, which
    the log then says, with the floor and its largest part.

    Parameters
    ----------
    genotypes : StreamedGenotypes
    K : int
    reference_size : int
        The fit's reference size (all individuals when at least the cohort).
    spectral : bool
        As for :func:`workspace_floor`.
    """
    m = genotypes.n_individuals
    parts = workspace_floor(m, genotypes.n_snps, K, reference=min(reference_size, m),
                            spectral=spectral)
    floor = sum(size for size, _ in parts)
    if floor <= genotypes.memory_bytes:
        return
    largest = "; ".join(f"{what}: {size / 2**20:.1f} MiB" for size, what in parts[:2])
    logger.warning(
        "%s: K=%d needs at least %.1f MiB in memory whatever --memory (%s), more "
        "than the workspace budget of %.1f MiB: the run will exceed it (raise "
        "--memory, or lower --reference-size)", genotypes.source, K, floor / 2**20,
        largest, genotypes.memory_bytes / 2**20)


class StreamedChunks(ABC):
    """Chosen individuals and SNPs of a genotype file, decoded a chunk of SNPs at a time.

    An abstract base: subclasses implement :meth:`_decode_into` for their format.

    Parameters
    ----------
    path : str or os.PathLike
        The file (or store) the genotypes are read from.
    n_samples, n_variants : int
        Samples and variants in the file.
    rows : array_like of int, optional
        Samples to keep, increasing (default all).
    columns : array_like of int, optional
        Variants (SNPs) to keep, increasing (default all).
    chunk_snps : int
        Largest chunk, in kept SNPs (rounded down to a multiple of 64).
    n_observed : numpy.ndarray, optional
        Non-missing calls per kept individual, if already counted; else one
        pass of :meth:`statistics` counts them when first asked for.

    Attributes
    ----------
    n_individuals, n_snps : int
    bounds : list of (int, int)
        Kept-SNP ranges of the chunks.
    n_observed : numpy.ndarray, float64, shape (n_individuals,)
    """

    def __init__(self, path, n_samples: int, n_variants: int, *, rows=None,
                 columns=None, chunk_snps: int = 8192, n_observed=None):
        self.path = Path(path)
        self.n_samples, self.n_variants = int(n_samples), int(n_variants)
        self.rows = np.arange(n_samples, dtype=np.int64) if rows is None else \
            np.asarray(rows, dtype=np.int64)
        self.columns = np.arange(n_variants, dtype=np.int64) if columns is None else \
            np.asarray(columns, dtype=np.int64)
        self.n_individuals, self.n_snps = len(self.rows), len(self.columns)
        self.bounds = chunk_bounds(self.n_snps, chunk_snps)
        self.chunk_snps = max((stop - start for start, stop in self.bounds), default=0)
        # allocated on the first read: a source opened early (the whole cohort,
        # while the reference is fitted in memory) holds no buffer until used
        self._dosage = None
        # counted on first use: a source that is only read (the reference
        # sample) or filtered (open_streamed) needs no counting pass
        self._n_observed = None if n_observed is None else \
            np.asarray(n_observed, dtype=np.float64)

    @property
    def n_observed(self) -> np.ndarray:
        """Non-missing calls per kept individual, float64 (n_individuals,).

        Given to the constructor, or counted by one pass of :meth:`statistics`
        the first time it is asked for.
        """
        if self._n_observed is None:
            self._n_observed = (self.n_snps - self.statistics()[2]).astype(np.float64)
        return self._n_observed

    def subset(self, *, rows=None, columns=None, chunk_snps=None, n_observed=None):
        """The same file with other individuals/SNPs (positions into this source's own).

        ``n_observed`` gives the subset's calls per individual when the caller
        has counted them; otherwise they are carried over when no SNP is
        dropped, else counted when first needed.
        """
        pick_rows = self.rows if rows is None else self.rows[np.asarray(rows)]
        pick_columns = (self.columns if columns is None
                        else self.columns[np.asarray(columns)])
        known = self._n_observed
        if n_observed is None and columns is None and known is not None:
            n_observed = known if rows is None else known[np.asarray(rows)]
        return type(self)(self.path, self.n_samples, self.n_variants, rows=pick_rows,
                          columns=pick_columns,
                          chunk_snps=chunk_snps or max(self.chunk_snps, 64),
                          n_observed=n_observed)

    def chunk(self, start: int, stop: int) -> np.ndarray:
        """int8 dosage of kept SNPs ``start:stop``, shape (n_individuals, stop - start).

        The array is this source's reused buffer: valid until the next call.
        """
        width = stop - start
        if self._dosage is None:
            self._dosage = np.empty(self.n_individuals * self.chunk_snps, dtype=np.int8)
        out = self._dosage[: self.n_individuals * width].reshape(
            self.n_individuals, width)
        with reading(self.path, "a genotype file"):
            self._decode_into(out, 0, start, stop)
        return out

    @abstractmethod
    def _decode_into(self, out: np.ndarray, offset: int, start: int, stop: int):
        """Decode kept SNPs ``start:stop`` into ``out``, columns ``offset`` onward."""

    def map(self, function, P, *shared) -> list:
        """``function(chunk, P[start:stop], *shared)`` for every chunk, in order."""
        return [function(self.chunk(start, stop), P[start:stop], *shared)
                for start, stop in self.bounds]

    def map_sum(self, function, P, *shared) -> tuple[list, tuple]:
        """:func:`admixspec.core.chunks.map_sum`, the sums added as the chunks are read.

        The generic version keeps every chunk's sums (Q's statistics, m x K
        and more per chunk) until the pass ends, so a smaller ``--memory``
        (more chunks) took more memory; here one running total is kept,
        added in chunk order from 0 as :func:`~admixspec.core.chunks.add_sums`
        adds, so the result has the same bits.
        """
        rows, total = [], None
        for start, stop in self.bounds:
            part, sums = function(self.chunk(start, stop), P[start:stop], *shared)
            rows.append(part)
            # add_sums of [total, sums] is add_sums of every chunk so far: 0 + total
            # copies it, so each field is added in the same order
            total = add_sums([sums] if total is None else [total, sums])
        return rows, () if total is None else total

    def chunks_with_progress(self, what: str):
        """Every chunk as ``(start, stop, chunk)``, with progress in the log.

        A line every :data:`PROGRESS_INTERVAL` seconds names ``what`` the pass
        does (``"filtered"``, ``"counted"``) and how far it got.
        """
        last = time.monotonic()
        for start, stop in self.bounds:
            yield start, stop, self.chunk(start, stop)
            if time.monotonic() - last >= PROGRESS_INTERVAL:
                last = time.monotonic()
                logger.info("%s: %s %d of %d SNPs (%.0f%%)", self.path, what, stop,
                            self.n_snps, 100.0 * stop / self.n_snps)

    def statistics(self):
        """Per-SNP calls and allele sums, per-individual missing calls, in one pass.

        Returns
        -------
        called, allele_sum : numpy.ndarray, int64, shape (n_snps,)
        missing_per_individual : numpy.ndarray, int64, shape (n_individuals,)
            As :func:`admixspec.core.genotypes.snp_statistics` of the whole matrix.
        """
        called = np.empty(self.n_snps, dtype=np.int64)
        allele_sum = np.empty(self.n_snps, dtype=np.int64)
        missing = np.zeros(self.n_individuals, dtype=np.int64)
        for start, stop, chunk in self.chunks_with_progress("counted"):
            called[start:stop], allele_sum[start:stop], chunk_missing = snp_statistics(
                chunk)
            missing += chunk_missing
        return called, allele_sum, missing

    def read(self) -> np.ndarray:
        """All kept genotypes in memory, int8 (n_individuals, n_snps)."""
        G = np.empty((self.n_individuals, self.n_snps), dtype=np.int8)
        for start, stop in self.bounds:  # decoded in place: no chunk buffer, no copy
            with reading(self.path, "a genotype file"):
                self._decode_into(G, start, start, stop)
        return G


@dataclass
class StreamedGenotypes:
    """A filtered genotype file whose genotypes stay on disk.

    What :func:`~admixspec.io.reader.open_streamed` returns. The annotations
    of :class:`admixspec.core.genotypes.Genotypes` without the dosage matrix;
    :attr:`chunks` reads it.

    Attributes
    ----------
    chunks : StreamedChunks
        The kept individuals and SNPs.
    samples, variants, families, source, filter_log
        As in :class:`admixspec.core.genotypes.Genotypes`.
    memory_bytes : float
        The workspace budget the streaming was chosen for.
    """

    chunks: StreamedChunks
    samples: np.ndarray
    variants: pd.DataFrame
    families: np.ndarray | None
    source: str
    filter_log: list = field(default_factory=list)
    memory_bytes: float = 0.0
    _last: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def n_individuals(self) -> int:
        """Number of kept individuals."""
        return self.chunks.n_individuals

    @property
    def n_snps(self) -> int:
        """Number of kept SNPs."""
        return self.chunks.n_snps

    def read(self, *, rows=None, columns=None) -> np.ndarray:
        """The int8 genotypes of some kept individuals and SNPs, read from disk.

        The last subset read is kept, so a run that fits the same reference
        sample for several K reads it once (it is at most half of
        :attr:`memory_bytes`, by the reference fit's choice).

        Parameters
        ----------
        rows, columns : array_like of int, optional
            Positions among the kept individuals and SNPs (default all).

        Returns
        -------
        numpy.ndarray, int8, shape (len(rows), len(columns))
        """
        key = tuple(None if index is None else np.asarray(index).tobytes()
                    for index in (rows, columns))
        if self._last is None or self._last[0] != key:
            self._last = None  # free the old subset before reading the new one
            self._last = key, self.chunks.subset(rows=rows, columns=columns).read()
        return self._last[1]


def _chunk_filters(chunks: StreamedChunks, thresholds: dict):
    """Apply the per-SNP filters chunk by chunk (one pass, one count per chunk).

    Returns the kept positions (into ``chunks.columns``), the filter log
    (removals summed over chunks) and the kept calls per individual. The
    filters decide from the chunk's counts (:func:`select_snps`), so no
    filtered copy of the chunk is made; each individual's calls at the kept
    SNPs are the chunk's calls less those at the removed SNPs, counted on a
    copy of the fewer of the two column sets.
    """
    kept, log, observed = [], {}, np.zeros(chunks.n_individuals)
    for start, _, chunk in chunks.chunks_with_progress("filtered"):
        # the source's buffer itself, valid until the next chunk is decoded
        called, allele_sum, missing = snp_statistics(chunk)
        keep, entries = select_snps(called, allele_sum, chunks.n_individuals,
                                    **thresholds)
        kept.append(start + np.flatnonzero(keep))
        observed += _calls_at(chunk, keep, called.size - missing)
        for entry in entries:
            total = log.setdefault(entry["filter"], dict(entry, removed=0))
            total["removed"] += entry["removed"]
    return np.concatenate(kept) if kept else np.zeros(0, np.int64), list(log.values()), \
        observed


def _calls_at(chunk, keep, calls):
    """Each individual's calls at the SNPs ``keep`` marks, from ``calls`` at all."""
    n_kept = np.count_nonzero(keep)
    if n_kept == keep.size:
        return calls
    if n_kept <= keep.size - n_kept:
        return n_kept - snp_statistics(chunk[:, keep])[2]
    removed = ~keep
    return calls - (np.count_nonzero(removed) - snp_statistics(chunk[:, removed])[2])


def filter_streamed(chunks: StreamedChunks, *, maf=0.0, geno=1.0, mind=1.0,
                    drop_monomorphic=True):
    """:func:`admixspec.read_genotypes`'s filters on a streamed source.

    In two passes at most: ``mind`` on one pass over all SNPs, then ``geno``,
    the monomorphic filter and ``maf`` (which look at one SNP at a time) chunk
    by chunk on a second pass; LD pruning needs SNP windows in memory and is
    not offered here.

    Returns
    -------
    kept : StreamedChunks
        The kept individuals and SNPs, their calls per individual counted.
    log : list of dict
        Filter log entries, as :attr:`admixspec.Genotypes.filter_log`'s.
    filtered : StreamedChunks
        The source the per-SNP pass read (a format may count what it saw).
    """
    check_thresholds(maf=maf, geno=geno, mind=mind)
    log = []
    if mind < 1.0 and chunks.n_snps:
        keep, entry = select_individuals(chunks.statistics()[2], chunks.n_snps, mind)
        log.append(entry)
        chunks = chunks.subset(rows=np.flatnonzero(keep))
    kept, snp_log, observed = _chunk_filters(
        chunks, snp_filters(maf=maf, geno=geno, drop_monomorphic=drop_monomorphic))
    return chunks.subset(columns=kept, n_observed=observed), log + snp_log, chunks
