"""Doctest collection for the package, and CI's skip policy for the whole suite.

Doctests: a doctest that needs an optional extra skips when that extra is not
installed (tests/ use ``pytest.importorskip``).

Skip policy: where ``ADMIXSPEC_CI=1`` (``.ci/run`` sets it), a test or module
that skips fails instead, unless its reason is on :data:`ALLOWED_SKIPS`: the
tests that need a GPU, or its absence. A CI machine without plink2,
bcftools, vcf2zarr, the real data or an extra the README's install should
have brought therefore fails rather than passing green. The end of the run
prints the allow-list and ``skipped: N (allowed: GPU hardware)``. This file
sits at the root so that it covers ``admixspec/``'s doctests as well as
``tests/``.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

#: doctest name -> (module it needs, the extra that brings it)
DOCTEST_REQUIRES = {
    "admixspec.simulate.simulate_admixture": ("msprime", "sim"),
    "admixspec.io.vcz.read_vcz": ("zarr", "zarr"),
}

#: Skip reasons CI accepts, by category: exactly these texts.
ALLOWED_SKIPS = {
    "GPU hardware": (
        "no CUDA GPU",  # tests/test_gpu.py: the comparisons on a real GPU
        "a CUDA device is present",  # tests/test_gpu.py: behaviour without a GPU
    ),
}

#: Set to "1" by .ci/run: skips outside ALLOWED_SKIPS fail.
CI_VARIABLE = "ADMIXSPEC_CI"


def strict_skips() -> bool:
    return os.environ.get(CI_VARIABLE) == "1"


def skip_reason(report) -> str:
    """The reason a skipped report gives (pytest stores ``Skipped: <reason>``)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def allowed_category(reason: str) -> str | None:
    for category, reasons in ALLOWED_SKIPS.items():
        if reason in reasons:
            return category
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        needed = DOCTEST_REQUIRES.get(item.name)
        if needed and importlib.util.find_spec(needed[0]) is None:
            module, extra = needed
            reason = f"needs {module}: pip install 'admixspec[{extra}]'"
            item.add_marker(pytest.mark.skip(reason=reason))


def _fail_disallowed_skip(report) -> None:
    if not (strict_skips() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = skip_reason(report)
    if allowed_category(reason) is None:
        report.outcome = "failed"
        report.longrepr = (
            f"skipped in CI ({CI_VARIABLE}=1) for a reason not on the allow-list "
            f"(conftest.py ALLOWED_SKIPS): {reason}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_disallowed_skip(outcome.get_result())


#: Collection skips (``pytest.importorskip`` at a module's import) CI does not allow.
_DISALLOWED_COLLECTION_SKIPS: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A module-level skip is a collection skip: failing its report would stop the
    whole run at collection, so it is recorded and fails the session at the end."""
    outcome = yield
    report = outcome.get_result()
    if strict_skips() and report.skipped:
        reason = skip_reason(report)
        if allowed_category(reason) is None:
            _DISALLOWED_COLLECTION_SKIPS.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session, exitstatus):
    if _DISALLOWED_COLLECTION_SKIPS and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = [report for report in terminalreporter.stats.get("skipped", [])
               if not hasattr(report, "wasxfail")]
    counts: dict[str, int] = {}
    for report in skipped:
        category = allowed_category(skip_reason(report)) or "not allowed in CI"
        counts[category] = counts.get(category, 0) + 1
    write = terminalreporter.write_line
    if strict_skips():
        write(f"skip allow-list ({CI_VARIABLE}=1; every other skip fails):")
        for category, reasons in ALLOWED_SKIPS.items():
            write(f"  {category}: " + ", ".join(repr(reason) for reason in reasons))
    for entry in _DISALLOWED_COLLECTION_SKIPS:
        write(f"FAILED (skipped in CI, reason not on the allow-list): {entry}", red=True)
    allowed = ", ".join(ALLOWED_SKIPS)
    others = counts.get("not allowed in CI", 0)
    tail = f"; {others} for other reasons, which CI fails" if others else ""
    write(f"skipped: {len(skipped)} (allowed: {allowed}){tail}")
