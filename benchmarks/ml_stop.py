"""Does ADMIXTURE's stopping rule stop plain ML early on flat likelihoods? (issue 20)

ADMIXTURE, ADAMIXTURE and :func:`admixspec.fit_ml` stop when an iteration
gains less than ``tol`` = 1e-4 log-likelihood units. Under quasi-Newton
acceleration an iteration can gain little while the fit is still far from the
optimum (a ridge or a saddle; docs/benchmarks.md, "Searching along the
ridge"), so issue 20 asks whether the rule stops early where the likelihood is
flat. For each data set and K this fits plain ML (seed 42, one thread unless
the environment says otherwise) and then continues from its end with
``tol`` = 1e-7: the log-likelihood the continuation gains, its iterations and
the largest change of any Q entry say how far from its optimum the rule
stopped.

Data sets are those of ``benchmarks/peers.py`` (``hapmap3``, ``1kg``,
``1kg-eur``: the 379 Europeans of 1000 Genomes, the weakest structure we hold,
and ``demo`` for ADAMIXTURE's demo data).

Run::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/ml_stop.py --data 1kg-eur --K 2 3 4 5

Prints one JSON line per fit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # the data sets, loaded as the peers table loads them

from admixspec import ConvergenceWarning, fit_ml

#: The continuation's tolerance: a thousandth of ADMIXTURE's.
CONTINUATION_TOL = 1e-7


def stop_and_continue(G, K, *, seed=42, max_iter=3000):
    """Plain ML at the default tolerance, then continued from its end at 1e-7."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clock = time.perf_counter()
        fit = fit_ml(G, K, seed=seed, max_iter=max_iter)
        seconds = time.perf_counter() - clock
        clock = time.perf_counter()
        more = fit_ml(G, K, Q0=fit.Q, P0=fit.P, tol=CONTINUATION_TOL, max_iter=max_iter)
        more_seconds = time.perf_counter() - clock
    return {"K": K, "iterations": fit.n_iter, "loglik": round(fit.loglik, 4),
            "seconds": round(seconds, 1), "continued_iterations": more.n_iter,
            "gain": round(more.loglik - fit.loglik, 4),
            "largest_q_change": float(f"{np.abs(more.Q - fit.Q).max():.2e}"),
            "continued_seconds": round(more_seconds, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", nargs="+", default=["hapmap3"],
                        choices=["hapmap3", "1kg", "1kg-eur", "demo"])
    parser.add_argument("--K", type=int, nargs="+", default=[2, 3, 4, 5])
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    for name in args.data:
        G = peers.load(name).dosage
        for K in args.K:
            print(json.dumps({"data": name, **stop_and_continue(G, K, seed=args.seed)}),
                  flush=True)


if __name__ == "__main__":
    main()
