"""PLINK 1 ``.bed`` genotypes streamed from disk in chunks of SNPs.

:class:`BedChunks` is a :class:`admixspec.core.chunks.GenotypeChunks` source:
every pass of the likelihood engine reads the file again, one chunk of SNPs
at a time, with plain file reads (not a memory map, whose touched pages
would count as the process's resident memory) into one reused byte buffer,
and a numba kernel decodes the 2-bit codes of the kept individuals into one
reused int8 buffer. Resident memory is therefore one chunk, whatever the
number of SNPs; the operating system's page cache keeps a file that fits in
RAM from being read from the disk on every pass. :meth:`BedChunks.bed_bytes`
hands out the file's own bytes instead, undecoded (the GPU engine decodes
them on the device).

The dosage convention is :func:`admixspec.io.plink.read_plink`'s: copies of
the ``.bim`` column-6 allele (A2), -1 missing.
"""

from __future__ import annotations

import os

import numba
import numpy as np

from ..core.exceptions import InputError
from .common import keep_entry
from .errors import reading
from .plink import (
    fileset_file,
    open_fileset,
    padding_error,
    plink_prefix,
    variant_table,
)
from .streamed import StreamedChunks, StreamedGenotypes, chunk_snps_for, filter_streamed

__all__ = ["CODE_DOSAGE", "BedChunks", "fileset_shape", "open_streamed_bed"]

#: A2 copies of each 2-bit code, in PLINK 1's order: 00 homozygous A1, 01
#: missing, 10 heterozygous, 11 homozygous A2 (-1 missing).
CODE_DOSAGE = np.array([0, -1, 1, 2], dtype=np.int8)
# Individuals decoded per parallel task, and SNPs per step of it: a step's
# bytes (at most 64 x 512 when the individuals are consecutive) stay in cache.
_ROW_TILE = 256
_SNP_TILE = 512


@numba.njit(parallel=True, cache=True, nogil=True)
def _decode(raw, snps, rows, out, offset, lut):
    """``out[r, offset + s] = dosage of individual rows[r] at raw SNP row snps[s]``.

    ``raw`` (SNPs, bytes per SNP) uint8 holds the file's SNP-major rows; each
    byte packs four individuals, the first in the lowest two bits. A task
    copies its individuals' bytes of a step of SNPs into a small buffer, byte
    by byte along the file's rows, then writes each individual's row of
    ``out`` from it: writing ``out`` a column at a time (every store to
    another row) made a decoding pass 1.45-1.55 times as long
    (docs/benchmarks.md, "Counting calls in one read, decoding in rows").
    """
    n_rows = rows.shape[0]
    n_snps = snps.shape[0]
    n_tiles = (n_rows + _ROW_TILE - 1) // _ROW_TILE
    for tile in numba.prange(n_tiles):
        r0 = tile * _ROW_TILE
        r1 = min(r0 + _ROW_TILE, n_rows)
        needed, slot = _tile_bytes(rows[r0:r1])
        step = np.empty((len(needed), _SNP_TILE), dtype=np.uint8)
        for s0 in range(0, n_snps, _SNP_TILE):
            width = min(_SNP_TILE, n_snps - s0)
            for s in range(width):
                line = raw[snps[s0 + s]]
                for k in range(len(needed)):
                    step[k, s] = line[needed[k]]
            for r in range(r0, r1):
                codes = step[slot[r - r0]]
                shift = 2 * (rows[r] & 3)
                row = out[r]
                for s in range(width):
                    row[offset + s0 + s] = lut[(codes[s] >> shift) & 3]


@numba.njit(cache=True, nogil=True)
def _tile_bytes(rows):
    """The bytes of a SNP row that hold ``rows``, and each row's among them.

    Consecutive individuals share a byte; rows out of order only repeat one.
    """
    needed = np.empty(len(rows), dtype=np.int64)
    slot = np.empty(len(rows), dtype=np.int64)
    count = 0
    for r in range(len(rows)):
        byte = rows[r] >> 2
        if count == 0 or needed[count - 1] != byte:
            needed[count] = byte
            count += 1
        slot[r] = count - 1
    return needed[:count], slot


class BedChunks(StreamedChunks):
    """Chosen individuals and SNPs of a ``.bed`` file, decoded a chunk of SNPs at a time.

    Parameters
    ----------
    bed_path : str or os.PathLike
        A checked SNP-major ``.bed`` (see :func:`admixspec.io.plink.check_bed`).
    n_samples, n_variants : int
        Lines of its ``.fam`` and ``.bim``.
    **options
        ``rows``, ``columns`` (``.fam``/``.bim`` rows), ``chunk_snps``,
        ``n_observed``: see :class:`admixspec.io.streamed.StreamedChunks`.
    """

    def __init__(self, bed_path, n_samples: int, n_variants: int, **options):
        super().__init__(bed_path, n_samples, n_variants, **options)
        self.bytes_per_snp = (int(n_samples) + 3) // 4
        self._raw = None  # the byte buffer, allocated on the first read

    def _decode_into(self, out: np.ndarray, offset: int, start: int, stop: int):
        """Decode kept SNPs ``start:stop`` into ``out[:, offset:offset+stop-start]``."""
        for done, raw, picks in self._spans(start, stop):
            _decode(raw, picks, self.rows, out, offset + done, CODE_DOSAGE)

    def bed_bytes(self, start: int, stop: int):
        """The file's own bytes of kept SNPs ``start:stop``, undecoded, span by span.

        What a consumer that decodes the 2-bit codes itself reads (the GPU
        engine copies them to the device as they are): no int8 matrix is
        formed, and the host holds one byte buffer of at most :attr:`chunk_snps`
        rows, and no more bytes than the int8 chunk would take.

        Parameters
        ----------
        start, stop : int
            A range of kept SNPs (positions into :attr:`columns`).

        Yields
        ------
        done : int
            Kept SNPs of the range before this span.
        raw : numpy.ndarray, uint8, shape (file rows read, bytes_per_snp)
            Consecutive SNP rows of the ``.bed``, each holding all
            :attr:`n_samples` individuals of the file, four to a byte, the
            first in the lowest two bits, coded as PLINK codes them
            (:data:`CODE_DOSAGE`). A view of the reused buffer: valid until
            the next span.
        picks : numpy.ndarray, int64, shape (kept SNPs in the span,)
            The rows of ``raw`` that hold kept SNPs ``start + done`` onwards,
            increasing. The kept individuals are :attr:`rows`.
        """
        with reading(self.path, "a genotype file"):
            yield from self._spans(start, stop)

    def _spans(self, start: int, stop: int):
        """The file rows of kept SNPs ``start:stop``, read (as :meth:`bed_bytes`)."""
        width = stop - start
        if self._raw is None:
            # no larger than the int8 chunk: a file row holds every individual
            # of the file, so with few of them kept (--keep) a chunk of rows
            # can be many times the budget's chunk; it is then read in spans
            rows = min(self.chunk_snps, max(
                1, self.chunk_snps * self.n_individuals // self.bytes_per_snp))
            self._raw = np.empty((rows, self.bytes_per_snp), dtype=np.uint8)
        wanted = self.columns[start:stop]
        with open(self.path, "rb", buffering=0) as handle:
            done = 0
            while done < width:  # spans of file rows that fit the byte buffer
                first = wanted[done]
                count = int(np.searchsorted(wanted, first + len(self._raw),
                                            "left")) - done
                span = int(wanted[done + count - 1] - first) + 1
                handle.seek(3 + int(first) * self.bytes_per_snp)
                if not _read_fully(handle, self._raw[:span].reshape(-1)):
                    raise self._truncated(handle)
                self._check_padding(self._raw[:span], int(first))
                yield done, self._raw[:span], wanted[done:done + count] - first
                done += count

    def _truncated(self, handle) -> InputError:
        """The error for a file that has shrunk since it was checked (a short read)."""
        size = os.fstat(handle.fileno()).st_size
        expected = 3 + self.n_variants * self.bytes_per_snp
        return InputError(f"file ended early: {size} bytes, expected {expected} "
                          "(it was truncated or replaced while being read)",
                          path=self.path)

    def _check_padding(self, raw: np.ndarray, first: int) -> None:
        """Refuse SNP rows ``first`` onward (``raw``) with non-zero padding bits.

        One byte per SNP row, already in memory: see
        :func:`admixspec.io.plink.padding_error`.
        """
        used = self.n_samples % 4
        if used:
            written = np.flatnonzero(raw[:, -1] >> (2 * used))
            if len(written):
                raise padding_error(self.path, self.n_samples, first + int(written[0]))


def _read_fully(handle, buffer: np.ndarray) -> bool:
    """Fill ``buffer`` from ``handle``; False where the file ends first.

    One read returns fewer bytes than asked for at the end of the file, but
    also without it: Linux reads at most 2 GiB at a time (0x7ffff000 bytes),
    and a network file system may return less.
    """
    view = memoryview(buffer)
    filled = 0
    while filled < view.nbytes:
        count = handle.readinto(view[filled:])
        if not count:
            return False
        filled += count
    return True


def open_streamed_bed(path, *, memory_bytes: float, samples=None, region=None,
                      filters: dict) -> StreamedGenotypes:
    """:func:`admixspec.io.streamed.open_streamed` for a PLINK 1 fileset."""
    fileset = open_fileset(path, samples, region)
    bed_path, fam, bim = fileset.bed_path, fileset.fam, fileset.bim
    not_snp, in_region = fileset.not_snp, fileset.in_region
    chunks = BedChunks(bed_path, len(fam), len(bim), rows=fileset.rows,
                       columns=fileset.columns,
                       chunk_snps=chunk_snps_for(len(fileset.rows), memory_bytes / 8))
    chunks, log, _ = filter_streamed(chunks, **filters)
    log.insert(0, {"filter": "biallelic_snp", "unit": "variants", "removed": not_snp,
                   "reason": f"indel or symbolic allele ({not_snp}) out of {in_region} "
                   "variants read"})
    if samples is not None:  # after the reader's entry, before the filters'
        log.insert(1, keep_entry(samples, len(fam), len(fileset.rows),
                                 paired=getattr(samples, "families", None) is not None))
    return StreamedGenotypes(
        chunks, fam["iid"].to_numpy()[chunks.rows].astype(str),
        variant_table(fileset, chunks.columns),
        fam["fid"].to_numpy()[chunks.rows].astype(str), str(bed_path), log,
        float(memory_bytes))


def _count_lines(path, kind: str) -> int:
    count = 0
    with open(fileset_file(path, kind), "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            count += block.count(b"\n")
    return count


def fileset_shape(path) -> tuple[int, int]:
    """Individuals and variants of a PLINK 1 fileset (``.fam``/``.bim`` line counts)."""
    prefix = plink_prefix(path)
    return (_count_lines(str(prefix) + ".fam", ".fam"),
            _count_lines(str(prefix) + ".bim", ".bim"))
