"""The SNPs a P file's rows are, and matching them to another data set's.

``PREFIX.K.P.snps`` (written by ``admixspec run`` beside every ``PREFIX.K.P``)
names each P row: a tab-separated table with the header
``chrom pos id counted other`` and one line per P row, in P's order, where
``counted`` is the allele whose frequency P holds (``.bim`` column 6 / VCF
REF) and ``other`` the second allele.

:func:`match_snps` pairs a reference's SNPs (a ``.P.snps`` table) with a
target's (the genotypes to project), so that ``run --project PREFIX.K.P``
works on data that are not the reference's SNPs in the reference's order:

1. by chromosome and position (``chr1`` and ``1`` are one chromosome, and
   PLINK's codes 23, 24, 25 and 26 are X, Y, X's pseudo-autosomal ``XY`` and
   ``MT``), then, for the SNPs left, by ID (``.`` is no ID); a SNP at
   position 0, PLINK's code for an unknown position, is matched by ID only;
2. a pair is kept when its alleles agree: the same counted allele (P as it
   is), the counted and other allele swapped (P flipped to ``1 - P``), or
   either of these on the other strand (``A/G`` against ``T/C``); a missing
   second allele (PLINK's ``0``, a VCF's ``.``: a monomorphic SNP) agrees
   with any, on the same strand only (``G/0`` against ``G/A`` as it is,
   against ``A/G`` flipped);
3. strand-ambiguous SNPs (``A/T``, ``C/G``), whose strand cannot be told
   from the alleles, are dropped unless ``ambiguous=True`` (then they are
   matched as given, never complemented);
4. a SNP that pairs with more than one SNP of the other side is dropped.

Every step is a table join (pandas), no Python loop over SNPs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.exceptions import InputError
from ..core.genotypes import VARIANT_COLUMNS
from .common import chromosome_names
from .errors import reading

__all__ = [
    "MIN_OVERLAP",
    "SNP_COLUMNS",
    "ProjectionInput",
    "SnpMatch",
    "format_snps",
    "match_snps",
    "projection_reference",
    "read_snps",
    "snps_path",
]

#: Columns of a ``.P.snps`` table, in order (those of ``Genotypes.variants``).
SNP_COLUMNS = VARIANT_COLUMNS

logger = logging.getLogger("admixspec")

_COMPLEMENT = {"A": "T", "T": "A", "C": "G", "G": "C"}
#: Missing-allele codes: PLINK's ``0`` (a monomorphic SNP's second allele),
#: a VCF's ``.``
_MISSING_ALLELE = ("0", ".")


def snps_path(p_path) -> Path:
    """The SNP table beside a P file: ``PREFIX.K.P`` -> ``PREFIX.K.P.snps``.

    Examples
    --------
    >>> str(snps_path("out/run.3.P"))
    'out/run.3.P.snps'
    """
    return Path(f"{p_path}.snps")


def format_snps(variants: pd.DataFrame) -> str:
    """A variant table as the text of a ``.P.snps`` file.

    Parameters
    ----------
    variants : pandas.DataFrame
        The columns :data:`SNP_COLUMNS`, one row per P row
        (``Genotypes.variants``).

    Returns
    -------
    str
        Tab-separated, with a header line.

    Examples
    --------
    >>> from admixspec.core.genotypes import placeholder_variants
    >>> lines = format_snps(placeholder_variants(2)).splitlines()
    >>> lines[0]
    'chrom\\tpos\\tid\\tcounted\\tother'
    >>> lines[1:]
    ['1\\t1\\tsnp0\\tA\\tB', '1\\t2\\tsnp1\\tA\\tB']
    """
    return variants.loc[:, list(SNP_COLUMNS)].to_csv(
        sep="\t", index=False, lineterminator="\n")


def read_snps(path) -> pd.DataFrame:
    """Read a ``.P.snps`` table.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    pandas.DataFrame
        The columns :data:`SNP_COLUMNS` (``pos`` int64, the others str), one
        row per P row.

    Raises
    ------
    InputError
        A missing file, a missing column, or a position that is not a
        whole number.
    """
    path = Path(path)
    with reading(path, "a SNP table (.P.snps)"):
        table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    missing = [c for c in SNP_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)} (expected "
                         f"{' '.join(SNP_COLUMNS)})", path=path, line=1)
    positions = pd.to_numeric(table["pos"], errors="coerce")
    bad = positions.isna().to_numpy()
    if bad.any():
        raise InputError("position is not a whole number", path=path,
                         line=int(np.flatnonzero(bad)[0]) + 2)
    table["pos"] = positions.astype(np.int64)
    return table.loc[:, list(SNP_COLUMNS)]


@dataclass
class SnpMatch:
    """Which reference SNPs (P rows) pair with which target SNPs (genotype columns).

    Attributes
    ----------
    reference : numpy.ndarray, int64, shape (n_matched,)
        Rows of the reference's P.
    target : numpy.ndarray, int64, shape (n_matched,)
        Columns of the target's genotypes, increasing.
    flip : numpy.ndarray, bool, shape (n_matched,)
        Whether the target counts the reference's other allele (P becomes
        ``1 - P``).
    counts : dict of str to int
        ``reference`` and ``target`` (SNPs given), ``matched``,
        ``by_position`` and ``by_id`` (how the matched pairs were found),
        ``flipped``, ``strand`` (matched on the other strand),
        ``ambiguous`` (A/T or C/G SNPs dropped), ``allele_mismatch`` (at the
        same position or ID but other alleles), ``duplicate`` (dropped: more
        than one partner), ``missing`` (reference SNPs the target lacks) and
        ``target_only`` (target SNPs the reference lacks: none of its SNPs
        has their chromosome and position, or their ID).
    """

    reference: np.ndarray
    target: np.ndarray
    flip: np.ndarray
    counts: dict = field(default_factory=dict)

    def reference_p(self, P: np.ndarray) -> np.ndarray:
        """The reference's P on the matched SNPs, in the target's order and counting.

        Parameters
        ----------
        P : numpy.ndarray, float, shape (n_reference_snps, K)

        Returns
        -------
        numpy.ndarray, float64, shape (n_matched, K)
            ``P[reference]``, rows with ``flip`` replaced by ``1 - P``.
        """
        matched = np.asarray(P, dtype=np.float64)[self.reference]
        matched[self.flip] = 1.0 - matched[self.flip]
        return matched

    def describe(self) -> str:
        """One log line of the counts."""
        c = self.counts
        return (
            f"SNP matching: {c['matched']} of {c['reference']} reference SNPs matched "
            f"in the target's {c['target']} ({c['by_position']} by chromosome and "
            f"position, {c['by_id']} by ID); {c['flipped']} flipped (the target counts "
            f"the other allele), {c['strand']} on the other strand; dropped "
            f"{c['ambiguous']} strand-ambiguous (A/T, C/G), {c['allele_mismatch']} "
            f"with other alleles, {c['duplicate']} duplicates; {c['missing']} "
            f"reference SNPs missing from the target, {c['target_only']} target SNPs "
            "not in the reference"
        )


def _normalised(variants: pd.DataFrame) -> pd.DataFrame:
    chrom = chromosome_names(variants["chrom"])
    table = pd.DataFrame({
        # XY, PLINK's X pseudo-autosomal region, lies on X's positions, where a
        # VCF has it
        "chrom": np.where(chrom == "XY", "X", chrom),
        "pos": pd.to_numeric(variants["pos"], errors="coerce").fillna(-1)
        .astype(np.int64),
        "id": variants["id"].astype(str).str.strip(),
        "counted": variants["counted"].astype(str).str.strip().str.upper(),
        "other": variants["other"].astype(str).str.strip().str.upper(),
    })
    table["row"] = np.arange(len(table), dtype=np.int64)
    return table


def _complement(alleles: pd.Series) -> pd.Series:
    return alleles.map(_COMPLEMENT)


def _is_ambiguous(table: pd.DataFrame) -> np.ndarray:
    return (_complement(table["counted"]) == table["other"]).to_numpy()


def _present(table: pd.DataFrame, other: pd.DataFrame) -> np.ndarray:
    """Which SNPs of ``table`` ``other`` has: at their position, or by their ID.

    Whatever their alleles: a target SNP that the reference has but that was
    dropped (strand-ambiguous, other alleles, duplicate) is not "target only".
    """
    keys = ["chrom", "pos"]
    at_position = pd.MultiIndex.from_frame(table[keys]).isin(
        pd.MultiIndex.from_frame(other.loc[other["pos"] > 0, keys]))
    ids = other.loc[other["id"] != ".", "id"]
    return at_position | ((table["id"] != ".") & table["id"].isin(ids)).to_numpy()


def _pairs(reference: pd.DataFrame, target: pd.DataFrame, on) -> pd.DataFrame:
    """Candidate pairs joined on ``on``, with how their alleles relate."""
    pairs = reference.merge(target, on=on, suffixes=("_r", "_t"))
    rc, ro = pairs["counted_r"], pairs["other_r"]
    tc, to = pairs["counted_t"], pairs["other_t"]
    # a missing second allele (a monomorphic SNP's) pairs with any, on this
    # strand only: with one allele, the strand cannot be told
    ro_missing, to_missing = ro.isin(_MISSING_ALLELE), to.isin(_MISSING_ALLELE)
    called = ~rc.isin(_MISSING_ALLELE) & ~tc.isin(_MISSING_ALLELE)
    same = called & (rc == tc) & ((ro == to) | ro_missing | to_missing)
    swapped = called & (((rc == to) & ((ro == tc) | ro_missing))
                        | (to_missing & (ro == tc)))
    crc, cro = _complement(rc), _complement(ro)
    ambiguous = (crc == ro).to_numpy()
    strand_same = (crc == tc) & (cro == to) & ~ambiguous
    strand_swapped = (crc == to) & (cro == tc) & ~ambiguous
    pairs["flip"] = (swapped | strand_swapped).to_numpy() & ~same.to_numpy()
    pairs["strand"] = ((strand_same | strand_swapped) & ~(same | swapped)).to_numpy()
    pairs["agree"] = (same | swapped | strand_same | strand_swapped).to_numpy()
    return pairs


def match_snps(reference: pd.DataFrame, target: pd.DataFrame, *,
               ambiguous: bool = False) -> SnpMatch:
    """Pair a reference's SNPs with a target's by position and alleles, then by ID.

    Parameters
    ----------
    reference, target : pandas.DataFrame
        Variant tables with the columns :data:`SNP_COLUMNS` (a ``.P.snps``
        table, ``Genotypes.variants``).
    ambiguous : bool
        Keep strand-ambiguous A/T and C/G SNPs (matched as given, never
        complemented); by default they are dropped.

    Returns
    -------
    SnpMatch

    Examples
    --------
    >>> ref = pd.DataFrame({"chrom": ["1", "1", "1", "2"], "pos": [10, 20, 30, 5],
    ...                     "id": ["a", "b", "c", "d"], "counted": ["A", "C", "A", "G"],
    ...                     "other": ["G", "T", "T", "A"]})
    >>> target = pd.DataFrame({"chrom": ["chr2", "chr1", "chr1"], "pos": [5, 10, 30],
    ...                        "id": ["d", "a", "c"], "counted": ["A", "T", "A"],
    ...                        "other": ["G", "C", "T"]})
    >>> match = match_snps(ref, target)
    >>> match.reference.tolist(), match.target.tolist(), match.flip.tolist()
    ([3, 0], [0, 1], [True, False])
    >>> match.counts["ambiguous"], match.counts["strand"], match.counts["missing"]
    (1, 1, 1)
    """
    ref, tgt = _normalised(reference), _normalised(target)
    drop_ref = np.zeros(len(ref), dtype=bool)
    drop_tgt = np.zeros(len(tgt), dtype=bool)
    if not ambiguous:
        drop_ref, drop_tgt = _is_ambiguous(ref), _is_ambiguous(tgt)
    counts = {"reference": len(ref), "target": len(tgt),
              "ambiguous": int(drop_ref.sum())}
    found = []
    mismatch = np.zeros(len(ref), dtype=bool)
    duplicate = np.zeros(len(ref), dtype=bool)
    used_ref, used_tgt = drop_ref.copy(), drop_tgt.copy()
    for how, on in (("by_position", ["chrom", "pos"]), ("by_id", ["id"])):
        left, right = ref[~used_ref], tgt[~used_tgt]
        if how == "by_id":
            left, right = left[left["id"] != "."], right[right["id"] != "."]
        else:  # position 0 is PLINK's "unknown": such SNPs pair by ID alone
            left, right = left[left["pos"] > 0], right[right["pos"] > 0]
        pairs = _pairs(left, right, on)
        mismatch[pairs.loc[~pairs["agree"], "row_r"].to_numpy()] = True
        pairs = pairs[pairs["agree"]]
        many = (pairs["row_r"].duplicated(keep=False)
                | pairs["row_t"].duplicated(keep=False)).to_numpy()
        duplicate[pairs.loc[many, "row_r"].to_numpy()] = True
        used_ref[pairs["row_r"].to_numpy()] = True  # duplicates too: not tried again
        used_tgt[pairs["row_t"].to_numpy()] = True
        pairs = pairs[~many]
        counts[how] = len(pairs)
        found.append(pairs)
    pairs = pd.concat(found).sort_values("row_t")
    matched = np.zeros(len(ref), dtype=bool)
    matched[pairs["row_r"].to_numpy()] = True
    duplicate &= ~matched
    mismatch &= ~matched & ~duplicate
    counts.update(
        matched=len(pairs),
        flipped=int(pairs["flip"].sum()),
        strand=int(pairs["strand"].sum()),
        allele_mismatch=int(mismatch.sum()),
        duplicate=int(duplicate.sum()),
        missing=int((~matched & ~drop_ref & ~mismatch & ~duplicate).sum()),
        target_only=int((~_present(tgt, ref)).sum()),
    )
    return SnpMatch(
        reference=pairs["row_r"].to_numpy(dtype=np.int64),
        target=pairs["row_t"].to_numpy(dtype=np.int64),
        flip=pairs["flip"].to_numpy(dtype=bool),
        counts=counts,
    )


def _warn_kept_ambiguous(match: SnpMatch, reference: pd.DataFrame) -> None:
    """Warn when kept A/T and C/G SNPs are likely mis-oriented (--keep-ambiguous).

    They are matched as given, never complemented: when most of the SNPs
    whose strand the alleles tell matched on the other strand, the target
    is likely on the other strand, and so are they.
    """
    c = match.counts
    kept = int(_is_ambiguous(_normalised(reference))[match.reference].sum())
    told = c["matched"] - kept
    if kept and 2 * c["strand"] > told:
        logger.warning(
            "--keep-ambiguous: %d of the %d matched SNPs that are not A/T or C/G "
            "matched on the other strand: the target is likely on the reference's "
            "other strand, and the %d strand-ambiguous (A/T, C/G) SNPs kept as given "
            "(never complemented) likely mis-oriented; leave out --keep-ambiguous, or "
            "give the target on the reference's strand", c["strand"], told, kept)


#: Default least share of the reference's SNPs a projection must match.
MIN_OVERLAP = 0.5


@dataclass
class ProjectionInput:
    """The fixed P of ``run --project`` and the target SNPs it applies to.

    Attributes
    ----------
    P : numpy.ndarray, float64, shape (n_used, K)
        Reference frequencies of the target's counted alleles, one row per
        used target SNP.
    columns : numpy.ndarray of int64 or None
        Target SNPs (genotype columns) used, increasing; None for all.
    match : SnpMatch or None
        The matching, when the P file had a ``.snps`` table.
    lines : list of str
        What the log should say about it.
    reference_q : numpy.ndarray or None, float64, shape (n_reference, K)
        The reference run's Q (``PREFIX.K.Q`` beside ``PREFIX.K.P``), which
        tells how noisy P is (:mod:`admixspec.ml.debias`); None when absent.
    """

    P: np.ndarray
    columns: np.ndarray | None
    match: SnpMatch | None
    lines: list
    reference_q: np.ndarray | None = None


def _not_the_reference(prefix: str) -> str | None:
    """Why the run ``prefix`` (``PREFIX.K``) wrote a Q of others than P was fitted on.

    From the run's JSON (its ``path``): a projection (``projection``, or a
    reference fit's ``...+projection``) fits P on nobody or on a reference
    drawn from its individuals, so its Q's rows do not tell how noisy P is.
    None where the fit's Q is of the individuals P was fitted on, or without
    a readable JSON (e.g. ADMIXTURE's run).
    """
    from .results import read_run_record

    try:
        record = read_run_record(prefix + ".json")
    except InputError:  # none, or unreadable (e.g. ADMIXTURE's run has none)
        return None
    path = record.get("path") or ""
    if path == "projection":
        return "a projection run's Q, of individuals projected onto a P fitted on others"
    if path.endswith("+projection"):
        return ("everyone's Q of a run that fitted P on a random reference drawn from "
                "them (--reference-size)")
    return None


def _reference_q(p_path, K: int, *, read: bool = True):
    """The reference's Q beside its P (``PREFIX.K.P`` -> ``PREFIX.K.Q``), if there.

    Not the Q of a run whose JSON says that its Q is not (only) of the
    individuals P was fitted on (:func:`_not_the_reference`): then P is taken
    as exact, and the log line says why. Not read when ``read`` is False (a
    plain projection).

    Raises
    ------
    InputError
        A Q of other than K columns, or with a row that does not sum to 1
        (:func:`admixspec.io.results.check_q_rows`).
    """
    from .admixture import read_q
    from .results import check_q_rows

    name = str(p_path)
    if not read or not name.endswith(".P"):
        return None, []
    q_path = Path(name[:-2] + ".Q")
    if not q_path.is_file():
        return None, []
    why = _not_the_reference(name[:-2])
    if why is not None:
        return None, [f"Projection: {q_path.name} is {why}: it does not give the "
                      "sampling noise of P, which is taken as exact (as "
                      "--plain-projection)"]
    Q = read_q(q_path)
    if Q.shape[1] != K:
        raise InputError(
            f"has {Q.shape[1]} columns but {Path(name).name} has K = {K}: not the "
            "reference run's Q, which a projection reads to correct for the sampling "
            "noise of P (move it away, or give --plain-projection)", path=q_path)
    check_q_rows(Q, q_path)
    return Q, [f"Projection: the reference's Q ({q_path.name}, {len(Q)} individuals) "
               "gives the sampling noise of its P"]


def projection_reference(p_path, genotypes, *, ambiguous: bool = False,
                         min_overlap: float = MIN_OVERLAP,
                         reference_q: bool = True) -> ProjectionInput:
    """Read a reference's P for projection and line it up with the target's SNPs.

    With a ``.P.snps`` table beside ``p_path`` (:func:`snps_path`) the SNPs
    are matched (:func:`match_snps`) and P is taken on the matched SNPs,
    flipped where the target counts the other allele. A bare P file must
    have one row per target SNP, in the target's order (ADMIXTURE's ``-P``);
    one row per *polymorphic* target SNP is also accepted (a P file that
    admixspec wrote before it kept monomorphic SNPs).

    Parameters
    ----------
    p_path : str or os.PathLike
        The reference's ``PREFIX.K.P``.
    genotypes : Genotypes
        The target, read with its monomorphic SNPs.
    ambiguous : bool
        Keep strand-ambiguous (A/T, C/G) SNPs (``--keep-ambiguous``).
    min_overlap : float in [0, 1]
        Least share of the reference's SNPs that must match (and at least
        one).
    reference_q : bool
        Read the reference run's Q (False for a plain projection, which
        does not use it).

    Returns
    -------
    ProjectionInput
        With the reference run's Q when ``PREFIX.K.Q`` lies beside
        ``PREFIX.K.P`` and ``reference_q`` is True, unless the run's
        ``PREFIX.K.json`` says it was a projection (its Q is not of the
        individuals P was fitted on).

    Raises
    ------
    InputError
        A bare P with another number of rows, a SNP table with another
        number of rows than P, fewer matched SNPs than ``min_overlap`` or
        none, or a ``PREFIX.K.Q`` that is not a Q of K columns.
    """
    from ..core.genotypes import allele_counts
    from .admixture import read_p

    P = read_p(p_path)
    reference_q, q_lines = _reference_q(p_path, P.shape[1], read=reference_q)
    table_path = snps_path(p_path)
    if not table_path.is_file():
        n = genotypes.n_snps
        if P.shape[0] == n:
            return ProjectionInput(P, None, None, [
                f"Projection: {p_path} has no SNP table ({table_path.name}); its "
                f"{n} rows are taken as the target's SNPs, in order", *q_lines],
                reference_q)
        counted, observed = allele_counts(genotypes.dosage)
        polymorphic = np.flatnonzero((counted > 0) & (counted < observed))
        if P.shape[0] == len(polymorphic):
            return ProjectionInput(P, polymorphic, None, [
                f"Projection: {p_path} has no SNP table and one row per polymorphic "
                f"target SNP ({len(polymorphic)} of {n}): the monomorphic ones are "
                "left out", *q_lines], reference_q)
        raise InputError(
            f"has {P.shape[0]} SNPs but the genotypes have {n} (use the same SNPs, in "
            f"the same order, or keep the run's {table_path.name} beside it to match "
            "them)", path=p_path)
    reference = read_snps(table_path)
    if len(reference) != P.shape[0]:
        raise InputError(f"has {len(reference)} SNPs but {Path(p_path).name} has "
                         f"{P.shape[0]} rows", path=table_path)
    match = match_snps(reference, genotypes.variants, ambiguous=ambiguous)
    matched, total = match.counts["matched"], match.counts["reference"]
    if matched < max(min_overlap * total, 1):
        n_ambiguous = match.counts["ambiguous"]
        # below one SNP, the least overlap is the one SNP a projection needs
        at_least_one = min_overlap * total < 1
        raise InputError(
            (f"none of its {total} SNPs match" if at_least_one else
             f"only {matched} of its {total} SNPs "
             f"({100 * matched / max(total, 1):.1f}%) match")
            + " the target's by chromosome, position and alleles or by ID"
            + (": a projection needs at least one" if at_least_one else
               f", below the minimum overlap {100 * min_overlap:g}% (--min-overlap)")
            + (f"; {n_ambiguous} of them, strand-ambiguous (A/T, C/G), were dropped "
               "(--keep-ambiguous keeps them)" if n_ambiguous else ""),
            path=table_path)
    if ambiguous:
        _warn_kept_ambiguous(match, reference)
    return ProjectionInput(match.reference_p(P), match.target, match,
                           [match.describe(), *q_lines], reference_q)
