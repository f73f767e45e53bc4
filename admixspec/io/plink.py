"""PLINK 1 binary filesets (.bed/.bim/.fam) through bed-reader.

The counted allele is ``.bim`` column 6 (A2), ADMIXTURE's convention: the
dosage is the number of A2 copies (bed-reader ``count_A1=False``) and P is the
A2 frequency. The ``.bed`` magic bytes and its size against the ``.bim`` and
``.fam`` line counts are checked before any genotype is read.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..core.exceptions import InputError
from ..core.genotypes import MISSING, Genotypes
from .common import (
    check_unique_iids,
    empty_region_error,
    is_snp_allele,
    keep_entry,
    keep_rows,
    region_mask,
)
from .errors import check_complete_rows, data_line

__all__ = ["plink_prefix", "read_plink", "write_plink"]

_BED_MAGIC = b"\x6c\x1b"
_SNP_MAJOR = 1
_INDIVIDUAL_MAJOR = 0


def plink_prefix(path) -> Path:
    """The fileset prefix of a ``.bed``/``.bim``/``.fam`` path or of a prefix.

    Examples
    --------
    >>> str(plink_prefix("data/example.bed")), str(plink_prefix("data/example"))
    ('data/example', 'data/example')
    """
    path = Path(path)
    if path.suffix in (".bed", ".bim", ".fam"):
        return path.with_suffix("")
    return path


def fileset_file(path, kind: str) -> Path:
    """``path`` (the fileset's ``kind`` file, e.g. ``".bim"``), or a one-line error."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"file not found (the {kind} file of the PLINK fileset)",
                         path=path)
    return path


def _read_table(path: Path, columns: list[str], kind: str) -> pd.DataFrame:
    fileset_file(path, kind)
    try:
        table = pd.read_csv(
            path, sep=r"\s+", header=None, dtype=str, engine="c", na_filter=False,
            comment=None,
        )
    except pd.errors.EmptyDataError:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in columns})
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise InputError(f"cannot parse {kind} file ({error})", path=path) from None
    if table.shape[1] != len(columns):
        raise InputError(
            f"expected {len(columns)} columns in a {kind} file, found {table.shape[1]}",
            path=path,
        )
    check_complete_rows(table, path, kind)
    table.columns = columns
    return table


def read_fam(path) -> pd.DataFrame:
    """Read a ``.fam`` file (columns fid, iid, father, mother, sex, pheno; str).

    Raises
    ------
    InputError
        Unparsable, or an IID on two lines (:func:`check_unique_iids`).
    """
    fam = _read_table(Path(path), ["fid", "iid", "father", "mother", "sex", "pheno"],
                      ".fam")
    check_unique_iids(fam["iid"], fam["fid"], path, comments=False)
    return fam


def read_bim(path) -> pd.DataFrame:
    """Read a ``.bim`` file (columns chrom, id, cm, pos, a1, a2; str)."""
    return _read_table(Path(path), ["chrom", "id", "cm", "pos", "a1", "a2"], ".bim")


def _bim_error(bim: pd.DataFrame, path, record: int, problem: str) -> InputError:
    """``<path>:<line>: variant <id>: <problem>`` for ``.bim`` data line ``record``."""
    return InputError(f"variant {bim['id'].iloc[record]}: {problem}", path=path,
                      line=data_line(path, record, comments=False))


def bim_positions(bim: pd.DataFrame, path) -> np.ndarray:
    """``.bim`` column 4 as int64: 0 (PLINK's unknown position) or more.

    Raises
    ------
    InputError
        ``<path>:<line>: ...`` for the first position that is not an integer
        or is negative.
    """
    text = bim["pos"]
    try:
        positions = text.astype(np.int64).to_numpy()
    except (ValueError, OverflowError):
        # astype does not say where; the regex runs only on the way to the error
        bad = np.flatnonzero(~text.str.fullmatch(r"[+-]?\d{1,18}").to_numpy())
        record = int(bad[0]) if len(bad) else 0
        raise _bim_error(bim, path, record, f"position {text.iloc[record]!r} in "
                         "column 4 is not an integer") from None
    negative = np.flatnonzero(positions < 0)
    if len(negative):
        record = int(negative[0])
        raise _bim_error(bim, path, record, f"negative position {positions[record]} "
                         "in column 4 (PLINK's code for an unknown position is 0)")
    return positions


#: Missing-allele codes: PLINK 1.9 writes 0, PLINK 2 writes ., both for both
#: alleles of a variant with no calls.
_MISSING_ALLELES = ["0", "."]


def check_bim_alleles(bim: pd.DataFrame, path) -> None:
    """Refuse a ``.bim`` line whose two alleles are the same (other than missing).

    Dosages count column 6 against column 5; with both the same allele they
    would count nothing real.

    Raises
    ------
    InputError
        ``<path>:<line>: ...`` for the first such line.
    """
    a1, a2 = bim["a1"].to_numpy(dtype=str), bim["a2"].to_numpy(dtype=str)
    same = np.flatnonzero((a1 == a2) & ~np.isin(a1, _MISSING_ALLELES))
    if len(same):
        record = int(same[0])
        raise _bim_error(bim, path, record, f"identical alleles {str(a1[record])!r} in "
                         "columns 5 and 6")


def _check_bed_header(head: bytes, path) -> None:
    """Refuse a ``.bed`` whose first 3 bytes are not ``6c 1b 01`` (SNP-major)."""
    if head[:2] != _BED_MAGIC[:len(head)] or not head:
        raise InputError(
            "not a PLINK 1 .bed file (wrong magic bytes: expected 6c 1b, found "
            f"{head[:2].hex(' ') or 'nothing'})",
            path=path,
        )
    if len(head) < 3:
        size = "1 byte" if len(head) == 1 else f"{len(head)} bytes"
        raise InputError(f"only {size} long, too short for the 3-byte .bed header "
                         "(6c 1b, then the mode byte)", path=path)
    if head[2] == _INDIVIDUAL_MAJOR:
        raise InputError(
            "individual-major .bed files are not supported (mode byte 00); "
            "rewrite it with 'plink1.9 --bfile X --make-bed'",
            path=path,
        )
    if head[2] != _SNP_MAJOR:
        raise InputError(f"invalid .bed mode byte {head[2]:02x} (expected 01, "
                         "SNP-major)", path=path)


def check_bed(path, n_individuals: int, n_snps: int) -> None:
    """Validate a ``.bed`` header and size against the ``.fam``/``.bim`` counts.

    Raises
    ------
    InputError
        Wrong magic bytes, fewer than 3 bytes, individual-major or invalid
        mode byte, or a size other than
        ``3 + n_snps * ceil(n_individuals / 4)`` bytes.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("file not found (the .bed file of the PLINK fileset)",
                         path=path)
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(3)
    _check_bed_header(head, path)
    expected = 3 + n_snps * ((n_individuals + 3) // 4)
    if size != expected:
        raise InputError(
            f"size {size} bytes disagrees with the .bim ({n_snps} SNPs) and .fam "
            f"({n_individuals} individuals) line counts: expected {expected} bytes",
            path=path,
        )


def _snp_columns(bim, positions, region, bim_path):
    """``.bim`` rows in the region with single-character alleles.

    A region that selects no ``.bim`` row is an :class:`InputError`.

    Returns (columns, variants in the region, of which not SNPs).
    """
    columns_mask = region_mask(bim["chrom"].to_numpy(), positions, region)
    in_region = int(columns_mask.sum())
    if region is not None and not in_region:
        raise empty_region_error(region, pd.unique(bim["chrom"]), bim_path)
    snp = is_snp_allele(bim["a1"]) & is_snp_allele(bim["a2"])
    not_snp = int(np.count_nonzero(columns_mask & ~snp))
    return np.flatnonzero(columns_mask & snp), in_region, not_snp


#: SNP columns per block when bed-reader's missing code is replaced.
_MISSING_BLOCK = 8192


def padding_error(bed_path, n_samples: int, snp_row: int) -> InputError:
    """The error for non-zero padding bits in ``.bed`` SNP row ``snp_row`` (0-based).

    PLINK fills the unused 2-bit slots after the last individual of each SNP's
    last byte with zeros, so a non-zero slot holds an individual that the
    ``.fam`` does not list: its lines would name the wrong genotypes.
    """
    fam = str(plink_prefix(bed_path)) + ".fam"
    return InputError(
        f"holds more individuals than the {n_samples} lines of {fam}: SNP row "
        f"{snp_row + 1} has genotype bits after the last of them (PLINK writes "
        "zeros there)", path=bed_path)


def read_bed_columns(bed_path, n_samples, n_variants, rows, columns,
                     num_threads) -> np.ndarray:
    """Copies of the A2 allele, int8 (rows, columns), -1 missing (bed-reader).

    Raises
    ------
    InputError
        A read SNP row has non-zero padding bits (:func:`padding_error`).
    """
    from bed_reader import open_bed

    if not (len(rows) and len(columns)):
        return np.zeros((len(rows), len(columns)), dtype=np.int8)
    # The unused slots of each SNP's last byte, read in the same pass as extra
    # rows at the end: a view of the first len(rows) rows stays C-contiguous.
    padding = np.arange(n_samples, -(-n_samples // 4) * 4)
    with open_bed(
        bed_path, iid_count=n_samples + len(padding), sid_count=n_variants,
        count_A1=False, num_threads=num_threads, skip_format_check=True,
    ) as bed:
        dosage = bed.read(index=np.s_[np.concatenate([rows, padding]), columns],
                          dtype="int8", order="C")
    written = np.flatnonzero((dosage[len(rows):] != 0).any(axis=0))  # 00 reads as 0
    if len(written):
        raise padding_error(bed_path, n_samples, int(columns[written[0]]))
    dosage = dosage[:len(rows)]
    # by blocks of SNPs: one mask of the whole matrix was a second m x n bytes
    for start in range(0, dosage.shape[1], _MISSING_BLOCK):
        block = dosage[:, start : start + _MISSING_BLOCK]
        block[block == -127] = MISSING
    return dosage


class Fileset(NamedTuple):
    """A PLINK 1 fileset's checked tables and the part to read (:func:`open_fileset`)."""

    bed_path: Path
    fam: pd.DataFrame
    bim: pd.DataFrame
    positions: np.ndarray
    rows: np.ndarray
    columns: np.ndarray
    in_region: int
    not_snp: int


def open_fileset(path, samples=None, region: str | None = None) -> Fileset:
    """Read and check ``.fam`` and ``.bim``, and choose the rows and SNP columns to read.

    The ``.bed`` is checked (magic bytes, size) but no genotype is read.
    ``rows`` are the kept individuals (``samples``, file order, matched by
    :func:`~admixspec.io.common.keep_rows`), ``columns`` the single-character
    SNPs in ``region``;
    ``in_region`` counts the variants in the region, ``not_snp`` the indels
    and symbolic alleles among them. A ``path`` that is a :class:`Fileset`
    already opened is returned as it is (its ``samples`` and ``region``
    chosen): a caller that sized the selection reads the tables once.
    """
    if isinstance(path, Fileset):
        return path
    prefix = plink_prefix(path)
    bed_path = Path(str(prefix) + ".bed")
    if not bed_path.exists() and not Path(str(prefix) + ".bim").exists():
        raise InputError("file not found", path=path if Path(path).suffix else bed_path)
    fam = read_fam(str(prefix) + ".fam")
    bim = read_bim(str(prefix) + ".bim")
    check_bed(bed_path, len(fam), len(bim))
    positions = bim_positions(bim, str(prefix) + ".bim")
    check_bim_alleles(bim, str(prefix) + ".bim")
    rows = keep_rows(fam["fid"], fam["iid"], samples, str(prefix) + ".fam")
    columns, in_region, not_snp = _snp_columns(bim, positions, region,
                                               str(prefix) + ".bim")
    return Fileset(bed_path, fam, bim, positions, rows, columns, in_region, not_snp)


def variant_table(fileset: Fileset, columns) -> pd.DataFrame:
    """Genotypes.variants of the given ``.bim`` rows (A2 counted, as ADMIXTURE does)."""
    selected = fileset.bim.iloc[columns]
    return pd.DataFrame({
        "chrom": selected["chrom"].to_numpy(dtype=object),
        "pos": fileset.positions[columns],
        "id": selected["id"].to_numpy(dtype=object),
        "counted": selected["a2"].to_numpy(dtype=object),
        "other": selected["a1"].to_numpy(dtype=object),
    })


def read_plink(
    path,
    *,
    samples=None,
    region: str | None = None,
    num_threads: int | None = None,
) -> Genotypes:
    """Read a PLINK 1 fileset.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.bed`` (or ``.bim``/``.fam``) path, or the fileset prefix.
    samples : sequence of str, optional
        IIDs (``.fam`` column 2) to keep, all of which must exist; rows keep
        the file order. With a ``families`` attribute (the FIDs of a
        two-column ``--keep`` file, :func:`admixspec.io.reader.read_keep`),
        (FID, IID) pairs are matched (:func:`~admixspec.io.common.keep_rows`);
        ``filter_log`` then has a ``"keep"`` entry counting the others.
    region : str, optional
        ``chrom:start-end`` (1-based, inclusive) selecting ``.bim`` rows.
    num_threads : int, optional
        Threads bed-reader may use.

    Returns
    -------
    Genotypes
        dosage int8, shape (n_individuals, n_snps): copies of the ``.bim``
        column-6 allele (A2), -1 missing. Variants with an allele longer than
        one character (indels) or symbolic are dropped and counted under the
        ``"biallelic_snp"`` entry of ``filter_log``; single-character allele
        codes of any kind (ACGT, 1/2, 0 for a missing allele) are kept.
    """
    fileset = open_fileset(path, samples, region)
    bed_path, fam, rows = fileset.bed_path, fileset.fam, fileset.rows
    not_snp, in_region = fileset.not_snp, fileset.in_region
    dosage = read_bed_columns(bed_path, len(fam), len(fileset.bim), rows,
                              fileset.columns, num_threads)
    variants = variant_table(fileset, fileset.columns)
    genotypes = Genotypes(
        dosage=dosage,
        samples=fam["iid"].to_numpy()[rows],
        variants=variants,
        families=fam["fid"].to_numpy()[rows].astype(str),
        source=str(bed_path),
    )
    genotypes.filter_log.append(
        {
            "filter": "biallelic_snp",
            "unit": "variants",
            "removed": not_snp,
            "reason": f"indel or symbolic allele ({not_snp}) out of {in_region} "
            "variants read",
            "details": {"indel_or_symbolic": not_snp, "records_read": in_region},
        }
    )
    if samples is not None:
        genotypes.filter_log.append(keep_entry(
            samples, len(fam), len(rows),
            paired=getattr(samples, "families", None) is not None))
    return genotypes


def write_plink(prefix, genotypes: Genotypes) -> list[Path]:
    """Write a PLINK 1 fileset ``prefix.bed/.bim/.fam`` atomically.

    The counted allele goes to ``.bim`` column 6 (A2) and the other allele to
    column 5 (A1), so :func:`read_plink` returns the same dosages. ``.fam``
    gets FID = IID = sample ID (unless ``genotypes.families`` is set),
    parents 0, sex 0 and phenotype -9, as ``plink1.9 --vcf`` writes. (For
    sample IDs containing ``_``, ``plink1.9 --vcf`` splits them into FID and
    IID unless given ``--double-id``; this writer always keeps the whole ID,
    like ``--double-id``.)

    Returns
    -------
    list of pathlib.Path
        The three files written.
    """
    from bed_reader import to_bed

    prefix = Path(prefix)
    folder = prefix.parent if str(prefix.parent) else Path(".")
    variants = genotypes.variants
    samples = genotypes.samples.astype(str)
    families = samples if genotypes.families is None else genotypes.families.astype(str)
    n = genotypes.n_individuals
    properties = {
        "fid": families,
        "iid": samples,
        "father": np.full(n, "0"),
        "mother": np.full(n, "0"),
        "sex": np.zeros(n, dtype=np.int32),
        "pheno": np.full(n, "-9"),
        "chromosome": variants["chrom"].astype(str).to_numpy(),
        "sid": variants["id"].astype(str).to_numpy(),
        "cm_position": np.zeros(genotypes.n_snps),
        "bp_position": variants["pos"].to_numpy(dtype=np.int32),
        "allele_1": variants["other"].astype(str).to_numpy(),
        "allele_2": variants["counted"].astype(str).to_numpy(),
    }
    values = genotypes.dosage.copy()
    values[values == MISSING] = -127
    tmp_dir = tempfile.mkdtemp(prefix=f".{prefix.name}.", suffix=".tmp", dir=folder)
    tmp_prefix = Path(tmp_dir) / prefix.name
    targets = [Path(f"{prefix}{ext}") for ext in (".bed", ".bim", ".fam")]
    try:
        to_bed(f"{tmp_prefix}.bed", values, properties=properties, count_A1=False)
        # bed-reader writes centimorgans as "0.0"; plink writes "0". Rewrite the
        # .bim so the fileset is byte-identical to plink1.9 --vcf output.
        bim_lines = [
            f"{c}\t{i}\t0\t{p}\t{a1}\t{a2}\n"
            for c, i, p, a1, a2 in zip(
                properties["chromosome"], properties["sid"], properties["bp_position"],
                properties["allele_1"], properties["allele_2"], strict=True,
            )
        ]
        with open(f"{tmp_prefix}.bim", "w", encoding="utf-8", newline="\n") as handle:
            handle.writelines(bim_lines)
        for ext, target in zip((".bed", ".bim", ".fam"), targets, strict=True):
            os.replace(f"{tmp_prefix}{ext}", target)
    finally:
        for leftover in Path(tmp_dir).iterdir():
            leftover.unlink()
        os.rmdir(tmp_dir)
    return targets
