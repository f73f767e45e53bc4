"""The ML start and the accelerator: where starts end, how fast, what screening buys.

For each K: ``--starts N`` starts (:func:`admixspec.ml.start.subspace_starts`
with ``--seed``: the first is the single start, the others the screening's
further starts, from new SVD sketches or with ``--mix`` from mixes of the
first sketch's directions), each
fitted on its own (``fit_ml(Q0=..., P0=...)``, single-threaded) with every
``--secants`` setting (1: SQUAREM's step; 3: the default quasi-Newton).
Reports per fit: the start's log-likelihood and cost, iterations, the
iteration from which it is within 1 and 0.1 log-likelihood units of its end,
and where it ends. ``--adamixture SEED ...`` also fits from ADAMIXTURE 1.8.8's
own SVD + ALS start (run by its interpreter in ``PEERS_BIN``, its defaults) for
comparison. (The previous start, ``svd_init``, and this script's ``--old``
option that compared it were deleted after ``f676406``.)

With several starts and one ``--secants``, it then replays the screening on
those trajectories: for every subset of n = 2, 3 starts, screening for S
iterations (0: by the start's log-likelihood alone) keeps the subset's best
at iteration S; the table gives the mean log-likelihood gap of the kept
start's end to the best end seen, how often it is the best (within 1 unit),
on HapMap3 how often it ends below ADMIXTURE 1.3's published optimum (its Q
and P, recomputed on these SNPs), and the mean iterations paid (S per
screened start, plus the kept start's remaining ones).

Run (single-threaded; seconds are CPU seconds of this process):
  python benchmarks/ml_start.py --data hapmap3 --K 4 5 --starts 10 --secants 3 --mix
  python benchmarks/ml_start.py --data 1kg --K 5 --secants 1 3 --tol 1e-4 1e-7
  python benchmarks/ml_start.py --data demo --K 7 --seed 43
  python benchmarks/ml_start.py --data hapmap3 --K 4 --adamixture 1 2 3 4 5
Data sets as benchmarks/peers.py (monomorphic SNPs dropped).
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from peers import DEFAULT_K, PEERS, load, oriented_loglik

import admixspec
from admixspec.io import write_plink
from admixspec.ml.start import subspace_starts

#: Run by ADAMIXTURE's own interpreter: its SVD + ALS start (BR-QN's
#: default) for each seed, saved as .npz with the log-likelihood it computes.
_ADAMIXTURE_START = """
import logging, sys
import numpy as np
logging.disable(logging.INFO)
from adamixture.src import utils
from adamixture.src.adamixture import setup, initialize_k
bed, K, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
G, N, M = utils.read_data(bed, packed=False, chunk_size=8192, chrom_mode="all",
                          autosomes=22)
for seed in map(int, sys.argv[4].split(",")):
    dev, tpb, f, U, S, V, G = setup(G, N, M, K, seed, 5, 0.1, 8192, "cpu",
                                    original=True, init_original="als")
    P, Q, logl = initialize_k(G, N, M, K, f, seed, 5, 0.1, 1000, 1e-4, 8192, dev,
                              tpb, original=True, init_original="als")
    np.savez(f"{out}.{seed}.npz", P=P, Q=Q, logl=logl)
"""


def adamixture_starts(geno, K, seeds):
    """ADAMIXTURE's SVD + ALS starts (its defaults) on ``geno``: [(label, Q, P)]."""
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "data"
        write_plink(prefix, geno)
        subprocess.run([str(PEERS / "python"), "-c", _ADAMIXTURE_START, f"{prefix}.bed",
                        str(K), f"{tmp}/start", ",".join(map(str, seeds))], check=True,
                       capture_output=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        starts = []
        for seed in seeds:
            saved = np.load(f"{tmp}/start.{seed}.npz")
            Q, P = saved["Q"], saved["P"]
            # its P may count the other allele: the one that reproduces its value
            _, how = oriented_loglik(geno.dosage, Q, P, float(saved["logl"]), 1)
            P = np.clip(1.0 - P if how.startswith("1-P") else P, 1e-5, 1 - 1e-5)
            starts.append((f"ADAMIXTURE start, seed {seed}", Q, P))
    return starts


def fit_from(G, K, Q0, P0, secants, tol=1e-4):
    """One single-threaded fit from (Q0, P0): (result, CPU seconds, trajectory)."""
    trajectory = []
    clock = time.process_time()
    res = admixspec.fit_ml(G, K, Q0=Q0, P0=P0, threads=1, secants=secants, tol=tol,
                           max_iter=5000,
                           callback=lambda info: trajectory.append(info.loglik))
    return res, time.process_time() - clock, trajectory


def within(trajectory, end, gap):
    """First iteration (1-based) within ``gap`` of ``end``."""
    return next(i + 1 for i, ll in enumerate(trajectory) if end - ll < gap)


def _at(run, S):
    """The log-likelihood of a start's trajectory after S iterations (0: the start)."""
    path = [run["start_ll"]] + run["trajectory"]
    return path[min(S, len(path) - 1)]


def replay_screening(runs, reference=None):
    """Screening policies replayed on single-start trajectories (see module notes).

    ``reference``: a log-likelihood (ADMIXTURE's optimum) whose undershoot
    is counted too.
    """
    best = max(r["end"] for r in runs)
    below = "" if reference is None else (
        f", below ADMIXTURE's {reference:.2f} in "
        f"{np.mean([r['end'] < reference for r in runs]):.2f}")
    print(f"  best end {best:.2f}; single start: mean gap "
          f"{np.mean([best - r['end'] for r in runs]):.1f}, best in "
          f"{np.mean([best - r['end'] < 1 for r in runs]):.2f}{below}, mean iterations "
          f"{np.mean([r['iters'] for r in runs]):.1f}")
    for n in range(2, min(6, len(runs) - 1) + 1):
        for S in (0, 2, 5, 10):
            gaps, hits, under, cost = [], [], [], []
            for subset in itertools.combinations(runs, n):
                kept = max(subset, key=lambda r, S=S: _at(r, S))
                gaps.append(best - kept["end"])
                hits.append(best - kept["end"] < 1)
                under.append(reference is not None and kept["end"] < reference)
                cost.append(sum(min(S, r["iters"]) for r in subset)
                            + max(kept["iters"] - S, 0))
            below = ("" if reference is None
                     else f", below ADMIXTURE in {np.mean(under):.3f}")
            print(f"  screen {n} starts x {S:2d} iterations: mean gap "
                  f"{np.mean(gaps):7.1f}, best in {np.mean(hits):.2f}{below}, "
                  f"mean iterations {np.mean(cost):.1f}")


def admixture_optimum(geno, K):
    """Log-likelihood of ADMIXTURE 1.3's published HapMap3 Q and P on these SNPs."""
    from peers import HAPMAP3

    folder = HAPMAP3.parent if K == 3 else HAPMAP3.parent / "starmie_extdata"
    Q = np.loadtxt(folder / f"hapmap3.{K}.Q", ndmin=2)
    P = np.loadtxt(folder / f"hapmap3.{K}.P", ndmin=2)
    full = admixspec.read_genotypes(HAPMAP3, drop_monomorphic=False)
    rows = np.flatnonzero(np.isin(full.variants["id"].to_numpy(),
                                  geno.variants["id"].to_numpy()))
    return admixspec.loglikelihood(geno.dosage, Q, P[rows], threads=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="hapmap3",
                    choices=["hapmap3", "1kg", "sim2000", "demo"])
    ap.add_argument("--K", type=int, nargs="*", default=None)
    ap.add_argument("--starts", type=int, default=1)
    ap.add_argument("--secants", type=int, nargs="+", default=[3])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, nargs="+", default=[1e-4],
                    help="stopping rules to fit with (ADMIXTURE's -C; e.g. 1e-4 1e-7 "
                         "shows what the 1e-4 rule leaves on the table)")
    ap.add_argument("--mix", action="store_true",
                    help="further starts from mixes of one sketch "
                         "(subspace_starts' mix)")
    ap.add_argument("--adamixture", type=int, nargs="*", default=[], metavar="SEED",
                    help="also ADAMIXTURE's SVD + ALS start for these seeds")
    ap.add_argument("--demo", default=None, help="ADAMIXTURE's demo_data.bed")
    args = ap.parse_args(argv)
    geno = load(args.data, args.demo)
    G = geno.dosage
    print(f"{args.data}: {G.shape[0]} x {G.shape[1]}, single-threaded")
    admixspec.fit_ml(G[:20, :500], 2, seed=0, threads=1, tol=1.0)  # numba caches
    for K in args.K or DEFAULT_K[args.data]:
        clock = time.process_time()
        starts = subspace_starts(G, K, args.starts, seed=args.seed, mix=args.mix)
        cost = time.process_time() - clock
        print(f"K={K}: {len(starts)} start(s) in {cost:.2f} s"
              + (" (mixes of one sketch)" if args.mix else ""))
        labelled = [(f"start {k}", Q, P) for k, (Q, P) in enumerate(starts)]
        if args.adamixture:
            labelled += adamixture_starts(geno, K, args.adamixture)
        runs = {s: [] for s in args.secants}
        for label, Q, P in labelled:
            start_ll = admixspec.loglikelihood(G, Q, P, threads=1)
            for secants, tol in itertools.product(args.secants, args.tol):
                res, seconds, path = fit_from(G, K, Q, P, secants, tol)
                print(f"  {label:34s} secants {secants}, tol {tol:g}: "
                      f"start {start_ll:.1f}, "
                      f"{res.n_iter:3d} iterations ({res.n_passes:.0f} passes, "
                      f"{seconds:.1f} s), within 1 at {within(path, res.loglik, 1.0)}, "
                      f"0.1 at {within(path, res.loglik, 0.1)}, ends {res.loglik:.3f}",
                      flush=True)
                if label.startswith("start") and tol == args.tol[0]:
                    runs[secants].append({"start_ll": start_ll, "trajectory": path,
                                          "end": res.loglik, "iters": res.n_iter})
        if len(starts) > 1 and len(args.secants) == 1:
            reference = admixture_optimum(geno, K) if args.data == "hapmap3" else None
            replay_screening(runs[args.secants[0]], reference)


if __name__ == "__main__":
    main()
