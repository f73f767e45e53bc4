"""Readers for what sits next to a run's Q files: population labels and run logs.

* :func:`read_population_labels` — one population label per individual, from
  an ADMIXTURE ``.pop`` file (one label per line, in Q row order), a PLINK
  ``.fam`` (its family column) or a CSV/TSV table of sample ID → population.
* :func:`find_runs` — the ``PREFIX.K.Q`` files of one run over a K range.
* :func:`read_run_log` — log-likelihood and CV error from an ADMIXTURE-style
  ``PREFIX.K.log`` (or ADMIXTURE's own stdout log).
* :func:`summarize_runs` — one table row per K: log-likelihood, CV error,
  wall time, and which K has the lowest CV error.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from ..core.exceptions import InputError

__all__ = [
    "find_runs",
    "read_population_labels",
    "read_run_log",
    "read_sample_ids",
    "summarize_runs",
]

_ID_COLUMNS = ("sample_id", "sample", "id", "iid", "individual", "ind")
_POP_COLUMNS = ("population", "pop", "label", "group", "cluster")
_LOGLIK = re.compile(r"^\s*Loglikelihood:\s*(\S+)", re.MULTILINE)
_CV = re.compile(r"CV error \(K\s*=\s*(\d+)\)\s*:\s*(\S+)")
_Q_NAME = re.compile(r"^(?P<prefix>.*)\.(?P<K>\d+)\.Q$")


def _read_lines(path: Path) -> list[str]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read file ({err})", path=path) from None
    return [line for line in text.splitlines() if line.strip()]


def _table_labels(path: Path, lines: list[str], sample_ids) -> np.ndarray:
    sep = "\t" if "\t" in lines[0] else ("," if "," in lines[0] else None)
    rows = [[field.strip() for field in line.split(sep)] for line in lines]
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
        return np.array([row[pop_col] for row in body], dtype=str)
    mapping = {row[id_col]: row[pop_col] for row in body}
    missing = [s for s in map(str, sample_ids) if s not in mapping]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise InputError(
            f"{len(missing)} sample(s) have no population label: {shown}", path=path
        )
    return np.array([mapping[s] for s in map(str, sample_ids)], dtype=str)


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
        Sample IDs in Q row order. Needed to look a table up by ID; without
        them a table's rows are taken to be in Q row order.

    Returns
    -------
    numpy.ndarray of str, shape (n_individuals,)

    Raises
    ------
    InputError
        Missing file, malformed table, or a sample without a label.

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
            by_id = dict(zip((row[1] for row in fields), labels, strict=True))
            missing = [s for s in map(str, sample_ids) if s not in by_id]
            if missing:
                raise InputError(
                    f"{len(missing)} sample(s) not in the .fam, e.g. {missing[0]}",
                    path=path,
                )
            labels = np.array([by_id[s] for s in map(str, sample_ids)], dtype=str)
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
    if sample_ids is not None and len(sample_ids) != len(labels):
        raise InputError(
            f"{len(labels)} labels for {len(sample_ids)} individuals", path=path
        )
    return labels


def read_sample_ids(path) -> np.ndarray:
    """Sample IDs in Q row order, from the run's input or a list of IDs.

    Parameters
    ----------
    path : str or os.PathLike
        A PLINK ``.fam`` (its IID column) or ``.bed`` (its sibling ``.fam``),
        a VCF/VCF.gz/BCF (the header's samples), or a text file with one ID
        per line.

    Returns
    -------
    numpy.ndarray of str, shape (n_individuals,)

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.fam"
    >>> _ = p.write_text("F1 s1 0 0 0 -9\\nF2 s2 0 0 0 -9\\n")
    >>> read_sample_ids(p).tolist()
    ['s1', 's2']
    """
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".bed"):
        path = path.with_suffix(".fam")
        name = path.name.lower()
    if name.endswith((".vcf", ".vcf.gz", ".vcf.bgz", ".bcf")):
        if not path.is_file():
            raise InputError("file not found", path=path)
        from cyvcf2 import VCF

        try:
            vcf = VCF(str(path))
        except (OSError, ValueError) as err:
            raise InputError(f"cannot read VCF header ({err})", path=path) from None
        samples = np.array(vcf.samples, dtype=str)
        vcf.close()
        return samples
    lines = _read_lines(path)
    if name.endswith(".fam"):
        fields = [line.split() for line in lines]
        for number, row in enumerate(fields, start=1):
            if len(row) < 2:
                raise InputError(
                    ".fam line has fewer than 2 fields", path=path, line=number
                )
        return np.array([row[1] for row in fields], dtype=str)
    return np.array([line.split()[0] for line in lines], dtype=str)


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
    for candidate in folder.glob(prefix.name + ".*.Q"):
        match = _Q_NAME.match(candidate.name)
        if match and match.group("prefix") == prefix.name:
            found.append((int(match.group("K")), candidate))
    return sorted(found)


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


def _json_seconds(record: dict) -> float | None:
    for key in ("wall_time", "elapsed", "total_seconds", "seconds"):
        if isinstance(record.get(key), (int, float)):
            return float(record[key])
    for key in ("timings", "timing", "times", "stage_seconds"):
        stages = record.get(key)
        if isinstance(stages, dict):
            if isinstance(stages.get("total"), (int, float)):
                return float(stages["total"])
            values = [v for v in stages.values() if isinstance(v, (int, float))]
            if values:
                return float(sum(values))
    return None


def summarize_runs(prefix, *, Ks=None):
    """Tabulate a run over a K range: log-likelihood, CV error, time, best K.

    Reads ``PREFIX.K.log`` (and ``PREFIX.K.json`` when present, for the
    timing) next to every ``PREFIX.K.Q``.

    Parameters
    ----------
    prefix : str or os.PathLike
        The run's ``--out`` prefix.
    Ks : sequence of int, optional
        Only these K (default: every ``PREFIX.K.Q`` found).

    Returns
    -------
    pandas.DataFrame
        One row per K, columns ``K``, ``loglik``, ``cv_error``, ``seconds``
        (NaN where unknown) and ``best`` (True on the row with the lowest CV
        error; all False without CV).

    Raises
    ------
    InputError
        When no ``PREFIX.K.Q`` exists.

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
    import pandas as pd

    runs = find_runs(prefix)
    if Ks is not None:
        runs = [(K, path) for K, path in runs if K in {int(k) for k in Ks}]
    if not runs:
        raise InputError("no PREFIX.K.Q files found", path=f"{prefix}.*.Q")
    rows = []
    for K, q_path in runs:
        base = str(q_path)[: -len(".Q")]
        log_path = Path(base + ".log")
        json_path = Path(base + ".json")
        info = read_run_log(log_path) if log_path.exists() else {"cv_errors": {}}
        record = {}
        if json_path.exists():
            try:
                record = json.loads(json_path.read_text())
            except (OSError, ValueError) as err:
                raise InputError(f"cannot parse JSON ({err})", path=json_path) from None
        loglik = info.get("loglik")
        if loglik is None:
            for key in ("loglik", "loglikelihood", "log_likelihood"):
                if isinstance(record.get(key), (int, float)):
                    loglik = float(record[key])
                    break
        cv = info["cv_errors"].get(K)
        if cv is None:
            for key in ("cv_error", "cv"):
                if isinstance(record.get(key), (int, float)):
                    cv = float(record[key])
                    break
        seconds = _json_seconds(record)
        rows.append(
            {
                "K": K,
                "loglik": math.nan if loglik is None else loglik,
                "cv_error": math.nan if cv is None else cv,
                "seconds": math.nan if seconds is None else seconds,
            }
        )
    table = pd.DataFrame(rows, columns=["K", "loglik", "cv_error", "seconds"])
    table["best"] = False
    if table["cv_error"].notna().any():
        table.loc[table["cv_error"].idxmin(), "best"] = True
    return table
