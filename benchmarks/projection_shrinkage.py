"""Projected-Q shrinkage against the reference size, before and after its correction.

Issue 21.

For each reference size N: Balding-Nichols genotypes (K = 3, F_ST ``--fst``,
proportions Dirichlet(``--alpha``)) of N + ``--projected`` individuals; Q and
P fitted by maximum likelihood on the first N (``fit_ml``, SVD start: the
reference's estimator is not the question), the others projected onto that
P, plainly (:func:`admixspec.project`) and corrected for P's sampling noise
(:func:`admixspec.ml.debias.debiased_project`, with P's covariance from the
reference's genotypes (``corrected``), from its component sizes
``sum_i q_ik^2`` alone (``corrected-sizes``), and from the effective sizes the
reference's covariance implies (``corrected-effective``, what a run records
for a later ``--project``)). Against the
true Q of the projected individuals (components matched to the truth):

* ``slope``: the least-squares slope of estimated on true proportions, both
  centred at 1/K (1 = no shrinkage; below 1 = pulled towards the middle);
* ``rmse``: root mean squared error of the proportions;
* ``pure``: mean estimated share of the true main component among the
  individuals whose true main share is >= 0.95.

The reference's own fitted Q is scored the same way (``in-sample``). Prints
one CSV line per (N, replicate, estimator) and a summary per N.

Usage::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/projection_shrinkage.py --sizes 50 100 200 500 1000 2000 5000
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _scores(Q_hat, Q_true):
    K = Q_true.shape[1]
    x, y = Q_true - 1.0 / K, Q_hat - 1.0 / K
    slope = float((x * y).sum() / (x * x).sum())
    rmse = float(np.sqrt(((Q_hat - Q_true) ** 2).mean()))
    main = Q_true.argmax(axis=1)
    pure = Q_true[np.arange(len(Q_true)), main] >= 0.95
    if not pure.any():
        return slope, rmse, np.nan
    share = float(Q_hat[np.flatnonzero(pure), main[pure]].mean())
    return slope, rmse, share


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[50, 100, 200, 500, 1000, 2000, 5000])
    parser.add_argument("--projected", type=int, default=500)
    parser.add_argument("--snps", type=int, default=10_000)
    parser.add_argument("--K", type=int, default=3)
    parser.add_argument("--fst", type=float, default=0.05)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--replicates", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    from admixspec import fit_ml, project, simulate_balding_nichols
    from admixspec.core.metrics import match_components
    from admixspec.ml.debias import (
        debiased_project,
        effective_sizes,
        p_covariance,
        p_covariance_from_sizes,
    )

    print("N,replicate,estimator,slope,rmse,pure,seconds", flush=True)
    summary: dict = {}
    for N in args.sizes:
        for rep in range(args.replicates):
            seed = args.seed + 1000 * rep + N
            sim = simulate_balding_nichols(N + args.projected, args.snps, args.K,
                                           fst=args.fst, alpha=args.alpha, seed=seed)
            G, Q_true = sim.genotypes.dosage, sim.Q
            ref = fit_ml(G[:N], args.K, init="svd", seed=seed)
            perm = match_components(Q_true[:N], ref.Q)
            Q_ref, P = ref.Q[:, perm], ref.P[:, perm]
            rows = {"in-sample": (Q_ref, Q_true[:N], 0.0)}
            clock = _cpu()
            plain = project(G[N:], P)
            rows["projected"] = (plain, Q_true[N:], _cpu() - clock)
            clock = _cpu()
            V = p_covariance(G[:N], Q_ref, P)
            fixed = debiased_project(G[N:], P, V, plain)
            rows["corrected"] = (fixed, Q_true[N:], _cpu() - clock)
            clock = _cpu()
            V_sizes = p_covariance_from_sizes(P, (Q_ref**2).sum(axis=0))
            fixed_sizes = debiased_project(G[N:], P, V_sizes, plain)
            rows["corrected-sizes"] = (fixed_sizes, Q_true[N:], _cpu() - clock)
            clock = _cpu()
            sizes = effective_sizes(P, V)
            V_eff = p_covariance_from_sizes(P, sizes)
            fixed_eff = debiased_project(G[N:], P, V_eff, plain)
            rows["corrected-effective"] = (fixed_eff, Q_true[N:], _cpu() - clock)
            for name, (Q_hat, truth, seconds) in rows.items():
                scores = _scores(Q_hat, truth)
                summary.setdefault((N, name), []).append(scores)
                print(f"{N},{rep},{name},{scores[0]:.4f},{scores[1]:.4f},"
                      f"{scores[2]:.4f},{seconds:.1f}", flush=True)
    print("\nN, estimator: mean slope, rmse, pure share over replicates", flush=True)
    for (N, name), values in summary.items():
        mean = np.nanmean(np.array(values), axis=0)
        print(f"{N:>5} {name:<16} slope {mean[0]:.4f}  rmse {mean[1]:.4f}  "
              f"pure {mean[2]:.4f}")
    return 0


if __name__ == "__main__":
    t = time.perf_counter()
    status = main()
    print(f"# wall {time.perf_counter() - t:.0f} s, CPU {_cpu():.0f} s", file=sys.stderr)
    sys.exit(status)
