"""Exceptions and warnings raised by admixspec.

The library never prints or exits; the command line (:mod:`admixspec.cli`)
turns these into one-line messages and exit codes.
"""

from __future__ import annotations

import importlib

__all__ = [
    "AdmixspecError",
    "ConvergenceWarning",
    "InputError",
    "MissingDependencyError",
    "UsageError",
    "import_optional",
]


class AdmixspecError(Exception):
    """Base class of every error admixspec raises on purpose."""


class InputError(AdmixspecError, ValueError):
    """Bad or unusable input data (exit code 1 on the command line).

    Parameters
    ----------
    message : str
        What is wrong, as one sentence.
    path : str or os.PathLike, optional
        The file the problem was found in.
    line : int, optional
        1-based line number within ``path``, when known.
    """

    def __init__(self, message: str, path=None, line: int | None = None):
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line is not None else "") + ": "
        return where + self.message


class UsageError(AdmixspecError, ValueError):
    """An invalid combination of parameters (exit code 2 on the command line)."""


class MissingDependencyError(AdmixspecError, ImportError):
    """An optional package is not installed (exit code 1 on the command line).

    The message names the extra that brings it, e.g.
    ``simulate_admixture needs msprime: pip install 'admixspec[sim]'``.
    """


class ConvergenceWarning(UserWarning):
    """An iterative fit stopped at its iteration limit before converging."""


def import_optional(module: str, *, extra: str, needed_for: str, package=None):
    """Import an optional dependency, or say which extra brings it.

    Parameters
    ----------
    module : str
        The module to import, e.g. ``"msprime"``.
    extra : str
        The admixspec extra that installs it, e.g. ``"sim"``.
    needed_for : str
        What needs it, the start of the message, e.g. ``"admixspec simulate"``.
    package : str, optional
        The package's name where it differs from the module's
        (``"scikit-allel"`` for ``allel``).

    Raises
    ------
    MissingDependencyError
        ``<needed_for> needs <package>: pip install 'admixspec[<extra>]'``.

    Examples
    --------
    >>> import_optional("json", extra="none", needed_for="this example").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"{needed_for} needs {package or module}: pip install 'admixspec[{extra}]'"
        ) from None
