"""ML engine speed and optimum: admixspec.fit_ml against fastmixture and random starts.

Settings: (a) 500 individuals x 100k SNPs, K = 4 (Balding-Nichols F_ST 0.1,
Dirichlet alpha 0.5); (b) the paper's small setting, K = 3, 50 individuals x
80k SNPs, alpha = 1 (Balding-Nichols too). For each: admixspec SVD start
(default), the spectral estimate refined by ML (``fit_admixture(refine=True)``),
the truth as start, 5 random starts; fastmixture 1.3.0 (separate venv, same thread count,
its defaults) on the same data written as PLINK. Reports wall time, EM
iterations / data passes, log-likelihood (relative to the best of the 5 random
starts) and Q error against the truth; prints the fastmixture/admixspec time
ratio.

Run (once, when the machine is quiet; timings under load are noisy):
  /work/venv/bin/python benchmarks/ml_speed.py --threads 2 \
      [--fastmixture /work/venv-fm/bin/fastmixture] [--setting large|paper|both]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
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


def run_fastmixture(exe, sim, K, threads, workdir):
    prefix = Path(workdir) / "data"
    write_plink(prefix, sim.genotypes)
    out = Path(workdir) / "fm"
    t = time.perf_counter()
    proc = subprocess.run([exe, "--bfile", str(prefix), "--K", str(K), "--threads",
                           str(threads), "--seed", "1", "--out", str(out)],
                          capture_output=True, text=True)
    dt = time.perf_counter() - t
    if proc.returncode != 0:
        return None, proc.stderr[-500:] + proc.stdout[-500:]
    Q = np.loadtxt(f"{out}.K{K}.s1.Q")
    # fastmixture's P is the frequency of the .bim column-5 allele (A1); ours
    # (and ADMIXTURE's) is of column 6 (checked on HapMap3: 1 - P reproduces
    # fastmixture's printed log-likelihood)
    P = 1.0 - np.loadtxt(f"{out}.K{K}.s1.P")
    return (Q, P, dt), proc.stdout


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fastmixture", default="/work/venv-fm/bin/fastmixture")
    ap.add_argument("--setting", default="both", choices=["large", "paper", "both"])
    ap.add_argument("--random-starts", type=int, default=5)
    ap.add_argument("--verbose", action="store_true", help="log every EM iteration")
    args = ap.parse_args(argv)
    if args.verbose:
        import logging

        logging.basicConfig(level=logging.INFO, format="%(message)s")
    names = ["large", "paper"] if args.setting == "both" else [args.setting]
    for name in names:
        cfg = dict(SETTINGS[name])
        K = cfg.pop("K")
        sim = admixspec.simulate_balding_nichols(cfg.pop("n_individuals"),
                                                 cfg.pop("n_snps"), K, **cfg)
        # fastmixture refuses monomorphic SNPs: drop them for both tools
        G0 = sim.genotypes.dosage
        obs = np.where(G0 >= 0, G0, 0).sum(axis=0)
        n_obs = 2 * (G0 >= 0).sum(axis=0)
        keep = (obs > 0) & (obs < n_obs)
        sim.genotypes = sim.genotypes.subset(snps=np.flatnonzero(keep))
        sim.P = sim.P[keep]
        G = sim.genotypes.dosage
        print(f"\n== {name}: {G.shape[0]} x {G.shape[1]}, K={K}, threads={args.threads}",
              flush=True)
        rows = []

        def record(label, res, dt):
            rows.append((label, res.loglik, dt, res.n_iter, res.n_passes,
                         admixspec.q_error(sim.Q, res.Q)))
            print(f"{label:14s} loglik {res.loglik:.4f}  time {dt:7.1f}s  iters "
                  f"{res.n_iter:4d}  passes {res.n_passes:6.1f}  Qerr "
                  f"{rows[-1][5]:.4f}", flush=True)

        # warm numba caches outside the timings
        admixspec.fit_ml(G[:50, :2000], K, seed=0, threads=args.threads, tol=1.0)
        t = time.perf_counter()
        svd = admixspec.fit_ml(G, K, seed=0, threads=args.threads)
        t_svd = time.perf_counter() - t
        record("svd start", svd, t_svd)
        fm_ll = None
        if shutil.which(args.fastmixture) or Path(args.fastmixture).exists():
            with tempfile.TemporaryDirectory() as tmp:
                fm, log = run_fastmixture(args.fastmixture, sim, K, args.threads, tmp)
            if fm is None:
                print("fastmixture failed:", log)
            else:
                Q, P, dt = fm
                ll = admixspec.loglikelihood(G, Q, P)
                fm_ll = ll
                print(f"fastmixture    loglik {ll:.4f}  time {dt:7.1f}s  Qerr "
                      f"{admixspec.q_error(sim.Q, Q):.4f}  (rel. to svd start "
                      f"{(ll - svd.loglik) / abs(svd.loglik):+.2e})")
                print(f"time ratio fastmixture / admixspec(svd start) = "
                      f"{dt / t_svd:.2f}  (>= 1 means admixspec is at least as fast)",
                      flush=True)
        else:
            print("fastmixture not found at", args.fastmixture)

        t = time.perf_counter()
        spec = admixspec.fit_admixture(G, K, seed=0, refine=True, threads=args.threads)
        dt = time.perf_counter() - t
        rows.append(("spectral start", spec.loglik, dt, spec.n_iter, float("nan"),
                     admixspec.q_error(sim.Q, spec.Q)))
        print(f"spectral start loglik {spec.loglik:.4f}  time {dt:7.1f}s  iters "
              f"{spec.n_iter:4d}  (spectral {spec.timings.get('spectral', 0):.1f}s + EM "
              f"{spec.timings.get('likelihood', 0):.1f}s)  Qerr {rows[-1][5]:.4f}",
              flush=True)

        t = time.perf_counter()
        tru = admixspec.fit_ml(G, K, Q0=sim.Q, P0=sim.P, threads=args.threads)
        record("truth start", tru, time.perf_counter() - t)
        rand = []
        for s in range(args.random_starts):
            t = time.perf_counter()
            r = admixspec.fit_ml(G, K, init="random", seed=100 + s, threads=args.threads)
            record(f"random #{s}", r, time.perf_counter() - t)
            rand.append(r)
        best = max(r.loglik for r in rand)
        print(f"best random loglik {best:.4f}; svd-start relative difference "
              f"{(svd.loglik - best) / abs(best):+.2e}; mean random iters "
              f"{np.mean([r.n_iter for r in rand]):.1f} passes "
              f"{np.mean([r.n_passes for r in rand]):.1f} vs svd {svd.n_iter} "
              f"({svd.n_passes:.1f} passes), truth-start {tru.n_iter} "
              f"({tru.n_passes:.1f}), spectral-start {spec.n_iter}; spectral-start "
              f"relative difference {(spec.loglik - best) / abs(best):+.2e}", flush=True)
        if fm_ll is not None:
            print(f"fastmixture relative to best random start: "
                  f"{(fm_ll - best) / abs(best):+.2e}")


if __name__ == "__main__":
    main()
