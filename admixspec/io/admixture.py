"""ADMIXTURE file formats and atomic output.

* ``PREFIX.K.Q``: one row per individual (input order), K space-separated
  proportions with 6 decimals, no header.
* ``PREFIX.K.P``: one row per SNP (input order), K space-separated
  frequencies of the counted allele (``.bim`` column 6 / A2; VCF REF) with
  6 decimals.
* ``.pop``: ADMIXTURE's supervised-mode labels, one line per individual, a
  population name or ``-`` for unknown.
* ADMIXTURE ``.log`` / stdout: the final log-likelihood and CV error.

Values written to ``.Q``/``.P`` are clamped to ``[1e-5, 1 - 1e-5]``, the
bounds ADMIXTURE itself writes. Every writer goes through
:func:`atomic_write`: the text is written to a temporary file in the target
folder and then renamed over the target, so a crash never leaves a
half-written output.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from pathlib import Path

import numpy as np

from ..exceptions import InputError

__all__ = [
    "CLAMP",
    "atomic_write",
    "output_path",
    "read_admixture_log",
    "read_p",
    "read_pop",
    "read_q",
    "write_json",
    "write_p",
    "write_q",
    "write_text",
]

#: ADMIXTURE's bounds for written proportions and frequencies.
CLAMP = (1e-5, 1 - 1e-5)


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", *, encoding: str | None = "utf-8"):
    """Open a temporary file that replaces ``path`` only if the block succeeds.

    The temporary file lives in the same folder as ``path`` (so the final
    :func:`os.replace` is atomic on POSIX); it is removed if the block raises
    (including ``KeyboardInterrupt``). A process killed outright leaves at
    most a hidden ``.<name>.*.tmp`` file, never a partial ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination.
    mode : {"w", "wb"}
        Text or binary.
    encoding : str, optional
        Text encoding (ignored for binary mode).

    Yields
    ------
    file object
        Open for writing.

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> with atomic_write(os.path.join(folder, "x.txt")) as handle:
    ...     _ = handle.write("hello\\n")
    >>> Path(folder, "x.txt").read_text()
    'hello\\n'
    """
    if mode not in ("w", "wb"):
        raise ValueError("mode must be 'w' or 'wb'")
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        if mode == "wb":
            handle = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding=encoding, newline="\n")
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path) as handle:
        handle.write(text)


def write_json(path, obj) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically.

    NumPy scalars and arrays are converted to plain Python values.
    """

    def default(value):
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, Path):
            return str(value)
        raise TypeError(f"cannot serialise {type(value).__name__} to JSON")

    write_text(path, json.dumps(obj, indent=2, default=default) + "\n")


def output_path(prefix, K: int, kind: str) -> Path:
    """ADMIXTURE's output name ``<prefix>.<K>.<kind>``.

    Examples
    --------
    >>> str(output_path("out/run", 3, "Q"))
    'out/run.3.Q'
    """
    return Path(f"{prefix}.{K}.{kind}")


def _format_matrix(matrix: np.ndarray) -> str:
    clamped = np.clip(matrix, *CLAMP)
    if clamped.shape[0] == 0:
        return ""
    # np.savetxt formats row by row in Python; this formats the flat array once.
    flat = np.char.mod("%.6f", clamped.ravel()).reshape(clamped.shape)
    lines = [" ".join(row) for row in flat.tolist()]
    return "\n".join(lines) + "\n"


def _check_matrix(matrix, name: str) -> np.ndarray:
    array = np.asarray(matrix, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-d array, got {array.ndim} dimensions")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def write_q(path, Q) -> None:
    """Write ancestry proportions as an ADMIXTURE ``.Q`` file, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination, conventionally ``<prefix>.<K>.Q``.
    Q : array_like, float, shape (n_individuals, K)
        Proportions, one row per individual in input order. Written with 6
        decimals after clamping to ``[1e-5, 1 - 1e-5]``.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.2.Q")
    >>> write_q(path, [[1.0, 0.0], [0.25, 0.75]])
    >>> print(Path(path).read_text(), end="")
    0.999990 0.000010
    0.250000 0.750000
    """
    text = _format_matrix(_check_matrix(Q, "Q"))
    write_text(path, text)


def write_p(path, P) -> None:
    """Write ancestral allele frequencies as an ADMIXTURE ``.P`` file, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination, conventionally ``<prefix>.<K>.P``.
    P : array_like, float, shape (n_snps, K)
        Frequency of the counted allele (``.bim`` column 6 / VCF REF) in each
        ancestral population, one row per SNP in input order. Written with 6
        decimals after clamping to ``[1e-5, 1 - 1e-5]``.
    """
    text = _format_matrix(_check_matrix(P, "P"))
    write_text(path, text)


def _read_matrix(path, kind: str) -> np.ndarray:
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except UnicodeDecodeError:
        raise InputError(f"not a text {kind} file", path=path) from None
    rows = []
    width = None
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            continue
        try:
            values = [float(x) for x in fields]
        except ValueError:
            raise InputError(
                f"non-numeric value in {kind} file", path=path, line=number
            ) from None
        if width is None:
            width = len(values)
        elif len(values) != width:
            raise InputError(
                f"expected {width} columns, found {len(values)}", path=path, line=number
            )
        rows.append(values)
    if not rows:
        raise InputError(f"empty {kind} file", path=path)
    array = np.array(rows, dtype=np.float64)
    if not np.all(np.isfinite(array)) or array.min() < 0 or array.max() > 1:
        raise InputError(f"{kind} values must lie in [0, 1]", path=path)
    return array


def read_q(path) -> np.ndarray:
    """Read an ADMIXTURE ``.Q`` file.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    numpy.ndarray, float64, shape (n_individuals, K)

    Raises
    ------
    InputError
        Ragged rows, non-numeric values or values outside [0, 1].
    """
    return _read_matrix(path, "Q")


def read_p(path) -> np.ndarray:
    """Read an ADMIXTURE ``.P`` file.

    Returns
    -------
    numpy.ndarray, float64, shape (n_snps, K)
        Frequency of the counted allele (``.bim`` column 6).
    """
    return _read_matrix(path, "P")


def read_pop(path, *, n_individuals: int | None = None) -> np.ndarray:
    """Read an ADMIXTURE ``.pop`` file (supervised labels).

    Parameters
    ----------
    path : str or os.PathLike
        One line per individual, in ``.fam`` order: a population name, or
        ``-`` (or an empty line) for an individual of unknown ancestry.
    n_individuals : int, optional
        If given, the number of lines must match.

    Returns
    -------
    numpy.ndarray of object, shape (n_individuals,)
        Population names, ``None`` where unknown.
    """
    path = Path(path)
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    labels = np.array(
        [None if line.strip() in ("", "-") else line.strip() for line in lines],
        dtype=object,
    )
    if n_individuals is not None and len(labels) != n_individuals:
        raise InputError(
            f"has {len(labels)} lines but the genotypes have {n_individuals} individuals",
            path=path,
        )
    return labels


_LOGLIK = re.compile(r"^Loglikelihood:\s*(\S+)\s*$", re.MULTILINE)
_CV = re.compile(r"^CV error \(K=(\d+)\):\s*(\S+)", re.MULTILINE)
_SEED = re.compile(r"^Random seed:\s*(\d+)", re.MULTILINE)
_SIZE = re.compile(r"^Size of G:\s*(\d+)x(\d+)", re.MULTILINE)
_ITER = re.compile(r"^Converged in (\d+) iterations", re.MULTILINE)


def read_admixture_log(path) -> dict:
    """Parse the summary of an ADMIXTURE run log (its captured stdout).

    Returns
    -------
    dict
        ``loglik`` (float, the final "Loglikelihood:" line), and when present
        ``K`` and ``cv_error`` (float), ``seed``, ``n_individuals``,
        ``n_snps``, ``n_iter`` (int).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    found = _LOGLIK.findall(text)
    if not found:
        raise InputError("no final 'Loglikelihood:' line in ADMIXTURE log", path=path)
    result: dict = {"loglik": float(found[-1])}
    if match := _CV.search(text):
        result["K"] = int(match.group(1))
        result["cv_error"] = float(match.group(2))
    if match := _SEED.search(text):
        result["seed"] = int(match.group(1))
    if match := _SIZE.search(text):
        result["n_individuals"] = int(match.group(1))
        result["n_snps"] = int(match.group(2))
    if match := _ITER.search(text):
        result["n_iter"] = int(match.group(1))
    return result
