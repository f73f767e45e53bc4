"""Modes of several runs of one K on disk: PREFIX.K.modes.tsv and PREFIX.K.mode<M>.Q.

``PREFIX.K.modes.tsv`` is a tab-separated table with a header and one row per
mode (:meth:`admixspec.fit.modes.ModesResult.table`), mode 1 the major mode:

==================== ==========================================================
``mode``             1-based mode number, by decreasing number of runs
``n_runs``           runs in the mode
``share``            ``n_runs`` over all runs
``best_loglik``      best log-likelihood of its runs (``NA`` when unknown)
``mean_loglik``      mean log-likelihood of its runs (``NA`` when unknown)
``similarity_to_major`` CLUMPP G' between its representative and mode 1's
``min_similarity``   smallest G' between two of its runs
``representative``   the run (name) that stands for the mode
``best``             ``True`` on the mode holding the kept run (``PREFIX.K.Q``)
``runs``             its runs' names, comma-separated
``q_file``           the representative's Q file, relative to the table's folder
==================== ==========================================================

The mode holding the kept run is represented by ``PREFIX.K.Q`` itself (the
file ``admixspec run`` writes from it: the best log-likelihood's, or the
default's spectral estimate where it kept one, :mod:`admixspec.fit.runs`);
every other mode's
representative is written as ``PREFIX.K.mode<M>.Q``, its columns aligned to
``PREFIX.K.Q``'s, so column ``k`` is the same ancestral component in every
file of that K. All files of one call are written together or not at all
(:func:`admixspec.io.admixture.write_all_or_none`).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from ..core.exceptions import InputError
from .admixture import format_q, output_path
from .common import write_all_or_none
from .results import read_ancestry_q, read_run_record

__all__ = [
    "MODES_COLUMNS",
    "format_modes",
    "mode_panels",
    "modes_outputs",
    "read_modes",
    "write_modes",
]

logger = logging.getLogger("admixspec")

#: Columns of ``PREFIX.K.modes.tsv``, in order.
MODES_COLUMNS = (
    "mode", "n_runs", "share", "best_loglik", "mean_loglik", "similarity_to_major",
    "min_similarity", "representative", "best", "runs", "q_file",
)


def _q_name(prefix, K: int, mode: int, best: bool) -> Path:
    return output_path(prefix, K, "Q" if best else f"mode{mode}.Q")


def format_modes(table) -> str:
    """A modes table as the text of ``PREFIX.K.modes.tsv``.

    Parameters
    ----------
    table : pandas.DataFrame
        The columns :data:`MODES_COLUMNS` (``q_file`` included).

    Returns
    -------
    str
        Tab-separated, a header line, log-likelihoods with six decimals (as
        the log prints them), other floats with 10 significant digits, ``NA``
        for a missing number.

    Examples
    --------
    >>> import pandas as pd
    >>> row = dict(mode=1, n_runs=2, share=1.0, best_loglik=-5.0, mean_loglik=-5.5,
    ...            similarity_to_major=1.0, min_similarity=0.9995,
    ...            representative="1", best=True, runs="1,2", q_file="r.2.Q")
    >>> header, line = format_modes(pd.DataFrame([row])).splitlines()
    >>> line.split("\\t")
    ['1', '2', '1', '-5.000000', '-5.500000', '1', '0.9995', '1', 'True', '1,2', 'r.2.Q']
    """
    missing = [c for c in MODES_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"modes table lacks columns {missing}")
    table = table.loc[:, list(MODES_COLUMNS)].copy()
    for column in ("best_loglik", "mean_loglik"):  # %.10g keeps too few decimals
        values = table[column].astype(float)
        table[column] = values.map("{:.6f}".format).where(values.notna())
    return table.to_csv(
        sep="\t", index=False, float_format="%.10g", na_rep="NA", lineterminator="\n"
    )


def modes_outputs(prefix, K: int, modes) -> dict[Path, str]:
    """The files of one K's modes, as ``{path: text}``, without writing them.

    For a caller that writes them in one set with the K's other outputs
    (``write_all_or_none``), as ``admixspec run`` writes Q, P, log and JSON.

    Parameters
    ----------
    prefix : str or os.PathLike
        The run's ``--out`` prefix.
    K : int
        Number of components (``modes.K``).
    modes : admixspec.fit.modes.ModesResult
        From :func:`admixspec.fit.modes.find_modes`.

    Returns
    -------
    dict of pathlib.Path to str
        ``PREFIX.K.modes.tsv`` and, for each mode without the kept run,
        ``PREFIX.K.mode<M>.Q`` (its representative, columns aligned to the kept
        run's). ``PREFIX.K.Q`` itself is not included: it is the kept run's Q.
    """
    if int(K) != modes.K:
        raise ValueError(f"K = {K} but the modes are of K = {modes.K}")
    table = modes.table()
    q_files = []
    files: dict[Path, str] = {}
    for row, mode in zip(table.itertuples(index=False), modes.modes, strict=True):
        path = _q_name(prefix, K, mode.mode, bool(row.best))
        q_files.append(path.name)
        if not row.best:
            files[path] = format_q(modes.aligned[mode.representative])
    table["q_file"] = q_files
    tsv = output_path(prefix, K, "modes.tsv")
    return {tsv: format_modes(table), **files}


def write_modes(prefix, K: int, modes) -> list[Path]:
    """Write ``PREFIX.K.modes.tsv`` and the minor modes' ``PREFIX.K.mode<M>.Q``.

    All at once or none (:func:`modes_outputs`, then
    :func:`admixspec.io.admixture.write_all_or_none`).

    Parameters
    ----------
    prefix, K, modes
        As in :func:`modes_outputs`.

    Returns
    -------
    list of pathlib.Path
        The files written, the table first.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from admixspec.fit.modes import find_modes
    >>> Q = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    >>> other = np.array([[0.1, 0.9], [0.9, 0.1], [0.6, 0.4]])
    >>> modes = find_modes([Q, Q[:, ::-1], other], logliks=[-5.0, -5.1, -7.0])
    >>> prefix = tempfile.mkdtemp() + "/r"
    >>> [p.name for p in write_modes(prefix, 2, modes)]
    ['r.2.modes.tsv', 'r.2.mode2.Q']
    >>> read_modes(prefix + ".2.modes.tsv")[["mode", "n_runs", "runs", "q_file"]]
       mode  n_runs runs       q_file
    0     1       2  1,2        r.2.Q
    1     2       1    3  r.2.mode2.Q
    """
    files = modes_outputs(prefix, K, modes)
    write_all_or_none(files)
    return list(files)


def read_modes(path):
    """Read a ``PREFIX.K.modes.tsv``.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    pandas.DataFrame
        The columns :data:`MODES_COLUMNS`, one row per mode in mode order;
        ``runs`` and ``representative`` as text, NaN for ``NA``.

    Raises
    ------
    InputError
        A missing file, a missing column, non-numeric numbers, modes not
        numbered 1, 2, ..., shares outside [0, 1], or not exactly one ``best``
        mode.
    """
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path=path)
    try:
        table = pd.read_csv(path, sep="\t", dtype={"runs": str, "representative": str,
                                                   "q_file": str},
                            na_values=["NA"], keep_default_na=False)
    except (ValueError, pd.errors.ParserError) as err:
        raise InputError(f"not a modes table ({err})", path=path) from None
    missing = [c for c in MODES_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", path=path, line=1)
    numeric = ["mode", "n_runs", "share", "best_loglik", "mean_loglik",
               "similarity_to_major", "min_similarity"]
    for column in numeric:
        values = pd.to_numeric(table[column], errors="coerce")
        bad = values.isna() & table[column].notna()
        if bad.any():
            line = int(np.flatnonzero(bad.to_numpy())[0]) + 2
            raise InputError(f"non-numeric {column}", path=path, line=line)
        table[column] = values
    if table["mode"].tolist() != list(range(1, len(table) + 1)):
        raise InputError("modes must be numbered 1, 2, ... in order", path=path)
    if not table["share"].between(0, 1).all():
        raise InputError("share must lie in [0, 1]", path=path)
    best = table["best"].astype(str).str.lower().map({"true": True, "false": False})
    if best.isna().any() or int(best.sum()) != 1:
        raise InputError("exactly one mode must have best = True", path=path)
    table["best"] = best.astype(bool)
    table["mode"] = table["mode"].astype(int)
    table["n_runs"] = table["n_runs"].astype(int)
    return table.loc[:, list(MODES_COLUMNS)]


def _stale_because(prefix, K: int, table) -> str | None:
    """Why ``PREFIX.K.modes.tsv`` is not the modes of the run that wrote ``PREFIX.K.Q``.

    ``admixspec run`` writes the table, ``PREFIX.K.Q`` and ``PREFIX.K.json``
    (its modes under ``"modes"``) in one set; a later run of that K without
    ``--runs`` rewrites Q and JSON, then removes the earlier run's table, which
    stays where that run was interrupted first (or was an older version).
    None where the table is the run's, or there is no record to tell
    (:func:`write_modes` from Python writes no JSON).
    """
    record_path = output_path(prefix, K, "json")
    try:
        record = read_run_record(record_path, K=K)
    except InputError:  # none, or unreadable: reported where it is read
        return None
    modes = record.get("modes")
    if modes is None:
        return f"{record_path.name} records a run without --runs"
    runs = [str(row.get("runs")) for row in modes.get("modes") or []
            if isinstance(row, dict)]
    if runs != table["runs"].astype(str).tolist():
        return f"{record_path.name} records other modes"
    return None


def mode_panels(prefix, K: int) -> list[tuple[int, float, np.ndarray, Path]]:
    """Each mode of one K with its representative Q, read from disk.

    A table left by an earlier run (``PREFIX.K.json`` beside it records a
    later run of that K without ``--runs``, or other modes) is ignored with a
    warning: its files are not the modes of ``PREFIX.K.Q``.

    Parameters
    ----------
    prefix : str or os.PathLike
        The run's ``--out`` prefix.
    K : int

    Returns
    -------
    list of (int, float, numpy.ndarray, pathlib.Path)
        ``(mode, share, Q, q_path)`` in mode order, ``Q`` of shape
        (n_individuals, K); empty when ``PREFIX.K.modes.tsv`` does not exist
        or is an earlier run's.

    Raises
    ------
    InputError
        A malformed table, or a Q file it names that is missing, unreadable or
        not of K columns.
    """
    tsv = output_path(prefix, K, "modes.tsv")
    if not tsv.is_file():
        return []
    table = read_modes(tsv)
    stale = _stale_because(prefix, K, table)
    if stale is not None:
        logger.warning("%s: ignored, left by an earlier run (%s); its modes are not "
                       "those of %s", tsv, stale, output_path(prefix, K, "Q").name)
        return []
    panels = []
    for row in table.itertuples(index=False):
        q_path = tsv.parent / str(row.q_file)
        if not q_path.is_file():
            raise InputError(f"mode {row.mode}'s Q file {row.q_file} is missing",
                             path=tsv)
        Q = read_ancestry_q(q_path)
        if Q.shape[1] != K:
            raise InputError(f"has {Q.shape[1]} columns, expected K = {K}", path=q_path)
        share = float(row.share) if not math.isnan(row.share) else math.nan
        panels.append((int(row.mode), share, Q, q_path))
    return panels
