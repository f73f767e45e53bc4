"""LD pruning: admixspec ``--indep-pairwise`` against ``plink1.9 --indep-pairwise``.

For each data set and setting, both tools prune the same SNPs (admixspec's
reader and default filters first; the filtered set is written as a PLINK
fileset that plink1.9 reads), then the script reports

* the SNPs kept by each, by both, and their Jaccard index;
* each tool's pruning time, the best of ``--repeats`` runs (plink1.9
  single-threaded, wall time of the whole command; admixspec the
  :func:`admixspec.core.filters.filter_indep_pairwise` call on data already in
  memory);
* the ancestry proportions fitted by :func:`admixspec.fit_admixture`
  (default pipeline, one seed) on each pruned set, and their mean absolute
  difference after matching components (:func:`admixspec.core.metrics.q_error`);
  for scale, each one's difference from the fit on all (unpruned) SNPs, and
  where the data set has a true Q (the simulated example) its error against
  that. Identical SNP sets are fitted once (a difference of 0 by
  construction).

Of a pair above the threshold, scikit-allel (which admixspec uses) drops the
later SNP and PLINK 1.9 the one with the lower minor allele frequency, so on
data with dense LD the two keep different, similar-sized sets.

Settings: the 1000 Genomes phase 1 set of ``../shared/realdata`` (1,092
individuals, already thinned) with the ``50 5 0.2`` of PLINK's and
ADMIXTURE's manuals and a strict ``200 20 0.02``, K = 5; the HapMap3
ADMIXTURE tutorial set and the repository's msprime example (dense LD), both
``50 5 0.2`` and K = 3. Fits are single-threaded (``--threads 1``) and take
minutes on 1,092 individuals.

Usage::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/ld_pruning.py \\
        [--only "1000 Genomes"] [--setting 200 20 0.02] [--seed 1] [--threads 1]
        [--repeats 3] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from admixspec import fit_admixture
from admixspec.core.filters import filter_indep_pairwise
from admixspec.core.metrics import q_error
from admixspec.io import read_genotypes, read_q, write_plink

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
DATASETS = {
    "1000 Genomes": REALDATA / "1kg_phase1_1092_flashpca"
    / "1kg.ref.phase1_release_v3.20101123_thinned_autosomal_overlap.bed",
    "HapMap3": REALDATA / "hapmap3_admixture_tutorial" / "hapmap3.bed",
    "msprime example": Path(__file__).resolve().parents[1] / "data" / "example.bed",
}
#: (data set, --indep-pairwise WINDOW STEP R2, K)
SETTINGS = [
    ("1000 Genomes", (50, 5, 0.2), 5),
    ("1000 Genomes", (200, 20, 0.02), 5),
    ("HapMap3", (50, 5, 0.2), 3),
    ("msprime example", (50, 5, 0.2), 3),
]


def best_time(action, repeats: int):
    """``action()``'s result and its best wall time over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - start)
    return result, min(times)


def plink_prune(prefix: Path, setting, workdir: Path) -> set:
    """IDs plink1.9 keeps (its ``.prune.in``)."""
    out = workdir / "plink"
    command = [
        "plink1.9", "--bfile", str(prefix), "--indep-pairwise",
        *(str(value) for value in setting), "--threads", "1", "--out", str(out),
    ]
    subprocess.run(command, check=True, capture_output=True)
    return set((out.with_suffix(".prune.in")).read_text().split())


def fit_sets(genotypes, snp_sets: dict, K: int, seed: int, threads: int):
    """Q fitted on each named set of SNP IDs (one fit per distinct set).

    Returns the Q of each set, and per fit its wall time and whether the
    default pipeline refined the spectral estimate by maximum likelihood.
    """
    fitted: dict = {}
    Q, seconds, refined = {}, {}, {}
    for name, ids in snp_sets.items():
        key = frozenset(ids)
        if key not in fitted:
            columns = np.flatnonzero(genotypes.variants["id"].isin(ids).to_numpy())
            start = time.perf_counter()
            result = fit_admixture(genotypes.subset(snps=columns), K, seed=seed,
                                   threads=threads)
            fitted[key] = result.Q
            seconds[name] = time.perf_counter() - start
            refined[name] = result.diagnostics.get("refine")
        Q[name] = fitted[key]
    return Q, {"seconds": seconds, "refined_by_ml": refined}


def compare(name: str, setting, K: int, seed: int, threads: int, repeats: int) -> dict:
    """One row of the comparison (see the module docstring)."""
    if not DATASETS[name].exists():
        raise SystemExit(f"{DATASETS[name]} not found (the {name} data set)")
    genotypes = read_genotypes(DATASETS[name])
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "filtered"
        write_plink(prefix, genotypes)
        plink_ids, plink_seconds = best_time(
            lambda: plink_prune(prefix, setting, Path(tmp)), repeats
        )
    pruned, admixspec_seconds = best_time(
        lambda: filter_indep_pairwise(genotypes, *setting), repeats
    )
    ours = set(pruned.variants["id"])
    both = ours & plink_ids
    row = {
        "data": name, "indep_pairwise": list(setting), "K": K, "seed": seed,
        "individuals": genotypes.n_individuals, "snps_in": genotypes.n_snps,
        "kept_admixspec": len(ours), "kept_plink": len(plink_ids),
        "kept_both": len(both),
        "jaccard": len(both) / len(ours | plink_ids),
        "seconds_admixspec": admixspec_seconds, "seconds_plink": plink_seconds,
    }
    sets = {
        "admixspec": ours, "plink": plink_ids, "unpruned": set(genotypes.variants["id"])
    }
    Q, row["fits"] = fit_sets(genotypes, sets, K, seed, threads)
    row["q_mad"] = q_error(Q["plink"], Q["admixspec"])
    references = {"unpruned": Q["unpruned"]}
    truth = DATASETS[name].with_suffix(".truth.Q")
    if truth.exists():
        references["truth"] = read_q(truth)
    for label, reference in references.items():
        row[f"q_error_vs_{label}"] = {
            kept_by: q_error(reference, Q[kept_by]) for kept_by in ("admixspec", "plink")
        }
    print(json.dumps(row), flush=True)
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(DATASETS),
                        help="run only this data set's settings (repeatable)")
    parser.add_argument("--setting", nargs=3, type=float, metavar=("W", "S", "R2"),
                        help="run only this --indep-pairwise setting")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    rows = [compare(name, setting, K, args.seed, args.threads, args.repeats)
            for name, setting, K in SETTINGS
            if (not args.only or name in args.only)
            and (not args.setting or list(setting) == args.setting)]
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
