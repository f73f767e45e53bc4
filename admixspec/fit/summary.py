"""What ``admixspec info`` reports about genotypes: sizes, filters, missingness, ploidy,
and the spectral hint for K."""

from __future__ import annotations

from ..core.genotypes import Genotypes, snp_statistics
from ..spectral.estimate import k_hint

__all__ = ["genotype_summary", "summary_lines"]


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
        ``eigenvalues``, ``ratios``, ``noise_edge``, ``snps``, ``individuals``,
        ``description``);
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
        hint = k_hint(genotypes.dosage, seed=seed)
        summary["k_hint"] = {
            "K": hint.K, "eigenvalues": hint.eigenvalues.tolist(),
            "ratios": hint.ratios.tolist(), "noise_edge": hint.noise_edge,
            "snps": hint.n_snps, "individuals": hint.n_individuals,
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
