"""The whole tree passes ruff with pyproject.toml's rules, as the pre-commit hooks
(.pre-commit-config.yaml) require of every commit; CI runs this test."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff__whole_tree_clean():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_pre_commit_hooks__run_the_checks_the_tests_run():
    config = (ROOT / ".pre-commit-config.yaml").read_text()
    assert "entry: ruff check" in config
    assert "entry: lint-imports" in config
