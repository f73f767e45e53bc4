"""Shared fixtures. Fixture names end in ``_fixture``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
REALDATA = SHARED / "realdata"
HAPMAP3 = REALDATA / "hapmap3_admixture_tutorial"
KG1092 = REALDATA / "1kg_phase1_1092_flashpca"
DATA = ROOT / "data"


def require_realdata(path: Path = HAPMAP3) -> Path:
    """Skip the calling test when ``../shared/realdata`` is absent (a user's clone)."""
    if not path.exists():
        pytest.skip(f"real data not available: {path} (only in the project workspace)")
    return path


def failing_on_call(function, call: int, error: BaseException):
    """``function``, except that call number ``call`` (1-based) raises ``error``.

    Injects a failure part-way, e.g. ``os.fsync`` raising ENOSPC on the third
    file written, as a full disk would.
    """
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(args)
        if len(calls) == call:
            raise error
        return function(*args, **kwargs)

    return wrapper


def blas_threads() -> set:
    """BLAS's thread counts now: one per library threadpoolctl sees."""
    from threadpoolctl import threadpool_info

    return {pool["num_threads"] for pool in threadpool_info()
            if pool["user_api"] == "blas"}


def blas_threads_in(monkeypatch, module, name) -> list:
    """Record :func:`blas_threads` at every call of ``module.name``.

    Returns the list the counts are appended to.
    """
    seen = []
    function = getattr(module, name)

    def spy(*args, **kwargs):
        seen.append(blas_threads())
        return function(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


def run_gpu_script(script: str, mode: str, *, timeout: float) -> dict:
    """Run ``script`` in a fresh Python on ``mode``'s device; the JSON of its last line.

    ``mode`` is ``"simulator"`` (numba's CUDA simulator, switched on before
    numba.cuda is imported, hence the subprocess) or ``"gpu"`` (skipped
    where there is no CUDA GPU).
    """
    from admixspec.backends.gpu import cuda_status

    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    if mode == "simulator":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    elif cuda_status()[0] != "gpu":
        pytest.skip("no CUDA GPU")
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def hapmap3_fixture() -> Path:
    """Folder of the ADMIXTURE tutorial's HapMap3 data and ADMIXTURE's outputs."""
    return require_realdata(HAPMAP3)



@pytest.fixture(scope="module")
def dask_fixture():
    """An in-process Dask cluster: 2 one-thread workers, a tcp:// loopback address."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp://",
                                  dashboard_address="127.0.0.1:0") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def sim_bed_fixture(tmp_path_factory) -> Path:
    """A 100 x 6000 .bed: 0.6 MB of int8 genotypes, streamed under --memory 1."""
    from admixspec import simulate_balding_nichols
    from admixspec.io import write_plink

    folder = tmp_path_factory.mktemp("bed")
    write_plink(folder / "sim",
                simulate_balding_nichols(100, 6000, 2, fst=0.2, seed=5).genotypes)
    return folder / "sim.bed"


def hide_from_workers(monkeypatch, bed) -> None:
    """The .bed as a Dask worker on another node sees it: absent (this process sees it).

    The in-process workers of :func:`dask_fixture` run in threads other
    than the main one; there every check and read of ``bed`` finds no file.
    """
    from admixspec.core.exceptions import InputError
    from admixspec.io import plink

    check_bed, read_bed_columns = plink.check_bed, plink.read_bed_columns

    def on_worker(path):
        return (threading.current_thread() is not threading.main_thread()
                and os.path.abspath(path) == os.path.abspath(bed))

    def hidden_check(path, *args):
        if on_worker(path):
            raise InputError("file not found (the .bed file of the PLINK fileset)",
                             path=path)
        return check_bed(path, *args)

    def hidden_read(path, *args):
        if on_worker(path):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return read_bed_columns(path, *args)

    monkeypatch.setattr(plink, "check_bed", hidden_check)
    monkeypatch.setattr(plink, "read_bed_columns", hidden_read)


def run_cli(argv, capsys) -> tuple[int, str, str]:
    """``admixspec.cli.main(argv)`` (words made str): exit code, stdout, stderr."""
    from admixspec.cli import main

    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_cohort(prefix: Path, n_individuals: int, n_snps: int) -> Path:
    """A K = 2 Balding–Nichols cohort (F_ST 0.1, Dirichlet(0.5)) as PLINK; its prefix."""
    from admixspec import simulate_balding_nichols
    from admixspec.io import write_plink

    sim = simulate_balding_nichols(n_individuals, n_snps, 2, fst=0.1, alpha=0.5, seed=4)
    write_plink(prefix, sim.genotypes)
    return prefix


def fit_reference_run(cohort: Path, n_reference: int, out: Path) -> Path:
    """``run -K 2`` on the cohort's first ``n_reference`` (``--keep``); its ``.2.P``."""
    from admixspec.cli import main

    keep = out.parent / "ref.keep"
    keep.write_text("".join(f"ind{i}\n" for i in range(n_reference)))
    argv = ["run", f"{cohort}.bed", "-K", "2", "--keep", keep, "--out", out,
            "-s", "1", "-q"]
    assert main([str(a) for a in argv]) == 0
    return Path(f"{out}.2.P")
