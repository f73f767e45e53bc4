"""The project's exception types and the one way optional packages are imported."""

from __future__ import annotations

import sys

import pytest

from admixspec.core.exceptions import (
    AdmixspecError,
    MissingDependencyError,
    import_optional,
)


class TestImportOptional:
    def test_import_optional__returns_the_module(self):
        assert (import_optional("json", extra="none", needed_for="x")
                is sys.modules["json"])

    def test_import_optional__missing_names_package_and_extra(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "allel", None)  # import allel fails
        with pytest.raises(MissingDependencyError) as raised:
            import_optional("allel", extra="allel", needed_for="--indep-pairwise",
                            package="scikit-allel")
        assert str(raised.value) == (
            "--indep-pairwise needs scikit-allel: pip install 'admixspec[allel]'"
        )
        # caught as the project's error by the CLI, and as ImportError by scripts
        assert isinstance(raised.value, AdmixspecError)
        assert isinstance(raised.value, ImportError)
