"""CI's skip policy (the root conftest.py) and what .ci/run runs.

The policy is checked on a throw-away test project that uses a copy of the
root conftest.py: pytest runs there in a subprocess, with and without
``ADMIXSPEC_CI=1``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CI_RUN = ROOT / ".ci" / "run"

PROJECT_TESTS = '''
import pytest

def test_passes():
    pass

def test_needs_a_tool():
    pytest.skip("plink2 not installed")

def test_needs_a_gpu():
    pytest.skip("no CUDA GPU")

def test_needs_no_gpu():
    pytest.skip("a CUDA device is present")
'''


@pytest.fixture
def project_fixture(tmp_path) -> Path:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_cases.py").write_text(PROJECT_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the copy's root, not ours
    return tmp_path


def run_pytest(folder: Path, *, ci: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ADMIXSPEC_CI"}
    if ci:
        env["ADMIXSPEC_CI"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-q", str(folder)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


class TestSkipPolicy:
    def test_ci__skip_for_a_missing_tool_fails_and_gpu_skips_are_allowed(
            self, project_fixture):
        done = run_pytest(project_fixture, ci=True)
        out = done.stdout
        assert done.returncode == 1, out
        assert re.search(r"^FAILED test_cases.py::test_needs_a_tool - skipped in CI",
                         out, re.M), out
        assert ("skipped in CI (ADMIXSPEC_CI=1) for a reason not on the allow-list "
                "(conftest.py ALLOWED_SKIPS): plink2 not installed") in out
        assert "skip allow-list (ADMIXSPEC_CI=1; every other skip fails):" in out
        assert "  GPU hardware: 'no CUDA GPU', 'a CUDA device is present'" in out
        assert "\nskipped: 2 (allowed: GPU hardware)\n" in out
        assert re.search(r"1 failed, 1 passed, 2 skipped", out), out

    def test_without_ci__every_skip_is_a_skip(self, project_fixture):
        done = run_pytest(project_fixture, ci=False)
        out = done.stdout
        assert done.returncode == 0, out
        assert "skip allow-list" not in out
        assert ("skipped: 3 (allowed: GPU hardware); 1 for other reasons, which CI "
                "fails") in out

    def test_ci__module_skipped_at_import_fails_the_run(self, project_fixture):
        (project_fixture / "test_extra.py").write_text(
            'import pytest\nno_such = pytest.importorskip("no_such_module_admixspec")\n'
            "def test_x():\n    pass\n")
        (project_fixture / "test_cases.py").write_text(
            "def test_passes():\n    pass\n")
        done = run_pytest(project_fixture, ci=True)
        out = done.stdout
        assert done.returncode == 1, out
        assert ("FAILED (skipped in CI, reason not on the allow-list): test_extra.py: "
                "could not import 'no_such_module_admixspec'") in out
        ok = run_pytest(project_fixture, ci=False)
        assert ok.returncode == 0, ok.stdout


class TestCiScript:
    def test_ci_run__sets_the_skip_policy_before_the_tests(self):
        text = CI_RUN.read_text()
        assert "export ADMIXSPEC_CI=1" in text
        assert text.index("export ADMIXSPEC_CI=1") < text.index("python -m pytest ||")

    def test_ci_run__runs_the_slow_stage_after_the_readmes_commands(self):
        lines = CI_RUN.read_text().splitlines()
        default = lines.index("python -m pytest || status=$?")
        slow = [i for i, line in enumerate(lines)
                if line.startswith("python -m pytest -m slow")]
        assert slow
        assert slow[0] > default
