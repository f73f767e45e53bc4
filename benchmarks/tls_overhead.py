"""What TLS costs `--scheduler local:N` (issue 23): one ML fit, TLS and plain clusters.

The same fit (``fit_admixture(method="ml", seed=1, max_iter=...)`` on
Balding-Nichols genotypes, F_ST 0.1, Dirichlet(0.5)) runs on a LocalCluster
of N single-threaded worker processes started as ``--scheduler local:N``
starts it (TLS with a temporary certificate,
:func:`admixspec.backends.distributed.connect`) and on the same cluster without
TLS (plain ``tcp://``, what ``local:N`` did before), alternating,
``--repeats`` times each. Per run: the cluster's start
(and the workers' first import of admixspec), the fit's wall time, and the CPU
time of this process and of the workers (``getrusage`` of the children,
counted once the cluster has stopped), plus the bytes the passes moved. On a
shared machine compare CPU times, not wall times.

    python benchmarks/tls_overhead.py --individuals 500 --snps 20000 -K 3 \\
        --workers 2 --max-iter 20 --repeats 3
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import resource
import time

import numpy as np

from admixspec import fit_admixture, simulate_balding_nichols
from admixspec.backends.distributed import connect, use_client


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@contextlib.contextmanager
def _plain_cluster(workers: int):
    """``local:N``'s cluster without TLS: plain tcp:// on 127.0.0.1."""
    import distributed

    with distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True,
            dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False},
            silence_logs=logging.CRITICAL) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def run(G, K: int, workers: int, tls: bool, max_iter: int) -> dict:
    """One fit on a fresh cluster; CPU time includes the cluster's start and stop."""
    cpu_before = _cpu()
    clock = time.perf_counter()
    cluster = connect(f"local:{workers}") if tls else _plain_cluster(workers)
    with cluster as client:
        scheme = client.scheduler.address.split("://")[0]
        started = time.perf_counter() - clock
        with use_client(client) as traffic:
            fit_clock = time.perf_counter()
            result = fit_admixture(G, K, method="ml", seed=1, max_iter=max_iter,
                                   threads=1)
            fit_s = time.perf_counter() - fit_clock
    own, children = (after - before for after, before in zip(_cpu(), cpu_before,
                                                            strict=True))
    return {"scheme": scheme, "start_s": started, "fit_s": fit_s, "client_cpu_s": own,
            "worker_cpu_s": children, "passes": traffic.passes,
            "mb_per_pass": (traffic.bytes_sent + traffic.bytes_received)
            / max(traffic.passes, 1) / 1e6,
            "iterations": result.n_iter, "loglik": result.loglik}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--individuals", type=int, default=500)
    parser.add_argument("--snps", type=int, default=20_000)
    parser.add_argument("-K", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sim = simulate_balding_nichols(args.individuals, args.snps, args.K, fst=0.1,
                                   alpha=0.5, seed=args.seed)
    G = sim.genotypes.dosage
    rows = []
    for repeat in range(args.repeats):
        for tls in (True, False):
            row = run(G, args.K, args.workers, tls, args.max_iter)
            rows.append(row)
            print(f"repeat {repeat} {row['scheme']}: start {row['start_s']:.1f} s, "
                  f"fit {row['fit_s']:.1f} s, CPU client {row['client_cpu_s']:.1f} s "
                  f"+ workers {row['worker_cpu_s']:.1f} s, {row['passes']} passes, "
                  f"{row['mb_per_pass']:.2f} MB/pass, {row['iterations']} iterations, "
                  f"log-likelihood {row['loglik']:.4f}", flush=True)
    print("\n| cluster | start s (median) | fit s (median) | CPU s client + workers "
          "(median) | passes | MB / pass | log-likelihood |")
    print("|---|---|---|---|---|---|---|")
    for scheme in ("tls", "tcp"):
        mine = [row for row in rows if row["scheme"] == scheme]
        cpu = [row["client_cpu_s"] + row["worker_cpu_s"] for row in mine]
        print(f"| {scheme}:// | {np.median([r['start_s'] for r in mine]):.1f} | "
              f"{np.median([r['fit_s'] for r in mine]):.1f} | {np.median(cpu):.1f} | "
              f"{mine[0]['passes']} | {mine[0]['mb_per_pass']:.2f} | "
              f"{mine[0]['loglik']:.4f} |")


if __name__ == "__main__":
    main()
