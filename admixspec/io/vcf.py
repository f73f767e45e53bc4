"""VCF / VCF.gz / BCF reading (cyvcf2) and writing (BGZF + tabix).

Counted allele
--------------
For VCF/BCF input the counted allele is **REF**: the dosage is the number of
REF copies and admixspec's (and ADMIXTURE's) P is the REF frequency. This is
what ``plink1.9 --vcf X --keep-allele-order --make-bed`` puts in ``.bim``
column 6 (A2), the allele ADMIXTURE's P describes, so the same data read as
VCF and as the converted PLINK fileset give identical matrices.

Ploidy policy
-------------
* A **haploid** call (``0`` or ``1``, e.g. male chrX/chrY, MT) is read as the
  homozygous diploid genotype (dosage 2 or 0). This is how a PLINK 1 ``.bed``
  stores haploid calls, so VCF and PLINK input agree, and it keeps the
  allele-frequency estimate of such sites unbiased.
* A **half call** (``0/.``, ``./1``) is read as missing (PLINK's
  ``--vcf-half-call missing``).
* A call of ploidy above 2 is read as missing.
Counts of each case are recorded in :attr:`Genotypes.filter_log` under the
``"ploidy"`` entry.

Variant filter applied while reading
------------------------------------
Only biallelic SNPs are kept: REF a single base and ALT a single base, or
no ALT at all (``.``; kept as a monomorphic site with other allele ``0``,
like PLINK, so that the monomorphic filter reports it). Multiallelic sites,
indels and symbolic or ``*`` alleles are skipped and counted under the
``"biallelic_snp"`` entry of :attr:`Genotypes.filter_log`. The FILTER
column is not read: records that failed a filter are kept, as PLINK 1.9
and 2 keep them unless given ``--vcf-filter`` / ``--var-filter``; drop them
first with ``bcftools view -f PASS,.``. Records are read in file order
(unsorted files are accepted without ``--region``), and a position listed
twice gives two SNPs, as in PLINK.

Refused records
---------------
A kept record without GT in its FORMAT column, an ALT equal to REF, or a GT
allele index beyond the site's ALT alleles is an :class:`InputError` naming
the record's ``chrom:pos``; a record htslib cannot parse is one that quotes
htslib's message. With ``--region`` a read error (a corrupt block, an index
made before the file changed) is an error too, not the region's end.
"""

from __future__ import annotations

import contextlib
import gzip
import logging
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import warnings
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.exceptions import InputError
from ..core.genotypes import Genotypes
from .calls import (
    SNP_BASES,
    alt_alleles,
    decode_calls,
    read_log_entries,
    same_alleles,
)
from .common import (
    empty_region_error,
    first_duplicate,
    keep_entry,
    parse_region,
    sample_rows,
    temporary_beside,
)

__all__ = ["BgzfWriter", "read_vcf", "read_vcf_samples", "write_vcf"]

logger = logging.getLogger("admixspec")

#: Variants decoded per numpy block.
BLOCK_SIZE = 4096

_BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
_GZIP_MAGIC = b"\x1f\x8b"

#: Held while file descriptor 2 points at an :class:`_HtslibLog` (one at a time).
_STDERR_LOCK = threading.Lock()


def _htslib_region(chrom, start, end) -> str:
    if start is None and end is None:
        return chrom
    return f"{chrom}:{start or 1}-{end if end is not None else ''}".rstrip("-")


# --------------------------------------------------------------------------- checks


def _check_compressed_file(path: Path) -> bool:
    """Reject truncated BGZF/gzip files before htslib half-reads them.

    Returns whether the file is BGZF (which an index needs).
    """
    with open(path, "rb") as handle:
        head = handle.read(18)
        if head[:2] != _GZIP_MAGIC:
            return False
        is_bgzf = len(head) >= 16 and head[3] & 4 and head[12:14] == b"BC"
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if is_bgzf:
            handle.seek(max(0, size - len(_BGZF_EOF)))
            if handle.read() != _BGZF_EOF:
                raise InputError(
                    "truncated or corrupt BGZF file (the end-of-file block is missing)",
                    path=path,
                )
            return True
    # Plain gzip: no end marker, so decompress once to validate (streaming).
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with open(path, "rb") as handle:
        try:
            while chunk := handle.read(1 << 20):
                decompressor.decompress(chunk, 0)
                while decompressor.eof and decompressor.unused_data:
                    rest = decompressor.unused_data
                    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    decompressor.decompress(rest, 0)
        except zlib.error as error:
            raise InputError(f"corrupt gzip data ({error})", path=path) from None
    if not decompressor.eof:
        raise InputError("truncated gzip file (unexpected end of data)", path=path)
    return False


def _has_index(path: Path) -> bool:
    return any(Path(str(path) + suffix).exists() for suffix in (".tbi", ".csi"))


def _warn_if_index_older(path: Path) -> None:
    """Warn, as htslib does, when an index is older than its file (it may be stale).

    A stale index sends a region query to the wrong places of the file: it
    may read some of the region's records and miss the rest.
    """
    modified = path.stat().st_mtime
    for suffix in (".csi", ".tbi"):
        index = Path(str(path) + suffix)
        if index.exists() and index.stat().st_mtime < modified:
            logger.warning("%s: the index %s is older than the file; if the file "
                           "changed after it was indexed, --region reads the wrong "
                           "records: index it again ('tabix -f -p vcf' or "
                           "'bcftools index -f')", path, index.name)


class _HtslibLog:
    """htslib's error messages, which it writes to the C stderr (file descriptor 2).

    cyvcf2 raises only "error parsing variant" on a bad record, and ends a
    region query at a read error (a corrupt block, a stale index) as if the
    region had ended; htslib's own message says what went wrong.
    """

    def __init__(self, fd: int | None = None):
        self._fd = fd

    def error(self) -> str | None:
        """htslib's first error message so far, without its ``[E::function]`` tag."""
        if self._fd is None:
            return None
        size = os.fstat(self._fd).st_size
        text = os.pread(self._fd, size, 0).decode("utf-8", "replace")
        for line in text.splitlines():
            if line.startswith("[E::"):
                return line.split("] ", 1)[-1].strip().rstrip(":") or None
        return None


@contextlib.contextmanager
def _htslib_log():
    """Keep htslib's messages off the terminal; yield a :class:`_HtslibLog` of them.

    Our errors carry the file name, and quote htslib's message where it
    explains one. Left alone (messages shown as htslib writes them) when the
    ``admixspec`` logger is at DEBUG level.
    """
    if logger.isEnabledFor(logging.DEBUG):
        yield _HtslibLog()
        return
    from cyvcf2.cyvcf2 import set_htslib_log_level

    level = os.environ.get("CYVCF2_HTSLIB_LOG_LEVEL", "3")
    with _STDERR_LOCK, contextlib.ExitStack() as stack:
        stack.callback(set_htslib_log_level, int(level) if level.isdigit() else 3)
        try:
            sink = stack.enter_context(tempfile.TemporaryFile())
            saved = os.dup(2)
        except OSError:  # no stderr, or no temporary folder: htslib kept silent
            set_htslib_log_level(0)
            yield _HtslibLog()
            return
        with contextlib.suppress(AttributeError, ValueError):
            sys.stderr.flush()
        try:
            os.dup2(sink.fileno(), 2)
            set_htslib_log_level(1)  # errors only
            yield _HtslibLog(sink.fileno())
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            text = os.pread(sink.fileno(), os.fstat(sink.fileno()).st_size, 0)
            # anything else written to stderr meanwhile goes where it was going
            other = b"".join(line for line in text.splitlines(keepends=True)
                             if line.strip() and not line.startswith((b"[E::", b"\t")))
            if other:
                os.write(2, other)


def _open_vcf(path: Path, samples=None, log: _HtslibLog | None = None):
    """cyvcf2's reader of ``path``; with ``log``, an error quotes htslib's reason.

    cyvcf2 says only "cannot parse VCF header", whatever the header's fault
    (spaces for tabs, a missing column).
    """
    from cyvcf2 import VCF

    try:
        if samples is None:
            return VCF(str(path), gts012=True)
        return VCF(str(path), gts012=True, samples=list(samples))
    except (OSError, Exception) as error:  # cyvcf2 raises bare Exception
        reason = None if log is None else log.error()
        text = f"{error}: {reason}" if reason and reason not in str(error) else error
        raise (_duplicate_sample_error(path)
               or InputError(f"cannot read as VCF/BCF ({text})", path=path)) from None


def _duplicate_sample_error(path: Path) -> InputError | None:
    """The error for a sample the header names twice, else None.

    htslib refuses such a header, and cyvcf2 says only "cannot parse VCF
    header"; this reads the ``#CHROM`` line again, on the way to that error.
    """
    try:
        number, names = _sample_line(path)
    except (OSError, EOFError, ValueError, zlib.error):
        return None  # the header is broken otherwise: htslib's message stands
    repeated = first_duplicate(names)
    if repeated is None:
        return None
    first, second = repeated
    return InputError(f"sample {names[second]!r} is named twice in the #CHROM header "
                      f"line (columns {first + 10} and {second + 10}); sample names "
                      "must be unique", path=path, line=number)


def _sample_line(path: Path) -> tuple[int, list[str]]:
    """The ``#CHROM`` line's number and its sample names, in a (gzipped) VCF.

    A BCF is not read: htslib's writers refuse a repeated sample name, so
    one that has it is broken beyond this message.

    Raises
    ------
    ValueError
        No ``#CHROM`` line.
    """
    with open(path, "rb") as raw:
        compressed = raw.read(2) == _GZIP_MAGIC
    with (gzip.open(path, "rb") if compressed else open(path, "rb")) as handle:
        for number, line in enumerate(handle, 1):
            if line.startswith(b"#CHROM"):
                fields = line.decode("utf-8", "replace").rstrip("\r\n").split("\t")
                return number, fields[9:]
            if not line.startswith(b"#"):
                break
    raise ValueError("no #CHROM line")


# --------------------------------------------------------------------------- reading


def read_vcf_samples(path) -> np.ndarray:
    """The sample IDs of a VCF, VCF.gz or BCF header, in column order.

    Only the header is read. Every reader of a VCF's samples goes through
    here or :func:`read_vcf`, so all refuse the same files with the same
    message.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    numpy.ndarray of str, shape (n_samples,)

    Raises
    ------
    InputError
        Missing or unparsable file, or a sample the ``#CHROM`` line names
        twice (``<path>:<line>: sample 's1' is named twice ...``).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path=path)
    with _htslib_log() as log:
        vcf = _open_vcf(path, log=log)
        try:
            return np.array(vcf.samples, dtype=str)
        finally:
            vcf.close()


def read_vcf(
    path,
    *,
    samples=None,
    region: str | None = None,
    block_size: int = BLOCK_SIZE,
) -> Genotypes:
    """Read biallelic-SNP dosages from a VCF, VCF.gz or BCF file.

    Parameters
    ----------
    path : str or os.PathLike
        ``.vcf``, ``.vcf.gz`` (BGZF or gzip) or ``.bcf``.
    samples : sequence of str, optional
        Sample IDs to keep (they must all exist); rows keep the file's order.
    region : str, optional
        ``chrom:start-end`` (1-based, inclusive); needs a ``.tbi``/``.csi``
        index next to the file.
    block_size : int
        Variants decoded per numpy block.

    Returns
    -------
    Genotypes
        dosage int8, shape (n_samples, n_biallelic_snps): copies of REF, -1
        missing. ``filter_log`` holds the ``"biallelic_snp"`` and ``"ploidy"``
        entries described in the module docstring.

    Raises
    ------
    InputError
        Missing, truncated or unparsable file, no samples, no GT field, no
        variant records, unknown sample IDs, region on an unindexed (or not
        BGZF) file, a read error inside the region, and the refused records
        of the module docstring.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path=path)
    if path.is_dir():
        raise InputError("is a directory, not a VCF/BCF file", path=path)
    bgzf = _check_compressed_file(path)
    if region is not None:
        parse_region(region)
        if not bgzf:
            raise InputError(
                "--region needs an indexed file, and an index needs BGZF "
                "compression, which this file lacks (compress it with 'bgzip' "
                "and index it with 'tabix -p vcf')",
                path=path,
            )
        if not _has_index(path):
            raise InputError(
                "--region needs an indexed file (no .tbi/.csi next to it; "
                "create one with 'tabix -p vcf' or 'bcftools index')",
                path=path,
            )
        _warn_if_index_older(path)

    with _htslib_log() as log:
        return _read_vcf(path, samples, region, block_size, log)


def _read_vcf(path: Path, samples, region, block_size, log: _HtslibLog) -> Genotypes:
    if region is not None:
        chrom, start, end = parse_region(region)
    vcf = _open_vcf(path, log=log)
    try:
        file_samples = list(vcf.samples)
        n_input = len(file_samples)
        if not file_samples:
            raise InputError("has no samples (no genotype columns)", path=path)
        if not _header_has_gt(vcf):
            raise InputError("has no GT (genotype) FORMAT field in its header",
                             path=path)
        if samples is not None:
            rows = sample_rows(file_samples, samples, path, kind=None)
            keep = [file_samples[row] for row in rows]
            vcf.close()
            vcf = _open_vcf(path, samples=keep, log=log)
            file_samples = list(vcf.samples)
        iterator = vcf(_htslib_region(chrom, start, end)) if region is not None else vcf
        with warnings.catch_warnings():
            # cyvcf2 warns "no intervals found for b'<path>'" for a contig the
            # index lacks; the InputError below says it in the file's terms
            warnings.filterwarnings("ignore", "no intervals found", UserWarning)
            result = _read_records(iterator, len(file_samples), path, block_size, log)
        failure = None if region is None else log.error()
        if failure is not None:
            # cyvcf2 ends a region query at a read error as if the region ended
            raise InputError(f"cannot read region {region} ({failure}; if the file "
                             "changed after it was indexed, index it again)", path=path)
        if region is not None and result[3] == 0:
            raise empty_region_error(region, vcf.seqnames, path)
    finally:
        vcf.close()
    dosage, variants, skipped, n_records, ploidy_counts = result
    if n_records == 0 and region is None:
        raise InputError("has no variant records (header only)", path=path)
    genotypes = Genotypes(
        dosage=dosage, samples=np.asarray(file_samples), variants=variants,
        source=str(path),
    )
    genotypes.filter_log.extend(read_log_entries(skipped, n_records, ploidy_counts))
    if samples is not None:
        genotypes.filter_log.append(keep_entry(samples, n_input, len(file_samples),
                                               paired=False))
    return genotypes


def _header_has_gt(vcf) -> bool:
    for record in vcf.header_iter():
        info = record.info()
        if info.get("HeaderType") == "FORMAT" and info.get("ID") == "GT":
            return True
    return False


def _read_records(iterator, n_samples: int, path: Path, block_size: int,
                  log: _HtslibLog):
    chrom_list: list[str] = []
    pos_list: list[int] = []
    id_list: list[str] = []
    ref_list: list[str] = []
    alt_list: list[str] = []
    skipped = {"multiallelic": 0, "indel": 0, "symbolic_or_other": 0}
    blocks: list[np.ndarray] = []
    buffer: list[np.ndarray] = []
    n_alt: list[int] = []  # ALT alleles of each record in buffer
    counts = np.zeros(3, dtype=np.int64)
    n_records = 0
    snp_bases = SNP_BASES
    try:
        for variant in iterator:
            n_records += 1
            ref = variant.REF
            alts = variant.ALT
            if len(alts) > 1:
                skipped["multiallelic"] += 1
                continue
            alt = alts[0] if alts else "0"
            if len(ref) != 1 or len(alt) != 1:
                if ref.isalpha() and alt.isalpha():
                    skipped["indel"] += 1
                else:
                    skipped["symbolic_or_other"] += 1
                continue
            if ref not in snp_bases or (alts and alt not in snp_bases):
                skipped["symbolic_or_other"] += 1
                continue
            if alt.upper() == ref.upper():
                raise InputError(f"record {variant.CHROM}:{variant.POS} "
                                 f"{same_alleles(ref, alt)}", path=path)
            try:
                buffer.append(variant.genotype.array())
            except Exception as error:  # cyvcf2 raises bare Exception
                raise _genotype_error(variant, n_records, error, path, log) from None
            n_alt.append(len(alts))
            chrom_list.append(variant.CHROM)
            pos_list.append(variant.POS)
            id_list.append(variant.ID or ".")
            ref_list.append(ref)
            alt_list.append(alt)
            if len(buffer) == block_size:
                blocks.append(_decode_buffer(buffer, n_alt, counts, path,
                                             chrom_list, pos_list))
                buffer, n_alt = [], []
    except InputError:
        raise
    except Exception as error:  # htslib parse errors surface as bare exceptions
        raise InputError(
            f"cannot parse VCF record {n_records + 1} ({log.error() or error})",
            path=path,
        ) from None
    if buffer:
        blocks.append(_decode_buffer(buffer, n_alt, counts, path, chrom_list, pos_list))
    n_snps = sum(block.shape[1] for block in blocks)
    dosage = np.empty((n_samples, n_snps), dtype=np.int8)
    column = 0
    while blocks:
        block = blocks.pop(0)
        dosage[:, column : column + block.shape[1]] = block
        column += block.shape[1]
    variants = pd.DataFrame(
        {
            "chrom": pd.array(chrom_list, dtype=object),
            "pos": np.asarray(pos_list, dtype=np.int64),
            "id": pd.array(id_list, dtype=object),
            "counted": pd.array(ref_list, dtype=object),
            "other": pd.array(alt_list, dtype=object),
        }
    )
    return dosage, variants, skipped, n_records, counts


def _genotype_error(variant, number: int, error: Exception, path: Path,
                    log: _HtslibLog) -> InputError:
    """The error for a record whose GT calls cyvcf2 cannot give."""
    site = f"{variant.CHROM}:{variant.POS}"
    if "GT" not in variant.FORMAT:
        return InputError(f"record {site} has no GT (genotype) field in its FORMAT "
                          "column", path=path)
    return InputError(f"cannot parse VCF record {number} ({site}: "
                      f"{log.error() or error})", path=path)


def _decode_buffer(buffer: list, n_alt: list, counts: np.ndarray, path: Path,
                   chroms: list, positions: list) -> np.ndarray:
    """The dosage (samples, records) of the last ``len(buffer)`` kept records.

    ``chroms`` and ``positions`` name every kept record so far.
    """
    width = max(calls.shape[1] for calls in buffer)
    if all(calls.shape[1] == width for calls in buffer):
        stacked = np.stack(buffer)
    else:
        stacked = np.full((len(buffer), buffer[0].shape[0], width), -2, dtype=np.int16)
        for index, calls in enumerate(buffer):
            stacked[index, :, : calls.shape[1] - 1] = calls[:, :-1]
    # the trailing column of genotype.array() is the phase flag
    block, bad = decode_calls(stacked[..., :-1], n_alt, counts)
    if bad is not None:
        record = len(chroms) - len(buffer) + bad
        _allele_index_error(stacked[bad], n_alt[bad], path,
                            f"{chroms[record]}:{positions[record]}")
    return block


def _allele_index_error(calls: np.ndarray, n_alt: int, path: Path, site: str):
    """Raise the :class:`InputError` for a record with an allele index beyond ALT."""
    index = int(calls[:, :-1].max())
    raise InputError(f"record {site} has GT allele index {index}, but the site has "
                     f"{alt_alleles(n_alt)}", path=path)


# --------------------------------------------------------------------------- writing


class BgzfWriter:
    """Minimal BGZF (blocked gzip) writer, readable by htslib, tabix and gzip.

    Blocks are compressed independently, so several are compressed at once
    in threads (zlib releases the GIL); the output bytes do not depend on the
    number of threads.

    Parameters
    ----------
    handle : binary file object
        Destination, opened for writing.
    level : int
        zlib compression level.
    threads : int, optional
        Compression threads; default ``min(4, os.cpu_count())``.
    """

    _BLOCK = 0xFF00

    def __init__(self, handle, *, level: int = 6, threads: int | None = None):
        self._handle = handle
        self._level = level
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._pending = bytearray()

    def write(self, data: bytes) -> None:
        self._pending += data
        n_full = len(self._pending) // self._BLOCK
        if n_full == 0:
            return
        view = bytes(self._pending[: n_full * self._BLOCK])
        del self._pending[: n_full * self._BLOCK]
        blocks = [view[i : i + self._BLOCK] for i in range(0, len(view), self._BLOCK)]
        if self._threads > 1 and len(blocks) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(self._threads) as pool:
                compressed = list(pool.map(self._compress, blocks))
        else:
            compressed = [self._compress(block) for block in blocks]
        self._handle.write(b"".join(compressed))

    def _compress(self, data: bytes) -> bytes:
        compressor = zlib.compressobj(self._level, zlib.DEFLATED, -15)
        payload = compressor.compress(data) + compressor.flush()
        header = struct.pack(
            "<BBBBIBBHBBHH", 31, 139, 8, 4, 0, 0, 255, 6, 66, 67, 2, len(payload) + 25
        )
        footer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data))
        return header + payload + footer

    def close(self) -> None:
        if self._pending:
            self._handle.write(self._compress(bytes(self._pending)))
            self._pending.clear()
        self._handle.write(_BGZF_EOF)


def _vcf_header(genotypes: Genotypes, source: str) -> bytes:
    variants = genotypes.variants
    lines = ["##fileformat=VCFv4.2", f"##source={source}"]
    if len(variants):
        lengths = variants.groupby("chrom", sort=False)["pos"].max()
        lines += [f"##contig=<ID={chrom},length={int(n)}>"
                  for chrom, n in lengths.items()]
    lines.append('##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">')
    columns = ["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT"]
    lines.append("\t".join(columns + [str(s) for s in genotypes.samples]))
    return ("\n".join(lines) + "\n").encode()


def _vcf_body_chunks(genotypes: Genotypes, block_size: int):
    # Dosage counts REF (allele 0): 2 -> 0/0, 1 -> 0/1, 0 -> 1/1, missing -> ./.
    table = np.frombuffer(b"./.\t1/1\t0/1\t0/0\t", dtype=np.uint8).reshape(4, 4)
    variants = genotypes.variants
    chrom = variants["chrom"].astype(str).to_numpy()
    pos = variants["pos"].to_numpy()
    ids = variants["id"].astype(str).to_numpy()
    ref = variants["counted"].astype(str).to_numpy()
    alt = variants["other"].astype(str).to_numpy()
    alt = np.where(np.isin(alt, ["0", ""]), ".", alt)
    n = genotypes.n_individuals
    for start in range(0, genotypes.n_snps, block_size):
        stop = min(start + block_size, genotypes.n_snps)
        codes = table[genotypes.dosage[:, start:stop].T.astype(np.int64) + 1]
        codes[:, -1, 3] = ord("\n")
        rows = codes.reshape(stop - start, 4 * n)
        prefixes = [
            f"{c}\t{p}\t{i}\t{r}\t{a}\t.\t.\t.\tGT\t".encode()
            for c, p, i, r, a in zip(
                chrom[start:stop], pos[start:stop], ids[start:stop],
                ref[start:stop], alt[start:stop], strict=True,
            )
        ]
        yield b"".join(
            prefix + row.tobytes() for prefix, row in zip(prefixes, rows, strict=True)
        )


def write_vcf(
    path,
    genotypes: Genotypes,
    *,
    index: bool = True,
    source: str = "admixspec",
    block_size: int = 2048,
) -> list[Path]:
    """Write genotypes as an unphased VCF (BGZF-compressed when ``path`` ends in .gz).

    REF is the counted allele (``variants["counted"]``), ALT the other one;
    dosage 2/1/0/-1 becomes ``0/0``/``0/1``/``1/1``/``./.``. The file is
    written atomically (temporary file, then rename).

    Parameters
    ----------
    path : str or os.PathLike
        ``*.vcf`` or ``*.vcf.gz``.
    genotypes : Genotypes
    index : bool
        For ``.gz`` output, also build a tabix ``.tbi`` index with the
        ``tabix`` program (Debian/Ubuntu package ``tabix``); skipped with a
        logged warning when ``tabix`` is not installed.
    source : str
        Value of the ``##source`` header line.

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    path = Path(path)
    compressed = path.name.endswith(".gz")
    with temporary_beside(path, "wb", suffix=".tmp.vcf.gz" if compressed else ".tmp.vcf"
                          ) as (raw, temporary):
        sink = BgzfWriter(raw) if compressed else raw
        sink.write(_vcf_header(genotypes, source))
        for chunk in _vcf_body_chunks(genotypes, block_size):
            sink.write(chunk)
        if compressed:
            sink.close()
    tabix = shutil.which("tabix") if compressed and index else None
    if compressed and index and tabix is None:
        logger.warning("tabix not found: %s written without a .tbi index", path)
    written = [path]
    tmp, tmp_index = Path(temporary), Path(temporary + ".tbi")
    try:
        if tabix is not None:
            subprocess.run([tabix, "-f", "-p", "vcf", str(tmp)], check=True,
                           capture_output=True)
        os.replace(tmp, path)
        if tabix is not None:
            os.replace(tmp_index, Path(str(path) + ".tbi"))
            written.append(Path(str(path) + ".tbi"))
    except BaseException:
        for leftover in (tmp, tmp_index):
            leftover.unlink(missing_ok=True)
        raise
    return written
