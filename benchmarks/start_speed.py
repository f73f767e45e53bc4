"""Time of the ML start (randomized SVD + subspace ALS) on a large cohort (issue 20).

Simulates a Balding-Nichols cohort in memory (default 10,000 x 50,000, K = 5,
F_ST 0.1, Dirichlet(0.5), seed 12) and times
:func:`admixspec.ml.start.subspace_starts` with ``fit_ml``'s default number of
starts, split into the randomized SVD and the rest, ``--repeats`` times (the
first run includes loading numba's cached kernels). Prints one JSON line per
run. ``--data hapmap3`` (or ``1kg``, ``demo``) times the starts on a real data set
as benchmarks/peers.py loads it instead. Compare trees with ``PYTHONPATH``:

  NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
      python benchmarks/start_speed.py --repeats 3
  NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
      python benchmarks/start_speed.py --data hapmap3 -K 4 --repeats 4
"""

from __future__ import annotations

import argparse
import json
import time

from admixspec import simulate_balding_nichols
from admixspec.ml import initial, start
from admixspec.ml.refine import DEFAULT_STARTS


def add_cohort_arguments(parser):
    """``--individuals``, ``--snps`` and ``-K`` of :func:`simulate_cohort`, and
    ``--data`` for a real data set instead (:func:`cohort_genotypes`)."""
    parser.add_argument("--individuals", type=int, default=10_000)
    parser.add_argument("--snps", type=int, default=50_000)
    parser.add_argument("-K", type=int, default=5)
    parser.add_argument("--data", choices=("hapmap3", "1kg", "demo"),
                        help="a real data set (benchmarks/peers.py) instead of the "
                             "cohort")


def simulate_cohort(args):
    """The large cohort: Balding-Nichols, F_ST 0.1, Dirichlet(0.5), seed 12."""
    return simulate_balding_nichols(args.individuals, args.snps, args.K, fst=0.1,
                                    alpha=0.5, seed=12).genotypes


def cohort_genotypes(args):
    """``--data``'s genotypes (as peers.py loads them), or the cohort's."""
    if args.data:
        from peers import load  # the benchmarks' own loader, beside this script

        return load(args.data)
    return simulate_cohort(args)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cohort_arguments(ap)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    G = cohort_genotypes(args).dosage
    svd_seconds = []
    timed_svd = initial._randomized_svd

    def svd(*positional, **options):
        clock = time.perf_counter()
        try:
            return timed_svd(*positional, **options)
        finally:
            svd_seconds.append(time.perf_counter() - clock)

    start._randomized_svd = svd  # the start's own call, timed
    for _ in range(args.repeats):
        svd_seconds.clear()
        clock = time.perf_counter()
        starts = start.subspace_starts(G, args.K, DEFAULT_STARTS, seed=12)
        total = time.perf_counter() - clock
        print(json.dumps({"shape": list(G.shape), "K": args.K, "starts": len(starts),
                          "seconds": round(total, 2),
                          "svd_seconds": round(sum(svd_seconds), 2)}), flush=True)


if __name__ == "__main__":
    main()
