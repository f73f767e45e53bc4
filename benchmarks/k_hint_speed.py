"""Time and answer of the run's spectral K hint against its individual cap (issue 20).

``admixspec run`` computes :func:`admixspec.spectral.estimate.k_hint` before its
first fit, on a sample of the cohort: its moment is individuals x individuals, so
its cost grows as their square. Simulates a Balding-Nichols cohort in memory
(``start_speed.simulate_cohort``: default 10,000 x 50,000, K = 5, F_ST 0.1,
Dirichlet(0.5), seed 12) and, for each ``--caps`` value and seed, times the hint on
that many individuals drawn as the run draws them
(:func:`admixspec.fit.reference.reference_individuals`, read in place). Prints
one JSON line per hint, with the peak of the memory it allocated (NumPy's
arrays, as :mod:`tracemalloc` traces them: the sample and the moments, not
LAPACK's workspace):

  NUMBA_NUM_THREADS=2 OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \\
      python benchmarks/k_hint_speed.py --caps 1000 2000 5000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from start_speed import add_cohort_arguments, simulate_cohort

from admixspec.fit.reference import reference_individuals
from admixspec.spectral.estimate import k_hint


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cohort_arguments(ap)
    ap.add_argument("--caps", type=int, nargs="+", default=[1000, 2000, 5000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args(argv)
    genotypes = simulate_cohort(args)
    for cap in args.caps:
        for seed in args.seeds:
            tracemalloc.start()
            wall, cpu = time.perf_counter(), time.process_time()
            rows = reference_individuals(genotypes.n_individuals, cap, seed=seed)
            hint = k_hint(genotypes.dosage, individuals=rows, seed=seed,
                          max_individuals=cap)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(json.dumps({
                "individuals": hint.n_individuals, "seed": seed, "K": hint.K,
                "gap": round(float(hint.ratios.max()), 2),
                "wall": round(time.perf_counter() - wall, 2),
                "cpu": round(time.process_time() - cpu, 2),
                "peak_allocated_mib": round(peak / 2**20)}), flush=True)


if __name__ == "__main__":
    main()
