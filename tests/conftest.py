"""Shared fixtures. Fixture names end in ``_fixture``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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

