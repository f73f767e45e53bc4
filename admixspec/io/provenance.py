"""What a run records about itself: the head of ``PREFIX.K.log`` and ``PREFIX.K.json``.

A log or JSON file must say how to reproduce it: the admixspec version, the
command line, the seed, the input and what the filters removed (fastmixture's
log, msprime's provenance). The command line writes these around the lines of
:meth:`admixspec.fit.admixture.AdmixtureResult.format_log`; a script can do the same.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from .._version import __version__
from ..core.genotypes import Genotypes, filter_lines

__all__ = ["dask_line", "dask_record", "input_files", "run_header", "run_record"]

#: The files of a fileset given by one of them or by its prefix.
_FILESETS = ((".bed", ".bim", ".fam"), (".pgen", ".pvar", ".pvar.zst", ".psam"))


def run_header(genotypes: Genotypes, *, command: str, seed, source, k_hint) -> list[str]:
    """The lines that open ``PREFIX.K.log``: version, command, seed, input, filters.

    Parameters
    ----------
    genotypes : Genotypes or admixspec.io.streamed.StreamedGenotypes
        The filtered genotypes that were fitted (left on disk: the log then
        says under which ``--memory`` budget, which chose the reference's SNPs).
    command : str
        The command line (or any description of the call).
    seed : int or None
        The seed given to the fit.
    source : str or os.PathLike
        The input file.
    k_hint : admixspec.spectral.estimate.KHint
        The spectral hint for K of these genotypes.

    Returns
    -------
    list of str
    """
    lines = [
        f"admixspec {__version__}",
        f"Command: {command}",
        f"Random seed: {seed}",
        f"Input: {source}",
        f"Size of G: {genotypes.n_individuals}x{genotypes.n_snps}",
    ]
    if _streamed(genotypes):  # the budget chose the reference's SNPs: it is an input
        lines.append(f"Streamed from disk under a workspace budget of "
                     f"{_memory_mib(genotypes):g} MiB (--memory)")
    return lines + filter_lines(genotypes) + [f"Spectral K hint: {k_hint.describe()}"]


def _streamed(genotypes) -> bool:
    """Whether ``genotypes`` were left on disk (``run --memory``)."""
    return hasattr(genotypes, "chunks") and hasattr(genotypes, "memory_bytes")


def _memory_mib(genotypes) -> float:
    """A streamed input's workspace budget in MiB, to 3 decimals (``--memory``)."""
    return round(genotypes.memory_bytes / 2**20, 3)


def run_record(result, genotypes: Genotypes, *, command: str, seed, source, k_hint,
               seconds: float, samples_selected: bool = False) -> dict:
    """The JSON record of one K: the fit's facts plus what reproduces them.

    Parameters
    ----------
    result : admixspec.fit.admixture.AdmixtureResult
    genotypes, command, seed, source, k_hint
        As in :func:`run_header`.
    seconds : float
        Wall time of this K.
    samples_selected : bool
        Whether the genotypes are some of the input's individuals (``--keep``,
        ``--mind``): then the record lists their IDs, in Q row order, which
        the input's own sample list no longer gives.

    Returns
    -------
    dict
        :meth:`~admixspec.fit.admixture.AdmixtureResult.record` and ``version``,
        ``command``, ``K``, ``seed``, ``input``, ``input_files``
        (:func:`input_files`), ``n_individuals``,
        ``n_snps``, ``seconds``, ``filters`` (the filter log), ``k_hint``;
        for genotypes streamed from disk ``memory_mib``, the workspace budget
        (``--memory``), which chose the reference fit's SNPs; and, with
        ``samples_selected``, ``samples``.
    """
    record = result.record()
    record.update(
        version=__version__, command=command, K=result.K, seed=seed, input=str(source),
        input_files=input_files(source),
        n_individuals=genotypes.n_individuals, n_snps=genotypes.n_snps,
        seconds=seconds, filters=genotypes.filter_log, k_hint=k_hint.K,
    )
    if _streamed(genotypes):
        record["memory_mib"] = _memory_mib(genotypes)
    if samples_selected:
        record["samples"] = genotypes.samples.tolist()
    return record


#: Fields of :meth:`admixspec.backends.distributed.Traffic.record` that count
#: (summed over a run's fits): a K's record takes their increase over its fit.
_COUNTED = ("passes", "bytes_sent", "bytes_received", "replaced")


def dask_record(traffic, before: dict | None = None) -> dict | None:
    """Where one K's likelihood passes ran, for ``PREFIX.K.json`` (``run --scheduler``).

    Parameters
    ----------
    traffic : admixspec.backends.distributed.Traffic or None
        What the cluster's passes moved so far (the run's
        :func:`~admixspec.backends.distributed.scheduler` block); None
        without a cluster.
    before : dict, optional
        ``traffic.record()`` when this K's fit began: the counts are this
        fit's (a run of several K sums them over its fits).

    Returns
    -------
    dict or None
        ``scheduler`` (its address; None if no pass was placed on it),
        ``workers`` (most workers it had when the genotypes were placed),
        ``chunks`` (most chunks of SNPs they were placed in), and this
        fit's ``passes``, ``bytes_sent``, ``bytes_received`` and
        ``replaced`` (chunks placed again after their worker was lost);
        None without ``traffic``.

    Examples
    --------
    >>> from admixspec.backends.distributed import Traffic
    >>> traffic = Traffic(passes=30, bytes_sent=900, scheduler="tls://10.0.0.1:8786",
    ...                   workers=4, chunks=8)
    >>> before = traffic.record()
    >>> traffic.passes += 12
    >>> record = dask_record(traffic, before)
    >>> record["scheduler"], record["workers"], record["passes"], record["bytes_sent"]
    ('tls://10.0.0.1:8786', 4, 12, 0)
    """
    if traffic is None:
        return None
    now = traffic.record()
    record = {key: now[key] for key in ("scheduler", "workers", "chunks")}
    for key in _COUNTED:
        record[key] = now[key] - (before or {}).get(key, 0)
    return record


def dask_line(record: dict) -> str:
    """The ``.log`` line of :func:`dask_record`.

    Examples
    --------
    >>> print(dask_line({"scheduler": "tls://10.0.0.1:8786", "workers": 4,
    ...                  "chunks": 8, "passes": 12, "bytes_sent": 3_000_000,
    ...                  "bytes_received": 1_500_000, "replaced": 0}))
    ... # doctest: +NORMALIZE_WHITESPACE
    Dask: 12 likelihood passes on the cluster at tls://10.0.0.1:8786
    (4 workers, 8 chunks of SNPs), 3.00 MB sent, 1.50 MB gathered
    """
    if not record["passes"]:
        return "Dask: no likelihood pass of this fit ran on the --scheduler cluster"
    workers = f"{record['workers']} worker" + ("" if record["workers"] == 1 else "s")
    line = (f"Dask: {record['passes']} likelihood passes on the cluster at "
            f"{record['scheduler']} ({workers}, {record['chunks']} chunks of SNPs), "
            f"{record['bytes_sent'] / 1e6:.2f} MB sent, "
            f"{record['bytes_received'] / 1e6:.2f} MB gathered")
    if record["replaced"]:
        line += f"; {record['replaced']} chunk(s) placed again after a worker was lost"
    return line


def input_files(source) -> list[dict]:
    """The files an input is read from, with their size and time of last change.

    What tells, later, whether the files a record names are still the ones
    it was made from: a PLINK fileset's ``.bed``, ``.bim`` and ``.fam`` (or a
    PLINK 2 fileset's) given by one of them or by its prefix, a VCF, or a VCF
    Zarr store (its files' bytes summed).

    Parameters
    ----------
    source : str or os.PathLike
        The input as given.

    Returns
    -------
    list of dict
        ``path`` (as given, with the fileset's suffixes), ``bytes`` and
        ``modified`` (UTC, ISO 8601, to the second), for each file that exists.

    Examples
    --------
    >>> import shutil, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> for suffix in (".bed", ".bim", ".fam"):
    ...     _ = (folder / f"cohort{suffix}").write_bytes(b"abc")
    >>> files = input_files(folder / "cohort")
    >>> [Path(entry["path"]).name for entry in files], files[0]["bytes"]
    (['cohort.bed', 'cohort.bim', 'cohort.fam'], 3)
    >>> shutil.rmtree(folder)
    """
    path = Path(source)
    candidates = [path]
    for suffixes in _FILESETS:
        prefix = path.with_suffix("") if path.suffix in suffixes else path
        if any(Path(f"{prefix}{suffix}").is_file() for suffix in suffixes[:1]):
            candidates = [Path(f"{prefix}{suffix}") for suffix in suffixes]
            break
    return [_file_entry(candidate) for candidate in candidates if candidate.exists()]


def _file_entry(path: Path) -> dict:
    """``path``'s size in bytes (summed over a directory's files) and last change."""
    stat = path.stat()
    size, modified = stat.st_size, stat.st_mtime
    if path.is_dir():
        size = 0
        for folder, _, names in os.walk(path):
            for name in names:
                found = os.stat(os.path.join(folder, name))
                size, modified = size + found.st_size, max(modified, found.st_mtime)
    when = datetime.datetime.fromtimestamp(int(modified), datetime.timezone.utc)
    return {"path": str(path), "bytes": size,
            "modified": when.isoformat().replace("+00:00", "Z")}
