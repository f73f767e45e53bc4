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
:func:`write_all_or_none` (or, streaming, :func:`atomic_write`): the text is
written to a temporary file in the target folder and then renamed over the
target, so a crash never leaves a half-written output; a run's files for one
K (Q, P, log, JSON) are written as one set, all or none.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..exceptions import InputError, UsageError
from .errors import reading

__all__ = [
    "CLAMP",
    "atomic_write",
    "format_json",
    "format_matrix",
    "output_path",
    "read_admixture_log",
    "read_p",
    "read_pop",
    "read_q",
    "write_all_or_none",
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
    most a hidden ``.<name>.*.tmp`` file, never a partial ``path``. An
    ``OSError`` (a full disk, say) names ``path``.

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
    with _temporary_beside(path, mode, encoding) as (handle, temporary):
        yield handle
    _rename(temporary, path)


def write_all_or_none(contents: Mapping) -> None:
    """Write several text files so that all of them appear, or none does.

    Every text is first written to a temporary file in its destination's
    folder and flushed to disk; only when all are written are they renamed
    over their destinations. If anything fails part-way (a full disk, an
    interrupt), every temporary file is removed, and so is every destination
    this call had already renamed into place.

    Parameters
    ----------
    contents : mapping of str or os.PathLike to str
        Destination path -> its text (written as UTF-8, ``\\n`` line ends).

    Raises
    ------
    OSError
        With ``filename`` set to the destination being written or renamed.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_all_or_none({folder / "a.txt": "1\\n", folder / "b.txt": "2\\n"})
    >>> sorted(p.name for p in folder.iterdir())
    ['a.txt', 'b.txt']
    """
    staged: list[tuple[Path, str]] = []
    renamed: list[Path] = []
    try:
        for path, text in contents.items():
            with _temporary_beside(path, "w", "utf-8") as (handle, temporary):
                staged.append((Path(path), temporary))
                handle.write(text)
        for path, temporary in staged:
            _rename(temporary, path)
            renamed.append(path)
    except BaseException:
        for leftover in [temporary for _, temporary in staged] + renamed:
            _discard(leftover)
        raise


@contextlib.contextmanager
def _temporary_beside(path, mode: str, encoding: str | None):
    """Yield ``(handle, temporary path)`` for a hidden file in ``path``'s folder.

    On success the file is flushed, synced to disk and given the umask's
    permissions, and left for the caller to rename; on failure it is removed.
    """
    if mode not in ("w", "wb"):
        raise UsageError(f"mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    with _naming(path):
        fd, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".tmp", dir=folder
        )
    try:
        with _naming(path):
            if mode == "wb":
                handle = os.fdopen(fd, "wb")
            else:
                handle = os.fdopen(fd, "w", encoding=encoding, newline="\n")
            with handle:
                yield handle, temporary
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, 0o666 & ~_umask())
    except BaseException:
        _discard(temporary)
        raise


def _rename(temporary: str, path) -> None:
    """Move a finished temporary file over ``path``; remove it if that fails."""
    try:
        with _naming(path):
            os.replace(temporary, path)
    except BaseException:
        _discard(temporary)
        raise


def _discard(path) -> None:
    """Remove ``path`` if it is there, quietly: the error being handled matters."""
    with contextlib.suppress(OSError):
        os.unlink(path)


@contextlib.contextmanager
def _naming(path):
    """Re-raise an ``OSError`` with ``filename`` set to ``path`` (not a temporary)."""
    try:
        yield
    except OSError as error:
        if error.errno is None:
            raise
        raise OSError(error.errno, error.strerror, str(path)) from error


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`write_all_or_none`)."""
    write_all_or_none({path: text})


def format_json(obj) -> str:
    """``obj`` as indented JSON text; NumPy scalars and arrays become plain values."""

    def default(value):
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, Path):
            return str(value)
        raise TypeError(f"cannot serialise {type(value).__name__} to JSON")

    return json.dumps(obj, indent=2, default=default) + "\n"


def write_json(path, obj) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically (:func:`format_json`)."""
    write_text(path, format_json(obj))


def output_path(prefix, K: int, kind: str) -> Path:
    """ADMIXTURE's output name ``<prefix>.<K>.<kind>``.

    Examples
    --------
    >>> str(output_path("out/run", 3, "Q"))
    'out/run.3.Q'
    """
    return Path(f"{prefix}.{K}.{kind}")


def format_matrix(matrix, name: str = "Q", *, clamp: bool = True) -> str:
    """Q or P as ADMIXTURE text: rows of space-separated 6-decimal values.

    Parameters
    ----------
    matrix : array_like, float, shape (n_rows, K)
        Finite values.
    name : str
        What the matrix is, for the error message.
    clamp : bool
        Clamp to ``[1e-5, 1 - 1e-5]`` as ADMIXTURE writes Q and P; False for
        other per-individual tables (bootstrap standard errors and biases,
        which may be 0 or negative).

    Raises
    ------
    UsageError
        Not 2-d, or NaN/infinite values.

    Examples
    --------
    >>> format_matrix([[1.0, 0.0], [0.25, 0.75]])
    '0.999990 0.000010\\n0.250000 0.750000\\n'
    """
    array = np.asarray(matrix, dtype=np.float64)
    if array.ndim != 2:
        raise UsageError(f"{name} must be a 2-d array, got {array.ndim} dimensions")
    if not np.all(np.isfinite(array)):
        raise UsageError(f"{name} contains NaN or infinite values")
    if clamp:
        array = np.clip(array, *CLAMP)
    if array.shape[0] == 0:
        return ""
    # np.savetxt formats row by row in Python; this formats the flat array once.
    flat = np.char.mod("%.6f", array.ravel()).reshape(array.shape)
    lines = [" ".join(row) for row in flat.tolist()]
    return "\n".join(lines) + "\n"


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
    write_text(path, format_matrix(Q, "Q"))


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
    write_text(path, format_matrix(P, "P"))


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
    with reading(path, "a .pop file"), open(path, encoding="utf-8") as handle:
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
