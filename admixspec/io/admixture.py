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
:func:`admixspec.io.common.write_all_or_none` (or, streaming,
:func:`admixspec.io.common.atomic_write`), so a crash never leaves a
half-written output; a run's files for one K (Q, P, log, JSON) are written as
one set, all or none.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..core.exceptions import InputError, UsageError
from ..core.genotypes import UNKNOWN_LABELS
from .common import write_text
from .errors import reading

__all__ = [
    "CLAMP",
    "format_matrix",
    "format_q",
    "output_path",
    "read_admixture_log",
    "read_p",
    "read_pop",
    "read_q",
    "write_p",
    "write_q",
]

#: ADMIXTURE's bounds for written proportions and frequencies.
CLAMP = (1e-5, 1 - 1e-5)

#: Rows that :func:`format_matrix` formats at once.
_FORMAT_ROWS = 65_536


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
    # One %-format of a block of rows is C's loop over its values: about 3x faster
    # than np.char.mod (0.09 against 0.26 s for 80,000 x 3), the same "%.6f" bytes.
    # Blocks bound the tuple of Python floats a format holds.
    row = " ".join(["%.6f"] * array.shape[1]) + "\n"
    return "".join(
        (row * len(block)) % tuple(block.ravel().tolist())
        for block in np.array_split(array, range(_FORMAT_ROWS, len(array), _FORMAT_ROWS))
    )


def format_q(Q) -> str:
    """Q as ADMIXTURE writes it: :func:`format_matrix`, but a K = 1 Q unclamped.

    ADMIXTURE clamps proportions to ``[1e-5, 1 - 1e-5]`` yet writes the one
    column of a K = 1 fit as ``1.000000`` (its ``hapmap3.1.Q``).

    Examples
    --------
    >>> format_q([[1.0], [1.0]])
    '1.000000\\n1.000000\\n'
    >>> format_q([[1.0, 0.0]])
    '0.999990 0.000010\\n'
    """
    return format_matrix(Q, "Q", clamp=np.ndim(Q) != 2 or np.shape(Q)[1] > 1)


def write_q(path, Q) -> None:
    """Write ancestry proportions as an ADMIXTURE ``.Q`` file, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination, conventionally ``<prefix>.<K>.Q``.
    Q : array_like, float, shape (n_individuals, K)
        Proportions, one row per individual in input order. Written with 6
        decimals after clamping to ``[1e-5, 1 - 1e-5]`` (K = 1: as 1, see
        :func:`format_q`).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.2.Q")
    >>> write_q(path, [[1.0, 0.0], [0.25, 0.75]])
    >>> print(Path(path).read_text(), end="")
    0.999990 0.000010
    0.250000 0.750000
    """
    write_text(path, format_q(Q))


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
        One line per individual, in ``.fam`` order: a population name (any
        word, ``0`` included, as ADMIXTURE takes it, except ``.``, ``NA``,
        ``nan`` and ``None``, which the supervised fit reads as unknown), or
        ``-`` (or an empty line) for an individual of unknown ancestry.
    n_individuals : int, optional
        If given, the number of lines must match.

    Returns
    -------
    numpy.ndarray, object, shape (n_individuals,)
        Population names, ``None`` where unknown.

    Raises
    ------
    InputError
        A line with more than one field (a ``.fam`` or a label table given
        as the ``.pop``, whose extra words would make extra populations), or
        a line count other than ``n_individuals``, no line naming a
        population, or a label ``.``, ``NA``, ``nan`` or ``None`` (a
        population's reference individuals would silently become unknown).
    """
    path = Path(path)
    # utf-8-sig: a byte-order mark (Windows editors) is not part of the first label
    with reading(path, "a .pop file"), open(path, encoding="utf-8-sig") as handle:
        lines = handle.read().splitlines()
    # trailing blank lines beyond the individuals are an editor's, not unknown
    # individuals; up to their number they are individuals of unknown ancestry
    while lines and not lines[-1].strip() and (n_individuals is None
                                               or len(lines) > n_individuals):
        lines.pop()
    fields = [line.split() for line in lines]
    _check_one_field(fields, path)
    _check_named(fields, path)
    if n_individuals is not None and len(fields) != n_individuals:
        raise InputError(
            f"has {len(fields)} lines but the genotypes have "
            f"{n_individuals} individuals",
            path=path,
        )
    labels = np.array([None if words in ([], ["-"]) else words[0] for words in fields],
                      dtype=object)
    if not any(label is not None for label in labels):
        raise InputError("no individual has a reference population label (every line "
                         "is '-' or empty)", path=path)
    return labels


def _check_one_field(fields: list, path) -> None:
    """Refuse a ``.pop`` line of more than one word, naming the first."""
    wide = np.flatnonzero(np.fromiter(map(len, fields), dtype=np.int64,
                                      count=len(fields)) > 1)
    if len(wide):
        words = fields[int(wide[0])]
        raise InputError(
            f"{len(words)} fields ({' '.join(words)!r}) where a .pop line has one: "
            "a population name, or '-' for an individual of unknown ancestry",
            path=path, line=int(wide[0]) + 1,
        )


#: Words the supervised fit reads as "no population" besides ``-`` and the empty
#: line: in a ``.pop`` they would silently turn a population's reference
#: individuals into unknown ones.
_NAMELESS_WORDS = UNKNOWN_LABELS - {"-", ""}


def _check_named(fields: list, path) -> None:
    """Refuse a ``.pop`` label the fit would read as unknown, naming its first line."""
    nameless = [number for number, words in enumerate(fields, start=1)
                if words and words[0] in _NAMELESS_WORDS]
    if nameless:
        word = fields[nameless[0] - 1][0]
        raise InputError(
            f"{word!r} on {len(nameless)} line(s) would make those individuals of "
            "unknown ancestry, not a population: mark unknown individuals with '-', "
            "and give the population another name",
            path=path, line=nameless[0],
        )


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
