"""The package's layers (pyproject.toml's import-linter contracts) hold: every import
points down, the numba kernels import nothing above them, and no import cycles."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts__all_kept():
    done = subprocess.run([sys.executable, "-c", "from importlinter.cli import "
                           "lint_imports_command; lint_imports_command()"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
