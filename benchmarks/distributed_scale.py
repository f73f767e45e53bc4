"""Scale study (issue 13, c): one ML fit in memory and on a Dask LocalCluster.

The same fit (``fit_admixture(method="ml", seed=1)`` of Balding-Nichols
genotypes, F_ST 0.1, Dirichlet(0.5) proportions) runs

* in memory, with ``--threads`` numba threads;
* on a LocalCluster of N worker processes for each N of ``--workers`` (one
  thread each, the kernels of each task on one thread), through
  :func:`admixspec.backends.distributed.scheduler` -- the code path of
  ``admixspec run --scheduler local:N``.

For each it reports the wall time of the fit (the cluster's start-up, and
the first pass's import of admixspec on the workers, are reported apart),
the iterations and likelihood passes, the bytes sent to and gathered from
the workers per pass (:class:`admixspec.backends.distributed.Traffic`), and the
log-likelihood's relative difference from the in-memory fit. Rows are
appended to ``OUT/distributed_scale.csv`` and printed as a Markdown table.

Usage::

    python benchmarks/distributed_scale.py --individuals 2000 --snps 50000 -K 4 \
        --workers 1 2 --out /tmp/dscale
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

from admixspec import fit_admixture, simulate_balding_nichols
from admixspec.backends.distributed import scheduler
from admixspec.core.exceptions import ConvergenceWarning

FIELDS = ["individuals", "snps", "K", "where", "start_s", "fit_s", "iterations",
          "passes", "mb_sent_per_pass", "mb_gathered_per_pass", "loglik",
          "loglik_rel_diff"]


def fit(G, K: int, *, threads: int, max_iter: int):
    """The benchmarked fit; returns (result, seconds)."""
    clock = time.perf_counter()
    result = fit_admixture(G, K, method="ml", seed=1, threads=threads, max_iter=max_iter,
                           device="cpu")
    return result, time.perf_counter() - clock


def warm_up(G, K: int) -> None:
    """One short fit, so that the timed fit pays no import or compile."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 2 iterations, on purpose
        fit_admixture(G[:, :256], K, method="ml", seed=1, threads=1, max_iter=2,
                      device="cpu")


def in_memory(G, K: int, threads: int, *, max_iter: int) -> dict:
    """The fit in this process with ``threads`` numba threads."""
    result, seconds = fit(G, K, threads=threads, max_iter=max_iter)
    return {"where": f"in memory, {threads} thread(s)", "start_s": 0.0, "fit_s": seconds,
            "iterations": result.n_iter,
            "passes": int(result.diagnostics["data_passes"]),
            "mb_sent_per_pass": 0.0, "mb_gathered_per_pass": 0.0,
            "loglik": result.loglik}


def on_cluster(G, K: int, workers: int, *, max_iter: int) -> dict:
    """The fit on a LocalCluster of ``workers`` processes, timed apart from its start."""
    clock = time.perf_counter()
    with scheduler(f"local:{workers}", threads=1) as traffic:
        warm_up(G, K)
        start = time.perf_counter() - clock
        before = (traffic.passes, traffic.bytes_sent, traffic.bytes_received)
        result, seconds = fit(G, K, threads=1, max_iter=max_iter)
        passes = traffic.passes - before[0]
        sent = traffic.bytes_sent - before[1]
        gathered = traffic.bytes_received - before[2]
    return {"where": f"LocalCluster, {workers} worker(s)", "start_s": start,
            "fit_s": seconds, "iterations": result.n_iter, "passes": passes,
            "mb_sent_per_pass": sent / passes / 1e6,
            "mb_gathered_per_pass": gathered / passes / 1e6, "loglik": result.loglik}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--individuals", type=int, default=2000)
    parser.add_argument("--snps", type=int, default=50_000)
    parser.add_argument("-K", type=int, default=4)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--threads", type=int, nargs="+", default=[1],
                        help="numba threads of the in-memory fits (the first is the "
                        "reference of the log-likelihood differences)")
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    sim = simulate_balding_nichols(args.individuals, args.snps, args.K, fst=0.1,
                                   alpha=0.5, seed=7)
    G = sim.genotypes.dosage
    warm_up(G, args.K)
    rows = [in_memory(G, args.K, threads, max_iter=args.max_iter)
            for threads in args.threads]
    rows += [on_cluster(G, args.K, n, max_iter=args.max_iter) for n in args.workers]
    reference = rows[0]["loglik"]
    for row in rows:
        row.update(individuals=args.individuals, snps=args.snps, K=args.K,
                   loglik_rel_diff=abs(row["loglik"] - reference) / abs(reference))
    write(rows, args.out / "distributed_scale.csv")
    print(table(rows))


def write(rows, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        writer.writerows(rows)


def table(rows) -> str:
    lines = [("| run | start (s) | fit (s) | iterations | passes | MB sent / pass | "
              "MB gathered / pass | log-likelihood rel. diff |"),
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['where']} | {r['start_s']:.1f} | {r['fit_s']:.1f} | "
            f"{r['iterations']} | {r['passes']} | {r['mb_sent_per_pass']:.2f} | "
            f"{r['mb_gathered_per_pass']:.2f} | {r['loglik_rel_diff']:.1e} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
