"""PLINK 1 ``.bed`` genotypes streamed from disk in chunks of SNPs.

:class:`BedChunks` is a :class:`admixspec.ml.chunks.GenotypeChunks` source:
every pass of the likelihood engine reads the file again, one chunk of SNPs
at a time, with plain file reads (not a memory map, whose touched pages
would count as the process's resident memory) into one reused byte buffer,
and a numba kernel decodes the 2-bit codes of the kept individuals into one
reused int8 buffer. Resident memory is therefore one chunk, whatever the
number of SNPs; the operating system's page cache keeps a file that fits in
RAM from being read from the disk on every pass.

The dosage convention is :func:`admixspec.io.plink.read_plink`'s: copies of
the ``.bim`` column-6 allele (A2), -1 missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numba
import numpy as np
import pandas as pd

from ..filters import apply_filters
from ..genotypes import Genotypes, placeholder_variants, snp_statistics
from ..ml.chunks import chunk_bounds
from .plink import open_fileset, plink_prefix, variant_table

__all__ = ["BedChunks", "StreamedGenotypes", "chunk_snps_for", "fileset_shape",
           "open_streamed"]

# A2 copies of each 2-bit code, in PLINK 1's order: 00 homozygous A1, 01
# missing, 10 heterozygous, 11 homozygous A2.
_CODE_DOSAGE = np.array([0, -1, 1, 2], dtype=np.int8)
# Individuals decoded per parallel task.
_ROW_TILE = 256


@numba.njit(parallel=True, cache=True, nogil=True)
def _decode(raw, snps, rows, out, offset, lut):
    """``out[r, offset + s] = dosage of individual rows[r] at raw SNP row snps[s]``.

    ``raw`` (SNPs, bytes per SNP) uint8 holds the file's SNP-major rows; each
    byte packs four individuals, the first in the lowest two bits.
    """
    n_rows = rows.shape[0]
    n_tiles = (n_rows + _ROW_TILE - 1) // _ROW_TILE
    for tile in numba.prange(n_tiles):
        r0 = tile * _ROW_TILE
        r1 = min(r0 + _ROW_TILE, n_rows)
        for s in range(snps.shape[0]):
            line = raw[snps[s]]
            for r in range(r0, r1):
                i = rows[r]
                code = (line[i >> 2] >> (2 * (i & 3))) & 3
                out[r, offset + s] = lut[code]


def chunk_snps_for(n_individuals: int, budget_bytes: float) -> int:
    """SNPs per chunk whose int8 genotypes take about ``budget_bytes`` (a multiple of 64).

    Examples
    --------
    >>> chunk_snps_for(1000, 1e6)
    960
    """
    return max(64, int(budget_bytes // max(n_individuals, 1)) // 64 * 64)


class BedChunks:
    """Chosen individuals and SNPs of a ``.bed`` file, decoded one chunk of SNPs at a time.

    Parameters
    ----------
    bed_path : str or os.PathLike
        A checked SNP-major ``.bed`` (see :func:`admixspec.io.plink.check_bed`).
    n_samples, n_variants : int
        Lines of its ``.fam`` and ``.bim``.
    rows : array_like of int, optional
        ``.fam`` rows to keep, increasing (default all).
    columns : array_like of int, optional
        ``.bim`` rows (SNPs) to keep, increasing (default all).
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

    def __init__(self, bed_path, n_samples: int, n_variants: int, *, rows=None,
                 columns=None, chunk_snps: int = 8192, n_observed=None):
        self.path = Path(bed_path)
        self.n_samples, self.n_variants = int(n_samples), int(n_variants)
        self.bytes_per_snp = (int(n_samples) + 3) // 4
        self.rows = np.arange(n_samples, dtype=np.int64) if rows is None else \
            np.asarray(rows, dtype=np.int64)
        self.columns = np.arange(n_variants, dtype=np.int64) if columns is None else \
            np.asarray(columns, dtype=np.int64)
        self.n_individuals, self.n_snps = len(self.rows), len(self.columns)
        self.bounds = chunk_bounds(self.n_snps, chunk_snps)
        self.chunk_snps = max((stop - start for start, stop in self.bounds), default=0)
        # allocated on the first read: a source opened early (the whole cohort,
        # while the reference is fitted in memory) holds no buffers until used
        self._dosage = self._raw = None
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

    def subset(self, *, rows=None, columns=None, chunk_snps=None) -> "BedChunks":
        """The same file with other individuals/SNPs (positions into this source's own)."""
        pick_rows = self.rows if rows is None else self.rows[np.asarray(rows)]
        pick_columns = self.columns if columns is None else self.columns[np.asarray(columns)]
        # all SNPs kept and the calls per individual known: no pass needed
        known = self._n_observed
        observed = None if columns is not None or known is None else \
            known if rows is None else known[np.asarray(rows)]
        return BedChunks(self.path, self.n_samples, self.n_variants, rows=pick_rows,
                         columns=pick_columns,
                         chunk_snps=chunk_snps or max(self.chunk_snps, 64),
                         n_observed=observed)

    def chunk(self, start: int, stop: int) -> np.ndarray:
        """int8 dosage of kept SNPs ``start:stop``, shape (n_individuals, stop - start).

        The array is this source's reused buffer: valid until the next call.
        """
        width = stop - start
        if self._dosage is None:
            self._dosage = np.empty(self.n_individuals * self.chunk_snps, dtype=np.int8)
        out = self._dosage[: self.n_individuals * width].reshape(self.n_individuals, width)
        self._decode_into(out, 0, start, stop)
        return out

    def _decode_into(self, out: np.ndarray, offset: int, start: int, stop: int):
        """Decode kept SNPs ``start:stop`` into ``out[:, offset:offset + stop - start]``."""
        width = stop - start
        if self._raw is None:
            self._raw = np.empty((self.chunk_snps, self.bytes_per_snp), dtype=np.uint8)
        wanted = self.columns[start:stop]
        with open(self.path, "rb", buffering=0) as handle:
            done = 0
            while done < width:  # spans of file rows that fit the byte buffer
                first = wanted[done]
                count = int(np.searchsorted(wanted, first + len(self._raw), "left")) - done
                span = int(wanted[done + count - 1] - first) + 1
                handle.seek(3 + int(first) * self.bytes_per_snp)
                view = memoryview(self._raw[:span].reshape(-1))
                if handle.readinto(view) != view.nbytes:
                    raise OSError(f"{self.path}: file ended early (truncated .bed?)")
                _decode(self._raw, wanted[done:done + count] - first, self.rows, out,
                        offset + done, _CODE_DOSAGE)
                done += count

    def map(self, function, P, *shared) -> list:
        """``function(chunk, P[start:stop], *shared)`` for every chunk, in order."""
        return [function(self.chunk(start, stop), P[start:stop], *shared)
                for start, stop in self.bounds]

    def statistics(self):
        """Per-SNP calls and allele sums, per-individual missing calls, in one pass.

        Returns
        -------
        called, allele_sum : numpy.ndarray, int64, shape (n_snps,)
        missing_per_individual : numpy.ndarray, int64, shape (n_individuals,)
            As :func:`admixspec.genotypes.snp_statistics` of the whole matrix.
        """
        called = np.empty(self.n_snps, dtype=np.int64)
        allele_sum = np.empty(self.n_snps, dtype=np.int64)
        missing = np.zeros(self.n_individuals, dtype=np.int64)
        for start, stop in self.bounds:
            called[start:stop], allele_sum[start:stop], chunk_missing = snp_statistics(
                self.chunk(start, stop))
            missing += chunk_missing
        return called, allele_sum, missing

    def read(self) -> np.ndarray:
        """All kept genotypes in memory, int8 (n_individuals, n_snps)."""
        G = np.empty((self.n_individuals, self.n_snps), dtype=np.int8)
        for start, stop in self.bounds:  # decoded in place: no chunk buffer, no copy
            self._decode_into(G, start, start, stop)
        return G


@dataclass
class StreamedGenotypes:
    """A filtered PLINK fileset whose genotypes stay on disk (see :func:`open_streamed`).

    The annotations of :class:`admixspec.genotypes.Genotypes` without the
    dosage matrix; :attr:`chunks` reads it.

    Attributes
    ----------
    chunks : BedChunks
        The kept individuals and SNPs.
    samples, variants, families, source, filter_log
        As in :class:`admixspec.genotypes.Genotypes`.
    memory_bytes : float
        The workspace budget the streaming was chosen for.
    """

    chunks: BedChunks
    samples: np.ndarray
    variants: pd.DataFrame
    families: np.ndarray | None
    source: str
    filter_log: list = field(default_factory=list)
    memory_bytes: float = 0.0

    @property
    def n_individuals(self) -> int:
        """Number of kept individuals."""
        return self.chunks.n_individuals

    @property
    def n_snps(self) -> int:
        """Number of kept SNPs."""
        return self.chunks.n_snps


def _chunk_filters(chunks: BedChunks, options: dict):
    """Apply the per-SNP filters chunk by chunk (one pass).

    Returns the kept positions (into ``chunks.columns``), the filter log
    (removals summed over chunks) and the kept calls per individual.
    """
    samples = np.array([f"i{i}" for i in range(chunks.n_individuals)])
    kept, log, observed = [], {}, np.zeros(chunks.n_individuals)
    for start, stop in chunks.bounds:
        variants = placeholder_variants(stop - start)
        variants["pos"] = np.arange(start, stop)
        part = apply_filters(Genotypes(chunks.chunk(start, stop).copy(), samples, variants),
                             **options)
        kept.append(part.variants["pos"].to_numpy(dtype=np.int64))
        observed += (part.dosage >= 0).sum(axis=1)
        for entry in part.filter_log:
            total = log.setdefault(entry["filter"], dict(entry, removed=0))
            total["removed"] += entry["removed"]
    return np.concatenate(kept) if kept else np.zeros(0, np.int64), list(log.values()), \
        observed


def open_streamed(path, *, memory_bytes: float, samples=None, region=None, maf=0.0,
                  geno=1.0, mind=1.0, drop_monomorphic=True) -> StreamedGenotypes:
    """Open and filter a PLINK 1 fileset for streaming, reading the genotypes twice at most.

    The filters are :func:`admixspec.read_genotypes`'s: ``mind`` on one pass
    over all SNPs, then ``geno``, the monomorphic filter and ``maf`` (which
    look at one SNP at a time) chunk by chunk on a second pass; LD pruning
    needs SNP windows in memory and is not offered here.

    Parameters
    ----------
    path : str or os.PathLike
        ``.bed`` path or fileset prefix.
    memory_bytes : float
        Workspace budget; a chunk's int8 genotypes take an eighth of it.
    samples : sequence of str, optional
        IIDs to keep (``--keep``).
    region, maf, geno, mind, drop_monomorphic
        As in :func:`admixspec.read_genotypes`.

    Returns
    -------
    StreamedGenotypes
    """
    fileset = open_fileset(path, samples, region)
    bed_path, fam, bim = fileset.bed_path, fileset.fam, fileset.bim
    rows, columns = fileset.rows, fileset.columns
    in_region, not_snp = fileset.in_region, fileset.not_snp
    step = chunk_snps_for(len(rows), memory_bytes / 8)
    chunks = BedChunks(bed_path, len(fam), len(bim), rows=rows, columns=columns,
                       chunk_snps=step)
    log = [{"filter": "biallelic_snp", "unit": "variants", "removed": not_snp,
            "reason": f"indel or symbolic allele ({not_snp}) out of {in_region} "
            "variants read"}]
    if mind < 1.0 and len(columns):
        missing = chunks.statistics()[2]
        keep = missing / len(columns) <= mind
        log.append({"filter": "mind", "unit": "individuals",
                    "removed": int(np.count_nonzero(~keep)),
                    "reason": f"missing-call fraction > {mind:g}"})
        chunks = chunks.subset(rows=np.flatnonzero(keep), chunk_snps=step)
    kept, snp_log, observed = _chunk_filters(
        chunks, {"maf": maf, "geno": geno, "drop_monomorphic": drop_monomorphic})
    chunks = BedChunks(bed_path, len(fam), len(bim), rows=chunks.rows,
                       columns=chunks.columns[kept], chunk_snps=step, n_observed=observed)
    variants = variant_table(fileset, chunks.columns)
    return StreamedGenotypes(
        chunks, fam["iid"].to_numpy()[chunks.rows].astype(str), variants,
        fam["fid"].to_numpy()[chunks.rows].astype(str), str(bed_path), log + snp_log,
        float(memory_bytes))


def _count_lines(path) -> int:
    count = 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            count += block.count(b"\n")
    return count


def fileset_shape(path) -> tuple[int, int]:
    """Individuals and variants of a PLINK 1 fileset, from its ``.fam``/``.bim`` line counts."""
    prefix = plink_prefix(path)
    return _count_lines(str(prefix) + ".fam"), _count_lines(str(prefix) + ".bim")
