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

__all__ = ["Genotypes", "MISSING", "VARIANT_COLUMNS"]

#: Dosage value that marks a missing genotype call.
MISSING: int = -1

#: Columns of :attr:`Genotypes.variants`, in order.
VARIANT_COLUMNS = ("chrom", "pos", "id", "counted", "other")


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
        if self.dosage.ndim != 2:
            raise ValueError("dosage must be a 2-d (individuals x SNPs) array")
        if self.dosage.dtype != np.int8:
            self.dosage = self.dosage.astype(np.int8)
        self.samples = np.asarray(self.samples, dtype=str)
        if len(self.samples) != self.dosage.shape[0]:
            raise ValueError("samples must have one entry per row of dosage")
        if len(self.variants) != self.dosage.shape[1]:
            raise ValueError("variants must have one row per column of dosage")

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
        rows = slice(None) if individuals is None else np.asarray(individuals)
        cols = slice(None) if snps is None else np.asarray(snps)
        dosage = self.dosage[rows][:, cols]
        variants = self.variants.iloc[cols].reset_index(drop=True)
        families = None if self.families is None else self.families[rows]
        return Genotypes(
            dosage=np.ascontiguousarray(dosage),
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
        array = np.asarray(dosage)
        if array.dtype.kind == "f":
            array = np.where(np.isnan(array), MISSING, array)
        array = array.astype(np.int8)
        n_individuals, n_snps = array.shape
        if samples is None:
            samples = [f"ind{i}" for i in range(n_individuals)]
        variants = pd.DataFrame(
            {
                "chrom": np.full(n_snps, "1"),
                "pos": np.arange(1, n_snps + 1, dtype=np.int64),
                "id": [f"snp{j}" for j in range(n_snps)],
                "counted": np.full(n_snps, "A"),
                "other": np.full(n_snps, "B"),
            }
        )
        return cls(dosage=array, samples=np.asarray(samples), variants=variants)
