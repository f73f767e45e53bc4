"""What every reader and writer shares: regions, sample selection, and atomic writes.

* :func:`parse_region` and :func:`region_mask`: ``--region chrom:start-end``,
  its chromosome compared as PLINK compares them (:func:`chromosome_names`);
* :func:`sample_rows`: ``--keep``'s samples as rows of a file's sample list;
* :func:`first_duplicate`: the first ID a file lists twice;
* :func:`is_snp_allele`: the single-base alleles of a biallelic SNP;
* :func:`atomic_write` and :func:`write_all_or_none`: every output is written
  to a temporary file in its folder and renamed over its destination, so a
  crash never leaves a half-written file, and a set of files appears whole
  or not at all.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.exceptions import InputError, UsageError
from .errors import data_line

__all__ = [
    "PLINK_CHROMOSOMES",
    "atomic_write",
    "chromosome_names",
    "empty_region_error",
    "format_json",
    "is_snp_allele",
    "keep_entry",
    "keep_rows",
    "parse_region",
    "region_mask",
    "sample_rows",
    "temporary_beside",
    "write_all_or_none",
    "write_json",
    "write_text",
]

_REGION = re.compile(r"^([^:\s]+)(?::([\d,]+)?(?:-([\d,]+)?)?)?$")


# --------------------------------------------------------------------------- selection


def parse_region(region: str) -> tuple[str, int | None, int | None]:
    """Parse ``chrom``, ``chrom:start-end``, ``chrom:start-`` (1-based, inclusive).

    Returns
    -------
    (chrom, start, end) : tuple
        ``start``/``end`` are ``None`` when open.

    Raises
    ------
    UsageError
        If the text is not a region.

    Examples
    --------
    >>> parse_region("2:1,000-2000")
    ('2', 1000, 2000)
    >>> parse_region("chrX")
    ('chrX', None, None)
    """
    match = _REGION.match(region.strip())
    if not match:
        raise UsageError(f"invalid region {region!r}; expected chrom:start-end")
    chrom, start, end = match.groups()
    start_value = int(start.replace(",", "")) if start else None
    end_value = int(end.replace(",", "")) if end else None
    if start_value is not None and end_value is not None and end_value < start_value:
        raise UsageError(f"invalid region {region!r}: end before start")
    return chrom, start_value, end_value


#: PLINK's numeric codes of the sex chromosomes and the mitochondrion, by the
#: names VCFs give them (PLINK reads ``chrX``, ``X`` and ``23`` as one).
PLINK_CHROMOSOMES = {"23": "X", "24": "Y", "25": "XY", "26": "MT", "M": "MT"}


def chromosome_names(names) -> np.ndarray:
    """Chromosome names as PLINK compares them: no ``chr`` prefix, upper case,
    PLINK's codes 23-26 as X, Y, XY and MT.

    Parameters
    ----------
    names : array_like of str, shape (n,)

    Returns
    -------
    numpy.ndarray of object, shape (n,)

    Examples
    --------
    >>> chromosome_names(["chr1", "1", "chrX", "23", "chrM", "26"]).tolist()
    ['1', '1', 'X', 'X', 'MT', 'MT']
    """
    # the distinct names only: a biobank's .bim has millions of rows, a few names
    codes, distinct = pd.factorize(pd.Series(np.asarray(names, dtype=str)))
    plain = (pd.Series(distinct, dtype=str).str.strip()
             .str.replace(r"^chr", "", regex=True, case=False).str.upper()
             .replace(PLINK_CHROMOSOMES))
    return plain.to_numpy(dtype=object)[codes]


def region_mask(chrom: np.ndarray, positions: np.ndarray, region) -> np.ndarray:
    """Which variants lie in ``region`` (``chrom:start-end``; all when ``None``).

    The chromosome is matched as PLINK matches it (:func:`chromosome_names`:
    ``chr2`` selects a ``.bim``'s ``2``, ``X`` its ``23``).

    Parameters
    ----------
    chrom : numpy.ndarray of str, shape (n_variants,)
    positions : numpy.ndarray of int, shape (n_variants,)
        1-based positions.
    region : str or None

    Returns
    -------
    numpy.ndarray, bool, shape (n_variants,)
    """
    mask = np.ones(len(positions), dtype=bool)
    if region is None:
        return mask
    name, start, end = parse_region(region)
    mask &= chromosome_names(chrom) == chromosome_names([name])[0]
    if start is not None:
        mask &= positions >= start
    if end is not None:
        mask &= positions <= end
    return mask


def empty_region_error(region: str, chroms, path) -> InputError:
    """The error for a region that selects no variant of a file.

    Parameters
    ----------
    region : str
        The region asked for.
    chroms : sequence of str
        The file's chromosome names, each once (the first few are named: a
        region on ``chr1`` of a file whose chromosomes are ``1``, ``2``, ...
        selects nothing).
    path : str or os.PathLike

    Examples
    --------
    >>> print(empty_region_error("chr9", [str(c) for c in range(1, 23)], "x.bim"))
    x.bim: region chr9 selects no variants (the file's chromosomes: 1, 2, 3, 4, 5, \
... of 22)
    """
    names = [str(name) for name in chroms]
    shown = ", ".join(names[:5]) + (f", ... of {len(names)}" if len(names) > 5 else "")
    return InputError(f"region {region} selects no variants (the file's chromosomes: "
                      f"{shown or 'none'})", path=path)


def first_duplicate(ids) -> tuple[int, int] | None:
    """Rows of the first ID listed twice: its first row and its second; else None.

    Parameters
    ----------
    ids : array_like of str

    Returns
    -------
    (first, second) : tuple of int, or None
        0-based rows; ``second`` is the earliest row that repeats an ID.

    Examples
    --------
    >>> first_duplicate(["a", "b", "c", "b", "a"])
    (1, 3)
    >>> first_duplicate(["a", "b"]) is None
    True
    """
    series = pd.Series(np.asarray(ids, dtype=str))
    repeats = np.flatnonzero(series.duplicated().to_numpy())
    if not len(repeats):
        return None
    second = int(repeats[0])
    first = int(np.argmax((series == series.iloc[second]).to_numpy()))
    return first, second


def check_unique_iids(iids, fids, path, *, comments: bool = True) -> None:
    """Refuse a ``.fam``/``.psam`` that lists a sample twice (its FID and IID).

    PLINK names a sample by FID and IID, and family files often number their
    members 1, 2, ... in every family, so an IID repeated under another FID is
    another sample; :func:`sample_rows` refuses it only where ``--keep``
    names it by IID alone (a two-column ``--keep`` file's (FID, IID) pairs
    are matched as pairs, :func:`keep_rows`).

    Parameters
    ----------
    iids : pandas.Series of str
    fids : pandas.Series of str, or None
        The family IDs (None: samples are named by IID alone).
    path : str or os.PathLike
        The ``.fam`` or ``.psam`` file, for the message.
    comments : bool
        Whether its ``#`` lines are headers (:func:`~admixspec.io.errors.data_line`).

    Raises
    ------
    InputError
        ``<path>: sample ... on lines <a> and <b> ...``.
    """
    names = iids if fids is None else fids.astype(str) + "\t" + iids.astype(str)
    repeated = first_duplicate(names)
    if repeated is None:
        return
    first, second = repeated
    lines = [data_line(path, row, comments=comments) for row in repeated]
    who = (f"sample ID (IID) {str(iids.iloc[second])!r}" if fids is None else
           f"sample {str(fids.iloc[second])!r} {str(iids.iloc[second])!r} (FID, IID)")
    raise InputError(f"{who} on lines {lines[0]} and {lines[1]}: each sample must be "
                     "listed once", path=path, line=lines[1])


def sample_rows(ids, samples, path, kind: str | None = ".fam") -> np.ndarray:
    """Rows of the requested samples (all of which must exist), in file order.

    Parameters
    ----------
    ids : array_like of str, shape (n_samples,)
        The file's sample IDs, in file order.
    samples : sequence of str or None
        The requested IDs (``--keep``); None keeps every row.
    path : str or os.PathLike
        The file, for the error message.
    kind : str, optional
        The file's kind in the message (``".fam"``, ``".psam"``); None says
        "the file".

    Returns
    -------
    numpy.ndarray, int64, increasing

    Raises
    ------
    InputError
        When a requested ID is listed twice in the file (keeping one would
        keep both), or is not in the file (the first one is named).

    Examples
    --------
    >>> sample_rows(np.array(["a", "b", "c"]), ["c", "a"], "x.fam").tolist()
    [0, 2]
    """
    ids = np.asarray(ids, dtype=str)
    if samples is None:
        return np.arange(len(ids))
    # an IID repeated in the file (PLINK allows it across families) is
    # ambiguous only where --keep names it: keeping one would keep both
    rows = np.flatnonzero(np.isin(ids, np.asarray(list(samples), dtype=str)))
    where = "the file" if kind is None else f"the {kind} file"
    repeated = first_duplicate(ids[rows])
    if repeated is not None:
        first, second = rows[list(repeated)]
        raise InputError(f"--keep names sample ID {str(ids[second])!r}, which {where} "
                         f"lists twice (samples {first + 1} and {second + 1}): "
                         "admixspec matches --keep by IID alone", path=path)
    known = set(ids.tolist())
    unknown = [sample for sample in samples if sample not in known]
    if unknown:
        raise InputError(
            f"{len(unknown)} requested sample(s) not in {where} (first: {unknown[0]!r})"
            + _pasted_id_hint(ids, unknown[0]), path=path,
        )
    return rows


def keep_rows(fids, iids, samples, path, kind: str = ".fam") -> np.ndarray:
    """Rows of the ``--keep`` samples in a ``.fam``/``.psam``, in file order.

    Parameters
    ----------
    fids, iids : array_like of str, shape (n_samples,)
        The file's FIDs (None when it has none) and IIDs.
    samples : sequence of str or None
        The IIDs to keep (None keeps every row). When it has a ``families``
        attribute that is not None (a two-column ``--keep`` file, see
        :func:`admixspec.io.reader.read_keep`) and the file has FIDs, each
        (FID, IID) pair is matched, as PLINK's ``--keep`` does (two families
        may number their members alike); else the IIDs alone
        (:func:`sample_rows`).
    path : str or os.PathLike
        The file, for the message.
    kind : str
        ``".fam"`` or ``".psam"``, for the message.

    Returns
    -------
    numpy.ndarray, int64, increasing

    Raises
    ------
    InputError
        A requested sample that is not in the file (the first is named, with
        the FID its IID has there, if it has one).

    Examples
    --------
    >>> class Pairs(list):
    ...     families = ["F2", "F1"]
    >>> keep_rows(["F1", "F2", "F2"], ["1", "1", "2"], Pairs(["2", "1"]), "x.fam")
    array([0, 2])
    """
    families = getattr(samples, "families", None)
    if families is None or fids is None:
        return sample_rows(np.asarray(iids, dtype=str), samples, path, kind=kind)
    file_fids, file_iids = pd.Series(fids, dtype=str), pd.Series(iids, dtype=str)
    keys = file_fids + "\t" + file_iids
    wanted = pd.Series(list(families), dtype=str) + "\t" + pd.Series(list(samples),
                                                                      dtype=str)
    unknown = np.flatnonzero(~wanted.isin(keys).to_numpy())
    if len(unknown):
        fid, iid = families[unknown[0]], samples[unknown[0]]
        elsewhere = file_fids[file_iids == iid]
        hint = ("" if elsewhere.empty else f"; IID {iid!r} is there with FID "
                f"{elsewhere.iloc[0]!r}, and a two-column --keep file is matched on "
                "FID and IID, as PLINK's")
        raise InputError(f"{len(unknown)} requested sample(s) not in the {kind} file "
                         f"(first: FID {fid!r} IID {iid!r}{hint})", path=path)
    return np.flatnonzero(keys.isin(wanted).to_numpy())


def keep_entry(samples, n_input: int, n_selected: int, *, paired: bool) -> dict:
    """The ``filter_log`` entry of ``--keep``: the individuals it left out.

    Parameters
    ----------
    samples : sequence of str
        The ``--keep`` IDs (with a ``source`` attribute naming the file,
        when read from one).
    n_input, n_selected : int
        Individuals in the input, and those ``samples`` selected.
    paired : bool
        Whether (FID, IID) pairs were matched (else IIDs).

    Examples
    --------
    >>> keep_entry(["a", "b"], 5, 2, paired=False)["reason"]
    'not among the 2 IDs of the keep list, matched by IID'
    """
    source = getattr(samples, "source", None)
    named = "the keep list" if source is None else f"--keep {source}"
    matched = "FID and IID" if paired else "IID"
    return {"filter": "keep", "unit": "individuals",
            "removed": int(n_input - n_selected),
            "reason": f"not among the {len(samples)} IDs of {named}, matched by "
                      f"{matched}"}


def _pasted_id_hint(ids: np.ndarray, sample: str) -> str:
    """A hint where the file names ``sample`` as ``FID_IID``, as plink2's VCFs do.

    Examples
    --------
    >>> _pasted_id_hint(np.array(["f1_a", "f2_b"]), "a")[:22]
    "; the file has 'f1_a',"
    >>> _pasted_id_hint(np.array(["a"]), "b")
    ''
    """
    pasted = ids[np.char.endswith(ids, "_" + str(sample))]
    if len(pasted) == 0:
        return ""
    return (f"; the file has {str(pasted[0])!r}, as plink2 --export vcf names FID_IID: "
            "give the file's names, or export with id-paste=iid")


def is_snp_allele(alleles: pd.Series) -> np.ndarray:
    """Which alleles are one base (not ``*``, ``-`` or ``.``): a SNP's alleles.

    Parameters
    ----------
    alleles : pandas.Series of str

    Returns
    -------
    numpy.ndarray, bool
    """
    values = alleles.to_numpy(dtype=str)
    return (np.char.str_len(values) == 1) & ~np.isin(values, ["*", "-", "."])


# --------------------------------------------------------------------------- writes


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
    with temporary_beside(path, mode, encoding) as (handle, temporary):
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
            with temporary_beside(path, "w", "utf-8") as (handle, temporary):
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
def temporary_beside(path, mode: str = "w", encoding: str | None = "utf-8", *,
                     suffix: str = ".tmp"):
    """Yield ``(handle, temporary path)`` for a new hidden file in ``path``'s folder.

    The file is created with mode ``0o666`` less the umask, as ``open`` would
    create ``path`` itself. On success it is flushed and synced to disk and
    left for the caller to rename over ``path`` (after, say, indexing it); on
    failure it is removed. An ``OSError`` names ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        The final destination.
    mode : {"w", "wb"}
    encoding : str, optional
        Text encoding (text mode).
    suffix : str
        End of the temporary file's name.
    """
    if mode not in ("w", "wb"):
        raise UsageError(f"mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    with _naming(path):
        fd, temporary = _create_new(folder, f".{path.name}.", suffix)
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
    except BaseException:
        _discard(temporary)
        raise


def _create_new(folder: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """Open a file of a new random name for writing; the kernel applies the umask.

    (``tempfile.mkstemp`` makes its files ``0o600``, and reading the umask to
    widen them means setting it, for the whole process, for a moment.)
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        name = folder / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(name, flags, 0o666), str(name)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))


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


def write_text(path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`write_all_or_none`)."""
    write_all_or_none({path: text})


def format_json(obj) -> str:
    """``obj`` as indented JSON text; NumPy scalars and arrays become plain values.

    NaN and infinities become ``null``: JSON has no such numbers, and Python's
    ``NaN`` tokens make strict parsers (``jq``, JavaScript, R's jsonlite)
    refuse the whole file.

    Examples
    --------
    >>> text = format_json({"error": float("nan"), "folds": np.array([0.5, np.inf])})
    >>> json.loads(text)
    {'error': None, 'folds': [0.5, None]}
    """
    return json.dumps(_plain(obj), indent=2, allow_nan=False) + "\n"


def _plain(value):
    """``value`` with NumPy values made plain and non-finite floats None, recursively."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(item) for item in (value.tolist() if isinstance(value, np.ndarray)
                                          else value)]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


def write_json(path, obj) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically (:func:`format_json`)."""
    write_text(path, format_json(obj))
