"""Wall time and accuracy of the spectral estimate against ML EM on a larger data set.

Issue 4's speed criterion: 500 individuals x 100,000 SNPs, K = 4 (msprime, the paper's
demography with 4 populations), the spectral estimate (``refine=False``) against the
project's accelerated ML EM run to convergence from a random start (ADMIXTURE's model
and stopping rule), same thread count; ``--individuals``, ``--K`` and ``--snps`` change
the cohort, and ``--spectral-only`` leaves out the ML fit. ``--huge`` instead times the
spectral estimate on 2,000 x 200,000, K = 6 (Balding-Nichols, generated in blocks) and
prints its peak resident memory.

Usage::

    python benchmarks/spectral_speed.py [--threads 2] [--alpha 1.0]
    python benchmarks/spectral_speed.py --individuals 2000 --snps 50000 --K 5 \\
        --alpha 0.5 --threads 1 --spectral-only
    python benchmarks/spectral_speed.py --huge
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings

import numpy as np

from admixspec import fit_admixture, fit_ml, q_error, simulate_admixture


def peak_rss_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def huge(threads):
    rng = np.random.default_rng(7)
    m, n, K = 2000, 200_000, 6
    Q = rng.dirichlet(np.full(K, 0.5), size=m)
    ancestral = rng.uniform(0.05, 0.95, n)
    shape = (1 - 0.1) / 0.1
    dosage = np.empty((m, n), dtype=np.int8)
    for start in range(0, n, 10_000):
        stop = min(start + 10_000, n)
        P = rng.beta(ancestral[start:stop, None] * shape,
                     (1 - ancestral[start:stop, None]) * shape, (stop - start, K))
        dosage[:, start:stop] = rng.binomial(2, Q @ P.T)
    clock = time.perf_counter()
    result = fit_admixture(dosage, K, seed=1, refine=False, threads=threads)
    seconds = time.perf_counter() - clock
    print(f"huge 2000 x 200000 K=6: spectral estimate {seconds:.1f} s, "
          f"peak RSS {peak_rss_gib():.2f} GiB, Q error {q_error(Q, result.Q):.4f}, "
          f"timings {result.timings}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--length", type=float, default=35e6)
    parser.add_argument("--snps", type=int, default=100_000)
    parser.add_argument("--max-iter", type=int, default=10_000,
                        help="EM iteration limit (the run must converge to count)")
    parser.add_argument("--individuals", type=int, default=500)
    parser.add_argument("--K", type=int, default=4)
    parser.add_argument("--seed", type=int, default=3, help="the simulation's seed")
    parser.add_argument("--spectral-only", action="store_true",
                        help="time the spectral estimate only")
    parser.add_argument("--huge", action="store_true")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.huge:
        huge(args.threads)
        return
    K = args.K
    sim = simulate_admixture(args.individuals, K, alpha=args.alpha,
                             sequence_length=args.length, n_snps=args.snps,
                             seed=args.seed)
    G = sim.genotypes.dosage
    print(f"data: {G.shape[0]} x {G.shape[1]}, K={K}, alpha={args.alpha}", flush=True)
    clock = time.perf_counter()
    spectral = fit_admixture(G, K, seed=1, refine=False, threads=args.threads)
    t_spectral = time.perf_counter() - clock
    print(f"spectral: {t_spectral:.1f} s, Q error {q_error(sim.Q, spectral.Q):.4f}, "
          f"loglik {spectral.loglik:.1f}, timings {spectral.timings}", flush=True)
    if args.spectral_only:
        return
    clock = time.perf_counter()
    ml = fit_ml(G, K, init="random", seed=1, threads=args.threads,
                max_iter=args.max_iter)
    t_ml = time.perf_counter() - clock
    print(f"ML EM (random start): {t_ml:.1f} s, {ml.n_iter} iterations "
          f"({'converged' if ml.converged else 'NOT converged'}), Q error "
          f"{q_error(sim.Q, ml.Q):.4f}, loglik {ml.loglik:.1f}", flush=True)
    print(f"speed-up {t_ml / t_spectral:.1f}x; Q error ratio spectral/ML "
          f"{q_error(sim.Q, spectral.Q) / q_error(sim.Q, ml.Q):.2f}")


if __name__ == "__main__":
    main()
