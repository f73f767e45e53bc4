"""Traced peak memory and time of the spectral estimate at a reference's size.

The spectral stage's moments are individuals x individuals, so at the default
reference of 5,000 people its arrays, not the genotypes, set a streamed run's
host memory on a GPU (docs/gpu.md). This fits ``method="spectral", refine=False``
on a Balding-Nichols simulation with ``tracemalloc`` on (NumPy reports its arrays
to it; the int8 genotypes are made before it starts) and prints the wall time,
the traced peak, the stage timings of the result and the Q error.

Usage::

    python benchmarks/spectral_memory.py --individuals 5000 --snps 20000 --K 5
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

from admixspec import fit_admixture, q_error, simulate_balding_nichols


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--individuals", type=int, default=5000)
    parser.add_argument("--snps", type=int, default=20000)
    parser.add_argument("--K", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sim = simulate_balding_nichols(args.individuals, args.snps, args.K, seed=args.seed)
    G = sim.genotypes.dosage
    # compile the kernels outside the measurement
    fit_admixture(G[:200, :2000], args.K, method="spectral", refine=False,
                  seed=args.seed, threads=args.threads)
    tracemalloc.start()
    clock = time.perf_counter()
    fit = fit_admixture(G, args.K, method="spectral", refine=False, seed=args.seed,
                        threads=args.threads)
    wall = time.perf_counter() - clock
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    square = args.individuals**2 * 8 / 2**20
    print(f"{args.individuals} x {args.snps}, K = {args.K}: {wall:.1f} s, traced peak "
          f"{peak / 2**20:.0f} MiB (an individuals x individuals float64 array: "
          f"{square:.0f} MiB), Q error {q_error(sim.Q, fit.Q):.4f}, path {fit.path}")
    print("timings:", {name: round(value, 2) for name, value in fit.timings.items()})


if __name__ == "__main__":
    main()
