"""The GPU engine's arithmetic, checked on the CPU under numba's CUDA simulator.

The simulator must be switched on before numba.cuda is first imported, so the
GPU side runs in a subprocess (``NUMBA_ENABLE_CUDASIM=1``) that computes every
comparison once and returns the numbers as JSON; the tests below assert on
them. The data are tiny (the simulator runs each CUDA thread as a Python
thread) and the engine's chunks are made short, so that the chunked sums
(several chunks of individuals per SNP, of SNPs per individual) are covered.
Where a CUDA GPU is present the same comparisons also run on it.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from admixspec.backends.gpu import cuda_status, resolve_device
from admixspec.core.exceptions import UsageError

from .conftest import run_gpu_script

_SCRIPT = textwrap.dedent(
    """
    import json
    import numpy as np
    from admixspec import simulate_balding_nichols
    from admixspec.backends.gpu import default_device, resolve_device
    from admixspec.backends.gpu.engine import CudaEngine
    from admixspec.backends.gpu.kernels import kernels
    from admixspec.core.parameters import check_params
    from admixspec.ml._kernels.newton import em_where_worse
    from admixspec.ml.likelihood import Engine
    from admixspec.ml.newton import BlockNewton
    from admixspec.ml.refine import fit_ml

    def gap(a, b):
        return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))))
                   for x, y in zip(a, b))

    def rel(a, b):
        return abs(a - b) / abs(a)

    out = {"auto": resolve_device("auto"), "cuda": resolve_device("cuda")}
    sim = simulate_balding_nichols(13, 70, 3, seed=0)
    G = sim.genotypes.dosage.copy()
    G[np.random.default_rng(1).random(G.shape) < 0.1] = -1
    Q, P = check_params(sim.Q, sim.P, *G.shape)
    cpu = Engine(G, 3)
    gpu = CudaEngine(G, 3, rows_per_thread=5, cols_per_thread=16)
    out["loglik"] = rel(cpu.loglik(Q, P), gpu.loglik(Q, P))
    a, b = cpu.em(Q, P), gpu.em(Q, P)
    out["em"] = [gap(a[:2], b[:2]), rel(a[2], b[2])]
    again = gpu.em(Q, P), gpu.newton_map(gpu).step(Q, P), gpu.newton_map(gpu).step(Q, P)
    out["same_bits"] = bool(
        all(np.array_equal(x, y) for x, y in zip(b[:2], again[0][:2]))
        and all(np.array_equal(x, y) for x, y in zip(again[1][:2], again[2][:2]))
        and b[2] == again[0][2] and again[1][2] == again[2][2])
    blocks = np.array([1])
    a, b = cpu.em(Q, P, blocks=blocks), gpu.em(Q, P, blocks=blocks)
    out["em_blocks"] = [gap(a[:2], b[:2]), rel(a[2], b[2])]
    fixed = (np.array([0, 4]), Q[[0, 4]] * 0 + 1.0 / 3)
    a = cpu.em(Q, P, update_p=False, Q_fixed_rows=fixed)
    b = gpu.em(Q, P, update_p=False, Q_fixed_rows=fixed)
    out["em_fixed"] = [gap(a[:2], b[:2]), rel(a[2], b[2])]
    for update_p in (True, False):
        a = BlockNewton(cpu, frozen_rows=[2]).step(Q, P, update_p=update_p)
        b = gpu.newton_map(gpu, frozen_rows=[2]).step(Q, P, update_p=update_p)
        out[f"newton_{update_p}"] = [gap(a[:2], b[:2]), rel(a[2], b[2])]

    # the P rows whose Newton step lowered their log-likelihood take EM's update
    from numba import cuda
    n, K = P.shape
    rng = np.random.default_rng(2)
    gP, A = rng.normal(size=(n, K)), rng.uniform(1, 5, size=(n, K))
    ll_old, ll_new = rng.normal(size=n), rng.normal(size=n)
    PN = rng.uniform(0.1, 0.9, size=(n, K))
    d_PN, bad = cuda.to_device(PN), cuda.to_device(np.zeros(1, np.int64))
    kernels(K).p_fallback[1, 128](cuda.to_device(P), cuda.to_device(gP),
                                  cuda.to_device(A), cuda.to_device(ll_old),
                                  cuda.to_device(ll_new), d_PN, bad)
    want = PN.T.copy()
    n_want = em_where_worse(np.ascontiguousarray(P.T), np.ascontiguousarray(gP.T),
                             np.ascontiguousarray(A.T), n, ll_old, ll_new, want)
    out["fallback"] = [gap([d_PN.copy_to_host()], [want.T]),
                       int(bad.copy_to_host()[0]), int(n_want)]

    sim = simulate_balding_nichols(16, 90, 2, fst=0.2, seed=3)
    for accel, batches in (("newton", None), ("squarem", 2)):
        fits = []
        for device in ("cpu", "cuda"):
            with default_device(device):
                fits.append(fit_ml(sim.genotypes.dosage, 2, seed=0, accel=accel,
                                   batches=batches, max_iter=40))
        out[f"fit_{accel}"] = [rel(fits[0].loglik, fits[1].loglik),
                               gap([fits[0].Q], [fits[1].Q]),
                               fits[0].n_iter, fits[1].n_iter, fits[0].converged]
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module", params=["simulator", "gpu"])
def simulated(request):
    """The subprocess's comparisons of the GPU engine with the CPU engine.

    Under numba's CUDA simulator everywhere, and on the GPU itself where
    there is one (then the same checks run the compiled kernels).
    """
    return dict(run_gpu_script(_SCRIPT, request.param, timeout=600), mode=request.param)


def test_simulator__counts_for_cuda_but_not_for_auto(simulated):
    assert simulated["cuda"] == "cuda"
    assert simulated["auto"] == ("cpu" if simulated["mode"] == "simulator" else "cuda")


@pytest.mark.parametrize("shape", [(13, 70), (4, 8), (1, 1), (7, 3)])
def test_pack_rows__decodes_to_the_genotypes_both_ways(shape):
    from admixspec.backends.gpu.kernels import MISSING_CODE, pack_rows

    G = np.random.default_rng(shape[0]).integers(-1, 3, size=shape).astype(np.int8)
    for packed, want in ((pack_rows(G), G), (pack_rows(G, transpose=True), G.T)):
        cols = np.arange(want.shape[1])
        codes = (packed[:, cols // 4] >> (2 * (cols % 4))) & 3
        assert packed.shape == (want.shape[0], -(-want.shape[1] // 4))
        assert np.array_equal(np.where(codes == MISSING_CODE, -1, codes), want)
        padding = np.arange(want.shape[1], 4 * packed.shape[1])
        pads = (packed[:, padding // 4] >> (2 * (padding % 4))) & 3
        assert np.all(pads == MISSING_CODE)


def test_passes__give_the_same_bits_every_run(simulated):
    assert simulated["same_bits"]


def test_loglik__equals_cpu_engine(simulated):
    assert simulated["loglik"] < 1e-10


@pytest.mark.parametrize("case", ["em", "em_blocks", "em_fixed"])
def test_em_pass__equals_cpu_engine(simulated, case):
    max_gap, ll_gap = simulated[case]
    assert max_gap < 1e-10
    # the pass is asked for its input's log-likelihood (want_ll, the default),
    # fixed rows or not: a NaN is a failure (simulator: gaps of 0 measured)
    assert ll_gap < 1e-10


@pytest.mark.parametrize("update_p", [True, False])
def test_block_relaxation_map__equals_cpu_engine(simulated, update_p):
    max_gap, ll_gap = simulated[f"newton_{update_p}"]
    assert max_gap < 1e-10
    assert ll_gap < 1e-10


def test_newton_fallback__takes_em_update_where_step_lowered_loglik(simulated):
    max_gap, n_bad, n_want = simulated["fallback"]
    assert n_bad == n_want > 0
    assert max_gap < 1e-12


@pytest.mark.parametrize("accel", ["newton", "squarem"])
def test_short_fit__agrees_with_cpu_fit(simulated, accel):
    ll_gap, q_gap, n_cpu, n_gpu, converged = simulated[f"fit_{accel}"]
    assert converged
    assert ll_gap < 1e-6
    assert q_gap < 1e-6
    assert n_cpu == n_gpu


def test_resolve_device__auto_follows_gpu_presence():
    assert resolve_device("cpu") == "cpu"
    expected = "cuda" if cuda_status()[0] == "gpu" else "cpu"
    assert resolve_device("auto") == expected


def test_resolve_device__cuda_without_gpu_is_usage_error():
    if cuda_status()[0] is not None:
        pytest.skip("a CUDA device is present")
    with pytest.raises(UsageError, match="no usable CUDA GPU"):
        resolve_device("cuda")


def test_resolve_device__auto_without_a_driver_never_imports_numba_cuda(monkeypatch):
    # Importing numba.cuda takes about a second; without a driver "auto" need not.
    import subprocess
    import sys

    from admixspec.backends.gpu import device

    if device._driver_loads():
        pytest.skip("a CUDA device is present")
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    code = ("import sys; from admixspec.backends.gpu import resolve_device; "
            "print(resolve_device('auto'), 'numba.cuda' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["cpu", "False"]


def test_resolve_device__unknown_name_is_usage_error():
    with pytest.raises(UsageError, match="device must be one of"):
        resolve_device("tpu")


def test_default_device__reaches_engines_made_without_a_device():
    # the fits' own make_engine, which takes no device: on a GPU machine the
    # back end's make_engine (device="auto") would rightly give the GPU's
    from admixspec.backends.gpu import default_device
    from admixspec.ml.likelihood import Engine, make_engine

    G = np.zeros((3, 5), dtype=np.int8)
    with default_device("cpu"):
        assert type(make_engine(G, 2)) is Engine
    if cuda_status()[0] is None:
        with pytest.raises(UsageError), default_device("cuda"):
            pass


def test_make_engine__genotypes_larger_than_the_free_gpu_memory(monkeypatch):
    # as if a GPU with 1 MiB free were present: 'auto' falls back to the CPU
    # engine, 'cuda' says how much is needed (no device is touched either way)
    from admixspec.backends.gpu import device
    from admixspec.backends.gpu.engine import CudaEngine
    from admixspec.core.chunks import InMemoryChunks
    from admixspec.ml.likelihood import Engine

    monkeypatch.setattr(device, "resolve_device", lambda name: "cuda")
    monkeypatch.setattr(device, "free_device_memory", lambda: float(2**20))
    G = np.zeros((400, 2000), dtype=np.int8)
    assert CudaEngine.device_bytes(400, 2000, 3) > 2**20
    for genotypes in (G, InMemoryChunks(G)):
        assert type(device.make_engine(genotypes, 3, device="auto")) is Engine
        with pytest.raises(UsageError, match=r"400 x 2000 genotypes need about .* GiB"):
            device.make_engine(genotypes, 3, device="cuda")


def test_cli_device_cuda_without_gpu__one_line_error(tmp_path, capsys):
    if cuda_status()[0] is not None:
        pytest.skip("a CUDA device is present")
    from pathlib import Path

    from admixspec.cli import main

    bed = Path(__file__).resolve().parents[1] / "data" / "example.bed"
    code = main(["run", str(bed), "-K", "2", "--device", "cuda", "--out",
                 str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert err[-1].startswith("admixspec: error: device='cuda' but no usable CUDA GPU")
    assert "Traceback" not in "\n".join(err)
    assert not list(tmp_path.iterdir())


def test_cli_device_cuda_without_gpu__fails_before_reading_the_input(tmp_path, capsys,
                                                                     monkeypatch):
    if cuda_status()[0] is not None:
        pytest.skip("a CUDA device is present")
    from admixspec.cli import main
    from admixspec.io import reader

    def read(*args, **kwargs):
        raise AssertionError("the input was read before the device was resolved")

    for name in ("open_genotypes", "open_streamed", "read_genotypes", "input_shape"):
        monkeypatch.setattr(reader, name, read)
    # no such file either: the device's error comes first, the input is never opened
    missing = tmp_path / "biobank.bed"
    code = main(["run", str(missing), "-K", "5", "--memory", "1024", "--device", "cuda",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("admixspec: error: device='cuda' but no usable CUDA GPU")
    assert not list(tmp_path.iterdir())
