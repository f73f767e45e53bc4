"""GPU engine speed (#12 item 3): admixspec on the CPU and on the GPU, fastmixture, neural-admixture.

The same simulated Balding-Nichols data (F_ST 0.1, Dirichlet alpha 0.5,
monomorphic SNPs dropped, as fastmixture refuses them) for every tool, one run
each: ``small`` 2,000 x 100,000, K = 5; ``large`` 10,000 x 500,000, K = 5
(``tiny``, 200 x 2,000, K = 3, checks the script on a CPU). Each row prints
wall time, the log-likelihood (ADMIXTURE's, computed by admixspec from each
tool's Q and P, so the values are comparable) and the Q error against the
truth. admixspec runs :func:`admixspec.ml.refine.fit_ml` from its SVD start
(ADMIXTURE's stopping rule, 1e-4), once with ``device="cpu"`` and once with
``device="cuda"``; fastmixture and neural-admixture run as their command
lines on the data written as PLINK files. A tool that is not installed
prints a "not installed" row, one that fails or outlasts ``--timeout`` a
"failed"/"timed out" row. The GPU fit runs last, in this process (after the
others, so that no CUDA context exists when the CPU fit forks).

On a CPU-only machine (checks the script; the GPU row says why it is absent):
  .venv/bin/python benchmarks/gpu_speed.py --size tiny --threads 1

On the device machine, in one call (H100/H200 image: Python 3.12 with numpy,
numba, numba-cuda, torch; nothing can be downloaded there). Prepare the wheels
here, in the repository root, once:
  echo /.whl/ >> .git/info/exclude
  .venv/bin/python -m pip wheel --no-deps -w .whl .
  PYENV_VERSION=3.12.1 python3.12 -m pip wheel --no-deps -w .whl fastmixture==1.3.0
  D="--no-deps --only-binary=:all: --python-version 3.12 --implementation cp
     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
     --platform manylinux2014_x86_64 -d .whl"
  .venv/bin/python -m pip download $D neural-admixture==1.6.7 configargparse \
      cyvcf2 bed-reader scikit-allel
then run (device tool, carry [".whl"], timeout_s 600):
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit;
  nvidia-smi -L; PYTHONUNBUFFERED=1 python3 benchmarks/gpu_speed.py --size small \
      --size large --threads 16 --timeout 200 2>&1 | tee $OUT/gpu_speed.log
(fastmixture 1.3.0 has no binary wheel: it is built here with a local
Python 3.12; neural-admixture 1.6.7 pins torch <= 2.4 and is installed
without its dependencies against the image's torch; a row that fails says
so.) On the large setting the CPU tools stop at ``--timeout``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import admixspec
from admixspec.io import write_plink

SIZES = {
    "tiny": {"n_individuals": 200, "n_snps": 2_000, "K": 3},
    "small": {"n_individuals": 2_000, "n_snps": 100_000, "K": 5},
    "large": {"n_individuals": 10_000, "n_snps": 500_000, "K": 5},
}
SEED = 12


def simulated(size):
    """Genotypes, true Q and K of one size, monomorphic SNPs dropped."""
    cfg = SIZES[size]
    sim = admixspec.simulate_balding_nichols(cfg["n_individuals"], cfg["n_snps"], cfg["K"],
                                             fst=0.1, alpha=0.5, seed=SEED)
    G = sim.genotypes.dosage
    alt = np.where(G >= 0, G, 0).sum(axis=0)
    keep = (alt > 0) & (alt < 2 * (G >= 0).sum(axis=0))
    return sim.genotypes.subset(snps=np.flatnonzero(keep)), sim.Q, cfg["K"]


def _fit_child(G, K, threads, device, queue):
    """Child process: one admixspec fit; puts (Q, P, seconds) or an error string."""
    try:
        t = time.perf_counter()
        fit = admixspec.fit_ml(G, K, seed=SEED, threads=threads, device=device)
        queue.put((fit.Q, fit.P, time.perf_counter() - t, f"{fit.n_iter} iterations"))
    except Exception as error:  # noqa: BLE001 - reported as the row's note
        queue.put(f"failed: {error}")


def admixspec_cpu(G, K, threads, timeout, workdir):
    """admixspec's CPU engine in a forked child, so that ``timeout`` can stop it."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_fit_child, args=(G, K, threads, "cpu", queue))
    child.start()
    try:
        out = queue.get(timeout=timeout)
    except Exception:  # noqa: BLE001 - queue.Empty: the fit outlasted the timeout
        out = f"timed out after {timeout:.0f} s"
    child.kill()
    child.join()
    return out


def admixspec_gpu(G, K, threads, timeout, workdir):
    """admixspec's CUDA engine in this process (``timeout`` is not enforced here)."""
    from admixspec.gpu import cuda_status

    kind, description = cuda_status()
    if kind != "gpu":
        return f"no GPU: {description}"
    t = time.perf_counter()
    fit = admixspec.fit_ml(G, K, seed=SEED, threads=threads, device="cuda")
    return fit.Q, fit.P, time.perf_counter() - t, f"{fit.n_iter} iterations, {description}"


def _command(args, timeout):
    """Run a peer's command line: None when it worked, else the row's note."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"
    if done.returncode != 0:
        return "failed: " + (done.stderr or done.stdout).strip().splitlines()[-1][:200]
    return None


def fastmixture(G, K, threads, timeout, workdir):
    """fastmixture 1.3.0 with its defaults; its P is of the other allele (see ml_speed.py)."""
    exe = shutil.which("fastmixture")
    if exe is None:
        return "not installed"
    out = Path(workdir) / "fm"
    t = time.perf_counter()
    error = _command([exe, "--bfile", str(Path(workdir) / "data"), "--K", str(K),
                      "--threads", str(threads), "--seed", "1", "--out", str(out)], timeout)
    if error:
        return error
    dt = time.perf_counter() - t
    return (np.loadtxt(f"{out}.K{K}.s1.Q"), 1.0 - np.loadtxt(f"{out}.K{K}.s1.P"), dt,
            f"{threads} threads")


def neural_admixture(G, K, threads, timeout, workdir):
    """neural-admixture on one GPU; its allele orientation follows the data, so both are tried."""
    exe = shutil.which("neural-admixture")
    if exe is None:
        return "not installed"
    t = time.perf_counter()
    error = _command([exe, "train", "--k", str(K), "--name", "na", "--data_path",
                      str(Path(workdir) / "data.bed"), "--save_dir", str(workdir),
                      "--num_gpus", "1", "--threads", str(threads), "--seed", "1"], timeout)
    if error:
        return error
    dt = time.perf_counter() - t
    Q = np.loadtxt(Path(workdir) / f"na.{K}.Q")
    P = np.loadtxt(Path(workdir) / f"na.{K}.P")
    P = np.clip(P, admixspec.ml.likelihood.P_MIN, admixspec.ml.likelihood.P_MAX)
    lls = [admixspec.loglikelihood(G, Q, p, threads=threads) for p in (P, 1.0 - P)]
    return Q, (P, 1.0 - P)[int(np.argmax(lls))], dt, "P orientation: the better of P, 1-P"


TOOLS = {"admixspec CPU": admixspec_cpu, "fastmixture": fastmixture,
         "neural-admixture (GPU)": neural_admixture, "admixspec GPU": admixspec_gpu}


def run_size(size, args):
    """Every tool on one size; prints one row per tool."""
    genotypes, Q_true, K = simulated(size)
    G = genotypes.dosage
    print(f"\n== {size}: {G.shape[0]} x {G.shape[1]}, K = {K}, seed {SEED}, "
          f"{args.threads} threads", flush=True)
    print(f"{'tool':24s} {'wall s':>9s} {'loglik':>18s} {'Q error':>8s}  note", flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        write_plink(Path(workdir) / "data", genotypes)
        for name, tool in TOOLS.items():
            out = tool(G, K, args.threads, args.timeout, workdir)
            if isinstance(out, str):
                print(f"{name:24s} {'-':>9s} {'-':>18s} {'-':>8s}  {out}", flush=True)
                continue
            Q, P, dt, note = out
            ll = admixspec.loglikelihood(G, Q, P, threads=args.threads)
            err = admixspec.q_error(Q_true, Q)
            print(f"{name:24s} {dt:9.1f} {ll:18.4f} {err:8.4f}  {note}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", action="append", choices=tuple(SIZES),
                    help="setting(s) to run (default: small)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds after which a CPU tool or peer is stopped")
    args = ap.parse_args(argv)
    for size in args.size or ["small"]:
        run_size(size, args)


if __name__ == "__main__":
    sys.exit(main())
