"""The in-memory genotype container shared by readers, filters and estimators.

Orientation (everywhere in admixspec): dosages are shaped
``(n_individuals, n_snps)``, dtype ``int8``, values 0/1/2 = number of copies of
the *counted* allele, :data:`MISSING` (-1) for a missing call. Readers
transpose SNP-major files at the boundary; the numerical core never sees the
other orientation.

The counted allele follows ADMIXTURE: for PLINK input it is the ``.bim``
column-6 allele (A2); for VCF/BCF input it is REF, which is what
``plink --vcf X --keep-allele-order --make-bed`` puts in column 6, so the same
data read as VCF and as PLINK gives identical matrices. ADMIXTURE's and
admixspec's P is the frequency of this counted allele.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .exceptions import InputError

__all__ = [
    "Genotypes",
    "MISSING",
    "VARIANT_COLUMNS",
    "allele_counts",
    "filter_lines",
    "genotype_summary",
    "minor_allele_counts",
    "snp_statistics",
    "summary_lines",
]

#: Dosage value that marks a missing genotype call.
MISSING: int = -1

#: Columns of :attr:`Genotypes.variants`, in order.
VARIANT_COLUMNS = ("chrom", "pos", "id", "counted", "other")

#: SNP columns per block when streaming counts (int64 temporaries stay small).
_COLUMN_BLOCK = 8192


@dataclass
class Genotypes:
    """Genotype dosages with their sample and variant annotations.

    Attributes
    ----------
    dosage : numpy.ndarray, int8, shape (n_individuals, n_snps)
        Copies of the counted allele (0, 1, 2) or :data:`MISSING`.
    samples : numpy.ndarray of str, shape (n_individuals,)
        Sample IDs in input order (VCF header order, or ``.fam`` IID column).
    variants : pandas.DataFrame, n_snps rows
        Columns ``chrom`` (str), ``pos`` (int, 1-based), ``id`` (str),
        ``counted`` (the allele whose dosage is stored, and whose frequency
        P reports) and ``other`` (the second allele).
    families : numpy.ndarray of str, shape (n_individuals,), optional
        PLINK family IDs (``.fam`` column 1), or ``None`` for VCF input.
    source : str, optional
        Path the data were read from, for messages and provenance.
    filter_log : list of dict
        One entry per filter applied: ``{"filter", "unit", "removed", "reason"}``.
    """

    dosage: np.ndarray
    samples: np.ndarray
    variants: pd.DataFrame
    families: np.ndarray | None = None
    source: str | None = None
    filter_log: list = field(default_factory=list)

    def __post_init__(self):
        self.dosage = np.asarray(self.dosage)
        if self.dosage.dtype != np.int8:
            from .ml.likelihood import check_dosage  # values are checked before the cast

            self.dosage = check_dosage(self.dosage)
        self.samples = np.asarray(self.samples, dtype=str)
        self.check_shape()

    def check_shape(self) -> None:
        """Check that :attr:`dosage` is (one row per sample, one column per variant).

        Raises
        ------
        InputError
            Otherwise, saying so when the dosage fits transposed (SNP-major).
        """
        shape = tuple(np.shape(self.dosage))
        expected = (len(self.samples), len(self.variants))
        if len(shape) != 2:
            raise InputError(
                f"dosage must be 2-d (individuals x SNPs), got shape {shape}"
            )
        if shape != expected:
            hint = ""
            if shape[::-1] == expected:
                hint = "; it is SNP-major (transposed): individuals x SNPs expected"
            raise InputError(
                f"dosage has shape {shape} but there are {expected[0]} sample IDs and "
                f"{expected[1]} variants{hint}"
            )

    @property
    def n_individuals(self) -> int:
        """Number of individuals (rows of :attr:`dosage`)."""
        return self.dosage.shape[0]

    @property
    def n_snps(self) -> int:
        """Number of SNPs (columns of :attr:`dosage`)."""
        return self.dosage.shape[1]

    @property
    def missing_fraction(self) -> float:
        """Fraction of genotype calls that are missing."""
        if self.dosage.size == 0:
            return 0.0
        return float(np.count_nonzero(self.dosage == MISSING)) / self.dosage.size

    def subset(self, individuals=None, snps=None) -> "Genotypes":
        """Return a new object restricted to the given rows and/or columns.

        Parameters
        ----------
        individuals, snps : array_like of int or bool, optional
            Indices or masks; ``None`` keeps all.
        """
        rows = slice(None) if individuals is None else _indices(individuals)
        cols = slice(None) if snps is None else _indices(snps)
        # np.take returns C-ordered copies; dosage[:, cols] is F-ordered, and
        # making it C-contiguous was a second copy of the matrix
        dosage = self.dosage if individuals is None else np.take(self.dosage, rows, 0)
        dosage = dosage if snps is None else np.take(dosage, cols, 1)
        variants = self.variants.iloc[cols].reset_index(drop=True)
        families = None if self.families is None else self.families[rows]
        return Genotypes(
            dosage=dosage.copy() if dosage is self.dosage else dosage,
            samples=self.samples[rows],
            variants=variants,
            families=families,
            source=self.source,
            filter_log=list(self.filter_log),
        )

    @classmethod
    def from_array(cls, dosage, *, samples=None) -> "Genotypes":
        """Wrap a bare dosage array with generated IDs.

        Parameters
        ----------
        dosage : array_like, shape (n_individuals, n_snps)
            Values 0/1/2, or -1 (or NaN) for missing.
        samples : sequence of str, optional
            Sample IDs; default ``ind0, ind1, ...``.
        """
        from .ml.likelihood import check_dosage  # values are checked before the cast

        array = check_dosage(dosage)
        n_individuals, n_snps = array.shape
        if samples is None:
            samples = [f"ind{i}" for i in range(n_individuals)]
        return cls(dosage=array, samples=np.asarray(samples),
                   variants=placeholder_variants(n_snps))


def placeholder_variants(n_snps: int, *, counted: str = "A", other: str = "B"
                         ) -> pd.DataFrame:
    """Variant table for genotypes that came without one.

    Chromosome ``1``, positions ``1..n_snps``, IDs ``snp0, snp1, ...``, and the
    given labels for the counted and the other allele.
    """
    return pd.DataFrame(
        {
            "chrom": np.full(n_snps, "1"),
            "pos": np.arange(1, n_snps + 1, dtype=np.int64),
            "id": [f"snp{j}" for j in range(n_snps)],
            "counted": np.full(n_snps, counted),
            "other": np.full(n_snps, other),
        }
    )


def _indices(selection) -> np.ndarray:
    """Integer indices of an index array or boolean mask."""
    selection = np.asarray(selection)
    return np.flatnonzero(selection) if selection.dtype == bool else selection


# --------------------------------------------------------------------------- counts


def snp_statistics(dosage: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-SNP call counts and counted-allele sums, per-individual missing counts.

    The one pass over the dosages that every allele count in admixspec comes
    from; it streams over blocks of SNP columns, so the temporaries stay small.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (n_individuals, n_snps)

    Returns
    -------
    called : numpy.ndarray, int64, shape (n_snps,)
        Non-missing calls per SNP.
    allele_sum : numpy.ndarray, int64, shape (n_snps,)
        Sum of called dosages per SNP (copies of the counted allele).
    missing_per_individual : numpy.ndarray, int64, shape (n_individuals,)

    Examples
    --------
    >>> import numpy as np
    >>> called, sums, missing = snp_statistics(np.array([[0, -1], [2, 1]], np.int8))
    >>> called.tolist(), sums.tolist(), missing.tolist()
    ([2, 1], [2, 1], [1, 0])
    """
    n, m = dosage.shape
    called = np.empty(m, dtype=np.int64)
    allele_sum = np.empty(m, dtype=np.int64)
    missing_rows = np.zeros(n, dtype=np.int64)
    for start in range(0, m, _COLUMN_BLOCK):
        block = dosage[:, start : start + _COLUMN_BLOCK]
        is_missing = block == MISSING
        missing_per_snp = is_missing.sum(axis=0)
        called[start : start + block.shape[1]] = n - missing_per_snp
        # add back the -1 of each missing call
        allele_sum[start : start + block.shape[1]] = (
            block.sum(axis=0, dtype=np.int64) + missing_per_snp
        )
        missing_rows += is_missing.sum(axis=1)
    return called, allele_sum, missing_rows


def allele_counts(dosage: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counted-allele and observed-allele totals per SNP.

    Parameters
    ----------
    dosage : numpy.ndarray, int8, shape (n_individuals, n_snps)

    Returns
    -------
    counted : numpy.ndarray, int64, shape (n_snps,)
        Copies of the counted allele among observed calls.
    observed : numpy.ndarray, int64, shape (n_snps,)
        ``2 x`` the number of non-missing calls.

    Examples
    --------
    >>> import numpy as np
    >>> [a.tolist() for a in allele_counts(np.array([[0, -1], [2, 1]], np.int8))]
    [[2, 1], [4, 2]]
    """
    called, allele_sum, _ = snp_statistics(dosage)
    return allele_sum, 2 * called


def minor_allele_counts(counted: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Copies of the sample minor allele per SNP.

    Parameters
    ----------
    counted, observed : numpy.ndarray, int, shape (n_snps,)
        From :func:`allele_counts`.

    Returns
    -------
    numpy.ndarray, int64, shape (n_snps,)
        ``min(counted, observed - counted)``: an exact count, so that e.g. 1
        of 10 alleles is a frequency of exactly 0.1.

    Examples
    --------
    >>> import numpy as np
    >>> minor_allele_counts(np.array([2, 9]), np.array([4, 10])).tolist()
    [2, 1]
    """
    return np.minimum(counted, observed - counted)


# --------------------------------------------------------------------------- summaries


def filter_lines(genotypes: Genotypes) -> list[str]:
    """One line per filter applied, as the run log and ``info`` print them.

    Examples
    --------
    >>> import numpy as np
    >>> from admixspec.filters import filter_monomorphic
    >>> g = Genotypes.from_array(np.array([[0, 1, 2], [0, 2, -1]]))
    >>> filter_lines(filter_monomorphic(g))[0].split(" (")[0]
    'monomorphic: removed 2 variants'
    """
    lines = []
    for entry in genotypes.filter_log:
        if entry["filter"] == "ploidy":
            if entry["removed"] or entry.get("details", {}).get("haploid_as_homozygous"):
                lines.append(f"ploidy: {entry['reason']}")
            continue
        lines.append(
            f"{entry['filter']}: removed {entry['removed']} {entry['unit']} "
            f"({entry['reason']})"
        )
    return lines


def _ploidy_policy(genotypes: Genotypes) -> dict:
    ploidy = next((e for e in genotypes.filter_log if e["filter"] == "ploidy"), None)
    if ploidy is None:
        return {
            # PLINK 1/2 filesets and arrays carry no ploidy record: read as stored
            "policy": "diploid calls as stored; PLINK 1 and 2 store haploid calls as "
            "homozygous"
        }
    return {
        "policy": "haploid calls read as homozygous; half calls and ploidy > 2 "
        "read as missing",
        **ploidy.get("details", {}),
    }


def genotype_summary(genotypes: Genotypes, *, with_k_hint: bool = False,
                     seed: int = 0) -> dict:
    """A JSON-ready summary of filtered genotypes (what ``admixspec info`` prints).

    Parameters
    ----------
    genotypes : Genotypes
        As returned by :func:`admixspec.io.read_genotypes` (its ``filter_log``
        says what was removed).
    with_k_hint : bool
        Add the spectral hint for K (:func:`admixspec.spectral.estimate.k_hint`).
    seed : int
        Seed of the hint's SNP sample.

    Returns
    -------
    dict
        ``input``, ``individuals``, ``variants_read``, ``variants_kept``,
        ``individuals_removed``, ``removed`` (per filter), the missing
        fractions (overall, largest per individual and per SNP), ``ploidy``,
        ``counted_allele`` and, with ``with_k_hint``, ``k_hint`` (``K``,
        ``eigenvalues``, ``ratios``, ``snps``, ``description``);
        :func:`summary_lines` puts it in words.

    Examples
    --------
    >>> import numpy as np
    >>> summary = genotype_summary(Genotypes.from_array(np.array([[0, -1], [2, 1]])))
    >>> summary["variants_kept"], summary["missing_fraction"]
    (2, 0.25)
    """
    called, _, missing_rows = snp_statistics(genotypes.dosage)
    n, m = genotypes.dosage.shape
    log = {entry["filter"]: entry for entry in genotypes.filter_log}
    read = log.get("biallelic_snp", {}).get("details", {}).get("records_read", m)
    removed = {
        entry["filter"]: {
            "unit": entry["unit"], "removed": entry["removed"], "reason": entry["reason"]
        }
        for entry in genotypes.filter_log
        if entry["filter"] != "ploidy"
    }
    summary = {
        "input": genotypes.source,
        "individuals": int(n),
        "variants_read": int(read),
        "variants_kept": int(m),
        "individuals_removed": int(
            sum(e["removed"] for e in genotypes.filter_log if e["unit"] == "individuals")
        ),
        "removed": removed,
        "missing_fraction": genotypes.missing_fraction,
        "missing_fraction_per_individual_max": (
            float(missing_rows.max() / m) if m else 0.0
        ),
        "missing_fraction_per_snp_max": float(1 - called.min() / n) if n and m else 0.0,
        "ploidy": _ploidy_policy(genotypes),
        "counted_allele": "VCF REF / .bim column 6 (A2); P is its frequency",
    }
    if with_k_hint:
        from .spectral.estimate import k_hint  # the spectral package builds on this one

        hint = k_hint(genotypes.dosage, seed=seed)
        summary["k_hint"] = {
            "K": hint.K, "eigenvalues": hint.eigenvalues.tolist(),
            "ratios": hint.ratios.tolist(), "snps": hint.n_snps,
            "description": hint.describe(),
        }
    return summary


def summary_lines(summary: dict) -> list[str]:
    """:func:`genotype_summary` in words, one line per fact (``admixspec info``).

    Examples
    --------
    >>> import numpy as np
    >>> g = Genotypes.from_array(np.array([[0, -1], [2, 1]]))
    >>> print(summary_lines(genotype_summary(g))[3])
    missing calls:    25.0000% overall; max 50.00% per individual, 50.00% per SNP
    """
    lines = [
        f"input:            {summary['input']}",
        f"individuals:      {summary['individuals']} kept, "
        f"{summary['individuals_removed']} removed",
        f"variants:         {summary['variants_read']} read, "
        f"{summary['variants_kept']} kept",
    ]
    for name, entry in summary["removed"].items():
        lines.append(
            f"  - {name}: {entry['removed']} {entry['unit']} removed ({entry['reason']})"
        )
    lines += [
        f"missing calls:    {summary['missing_fraction']:.4%} overall; max "
        f"{summary['missing_fraction_per_individual_max']:.2%} per individual, "
        f"{summary['missing_fraction_per_snp_max']:.2%} per SNP",
        f"ploidy:           {summary['ploidy']['policy']}",
    ]
    details = {k: v for k, v in summary["ploidy"].items() if k != "policy"}
    if details:
        lines.append(" " * 18 + ", ".join(f"{k}: {v}" for k, v in details.items()))
    lines.append(f"counted allele:   {summary['counted_allele']}")
    if "k_hint" in summary:
        lines.append(f"spectral K hint:  {summary['k_hint']['description']}; choose K "
                     "with 'run --cv'")
    return lines
