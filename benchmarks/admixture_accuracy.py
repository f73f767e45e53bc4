"""Accuracy, speed and memory of admixspec against a maximum-likelihood EM.

Settings (issue 4):

* ``paper``: the seed paper's coalescent experiment (``admixspec.simulate_admixture``:
  K = 3, m = 50 admixed individuals, alpha in {0.1, 1, 10}), several replicates;
* ``bn``: Balding-Nichols frequencies (F_ST = 0.1), far from binary, where the
  spectral estimator is not consistent;
* ``large``: m = 500, K = 4, msprime;
* ``huge``: 2,000 x 200,000, K = 6 (Balding-Nichols, generated in blocks): time and
  peak memory of the spectral estimate only.

For every fit: mean absolute Q error after Hungarian matching, log-likelihood, wall
time and peak traced memory (tracemalloc: numpy buffers). Methods: ``admixspec``
(default ``refine="auto"``), ``spectral`` (``refine=False``), ``ml-random`` (the
project's accelerated EM from a random start, run to convergence: ADMIXTURE's model
and stopping rule). The crux of the method is reported too: the relative distance
from each true column of W+ (= pinv(Q^T)) to its nearest candidate, and whether the
search chose exactly those candidates.

Usage::

    python benchmarks/admixture_accuracy.py                 # paper + bn, 5 replicates
    python benchmarks/admixture_accuracy.py --settings large huge
    python benchmarks/admixture_accuracy.py --replicates 2 --quick

Writes ``benchmarks/results/admixture_accuracy.csv`` and the markdown table
``docs/benchmarks_admixture.md``.
"""

from __future__ import annotations

import argparse
import csv
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

from admixspec import simulate_balding_nichols
from admixspec.core.metrics import q_error
from admixspec.fit.admixture import fit_admixture
from admixspec.ml.refine import fit_ml
from admixspec.spectral.estimate import snp_sample, spectral_scan

ROOT = Path(__file__).resolve().parent.parent


def measured(function, *args, **kwargs):
    """Run ``function`` and return (result, seconds, peak MiB of traced allocations)."""
    tracemalloc.start()
    start = time.perf_counter()
    result = function(*args, **kwargs)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return result, seconds, peak


def crux(dosage, Q, K, seed):
    """Nearest candidates' distances to the true W+ columns, and whether chosen."""
    rng = np.random.default_rng(seed)
    m = dosage.shape[0]
    size = int(np.clip(200_000 // m, 500, dosage.shape[1]))
    best, _ = spectral_scan(dosage, K, sample=snp_sample(dosage, size, rng),
                            rescore_sample=snp_sample(dosage, 10 * size, rng), seed=seed)
    if best is None or len(best.candidates) == 0:
        return [np.nan] * K, False
    truth = np.linalg.pinv(Q.T).T
    vectors = best.candidates.vectors
    nearest = [int(np.argmin(np.linalg.norm(vectors - row, axis=1))) for row in truth]
    distances = [float(np.linalg.norm(vectors[i] - row) / np.linalg.norm(row))
                 for i, row in zip(nearest, truth, strict=True)]
    chosen = (best.search is not None
              and sorted(nearest) == sorted(best.search.subset.tolist()))
    return distances, bool(chosen)


def simulate(setting, alpha, replicate, args):
    seed = 1000 * replicate + int(10 * alpha)
    if setting in ("paper", "large"):
        from admixspec import simulate_admixture

        n, K = (50, 3) if setting == "paper" else (500, 4)
        sim = simulate_admixture(n, K, alpha=alpha, sequence_length=args.length,
                                 seed=seed)
    elif setting == "bn":
        sim = simulate_balding_nichols(50, 50_000, 3, fst=0.1, alpha=alpha, seed=seed)
    else:
        raise ValueError(setting)
    return sim.genotypes.dosage, sim.Q


def huge(args, writer):
    """2,000 x 200,000, K = 6: spectral estimate only (time, memory)."""
    rng = np.random.default_rng(7)
    m, n, K = 2000, 200_000, 6
    Q = rng.dirichlet(np.full(K, 0.5), size=m)
    dosage = np.empty((m, n), dtype=np.int8)
    ancestral = rng.uniform(0.05, 0.95, n)
    shape = (1 - 0.1) / 0.1
    P = rng.beta(ancestral[:, None] * shape, (1 - ancestral[:, None]) * shape, (n, K))
    for start in range(0, n, 10_000):
        F = Q @ P[start : start + 10_000].T
        dosage[:, start : start + 10_000] = rng.binomial(2, F)
    result, seconds, peak = measured(fit_admixture, dosage, K, seed=1, refine=False)
    row = {"setting": "huge", "alpha": 0.5, "replicate": 0, "method": "spectral",
           "q_error": q_error(Q, result.Q), "loglik": result.loglik, "seconds": seconds,
           "peak_mib": peak + dosage.nbytes / 2**20, "path": result.path}
    writer(row)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", nargs="+", default=["paper", "bn"],
                        choices=["paper", "bn", "large", "huge"])
    parser.add_argument("--alphas", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--length", type=float, default=25e6,
                        help="chromosome length of the msprime settings (bp)")
    parser.add_argument("--quick", action="store_true", help="skip the ML baseline")
    parser.add_argument("--csv",
                        default=str(ROOT / "benchmarks/results/admixture_accuracy.csv"))
    parser.add_argument("--markdown", default=str(ROOT / "docs/benchmarks_admixture.md"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    rows = []

    def write(row):
        rows.append(row)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in row.items()), flush=True)

    for setting in args.settings:
        if setting == "huge":
            huge(args, write)
            continue
        for alpha in args.alphas:
            for replicate in range(args.replicates):
                dosage, Q = simulate(setting, alpha, replicate, args)
                K = Q.shape[1]
                base = {"setting": setting, "alpha": alpha, "replicate": replicate,
                        "m": dosage.shape[0], "n": dosage.shape[1]}
                distances, chosen = crux(dosage, Q, K, seed=replicate)
                # the closures run in this iteration (the loop below), with this
                # replicate's dosage, K and seed
                methods = [
                    ("admixspec",
                     lambda: fit_admixture(dosage, K, seed=replicate)),  # noqa: B023
                    ("spectral",
                     lambda: fit_admixture(dosage, K, seed=replicate,  # noqa: B023
                                           refine=False)),
                ]
                if not args.quick:
                    methods.append(("ml-random", lambda: fit_ml(
                        dosage, K, init="random", seed=replicate)))  # noqa: B023
                for name, run in methods:
                    result, seconds, peak = measured(run)
                    write({**base, "method": name, "q_error": q_error(Q, result.Q),
                           "loglik": result.loglik, "seconds": seconds, "peak_mib": peak,
                           "path": getattr(result, "path", "ml"),
                           "nearest_candidate": max(distances), "true_chosen": chosen})
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    keys = sorted({k for row in rows for k in row})
    with open(args.csv, "w", newline="") as handle:
        out = csv.DictWriter(handle, fieldnames=keys)
        out.writeheader()
        out.writerows(rows)
    write_markdown(rows, args.markdown)


def write_markdown(rows, path):
    lines = ["# Admixture accuracy benchmark", "",
             "Generated by `benchmarks/admixture_accuracy.py` "
             "(mean over replicates).", "",
             "| setting | alpha | method | Q error | log-likelihood | seconds "
             "| peak MiB | nearest candidate (max rel.) | true subset chosen |",
             "|---|---|---|---|---|---|---|---|---|"]
    groups = {}
    for row in rows:
        groups.setdefault((row["setting"], row["alpha"], row["method"]), []).append(row)
    for (setting, alpha, method), group in groups.items():
        def mean(key):  # called in this iteration only, with this group
            values = [r[key] for r in group if key in r]  # noqa: B023
            return float(np.mean(values)) if values else float("nan")
        chosen = [r["true_chosen"] for r in group if "true_chosen" in r]
        lines.append(
            f"| {setting} | {alpha:g} | {method} | {mean('q_error'):.4f} | "
            f"{mean('loglik'):.1f} | {mean('seconds'):.1f} | {mean('peak_mib'):.0f} | "
            f"{mean('nearest_candidate'):.3f} | "
            f"{sum(chosen)}/{len(chosen) if chosen else 0} |"
        )
    Path(path).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
