"""Exceptions and warnings raised by admixspec.

The library never prints or exits; the command line (:mod:`admixspec.cli`)
turns these into one-line messages and exit codes.
"""

from __future__ import annotations

__all__ = [
    "AdmixspecError",
    "ConvergenceWarning",
    "InputError",
    "MissingDependencyError",
    "UsageError",
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
