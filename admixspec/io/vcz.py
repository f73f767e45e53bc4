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
homozygous, half calls and ploidy above 2 as missing; a call of a kept
variant with an allele index beyond its ALT alleles (or a negative value
other than ``-1`` and ``-2``) is refused, naming the variant. The genotypes
are decoded one variant chunk at a time, all samples at once, into the int8
matrix, so the memory beyond the result is one chunk's calls.
"""

from __future__ import annotations

import itertools
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.exceptions import InputError, import_optional
from ..core.genotypes import Genotypes
from .calls import (
    SNP_BASES,
    alt_alleles,
    decode_calls,
    first_alt_equal_to_ref,
    read_log_entries,
    same_alleles,
)
from .common import empty_region_error, keep_entry, region_mask, sample_rows
from .streamed import StreamedChunks, StreamedGenotypes, chunk_snps_for, filter_streamed
from .zarr_metadata import check_arrays, present_arrays

__all__ = ["VczChunks", "is_vcz", "open_streamed_vcz", "read_vcz", "store_samples",
           "store_shape"]

logger = logging.getLogger("admixspec")

#: Arrays a VCF Zarr store must hold for admixspec to read it.
REQUIRED_ARRAYS = (
    "call_genotype", "sample_id", "variant_position", "variant_allele",
    "variant_contig", "contig_id",
)
#: Type and dimensions of each array read (see :func:`.zarr_metadata.check_arrays`).
ARRAY_KINDS = {
    "call_genotype": ("integer", ("variants", "samples", "ploidy")),
    "sample_id": ("string", ("samples",)),
    "variant_position": ("integer", ("variants",)),
    "variant_allele": ("string", ("variants", "alleles")),
    "variant_contig": ("integer", ("variants",)),
    "contig_id": ("string", ("contigs",)),
    "variant_id": ("string", ("variants",)),
}
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
    # before Zarr opens an array: no codec that could run code, no odd type
    present = present_arrays(path, REQUIRED_ARRAYS)
    missing = [name for name in REQUIRED_ARRAYS if name not in present]
    if not missing:
        check_arrays(path, ARRAY_KINDS)
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
    bases = np.array(sorted(SNP_BASES))
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


def _alt_counts(alleles: np.ndarray) -> np.ndarray:
    """ALT alleles of each variant (0 for a site without ALT), int16, (n_variants,).

    ``alleles`` is ``variant_allele`` as read by :func:`_strings`.
    """
    return np.count_nonzero(alleles[:, 1:] != "", axis=1).astype(np.int16)


def _site(path: Path, variant: int) -> str:
    """Store variant ``variant`` as ``contig:position (ID)``, for an error message.

    Only that variant's contig, position and ID are read from the store.
    """
    store = _open_store(path)
    contig = _strings(store["contig_id"])[int(store["variant_contig"][variant])]
    site = f"{contig}:{int(store['variant_position'][variant])}"
    if "variant_id" in store:
        name = str(_strings(store["variant_id"][variant : variant + 1])[0])
        if name not in ("", "."):
            site += f" ({name})"
    return site


def _bad_call_error(path: Path, variant: int, values: np.ndarray,
                    n_alt: int) -> InputError:
    """The error for store variant ``variant``, whose calls ``values`` hold a bad one."""
    site = _site(path, variant)
    if int(values.max()) > n_alt:
        return InputError(f"variant {site} has call_genotype allele index "
                          f"{int(values.max())}, but the site has {alt_alleles(n_alt)}",
                          path=path)
    return InputError(f"variant {site} has call_genotype value {int(values.min())} "
                      "(not an allele index, -1 missing or -2 fill)", path=path)


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


def _decode_calls(block: np.ndarray, counts: np.ndarray, variants: np.ndarray,
                  n_alt: np.ndarray, path: Path, out: np.ndarray) -> None:
    """REF dosage of ``call_genotype`` rows ``block`` into ``out`` (samples, variants).

    ``block`` is (variants, samples, ploidy), the calls of store variants
    ``variants``; ``n_alt`` is each store variant's ALT alleles
    (:func:`_alt_counts`); ``counts`` accumulates the haploid, half and
    polyploid call counts (in place).

    Raises
    ------
    InputError
        A call beyond its variant's ALT alleles, or below -2: the first such
        variant, by :func:`_bad_call_error`.
    """
    _, bad = decode_calls(block, n_alt[variants], counts, out=out)
    if bad is not None:
        raise _bad_call_error(path, int(variants[bad]), block[bad],
                              int(n_alt[variants[bad]]))


def _read_dosage(calls, columns: np.ndarray, rows, path: Path, n_alt: np.ndarray):
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
        _decode_calls(block, counts, columns[first:stop], n_alt, path,
                      dosage[:, first:stop])
        if time.monotonic() - last_message >= PROGRESS_INTERVAL:
            last_message = time.monotonic()
            logger.info("%s: read %d of %d variants (%.0f%%)", path, stop, len(columns),
                        100.0 * stop / len(columns))
    return dosage, counts


def _biallelic_snps(store, samples, region, path: Path):
    """The store's sample IDs, chosen rows and SNP columns, for reading or streaming.

    Returns ``(file_samples, rows, columns, alleles, chrom, positions,
    skipped, n_records)``: what :func:`read_vcz` and :func:`open_streamed_vcz`
    both need before decoding any genotype.
    """
    file_samples = _strings(store["sample_id"])
    if len(file_samples) == 0:
        raise InputError("has no samples", path=path)
    if store["call_genotype"].shape[0] == 0:
        raise InputError("has no variant records", path=path)
    rows = sample_rows(file_samples, samples, path, kind=".vcz")
    chrom, positions = _contigs_and_positions(store)
    in_region = np.flatnonzero(region_mask(chrom, positions, region))
    if region is not None and not len(in_region):
        raise empty_region_error(region, pd.unique(chrom), path)
    alleles = _strings(store["variant_allele"])
    snp, skipped = classify_alleles(alleles[in_region])
    columns = in_region[snp]
    _refuse_alt_equal_to_ref(alleles, columns, path)
    return (file_samples, rows, columns, alleles, chrom, positions, skipped,
            len(in_region))


def _refuse_alt_equal_to_ref(alleles, columns, path: Path) -> None:
    """An SNP whose ALT repeats its REF is refused, as the VCF reader and PLINK do."""
    if alleles.shape[1] < 2:
        return
    same = first_alt_equal_to_ref(alleles[columns, 0], alleles[columns, 1])
    if same is not None:
        variant = int(columns[same])
        raise InputError(f"variant {_site(path, variant)} "
                         f"{same_alleles(alleles[variant, 0], alleles[variant, 1])}",
                         path=path)


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
        variants, unknown sample IDs, a kept variant with a call beyond its
        ALT alleles or below -2 (``<store>: variant 1:20 (rs2) has
        call_genotype allele index 3, but the site has 1 ALT allele``).

    Examples
    --------
    >>> read_vcz("no/such/store.vcz")
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.InputError: no/such/store.vcz: file not found
    """
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path=path)
    store = _open_store(path)
    file_samples, rows, columns, alleles, chrom, positions, skipped, n_records = \
        _biallelic_snps(store, samples, region, path)
    dosage, ploidy_counts = _read_dosage(store["call_genotype"], columns, rows, path,
                                         _alt_counts(alleles))
    genotypes = Genotypes(
        dosage=dosage,
        samples=file_samples[rows],
        variants=_variant_table(store, columns, alleles, chrom, positions),
        source=str(path),
    )
    genotypes.filter_log.extend(read_log_entries(skipped, n_records, ploidy_counts))
    if samples is not None:
        genotypes.filter_log.append(keep_entry(samples, len(file_samples), len(rows),
                                               paired=False))
    return genotypes


class VczChunks(StreamedChunks):
    """Chosen samples and SNPs of a VCF Zarr store, decoded one chunk of SNPs at a time.

    Each chunk reads the store's ``call_genotype`` rows that hold its SNPs
    (all samples; Zarr decompresses whole variant chunks) and decodes them
    by :func:`read_vcz`'s rules (REF counted, -1 missing, a call beyond its
    ALT alleles refused). The last span of store rows read is kept, so that a
    store chunk longer than this source's chunk is decompressed once or twice
    per pass (twice when a source chunk straddles its end), not once per
    source chunk it holds.

    Parameters
    ----------
    path : str or os.PathLike
        The store.
    n_samples, n_variants : int
        ``call_genotype``'s samples and variants.
    n_alt : numpy.ndarray, int, shape (n_variants,), optional
        ALT alleles of each store variant; read from ``variant_allele`` on
        the first read when not given. A subset shares it.
    **options
        ``rows``, ``columns``, ``chunk_snps``, ``n_observed``: see
        :class:`admixspec.io.streamed.StreamedChunks`.

    Attributes
    ----------
    ploidy_counts : numpy.ndarray, int64, shape (3,)
        Haploid, half and polyploid calls decoded so far (the VCF reader's
        ``"ploidy"`` log entry counts them over one read).
    """

    def __init__(self, path, n_samples: int, n_variants: int, *, n_alt=None,
                 **options):
        super().__init__(path, n_samples, n_variants, **options)
        self.ploidy_counts = np.zeros(3, dtype=np.int64)
        self._n_alt = n_alt
        self._calls = None  # the store's call_genotype, opened on the first read
        self._span = (0, 0, None)  # (first, stop, calls) of the store rows last read

    def subset(self, **options):
        """:meth:`StreamedChunks.subset`, sharing the ALT allele counts."""
        chunks = super().subset(**options)
        chunks._n_alt = self._n_alt
        return chunks

    def _store_rows(self, first: int, last: int) -> tuple[int, np.ndarray]:
        """Store rows ``first..last`` (all samples): ``(offset, calls)`` holding them."""
        span_first, span_stop, calls = self._span
        if not (span_first <= first and last < span_stop):
            if self._calls is None:
                store = _open_store(self.path)
                self._calls = store["call_genotype"]
                if self._n_alt is None:
                    self._n_alt = _alt_counts(_strings(store["variant_allele"]))
            size = int(self._calls.chunks[0])
            span_first = first - first % size
            span_stop = min(-(-(last + 1) // size) * size, self.n_variants)
            calls = np.asarray(self._calls[span_first:span_stop])
            self._span = (span_first, span_stop, calls)
        return span_first, calls

    def _decode_into(self, out: np.ndarray, offset: int, start: int, stop: int):
        """Decode kept SNPs ``start:stop`` into ``out``, columns ``offset`` onward."""
        wanted = self.columns[start:stop]
        span_first, calls = self._store_rows(int(wanted[0]), int(wanted[-1]))
        block = calls[wanted - span_first]
        if self.n_individuals != self.n_samples:
            block = block[:, self.rows]
        _decode_calls(block, self.ploidy_counts, wanted, self._n_alt, self.path,
                      out[:, offset:offset + len(wanted)])


def store_shape(path, *, samples=None, region: str | None = None) -> tuple[int, int]:
    """Samples and variants of a VCF Zarr store that ``samples`` and ``region`` select.

    Without ``region``, from its array shapes (variant records, and
    ``len(samples)`` samples when given); with it, the kept samples and the
    biallelic SNPs in the region, as :func:`read_vcz` chooses them (positions
    and alleles read, no genotype).
    """
    store = _open_store(Path(path))
    if region is None:
        n_variants, n_samples = store["call_genotype"].shape[:2]
        return (int(n_samples) if samples is None else len(samples)), int(n_variants)
    _, rows, columns, *_ = _biallelic_snps(store, samples, region, Path(path))
    return len(rows), len(columns)


def store_samples(path) -> np.ndarray:
    """The sample IDs of a VCF Zarr store, in its order (str)."""
    return _strings(_open_store(Path(path))["sample_id"])


def open_streamed_vcz(path, *, memory_bytes: float, samples=None, region=None,
                      filters: dict) -> StreamedGenotypes:
    """:func:`admixspec.io.streamed.open_streamed` for a VCF Zarr store."""
    path = Path(path)
    store = _open_store(path)
    file_samples, rows, columns, alleles, chrom, positions, skipped, n_records = \
        _biallelic_snps(store, samples, region, path)
    n_variants, n_samples = store["call_genotype"].shape[:2]
    chunks = VczChunks(path, n_samples, n_variants, n_alt=_alt_counts(alleles),
                       rows=rows, columns=columns,
                       chunk_snps=chunk_snps_for(len(rows), memory_bytes / 8))
    chunks, log, filtered = filter_streamed(chunks, **filters)
    # the per-SNP pass decoded every kept sample's calls once, as read_vcz does
    read_log = read_log_entries(skipped, n_records, filtered.ploidy_counts)
    if samples is not None:  # after the reader's entries, before the filters'
        read_log.append(keep_entry(samples, len(file_samples), len(rows), paired=False))
    return StreamedGenotypes(
        chunks, file_samples[chunks.rows], _variant_table(store, chunks.columns, alleles,
                                                          chrom, positions),
        None, str(path), read_log + log, float(memory_bytes))

