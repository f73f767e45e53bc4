"""Genotypes streamed from disk onto the GPU, checked under numba's CUDA simulator.

The GPU engine copies a ``.bed`` to the device in the file's own bytes, one
chunk of SNPs at a time (:mod:`admixspec.backends.gpu.transfer`). These tests
hold that copy equal to the packed genotypes of every kind of source, the
engine's passes equal to the CPU engine's, the host's memory bounded by the
chunk, and a streamed ``fit_admixture(..., device="cuda")`` equal to the
CPU's, with its streamed passes on the device.

As in tests/test_gpu.py the simulator must be switched on before numba.cuda
is imported, so the GPU side runs in one subprocess (``NUMBA_ENABLE_CUDASIM=1``)
that returns its measurements as JSON; where a CUDA GPU is present the same
script also runs on it (the host-memory meter needs the simulator and is
skipped there).

**Host memory, as measured here.** ``tracemalloc`` counts every allocation
through Python's and NumPy's allocators. Under the simulator "device" arrays
are NumPy arrays too, so the script allocates them from anonymous memory maps
instead, which tracemalloc does not see: the device's copy is left out of the
count, as it would be on a GPU. The simulator's own bookkeeping while it runs
a kernel (a Python thread per CUDA thread, and their local arrays, which are
registers on a GPU) is left out by traceback. What is left, the host's
allocations, is summed at every host-to-device copy and before every kernel
launch, and the largest sum is the peak reported.
"""

from __future__ import annotations

import textwrap

import pytest

from .conftest import run_gpu_script

# The simulator runs every CUDA thread as a Python thread: this module's one
# script takes about 4 minutes, half of the default suite on CI's 2 cores, so it
# runs in CI's second stage (`pytest -m slow`, .ci/run) with the parity studies.
# tests/test_gpu_ptx.py still compiles its kernels in the first.
pytestmark = pytest.mark.slow

_SCRIPT = textwrap.dedent(
    """
    import json, mmap, tempfile, tracemalloc, warnings
    import numpy as np
    from numba import cuda
    from admixspec import ConvergenceWarning, fit_admixture, simulate_balding_nichols
    from admixspec.backends.gpu import cuda_status, engine as gpu_engine, transfer
    from admixspec.backends.gpu.kernels import pack_rows
    from admixspec.core.chunks import InMemoryChunks
    from admixspec.core.parameters import check_params
    from admixspec.io import write_plink
    from admixspec.io.bed_chunks import BedChunks
    from admixspec.io.plink import read_plink
    from admixspec.io.reader import open_streamed
    from admixspec.ml.likelihood import Engine
    from admixspec.ml.refine import accelerated_em
    from admixspec.ml.newton import BlockNewton

    SIMULATED = cuda_status()[0] == "simulator"
    out = {"simulated": SIMULATED}
    folder = tempfile.mkdtemp()

    def fileset(name, m, n, seed, **options):
        sim = simulate_balding_nichols(m, n, 2, fst=0.2, seed=seed, **options)
        write_plink(f"{folder}/{name}", sim.genotypes)
        path = f"{folder}/{name}.bed"
        return path, read_plink(path).dosage, sim

    def rel(a, b):
        return abs(a - b) / abs(a)

    def gap(a, b):
        return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))))
                   for x, y in zip(a, b))

    # 1. the device's packed copies, from every kind of source
    path, G, sim = fileset("toy", 23, 150, 1, missing_rate=0.05)
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(23, 17, replace=False))     # 17: padding in GT's rows
    cols = np.sort(rng.choice(150, 101, replace=False))   # 101: padding in G's rows
    # chunks of 64 kept SNPs over scattered file rows: several spans per chunk
    source = BedChunks(path, 23, 150, rows=rows, columns=cols, chunk_snps=64)
    kept = G[np.ix_(rows, cols)]
    want = (pack_rows(kept), pack_rows(kept, transpose=True))

    class Decoded:  # a streamed source without the file's bytes (as VCF Zarr's)
        def __init__(self, inner):
            self.n_individuals, self.n_snps = inner.n_individuals, inner.n_snps
            self.bounds, self.chunk = inner.bounds, inner.chunk

    transfer.PACK_BYTES = 17 * 8  # an in-memory matrix packed 8 SNPs at a time
    sources = {"bed": (source, source), "decoded": (Decoded(source),) * 2,
               "memory": (kept, InMemoryChunks(kept))}
    out["copies"] = {name: [bool(np.array_equal(d.copy_to_host(), w)) for d, w in
                            zip(transfer.to_device(*pair), want)]
                     for name, pair in sources.items()}

    # 2. an engine over the streamed .bed gives the CPU engine's passes
    Q, P = check_params(sim.Q[rows], sim.P[cols], *kept.shape)
    cpu = Engine(kept, 2)
    gpu = gpu_engine.CudaEngine(source, 2, rows_per_thread=5, cols_per_thread=16)
    a, b = cpu.em(Q, P), gpu.em(Q, P)
    c, d = BlockNewton(cpu).step(Q, P), gpu.newton_map(gpu).step(Q, P)
    out["passes"] = [rel(cpu.loglik(Q, P), gpu.loglik(Q, P)), gap(a[:2], b[:2]),
                     rel(a[2], b[2]), gap(c[:2], d[:2]), rel(c[2], d[2])]
    # ... and the in-memory matrix's CUDA engine, bit for bit: passes and a fit
    held = gpu_engine.CudaEngine(kept, 2, rows_per_thread=5, cols_per_thread=16)
    e, f = held.em(Q, P), held.newton_map(held).step(Q, P)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = [accelerated_em(engine, Q, P, tol=1e-12, max_iter=3,
                                 rng=np.random.default_rng(5)) for engine in (gpu, held)]
    out["in_memory"] = {
        "passes": [gpu.loglik(Q, P) == held.loglik(Q, P),
                   all(np.array_equal(x, y) for x, y in zip(b[:2], e[:2])), b[2] == e[2],
                   all(np.array_equal(x, y) for x, y in zip(d[:2], f[:2])),
                   d[2] == f[2]],
        "fit": [bool(np.array_equal(fitted[0].Q, fitted[1].Q)),
                bool(np.array_equal(fitted[0].P, fitted[1].P)),
                fitted[0].loglik == fitted[1].loglik, fitted[0].n_iter]}

    # 3. a streamed fit on the device equals the CPU's, its passes on the device
    path, G, sim = fileset("cohort", 30, 256, 4, missing_rate=0.02)
    made, decoded = [], []
    make, decode = gpu_engine.CudaEngine.__init__, BedChunks._decode_into

    def spy(self, G, K, **options):
        made.append(type(G).__name__)
        decoded.append(0)
        make(self, G, K, **options)
        made[-1] += "" if decoded.pop() == 0 else " (decoded on the host)"

    def counted(self, *args):
        if decoded:
            decoded[-1] += 1
        return decode(self, *args)

    gpu_engine.CudaEngine.__init__, BedChunks._decode_into = spy, counted
    fits = {}
    for device in ("cpu", "cuda"):
        streamed = open_streamed(path, memory_bytes=5120)  # the reference: 128 SNPs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits[device] = fit_admixture(streamed, 2, method="ml", seed=0, max_iter=4,
                                         reference_size=20, device=device)
    cpu, gpu = fits["cpu"], fits["cuda"]
    out["fit"] = {"path": [cpu.path, gpu.path], "loglik": rel(cpu.loglik, gpu.loglik),
                  "Q": gap([cpu.Q], [gpu.Q]), "P": gap([cpu.P], [gpu.P]),
                  "n_iter": [cpu.n_iter, gpu.n_iter], "engines": list(made),
                  "chunks": gpu.diagnostics["streamed"]["chunks"]}
    # ... and with the default's reference, maximum likelihood ends on everyone
    # on the device, which holds them all (on the CPU it stays projected)
    import admixspec.fit.admixture as admixture_module
    admixture_module.DEFAULT_REFERENCE_SIZE = 20
    made.clear()
    joint = {}
    for device in ("cpu", "cuda"):
        streamed = open_streamed(path, memory_bytes=5120)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            joint[device] = fit_admixture(streamed, 2, method="ml", seed=0, max_iter=4,
                                          device=device)
    out["joint"] = {"path": [joint["cpu"].path, joint["cuda"].path],
                    "loglik": [joint["cpu"].loglik, joint["cuda"].loglik],
                    "projected": [cpu.loglik, gpu.loglik], "engines": list(made)}
    gpu_engine.CudaEngine.__init__, BedChunks._decode_into = make, decode

    # 4. host memory while a streamed .bed goes to the device, and in its passes
    if SIMULATED:
        from numba.cuda.simulator import kernel as sim_kernel
        from numba.cuda.simulator.cudadrv import devicearray as fake

        def device_memory(shape, dtype):  # out of tracemalloc's sight
            dtype = np.dtype(dtype)
            shape = (int(shape),) if np.ndim(shape) == 0 else tuple(shape)
            count = int(np.prod(shape))
            buffer = mmap.mmap(-1, max(count * dtype.itemsize, 1))
            return np.frombuffer(buffer, dtype=dtype, count=count).reshape(shape)

        def to_device(ary, stream=0, copy=True, to=None):
            ary = np.asarray(ary)
            copied = device_memory(ary.shape, ary.dtype)
            copied[...] = ary
            return fake.FakeCUDAArray(copied)

        launches = [0]

        def launch(self, *args):  # the device's work: counted, not simulated
            launches[0] += 1

        cuda.to_device = to_device
        cuda.device_array = lambda shape, dtype=np.float64, **_: fake.FakeCUDAArray(
            device_memory(shape, dtype))
        cuda.device_array_like = lambda ary, **_: cuda.device_array(ary.shape, ary.dtype)
        sim_kernel.FakeCUDAKernel.__call__ = launch

        def metered(work):
            tracemalloc.start(1)
            try:
                result = work()
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            return result, peak

        memory = []
        for n in (100, 10_000, 40_000):  # the first warms up (numba's host functions)
            path, G, sim = fileset(f"size{n}", 1000, n, 2)
            Q, P = check_params(sim.Q, sim.P, *G.shape)
            int8_bytes = int(G.nbytes)
            del G, sim
            source = BedChunks(path, 1000, n, chunk_snps=256)
            source.n_observed  # counted before the meter starts, as a fit's filters do
            source._raw = None  # the byte buffer: counted, allocated again in the meter
            launches[0] = 0
            engine, built = metered(lambda: gpu_engine.CudaEngine(source, 2))
            reads = []
            source._spans = lambda *args: reads.append(args)  # a pass must not read it
            _, passes = metered(lambda: (engine.loglik(Q, P), engine.em(Q, P),
                                         engine.newton_map(engine).step(Q, P)))
            memory.append({"n_snps": n, "int8_bytes": int8_bytes,
                           "chunk_bytes": int(source._raw.nbytes), "construction": built,
                           "passes": passes, "reads_in_passes": len(reads),
                           "launches": launches[0],
                           "parameter_bytes": int(Q.nbytes + P.nbytes)})
        out["memory"] = memory[1:]
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module", params=["simulator", "gpu"])
def streamed(request):
    """The subprocess's measurements: under the simulator, and on a GPU if present."""
    return run_gpu_script(_SCRIPT, request.param, timeout=900)


@pytest.mark.parametrize("kind", ["bed", "decoded", "memory"])
def test_device_copies__equal_the_packed_genotypes(streamed, kind):
    # both orientations, kept individuals and scattered SNPs, padding as missing
    assert streamed["copies"][kind] == [True, True]


def test_engine_over_a_streamed_bed__passes_equal_cpu_engine(streamed):
    loglik, em_gap, em_ll, newton_gap, newton_ll = streamed["passes"]
    assert max(loglik, em_ll, newton_ll) < 1e-10
    assert max(em_gap, newton_gap) < 1e-10


def test_engine_over_a_streamed_bed__equals_the_in_memory_cuda_engine(streamed):
    # the same device bytes, so the same bits: every pass and a three-iteration fit
    passes, fit = streamed["in_memory"]["passes"], streamed["in_memory"]["fit"]
    assert passes == [True] * 5
    assert fit[:3] == [True] * 3 and fit[3] == 3


def test_host_memory__one_chunk_while_copying_none_per_pass(streamed):
    if not streamed["simulated"]:  # the meter needs the simulator's host "device"
        pytest.skip("a CUDA device is present")
    small, large = streamed["memory"]
    assert large["n_snps"] == 4 * small["n_snps"]
    assert small["int8_bytes"] == 1000 * 10_000
    for size in (small, large):
        assert size["launches"] > 0 and size["reads_in_passes"] == 0
        # while copying: the file's byte buffer (256 SNP rows), an int64 index
        # per SNP (the engine's list of all SNPs) and a few KiB of Python
        fixed = size["construction"] - size["chunk_bytes"] - 8 * size["n_snps"]
        assert fixed < 64 * 1024, size
        assert size["construction"] < size["int8_bytes"] / 40, size
        # a pass reads the device's copy, never the file: the host holds Q, P
        # and what comes back (new Q and P, per-SNP log-likelihoods)
        assert size["passes"] < 3 * size["parameter_bytes"] + 64 * 1024, size
    # per SNP added: 8 bytes (the index), not the 1,000 of an int8 column nor
    # the 250 of its packed copy
    growth = large["construction"] - small["construction"]
    assert growth / (large["n_snps"] - small["n_snps"]) < 9, (small, large)


def test_streamed_fit_on_the_device__ends_with_everyone_under_the_default_reference(
    streamed
):
    joint = streamed["joint"]
    cpu, gpu = joint["path"]
    assert cpu.endswith("+streamed+projection") and gpu == cpu + "+joint"
    # the CPU's is the projected fit above; the device's climbs from it
    assert joint["loglik"][0] == pytest.approx(joint["projected"][0], rel=1e-12)
    assert joint["loglik"][1] > joint["projected"][1] + 1e-6 * abs(joint["projected"][1])
    # the reference in memory, then the .bed's bytes: the reference on every
    # SNP, the projected individuals, and everyone for the joint fit
    streamed_engines = [kind for kind in joint["engines"] if kind.startswith("Bed")]
    assert streamed_engines == ["BedChunks"] * 3


def test_streamed_fit_on_the_device__equals_the_cpu_fit(streamed):
    fit = streamed["fit"]
    assert fit["path"][0] == fit["path"][1] and fit["path"][1].endswith(
        "+streamed+projection")
    assert fit["chunks"] > 1
    assert fit["n_iter"][0] == fit["n_iter"][1]
    assert fit["loglik"] < 1e-9
    # tests/test_gpu.py's tolerance for a GPU fit against a CPU fit (the two sum
    # in different orders; the projection stops on the 1e-4 rule)
    assert fit["Q"] < 1e-6 and fit["P"] < 1e-7
    # the in-memory reference fit packs its matrix; the streamed reference
    # (P, then maximum likelihood on every SNP) and the projection copy the
    # .bed's own bytes, decoding nothing on the host
    streamed_engines = [kind for kind in fit["engines"] if kind.startswith("BedChunks")]
    assert streamed_engines == ["BedChunks", "BedChunks"]
    assert set(fit["engines"]) == {"ndarray", "BedChunks"}
