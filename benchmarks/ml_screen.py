"""Does plain ML's multi-start screen pay? One start against the default five, per seed.

For each seed, ``fit_ml(seed=S, starts=1)`` and ``fit_ml(seed=S, starts=5)``
(the default: five SVD + ALS starts ranked by their own log-likelihood, the
first continued) on the same data, single-threaded, in this process. Prints
one JSON line per fit: where it ends, its iterations, wall time, the start's
share of it and which start the screen kept; then, per number of starts, the
mean gap of the ends to the best end seen over all fits.

Run (single-threaded; minutes):
  python benchmarks/ml_screen.py --data hapmap3 --K 5 --seeds 0 1 2 3 4 5
  python benchmarks/ml_screen.py --data hapmap3 --K 4 --seeds 0 1 2 3 4 5 6 7 42 43
Data sets as benchmarks/peers.py (monomorphic SNPs dropped).
"""

from __future__ import annotations

import argparse
import json
import time

from peers import DEFAULT_K, load

import admixspec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="hapmap3", choices=sorted(DEFAULT_K))
    ap.add_argument("--K", type=int, default=5)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--demo", default=None, help="ADAMIXTURE's demo_data.bed")
    args = ap.parse_args()
    G = load(args.data, args.demo).dosage
    admixspec.fit_ml(G[:20, :500], 2, seed=0, threads=1, tol=1.0)  # numba caches
    ends = {1: [], 5: []}
    for seed in args.seeds:
        for starts in ends:
            wall = time.perf_counter()
            fit = admixspec.fit_ml(G, args.K, seed=seed, starts=starts, threads=1)
            wall = time.perf_counter() - wall
            ends[starts].append(fit.loglik)
            print(json.dumps({
                "data": args.data, "K": args.K, "seed": seed, "starts": starts,
                "loglik": round(fit.loglik, 2), "iterations": fit.n_iter,
                "wall": round(wall, 2), "start_seconds": round(fit.timings["init"], 2),
                "kept": fit.diagnostics["start"],
            }), flush=True)
    best = max(max(values) for values in ends.values())
    for starts, values in ends.items():
        gaps = [round(best - value, 1) for value in values]
        print(f"{starts} start(s): gaps to the best end {best:.2f}: {gaps}, "
              f"mean {sum(gaps) / len(gaps):.1f}")


if __name__ == "__main__":
    main()
