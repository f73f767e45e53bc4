"""The one dispatcher of genotype input: which format a path is, and its reader.

:func:`read_genotypes` reads VCF/VCF.gz/BCF, PLINK 1, PLINK 2 and VCF Zarr
into memory; :func:`open_streamed` opens a PLINK ``.bed`` or VCF Zarr store
to be read chunk by chunk from disk; :func:`input_shape` tells their sizes
without reading genotypes; :func:`open_genotypes` decides between the two by
the memory budget, as ``admixspec run`` does.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np

from ..core.exceptions import InputError, UsageError
from ..core.filters import apply_filters, check_usable, parse_indep_pairwise
from ..core.genotypes import Genotypes, filter_lines
from .bed_chunks import fileset_shape, open_streamed_bed
from .errors import FORMAT_NAMES, reading
from .pgen import pgen_prefix, read_pgen, read_psam
from .plink import (
    Fileset,
    open_fileset,
    plink_prefix,
    read_fam,
    read_plink,
)
from .streamed import StreamedGenotypes
from .vcf import read_vcf, read_vcf_samples
from .vcz import is_vcz, open_streamed_vcz, read_vcz, store_samples, store_shape

__all__ = ["KeepList", "detect_format", "format_keep", "input_samples",
           "input_shape", "memory_budget", "open_genotypes", "open_streamed",
           "read_genotypes", "read_keep"]

logger = logging.getLogger("admixspec")

_VCF_SUFFIXES = (".vcf", ".vcf.gz", ".vcf.bgz", ".bcf", ".gz", ".bgz")
#: Formats admixspec does not read, with the PLINK command that converts each
#: to a .bed fileset (ADMIXTURE reads .ped and .tped itself).
_CONVERSIONS = {
    ".ped": "plink --file {stem} --make-bed --out {stem}",
    ".map": "plink --file {stem} --make-bed --out {stem}",
    ".tped": "plink --tfile {stem} --make-bed --out {stem}",
    ".tfam": "plink --tfile {stem} --make-bed --out {stem}",
    ".bgen": "plink2 --bgen {stem}.bgen ref-first --sample {stem}.sample --make-bed "
             "--out {stem}",
}


def detect_format(path) -> str:
    """Return ``"plink"``, ``"vcf"`` or ``"vcz"`` for an input path (or PLINK prefix).

    The suffix decides (``.bed/.bim/.fam`` -> PLINK, ``.vcf``, ``.vcf.gz``,
    ``.bcf`` -> VCF, ``.vcz`` or a Zarr store directory -> VCF Zarr); a bare
    prefix with a ``.bed`` next to it is PLINK;
    otherwise the first bytes are sniffed.

    Raises
    ------
    InputError
        If neither the path nor ``path.bed`` (or ``path.pgen``) exists, or the
        format is unknown (a ``.ped``, ``.tped`` or ``.bgen`` gets the PLINK
        command that converts it).

    Examples
    --------
    >>> detect_format("x.vcf.gz"), detect_format("x.bed"), detect_format("x.pgen")
    ('vcf', 'plink', 'pgen')
    """
    path = Path(path)
    name = path.name.lower()
    if path.suffix.lower() in _CONVERSIONS:
        command = _CONVERSIONS[path.suffix.lower()].format(stem=path.with_suffix(""))
        raise InputError(f"admixspec does not read {path.suffix} files; convert them "
                         f"to a .bed fileset first: {command}", path=path)
    if path.suffix in (".bed", ".bim", ".fam"):
        return "plink"
    if path.suffix in (".pgen", ".pvar", ".psam"):
        return "pgen"
    if name.endswith(_VCF_SUFFIXES):
        return "vcf"
    if name.endswith(".vcz") or is_vcz(path):
        return "vcz"
    if not path.exists():
        if Path(str(path) + ".bed").exists():
            return "plink"
        if Path(str(path) + ".pgen").exists():
            return "pgen"
        raise InputError("file not found", path=path)
    if path.is_dir():
        raise InputError("is a directory, not a genotype file", path=path)
    with open(path, "rb") as handle:
        head = handle.read(16)
    if head[:2] == b"\x6c\x1b":
        return "plink"
    if head[:2] == b"\x1f\x8b" or head.startswith((b"##fileformat", b"BCF")):
        return "vcf"
    raise InputError(
        "unknown genotype format (expected VCF, VCF.gz, BCF, a PLINK .bed or a "
        "PLINK 2 .pgen)", path=path
    )


class KeepList(list):
    """The IIDs of a ``--keep`` file, in file order, with their FIDs when it gives them.

    A list of str (the IIDs), so every reader takes it as sample IDs.

    Attributes
    ----------
    families : tuple of str or None
        Each IID's FID, from a file whose every line has two or more columns
        (PLINK's ``FID IID``): a PLINK input then matches the (FID, IID)
        pairs. None for a one-column file.
    source : str or None
        The file, for the log.
    """

    def __init__(self, iids=(), families=None, source=None):
        super().__init__(iids)
        self.families = None if families is None else tuple(families)
        self.source = source


def read_keep(path) -> KeepList:
    """Read a ``--keep`` file: sample IDs to keep.

    One individual per line: either a single column (the sample ID / IID), or
    PLINK's ``FID IID`` (further columns, as in a ``.fam``, are ignored).
    When every line has two columns or more, a PLINK input (``.fam``, or a
    ``.psam`` with FIDs) matches each (FID, IID) pair, as PLINK does; other
    inputs, and a file mixing one-column lines in, match the IIDs (the last
    of the first two columns). Blank lines, lines starting with ``#`` and a
    UTF-8 byte order mark are ignored; Windows line ends are read as ends.

    Returns
    -------
    KeepList
        The IIDs in file order (a list of str), duplicates removed, with
        ``families`` for a two-column file.

    Raises
    ------
    InputError
        A missing or unreadable file, or one that lists no ID.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> keep = pathlib.Path(tempfile.mkdtemp()) / "keep.txt"
    >>> _ = keep.write_text("F1 1\\nF2 1\\nF1 1\\n")
    >>> ids = read_keep(keep)
    >>> ids, ids.families
    (['1', '1'], ('F1', 'F2'))
    """
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path=path)
    rows: list[list[str]] = []
    # utf-8-sig: Notepad and Excel start UTF-8 text with a byte order mark
    with reading(path, "a --keep file"), open(path, encoding="utf-8-sig") as handle:
        for line in handle:
            fields = line.split()
            if fields and not fields[0].startswith("#"):
                rows.append(fields[:2])
    if not rows:
        raise InputError("keep file lists no sample IDs", path=path)
    paired = all(len(fields) == 2 for fields in rows)
    keys = list(dict.fromkeys(tuple(fields) if paired else (fields[-1],)
                              for fields in rows))
    return KeepList([key[-1] for key in keys],
                    [key[0] for key in keys] if paired else None, str(path))


def format_keep(samples, families=None) -> str:
    """The text of a ``--keep`` file that :func:`read_keep` reads back as these samples.

    ``FID IID`` lines (tab-separated, as PLINK's) where the samples have FIDs
    that are not all their IIDs, so that a family fileset whose families
    number their members alike keeps the right ones; else one IID a line.

    Parameters
    ----------
    samples : array_like of str, shape (n,)
        IIDs.
    families : array_like of str, shape (n,), optional
        Their FIDs (``Genotypes.families``).

    Examples
    --------
    >>> format_keep(["a", "b"], ["a", "b"])
    'a\\nb\\n'
    >>> format_keep(["1", "1"], ["F1", "F2"])
    'F1\\t1\\nF2\\t1\\n'
    """
    iids = np.asarray(samples, dtype=str)
    if families is None or np.array_equal(np.asarray(families, dtype=str), iids):
        return "".join(f"{iid}\n" for iid in iids)
    fids = np.asarray(families, dtype=str)
    return "".join(f"{fid}\t{iid}\n" for fid, iid in zip(fids, iids, strict=True))


def _samples(keep):
    """``keep`` as IDs: a ``--keep`` file read, a KeepList as it is, a list copied."""
    if keep is None:
        return None
    if isinstance(keep, (str, os.PathLike)):
        return read_keep(keep)
    return keep if isinstance(keep, KeepList) else list(keep)


def read_genotypes(
    path: str | os.PathLike,
    *,
    keep=None,
    region: str | None = None,
    maf: float = 0.0,
    geno: float = 1.0,
    mind: float = 1.0,
    drop_monomorphic: bool = True,
    indep_pairwise=None,
    check: bool = True,
    num_threads: int | None = None,
) -> Genotypes:
    """Read genotypes from VCF/VCF.gz/BCF or a PLINK 1 fileset, then filter.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.vcf``, ``.vcf.gz``, ``.bcf`` file, a VCF Zarr store (``.vcz``,
        see :mod:`admixspec.io.vcz`), or a PLINK ``.bed`` (or its prefix).
        A PLINK 2 ``.pgen`` (or its prefix) is read by
        :func:`admixspec.io.pgen.read_pgen` (counted allele: REF).
    keep : str, os.PathLike or sequence of str, optional
        Samples to keep: a ``--keep`` file (see :func:`read_keep`: a PLINK
        input matches a two-column file's (FID, IID) pairs), a
        :class:`KeepList` or a list of IDs. Rows keep the input order;
        ``filter_log`` then has a ``"keep"`` entry, after the reader's
        entries, counting the individuals left out.
    region : str, optional
        ``chrom:start-end``, 1-based inclusive (VCF/BCF: needs a tabix/CSI
        index).
    maf, geno, mind : float
        PLINK-style filters (see :func:`admixspec.core.filters.apply_filters`).
    drop_monomorphic : bool
        Remove SNPs with a single observed allele (on by default; ADMIXTURE
        itself keeps them).
    indep_pairwise : tuple (window, step, r2), optional
        LD pruning after the other filters, as PLINK's ``--indep-pairwise``
        (window and step in SNPs; see
        :func:`admixspec.core.filters.filter_indep_pairwise`).
    check : bool
        Raise :class:`InputError` when fewer than 2 individuals or 2 SNPs
        remain.
    num_threads : int, optional
        Threads for the PLINK reader.

    Returns
    -------
    Genotypes
        dosage int8, shape (n_individuals, n_snps), copies of the counted
        allele (VCF REF / ``.bim`` column 6), -1 missing; ``filter_log``
        records every filter with how many variants/individuals it removed.

    Examples
    --------
    >>> import tempfile, os
    >>> from admixspec import simulate_balding_nichols
    >>> from admixspec.io import write_plink
    >>> prefix = os.path.join(tempfile.mkdtemp(), "toy")
    >>> _ = write_plink(prefix, simulate_balding_nichols(10, 50, 2, seed=0).genotypes)
    >>> read_genotypes(prefix + ".bed", maf=0.01).dosage.shape[0]
    10
    """
    return _read_genotypes(
        path, _samples(keep), region=region, maf=maf, geno=geno, mind=mind,
        drop_monomorphic=drop_monomorphic, indep_pairwise=indep_pairwise, check=check,
        num_threads=num_threads)


def _read_genotypes(path, samples, *, opened=None, region=None, maf=0.0, geno=1.0,
                    mind=1.0, drop_monomorphic=True, indep_pairwise=None, check=True,
                    num_threads=None) -> Genotypes:
    """:func:`read_genotypes` of ``samples`` (IDs, or a :class:`KeepList`).

    ``opened``: the PLINK fileset that :func:`_selection` opened for the same
    ``samples`` and ``region``, so that its tables are not read again.
    """
    if indep_pairwise is not None:
        indep_pairwise = parse_indep_pairwise(indep_pairwise)  # fail before reading
    genotypes = _read(path, samples, region, num_threads, opened)
    genotypes = apply_filters(
        genotypes, maf=maf, geno=geno, mind=mind, drop_monomorphic=drop_monomorphic,
        indep_pairwise=indep_pairwise,
    )
    if check:
        check_usable(genotypes)
    return genotypes


def _read(path, samples, region, num_threads, opened=None) -> Genotypes:
    """What ``samples`` and ``region`` select; each reader logs its ``keep`` entry."""
    kind = detect_format(path)
    with reading(path, FORMAT_NAMES[kind]):
        if kind == "plink":
            return read_plink(
                plink_prefix(path) if opened is None else opened, samples=samples,
                region=region, num_threads=num_threads
            )
        if kind == "pgen":
            return read_pgen(pgen_prefix(path), samples=samples, region=region)
        if kind == "vcz":
            return read_vcz(path, samples=samples, region=region)
        return read_vcf(path, samples=samples, region=region)


def open_streamed(path, *, memory_bytes: float, samples=None, region=None, maf=0.0,
                  geno=1.0, mind=1.0, drop_monomorphic=True) -> StreamedGenotypes:
    """Open and filter a PLINK ``.bed`` or VCF Zarr store for streaming.

    The genotypes are read twice at most
    (:func:`admixspec.io.streamed.filter_streamed`); a chunk's int8 genotypes take an
    eighth of ``memory_bytes``.

    Parameters
    ----------
    path : str or os.PathLike
        ``.bed`` path, PLINK fileset prefix, or ``.vcz`` store.
    memory_bytes : float
        Workspace budget.
    samples : sequence of str, optional
        IIDs (sample IDs) to keep (``--keep``), or a :class:`KeepList`
        (matched as by :func:`read_genotypes`).
    region, maf, geno, mind, drop_monomorphic
        As in :func:`admixspec.read_genotypes`.

    Returns
    -------
    StreamedGenotypes
    """
    return _open_streamed(path, None, memory_bytes=memory_bytes, samples=samples,
                          region=region, filters={"maf": maf, "geno": geno, "mind": mind,
                                                  "drop_monomorphic": drop_monomorphic})


def _open_streamed(path, opened, *, memory_bytes, samples, region, filters):
    """:func:`open_streamed`, of the fileset ``opened`` (:func:`_selection`) if given."""
    if detect_format(path) == "plink":
        return open_streamed_bed(path if opened is None else opened,
                                 memory_bytes=memory_bytes, samples=samples,
                                 region=region, filters=filters)
    return open_streamed_vcz(path, memory_bytes=memory_bytes, samples=samples,
                             region=region, filters=filters)


def input_shape(path, *, samples=None, region: str | None = None
                ) -> tuple[int, int] | None:
    """Samples and variants of a streamable input (``.bed`` or ``.vcz``), else None.

    Those that ``samples`` and ``region`` select (``--keep``, ``--region``).
    Without ``region``, the ``.fam``/``.bim`` line counts or the store's
    array shapes, with ``len(samples)`` individuals when ``samples`` (the
    ``--keep`` IDs) are given. With ``region``, the kept individuals and the
    SNPs in it, as the readers choose them: the ``.fam`` and ``.bim`` (or
    the store's positions and alleles) are read for that, before the
    genotypes. No genotype is read; it only feeds the decision to stream.
    """
    return _selection(path, samples, region)[0]


def _selection(path, samples, region) -> tuple[tuple[int, int] | None, Fileset | None]:
    """:func:`input_shape`, and the PLINK fileset it opened (with ``region``), else None.

    :func:`_read_genotypes` and :func:`_open_streamed` take that fileset, so
    the ``.fam`` and ``.bim`` are read once.
    """
    kind = detect_format(path)
    if kind not in ("plink", "vcz"):
        return None, None
    with reading(path, FORMAT_NAMES[kind]):
        if kind == "vcz":
            return store_shape(path, samples=samples, region=region), None
        if region is None:
            n_samples, n_variants = fileset_shape(path)
            return ((n_samples if samples is None else len(samples)), n_variants), None
        fileset = open_fileset(path, samples, region)
        return (len(fileset.rows), len(fileset.columns)), fileset


def input_samples(path) -> tuple[np.ndarray, np.ndarray | None]:
    """Every sample of an input, in file order, before ``--keep`` or ``--mind``.

    Only the ``.fam``, ``.psam``, VCF header or the store's sample IDs are
    read, not the genotypes.

    Returns
    -------
    samples : numpy.ndarray of str, shape (n_samples,)
        As :attr:`admixspec.Genotypes.samples` (the IIDs of a fileset).
    families : numpy.ndarray of str, shape (n_samples,), or None
        As :attr:`admixspec.Genotypes.families`: the FIDs of a ``.fam`` (or
        of a ``.psam`` that has them), else None.
    """
    kind = detect_format(path)
    with reading(path, FORMAT_NAMES[kind]):
        if kind == "plink":
            fam = read_fam(str(plink_prefix(path)) + ".fam")
            return fam["iid"].to_numpy(dtype=str), fam["fid"].to_numpy(dtype=str)
        if kind == "pgen":
            psam = read_psam(str(pgen_prefix(path)) + ".psam")
            return psam["IID"].to_numpy(dtype=str), (
                psam["FID"].to_numpy(dtype=str) if "FID" in psam else None)
        if kind == "vcz":
            return store_samples(path), None
        return read_vcf_samples(path), None


def _physical_memory() -> int:
    """This machine's memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def memory_budget(memory_mib: float | None) -> tuple[float, str]:
    """The workspace budget in bytes and in words: ``--memory``, else half of memory.

    Parameters
    ----------
    memory_mib : float or None
        PLINK's ``--memory`` (MiB); None for PLINK's default, half of this
        machine's physical memory.

    Returns
    -------
    budget : float
        Bytes.
    description : str
        For messages, e.g. ``"--memory 100 MiB"``.

    Examples
    --------
    >>> memory_budget(100)
    (104857600.0, '--memory 100 MiB')
    """
    if memory_mib is not None:
        return memory_mib * 2.0**20, f"--memory {memory_mib} MiB"
    budget = _physical_memory() / 2
    return budget, (f"the default --memory {budget / 2**20:.0f} MiB, half of this "
                    "machine's memory")


def _mib(n_bytes: float) -> str:
    """Bytes in MiB for the log: two digits below 10 MiB, whole MiB above.

    Examples
    --------
    >>> _mib(600_000), _mib(1_000_000_000)
    ('0.57', '954')
    """
    mib = n_bytes / 2**20
    return f"{mib:.2g}" if mib < 10 else f"{mib:.0f}"


def _log_read(genotypes, source, seconds: float, streamed: str = "") -> None:
    for line in filter_lines(genotypes):
        logger.info("%s", line)
    if streamed:
        logger.info("%s; filtered in %.1f s", streamed, seconds)
    else:
        logger.info("read %d individuals x %d SNPs from %s in %.1f s",
                    genotypes.n_individuals, genotypes.n_snps, source, seconds)


def open_genotypes(path, *, memory_mib: float | None = None, stream: bool = True,
                   in_memory_for=(), keep=None, region: str | None = None,
                   maf: float = 0.0, geno: float = 1.0, mind: float = 1.0,
                   indep_pairwise=None, drop_monomorphic: bool = True,
                   check: bool = True, num_threads: int | None = None):
    """Genotypes in memory, or left on disk when they would take over half the budget.

    What ``admixspec run`` reads: :func:`read_genotypes` when the int8
    genotypes that ``keep`` and ``region`` select (:func:`input_shape`) fit
    half of the memory budget (or the format cannot be streamed), else
    :func:`open_streamed` (a PLINK ``.bed`` or a VCF Zarr store, read chunk by
    chunk). Logs (INFO) what each filter removed and what was read.

    Parameters
    ----------
    path : str or os.PathLike
        As for :func:`read_genotypes`.
    memory_mib : float, optional
        The budget, PLINK's ``--memory`` in MiB (:func:`memory_budget`).
    stream : bool
        False reads into memory whatever the size (``admixspec info``).
    in_memory_for : sequence of str
        What the caller will do that needs the genotypes in memory (e.g.
        ``["--cv"]``): when they would have to be streamed, a
        :class:`UsageError` names these.
    keep, region, maf, geno, mind, indep_pairwise, check
        As for :func:`read_genotypes` (LD pruning needs the genotypes in memory).
    drop_monomorphic : bool
        As for :func:`read_genotypes`, for genotypes read into memory
        (``run`` keeps them: :mod:`admixspec.fit.monomorphic`); genotypes
        left on disk are always read without them.
    num_threads : int, optional
        As for :func:`read_genotypes` (``run -j``): threads of the PLINK
        reader for genotypes read into memory.

    Returns
    -------
    Genotypes or admixspec.io.streamed.StreamedGenotypes
    """
    start = time.perf_counter()
    thresholds = {"maf": maf, "geno": geno, "mind": mind}
    in_memory = {"drop_monomorphic": drop_monomorphic, "num_threads": num_threads,
                 "region": region, **thresholds}
    samples = _samples(keep)
    shape, opened = _selection(path, samples, region) if stream else (None, None)
    if shape is None:
        if stream and memory_mib is not None:
            logger.info("--memory: only a PLINK .bed or VCF Zarr store is streamed; "
                        "reading %s into memory", path)
        genotypes = _read_genotypes(path, samples, indep_pairwise=indep_pairwise,
                                    check=check, **in_memory)
        _log_read(genotypes, path, time.perf_counter() - start)
        return genotypes
    budget, budget_text = memory_budget(memory_mib)
    n_individuals, n_snps = shape  # what --keep and --region select, before filters
    if n_individuals * n_snps <= budget / 2:
        genotypes = _read_genotypes(path, samples, opened=opened,
                                    indep_pairwise=indep_pairwise, check=check,
                                    **in_memory)
        _log_read(genotypes, path, time.perf_counter() - start)
        return genotypes
    wanted = list(in_memory_for) + (["--indep-pairwise"] if indep_pairwise else [])
    if wanted:
        raise UsageError(f"{', '.join(wanted)} need(s) the genotypes in memory, but "
                         f"{n_individuals} x {n_snps} exceed half of {budget_text}; "
                         "raise --memory")
    genotypes = _open_streamed(path, opened, memory_bytes=budget, samples=samples,
                               region=region,
                               filters={**thresholds, "drop_monomorphic": True})
    if check:
        check_usable(genotypes)
    chunks = genotypes.chunks
    # the size that decided is the one selected, before the filters removed any
    selected = ("" if (genotypes.n_individuals, genotypes.n_snps) == shape
                else f"of {n_individuals} x {n_snps} selected: ")
    _log_read(genotypes, path, time.perf_counter() - start, streamed=(
        f"streaming {genotypes.n_individuals} individuals x {genotypes.n_snps} SNPs "
        f"({selected}{_mib(n_individuals * n_snps)} MiB of int8 genotypes, more "
        f"than half of {budget_text}) from {path} in {len(chunks.bounds)} chunks of up "
        f"to {chunks.chunk_snps} SNPs"))
    return genotypes
