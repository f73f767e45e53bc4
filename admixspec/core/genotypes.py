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
    "UNKNOWN_LABELS",
    "VARIANT_COLUMNS",
    "allele_counts",
    "check_dosage",
    "filter_lines",
    "minor_allele_counts",
    "placeholder_variants",
    "snp_statistics",
]

#: Dosage value that marks a missing genotype call.
MISSING: int = -1

#: Population labels that mean "not a reference individual" (ADMIXTURE's
#: ``.pop`` uses ``-``): the supervised fit reads them so, and a ``.pop``
#: therefore may not name a population by the others.
UNKNOWN_LABELS = frozenset({"-", ".", "", "NA", "nan", "None"})

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
        if (not isinstance(self.dosage, np.ndarray) or self.dosage.dtype != np.int8
                or np.ma.isMaskedArray(self.dosage)):
            # values are checked before the cast; a masked array's mask kept
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

    def subset(self, individuals=None, snps=None) -> Genotypes:
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
    def from_array(cls, dosage, *, samples=None) -> Genotypes:
        """Wrap a bare dosage array with generated IDs.

        Parameters
        ----------
        dosage : array_like, shape (n_individuals, n_snps)
            Values 0/1/2, or -1 (or NaN) for missing.
        samples : sequence of str, optional
            Sample IDs; default ``ind0, ind1, ...``.
        """
        array = check_dosage(dosage)  # values are checked before the cast
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


# --------------------------------------------------------------------------- checks


def check_dosage(dosage) -> np.ndarray:
    """Check every dosage value, then return the dosage as C-contiguous int8.

    Every value is checked, so that nothing is silently changed: a bare cast
    to int8 would turn 1.9 into 1, 0.5 into 0, 256 into 0 and 255 into -1
    (missing).

    Parameters
    ----------
    dosage : array_like or Genotypes, shape (n_individuals, n_snps)
        Copies of the counted allele, 0, 1 or 2, and -1 for a missing call.
        Any integer or boolean dtype is accepted. A float array is accepted
        when every value is a whole number, and NaN then also means missing
        (the convention of float genotype matrices, e.g. pandas'); fractional
        dosages such as imputed 1.9 are refused, not rounded. Masked entries
        of a masked array, and pandas' missing values (``pd.NA``), are missing
        calls too.

    Returns
    -------
    numpy.ndarray, int8, shape (n_individuals, n_snps)

    Raises
    ------
    InputError
        Not a 2-d array of numbers; a value other than 0, 1, 2, -1 (or NaN in a
        float array), with its position; a :class:`~admixspec.Genotypes`
        whose dosage no longer fits its sample IDs and variants, as a
        SNP-major (transposed) matrix does.

    Notes
    -----
    Orientation is checked where it can be without false alarms: a
    :class:`~admixspec.Genotypes` carries sample IDs and variants, so a
    transposed dosage is recognised. A bare array cannot be told from its
    transpose by its values, and neither shape is impossible (a small SNP
    panel may have more individuals than SNPs), so a bare array is taken to
    be (n_individuals, n_snps) as documented, without a check.

    Examples
    --------
    >>> check_dosage(np.array([[0.0, 2.0], [np.nan, 1.0]]))
    array([[ 0,  2],
           [-1,  1]], dtype=int8)
    >>> try:
    ...     check_dosage([[0, 1.9]])
    ... except InputError as error:
    ...     print(error)  # doctest: +NORMALIZE_WHITESPACE
    dosage must hold 0, 1, 2 or -1 (missing): dosage[0, 1] = 1.9 (1 such value);
    fractional dosages must be rounded to hard calls first
    """
    if hasattr(dosage, "dosage"):
        dosage.check_shape()
        dosage = dosage.dosage
    G = _as_array(dosage)
    if G.ndim != 2:
        raise InputError(f"dosage must be 2-d (individuals x SNPs), got shape {G.shape}")
    if G.dtype.kind not in "biuf":
        raise InputError(f"dosage must be numeric, got dtype {G.dtype}")
    if G.dtype.kind == "f":
        G8 = _whole_floats_as_int8(G)
    else:  # integers: the range says it all
        G8 = G.astype(np.int8, copy=False) if _in_range(G) else None
    if G8 is None:
        raise InputError(_bad_dosage_message(G))
    return np.ascontiguousarray(G8)


def _as_array(dosage) -> np.ndarray:
    """``dosage`` as a NumPy array, its missing calls kept missing.

    A masked array's masked entries and pandas' missing values (``pd.NA`` of
    its nullable integer columns) are missing calls: ``np.asarray`` would
    drop the mask, keeping the values under it, and turn ``pd.NA`` into
    objects. They come back as float with NaN, which :func:`check_dosage`
    reads as missing.
    """
    try:
        if np.ma.isMaskedArray(dosage) and dosage.dtype.kind in "biuf":
            return np.ma.filled(dosage.astype(np.float64), np.nan)
        G = np.asarray(dosage)
        if (G.dtype == object and isinstance(dosage, pd.DataFrame)
                and all(pd.api.types.is_numeric_dtype(t) for t in dosage.dtypes)):
            G = dosage.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as error:  # ragged nesting, values not numbers
        raise InputError("dosage must be a 2-d array of numbers (individuals x "
                         f"SNPs): {str(error).splitlines()[0]}") from None
    return G


def _in_range(G: np.ndarray) -> bool:
    return G.size == 0 or bool(G.min() >= -1 and G.max() <= 2)


def _whole_floats_as_int8(G: np.ndarray) -> np.ndarray | None:
    """``G`` as int8 with NaN as -1, or None unless every other value is -1..2 whole.

    The cast is checked by casting back: a value survives it unchanged only
    if it is a whole number within int8 (1.9, 256.0 and inf do not).
    """
    missing = np.isnan(G)
    with np.errstate(invalid="ignore"):  # NaN and out-of-range casts, checked below
        G8 = G.astype(np.int8)
    np.copyto(G8, np.int8(-1), where=missing)
    if not (_in_range(G8) and np.all((G8 == G) | missing)):
        return None
    return G8


def _bad_dosage_message(G: np.ndarray) -> str:
    """Name the first bad dosage value, its position and how many there are."""
    bad = ~np.isin(G, (-1, 0, 1, 2))
    if G.dtype.kind == "f":
        bad &= ~np.isnan(G)
    i, j = np.argwhere(bad)[0]
    value = G[i, j]
    n_bad = np.count_nonzero(bad)
    message = (
        f"dosage must hold 0, 1, 2 or -1 (missing): dosage[{i}, {j}] = {value:g} "
        f"({n_bad} such value{'s' if n_bad > 1 else ''})"
    )
    if np.isfinite(value) and value != np.round(value):
        message += "; fractional dosages must be rounded to hard calls first"
    return message


# --------------------------------------------------------------------------- counts


def snp_statistics(dosage: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-SNP call counts and counted-allele sums, per-individual missing counts.

    The one pass over the dosages that every allele count in admixspec comes
    from: a numba kernel reads each call once and allocates no matrix-sized
    temporary, in the matrix's own memory order.

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
    # here, not at the top: importing the core must not import numba
    from ._counts import count_calls

    return count_calls(dosage)


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
    >>> from admixspec.core.filters import filter_monomorphic
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
