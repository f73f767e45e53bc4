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

``--every-start`` instead runs each of a seed's starts
(:func:`admixspec.ml.refine.start_values`) alone to convergence, recording its
log-likelihood after every iteration: a screened fit continues one of these
chains unchanged, so the trajectories tell what any number of screening
iterations would have kept, where it would have ended and how many iterations
the screen would have added. Prints one JSON line per start, then per
``screen_iter`` (0: the starts' own log-likelihoods) the mean gap of the kept
start's end to the best end of its seed, and the screen's added iterations:
  python benchmarks/ml_screen.py --data 1kg --K 8 --seeds 42 1 --every-start
"""

from __future__ import annotations

import argparse
import json
import time

from peers import DEFAULT_K, load

import admixspec
from admixspec.ml.refine import DEFAULT_STARTS, start_values


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="hapmap3", choices=sorted(DEFAULT_K))
    ap.add_argument("--K", type=int, default=5)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--demo", default=None, help="ADAMIXTURE's demo_data.bed")
    ap.add_argument("--every-start", action="store_true",
                    help="run every start alone, then score screening lengths")
    ap.add_argument("--screens", type=int, nargs="+", default=[0, 1, 2, 3, 5])
    args = ap.parse_args()
    G = load(args.data, args.demo).dosage
    admixspec.fit_ml(G[:20, :500], 2, seed=0, threads=1, tol=1.0)  # numba caches
    if args.every_start:
        every_start(G, args)
        return
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


def every_start(G, args):
    """Each start of each seed alone to its end; then the screens' outcomes."""
    chains = {}
    for seed in args.seeds:
        pairs, _ = start_values(G, args.K, seed=seed, starts=DEFAULT_STARTS)
        chains[seed] = []
        for k, (Q, P) in enumerate(pairs):
            # the start's own log-likelihood, as screen_iter=0 ranks it
            own = admixspec.loglikelihood(G, Q, P, threads=1)
            path = []
            wall = time.perf_counter()
            fit = admixspec.fit_ml(G, args.K, Q0=Q, P0=P, threads=1,
                                   callback=lambda info, path=path:
                                   path.append(info.loglik))
            # what a screen of s iterations ranks by: scores[s] (s = 0: own)
            chains[seed].append({"scores": [own, *path], "end": fit.loglik})
            print(json.dumps({
                "data": args.data, "K": args.K, "seed": seed, "start": k,
                "own_loglik": round(own, 2), "end": round(fit.loglik, 2),
                "iterations": fit.n_iter, "wall": round(time.perf_counter() - wall, 2),
                "path": [round(v, 1) for v in path[:10]]}), flush=True)
    for screen in args.screens:
        gaps, added = [], []
        for runs in chains.values():
            # a start that converges within the screen stops there
            ran = [min(screen, len(r["scores"]) - 1) for r in runs]
            kept = max(range(len(runs)), key=lambda k: runs[k]["scores"][ran[k]])
            gaps.append(round(max(r["end"] for r in runs) - runs[kept]["end"], 1))
            added.append(sum(ran) - ran[kept])
        print(f"screen_iter {screen}: gaps to each seed's best end {gaps}, mean "
              f"{sum(gaps) / len(gaps):.1f}; iterations added {added}")


if __name__ == "__main__":
    main()
