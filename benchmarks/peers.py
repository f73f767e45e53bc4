"""Peers side by side: ADAMIXTURE, fastmixture and admixspec on the same data.

Every tool runs as its own process, one after another, on the same PLINK
file (the data set with its monomorphic SNPs dropped, written once to a
temporary folder: fastmixture refuses monomorphic SNPs), with the same
thread count (each tool's thread option plus ``NUMBA_NUM_THREADS``,
``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS``).
For each run: wall time and CPU time of the process (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)``), iterations, and the log-likelihood
of its Q and P recomputed by :func:`admixspec.loglikelihood` on the same
SNPs. ADAMIXTURE may flip the coding of the whole matrix and fastmixture's P
counts the other allele, so each peer's P is taken as given or as ``1 - P``,
whichever reproduces the log-likelihood the peer printed (the row says
which). End-to-end process times include reading the input, Python start-up
and writing the outputs for every tool alike; admixspec's fit time
(``timings.total`` in its JSON) is also shown.

Tools and settings (``--tools``):

* ``adamixture``: ADAMIXTURE 1.8.8, BR-QN (its default algorithm) from its
  SVD + ALS start, ``--tol`` 1e-4 (the issue's table) and, with
  ``--ada-tol 1e-4 0.1``, also its default 0.1; ``--chrom_mode all`` so it
  keeps the same SNPs; seed 42 (its default).
* ``fastmixture``: fastmixture 1.3.0 with its defaults, seed 42.
* ``ml``: ``admixspec run --init svd`` (plain ML, ``fit_ml``).
* ``default``: ``admixspec run`` (spectral estimate, estimator choice, ML).
* ``fit_ml``: :func:`admixspec.fit_ml` timed inside its own process (wall
  and CPU of the fit alone: no interpreter start, import, reading, or the
  CLI's spectral K hint; the row's note gives the whole process's times).

Every tool takes the same seed, 42 unless ``--seed`` gives others (several:
one run of each tool per seed, the seed in the row's note).

Data sets (``--data``): ``hapmap3`` (ADMIXTURE tutorial, 324 x 13,759
polymorphic SNPs), ``1kg`` (1000 Genomes phase 1, 1,092 x 14,079),
``sim2000`` (Balding-Nichols, 2,000 x 100,000, K = 4, F_ST 0.1, alpha 0.5,
seed 11), ``demo`` (ADAMIXTURE's demo data, 105 x 8,451; from the installed
package, or ``--demo PATH``), ``1kg-eur`` (the 379 Europeans of ``1kg``, CEU,
FIN, GBR, IBS and TSI by its ``labels.tsv``, 14,038 SNPs polymorphic among
them: weak structure, a flat likelihood).

Run (on a quiet machine; under load, CPU time is the fairer measure):
  python benchmarks/peers.py --data hapmap3 --K 3 4 5 --threads 1 2
  python benchmarks/peers.py --data demo --K 7 --threads 1 --ada-tol 1e-4 0.1
  python benchmarks/peers.py --data hapmap3 1kg --K 4 --per-iteration
  python benchmarks/peers.py --data hapmap3 --K 4 --threads 2 --tools adamixture ml \\
      --seed 40 41 42 43 44 45 46 47 48 49
Prints one Markdown table row per run (for docs/benchmarks.md) and, with
``--json FILE``, appends every row as a JSON line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

import admixspec
from admixspec.io import write_plink

ROOT = Path(__file__).resolve().parent.parent
REALDATA = ROOT.parent / "shared" / "realdata"
HAPMAP3 = REALDATA / "hapmap3_admixture_tutorial" / "hapmap3.bed"
KG = REALDATA / "1kg_phase1_1092_flashpca" / (
    "1kg.ref.phase1_release_v3.20101123_thinned_autosomal_overlap.bed")
PEERS = Path(os.environ.get("PEERS_BIN", "/work/peers/bin"))
SIM2000 = dict(n_individuals=2000, n_snps=100_000, K=4, fst=0.1, alpha=0.5, seed=11)
DEFAULT_K = {"hapmap3": [3, 4, 5], "1kg": [5, 8], "sim2000": [4], "demo": [7],
             "1kg-eur": [2, 3, 4, 5]}


@dataclass
class Run:
    """One tool's run on one data set: times, iterations, log-likelihood."""

    data: str
    K: int
    threads: int
    tool: str
    wall: float
    cpu: float
    iterations: str
    loglik: float
    fit_seconds: float = float("nan")
    note: str = ""
    extra: dict = field(default_factory=dict)


def demo_bed():
    """ADAMIXTURE's demo .bed from the installed package (not part of admixspec)."""
    found = sorted(PEERS.parent.glob("lib/python*/site-packages/adamixture/demo/data/"
                                     "demo_data.bed"))
    return found[0] if found else None


def load(name, demo=None):
    """The data set as :class:`admixspec.Genotypes`, monomorphic SNPs dropped."""
    if name == "sim2000":
        cfg = dict(SIM2000)
        K = cfg.pop("K")
        geno = admixspec.simulate_balding_nichols(cfg.pop("n_individuals"),
                                                  cfg.pop("n_snps"), K, **cfg).genotypes
    else:
        path = {"hapmap3": HAPMAP3, "1kg": KG, "1kg-eur": KG,
                "demo": demo or demo_bed()}[name]
        if path is None or not Path(path).exists():
            sys.exit(f"data not found for {name}: {path}")
        geno = admixspec.read_genotypes(path, drop_monomorphic=False)
        if name == "1kg-eur":
            european = _superpopulation(geno) == "EUR"
            geno = geno.subset(individuals=np.flatnonzero(european))
    G = geno.dosage
    called = G >= 0
    counted = np.where(called, G, 0).sum(axis=0)
    keep = (counted > 0) & (counted < 2 * called.sum(axis=0))
    return geno.subset(snps=np.flatnonzero(keep)) if not keep.all() else geno


def _superpopulation(geno):
    """Each individual's 1000 Genomes superpopulation, from the data's ``labels.tsv``."""
    labels = np.loadtxt(KG.parent / "labels.tsv", dtype=str, skiprows=1, ndmin=2)
    lookup = dict(zip(labels[:, 0], labels[:, 2], strict=True))
    return np.array([lookup.get(sample, "") for sample in geno.samples])


def thread_env(threads):
    """The environment with every thread pool a tool may use set to ``threads``."""
    env = dict(os.environ)
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "MKL_NUM_THREADS"):
        env[var] = str(threads)
    return env


def timed(cmd, threads, log_path):
    """Run ``cmd`` in the folder of ``log_path``; returns (wall seconds, CPU seconds,
    combined output).

    Not in this process's working folder: ``python -m`` and ``python -c`` look
    there before ``PYTHONPATH``, so run from a checkout they would import it,
    not the tree ``PYTHONPATH`` names.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=thread_env(threads),
                          cwd=Path(log_path).parent)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    output = proc.stdout + proc.stderr
    Path(log_path).write_text(" ".join(map(str, cmd)) + "\n" + output)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {output[-800:]}")
    return wall, cpu, output


def oriented_loglik(G, Q, P, printed, threads):
    """Log-likelihood of (Q, P) or (Q, 1 - P), whichever matches the printed value.

    Returns ``(loglik, how)``; ``how`` is ``"P"`` or ``"1-P"``, with
    ``" (no match)"`` when neither is within 1 + 1e-6 |printed| of it (the
    higher is then kept).
    """
    options = {"P": admixspec.loglikelihood(G, Q, P, threads=threads),
               "1-P": admixspec.loglikelihood(G, Q, 1.0 - P, threads=threads)}
    how = min(options, key=lambda k: abs(options[k] - printed))
    if abs(options[how] - printed) > 1.0 + 1e-6 * abs(printed):
        how = max(options, key=options.get)
        return options[how], how + " (no match)"
    return options[how], how


def run_adamixture(prefix, G, K, threads, seed, tol, work):
    out = work / f"ada_{K}_{threads}_{tol:g}"
    cmd = [str(PEERS / "adamixture"), "--k", str(K), "--data_path", f"{prefix}.bed",
           "--save_dir", str(out), "--name", "run", "--threads", str(threads),
           "--seed", str(seed), "--tol", str(tol), "--chrom_mode", "all"]
    wall, cpu, log = timed(cmd, threads, f"{out}.log")
    Q = np.loadtxt(out / f"run.{K}.Q", ndmin=2)
    P = np.loadtxt(out / f"run.{K}.P", ndmin=2)
    printed = float(re.findall(r"Final log-likelihood: (\S+)", log)[-1])
    ll, how = oriented_loglik(G, Q, P, printed, threads)
    n_iter = len(re.findall(r"^\s*Iteration \d+,", log, re.M))
    als = re.findall(r"Convergence reached in iteration (\d+)", log)
    fit = re.findall(r"K=\d+ completed in (\S+) seconds", log)
    return Run("", K, threads, f"ADAMIXTURE --tol {tol:g}", wall, cpu,
               f"{n_iter} (+{als[-1] if als else '?'} ALS)", ll,
               float(fit[-1]) if fit else float("nan"), f"P as {how}")


def run_fastmixture(prefix, G, K, threads, seed, work):
    out = work / f"fm_{K}_{threads}"
    cmd = [str(PEERS / "fastmixture"), "--bfile", str(prefix), "--K", str(K),
           "--threads", str(threads), "--seed", str(seed), "--out", str(out)]
    wall, cpu, log = timed(cmd, threads, f"{out}.log")
    Q = np.loadtxt(f"{out}.K{K}.s{seed}.Q", ndmin=2)
    P = np.loadtxt(f"{out}.K{K}.s{seed}.P", ndmin=2)
    printed = float(re.findall(r"Final log-likelihood: (\S+)", log)[-1])
    ll, how = oriented_loglik(G, Q, P, printed, threads)
    iters = re.findall(r"^\((\d+)\)\s+Log-like", log, re.M)
    return Run("", K, threads, "fastmixture", wall, cpu,
               iters[-1] if iters else "?", ll, note=f"P as {how}")


def run_admixspec(prefix, G, K, threads, seed, mode, work):
    out = work / f"as_{mode}_{K}_{threads}"
    cmd = [sys.executable, "-m", "admixspec", "run", f"{prefix}.bed", "-K", str(K),
           "-j", str(threads), "-s", str(seed), "--out", str(out), "-q"]
    if mode == "ml":
        cmd += ["--init", "svd"]
    wall, cpu, _ = timed(cmd, threads, f"{out}.runlog")
    record = json.loads(Path(f"{out}.{K}.json").read_text())
    Q = admixspec.read_q(f"{out}.{K}.Q")
    P = admixspec.read_p(f"{out}.{K}.P")
    ll = admixspec.loglikelihood(G, Q, P, threads=threads)
    label = "admixspec --init svd" if mode == "ml" else "admixspec (default)"
    timings = record.get("timings", {})
    return Run("", K, threads, label, wall, cpu, str(record.get("n_iter")), ll,
               float(timings.get("total", float("nan"))),
               f"path {record.get('path')}", {"timings": timings,
                                              "diagnostics": record.get("diagnostics")})


_LIBRARY_FIT = """
import json, sys, time
import numpy as np
import admixspec
bed, K, threads, seed, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5]
G = admixspec.read_genotypes(bed).dosage
admixspec.fit_ml(G[:20, :500], 2, seed=0, threads=threads, tol=1.0)  # numba caches
wall, cpu = time.perf_counter(), time.process_time()
res = admixspec.fit_ml(G, K, seed=seed, threads=threads)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
np.save(out + ".Q.npy", res.Q)
np.save(out + ".P.npy", res.P)
print(json.dumps({"wall": wall, "cpu": cpu, "n_iter": res.n_iter,
                  "passes": res.n_passes, "loglik": res.loglik,
                  "start": res.diagnostics.get("start"),
                  "starts": res.diagnostics.get("starts")}))
"""


def run_fit_ml(prefix, G, K, threads, seed, work):
    """``admixspec.fit_ml`` alone, timed inside its process (no import, no K hint)."""
    out = work / f"lib_{K}_{threads}"
    cmd = [sys.executable, "-c", _LIBRARY_FIT, f"{prefix}.bed", str(K), str(threads),
           str(seed), str(out)]
    wall, cpu, log = timed(cmd, threads, f"{out}.log")
    record = json.loads(log.strip().splitlines()[-1])
    ll = admixspec.loglikelihood(G, np.load(f"{out}.Q.npy"), np.load(f"{out}.P.npy"),
                                 threads=threads)
    return Run("", K, threads, "admixspec fit_ml (in process)", record["wall"],
               record["cpu"], str(record["n_iter"]), ll, record["wall"],
               f"{record['passes']:.0f} passes, start {record['start']} of "
               f"{record['starts']}; process {wall:.1f} s wall, {cpu:.1f} s CPU")


_ADAMIXTURE_PASSES = """
import logging, sys, time
import numpy as np
logging.disable(logging.INFO)
from adamixture.model.br_qn import q_hessian_block_size
from adamixture.src import utils
from adamixture.src.utils_c.cython import sqp, tools
bed, K, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
G, N, M = utils.read_data(bed, packed=False, chunk_size=8192, chrom_mode="all",
                          autosomes=22)
rng = np.random.default_rng(0)
P = rng.uniform(0.05, 0.95, size=(M, K))
Q = rng.dirichlet(np.ones(K), size=N)
Qn, Pn = np.empty_like(Q), np.empty_like(P)
XtX, Xtz = np.empty((N, K, K)), np.empty((N, K))
v_kk = np.ascontiguousarray(np.linalg.svd(np.ones((1, K)))[2].T)
block = q_hessian_block_size(K)
steps = {"Q step": lambda: sqp.update_q_sqp(G, Q, Qn, P, XtX, Xtz, v_kk, M, N, K, block),
         "P step": lambda: sqp.update_p_sqp_fused(G, Qn, P, Pn, M, N, K),
         "log-likelihood": lambda: tools.loglikelihood(G, P, Q)}
for name, step in steps.items():
    step()
    clock = time.process_time()
    for _ in range(repeats):
        step()
    print(name, (time.process_time() - clock) / repeats)
"""


def per_iteration(prefix, G, K, repeats=5):
    """CPU seconds of one iteration of each engine's map, single-threaded.

    ADAMIXTURE's BR-QN iteration (its ``optimize_original``) is two SQP maps
    (a Q step and a fused P step, each reading the genotypes) and a
    log-likelihood pass (one more when its quasi-Newton point is rejected);
    admixspec's is two block-relaxation maps (one read each). Same random
    (Q, P) for both; each step timed ``repeats`` times after one untimed call.
    """

    from admixspec.core.threads import thread_limit
    from admixspec.ml.likelihood import make_engine
    from admixspec.ml.newton import BlockNewton

    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([str(PEERS / "python"), "-c", _ADAMIXTURE_PASSES,
                           f"{prefix}.bed", str(K), str(repeats)], capture_output=True,
                           text=True, env=env, check=True)
    theirs = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
              for line in proc.stdout.strip().splitlines()}
    rng = np.random.default_rng(0)
    P = rng.uniform(0.05, 0.95, size=(G.shape[1], K))
    Q = rng.dirichlet(np.ones(K), size=G.shape[0])
    with thread_limit(1):
        engine = make_engine(G, K)
        relax = BlockNewton(engine)
        relax.step(Q, P)
        clock = time.process_time()
        for _ in range(repeats):
            relax.step(Q, P)
        ours = (time.process_time() - clock) / repeats
    ada = 2 * (theirs["Q step"] + theirs["P step"]) + theirs["log-likelihood"]
    print(f"K={K}, CPU seconds, single-threaded: ADAMIXTURE Q step "
          f"{theirs['Q step']:.4f}, P step {theirs['P step']:.4f}, log-likelihood "
          f"{theirs['log-likelihood']:.4f}: {ada:.3f} per BR-QN iteration; admixspec "
          f"block-relaxation map {ours:.4f}: {2 * ours:.3f} per iteration "
          f"(ratio {ada / (2 * ours):.1f})", flush=True)

def markdown(runs):
    """The runs as a Markdown table; log-likelihood relative to the best of the K."""
    best = {}
    for r in runs:
        key = (r.data, r.K)
        best[key] = max(best.get(key, -np.inf), r.loglik)
    lines = ["| data | K | threads | tool | wall (s) | CPU (s) | fit (s) | iterations "
             "| log-likelihood | vs best | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        gap = r.loglik - best[(r.data, r.K)]
        lines.append(
            f"| {r.data} | {r.K} | {r.threads} | {r.tool} | {r.wall:.1f} | "
            f"{r.cpu:.1f} | "
            f"{r.fit_seconds:.1f} | {r.iterations} | {r.loglik:.2f} | "
            f"{gap:+.2f} ({gap / abs(r.loglik):+.1e}) | {r.note} |")
    return "\n".join(lines)

def _runs(tool, prefix, G, K, threads, seed, args, work):
    """One tool's runs for one seed (ADAMIXTURE: one per ``--ada-tol``)."""
    if tool == "adamixture":
        return [run_adamixture(prefix, G, K, threads, seed, tol, work)
                for tol in args.ada_tol]
    if tool == "fit_ml":
        return [run_fit_ml(prefix, G, K, threads, seed, work)]
    if tool == "fastmixture":
        return [run_fastmixture(prefix, G, K, threads, seed, work)]
    return [run_admixspec(prefix, G, K, threads, seed, tool, work)]


def _report(run, json_path):
    """Print one run's line; append it to ``json_path`` as a JSON line (if any)."""
    print(f"{run.tool:26s} K={run.K} t={run.threads} wall {run.wall:7.1f} "
          f"cpu {run.cpu:7.1f} fit {run.fit_seconds:6.1f} iters "
          f"{run.iterations:>12s} loglik {run.loglik:.3f}  {run.note}", flush=True)
    if json_path:
        with open(json_path, "a") as fh:
            fh.write(json.dumps(asdict(run)) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["hapmap3"],
                    choices=sorted(DEFAULT_K))
    ap.add_argument("--K", type=int, nargs="*", default=None,
                    help="default: " + ", ".join(f"{k} {v}"
                                                 for k, v in DEFAULT_K.items()))
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--tools", nargs="+", default=["adamixture", "fastmixture", "ml",
                                                    "fit_ml", "default"],
                    choices=["adamixture", "fastmixture", "ml", "default", "fit_ml"])
    ap.add_argument("--ada-tol", type=float, nargs="+", default=[1e-4])
    ap.add_argument("--seed", type=int, nargs="+", default=[42],
                    help="every tool's seed; several: one run each, the seed in the "
                         "note (the modes a seed lands in)")
    ap.add_argument("--demo", default=None, help="ADAMIXTURE's demo_data.bed")
    ap.add_argument("--json", default=None, help="append every run as a JSON line")
    ap.add_argument("--keep", default=None, help="keep the outputs in this folder")
    ap.add_argument("--per-iteration", action="store_true",
                    help="only time one iteration of each engine's map "
                         "(see per_iteration)")
    args = ap.parse_args(argv)
    runs = []
    for name in args.data:
        geno = load(name, args.demo)
        G = geno.dosage
        print(f"== {name}: {G.shape[0]} x {G.shape[1]}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=args.keep)
                        if args.keep else tmp).resolve()  # the tools run in it
            prefix = work / name
            write_plink(prefix, geno)
            if args.per_iteration:
                for K in args.K or DEFAULT_K[name]:
                    per_iteration(prefix, G, K)
                continue
            for K in args.K or DEFAULT_K[name]:
                for threads, seed, tool in itertools.product(args.threads, args.seed,
                                                             args.tools):
                    for run in _runs(tool, prefix, G, K, threads, seed, args, work):
                        run.data = name
                        if len(args.seed) > 1:
                            run.note = f"seed {seed}; {run.note}"
                        runs.append(run)
                        _report(run, args.json)
    if runs:
        print()
        print(markdown(runs))

if __name__ == "__main__":
    main()
