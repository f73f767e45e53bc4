"""PLINK 2 filesets (.pgen/.pvar/.psam) through pgenlib, PLINK 2's own reader.

Counted allele
--------------
The dosage is the number of **REF** copies (``.pvar`` column REF) and P is
the REF frequency. ``plink2 --bfile X --make-pgen`` writes the ``.bim``
column-6 allele (A2) as REF and column 5 (A1) as ALT, so the counted allele
is the one ADMIXTURE and :func:`admixspec.io.read_plink` count for the
``.bed``, and the same data read as ``.bed`` and as ``.pgen`` give identical
matrices (and VCF REF is REF, as for VCF input).

Variants
--------
Only biallelic SNPs are kept, as for VCF input: multiallelic variants (ALT
lists several alleles), indels and symbolic alleles are skipped and counted
under the ``"biallelic_snp"`` entry of :attr:`Genotypes.filter_log`. Only
hard calls are read, as ``plink2 --make-bed`` writes them: a ``.pgen`` that
holds dosages (imputed data) is read with a warning, since PLINK 2 stored a
missing hard call wherever a dosage is further than its
``--hard-call-threshold`` from a whole number.
"""

from __future__ import annotations

import logging
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.exceptions import InputError, import_optional
from ..core.genotypes import MISSING, Genotypes
from .common import (
    check_unique_iids,
    empty_region_error,
    is_snp_allele,
    keep_entry,
    keep_rows,
    region_mask,
)
from .errors import check_complete_rows, one_line

__all__ = ["pgen_prefix", "read_pgen"]

logger = logging.getLogger("admixspec")

_SUFFIXES = (".pgen", ".pvar", ".psam")
#: Variants decoded per pgenlib call.
BLOCK_SIZE = 4096
#: Most dosages decoded to tell whether a .pgen holds dosages (8 MiB as float64).
DOSAGE_CHECK_ENTRIES = 2**20
#: pgenlib's int8 code for a missing hard call.
_PGEN_MISSING = -9
#: Column names of a header-less .pvar (PLINK 1 .bim order) and .psam (.fam order).
_BIM_COLUMNS = ["CHROM", "ID", "CM", "POS", "ALT", "REF"]
_FAM_COLUMNS = ["FID", "IID", "PAT", "MAT", "SEX", "PHENO"]


def pgen_prefix(path) -> Path:
    """The fileset prefix of a ``.pgen``/``.pvar``/``.psam`` path or of a prefix.

    Examples
    --------
    >>> str(pgen_prefix("cohort.pgen")), str(pgen_prefix("cohort"))
    ('cohort', 'cohort')
    """
    path = Path(path)
    return path.with_suffix("") if path.suffix in _SUFFIXES else path


def _count_meta_lines(path: Path) -> tuple[int, str | None, bool]:
    """Number of leading ``##`` lines, the ``#``-header line after them, and tabs.

    The last is whether the header and the first line after it are split by
    tabs, as PLINK 2 writes them.
    """
    n_meta = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.startswith("##"):
                if not line.startswith("#"):
                    return n_meta, None, False
                first = next(handle, "")
                return n_meta, line.rstrip("\n"), "\t" in line and "\t" in first
            n_meta += 1
    return n_meta, None, False


def _read_plink2_table(
    path: Path, kind: str, headerless: list[str], needed: tuple = ()
) -> pd.DataFrame:
    """Read a ``.pvar``/``.psam`` as str columns named as in its ``#`` header.

    Without a ``#`` header line the file is in PLINK 1 layout (``.bim`` or
    ``.fam`` columns), as PLINK 2 allows. Fields are split at any whitespace,
    or only at tabs where the header and the first record are tab-separated,
    as PLINK 2 writes them: a ``.pvar``'s INFO may then hold spaces. With
    ``needed``, only those columns are parsed (INFO can dwarf the rest).
    """
    if not path.exists():
        if Path(str(path) + ".zst").exists():
            raise InputError(
                f"compressed {kind} files are not supported; decompress it with "
                f"'plink2 --zst-decompress {path}.zst > {path}'",
                path=str(path) + ".zst",
            )
        raise InputError(
            f"file not found (the {kind} file of the PLINK 2 fileset)", path=path
        )
    try:
        n_meta, header, tabs = _count_meta_lines(path)
    except UnicodeDecodeError as error:
        raise InputError(f"cannot parse {kind} file ({error})", path=path) from None
    if header is None:
        names = headerless
    else:
        fields = header.lstrip("#").rstrip().split("\t" if tabs else None)
        names = [name.strip() for name in fields]
    missing = [name for name in needed if name not in names]
    if missing:
        raise InputError(
            f"no {', '.join(missing)} column in the {kind} header", path=path
        )
    try:
        with warnings.catch_warnings():
            # index_col=False: a tab ending a record is no extra field; a short
            # record, which pandas warns of, is refused below
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            table = pd.read_csv(
                path, sep="\t" if tabs else r"\s+",
                skiprows=n_meta + (1 if header else 0), header=None, names=names,
                usecols=list(needed) or None, dtype=str, na_filter=False, engine="c",
                index_col=False if tabs else None,
            )
    except pd.errors.EmptyDataError:
        table = pd.DataFrame({name: pd.Series(dtype=object) for name in headerless})
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as error:
        raise InputError(f"cannot parse {kind} file ({error})", path=path) from None
    check_complete_rows(table, path, kind)
    return table


def read_pvar(path) -> pd.DataFrame:
    """Read a ``.pvar`` (str columns CHROM, POS, ID, REF, ALT, ...)."""
    return _read_plink2_table(
        Path(path), ".pvar", _BIM_COLUMNS, needed=("CHROM", "POS", "ID", "REF", "ALT")
    )


def read_psam(path) -> pd.DataFrame:
    """Read a ``.psam`` (str columns IID and, when present, FID, SEX, ...).

    Raises
    ------
    InputError
        Unparsable, no IID column, or an IID on two lines
        (:func:`~admixspec.io.common.check_unique_iids`).
    """
    table = _read_plink2_table(Path(path), ".psam", _FAM_COLUMNS)
    if "IID" not in table:
        raise InputError("no IID column in the .psam header", path=path)
    check_unique_iids(table["IID"], table.get("FID"), path)
    return table


def _allele_offsets(alt: np.ndarray) -> np.ndarray:
    """pgenlib's allele_idx_offsets: where each variant's alleles start (REF + ALTs)."""
    n_alleles = 2 + np.char.count(alt.astype(str), ",")
    return np.concatenate([[0], np.cumsum(n_alleles)]).astype(np.uintp)


def _read_hardcalls(pgen_path, variant_ct, rows, columns, offsets, raw_sample_ct):
    """REF dosages, shape (len(rows), len(columns)), read in SNP-major blocks."""
    import pgenlib

    subset = None if len(rows) == raw_sample_ct else rows.astype(np.uint32)
    dosage = np.empty((len(rows), len(columns)), dtype=np.int8)
    block = np.empty((min(BLOCK_SIZE, len(columns)), len(rows)), dtype=np.int8)
    reader = pgenlib.PgenReader(
        bytes(pgen_path), raw_sample_ct=raw_sample_ct, variant_ct=variant_ct,
        sample_subset=subset, allele_idx_offsets=offsets,
    )
    try:
        for start in range(0, len(columns), BLOCK_SIZE):
            chunk = columns[start : start + BLOCK_SIZE].astype(np.uint32)
            out = block[: len(chunk)]
            reader.read_list(chunk, out, allele_idx=0)
            dosage[:, start : start + len(chunk)] = out.T
            if start == 0:
                _warn_of_dosages(reader, chunk, out, pgen_path)
    finally:
        reader.close()
    dosage[dosage == _PGEN_MISSING] = MISSING
    return dosage


def _warn_of_dosages(reader, chunk, hardcalls, pgen_path) -> None:
    """Warn when the first block's dosages are not its hard calls (imputed data).

    pgenlib reads a hard call as its dosage where the file stores none, so a
    dosage that is not a whole number means the ``.pgen`` holds dosages. Only
    the block's first variants are decoded again, at most
    :data:`DOSAGE_CHECK_ENTRIES` dosages: a float64 copy of a whole block
    would be eight times the int8 block (16 GB at 500,000 samples).
    """
    n_variants = max(1, min(len(chunk),
                            DOSAGE_CHECK_ENTRIES // max(1, hardcalls.shape[1])))
    chunk, hardcalls = chunk[:n_variants], hardcalls[:n_variants]
    dosages = np.empty(hardcalls.shape, dtype=np.float64)
    reader.read_dosages_list(chunk, dosages, allele_idx=0)
    called = dosages != _PGEN_MISSING
    fractional = called & (dosages != np.rint(dosages))
    if not fractional.any():
        return
    lost = called & (hardcalls == _PGEN_MISSING)
    logger.warning(
        "%s holds dosages (imputed data?): admixspec reads its hard calls, as "
        "`plink2 --make-bed` does; in its first %d variants %d of %d dosages are "
        "not whole numbers and %d of them are missing calls (further than PLINK "
        "2's --hard-call-threshold from one)", pgen_path, len(chunk),
        int(np.count_nonzero(fractional)), int(np.count_nonzero(called)),
        int(np.count_nonzero(lost)),
    )


def read_pgen(path, *, samples=None, region: str | None = None) -> Genotypes:
    """Read a PLINK 2 fileset (``.pgen`` + ``.pvar`` + ``.psam``).

    Parameters
    ----------
    path : str or os.PathLike
        The ``.pgen`` (or ``.pvar``/``.psam``) path, or the fileset prefix.
    samples : sequence of str, optional
        IIDs to keep, all of which must exist; rows keep the file order. With
        a ``families`` attribute (a two-column ``--keep`` file,
        :func:`admixspec.io.reader.read_keep`) and a ``.psam`` with FIDs,
        (FID, IID) pairs are matched (:func:`~admixspec.io.common.keep_rows`).
    region : str, optional
        ``chrom:start-end`` (1-based, inclusive) selecting ``.pvar`` rows.

    Returns
    -------
    Genotypes
        dosage int8, shape (n_individuals, n_biallelic_snps): copies of REF
        (which is ``.bim`` column 6 for a fileset converted from ``.bed``),
        -1 missing. ``filter_log`` has a ``"biallelic_snp"`` entry counting
        the multiallelic, indel and symbolic variants skipped.

    Raises
    ------
    MissingDependencyError
        pgenlib is not installed.
    InputError
        A missing or unparsable file, unknown sample IDs, or a ``.pgen``
        that disagrees with the ``.pvar``/``.psam`` line counts.
    """
    import_optional("pgenlib", extra="pgen", needed_for="reading .pgen files")
    prefix = pgen_prefix(path)
    pgen_path = Path(str(prefix) + ".pgen")
    if not pgen_path.exists():
        raise InputError("file not found", path=pgen_path)
    psam = read_psam(str(prefix) + ".psam")
    pvar = read_pvar(str(prefix) + ".pvar")
    try:
        positions = pvar["POS"].astype(np.int64).to_numpy()
    except ValueError:
        raise InputError("non-integer POS", path=str(prefix) + ".pvar") from None
    rows = keep_rows(psam["FID"].to_numpy(dtype=str) if "FID" in psam else None,
                     psam["IID"].to_numpy(dtype=str), samples, str(prefix) + ".psam",
                     kind=".psam")
    in_region = region_mask(pvar["CHROM"].to_numpy(dtype=str), positions, region)
    if region is not None and not in_region.any():
        raise empty_region_error(region, pd.unique(pvar["CHROM"]), str(prefix) + ".pvar")
    alt = pvar["ALT"].to_numpy(dtype=str)
    multiallelic = np.char.find(alt, ",") >= 0
    # ALT "." is a monomorphic site; the .bed it came from has "0" there.
    monomorphic = alt == "."
    other = np.where(monomorphic, "0", alt)
    snp = is_snp_allele(pvar["REF"]) & (is_snp_allele(pvar["ALT"]) | monomorphic)
    columns = np.flatnonzero(in_region & snp)
    try:
        dosage = _read_hardcalls(
            pgen_path, len(pvar), rows, columns, _allele_offsets(alt), len(psam)
        )
    except RuntimeError as error:  # pgenlib reports header/size problems this way
        raise InputError(f"cannot read as .pgen ({_pgenlib_message(error)})",
                         path=pgen_path) from None
    selected = pvar.iloc[columns]
    genotypes = Genotypes(
        dosage=dosage,
        samples=psam["IID"].to_numpy(dtype=str)[rows],
        variants=pd.DataFrame(
            {
                "chrom": selected["CHROM"].to_numpy(dtype=object),
                "pos": positions[columns],
                "id": selected["ID"].to_numpy(dtype=object),
                "counted": selected["REF"].to_numpy(dtype=object),
                "other": other[columns].astype(object),
            }
        ),
        families=psam["FID"].to_numpy(dtype=str)[rows] if "FID" in psam else None,
        source=str(pgen_path),
    )
    _log_skipped(genotypes, in_region, snp, multiallelic)
    if samples is not None:
        genotypes.filter_log.append(keep_entry(
            samples, len(psam), len(rows),
            paired="FID" in psam and getattr(samples, "families", None) is not None))
    return genotypes


#: pgenlib's messages that name its own parameters, in the fileset's terms.
_PGENLIB_MESSAGES = (
    (re.compile(r"raw_variant_ct == (\d+), but .* contains (\d+) variants"),
     r"the .pvar lists \1 variants, the .pgen holds \2"),
    (re.compile(r"raw_sample_ct == (\d+), but .* contains (\d+) samples"),
     r"the .psam lists \1 samples, the .pgen holds \2"),
    (re.compile(r"^read_range\(\) error \d+$"),
     r"the file looks truncated or corrupt: pgenlib's \g<0>"),
)


def _pgenlib_message(error: RuntimeError) -> str:
    """pgenlib's message as one line of text (it raises bytes, ending in a newline).

    Examples
    --------
    >>> _pgenlib_message(RuntimeError(b"x.pgen is not a .pgen file.\\n"))
    'x.pgen is not a .pgen file'
    >>> _pgenlib_message(RuntimeError("read_range() error 4"))
    "the file looks truncated or corrupt: pgenlib's read_range() error 4"
    """
    text = error.args[0] if error.args else ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = one_line(text).rstrip(".")  # it goes inside the caller's parentheses
    for pattern, replacement in _PGENLIB_MESSAGES:
        match = pattern.search(text)
        if match:
            return match.expand(replacement)
    return text or type(error).__name__


def _log_skipped(genotypes, in_region, snp, multiallelic) -> None:
    n_multi = int(np.count_nonzero(in_region & multiallelic))
    n_other = int(np.count_nonzero(in_region & ~snp & ~multiallelic))
    n_read = int(np.count_nonzero(in_region))
    genotypes.filter_log.append(
        {
            "filter": "biallelic_snp",
            "unit": "variants",
            "removed": n_multi + n_other,
            "reason": f"not a biallelic SNP (multiallelic: {n_multi}, indel or "
            f"symbolic: {n_other}) out of {n_read} variants read",
            "details": {
                "multiallelic": n_multi, "indel_or_symbolic": n_other,
                "records_read": n_read,
            },
        }
    )
