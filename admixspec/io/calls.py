"""Genotype calls by the VCF rules, shared by the VCF/BCF and VCF Zarr readers.

Both readers count REF (allele 0), read haploid calls as homozygous (as PLINK
1 stores them), set half calls (``0/.``) and calls of ploidy above 2 missing,
keep only biallelic SNPs, and record what they skipped in the same filter-log
entries.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SNP_BASES", "alt_alleles", "decode_calls", "first_alt_equal_to_ref",
           "read_log_entries", "same_alleles"]

#: Allele letters of a SNP (an allele of one of these bases).
SNP_BASES = frozenset("ACGTNacgtn")


def decode_calls(alleles: np.ndarray, n_alt, counts: np.ndarray,
                 out: np.ndarray | None = None) -> tuple[np.ndarray, int | None]:
    """Dosage of allele 0 (REF) from allele indices, and the first record out of range.

    One read of ``alleles`` (a numba kernel,
    :func:`admixspec.io._call_kernels.decode_records`). htslib parses ``0/5``
    at a site with one ALT without complaint, and counting the 5 as ALT would
    read a malformed call as a real heterozygote, so each record's indices
    are checked against its ALT alleles: -1 (missing) and -2 (fill) are the
    only negative values (htslib yields no other; a VCF Zarr store may).

    Parameters
    ----------
    alleles : int8 or int16, shape (b, n, ploidy)
        Allele indices (``genotype.array()`` rows without their phase
        column, or ``call_genotype`` rows), -1 missing, -2 padding (haploid).
    n_alt : array_like of int, shape (b,)
        ALT alleles of each record (0 for ALT ``.``).
    counts : int64, shape (3,)
        Accumulates haploid, half and polyploid call counts (in place),
        unless a record is out of range.
    out : int8, shape (n, b), optional
        Where the dosage goes (a new array when not given).

    Returns
    -------
    dosage : int8, shape (n, b)
        Samples by records: -1 for missing, half and polyploid calls.
    out_of_range : int or None
        The first record with an allele index beyond its ALT alleles or below
        -2, None when every index is in range.

    Examples
    --------
    >>> import numpy as np
    >>> alleles = np.array([[[0, 1]], [[0, 5]]], dtype=np.int16)
    >>> decode_calls(alleles, [1, 1], np.zeros(3, dtype=np.int64))[1]
    1
    """
    # imported here, not at the top: the readers' import must not import numba
    from ._call_kernels import OUT_OF_RANGE, decode_records

    if out is None:
        out = np.empty(alleles.shape[1::-1], dtype=np.int8)
    tallies = np.zeros((alleles.shape[0], 4), dtype=np.int64)
    decode_records(alleles, np.asarray(n_alt, dtype=np.int64), out, tallies)
    bad = np.flatnonzero(tallies[:, OUT_OF_RANGE])
    if len(bad):
        return out, int(bad[0])
    counts += tallies[:, :OUT_OF_RANGE].sum(axis=0)
    return out, None


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
