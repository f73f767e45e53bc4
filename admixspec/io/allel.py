"""scikit-allel interoperability: :func:`from_allel` turns genotype calls into Genotypes.

scikit-allel stores calls as allele indices, shaped (variants, samples,
ploidy), ``-1`` for a missing allele. Its ``to_n_alt()`` is the wrong bridge
for admixspec: it counts ALT, is SNP-major, and fills missing calls with 0
(a homozygous genotype). :func:`from_allel` instead reads the calls as the
VCF reader does (:mod:`admixspec.io.vcf`):

* the counted allele is REF (allele 0), so P is the REF frequency;
* a call with any missing allele is missing (:data:`~admixspec.core.genotypes.MISSING`);
  scikit-allel stores a haploid call in a diploid array as a half call
  (``[0, -1]``), so such calls are missing here, where the VCF reader reads
  them as homozygous; a ploidy-1 array is read as homozygous calls;
* a call that the array's scikit-allel ``mask`` (or a numpy masked array's
  mask) hides is missing, as scikit-allel counts it;
* only biallelic SNPs are kept: with ``variants`` the REF/ALT rules of the
  VCF reader apply (multiallelic, indel and symbolic sites skipped); with or
  without it, variants whose calls use an allele index above 1 are skipped as
  multiallelic (an ALT field read with one column hides the others). The
  counts are in the ``"biallelic_snp"`` entry of :attr:`Genotypes.filter_log`.

scikit-allel is the optional ``allel`` extra; this module only needs numpy
and accepts any array of that shape (``GenotypeArray``,
``GenotypeChunkedArray``, ``GenotypeDaskArray`` or a plain ndarray), read
a block of variants at a time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.exceptions import InputError
from ..core.genotypes import MISSING, Genotypes, placeholder_variants
from .calls import SNP_BASES, first_alt_equal_to_ref, same_alleles

__all__ = ["from_allel"]

#: Variants converted per block (bounds the temporaries for chunked arrays).
BLOCK_SIZE = 8192
_SNP_BASES = np.array(sorted(SNP_BASES))


def _computed(array) -> np.ndarray:
    return np.asarray(array.compute() if hasattr(array, "compute") else array)


def _block(genotype_array, start: int, stop: int) -> np.ndarray:
    """Calls of variants ``start:stop`` as an int ndarray (computes dask blocks).

    Calls that a scikit-allel ``mask`` (shape (variants, samples)) or a numpy
    masked array hides are missing (-1), as scikit-allel counts them.
    """
    part = genotype_array[start:stop]
    mask = getattr(part, "mask", None)
    # scikit-allel's wrappers hold the calls in .values (a dask array's compute
    # fails on a masked GenotypeDaskArray)
    calls = _computed(getattr(part, "values", part))
    if mask is None:
        return calls
    mask = _computed(mask).astype(bool)
    if mask.ndim == 3:  # numpy.ma: per allele
        mask = mask.any(axis=2)
    if not mask.any():
        return calls
    calls = np.array(calls)
    calls[mask] = -1
    return calls


def _ref_dosage(calls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """REF copies per call, and which variants use an allele index above 1.

    Parameters
    ----------
    calls : int, shape (b, n_samples, ploidy)

    Returns
    -------
    dosage : int8, shape (b, n_samples)
        Copies of allele 0 (a haploid call counts twice), -1 missing.
    multiallelic : bool, shape (b,)
    """
    dosage = np.count_nonzero(calls == 0, axis=2).astype(np.int8)
    if calls.shape[2] == 1:
        dosage *= 2  # a haploid call is read as homozygous, as the VCF reader does
    dosage[(calls < 0).any(axis=2)] = MISSING
    return dosage, (calls > 1).any(axis=(1, 2))


def _column(variants, name: str) -> np.ndarray | None:
    """A field of an ``allel.read_vcf`` callset, or a column of a table."""
    for key in (name, f"variants/{name}"):
        if key in variants:
            return np.asarray(variants[key])
    return None


def _alt_matrix(variants, n_variants: int) -> np.ndarray:
    """ALT alleles as str, shape (n_variants, n_alt_columns), '' where absent."""
    alt = _column(variants, "ALT")
    if alt is None:
        numbered = sorted(
            (key for key in variants if str(key).startswith("ALT_")),
            key=lambda key: int(str(key)[4:]),
        )
        if not numbered:
            raise InputError("variants has no ALT (or ALT_1, ALT_2, ...) field")
        alt = np.column_stack([np.asarray(variants[key]) for key in numbered])
    alt = alt.astype(str).reshape(n_variants, -1)
    return np.where(np.isin(alt, [".", "nan", "None"]), "", alt)


def _variant_table(variants, n_variants: int) -> tuple[pd.DataFrame, dict]:
    """Variant annotations and the VCF reader's skip rules, vectorised.

    Returns the table of all variants (``keep`` column: biallelic SNP) and
    the counts of skipped sites by reason.
    """
    ref = _column(variants, "REF")
    if ref is None:
        raise InputError("variants has no REF field")
    ref = ref.astype(str)
    if len(ref) != n_variants:
        raise InputError(f"variants has {len(ref)} rows but genotype_array has "
                         f"{n_variants}")
    alt = _alt_matrix(variants, n_variants)
    n_alt = np.count_nonzero(alt != "", axis=1)
    first_alt = np.where(n_alt > 0, alt[:, 0], "0")
    multi = n_alt > 1
    long = (np.char.str_len(ref) != 1) | (np.char.str_len(first_alt) != 1)
    indel = ~multi & long & np.char.isalpha(ref) & np.char.isalpha(first_alt)
    bad_alt = (n_alt > 0) & ~np.isin(first_alt, _SNP_BASES)
    bad_base = ~np.isin(ref, _SNP_BASES) | bad_alt
    other = ~multi & ~indel & (long | bad_base)
    defaults = {
        "CHROM": np.full(n_variants, "1"),
        "POS": np.arange(1, n_variants + 1),
        "ID": np.full(n_variants, "."),
    }
    chrom, pos, ids = (
        default if (column := _column(variants, name)) is None else column
        for name, default in defaults.items()
    )
    table = pd.DataFrame(
        {
            "chrom": chrom.astype(str),
            "pos": pos.astype(np.int64),
            "id": ids.astype(str),
            "counted": ref,
            "other": first_alt,
        }
    )
    table["keep"] = ~(multi | indel | other)
    kept = np.flatnonzero(table["keep"].to_numpy())
    same = first_alt_equal_to_ref(ref[kept], np.where(n_alt > 0, first_alt, "")[kept])
    if same is not None:  # the VCF reader and PLINK refuse it
        first = int(kept[same])
        raise InputError(f"variant {first} ({table['chrom'].iat[first]}:"
                         f"{table['pos'].iat[first]}) "
                         f"{same_alleles(ref[first], first_alt[first])}")
    skipped = {
        "multiallelic": int(multi.sum()), "indel": int(indel.sum()),
        "symbolic_or_other": int(other.sum()),
    }
    return table, skipped


def _generated_variants(n_variants: int) -> pd.DataFrame:
    table = placeholder_variants(n_variants, counted="REF", other="ALT")
    table["keep"] = np.ones(n_variants, dtype=bool)
    return table


def _check_shape(genotype_array, samples) -> tuple[int, int, int]:
    shape = tuple(getattr(genotype_array, "shape", ()))
    if len(shape) != 3:
        raise InputError(
            "genotype_array must be 3-d (variants x samples x ploidy), as "
            f"allel.GenotypeArray is; got shape {shape}"
        )
    if shape[2] > 2:
        raise InputError(
            f"genotype_array has ploidy {shape[2]}; admixspec models diploid genotypes"
        )
    if samples is not None and len(samples) != shape[1]:
        raise InputError(
            f"samples has {len(samples)} IDs but genotype_array has {shape[1]} samples"
        )
    return shape


def from_allel(genotype_array, *, samples=None, variants=None) -> Genotypes:
    """Genotypes from scikit-allel calls, counting REF as the VCF reader does.

    Parameters
    ----------
    genotype_array : allel.GenotypeArray or array_like
        Allele indices, int, shape (n_variants, n_samples, ploidy), ploidy
        1 or 2, negative for missing (``callset["calldata/GT"]`` of
        ``allel.read_vcf``).
    samples : sequence of str, optional
        Sample IDs (``callset["samples"]``); default ``ind0, ind1, ...``.
    variants : mapping or pandas.DataFrame, optional
        Variant fields, either the ``allel.read_vcf`` callset itself (keys
        ``variants/CHROM``, ``variants/POS``, ``variants/ID``,
        ``variants/REF``, ``variants/ALT``) or a table with columns
        ``CHROM, POS, ID, REF`` and ``ALT`` (2-d) or ``ALT_1, ALT_2, ...``
        (``allel.vcf_to_dataframe``). REF is required; the rest default to
        generated values.

    Returns
    -------
    Genotypes
        dosage int8, shape (n_samples, n_biallelic_snps): copies of REF, -1
        missing; ``filter_log`` has the ``"biallelic_snp"`` entry.

    Raises
    ------
    InputError
        Not a 3-d array, ploidy above 2, or ``samples``/``variants`` of the
        wrong length or without REF.

    Examples
    --------
    >>> import numpy as np
    >>> calls = np.array([[[0, 0], [0, 1], [-1, -1]],
    ...                   [[1, 1], [0, 2], [0, 0]]], dtype=np.int8)
    >>> from_allel(calls, samples=["a", "b", "c"]).dosage.tolist()
    [[2], [1], [-1]]
    """
    n_variants, n_samples, _ = _check_shape(genotype_array, samples)
    if variants is None:
        table, skipped = _generated_variants(n_variants), {"multiallelic": 0}
    else:
        table, skipped = _variant_table(variants, n_variants)
    dosage = np.empty((n_samples, n_variants), dtype=np.int8)
    seen_multi = np.zeros(n_variants, dtype=bool)
    for start in range(0, n_variants, BLOCK_SIZE):
        stop = min(start + BLOCK_SIZE, n_variants)
        block, seen_multi[start:stop] = _ref_dosage(_block(genotype_array, start, stop))
        dosage[:, start:stop] = block.T
    # with variants too: an ALT field cut to one allele (read_vcf's numbers=
    # {"ALT": 1}) hides a third allele that the calls still use
    hidden = seen_multi & table["keep"].to_numpy()
    table["keep"] &= ~seen_multi
    skipped["multiallelic"] += int(hidden.sum())
    keep = table.pop("keep").to_numpy()
    if not keep.all():
        dosage = dosage[:, keep]
    if samples is None:
        samples = [f"ind{i}" for i in range(n_samples)]
    genotypes = Genotypes(
        dosage=dosage,
        samples=np.asarray(samples).astype(str),
        variants=table[keep].reset_index(drop=True),
        source="scikit-allel",
    )
    genotypes.filter_log.append(
        {
            "filter": "biallelic_snp",
            "unit": "variants",
            "removed": int(sum(skipped.values())),
            "reason": "not a biallelic SNP ("
            + ", ".join(f"{k}: {v}" for k, v in skipped.items())
            + f") out of {n_variants} variants",
            "details": {**skipped, "records_read": n_variants},
        }
    )
    return genotypes
