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

``--data hapmap3`` (or ``1kg``, ``demo``: ``peers.py``'s loader) takes a real data
set instead; ``--repeats`` times each hint again in the same process;
``--no-trace`` times without :mod:`tracemalloc` (no allocation column then):

  OPENBLAS_NUM_THREADS=1 python benchmarks/k_hint_speed.py --data hapmap3 \\
      --caps 200 300 324 --seeds 0 --repeats 3 --no-trace

(Until the hint unbiased its diagonal instead of completing it, a
``--dense-limits`` option timed the completion's dense and Lanczos
eigensolvers; see docs/benchmarks.md.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from start_speed import add_cohort_arguments, cohort_genotypes

from admixspec.fit.reference import reference_individuals
from admixspec.spectral.estimate import k_hint


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cohort_arguments(ap)
    ap.add_argument("--caps", type=int, nargs="+", default=[1000, 2000, 5000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-trace", action="store_true",
                    help="time without tracemalloc (no allocation column)")
    args = ap.parse_args(argv)
    genotypes = cohort_genotypes(args)
    for cap in args.caps:
        for seed in args.seeds:
            for _ in range(args.repeats):
                print(json.dumps(_timed_hint(genotypes, cap, seed, not args.no_trace)),
                      flush=True)


def _timed_hint(genotypes, cap, seed, trace=True):
    if trace:
        tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    rows = reference_individuals(genotypes.n_individuals, cap, seed=seed)
    hint = k_hint(genotypes.dosage, individuals=rows, seed=seed, max_individuals=cap)
    peak = None
    if trace:
        peak = round(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
    return {"individuals": hint.n_individuals, "seed": seed, "K": hint.K,
            "gap": round(float(hint.ratios.max()), 2),
            "wall": round(time.perf_counter() - wall, 3),
            "cpu": round(time.process_time() - cpu, 3),
            "peak_allocated_mib": peak}


if __name__ == "__main__":
    main()
