"""GPU engine speed (#12): admixspec on CPU and GPU, fastmixture, neural-admixture.

The same simulated Balding-Nichols data (F_ST 0.1, Dirichlet alpha 0.5,
monomorphic SNPs dropped, as fastmixture refuses them) for every tool, one run
each: ``small`` 2,000 x 100,000, K = 5; ``large`` 10,000 x 500,000, K = 5
(``tiny``, 200 x 2,000, K = 3, checks the script on a CPU). Each row prints
wall time, the log-likelihood (ADMIXTURE's, computed by admixspec from each
tool's Q and P, so the values are comparable) and the Q error against the
truth. admixspec runs :func:`admixspec.ml.refine.fit_ml` from its SVD start
(ADMIXTURE's stopping rule, 1e-4), once with ``device="cpu"`` and once with
``device="cuda"``, each after a small warm-up fit that compiles its kernels
(numba's JIT: about a minute for the CPU engine's on a loaded 2-core
machine); fastmixture and neural-admixture run as their command lines on the
data written as PLINK files. A tool that is not installed
prints a "not installed" row, one that fails or outlasts ``--timeout`` a
"failed"/"timed out" row (the CPU fit runs in a spawned child process, so
that the timeout can stop it; the GPU fit runs last, in this process).

On a CPU-only machine (checks the script; the GPU row says why it is absent):
  .venv/bin/python benchmarks/gpu_speed.py --size tiny --threads 1

On the device machine (H100/H200 image: Python 3.12 with numpy, numba,
numba-cuda, torch; nothing can be downloaded there), prepare the wheels here,
in the repository root, once:
  echo /.whl/ >> .git/info/exclude
  .venv/bin/python -m pip wheel --no-deps -w .whl .
  PYENV_VERSION=3.12.1 python3.12 -m pip wheel --no-deps -w .whl fastmixture==1.3.0
  D="--no-deps --only-binary=:all: --python-version 3.12 --implementation cp
     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
     --platform manylinux2014_x86_64 -d .whl"
  .venv/bin/python -m pip download $D neural-admixture==1.6.7 configargparse \
      bed-reader scikit-allel dask partd locket
then, with the wheels in .whl, one device call (tool `run`, carry [".whl"],
timeout_s 600): the GPU half of tests/test_gpu.py, then the small setting:
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target /tmp/site .whl/*.whl || exit;
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1;
  nvidia-smi -L; python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py \
      -k "not simulator" 2>&1 | tee $OUT/test_gpu.log;
  python3 benchmarks/gpu_speed.py --size small --threads 16 --timeout 120 \
      2>&1 | tee $OUT/gpu_speed_small.log
and, with 6 minutes of device time left, the large setting in a second call
(the same first two lines, then; the CPU tools would only time out there):
  python3 benchmarks/gpu_speed.py --size large --threads 16 --timeout 240 \
      --skip cpu --skip fastmixture 2>&1 | tee $OUT/gpu_speed_large.log
(25 MB of wheels. fastmixture 1.3.0 has no binary wheel: it is built here
with a local Python 3.12; neural-admixture 1.6.7 pins torch <= 2.4 and is
installed without its dependencies against the image's torch; a row that
fails says so. The recipe, less torch and the GPU, was run in a Python 3.12
environment holding the image's other packages: every row but
neural-admixture's worked.)
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import admixspec
from admixspec.core.filters import filter_monomorphic
from admixspec.core.parameters import P_MAX, P_MIN
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
    sim = admixspec.simulate_balding_nichols(cfg["n_individuals"], cfg["n_snps"],
                                             cfg["K"], fst=0.1, alpha=0.5, seed=SEED)
    return filter_monomorphic(sim.genotypes), sim.Q, cfg["K"]


def warm_up(K, device):
    """Compile the engine's kernels (numba's JIT) on a small fit: no row times that."""
    sim = admixspec.simulate_balding_nichols(60, 600, K, seed=SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", admixspec.ConvergenceWarning)
        admixspec.fit_admixture(sim.genotypes.dosage, K, method="ml", seed=SEED, device=device,
                                max_iter=3)


def _fit_child(path, K, threads, device, queue):
    """Child process: one admixspec fit; puts (Q, P, seconds, note) or an error."""
    try:
        G = np.load(path)
        warm_up(K, device)
        t = time.perf_counter()
        fit = admixspec.fit_admixture(G, K, method="ml", seed=SEED, threads=threads,
                                      device=device)
        queue.put((fit.Q, fit.P, time.perf_counter() - t, f"{fit.n_iter} iterations"))
    except Exception as error:  # noqa: BLE001 - reported as the row's note
        queue.put(f"failed: {error}")


def admixspec_cpu(G, K, threads, timeout, workdir):
    """admixspec's CPU engine in a child process, so that ``timeout`` can stop it.

    Spawned, not forked (fork after numba's OpenMP threads start is unsafe);
    the genotypes reach it as a ``.npy`` file.
    """
    path = Path(workdir) / "G.npy"
    np.save(path, G)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_fit_child, args=(path, K, threads, "cpu", queue))
    child.start()
    try:
        out = queue.get(timeout=timeout)
    except Exception:  # noqa: BLE001 - queue.Empty: the fit outlasted the timeout
        out = f"timed out after {timeout:.0f} s"
    child.kill()
    child.join()
    path.unlink()
    return out


def admixspec_gpu(G, K, threads, timeout, workdir):
    """admixspec's CUDA engine in this process (``timeout`` is not enforced here)."""
    from admixspec.backends.gpu import cuda_status

    kind, description = cuda_status()
    if kind != "gpu":
        return f"no GPU: {description}"
    warm_up(K, "cuda")
    t = time.perf_counter()
    fit = admixspec.fit_admixture(G, K, method="ml", seed=SEED, threads=threads,
                                  device="cuda")
    dt = time.perf_counter() - t
    return fit.Q, fit.P, dt, f"{fit.n_iter} iterations, {description}"


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
    """fastmixture 1.3.0, defaults; its P is of the other allele (see ml_speed.py)."""
    exe = shutil.which("fastmixture")
    if exe is None:
        return "not installed"
    out = Path(workdir) / "fm"
    t = time.perf_counter()
    error = _command([exe, "--bfile", str(Path(workdir) / "data"), "--K", str(K),
                      "--threads", str(threads), "--seed", "1", "--out", str(out)],
                     timeout)
    if error:
        return error
    dt = time.perf_counter() - t
    return (np.loadtxt(f"{out}.K{K}.s1.Q"), 1.0 - np.loadtxt(f"{out}.K{K}.s1.P"), dt,
            f"{threads} threads")


def neural_admixture(G, K, threads, timeout, workdir):
    """neural-admixture on one GPU; its allele follows the data, so both are tried."""
    exe = shutil.which("neural-admixture")
    if exe is None:
        return "not installed"
    t = time.perf_counter()
    error = _command([exe, "train", "--k", str(K), "--name", "na", "--data_path",
                      str(Path(workdir) / "data.bed"), "--save_dir", str(workdir),
                      "--num_gpus", "1", "--threads", str(threads), "--seed", "1"],
                     timeout)
    if error:
        return error
    dt = time.perf_counter() - t
    Q = np.loadtxt(Path(workdir) / f"na.{K}.Q")
    P = np.loadtxt(Path(workdir) / f"na.{K}.P")
    P = np.clip(P, P_MIN, P_MAX)
    lls = [admixspec.loglikelihood(G, Q, p, threads=threads) for p in (P, 1.0 - P)]
    best = (P, 1.0 - P)[int(np.argmax(lls))]
    return Q, best, dt, "P orientation: the better of P, 1-P"


# short name: (row label, runner, whether it reads the PLINK files)
TOOLS = {
    "cpu": ("admixspec CPU", admixspec_cpu, False),
    "fastmixture": ("fastmixture", fastmixture, True),
    "neural": ("neural-admixture (GPU)", neural_admixture, True),
    "gpu": ("admixspec GPU", admixspec_gpu, False),
}


def _row(label, out, G, Q_true, threads):
    """One printed row: a tool's wall time, log-likelihood and Q error, or why none."""
    if isinstance(out, str):
        return f"{label:24s} {'-':>9s} {'-':>18s} {'-':>8s}  {out}"
    Q, P, dt, note = out
    ll = admixspec.loglikelihood(G, Q, P, threads=threads)
    err = admixspec.q_error(Q_true, Q)
    return f"{label:24s} {dt:9.1f} {ll:18.4f} {err:8.4f}  {note}"


def run_size(size, args):
    """Every tool not skipped on one size; prints one row per tool."""
    genotypes, Q_true, K = simulated(size)
    G = genotypes.dosage
    tools = {name: tool for name, tool in TOOLS.items() if name not in args.skip}
    print(f"\n== {size}: {G.shape[0]} x {G.shape[1]}, K = {K}, seed {SEED}, "
          f"{args.threads} threads", flush=True)
    header = f"{'tool':24s} {'wall s':>9s} {'loglik':>18s} {'Q error':>8s}  note"
    print(header, flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        if any(plink for _, _, plink in tools.values()):
            write_plink(Path(workdir) / "data", genotypes)
        for label, tool, _ in tools.values():
            out = tool(G, K, args.threads, args.timeout, workdir)
            print(_row(label, out, G, Q_true, args.threads), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", action="append", choices=tuple(SIZES),
                    help="setting(s) to run (default: small)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds after which a CPU tool or peer is stopped")
    ap.add_argument("--skip", action="append", default=[], choices=tuple(TOOLS),
                    help="leave a tool out (repeatable)")
    args = ap.parse_args(argv)
    for size in args.size or ["small"]:
        run_size(size, args)


if __name__ == "__main__":
    sys.exit(main())
