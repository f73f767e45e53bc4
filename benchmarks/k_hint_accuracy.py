"""How often the spectral K hint finds the simulated K, by cohort size.

Balding-Nichols cohorts (:func:`admixspec.simulate_balding_nichols`, F_ST 0.1,
5,000 SNPs) over K x individuals x Dirichlet alpha x missing-call rate, a few
seeds each; per cell the hints :func:`admixspec.spectral.estimate.k_hint` gives
(``seed=0``, as ``admixspec run`` and ``admixspec info`` call it), then the
count of right hints per number of individuals and overall. Then the hint on
the real data sets of ``peers.py`` (K and the leading ratios). One thread is
enough: each hint takes milliseconds to a second.

  python benchmarks/k_hint_accuracy.py
  python benchmarks/k_hint_accuracy.py --real hapmap3 1kg 1kg-eur demo
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from admixspec import simulate_balding_nichols
from admixspec.spectral.estimate import k_hint

KS = (2, 3, 4, 6)
SIZES = (16, 24, 40, 80, 150)
ALPHAS = (0.2, 1.0)
MISSING = (0.0, 0.1)
SEEDS = (100, 101, 102, 103)
N_SNPS = 5_000
FST = 0.1


def simulated(args):
    right, total = {m: 0 for m in SIZES}, {m: 0 for m in SIZES}
    for K, m, alpha, missing in itertools.product(KS, SIZES, ALPHAS, MISSING):
        hints = []
        for seed in SEEDS:
            sim = simulate_balding_nichols(m, N_SNPS, K, fst=FST, alpha=alpha,
                                           missing_rate=missing, seed=seed)
            hints.append(k_hint(sim.genotypes.dosage, seed=0).K)
        right[m] += sum(hint == K for hint in hints)
        total[m] += len(hints)
        print(f"K = {K}, {m} individuals, alpha {alpha:g}, missing {missing:g}: "
              f"hints {hints}", flush=True)
    print("\n| individuals | right hints |\n|---|---|")
    for m in SIZES:
        print(f"| {m} | {right[m]} / {total[m]} |")
    print(f"| all | {sum(right.values())} / {sum(total.values())} |")


def real(names):
    import peers  # the real data sets' loader

    for name in names:
        genotypes = peers.load(name)
        clock = time.perf_counter()
        hint = k_hint(genotypes.dosage, seed=0)
        print(f"{name}: {hint.describe()} ({time.perf_counter() - clock:.2f} s)",
              flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", nargs="+", metavar="NAME",
                        help="peers.py data sets to hint instead of the simulations")
    args = parser.parse_args(argv)
    if args.real:
        real(args.real)
    else:
        simulated(args)


if __name__ == "__main__":
    main()
