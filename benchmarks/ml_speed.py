"""ML engine speed and optimum: admixspec.fit_ml against fastmixture and random starts.

Settings: (a) ``large``: 500 individuals x 100k SNPs, K = 4 (Balding-Nichols
F_ST 0.1, Dirichlet alpha 0.5); (b) ``paper``: the paper's small setting,
K = 3, 50 individuals x 80k SNPs, alpha = 1 (Balding-Nichols too); (c)
``1kg``: 1000 Genomes phase 1 (1,092 x 14,079, the workspace's
../shared/realdata), K = 5, no truth. For each: admixspec's default fit (SVD
start, block relaxation), with ``--em`` the EM engine (``accel="squarem"``),
fastmixture 1.3.0 (same thread count, its defaults) on the same data written
as PLINK, and with ``--starts`` on simulated data the spectral start, the
truth as start and 5 random starts. Reports wall and CPU time, iterations /
data passes, log-likelihood and Q error against the truth, and the
admixspec/fastmixture time ratios.

``--sweep 2 8`` instead fits 1000 Genomes for K = 2..8 with the default
engine and reports whether each K meets ADMIXTURE's 1e-4 rule within the
default iteration limit.

Run (once, when the machine is quiet; timings under load are noisy):
  .venv/bin/python benchmarks/ml_speed.py --threads 2 [--setting large|paper|1kg|all]
  .venv/bin/python benchmarks/ml_speed.py --threads 1 --sweep 2 8
fastmixture: ``pip install fastmixture==1.3.0`` into the same venv (a
benchmark-only tool, not a dependency), or ``--fastmixture PATH``.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import admixspec
from admixspec.io import write_plink

SETTINGS = {
    "large": dict(n_individuals=500, n_snps=100_000, K=4, fst=0.1, alpha=0.5, seed=7),
    "paper": dict(n_individuals=50, n_snps=80_000, K=3, fst=0.1, alpha=1.0, seed=8),
}
ROOT = Path(__file__).resolve().parent.parent
KG = ROOT.parent / "shared" / "realdata" / "1kg_phase1_1092_flashpca" / (
    "1kg.ref.phase1_release_v3.20101123_thinned_autosomal_overlap.bed")
KG_K = 5


def run_fastmixture(exe, genotypes, K, threads, workdir):
    prefix = Path(workdir) / "data"
    write_plink(prefix, genotypes)
    out = Path(workdir) / "fm"
    t = time.perf_counter()
    cpu0 = _children_cpu()
    proc = subprocess.run([exe, "--bfile", str(prefix), "--K", str(K), "--threads",
                           str(threads), "--seed", "1", "--out", str(out)],
                          capture_output=True, text=True)
    dt = time.perf_counter() - t
    cpu = _children_cpu() - cpu0
    if proc.returncode != 0:
        return None, proc.stderr[-500:] + proc.stdout[-500:]
    Q = np.loadtxt(f"{out}.K{K}.s1.Q")
    # fastmixture's P is the frequency of the .bim column-5 allele (A1); ours
    # (and ADMIXTURE's) is of column 6 (checked on HapMap3: 1 - P reproduces
    # fastmixture's printed log-likelihood)
    P = 1.0 - np.loadtxt(f"{out}.K{K}.s1.P")
    return (Q, P, dt, cpu), proc.stdout


def run_adamixture(exe, genotypes, K, threads, workdir):
    """ADAMIXTURE (its defaults: SVD + ALS start, BR-QN, seed 42) on PLINK files.

    Returns ``((Q, P, wall seconds, CPU seconds), stdout)``, or ``(None, error
    text)``. In single-K mode ADAMIXTURE always draws a PNG of Q (no option turns
    it off), so its times include the plot. It counts the .bim column-5 allele
    and flips the whole matrix when that allele's mean dosage is >= 1
    ("Flipping genotype encoding" in its log), so its P is the frequency of our
    allele (column 6) after a flip and of the other allele otherwise (checked
    on a Balding-Nichols matrix, flipped, and on the suite's ooa-ref, not
    flipped: our log-likelihood of its Q and P, so oriented, equals its own).
    """
    prefix = Path(workdir) / "data"
    write_plink(prefix, genotypes)
    out = Path(workdir) / "adamixture"
    t = time.perf_counter()
    cpu0 = _children_cpu()
    proc = subprocess.run([exe, "-k", str(K), "--threads", str(threads),
                           "--data_path", f"{prefix}.bed", "--save_dir", str(out),
                           "--name", "fit"], capture_output=True, text=True)
    dt = time.perf_counter() - t
    cpu = _children_cpu() - cpu0
    if proc.returncode != 0:
        return None, proc.stderr[-500:] + proc.stdout[-500:]
    Q = np.loadtxt(out / f"fit.{K}.Q", ndmin=2)
    P = np.loadtxt(out / f"fit.{K}.P", ndmin=2)
    if "Flipping genotype encoding" not in proc.stdout + proc.stderr:
        P = 1.0 - P
    return (Q, P, dt, cpu), proc.stdout


def _children_cpu():
    """CPU seconds (user + system) of finished child processes."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def simulated(name):
    """Genotypes, truth (Q, P) and K of a simulated setting, monomorphic SNPs dropped."""
    cfg = dict(SETTINGS[name])
    K = cfg.pop("K")
    sim = admixspec.simulate_balding_nichols(cfg.pop("n_individuals"), cfg.pop("n_snps"),
                                             K, **cfg)
    # fastmixture refuses monomorphic SNPs: drop them for both tools
    G0 = sim.genotypes.dosage
    obs = np.where(G0 >= 0, G0, 0).sum(axis=0)
    keep = (obs > 0) & (obs < 2 * (G0 >= 0).sum(axis=0))
    return sim.genotypes.subset(snps=np.flatnonzero(keep)), (sim.Q, sim.P[keep]), K


def thousand_genomes():
    if not KG.exists():
        sys.exit(f"data not found: {KG}")
    return admixspec.read_genotypes(KG), None, KG_K


def compare(name, genotypes, truth, K, args):
    """Time admixspec's engines and fastmixture on one data set."""
    G = genotypes.dosage
    print(f"\n== {name}: {G.shape[0]} x {G.shape[1]}, K={K}, threads={args.threads}",
          flush=True)

    def qerr(Q):
        return admixspec.q_error(truth[0], Q) if truth is not None else float("nan")

    def record(label, res, dt, cpu=float("nan")):
        print(f"{label:14s} loglik {res.loglik:.4f}  time {dt:7.1f}s  cpu {cpu:7.1f}s  iters "
              f"{res.n_iter:4d}  passes {res.n_passes:6.1f}  converged {res.converged}  "
              f"Qerr {qerr(res.Q):.4f}", flush=True)

    # warm numba caches outside the timings
    for accel in ("newton", "squarem"):
        admixspec.fit_ml(G[:50, :2000], K, seed=0, threads=args.threads, tol=1.0,
                         accel=accel)
    t = time.perf_counter()
    cpu0 = time.process_time()
    best = admixspec.fit_ml(G, K, seed=0, threads=args.threads)
    t_best = time.perf_counter() - t
    cpu_best = time.process_time() - cpu0
    record("admixspec", best, t_best, cpu_best)
    if args.em:
        t = time.perf_counter()
        record("EM (squarem)", admixspec.fit_ml(G, K, seed=0, threads=args.threads,
                                                accel="squarem"), time.perf_counter() - t)
    fm_exe = args.fastmixture or shutil.which("fastmixture")
    if fm_exe:
        with tempfile.TemporaryDirectory() as tmp:
            fm, log = run_fastmixture(fm_exe, genotypes, K, args.threads, tmp)
        if fm is None:
            print("fastmixture failed:", log)
        else:
            Q, P, dt, cpu = fm
            ll = admixspec.loglikelihood(G, Q, P)
            print(f"fastmixture    loglik {ll:.4f}  time {dt:7.1f}s  cpu {cpu:7.1f}s  Qerr "
                  f"{qerr(Q):.4f}  (admixspec - fastmixture: "
                  f"{(best.loglik - ll) / abs(ll):+.2e} relative)")
            print(f"admixspec / fastmixture: wall time {t_best / dt:.2f}, CPU time "
                  f"{cpu_best / cpu:.2f}  (target <= 1/3; CPU time is the fairer "
                  "measure on a shared machine)", flush=True)
    else:
        print("fastmixture not found (pip install fastmixture==1.3.0)")
    if truth is None or not args.starts:
        return
    t = time.perf_counter()
    spec = admixspec.fit_admixture(G, K, seed=0, refine=True, threads=args.threads)
    print(f"spectral start loglik {spec.loglik:.4f}  time {time.perf_counter() - t:7.1f}s  "
          f"iters {spec.n_iter:4d}  Qerr {qerr(spec.Q):.4f}", flush=True)
    t = time.perf_counter()
    record("truth start", admixspec.fit_ml(G, K, Q0=truth[0], P0=truth[1],
                                           threads=args.threads), time.perf_counter() - t)
    for s in range(args.random_starts):
        t = time.perf_counter()
        record(f"random #{s}", admixspec.fit_ml(G, K, init="random", seed=100 + s,
                                                threads=args.threads),
               time.perf_counter() - t)


def sweep(k_min, k_max, args):
    """1000 Genomes, K = k_min..k_max: does each K meet the 1e-4 rule?"""
    G = thousand_genomes()[0].dosage
    print(f"1000 Genomes {G.shape[0]} x {G.shape[1]}, threads={args.threads}")
    print("K  converged  iters  passes  loglik  last_delta  time(s)", flush=True)
    for K in range(k_min, k_max + 1):
        t = time.perf_counter()
        res = admixspec.fit_ml(G, K, seed=args.seed, threads=args.threads)
        print(f"{K}  {res.converged}  {res.n_iter}  {res.n_passes:.0f}  {res.loglik:.4f}  "
              f"{res.history[-1].delta:.2e}  {time.perf_counter() - t:.1f}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fastmixture", default=None,
                    help="fastmixture executable (default: the one on PATH)")
    ap.add_argument("--setting", default="all", choices=["large", "paper", "1kg", "all"])
    ap.add_argument("--starts", action="store_true",
                    help="simulated data: also the spectral, truth and random starts")
    ap.add_argument("--random-starts", type=int, default=5)
    ap.add_argument("--em", action="store_true",
                    help="also time the EM engine (accel='squarem')")
    ap.add_argument("--sweep", type=int, nargs=2, metavar=("KMIN", "KMAX"),
                    help="1000 Genomes K sweep instead of the comparison")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", action="store_true", help="log every iteration")
    args = ap.parse_args(argv)
    if args.verbose:
        import logging

        logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.sweep:
        sweep(*args.sweep, args)
        return
    names = ["large", "paper", "1kg"] if args.setting == "all" else [args.setting]
    for name in names:
        data = thousand_genomes() if name == "1kg" else simulated(name)
        compare(name, *data, args)


if __name__ == "__main__":
    main()
