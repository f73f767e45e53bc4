"""ADMIXTURE parity on the ADMIXTURE tutorial's HapMap3 data (324 x 13,928).

For K = 1..5: admixspec's ML fit (default SVD start) against ADMIXTURE 1.3's
own published runs: log-likelihood (relative difference; positive = above
ADMIXTURE), Q mean absolute difference after Hungarian matching, admixspec's
iterations and passes over the data against ADMIXTURE's iteration count (its
five EM steps plus its QN/Block iterations, from its log), wall time; then
5-fold CV errors and their ordering against ADMIXTURE's logs. ``--seeds``
repeats the fits from several SVD-start seeds (K = 4 and 5 have several local
optima: which one a fit reaches depends on its start, for ADMIXTURE too);
``--starts`` sets how many starts the fit screens (``fit_ml``'s default: 5;
the passes count all of them) and ``--screen-iter`` for how many iterations
(default: ``fit_ml``'s, :data:`admixspec.ml.refine.SCREEN_ITER`); ``start`` is
the one it continued.
``--default`` fits with ``fit_admixture`` (the default pipeline: spectral
estimate, held-out choice, ML) instead of ``fit_ml``.

Run: .venv/bin/python benchmarks/hapmap3_parity.py [--threads 2] [--no-cv]
     [--seeds 0 1 2 3] [--accel newton|squarem] [--starts 1] [--default]
Needs ../shared/realdata/hapmap3_admixture_tutorial (the project workspace).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

import admixspec
from admixspec.ml.crossval import cross_validate

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "realdata" / "hapmap3_admixture_tutorial"


def admixture_reference(K):
    """ADMIXTURE's Q and the loglik / CV error from its log for this K."""
    folder = DATA if K == 3 else DATA / "starmie_extdata"
    Q = np.loadtxt(folder / f"hapmap3.{K}.Q").reshape(-1, K)
    log = (DATA / "starmie_extdata" / f"log{K}.out").read_text()
    ll = float(re.findall(r"^Loglikelihood: (\S+)", log, re.M)[-1])
    cv = float(re.search(r"CV error \(K=\d+\): (\S+)", log).group(1))
    main_run = log.split("Converged")[0]
    n_iter = len(re.findall(r"^\d+ \((?:EM|QN/Block)\)", main_run, re.M))
    return Q, ll, cv, n_iter


def _fit(G, K, seed, args):
    """One fit: (result, passes over the data, the start it continued)."""
    if args.default:
        res = admixspec.fit_admixture(G, K, seed=seed, threads=args.threads)
        return res, float(res.diagnostics.get("data_passes", float("nan"))), res.path
    res = admixspec.fit_ml(G, K, seed=seed, threads=args.threads, accel=args.accel,
                           starts=args.starts, screen_iter=args.screen_iter)
    return res, res.n_passes, res.history[-1].start


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-cv", action="store_true")
    ap.add_argument("--seeds", type=int, nargs="*", default=[1])
    ap.add_argument("--accel", default="newton", choices=["newton", "squarem"])
    ap.add_argument("--K", type=int, nargs="*", default=[1, 2, 3, 4, 5])
    ap.add_argument("--starts", type=int, default=None)
    ap.add_argument("--screen-iter", type=int, default=None)
    ap.add_argument("--default", action="store_true")
    args = ap.parse_args(argv)
    if not DATA.exists():
        sys.exit(f"data not found: {DATA}")
    geno = admixspec.read_genotypes(DATA / "hapmap3.bed", drop_monomorphic=False)
    G = geno.dosage
    print(f"data: {G.shape[0]} individuals x {G.shape[1]} SNPs, threads={args.threads}")
    print("K seed loglik(admixspec)   loglik(ADMIXTURE)   rel.diff   Q MAD   iters "
          "passes  ADMIXTURE-iters  passes/ADMIXTURE-iters  time(s)  start")
    cv_ours, cv_theirs = {}, {}
    for K in args.K:
        Q_ref, ll_ref, cv_ref, it_ref = admixture_reference(K)
        for seed in args.seeds:
            t = time.perf_counter()
            res, passes, start = _fit(G, K, seed, args)
            dt = time.perf_counter() - t
            rel = (res.loglik - ll_ref) / abs(ll_ref)
            mad = admixspec.q_error(Q_ref, res.Q)
            print(f"{K} {seed:3d}  {res.loglik:.6f}  {ll_ref:.6f}  {rel:+.2e}  "
                  f"{mad:.2e}  "
                  f"{res.n_iter:5d} {passes:6.0f}  {it_ref:5d}  "
                  f"{passes / it_ref:5.2f}  {dt:7.1f}  {start}", flush=True)
        if not args.no_cv:
            t = time.perf_counter()
            cv = cross_validate(G, K, folds=5, seed=args.seeds[0], start=(res.Q, res.P),
                                threads=args.threads)
            cv_ours[K], cv_theirs[K] = cv.error, cv_ref
            print(f"   CV error (K={K}): {cv.error:.5f}   ADMIXTURE {cv_ref:.5f}   "
                  f"({time.perf_counter() - t:.1f}s)", flush=True)
    if cv_ours:
        ours = sorted(cv_ours, key=cv_ours.get)
        theirs = sorted(cv_theirs, key=cv_theirs.get)
        print("CV ordering admixspec:", ours, " ADMIXTURE:", theirs,
              " same:", ours == theirs)


if __name__ == "__main__":
    main()
