"""VCF Zarr (``.vcz``) reading: the bio2zarr / VCF Zarr layout, read in variant blocks.

VCF Zarr (https://github.com/sgkit-dev/vcf-zarr-spec) stores a VCF's fields
as chunked arrays: ``call_genotype`` (variants x samples x ploidy, ``-1`` for
a missing allele, ``-2`` for the fill of a shorter ploidy), ``sample_id``,
``variant_position``, ``variant_allele`` (REF first, ``""`` fill),
``variant_contig`` (an index into ``contig_id``) and ``variant_id``. Make
one from a VCF with bio2zarr's ``vcf2zarr convert in.vcf.gz out.vcz``.

The reading rules are the VCF reader's (:mod:`admixspec.io.vcf`), so a
``.vcz`` and the VCF it came from give the same matrix: REF is the counted
allele; only biallelic SNPs are kept (a site without ALT is kept as a
monomorphic site with other allele ``0``); haploid calls read as
homozygous, half calls and ploidy above 2 as missing. The genotypes are
decoded one variant chunk at a time, all samples at once, into the int8
matrix, so the memory beyond the result is one chunk's calls.
"""

from __future__ import annotations

import itertools
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..exceptions import InputError, import_optional
from ..genotypes import Genotypes
from .plink import _region_mask, _sample_rows
from .vcf import _SNP_BASES, _decode_block, read_log_entries

__all__ = ["is_vcz", "read_vcz"]

logger = logging.getLogger("admixspec")

#: Arrays a VCF Zarr store must hold for admixspec to read it.
REQUIRED_ARRAYS = (
    "call_genotype", "sample_id", "variant_position", "variant_allele",
    "variant_contig", "contig_id",
)
#: Seconds between read-progress log lines.
PROGRESS_INTERVAL = 10.0


def is_vcz(path) -> bool:
    """Whether ``path`` is a Zarr store (directory with Zarr v2 or v3 metadata).

    Examples
    --------
    >>> is_vcz("no/such/store.vcz")
    False
    """
    path = Path(path)
    return path.is_dir() and any(
        (path / name).exists() for name in ("zarr.json", ".zgroup", ".zmetadata")
    )


def _open_store(path: Path):
    zarr = import_optional("zarr", extra="zarr", needed_for="reading VCF Zarr")
    if not path.exists():
        raise InputError("file not found", path=path)
    try:
        store = zarr.open_group(str(path), mode="r")
    except (OSError, ValueError, KeyError) as error:  # zarr 2 and 3 differ
        raise InputError(f"not a readable Zarr store ({error})", path=path) from None
    missing = [name for name in REQUIRED_ARRAYS if name not in store]
    if missing:
        raise InputError(
            f"not a VCF Zarr store: no {', '.join(missing)} array(s)", path=path
        )
    return store


def _strings(array) -> np.ndarray:
    """Read a Zarr string array (object, bytes or StringDType) as numpy ``str``."""
    values = np.asarray(array[...])
    if values.dtype.kind == "S":
        return np.char.decode(values, "utf-8")
    if values.dtype.kind == "U":
        return values
    # object (zarr 2) or StringDType (zarr 3): numpy needs an explicit width
    return np.array(values.tolist(), dtype=str)


def classify_alleles(alleles: np.ndarray) -> tuple[np.ndarray, dict]:
    """Which variants are biallelic SNPs, with counts of the others by kind.

    Parameters
    ----------
    alleles : numpy.ndarray of str, shape (n_variants, n_alleles)
        REF then ALT alleles, ``""`` where a site has fewer alleles.

    Returns
    -------
    snp : numpy.ndarray of bool, shape (n_variants,)
    skipped : dict
        ``{"multiallelic", "indel", "symbolic_or_other"}`` counts, as the VCF
        reader's ``"biallelic_snp"`` log entry.

    Examples
    --------
    >>> import numpy as np
    >>> snp, skipped = classify_alleles(np.array([["A", "G"], ["A", "AT"], ["C", ""]]))
    >>> snp.tolist(), skipped["indel"]
    ([True, False, True], 1)
    """
    ref = alleles[:, 0]
    alt = alleles[:, 1] if alleles.shape[1] > 1 else np.full(len(ref), "")
    n_alt = (alleles[:, 1:] != "").sum(axis=1)
    has_alt = alt != ""
    checked_alt = np.where(has_alt, alt, "0")  # the VCF reader's ALT for "."
    multiallelic = n_alt > 1
    not_single = (np.strings.str_len(ref) != 1) | (np.strings.str_len(checked_alt) != 1)
    letters = np.strings.isalpha(ref) & np.strings.isalpha(checked_alt)
    indel = ~multiallelic & not_single & letters
    bases = np.array(sorted(_SNP_BASES))
    other = ~multiallelic & ~indel & (
        not_single | ~np.isin(ref, bases) | (has_alt & ~np.isin(alt, bases))
    )
    skipped = {
        "multiallelic": int(multiallelic.sum()),
        "indel": int(indel.sum()),
        "symbolic_or_other": int(other.sum()),
    }
    return ~(multiallelic | indel | other), skipped


def _contigs_and_positions(store) -> tuple[np.ndarray, np.ndarray]:
    """Each variant's contig name (str) and position (int64), shape (n_variants,)."""
    contigs = _strings(store["contig_id"])
    chrom = contigs[np.asarray(store["variant_contig"][...])]
    return chrom, np.asarray(store["variant_position"][...], dtype=np.int64)


def _variant_table(store, columns, alleles, chrom, positions) -> pd.DataFrame:
    if "variant_id" in store:
        ids = _strings(store["variant_id"])[columns]
        ids = np.where(ids == "", ".", ids)
    else:
        ids = np.full(len(columns), ".")
    other = alleles[columns, 1] if alleles.shape[1] > 1 else np.full(len(columns), "")
    return pd.DataFrame(
        {
            "chrom": pd.array(chrom[columns], dtype=object),
            "pos": positions[columns],
            "id": pd.array(ids, dtype=object),
            "counted": pd.array(alleles[columns, 0], dtype=object),
            "other": pd.array(np.where(other == "", "0", other), dtype=object),
        }
    )


def _read_dosage(calls, columns: np.ndarray, rows, path: Path):
    """Decode the chosen variants' calls chunk by chunk into an int8 matrix.

    Returns the (n_samples, n_columns) dosage and the VCF reader's ploidy
    counts (haploid, half, polyploid).
    """
    every_sample = len(rows) == calls.shape[1]
    n_samples = len(rows)
    dosage = np.empty((n_samples, len(columns)), dtype=np.int8)
    counts = np.zeros(3, dtype=np.int64)
    chunk = int(calls.chunks[0])
    bounds = np.searchsorted(columns, np.arange(0, calls.shape[0] + chunk, chunk))
    last_message = time.monotonic()
    for first, stop in itertools.pairwise(bounds):
        if first == stop:
            continue
        start = columns[first] - columns[first] % chunk
        chunk_calls = np.asarray(calls[start : columns[stop - 1] + 1])
        block = chunk_calls[columns[first:stop] - start]
        if not every_sample:
            block = block[:, rows]
        # the VCF decoder's layout: alleles then a trailing phase column
        padded = np.concatenate([block, np.zeros_like(block[..., :1])], axis=-1)
        dosage[:, first:stop] = _decode_block(padded, counts).T
        if time.monotonic() - last_message >= PROGRESS_INTERVAL:
            last_message = time.monotonic()
            logger.info("%s: read %d of %d variants (%.0f%%)", path, stop, len(columns),
                        100.0 * stop / len(columns))
    return dosage, counts


def read_vcz(path, *, samples=None, region: str | None = None) -> Genotypes:
    """Read biallelic-SNP dosages from a VCF Zarr store (e.g. made by ``vcf2zarr``).

    Parameters
    ----------
    path : str or os.PathLike
        The store's directory (conventionally ``*.vcz``).
    samples : sequence of str, optional
        Sample IDs to keep (they must all exist); rows keep the store's order.
    region : str, optional
        ``chrom:start-end`` (1-based, inclusive); ``chrom`` must be a
        ``contig_id``.

    Returns
    -------
    Genotypes
        dosage int8, shape (n_samples, n_biallelic_snps): copies of REF, -1
        missing; ``filter_log`` holds the ``"biallelic_snp"`` and ``"ploidy"``
        entries of :func:`admixspec.io.read_vcf`. A read longer than
        :data:`PROGRESS_INTERVAL` seconds logs its progress.

    Raises
    ------
    MissingDependencyError
        zarr is not installed.
    InputError
        Not a Zarr store, a required array missing, no samples or no
        variants, unknown sample IDs.

    Examples
    --------
    >>> read_vcz("no/such/store.vcz")
    Traceback (most recent call last):
    ...
    admixspec.exceptions.InputError: no/such/store.vcz: file not found
    """
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path=path)
    store = _open_store(path)
    file_samples = _strings(store["sample_id"])
    if len(file_samples) == 0:
        raise InputError("has no samples", path=path)
    calls = store["call_genotype"]
    if calls.shape[0] == 0:
        raise InputError("has no variant records", path=path)
    rows = _sample_rows(file_samples, samples, path, kind=".vcz")
    chrom, positions = _contigs_and_positions(store)
    in_region = np.flatnonzero(_region_mask(chrom, positions, region))
    alleles = _strings(store["variant_allele"])
    snp, skipped = classify_alleles(alleles[in_region])
    columns = in_region[snp]
    n_records = len(in_region)
    dosage, ploidy_counts = _read_dosage(calls, columns, rows, path)
    genotypes = Genotypes(
        dosage=dosage,
        samples=file_samples[rows],
        variants=_variant_table(store, columns, alleles, chrom, positions),
        source=str(path),
    )
    genotypes.filter_log.extend(read_log_entries(skipped, n_records, ploidy_counts))
    return genotypes
