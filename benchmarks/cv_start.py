"""Where cross-validation's folds start when the default keeps the spectral estimate.

``admixspec run -K 2 3 4 5 --cv 5`` is how users pick K. ADMIXTURE starts each
fold's fit from its full-data fit, a maximum of the likelihood; when the
default keeps the spectral estimate (paths ``spectral``,
``spectral+projection``), that estimate is not one. This compares, for each
K of a sweep, the folds started from the spectral estimate (before) with the
folds started from plain ML's fit of the full data, fitted first (after,
:func:`admixspec.fit.pipeline.add_cv`): CV error and wall seconds of the
cross-validation on one thread (the ML fit included). K where the default
chose a likelihood path are run once (both ways are the same there).

Data: the seed paper's coalescent setting (:func:`admixspec.simulate_admixture`,
three populations, Dirichlet(1) and (10)) and a Balding-Nichols cohort at
Dirichlet(10), 200 individuals each.

  OPENBLAS_NUM_THREADS=1 python benchmarks/cv_start.py
"""

from __future__ import annotations

import argparse
import time
import warnings

from admixspec import (
    ConvergenceWarning,
    cross_validate,
    fit_admixture,
    simulate_admixture,
    simulate_balding_nichols,
)
from admixspec.fit.pipeline import is_spectral_estimate

FOLDS = 5


def data_sets(seed):
    """(name, dosage) of each simulated data set."""
    for alpha in (1.0, 10.0):
        sim = simulate_admixture(200, 3, alpha=alpha, n_snps=20_000, seed=seed)
        yield f"paper-a{alpha:g}", sim.genotypes.dosage
    sim = simulate_balding_nichols(200, 10_000, 3, fst=0.1, alpha=10.0, seed=seed)
    yield "bn-a10", sim.genotypes.dosage


def sweep(name, G, Ks, seed):
    for K in Ks:
        result = fit_admixture(G, K, seed=seed, cv=FOLDS, threads=1)
        after = result.timings["cv"]  # wall seconds, the ML fit included
        row = (f"| {name} | {K} | {result.path} | {result.cv.error:.5f} | "
               f"{after:.1f} |")
        if is_spectral_estimate(result.path):
            clock = time.perf_counter()
            before = cross_validate(G, K, folds=FOLDS, seed=seed,
                                    start=(result.Q, result.P), threads=1)
            seconds = time.perf_counter() - clock
            row += f" {before.error:.5f} | {seconds:.1f} |"
        else:
            row += " (the same) | |"
        print(row, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, nargs="+", default=[2, 3, 4, 5])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print("| data | K | default's path | CV error, folds from plain ML's fit | "
          "CV s (after) | CV error, folds from the spectral estimate | CV s (before) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, G in data_sets(args.seed):
            sweep(name, G, args.K, args.seed)


if __name__ == "__main__":
    main()
