"""Doctest collection for the package: a doctest that needs an optional extra
skips when that extra is not installed (tests/ use ``pytest.importorskip``)."""

from __future__ import annotations

import importlib.util

import pytest

#: doctest name -> (module it needs, the extra that brings it)
DOCTEST_REQUIRES = {
    "admixspec.simulate.simulate_admixture": ("msprime", "sim"),
    "admixspec.io.vcz.read_vcz": ("zarr", "zarr"),
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        needed = DOCTEST_REQUIRES.get(item.name)
        if needed and importlib.util.find_spec(needed[0]) is None:
            module, extra = needed
            reason = f"needs {module}: pip install 'admixspec[{extra}]'"
            item.add_marker(pytest.mark.skip(reason=reason))
