"""Reference + projection against the joint fit where the spectral stage runs (#20).

Above the default reference (5,000 individuals) the default runs the spectral
stage on a random 5,000 and, when the estimate is maximum likelihood, ends
with maximum likelihood on everyone (path ``+joint``). This fits one
coalescent cohort of the paper's setting (``simulate_admixture``, rich in
rare alleles, so the spectral stage runs) twice in one process: with
``reference_size=5000`` (reference + projection, as before) and with the
default (the joint fit), and prints each fit's path, seconds, log-likelihood,
Q error against the truth and stage timings as a JSON line.

  NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
      python benchmarks/joint_fit.py --individuals 6000 --snps 20000 --alpha 0.1

(needs msprime: ``pip install -e '.[sim]'``; the simulation takes about a
minute at that size).
"""

from __future__ import annotations

import argparse
import json
import time

import admixspec
from admixspec import fit_admixture, simulate_admixture


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--individuals", type=int, default=6000)
    ap.add_argument("--snps", type=int, default=20000)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("-K", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5, help="the simulation's seed")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    sim = simulate_admixture(args.individuals, args.K, alpha=args.alpha,
                             n_snps=args.snps, seed=args.seed)
    print(json.dumps({"simulated": sim.genotypes.dosage.shape,
                      "seconds": round(time.perf_counter() - start, 1)}), flush=True)
    for label, size in (("reference + projection", 5000), ("default (joint)", None)):
        start = time.perf_counter()
        fit = fit_admixture(sim.genotypes, args.K, seed=3, threads=args.threads,
                            reference_size=size)
        print(json.dumps({
            "run": label, "path": fit.path,
            "seconds": round(time.perf_counter() - start, 1),
            "loglik": round(fit.loglik, 2),
            "q_error": round(admixspec.q_error(sim.Q, fit.Q), 5),
            "timings": {key: round(value, 1) for key, value in fit.timings.items()},
            "joint": fit.diagnostics.get("joint"),
        }), flush=True)


if __name__ == "__main__":
    main()
