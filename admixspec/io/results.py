"""Readers for what sits next to a run's Q files: population labels and run logs.

* :func:`read_population_labels` — one population label per individual, from
  an ADMIXTURE ``.pop`` file (one label per line, in Q row order), a PLINK
  ``.fam`` (its family column) or a CSV/TSV table of sample ID → population.
* :func:`find_runs` — the ``PREFIX.K.Q`` files of one run over a K range;
  :func:`earlier_outputs` — one K's optional files that an earlier run of
  the prefix left (``run`` removes them once its own are written).
* :func:`read_run_log` — log-likelihood and CV error from an ADMIXTURE-style
  ``PREFIX.K.log`` (or ADMIXTURE's own stdout log).
* :func:`check_q_rows` — that a Q file's rows are proportions, summing to 1
  (a ``.P`` file's rows do not); :func:`read_ancestry_q` reads and checks one.
* :func:`read_run_record` — ``PREFIX.K.json``, checked: a JSON object whose
  fields have the types ``admixspec run`` writes.
* :func:`recorded_sample_ids` — the sample IDs of a run's individuals, from
  the files beside its Q files.
* :func:`summarize_runs` — one table row per K: log-likelihood, CV error,
  wall time, and which K has the lowest CV error.
"""

from __future__ import annotations

import csv
import glob
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.exceptions import InputError, UsageError
from .vcf import read_vcf_samples

__all__ = [
    "check_q_rows",
    "find_runs",
    "read_ancestry_q",
    "read_population_labels",
    "read_run_log",
    "read_run_record",
    "read_sample_ids",
    "recorded_sample_ids",
    "summarize_runs",
]

_ID_COLUMNS = ("sample_id", "sample", "id", "iid", "individual", "ind")
_POP_COLUMNS = ("population", "pop", "label", "group", "cluster")
_LOGLIK = re.compile(r"^\s*Loglikelihood:\s*(\S+)", re.MULTILINE)
_CV = re.compile(r"CV error \(K\s*=\s*(\d+)\)\s*:\s*(\S+)")
_Q_NAME = re.compile(r"^(?P<prefix>.*)\.(?P<K>\d+)\.Q$")


def _read_lines(path: Path) -> list[str]:
    try:
        # utf-8-sig: a spreadsheet's "CSV UTF-8" starts with a byte-order mark,
        # which would otherwise be part of the first header name
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read file ({err})", path=path) from None
    return [line for line in text.splitlines() if line.strip()]


def _split_table(lines: list[str]) -> list[list[str]]:
    """A label table's fields: tab- or comma-separated as CSV (a quoted field
    may hold the separator: ``"Luhya in Webuye, Kenya"``), else by whitespace."""
    sep = "\t" if "\t" in lines[0] else ("," if "," in lines[0] else None)
    if sep is None:
        return [line.split() for line in lines]
    return [[field.strip() for field in row]
            for row in csv.reader(lines, delimiter=sep)]


def _look_up(path: Path, keys: list[str], values, sample_ids, what: str,
             first_line: int) -> np.ndarray:
    """``values[i]`` of the row whose ``keys[i]`` is each sample ID, in ID order.

    An ID listed twice with two different values is refused: which one is
    meant cannot be told (rows listing the IDs in Q row order are taken as
    they are, repeated IDs included).
    """
    values = np.asarray(values, dtype=str)
    keys = np.asarray(keys, dtype=str)
    sample_ids = np.asarray(sample_ids, dtype=str)
    if np.array_equal(keys, sample_ids):
        return values
    codes, distinct = pd.factorize(keys)
    # codes number the keys in order of first appearance: np.unique's indices
    # are then each key's first row
    first_row = np.unique(codes, return_index=True)[1]
    seen = first_row[codes]
    conflict = (values[seen] != values) & np.isin(keys, sample_ids)
    if conflict.any():
        row = int(np.flatnonzero(conflict)[0])
        raise InputError(
            f"sample {keys[row]} is listed twice, on lines {seen[row] + first_line} "
            f"and {row + first_line}, with {what} {str(values[seen[row]])!r} and "
            f"{str(values[row])!r}", path=path)
    found = pd.Index(distinct).get_indexer(sample_ids)
    if (found < 0).any():
        missing = sample_ids[found < 0].tolist()
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise InputError(
            f"{len(missing)} sample(s) have no population label: {shown}", path=path
        )
    return values[first_row[found]]


def _table_labels(path: Path, lines: list[str], sample_ids) -> np.ndarray:
    rows = _split_table(lines)
    header = [name.lower() for name in rows[0]]
    id_col = next((header.index(c) for c in _ID_COLUMNS if c in header), None)
    pop_col = next((header.index(c) for c in _POP_COLUMNS if c in header), None)
    if id_col is None or pop_col is None:
        raise InputError(
            "label table needs a header naming a sample column "
            f"({'/'.join(_ID_COLUMNS)}) and a population column "
            f"({'/'.join(_POP_COLUMNS)}); found {rows[0]}",
            path=path,
            line=1,
        )
    body = rows[1:]
    for number, row in enumerate(body, start=2):
        if len(row) <= max(id_col, pop_col):
            raise InputError(f"expected {len(header)} fields", path=path, line=number)
    if sample_ids is None:
        # a table names its samples and may list them in any order: reading its
        # rows as Q rows would silently give individuals their neighbours' labels
        raise InputError(
            f"the label table names samples in its {rows[0][id_col]!r} column, but "
            "there are no sample IDs in Q row order to look them up by: give the "
            "run's .fam, .bed, .psam or VCF as the sample IDs (--ids) or, where "
            "--keep or --mind removed individuals, the kept IDs in the input's order",
            path=path,
        )
    return _look_up(path, [row[id_col] for row in body], [row[pop_col] for row in body],
                    sample_ids, "populations", 2)


def read_population_labels(path, *, sample_ids=None) -> np.ndarray:
    """Read one population label per individual.

    The format follows the file: ``*.fam`` → the PLINK family column (column 1);
    ``*.csv``/``*.tsv`` or any file whose first line has a header with a sample
    column (``sample_id``, ``sample``, ``id``, ``IID``...) and a population
    column (``population``, ``pop``, ``label``...) → a lookup table; anything
    else (``*.pop``, ``*.txt``) → one label per line in Q row order, as in
    ADMIXTURE's supervised mode (``-`` marks an unknown individual and is kept
    as the label ``-``).

    Parameters
    ----------
    path : str or os.PathLike
        The label file.
    sample_ids : sequence of str, optional
        Sample IDs in Q row order. A table is looked up by them, and cannot
        be read without them; a ``.fam`` is looked up by its IID column when
        they are given.

    Returns
    -------
    numpy.ndarray of str, shape (n_individuals,)

    Raises
    ------
    InputError
        Missing file, malformed table, a table without ``sample_ids``, or a
        sample without a label.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "labels.tsv"
    >>> _ = p.write_text("sample_id\\tpopulation\\nA\\tYRI\\nB\\tCEU\\n")
    >>> read_population_labels(p, sample_ids=["B", "A"]).tolist()
    ['CEU', 'YRI']
    """
    path = Path(path)
    lines = _read_lines(path)
    if not lines:
        raise InputError("label file is empty", path=path)
    suffix = path.suffix.lower()
    if suffix == ".fam":
        fields = [line.split() for line in lines]
        for number, row in enumerate(fields, start=1):
            if len(row) < 2:
                raise InputError(
                    ".fam line has fewer than 2 fields", path=path, line=number
                )
        labels = np.array([row[0] for row in fields], dtype=str)
        if sample_ids is not None:
            labels = _look_up(path, [row[1] for row in fields], labels, sample_ids,
                              "families", 1)
        return labels
    first = re.split(r"[\t,]|\s+", lines[0].strip())
    looks_like_table = suffix in (".csv", ".tsv") or (
        len(first) >= 2
        and any(f.lower() in _ID_COLUMNS for f in first)
        and any(f.lower() in _POP_COLUMNS for f in first)
    )
    if looks_like_table:
        return _table_labels(path, lines, sample_ids)
    labels = np.array([line.strip() for line in lines], dtype=str)
    if sample_ids is not None:
        _check_not_keyed(path, lines, sample_ids)
    if sample_ids is not None and len(sample_ids) != len(labels):
        raise InputError(
            f"{len(labels)} labels for {len(sample_ids)} individuals", path=path
        )
    return labels


def _check_not_keyed(path: Path, lines: list[str], sample_ids) -> None:
    """Refuse "one label per line" whose lines name samples: a table without
    a header (``ID POP``, PLINK's ``FID IID CLUSTER``), where each whole line
    would be taken as a population and each individual would be its own."""
    ids = {str(s) for s in sample_ids}
    words = [line.split() for line in lines]
    for column in (0, 1):
        if all(len(row) > column + 1 and row[column] in ids for row in words):
            raise InputError(
                f"each line names a sample in word {column + 1} ({lines[0].strip()!r}"
                "): a label table needs a header line naming its sample and "
                "population columns, e.g. 'sample_id population'", path=path, line=1)


def read_sample_ids(path) -> np.ndarray:
    """Sample IDs in Q row order, from the run's input or a list of IDs.

    Parameters
    ----------
    path : str or os.PathLike
        A PLINK ``.fam`` (its IID column) or ``.bed`` (its sibling ``.fam``),
        a PLINK 2 ``.psam`` or ``.pgen``/``.pvar`` (the fileset's ``.psam``,
        its IID column), a PLINK fileset's prefix (its ``.fam``, else its
        ``.psam``), a VCF/VCF.gz/BCF (the header's samples), or a text
        file with one ID per line, or PLINK's ``FID IID`` per line (the
        second column, as ``run --keep`` reads it; lines starting with ``#``
        are skipped).

    Returns
    -------
    numpy.ndarray of str, shape (n_individuals,)

    Raises
    ------
    InputError
        A missing or unreadable file; a VCF whose header names a sample twice
        (:func:`admixspec.io.vcf.read_vcf_samples`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.fam"
    >>> _ = p.write_text("F1 s1 0 0 0 -9\\nF2 s2 0 0 0 -9\\n")
    >>> read_sample_ids(p).tolist()
    ['s1', 's2']
    """
    path = Path(path)
    if not path.exists():  # a PLINK fileset's prefix, as run takes its input
        path = next((Path(f"{path}{suffix}") for suffix in (".fam", ".psam")
                     if Path(f"{path}{suffix}").is_file()), path)
    name = path.name.lower()
    if name.endswith(".bed"):
        path = path.with_suffix(".fam")
        name = path.name.lower()
    if name.endswith((".vcf", ".vcf.gz", ".vcf.bgz", ".bcf")):
        return read_vcf_samples(path)
    if name.endswith((".pgen", ".pvar", ".psam")):
        from .pgen import read_psam

        return read_psam(path.with_suffix(".psam"))["IID"].to_numpy(dtype=str)
    lines = _read_lines(path)
    if name.endswith(".fam"):
        fields = [line.split() for line in lines]
        for number, row in enumerate(fields, start=1):
            if len(row) < 2:
                raise InputError(
                    ".fam line has fewer than 2 fields", path=path, line=number
                )
        return np.array([row[1] for row in fields], dtype=str)
    rows = [line.split() for line in lines if not line.lstrip().startswith("#")]
    return np.array([row[1] if len(row) == 2 else row[0] for row in rows], dtype=str)


def recorded_sample_ids(q_paths, n: int) -> np.ndarray | None:
    """Sample IDs in Q row order, from the files beside a run's Q files.

    For each ``PREFIX.K.Q`` in turn, the first of these that holds ``n``
    sample IDs: the IDs ``PREFIX.K.json`` lists (a run whose ``--keep`` or
    ``--mind`` chose its individuals), the input that ``PREFIX.K.json``
    records (:func:`read_sample_ids`; as written, i.e. from the working
    directory, and relative to the Q file's folder: where both hold ``n``
    IDs, they must be the same),
    and ``PREFIX.fam`` (ADMIXTURE names its outputs after its input:
    ``data.bed`` gives ``data.K.Q``).

    Parameters
    ----------
    q_paths : sequence of str or os.PathLike
        The run's ``PREFIX.K.Q`` files.
    n : int
        Number of individuals (rows of Q).

    Returns
    -------
    numpy.ndarray of str, shape (n,), or None
        None when no such file is found.

    Raises
    ------
    InputError
        A ``PREFIX.K.json`` that is not a run record (:func:`read_run_record`),
        or a recorded input that names two files of ``n`` samples with
        different IDs (from here and from the Q file's folder).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "data.fam").write_text("F1 s1 0 0 0 -9\\nF2 s2 0 0 0 -9\\n")
    >>> recorded_sample_ids([d / "data.3.Q"], 2).tolist()
    ['s1', 's2']
    >>> recorded_sample_ids([d / "data.3.Q"], 5) is None
    True
    """
    for q_path in map(Path, q_paths):
        match = _Q_NAME.match(q_path.name)
        if match is None:
            continue
        record = _record_beside(q_path)
        kept = record.get("samples")  # the IDs a --keep or --mind kept
        if kept is not None and len(kept) == n:
            return np.asarray(kept, dtype=str)
        for candidates in _id_sources(q_path, match.group("prefix"), record):
            found = {}
            for candidate in candidates:
                try:
                    ids = read_sample_ids(candidate)
                except InputError:  # absent or unreadable: try the next
                    continue
                if len(ids) == n:
                    found.setdefault(tuple(ids.tolist()), candidate)
            if len(found) > 1:
                # the recorded input, from here and from the Q file's folder:
                # two files of other samples, and nothing to say which was run
                first, second = found.values()
                raise InputError(
                    f"the run's input, recorded as {candidates[0]}, may be {first} "
                    f"or {second}, whose sample IDs differ: give the sample IDs in "
                    "Q row order (--ids)", path=q_path)
            if found:
                return np.array(next(iter(found)), dtype=str)
    return None


def _record_beside(q_path: Path) -> dict:
    """``PREFIX.K.json`` beside ``PREFIX.K.Q`` (:func:`read_run_record`), or {}."""
    json_path = q_path.with_name(q_path.name[: -len(".Q")] + ".json")
    return read_run_record(json_path) if json_path.is_file() else {}


def _id_sources(q_path: Path, prefix: str, record: dict):
    """Files that may hold the sample IDs of ``PREFIX.K.Q``, most telling first,
    in lists of the places one recorded name may be."""
    source = record.get("input")
    if source:
        # as written (from here), and from the Q file's folder
        yield [Path(source), q_path.parent / source]
    yield [q_path.with_name(prefix + ".fam")]


def read_ancestry_q(path, *, K: int | None = None) -> np.ndarray:
    """Read a Q file (:func:`admixspec.io.admixture.read_q`) and check it is one.

    Parameters
    ----------
    path : str or os.PathLike
        The Q file.
    K : int, optional
        The number of columns it must have: the K of its name
        ``PREFIX.K.Q``.

    Returns
    -------
    numpy.ndarray, float, shape (n_individuals, K)

    Raises
    ------
    InputError
        Unreadable, a row that does not sum to 1 (:func:`check_q_rows`), or
        a column count other than ``K``.
    """
    from .admixture import read_q

    Q = read_q(path)
    if K is not None and Q.shape[1] != K:
        raise InputError(f"has {Q.shape[1]} columns, expected K = {K}", path=path)
    check_q_rows(Q, path)
    return Q


def check_q_rows(Q: np.ndarray, path) -> None:
    """Refuse a matrix read from a Q file unless each row sums to 1.

    Every row of Q holds one individual's ancestry proportions, which sum to
    1 up to the rounding of the file. ``.Q`` files are written with 6
    decimals (ADMIXTURE, admixspec: at most K x 5e-7 off, or K x 1e-5 after
    clamping to ``[1e-5, 1 - 1e-5]``), some tools' with 3 (STRUCTURE via
    CLUMPP: K x 5e-4); so a row may be off by ``max(1e-3, K * 5e-4)``. The
    rows of a ``.P`` file (allele frequencies) or of a file of noise do not
    sum to 1.

    Parameters
    ----------
    Q : numpy.ndarray, float, shape (n_individuals, K)
        As :func:`admixspec.io.admixture.read_q` read it (values in [0, 1]).
    path : str or os.PathLike
        The file it was read from, for the message.

    Raises
    ------
    InputError
        Naming the file and its first row whose sum is not 1.

    Examples
    --------
    >>> check_q_rows(np.array([[0.25, 0.75], [0.5, 0.5]]), "r.2.Q")
    >>> check_q_rows(np.array([[0.25, 0.75], [0.9, 0.9]]), "r.2.Q")
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.InputError: r.2.Q: row 2 sums to 1.8, not 1: not a
    Q matrix of ancestry proportions (a .P file's rows do not sum to 1)
    """
    tolerance = max(1e-3, Q.shape[1] * 5e-4)
    bad = np.flatnonzero(np.abs(Q.sum(axis=1) - 1) > tolerance)
    if bad.size:
        row = int(bad[0])
        raise InputError(
            f"row {row + 1} sums to {Q[row].sum():.6g}, not 1: not a Q matrix of "
            "ancestry proportions (a .P file's rows do not sum to 1)",
            path=path,
        )


def find_runs(prefix) -> list[tuple[int, Path]]:
    """Locate the ``PREFIX.K.Q`` files of a run, in numeric K order.

    Parameters
    ----------
    prefix : str or os.PathLike
        The ``--out`` prefix given to ``admixspec run`` (or ADMIXTURE's
        input basename).

    Returns
    -------
    list of (int, pathlib.Path)
        ``(K, path)`` pairs sorted by K; empty when nothing matches.

    Examples
    --------
    >>> find_runs("/nonexistent/prefix")
    []
    """
    prefix = Path(prefix)
    folder = prefix.parent if str(prefix.parent) else Path(".")
    if not folder.is_dir():
        return []
    found = []
    # escaped: a prefix such as run[1] is a name, not a pattern
    for candidate in folder.glob(glob.escape(prefix.name) + ".*.Q"):
        match = _Q_NAME.match(candidate.name)
        if match and match.group("prefix") == prefix.name:
            found.append((int(match.group("K")), candidate))
    return sorted(found)


#: What ``admixspec run`` writes for one K only with some flags: ``--runs``
#: (the table; each minor mode's ``PREFIX.K.mode<M>.Q`` too), ``-B`` and
#: ``--reference-size``.
OPTIONAL_OUTPUTS = ("modes.tsv", "Q_se", "Q_bias", "ref")


def earlier_outputs(prefix, K: int, written) -> list[Path]:
    """One K's optional outputs left by an earlier run, which ``written`` lacks.

    A run rewrites ``PREFIX.K.Q``, ``.P``, ``.log`` and ``.json``; an earlier
    run's ``PREFIX.K.modes.tsv``, ``PREFIX.K.mode<M>.Q`` (``--runs`` that
    found more modes), ``PREFIX.K.Q_se``, ``PREFIX.K.Q_bias`` or
    ``PREFIX.K.ref`` would stay beside them, describing a Q that is gone.
    Only files of exactly these names (``M`` a number 1, 2, ...) are listed.

    Parameters
    ----------
    prefix : str or os.PathLike
        The run's ``--out`` prefix.
    K : int
    written : iterable of str or os.PathLike
        The files this run wrote for this K (in the prefix's folder).

    Returns
    -------
    list of pathlib.Path
        Existing files, the fixed names first, then the mode files by ``M``.

    Examples
    --------
    >>> earlier_outputs("/nonexistent/prefix", 3, [])
    []
    """
    prefix = Path(prefix)
    folder = prefix.parent if str(prefix.parent) else Path(".")
    name = f"{prefix.name}.{int(K)}."
    mode_q = re.compile(re.escape(name) + r"mode([1-9][0-9]*)\.Q")
    modes = []
    if folder.is_dir():
        for candidate in folder.glob(glob.escape(name) + "mode*.Q"):
            match = mode_q.fullmatch(candidate.name)
            if match:
                modes.append((int(match.group(1)), folder / candidate.name))
    current = {Path(path).name for path in written}
    candidates = [folder / f"{name}{kind}" for kind in OPTIONAL_OUTPUTS]
    candidates += [path for _, path in sorted(modes)]
    return [path for path in candidates
            if path.name not in current and (path.is_file() or path.is_symlink())]


def select_runs(prefix, Ks=None) -> list[tuple[int, Path]]:
    """The ``PREFIX.K.Q`` files of the K asked for (:func:`find_runs`, filtered).

    Parameters
    ----------
    prefix : str or os.PathLike
        The run's ``--out`` prefix.
    Ks : sequence of int, optional
        Only these K (default: every ``PREFIX.K.Q`` found); each must have
        its file.

    Returns
    -------
    list of (int, pathlib.Path)
        ``(K, path)`` pairs sorted by K, never empty.

    Raises
    ------
    InputError
        When no ``PREFIX.K.Q`` is found, or a K of ``Ks`` has none (naming
        the missing K and the K that exist).
    UsageError
        When ``Ks`` is empty.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for K in (2, 3):
    ...     _ = (d / f"r.{K}.Q").write_text("0.5 0.5\\n")
    >>> [K for K, _ in select_runs(d / "r", Ks=[3])]
    [3]
    >>> select_runs(d / "r", Ks=[3, 7])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.InputError: no .../r.7.Q (found K = 2, 3 for .../r)
    """
    runs = find_runs(prefix)
    if not runs:
        raise InputError("no PREFIX.K.Q files found" + _prefix_hint(prefix),
                         path=f"{prefix}.*.Q")
    if Ks is None:
        return runs
    wanted = {int(K) for K in Ks}
    if not wanted:
        raise UsageError("Ks is empty: give at least one K, or None for every K")
    found = {K for K, _ in runs}
    missing = sorted(wanted - found)
    if missing:
        # the run exists: say which K it has, not that nothing is there
        asked = (f"{prefix}.{missing[0]}.Q" if len(missing) == 1
                 else f"{prefix}.K.Q for K = {k_values(missing)}")
        raise InputError(f"no {asked} (found K = {k_values(found)} for {prefix})")
    return [(K, path) for K, path in runs if K in wanted]


def _prefix_hint(prefix) -> str:
    """What to give instead of a run's file or input, where it names one."""
    path = Path(prefix)
    for name in (path.name, path.stem):  # r.3.Q, r.3.log; or the input data.bed
        match = _Q_NAME.match(Path(name).with_suffix(".Q").name)
        stem = match.group("prefix") if match else name
        if stem != path.name and find_runs(path.with_name(stem)):
            return f": give the run's prefix, {path.with_name(stem)}"
    return ""


def k_values(Ks) -> str:
    """K values for a message, in increasing order, each once.

    Parameters
    ----------
    Ks : iterable of int

    Returns
    -------
    str
        ``2, 3`` or, for a run of three or more consecutive K, ``2-6``.

    Examples
    --------
    >>> k_values([7, 2, 3, 4, 9, 3])
    '2-4, 7, 9'
    """
    Ks = sorted({int(K) for K in Ks})
    parts, start = [], 0
    for end in range(1, len(Ks) + 1):
        if end == len(Ks) or Ks[end] != Ks[end - 1] + 1:
            run = Ks[start:end]
            parts += [f"{run[0]}-{run[-1]}"] if len(run) > 2 else map(str, run)
            start = end
    return ", ".join(parts)


def read_run_log(path) -> dict:
    """Parse an ADMIXTURE-style log.

    Parameters
    ----------
    path : str or os.PathLike
        ``PREFIX.K.log`` written by ``admixspec run``, or ADMIXTURE's stdout.

    Returns
    -------
    dict
        ``loglik`` (float or None: the last ``Loglikelihood:`` line, i.e. the
        final one), ``cv_errors`` (dict K → CV error, possibly empty).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.3.log"
    >>> _ = p.write_text("Loglikelihood: -12.5\\nCV error (K=3): 0.51\\n")
    >>> read_run_log(p)
    {'loglik': -12.5, 'cv_errors': {3: 0.51}}
    """
    path = Path(path)
    text = "\n".join(_read_lines(path))
    logliks = _LOGLIK.findall(text)
    loglik = None
    if logliks:
        try:
            loglik = float(logliks[-1])
        except ValueError:
            raise InputError(
                f"bad Loglikelihood value {logliks[-1]!r}", path=path
            ) from None
    cv = {}
    for K, value in _CV.findall(text):
        try:
            cv[int(K)] = float(value)
        except ValueError:
            raise InputError(f"bad CV error value {value!r}", path=path) from None
    return {"loglik": loglik, "cv_errors": cv}


#: The fields of ``PREFIX.K.json`` that ``summary`` and ``report`` read, and
#: what each must be where present and not null (null: unknown); other
#: fields are not read. (Other tools' names for the same facts included.)
_LOGLIK_KEYS = ("loglik", "loglikelihood", "log_likelihood")
_CV_KEYS = ("cv_error", "cv")
_SECONDS_KEYS = ("wall_time", "elapsed", "total_seconds", "seconds")
_STAGES_KEYS = ("timings", "timing", "times", "stage_seconds")
_RECORD_FIELDS = {
    **dict.fromkeys(_LOGLIK_KEYS + _CV_KEYS + _SECONDS_KEYS, "a number"),
    **dict.fromkeys(("K", "n_iter", "n_individuals", "n_snps", "seed"), "an integer"),
    **dict.fromkeys(("path", "input", "command", "version"), "a string"),
    **dict.fromkeys(_STAGES_KEYS + ("diagnostics", "modes"), "an object"),
    "converged": "true or false",
    "filters": "an array",
}

#: What each kind of field accepts (a bool is a Python int, and not a count).
_KINDS = {
    "a number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "an integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "a string": lambda v: isinstance(v, str),
    "an object": lambda v: isinstance(v, dict),
    "an array": lambda v: isinstance(v, list),
    "true or false": lambda v: isinstance(v, bool),
}


def _json_kind(value) -> str:
    """What a parsed JSON value is, in JSON's words."""
    if value is None:
        return "null"
    return next(kind for kind in ("true or false", "a number", "a string", "an object",
                                  "an array") if _KINDS[kind](value))


def _check_field(path: Path, where: str, value, kind: str) -> None:
    if value is not None and not _KINDS[kind](value):
        raise InputError(f"not an admixspec run record: {where} must be {kind}, "
                         f"found {_json_kind(value)}", path=path)


def _check_record(path: Path, record) -> None:
    """Refuse a record that summary or report would misread (or crash on)."""
    if not isinstance(record, dict):
        raise InputError("is not an admixspec run record: expected a JSON object, "
                         f"found {_json_kind(record)}", path=path)
    for key, kind in _RECORD_FIELDS.items():
        _check_field(path, f'"{key}"', record.get(key), kind)
    for number, item in enumerate(record.get("filters") or []):
        _check_field(path, f'"filters"[{number}]', item, "an object")
    runs = (record.get("modes") or {}).get("runs")
    _check_field(path, '"modes"."runs"', runs, "an array")
    for number, run in enumerate(runs or []):
        where = f'"modes"."runs"[{number}]'
        _check_field(path, where, run, "an object")
        _check_field(path, where + '."loglik"', run.get("loglik"), "a number")
        _check_field(path, where + '."mode"', run.get("mode"), "an integer")


def read_run_record(path, *, K: int | None = None) -> dict:
    """Read a run's JSON record, ``PREFIX.K.json``, checking what is read from it.

    Parameters
    ----------
    path : str or os.PathLike
        The record, as ``admixspec run`` writes it.
    K : int, optional
        The K of the file's name, which the record's ``K`` (when present)
        must match.

    Returns
    -------
    dict
        The record. Every field that ``summary`` or ``report`` reads is absent,
        null or of the type ``admixspec run`` writes.

    Raises
    ------
    InputError
        A missing or unparsable file, JSON other than an object, a field of
        the wrong type, or a ``K`` other than ``K``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.2.json"
    >>> _ = p.write_text('{"K": 2, "loglik": -12.5}')
    >>> read_run_record(p, K=2)
    {'K': 2, 'loglik': -12.5}
    >>> _ = p.write_text("[1, 2]")
    >>> read_run_record(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.InputError: ...: expected a JSON object, found an array
    """
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except (OSError, ValueError) as err:  # ValueError: bad JSON or bad UTF-8
        raise InputError(f"cannot parse JSON ({err})", path=path) from None
    _check_record(path, record)
    if K is not None and record.get("K") not in (None, K):
        raise InputError(f"records K = {record['K']}, but its name says K = {K}",
                         path=path)
    return record


def _first_number(record: dict, keys) -> float | None:
    """The first of ``keys`` the record holds (:func:`read_run_record` checked them)."""
    return next((float(record[key]) for key in keys if record.get(key) is not None),
                None)


def _json_seconds(record: dict) -> float | None:
    seconds = _first_number(record, _SECONDS_KEYS)
    if seconds is not None:
        return seconds
    for key in _STAGES_KEYS:
        stages = record.get(key)
        if isinstance(stages, dict):
            if isinstance(stages.get("total"), (int, float)):
                return float(stages["total"])
            values = [v for v in stages.values() if isinstance(v, (int, float))]
            if values:
                return float(sum(values))
    return None


def summarize_runs(prefix, *, Ks=None):
    """Tabulate a run over a K range: estimator, log-likelihood, CV error, time, best K.

    Reads ``PREFIX.K.log`` (and ``PREFIX.K.json`` when present, for the
    estimator and the timing) next to every ``PREFIX.K.Q``.

    Parameters
    ----------
    prefix, Ks
        As :func:`select_runs`'s: the run's ``--out`` prefix, and the K to
        tabulate (default every ``PREFIX.K.Q`` found).

    Returns
    -------
    pandas.DataFrame
        One row per K, columns ``K``, ``estimator`` (the fit's path, e.g.
        ``spectral`` or ``spectral+ml``: a spectral estimate's log-likelihood
        is below what maximum likelihood reaches on the same K), ``loglik``,
        ``cv_error``, ``seconds`` (None or NaN where unknown, e.g. for
        ADMIXTURE's own files) and ``best`` (True on the row with the lowest CV
        error; all False without CV).

    Raises
    ------
    InputError
        When no ``PREFIX.K.Q`` exists, or a K of ``Ks`` has none
        (:func:`select_runs`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for K, cv in [(2, 0.6), (3, 0.5)]:
    ...     _ = (d / f"r.{K}.Q").write_text("0.5 0.5\\n")
    ...     _ = (d / f"r.{K}.log").write_text(
    ...         f"Loglikelihood: -{K}\\nCV error (K={K}): {cv}\\n")
    >>> summarize_runs(d / "r")[["K", "cv_error", "best"]].values.tolist()
    [[2, 0.6, False], [3, 0.5, True]]
    """
    runs = select_runs(prefix, Ks)
    rows = []
    for K, q_path in runs:
        base = str(q_path)[: -len(".Q")]
        log_path = Path(base + ".log")
        json_path = Path(base + ".json")
        info = read_run_log(log_path) if log_path.exists() else {"cv_errors": {}}
        record = read_run_record(json_path, K=K) if json_path.exists() else {}
        loglik = info.get("loglik")
        if loglik is None:
            loglik = _first_number(record, _LOGLIK_KEYS)
        cv = info["cv_errors"].get(K)
        if cv is None:
            cv = _first_number(record, _CV_KEYS)
        seconds = _json_seconds(record)
        path = record.get("path")
        rows.append(
            {
                "K": K,
                "estimator": path if isinstance(path, str) else None,
                "loglik": math.nan if loglik is None else loglik,
                "cv_error": math.nan if cv is None else cv,
                "seconds": math.nan if seconds is None else seconds,
            }
        )
    table = pd.DataFrame(rows,
                         columns=["K", "estimator", "loglik", "cv_error", "seconds"])
    table["best"] = False
    if table["cv_error"].notna().any():
        table.loc[table["cv_error"].idxmin(), "best"] = True
    return table
