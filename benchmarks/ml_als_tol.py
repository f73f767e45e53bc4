"""The ML start's ALS tolerance: maps, iterations and the optimum reached.

For each data set, K, seed and ``--tols`` value, sets
:data:`admixspec.ml.start.ALS_TOL` and runs :func:`admixspec.fit_ml` (its
default screening of SVD + subspace ALS starts) in this process, timed
inside it. Prints one JSON line per fit: wall seconds of the fit, the start's
seconds (``timings["init"]``: the SVD sketches, their ALS and the screen),
the ALS maps of each start, likelihood iterations and the log-likelihood
reached.

Run (single-threaded, on a quiet machine for the seconds; maps, iterations
and log-likelihoods do not depend on load):
  NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
    python benchmarks/ml_als_tol.py --data hapmap3 --K 4 5 --seeds 42 1 2 \\
    --tols 1e-9 1e-4
Data sets as benchmarks/peers.py (monomorphic SNPs dropped).
"""

from __future__ import annotations

import argparse
import json
import time

from peers import load

import admixspec
from admixspec.ml import start


def fit(G, K, seed, tol):
    """One ``fit_ml`` with the start's ALS tolerance ``tol``; a JSON-able dict."""
    maps = []
    als = start.subspace_als

    def counted(*args, **kwargs):
        result = als(*args, **kwargs)
        maps.append(result[2]["maps"])
        return result

    default = start.ALS_TOL
    start.ALS_TOL, start.subspace_als = tol, counted
    try:
        began = time.perf_counter()
        result = admixspec.fit_ml(G, K, seed=seed, threads=1)
        wall = time.perf_counter() - began
    finally:
        start.ALS_TOL, start.subspace_als = default, als
    return dict(K=K, seed=seed, als_tol=tol, wall=round(wall, 2),
                start=round(result.timings["init"], 2), als_maps=maps,
                iterations=result.n_iter, loglik=round(result.loglik, 2))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="hapmap3",
                    choices=["hapmap3", "1kg", "sim2000", "demo"])
    ap.add_argument("--K", type=int, nargs="+", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[42])
    ap.add_argument("--tols", type=float, nargs="+", default=[1e-9, 1e-4])
    ap.add_argument("--demo", default=None, help="ADAMIXTURE's demo_data.bed")
    args = ap.parse_args(argv)
    G = load(args.data, args.demo).dosage
    admixspec.fit_ml(G[:20, :500], 2, seed=0, threads=1, tol=1.0)  # numba caches
    for K in args.K:
        for seed in args.seeds:
            for tol in args.tols:
                row = {"data": args.data, **fit(G, K, seed, tol)}
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
