"""What the chains' ridge search buys: plain ML with and without it.

For each data set, K and seed, ``fit_ml(seed=S, threads=1, max_iter=3000)``
twice in this process: as the library runs it (a search along the last ten
iterations' displacement every ten iterations,
:meth:`admixspec.ml.quasi_newton.MapChain.ridge_search`), and with the search
off (``RIDGE_WINDOW`` set beyond the iteration cap). Prints one JSON line per
fit: iterations, passes over the genotypes, seconds, the log-likelihood, and
the searches that moved (and how far, in displacements of their window).

Run (single-threaded; the 1000 Genomes Europeans at K = 5 take minutes):
  NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/ml_ridge.py \\
      --data hapmap3 --K 3 4 5
  ... --data 1kg --K 5 8
  ... --data 1kg-eur --K 3 4 5
Data sets as benchmarks/peers.py (monomorphic SNPs dropped).
"""

from __future__ import annotations

import argparse
import json
import time

from peers import DEFAULT_K, load

import admixspec
from admixspec.ml import quasi_newton

CAP = 3000


def fit(G, K, seed, ridge):
    """One fit, the ridge search on or off; returns its JSON-ready record."""
    window = quasi_newton.RIDGE_WINDOW
    if not ridge:
        quasi_newton.RIDGE_WINDOW = CAP + 1
    try:
        wall = time.perf_counter()
        result = admixspec.fit_ml(G, K, seed=seed, threads=1, max_iter=CAP)
        wall = time.perf_counter() - wall
    finally:
        quasi_newton.RIDGE_WINDOW = window
    moves = [h.ridge_step for h in result.history if h.ridge_step]
    return {"K": K, "seed": seed, "ridge": ridge, "iterations": result.n_iter,
            "passes": result.n_passes, "seconds": round(wall, 1),
            "loglik": round(result.loglik, 3), "converged": result.converged,
            "ridge_moves": len(moves), "ridge_steps": moves}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="hapmap3", choices=sorted(DEFAULT_K))
    ap.add_argument("--K", type=int, nargs="+", default=[3, 4, 5])
    ap.add_argument("--seeds", type=int, nargs="+", default=[42])
    ap.add_argument("--demo", default=None, help="ADAMIXTURE's demo_data.bed")
    args = ap.parse_args()
    G = load(args.data, args.demo).dosage
    admixspec.fit_ml(G[:20, :500], 2, seed=0, threads=1, tol=1.0)  # numba caches
    for K in args.K:
        for seed in args.seeds:
            for ridge in (True, False):
                print(json.dumps({"data": args.data, **fit(G, K, seed, ridge)}),
                      flush=True)


if __name__ == "__main__":
    main()
