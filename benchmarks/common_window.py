"""The common SNPs' window where rare alleles are plentiful (issue 20).

The spectral scan (:func:`admixspec.spectral.estimate.spectral_scan`) tries
windows of SNPs up to minor allele frequency 0.02, 0.05, 0.1, 0.2 and 0.5 and
keeps the one whose tensor is closest to orthogonally decomposable. Where at
least 30% of the SNPs are rare the default skips the last window's pass
(``common_windows=False``; its SNPs still anchor the column space). This
script shows why and what it changes:

* ``tally``: which window won the scan in every cached fit of
  ``benchmarks/choice_grid.py`` (the K = 3 grid, the realistic suite and the
  K = 5 grid), split by rare-allele share;
* ``compare``: the default's spectral stage run with and without the common
  window's pass on each data set (ADAMIXTURE's demo data at K = 2-8,
  ``data/example.bed`` at K = 2-6, coalescent data at K = 4-6, and with
  ``--grid-replicates`` the grid's mosaic cells and the suite's settings with
  at least 30% rare SNPs): the window that won with every window scored,
  whether the two estimates are the same bytes, and the two stages' seconds
  (alternating, one process).

Usage::

    python benchmarks/common_window.py tally
    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/common_window.py compare --grid-replicates 1 2
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import time
from pathlib import Path

import choice_grid
import numpy as np
import peers

import admixspec
from admixspec.core.genotypes import allele_counts
from admixspec.fit.choice import MIN_RARE_SHARE
from admixspec.fit.default import rare_allele_share, spectral_stage
from admixspec.spectral.estimate import DEFAULT_WINDOWS

ROOT = Path(__file__).resolve().parent.parent


def run_tally(args):
    tally = collections.Counter()
    for path in sorted(glob.glob(str(choice_grid.CACHE / "**" / "fits" / "*.npz"),
                                 recursive=True)):
        row = json.loads(str(np.load(path)["row"]))
        rare = row["rare_allele_share"] >= MIN_RARE_SHARE
        tally[(rare, row.get("diag_max_frequency"))] += 1
    for rare in (True, False):
        wins = {end: n for (r, end), n in sorted(tally.items(), key=str) if r == rare}
        print(f"rare share {'>=' if rare else '<'} {MIN_RARE_SHARE}: "
              f"{sum(wins.values())} fits, winning window {wins}")


def stage(G, K, counts, common_windows):
    clock = time.perf_counter()
    result = spectral_stage(G, K, counts=counts, windows=DEFAULT_WINDOWS,
                            n_starts=None, seed=0, common_windows=common_windows)
    return result, time.perf_counter() - clock


def compare(name, G, K):
    counts = allele_counts(G)
    every, every_s = stage(G, K, counts, True)
    rare, rare_s = stage(G, K, counts, False)
    same = (every.Q is None and rare.Q is None) or (
        every.Q is not None and rare.Q is not None and np.array_equal(every.Q, rare.Q))
    print(json.dumps({"data": name, "K": K, "individuals": G.shape[0],
                      "rare_share": round(rare_allele_share(G, counts=counts), 3),
                      "winner": every.diagnostics.get("max_frequency"),
                      "same_bytes": bool(same),
                      "seconds_every_window": round(every_s, 3),
                      "seconds_without_common": round(rare_s, 3)}), flush=True)


def datasets(grid_replicates):
    demo = peers.load("demo").dosage
    for K in range(2, 9):
        yield "demo", demo, K
    example = admixspec.read_genotypes(ROOT / "data" / "example.bed").dosage
    for K in range(2, 7):
        yield "example", example, K
    for K in (4, 5, 6):
        for m, seed in ((200, 1), (500, 2)):
            rng = np.random.default_rng(seed)
            for alpha in (0.2, 1.0):
                proportions = rng.dirichlet([alpha] * K, m)
                sim = admixspec.simulate_admixture(m, K, proportions=proportions,
                                                   n_snps=20_000, seed=seed)
                yield f"coalescent-a{alpha}-s{seed}", sim.genotypes.dosage, K
    cells = choice_grid.cells(("mosaic",)) + choice_grid.suite_cells()
    for replicate in grid_replicates:
        for cell in cells:
            G, Q = choice_grid.load_data(cell, replicate)
            if rare_allele_share(G) >= MIN_RARE_SHARE:
                yield f"{choice_grid.cell_name(cell)}_{replicate}", G, Q.shape[1]


def run_compare(args):
    for name, G, K in datasets(args.grid_replicates):
        compare(name, G, K)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=("tally", "compare"))
    parser.add_argument("--grid-replicates", type=int, nargs="*", default=[])
    args = parser.parse_args(argv)
    {"tally": run_tally, "compare": run_compare}[args.stage](args)


if __name__ == "__main__":
    main()
