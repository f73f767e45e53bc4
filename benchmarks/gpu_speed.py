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

``--biobank`` (issue 20's GPU setting; run on an H100 at ``e75eacd`` and
``9bd274b``, results in docs/gpu.md): admixspec's default end to end
(``admixspec run --device cuda --memory 1024``: the .bed is streamed, the
reference fit in memory, the rest on the GPU from the file's own bytes) and
ADAMIXTURE 1.8.8 (``--device gpu --tol 1e-4``) on one Balding-Nichols .bed of
10,000 x 500,000, K = 5 (1.25 GB, written block by block, never whole in
memory), each row with wall time, CPU time, peak resident memory (the
child's getrusage), the GPU's peak memory in use (nvidia-smi every 0.2 s),
log-likelihood (on the GPU engine when there is one) and Q error; each run's
output, timestamped line by line, goes to ``WORKDIR/<tool>.stderr``. It
first prints admixspec's host memory by part as computed
(host_memory_model), not measured. Checked on a CPU at a toy size:
  .venv/bin/python benchmarks/gpu_speed.py --biobank --n-individuals 200 \
      --n-snps 2000 --device cpu --skip adamixture
On a device machine, with admixspec's dependencies missing from the image
(bed-reader) and ADAMIXTURE's wheels (adamixture, configargparse, pgenlib,
zstandard) in .whl, the repository on PYTHONPATH:
  python3 benchmarks/gpu_speed.py --biobank --threads 16 --timeout 200 \
      --warm-up --workdir /tmp/bb 2>&1 | tee $OUT/biobank.log
(at ``9bd274b``: 91 s of it admixspec's run, 12–14 s writing the file).
ADAMIXTURE's first run on a fresh machine builds its CUDA extensions (182–192 s
on the H100; building them beforehand in other processes did not spare it);
its second run, in a second call on the still-warm machine (the file and the
built extensions kept), ``--skip admixspec --timeout 200``, took 44 s.
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
        admixspec.fit_admixture(sim.genotypes.dosage, K, method="ml", seed=SEED,
                                device=device, max_iter=3)


def _fit_child(path, K, threads, device, queue):
    """Child process: one admixspec fit; puts (Q, P, seconds, note) or an error."""
    try:
        G = np.load(path)
        warm_up(K, device)
        t = time.perf_counter()
        fit = admixspec.fit_admixture(G, K, method="ml", seed=SEED, threads=threads,
                                      device=device)
        queue.put((fit.Q, fit.P, time.perf_counter() - t, f"{fit.n_iter} iterations"))
    except Exception as error:  # reported as the row's note
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
    except Exception:  # queue.Empty: the fit outlasted the timeout
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


# --------------------------------------------------------------------------- biobank

#: The biobank setting of issue 20: individuals, SNPs, K.
BIOBANK = {"n_individuals": 10_000, "n_snps": 500_000, "K": 5}
#: SNPs simulated per task of the .bed writer.
_WRITE_BLOCK = 4096


def _bed_block(Q, block, n_snps, seed, fst, min_frequency):
    """The .bed rows (SNP-major, 2 bits per individual) and true P of one block of SNPs.

    Balding-Nichols frequencies and Binomial(2, Q P^T) genotypes, as
    :func:`admixspec.simulate_balding_nichols` draws them, from a generator of
    its own (``[seed, block]``), so the file does not depend on the threads.
    """
    rng = np.random.default_rng([seed, block])
    count = min(_WRITE_BLOCK, n_snps - block * _WRITE_BLOCK)
    ancestral = rng.uniform(min_frequency, 1 - min_frequency, count)
    shape = (1 - fst) / fst
    P = rng.beta(ancestral[:, None] * shape, (1 - ancestral[:, None]) * shape,
                 (count, Q.shape[1]))
    F = (P @ Q.T).astype(np.float32)  # (SNPs, individuals): the file's row order
    dosage = (rng.random(F.shape, dtype=np.float32) < F).astype(np.uint8)
    dosage += rng.random(F.shape, dtype=np.float32) < F
    codes = dosage + (dosage > 0)  # A2 copies 0, 1, 2 -> PLINK codes 00, 10, 11
    m = Q.shape[0]
    padded = np.zeros((count, -(-m // 4) * 4), dtype=np.uint8)
    padded[:, :m] = codes
    quads = padded.reshape(count, -1, 4)
    rows = quads[..., 0] | quads[..., 1] << 2 | quads[..., 2] << 4 | quads[..., 3] << 6
    return rows, P


def write_biobank(prefix, n_individuals, n_snps, K, *, seed=SEED, threads=1, fst=0.1,
                  alpha=0.5):
    """Write a Balding-Nichols PLINK fileset block by block; returns the true (Q, P).

    The genotypes never sit in memory whole (5 GB of int8 at 10,000 x
    500,000): each block of :data:`_WRITE_BLOCK` SNPs is drawn, packed into
    .bed bytes and written, ``threads`` blocks at a time. ``.bim`` column 6
    (A2) is the counted allele, as :func:`admixspec.io.write_plink` writes it.
    """
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(seed)
    Q = rng.dirichlet(np.full(K, alpha), n_individuals)
    blocks = range(-(-n_snps // _WRITE_BLOCK))
    P = np.empty((n_snps, K))
    with open(f"{prefix}.bed", "wb") as bed, ThreadPoolExecutor(threads) as pool:
        bed.write(bytes([0x6C, 0x1B, 0x01]))
        parts = pool.map(lambda b: _bed_block(Q, b, n_snps, seed, fst, 0.05), blocks)
        for block, (rows, P_block) in zip(blocks, parts, strict=True):
            bed.write(rows.tobytes())
            P[block * _WRITE_BLOCK: block * _WRITE_BLOCK + len(P_block)] = P_block
    with open(f"{prefix}.bim", "w") as bim:
        bim.writelines(f"1\tsnp{j}\t0\t{j + 1}\tA\tC\n" for j in range(n_snps))
    with open(f"{prefix}.fam", "w") as fam:
        fam.writelines(f"i{i}\ti{i}\t0\t0\t0\t-9\n" for i in range(n_individuals))
    return Q, P


def _measured(args, timeout, log=None):
    """Run a command; its wall time, CPU time, peak RSS and the GPU's peak memory in use.

    The command runs under a small Python parent that reports its child's
    ``getrusage`` (CPU seconds, peak resident memory) on stderr's last line;
    ``nvidia-smi`` is polled every 0.2 s for the memory in use on the GPU
    (all processes: the machine runs nothing else). ``log``, if given, is a
    file that receives the command's stderr, each line prefixed by the
    seconds since the start (the stages' times; kept when it times out),
    and its standard output (the two are one stream, read as it comes).
    Returns a dict, with ``error`` set when the command failed or timed out.
    """
    import json
    import threading

    wrapper = ("import json, resource, subprocess, sys; "
               "code = subprocess.run(sys.argv[1:]).returncode; "
               "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
               "print(json.dumps({'code': code, 'cpu_s': r.ru_utime + r.ru_stime, "
               "'rss_mib': r.ru_maxrss / 1024}), file=sys.stderr)")
    gpu_peak, done = [0.0], threading.Event()

    def poll():
        smi = shutil.which("nvidia-smi")
        while smi and not done.wait(0.2):
            query = subprocess.run([smi, "--query-gpu=memory.used",
                                    "--format=csv,noheader,nounits"],
                                   capture_output=True, text=True, check=False)
            if query.returncode == 0 and query.stdout.strip():
                gpu_peak[0] = max(gpu_peak[0], float(query.stdout.split()[0]))

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    t = time.perf_counter()
    lines = []
    child = subprocess.Popen([sys.executable, "-c", wrapper, *args], text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def read_output():  # timestamped as they come, so a timed-out run keeps its stages
        with open(log or "/dev/null", "w") as sink:
            for line in child.stdout:
                lines.append(line.rstrip("\n"))
                sink.write(f"{time.perf_counter() - t:8.1f}  {line}")
                sink.flush()

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    try:
        child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        return {"error": f"timed out after {timeout:.0f} s"}
    finally:
        reader.join(timeout=5)
        done.set()
        poller.join()
    wall = time.perf_counter() - t
    lines = [line for line in lines if line.strip()]
    usage = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    out = {"wall_s": wall, "gpu_mib": gpu_peak[0], **usage}
    if usage.get("code", 1) != 0:
        tail = lines[-2:-1] or ["no output"]
        out["error"] = "failed: " + tail[0][:200]
    return out


def host_memory_model(m, n, K, memory_mib, reference_size=5000):
    """Host bytes of a streamed ``--device cuda`` default run by part (computed only).

    Returns a list of ``(part, bytes, where the size comes from)``. Held at
    once: the run's largest parts do not all coexist (the filter passes end
    before the reference is read; the projection starts after the reference
    fit), so the sum over-counts.
    """
    from admixspec.io.streamed import chunk_snps_for

    budget = memory_mib * 2**20
    ref = min(reference_size, m)
    ref_snps = min(n, int(budget / 2 // ref))
    chunk = min(n, chunk_snps_for(m, budget / 8))
    return [
        ("reference sample, int8 (the spectral stage's input)", ref * ref_snps,
         "half of --memory"),
        ("spectral stage: a reference x reference float64 and the rescoring "
         "sample's frequencies, reference x 5,000 float64", 8 * ref**2 + 8 * ref * 5000,
         "traced: docs/benchmarks.md, The spectral stage's memory"),
        ("one chunk of int8 genotypes (filters, CPU passes)", m * chunk,
         "an eighth of --memory (chunk_snps_for)"),
        ("one chunk of .bed bytes on its way to the GPU", chunk * -(-m // 4),
         "BedChunks' byte buffer (this is what the device copy streams through)"),
        ("P and the accelerators' copies, 8 x SNPs x K float64", 8 * 8 * n * K,
         "SQUAREM keeps about 8 (Q, P)-sized arrays"),
        ("the .P file's text", 10 * n * K, "format_matrix: about 10 characters a value"),
    ]


def _biobank_commands(args, bed, folder):
    """The two command lines of the biobank setting, by row label."""
    return {
        "admixspec default": [
            sys.executable, "-m", "admixspec", "run", str(bed), "-K", str(args.K),
            "--memory", str(args.memory), "--device", args.device,
            "-j", str(args.threads),
            "-s", str(SEED), "--out", str(folder / "admixspec")],
        "ADAMIXTURE": [
            shutil.which("adamixture") or "adamixture", "-k", str(args.K), "--data_path",
            str(bed), "--save_dir", str(folder), "--name", "ada",
            "-t", str(args.threads),
            "--device", args.adamixture_device, "--tol", "1e-4", "-s", "42"],
    }


def run_biobank(args):
    """The biobank setting: admixspec's default end to end, ADAMIXTURE beside it."""
    m, n, K = args.n_individuals, args.n_snps, args.K
    print(f"\n== biobank: {m} x {n}, K = {K}, seed {SEED}, {args.threads} threads, "
          f"admixspec --memory {args.memory} --device {args.device}, "
          f"ADAMIXTURE --device "
          f"{args.adamixture_device}", flush=True)
    print("host memory of admixspec's run, by part (computed, see host_memory_model):")
    parts = host_memory_model(m, n, K, args.memory)
    for part, size, source in parts:
        print(f"  {size / 2**20:9.1f} MiB  {part}  [{source}]")
    device = m * -(-n // 4) + n * -(-m // 4)
    total = sum(size for _, size, _ in parts)
    print(f"  {total / 2**20:9.1f} MiB  in all, were every part "
          f"held at once; the GPU holds {device / 2**20:.0f} MiB of packed genotypes "
          "for everyone, half each for the reference and the projection", flush=True)
    folder = Path(args.workdir)
    folder.mkdir(parents=True, exist_ok=True)
    bed = folder / f"biobank_{m}x{n}.bed"
    truth = folder / f"biobank_{m}x{n}.truth.npy"
    if not truth.exists():  # a warm machine keeps the files between calls
        t = time.perf_counter()
        Q_true = write_biobank(bed.with_suffix(""), m, n, K, threads=args.threads)[0]
        np.save(truth, Q_true)
        print(f"wrote {bed} in {time.perf_counter() - t:.1f} s", flush=True)
    Q_true = np.load(truth)
    if args.warm_up:  # numba's CPU kernels cached, as where admixspec ran before
        write_biobank(folder / "warm", 200, 2000, K)
        warm = _biobank_commands(args, folder / "warm.bed", folder / "warm")
        result = _measured(warm["admixspec default"], args.timeout,
                           log=folder / "warm-up.stderr")
        print(f"warm-up (admixspec, 200 x 2,000): {result}", flush=True)
    outputs = {"admixspec default": folder / "admixspec", "ADAMIXTURE": folder / "ada"}
    scoring = {}  # how the log-likelihoods are computed, made once
    table = []
    for label, command in _biobank_commands(args, bed, folder).items():
        if label.split()[0].lower() in args.skip:
            continue
        log = folder / f"{label.split()[0].lower()}.stderr"
        result = _measured(command, args.timeout, log=log)
        if label == "admixspec default" and "error" not in result:
            # admixspec drops monomorphic SNPs: a P row per SNP means there are none
            scoring["all_polymorphic"] = _p_rows(outputs[label], K) == n
        row = _biobank_row(label, result, outputs[label], K, bed, scoring, Q_true,
                           args.threads)
        table.append(row)
        print(row, flush=True)
    print(f"{'tool':18s} {'wall s':>8s} {'CPU s':>8s} {'RSS MiB':>8s} {'GPU MiB':>8s} "
          f"{'loglik':>20s} {'Q error':>8s}  note")
    print("\n".join(table))


def _scored_genotypes(bed, m, n):
    """The .bed's polymorphic SNPs as int8 (individuals x SNPs) and which SNPs those are.

    Every tool is scored on the same SNPs: a tool that drops the monomorphic
    ones (admixspec does) writes a P row per polymorphic SNP, one that keeps
    them a row per SNP, of which the polymorphic rows are kept.
    """
    from admixspec.io.bed_chunks import BedChunks

    G = BedChunks(bed, m, n, chunk_snps=8192).read()
    called = (G >= 0).sum(axis=0)
    copies = np.where(G >= 0, G, 0).sum(axis=0, dtype=np.int64)
    keep = (copies > 0) & (copies < 2 * called)
    return np.ascontiguousarray(G[:, keep]), keep


def _p_rows(prefix, K) -> int:
    """Rows of the ``{prefix}.{K}.P`` file (0 when there is none)."""
    path = Path(f"{prefix}.{K}.P")
    if not path.exists():
        return 0
    with open(path) as lines:
        return sum(1 for _ in lines)


def _device_loglik(bed, m, n, K):
    """``loglik(Q, P)`` over every SNP of the .bed, on a CUDA GPU (None without one).

    The file goes to the device in its own bytes (admixspec's GPU engine) and
    each log-likelihood is one pass there: seconds, where decoding 5 GB on
    the host and two CPU passes per tool take a minute of the device
    machine's time. Used only where a P has a row for every SNP of a file
    in which admixspec found no monomorphic SNP (so all SNPs are the
    polymorphic ones the CPU path would score).
    """
    from admixspec.backends.gpu import cuda_status, make_engine
    from admixspec.io.bed_chunks import BedChunks

    if cuda_status()[0] != "gpu":
        return None
    engine = make_engine(BedChunks(bed, m, n), K, device="cuda")
    return engine.loglik


def _biobank_row(label, result, prefix, K, bed, scoring, Q_true, threads):
    """One row of the biobank table: times, memory, log-likelihood, Q error (or why not).

    ``scoring`` caches how the rows are scored: the GPU engine's
    log-likelihood over every SNP (:func:`_device_loglik`), or the polymorphic
    SNPs read into memory (:func:`_scored_genotypes`), each made once.
    """
    cells = [result.get(key, float("nan")) for key in ("wall_s", "cpu_s", "rss_mib",
                                                         "gpu_mib")]
    row = f"{label:18s} {cells[0]:8.1f} {cells[1]:8.1f} {cells[2]:8.0f} {cells[3]:8.0f}"
    Q_path, P_path = Path(f"{prefix}.{K}.Q"), Path(f"{prefix}.{K}.P")
    if "error" in result or not Q_path.exists():
        return f"{row} {'-':>20s} {'-':>8s}  {result.get('error', 'no Q file')}"
    Q, P = np.loadtxt(Q_path), np.clip(np.loadtxt(P_path, ndmin=2), P_MIN, P_MAX)
    m = len(Q_true)
    with open(Path(bed).with_suffix(".bim")) as bim:
        n = sum(1 for _ in bim)
    if P.shape[0] == n and scoring.get("all_polymorphic"):
        if "device" not in scoring:
            scoring["device"] = _device_loglik(bed, m, n, K)
        if scoring["device"] is not None:
            lls = [scoring["device"](Q, p) for p in (P, 1 - P)]
            return _scored_row(row, lls, Q_true, Q, "scored on the GPU")
    if "host" not in scoring:
        scoring["host"] = _scored_genotypes(bed, m, n)
    G, keep = scoring["host"]
    if P.shape[0] == len(keep):
        P = P[keep]
    elif P.shape[0] != G.shape[1]:
        return (f"{row} {'-':>20s} {'-':>8s}  P has {P.shape[0]} rows, not {len(keep)} "
                f"SNPs nor {G.shape[1]} polymorphic ones")
    lls = [admixspec.loglikelihood(G, Q, p, threads=threads) for p in (P, 1 - P)]
    return _scored_row(row, lls, Q_true, Q, "")


def _scored_row(row, lls, Q_true, Q, note):
    """``row`` completed by the better allele's log-likelihood and by Q's error."""
    if lls[0] < lls[1]:
        note = "; ".join(filter(None, [note, "its P counts the other allele"]))
    return f"{row} {max(lls):20.4f} {admixspec.q_error(Q_true, Q):8.4f}  {note}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", action="append", choices=tuple(SIZES),
                    help="setting(s) to run (default: small)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds after which a CPU tool or peer is stopped")
    ap.add_argument("--skip", action="append", default=[],
                    choices=(*TOOLS, "admixspec", "adamixture"),
                    help="leave a tool out (repeatable)")
    biobank = ap.add_argument_group(
        "biobank: the default end to end, streamed from a .bed")
    biobank.add_argument("--biobank", action="store_true",
                         help="run this setting instead of --size")
    biobank.add_argument("--n-individuals", type=int, default=BIOBANK["n_individuals"])
    biobank.add_argument("--n-snps", type=int, default=BIOBANK["n_snps"])
    biobank.add_argument("-K", type=int, default=BIOBANK["K"])
    biobank.add_argument("--memory", type=int, default=1024,
                         help="admixspec's --memory in MiB (default 1024: streamed)")
    biobank.add_argument("--device", default="cuda", help="admixspec's --device")
    biobank.add_argument("--adamixture-device", default="gpu")
    biobank.add_argument("--workdir", default="/tmp/admixspec_biobank",
                         help="where the fileset and outputs go (kept between calls)")
    biobank.add_argument("--warm-up", action="store_true",
                         help="a tiny admixspec run first, to fill numba's kernel cache")
    args = ap.parse_args(argv)
    if args.biobank:
        run_biobank(args)
        return
    for size in args.size or ["small"]:
        run_size(size, args)


if __name__ == "__main__":
    sys.exit(main())
