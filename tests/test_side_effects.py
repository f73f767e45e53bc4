"""Importing admixspec changes nothing process-wide; files it writes follow the umask."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from admixspec import simulate_balding_nichols
from admixspec.cli import main
from admixspec.io import write_plink, write_q, write_vcf

DATA = Path(__file__).resolve().parent.parent / "data"

_ADMIXSPEC = ("admixspec, admixspec.cli, admixspec.backends.gpu.kernels, admixspec.io, "
              "admixspec.plot")

#: Lists the modules other than admixspec's that importing admixspec loads.
_DEPENDENCIES = f"""
import sys
import {_ADMIXSPEC}
print("\\n".join(sorted(name for name in sys.modules
                         if name.split(".")[0] not in ("admixspec", "__main__"))))
"""

#: Imports those first (their own effects, e.g. scipy.special's warning filters,
#: are not admixspec's), then compares the process's state around admixspec's import.
_SNAPSHOT = """
import importlib, json, logging, os, signal, sys, warnings
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception:  # a private submodule that only imports as part of its package
        pass
import numpy as np

def snapshot():
    return {
        "numpy": sorted((name, id(getattr(np, name))) for name in dir(np)),
        "numpy_errors": sorted(np.geterr().items()),
        "numpy_print": sorted((k, repr(v)) for k, v in np.get_printoptions().items()),
        "warning_filters": [repr(f) for f in warnings.filters],
        "root_logging": [repr(h) for h in logging.getLogger().handlers]
                        + [logging.getLogger().level],
        "environment": sorted(os.environ.items()),
        "excepthook": repr(sys.excepthook),
        "sigpipe": repr(signal.getsignal(signal.SIGPIPE)),
        "sigint": repr(signal.getsignal(signal.SIGINT)),
    }

before = snapshot()
import ADMIXSPEC
after = snapshot()
print(json.dumps({key: before[key] == after[key] for key in before}))
""".replace("ADMIXSPEC", _ADMIXSPEC)


def test_import__leaves_numpy_and_process_state_unchanged():
    # in a fresh interpreter; the CUDA simulator lets the GPU kernels import
    # where no CUDA library is installed (their module runs the same code)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    listed = subprocess.run([sys.executable, "-c", _DEPENDENCIES], capture_output=True,
                            text=True, env=env, timeout=600, check=True)
    dependencies = listed.stdout.split()
    assert "numpy" in dependencies
    assert "numba" in dependencies
    done = subprocess.run([sys.executable, "-c", _SNAPSHOT, *dependencies],
                          capture_output=True, text=True, env=env, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    unchanged = json.loads(done.stdout.strip().splitlines()[-1])
    assert unchanged == dict.fromkeys(unchanged, True), unchanged


@pytest.fixture(params=[0o022, 0o027, 0o077])
def umask_fixture(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _modes(folder: Path) -> dict[str, int]:
    return {path.name: stat.S_IMODE(path.stat().st_mode)
            for path in sorted(folder.iterdir()) if path.is_file()}


def test_written_files__have_the_umasks_mode(umask_fixture, tmp_path):
    want = 0o666 & ~umask_fixture
    genotypes = simulate_balding_nichols(12, 60, 2, seed=1).genotypes
    write_plink(tmp_path / "fileset", genotypes)
    write_vcf(tmp_path / "genotypes.vcf.gz", genotypes)  # with its .tbi where tabix is
    write_vcf(tmp_path / "plain.vcf", genotypes)
    write_q(tmp_path / "single.Q", [[0.5, 0.5]] * 12)
    assert main(["run", str(DATA / "example.bed"), "-K", "2", "--init", "svd", "-q",
                 "--out", str(tmp_path / "run")]) == 0
    modes = _modes(tmp_path)
    assert {"fileset.bed", "fileset.bim", "fileset.fam", "genotypes.vcf.gz",
            "plain.vcf", "single.Q", "run.2.Q", "run.2.P", "run.2.log",
            "run.2.json"} <= set(modes), sorted(modes)
    wrong = {name: oct(mode) for name, mode in modes.items() if mode != want}
    assert not wrong, f"umask {oct(umask_fixture)}: want {oct(want)}, got {wrong}"
