"""``read_genotypes``: one entry point for VCF/VCF.gz/BCF and PLINK input."""

from __future__ import annotations

import os
from pathlib import Path

from ..exceptions import InputError
from ..filters import apply_filters, check_usable, parse_indep_pairwise
from ..genotypes import Genotypes
from .errors import FORMAT_NAMES, reading
from .pgen import pgen_prefix, read_pgen
from .plink import plink_prefix, read_plink
from .vcf import read_vcf
from .vcz import is_vcz, read_vcz

__all__ = ["detect_format", "read_genotypes", "read_keep"]

_VCF_SUFFIXES = (".vcf", ".vcf.gz", ".vcf.bgz", ".bcf", ".gz", ".bgz")


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
        format is unknown.

    Examples
    --------
    >>> detect_format("x.vcf.gz"), detect_format("x.bed"), detect_format("x.pgen")
    ('vcf', 'plink', 'pgen')
    """
    path = Path(path)
    name = path.name.lower()
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


def read_keep(path) -> list[str]:
    """Read a ``--keep`` file: sample IDs to keep.

    One individual per line: either a single column (the sample ID / IID), or
    PLINK's ``FID IID`` (the second column is used). Blank lines and lines
    starting with ``#`` are ignored.

    Returns
    -------
    list of str
        IDs in file order, duplicates removed.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path=path)
    ids: list[str] = []
    seen = set()
    with reading(path, "a --keep file"), open(path, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            sample = fields[1] if len(fields) >= 2 else fields[0]
            if sample not in seen:
                seen.add(sample)
                ids.append(sample)
    if not ids:
        raise InputError("keep file lists no sample IDs", path=path)
    return ids


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
        Samples to keep: a ``--keep`` file (see :func:`read_keep`) or a list
        of IDs. Rows keep the input order.
    region : str, optional
        ``chrom:start-end``, 1-based inclusive (VCF/BCF: needs a tabix/CSI
        index).
    maf, geno, mind : float
        PLINK-style filters (see :func:`admixspec.filters.apply_filters`).
    drop_monomorphic : bool
        Remove SNPs with a single observed allele (on by default; ADMIXTURE
        itself keeps them).
    indep_pairwise : tuple (window, step, r2), optional
        LD pruning after the other filters, as PLINK's ``--indep-pairwise``
        (window and step in SNPs; see
        :func:`admixspec.filters.filter_indep_pairwise`).
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
    if indep_pairwise is not None:
        indep_pairwise = parse_indep_pairwise(indep_pairwise)  # fail before reading
    samples = None
    if keep is not None:
        samples = read_keep(keep) if isinstance(keep, (str, os.PathLike)) else list(keep)
    kind = detect_format(path)
    with reading(path, FORMAT_NAMES[kind]):
        if kind == "plink":
            genotypes = read_plink(
                plink_prefix(path), samples=samples, region=region,
                num_threads=num_threads
            )
        elif kind == "pgen":
            genotypes = read_pgen(pgen_prefix(path), samples=samples, region=region)
        elif kind == "vcz":
            genotypes = read_vcz(path, samples=samples, region=region)
        else:
            genotypes = read_vcf(path, samples=samples, region=region)
    genotypes = apply_filters(
        genotypes, maf=maf, geno=geno, mind=mind, drop_monomorphic=drop_monomorphic,
        indep_pairwise=indep_pairwise,
    )
    if check:
        check_usable(genotypes)
    return genotypes
