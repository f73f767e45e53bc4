"""The default's estimator choice on real array data (issue 19).

HapMap3 (the ADMIXTURE tutorial's 324 x 13,928, monomorphic SNPs kept as ADMIXTURE
does) for K = 1-5 against ADMIXTURE 1.3's own logged log-likelihoods, and 1000
Genomes phase 1 (1,092 x 14,079 thinned array SNPs) for K = 2-8: per K the default
fit (``fit_admixture``, ``refine="auto"``), its path, the choice's statistics
(rare-allele share, individuals near each extreme of the spectral Q), the
log-likelihood (HapMap3: relative difference to ADMIXTURE's, positive = above) and
CPU seconds. Both data sets must get maximum likelihood (issue 19's "done when").

Run (one thread per fit; CPU seconds from ``time.process_time``)::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/choice_realdata.py [--data hapmap3 1kg] [--statistics-only]

``--statistics-only`` runs the spectral path alone (``refine=False``) and applies the
choice to its Q: the statistics and decision without the ML fit.

Needs ../shared/realdata (the project workspace).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from pathlib import Path

from admixspec import ConvergenceWarning, fit_admixture, read_genotypes
from admixspec.fit.choice import choose_estimator

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "realdata"
HAPMAP3 = REAL / "hapmap3_admixture_tutorial"
KG = REAL / "1kg_phase1_1092_flashpca" / (
    "1kg.ref.phase1_release_v3.20101123_thinned_autosomal_overlap.bed")
DATA = {"hapmap3": (HAPMAP3 / "hapmap3.bed", range(1, 6)), "1kg": (KG, range(2, 9))}


def admixture_loglik(K):
    """ADMIXTURE 1.3's final log-likelihood on the tutorial data (its log)."""
    log = (HAPMAP3 / "starmie_extdata" / f"log{K}.out").read_text()
    return float(re.findall(r"^Loglikelihood: (\S+)", log, re.M)[-1])


def run(name, *, seed=1, threads=1, statistics_only=False):
    path, ks = DATA[name]
    if not path.exists():
        sys.exit(f"data not found: {path}")
    # ADMIXTURE keeps monomorphic SNPs: keep them so log-likelihoods compare
    G = read_genotypes(path, drop_monomorphic=False).dosage
    print(f"== {name}: {G.shape[0]} x {G.shape[1]}", flush=True)
    rows = []
    for K in ks:
        clock, cpu = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = fit_admixture(G, K, seed=seed, threads=threads,
                                   refine=False if statistics_only else "auto")
        row = {"data": name, "K": K, "path": result.path, "loglik": result.loglik,
               "converged": result.converged, "n_iter": result.n_iter,
               "wall_seconds": time.perf_counter() - clock,
               "cpu_seconds": time.process_time() - cpu,
               "rare_allele_share": result.diagnostics.get("rare_allele_share")}
        choice = result.diagnostics.get("choice")
        if statistics_only and K > 1:
            choice = choose_estimator(result.Q, row["rare_allele_share"]).record()
            row["decision"] = choice["estimator"]
        if choice is not None:
            row["near_extreme"] = choice["statistics"]["near_extreme"]
            row["choice_seconds"] = choice["seconds"]
        if name == "hapmap3" and not statistics_only:
            reference = admixture_loglik(K)
            row["admixture_loglik"] = reference
            row["relative_to_admixture"] = (result.loglik - reference) / abs(reference)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", nargs="+", choices=list(DATA), default=list(DATA))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--statistics-only", action="store_true",
                        help="the spectral path and the choice's statistics, no ML")
    args = parser.parse_args(argv)
    for name in args.data:
        run(name, seed=args.seed, statistics_only=args.statistics_only)


if __name__ == "__main__":
    main()
