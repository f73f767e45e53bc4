"""Shared fixtures. Fixture names end in ``_fixture``."""

from __future__ import annotations

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


@pytest.fixture
def hapmap3_fixture() -> Path:
    """Folder of the ADMIXTURE tutorial's HapMap3 data and ADMIXTURE's outputs."""
    return require_realdata(HAPMAP3)
