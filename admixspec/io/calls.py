"""Genotype calls by the VCF rules, shared by the VCF/BCF and VCF Zarr readers.

Both readers count REF (allele 0), read haploid calls as homozygous (as PLINK
1 stores them), set half calls (``0/.``) and calls of ploidy above 2 missing,
keep only biallelic SNPs, and record what they skipped in the same filter-log
entries.
"""

from __future__ import annotations

import numpy as np

from ..core.genotypes import MISSING

__all__ = ["SNP_BASES", "alt_alleles", "decode_calls", "first_alt_equal_to_ref",
           "first_out_of_range", "read_log_entries", "same_alleles"]

#: Allele letters of a SNP (an allele of one of these bases).
SNP_BASES = frozenset("ACGTNacgtn")


def decode_calls(calls: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Dosage of allele 0 (REF) from htslib allele indices.

    Parameters
    ----------
    calls : int16, shape (b, n, ploidy + 1)
        ``genotype.array()`` rows: allele indices, -1 missing, -2 padding
        (haploid), last column the phase flag.
    counts : int64, shape (3,)
        Accumulates haploid, half and polyploid call counts (in place).

    Returns
    -------
    int8, shape (b, n)
    """
    first = calls[..., 0]
    second = calls[..., 1] if calls.shape[-1] > 2 else np.full_like(first, -2)
    haploid = (second == -2) & (first >= 0)
    half = ((first < 0) & (second >= 0)) | ((first >= 0) & (second == -1))
    dosage = (first == 0).astype(np.int8) + (second == 0).astype(np.int8)
    dosage[haploid] *= 2
    missing = (first < 0) | (second == -1) | half
    if calls.shape[-1] > 3:
        poly = (calls[..., 2:-1] != -2).any(axis=-1) & ~missing
        missing |= poly
        counts[2] += int(np.count_nonzero(poly))
    dosage[missing] = MISSING
    counts[0] += int(np.count_nonzero(haploid))
    counts[1] += int(np.count_nonzero(half))
    return dosage


def first_out_of_range(calls: np.ndarray, n_alt: np.ndarray) -> int | None:
    """The first record with an allele index beyond its ALT alleles or below -2.

    htslib parses ``0/5`` at a site with one ALT without complaint, and
    :func:`decode_calls` would count the 5 as ALT: a malformed call would
    read as a real heterozygote. -1 (missing) and -2 (fill) are the only
    negative values (htslib yields no other; a VCF Zarr store may).

    Parameters
    ----------
    calls : int16, shape (b, n, ploidy + 1)
        As for :func:`decode_calls`.
    n_alt : int, shape (b,)
        ALT alleles of each record (0 for ALT ``.``).

    Returns
    -------
    int or None
        The record's index in ``calls``, None when every index is in range.

    Examples
    --------
    >>> import numpy as np
    >>> calls = np.array([[[0, 1, 0]], [[0, 5, 0]]], dtype=np.int16)
    >>> first_out_of_range(calls, np.array([1, 1]))
    1
    """
    alleles = calls[..., :-1]
    if not alleles.size:
        return None
    # a record's extremes: one reduction each, no boolean matrix
    bad = ((alleles.max(axis=(1, 2)) > np.asarray(n_alt))
           | (alleles.min(axis=(1, 2)) < -2))
    records = np.flatnonzero(bad)
    return int(records[0]) if len(records) else None


def first_alt_equal_to_ref(ref, alt) -> int | None:
    """The first site whose ALT allele is its REF allele (any case), if any.

    PLINK refuses such a site ("ALT allele duplicates REF allele"), and so
    do the readers (:func:`same_alleles` words it).

    Parameters
    ----------
    ref, alt : array_like of str, shape (n_sites,)
        ``alt`` empty where a site has no ALT.

    Examples
    --------
    >>> first_alt_equal_to_ref(["A", "C", "G"], ["G", "c", ""])
    1
    """
    ref, alt = np.asarray(ref, dtype=str), np.asarray(alt, dtype=str)
    same = np.flatnonzero((alt != "") & (np.char.upper(ref) == np.char.upper(alt)))
    return int(same[0]) if len(same) else None


def same_alleles(ref: str, alt: str) -> str:
    """The readers' words for a site whose ALT repeats its REF."""
    return f"has ALT allele {str(alt)!r} equal to its REF allele {str(ref)!r}"


def alt_alleles(n_alt: int) -> str:
    """``"1 ALT allele"`` or ``"n ALT alleles"``, for the readers' messages."""
    return "1 ALT allele" if n_alt == 1 else f"{n_alt} ALT alleles"


def read_log_entries(skipped: dict, n_records: int, ploidy_counts) -> list[dict]:
    """The ``"biallelic_snp"`` and ``"ploidy"`` filter-log entries of a VCF read.

    Parameters
    ----------
    skipped : dict
        Variants skipped: ``{"multiallelic", "indel", "symbolic_or_other"}``.
    n_records : int
        Variant records read.
    ploidy_counts : numpy.ndarray, int, shape (3,)
        Haploid calls read as homozygous, half calls and polyploid calls set
        missing.
    """
    return [
        {
            "filter": "biallelic_snp",
            "unit": "variants",
            "removed": int(sum(skipped.values())),
            "reason": "not a biallelic SNP (" + ", ".join(
                f"{k}: {v}" for k, v in skipped.items()
            ) + f") out of {n_records} records read",
            "details": {**skipped, "records_read": n_records},
        },
        {
            "filter": "ploidy",
            "unit": "genotype calls",
            "removed": int(ploidy_counts[1] + ploidy_counts[2]),
            "reason": (
                f"half calls ({ploidy_counts[1]}) and calls of ploidy > 2 "
                f"({ploidy_counts[2]}) set missing; haploid calls "
                f"({ploidy_counts[0]}) read as homozygous"
            ),
            "details": {
                "haploid_as_homozygous": int(ploidy_counts[0]),
                "half_calls_missing": int(ploidy_counts[1]),
                "polyploid_missing": int(ploidy_counts[2]),
            },
        },
    ]
