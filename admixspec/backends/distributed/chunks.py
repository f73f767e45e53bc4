"""Genotype chunks held on Dask workers (:class:`DaskChunks`)."""

from __future__ import annotations

import dataclasses
import logging
import time
from concurrent.futures import CancelledError
from pathlib import Path

import numpy as np

from ...core.chunks import BLOCK_SIZE, add_sums, chunk_bounds, count_observed
from ...core.exceptions import AdmixspecError, InputError, import_optional
from ...core.threads import thread_limit

__all__ = ["DaskChunks", "DistributedError", "Traffic"]

logger = logging.getLogger("admixspec")

#: Largest chunk, in bytes of int8 genotypes: big enough that a pass is a
#: few tasks per worker thread, small enough to fit a worker's memory beside
#: the kernel's buffers.
CHUNK_BYTES = 256 * 2**20
# Passes rerun after a worker is lost, before the fit stops with an error.
_RETRIES = 3
#: Seconds to wait for a worker when a pass finds none.
WORKER_WAIT = 60


class DistributedError(AdmixspecError, RuntimeError):
    """The cluster could not run a pass (workers gone, scheduler unreachable)."""


def import_distributed():
    return import_optional("distributed", extra="distributed",
                           needed_for="running on a Dask cluster (--scheduler)")


def _worker_loss_errors() -> tuple:
    """Exceptions of a pass that a lost worker causes (a rerun may succeed)."""
    distributed = import_distributed()
    # CancelledError: a scattered chunk went with its worker; KilledWorker: the
    # task's workers kept dying; OSError covers closed connections.
    return CancelledError, OSError, TimeoutError, distributed.KilledWorker


def _run_chunk(function, threads, G, P, *shared):
    """A map task: ``function(G, P, *shared)`` with ``threads`` numba threads.

    Dask runs one task per worker thread at a time, so each task's kernels
    get one thread unless told otherwise (more would oversubscribe the cores).
    """
    with thread_limit(threads):
        return function(G, P, *shared)


def _part(result, index):
    """One field of a task's ``(rows, sums)`` result (a tree task)."""
    return result[index]


def _add_pair(left, right):
    """Two chunks' ``sums`` added field by field (a tree task)."""
    return add_sums([left, right])


def _read_bed_chunk(bed_path, n_samples, n_variants, rows, columns):
    """One chunk of a ``.bed`` file, read by the worker that will hold it.

    What bed-reader raises on a file the worker cannot read (missing there,
    shorter than the client saw) becomes an :class:`InputError` naming it:
    it is no lost worker, so no rerun of the pass mends it.
    """
    from ...io.errors import reading
    from ...io.plink import read_bed_columns

    with reading(bed_path, "a PLINK 1 .bed file on a Dask worker"):
        return read_bed_columns(bed_path, n_samples, n_variants, rows, columns, 1)


def _bed_problem(bed_path, n_samples, n_variants):
    """Why this worker cannot read the ``.bed`` as the client checked it, or None.

    The client's own check (:func:`admixspec.io.plink.check_bed`: there,
    readable, the header and size the ``.fam`` and ``.bim`` imply), run on
    the worker (by :func:`check_workers_read_bed`).
    """
    from ...io.plink import check_bed

    try:
        check_bed(bed_path, n_samples, n_variants)
    except InputError as error:
        return error.message
    except OSError as error:
        return f"{type(error).__name__}: {error.strerror or error}"
    return None


def check_workers_read_bed(client, bed_path, n_samples: int, n_variants: int) -> None:
    """Fail now, not at the first pass, if a worker cannot read the ``.bed``.

    Chunks of a streamed ``.bed`` are read by the workers themselves
    (:meth:`DaskChunks.from_bed`), which must see the file at the client's
    path; a run finds out otherwise only when its first engine on the file
    is built, after the reference fit. Each worker now runs the client's
    check of the file.

    Parameters
    ----------
    client : distributed.Client
    bed_path : str or path-like
        The ``.bed`` (made absolute here, as the workers are given it).
    n_samples, n_variants : int
        Lines of its ``.fam`` and ``.bim``.

    Raises
    ------
    InputError
        Naming the file, a worker that cannot read it, how many others
        cannot, and why.
    """
    bed = str(Path(bed_path).absolute())
    found = client.run(_bed_problem, bed, int(n_samples), int(n_variants))
    problems = {worker: problem for worker, problem in sorted(found.items())
                if problem is not None}
    if problems:
        worker, problem = next(iter(problems.items()))
        more = (f" (and {len(problems) - 1} more of the {len(found)} workers)"
                if len(problems) > 1 else "")
        raise InputError(f"the Dask worker {worker}{more} cannot read it: {problem}; "
                         "the workers read a streamed .bed themselves and must see "
                         "it at this path", path=bed)


def workers_now(client) -> dict:
    """The cluster's workers, ``{address: info}``, fetched from the scheduler now.

    Not ``client.scheduler_info()["workers"]``: the client's background
    refresh replaces that cached record with one that lists no workers, and
    under load it can land between the fetch and the read.
    """
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def _worker_slots(client, wait: float = 0.0) -> list:
    """Worker addresses, each repeated once per thread, interleaved across workers.

    Polls for up to ``wait`` seconds while the cluster has no worker (the last
    one may have died, and a nanny may be starting it again).
    """
    deadline = time.monotonic() + wait
    workers = workers_now(client)
    while not workers and time.monotonic() < deadline:
        time.sleep(0.25)
        workers = workers_now(client)
    if not workers:
        raise DistributedError("the Dask cluster has no workers"
                               + (f" (waited {wait:g} s)" if wait else ""))
    most = max(info["nthreads"] for info in workers.values())
    return [address for round_ in range(most)
            for address, info in sorted(workers.items()) if info["nthreads"] > round_]


def _default_chunk_snps(n_individuals: int, n_snps: int, slots: int) -> int:
    """SNPs per chunk: one chunk per worker thread, at most :data:`CHUNK_BYTES`.

    Rounded up to the kernels' 64-SNP block, which :func:`chunk_bounds` aligns to.
    """
    per_slot = -(-n_snps // max(slots, 1))
    per_slot = -(-per_slot // BLOCK_SIZE) * BLOCK_SIZE
    return max(1, min(per_slot, CHUNK_BYTES // max(n_individuals, 1)))


def _nbytes(obj) -> int:
    from dask.sizeof import sizeof

    return int(sizeof(obj))


@dataclasses.dataclass
class Traffic:
    """What the passes on a cluster moved, summed over passes and sources.

    Attributes
    ----------
    passes : int
        Calls of :meth:`DaskChunks.map` that completed.
    bytes_sent : int
        Bytes sent to the workers: each chunk's P rows, and the shared array
        arguments (Q, ...) once per worker.
    bytes_received : int
        Bytes of the results gathered (new P rows, per-individual sums).
    replaced : int
        Chunks placed again after their worker was lost.
    sources : int
        :class:`DaskChunks` placed (one per ML engine).
    scheduler : str or None
        The cluster's scheduler address (None before a source is placed).
    workers : int
        Most workers the cluster had when a source was placed.
    chunks : int
        Most chunks of SNPs a source was placed in.
    """

    passes: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    replaced: int = 0
    sources: int = 0
    scheduler: str | None = None
    workers: int = 0
    chunks: int = 0

    def record(self) -> dict:
        """The fields as a JSON-ready dict, for a run's record of where it ran.

        Examples
        --------
        >>> Traffic(2, 10, 5, scheduler="tls://10.0.0.1:8786", workers=4,
        ...         chunks=8).record()["workers"]
        4
        """
        return dataclasses.asdict(self)

    def describe(self) -> str:
        """One line: passes and MB moved per pass.

        Examples
        --------
        >>> Traffic(10, 5_000_000, 3_000_000).describe()
        '10 passes on the cluster, 0.50 MB sent and 0.30 MB gathered per pass'
        """
        per = max(self.passes, 1) * 1e6
        line = (f"{self.passes} passes on the cluster, {self.bytes_sent / per:.2f} MB "
                f"sent and {self.bytes_received / per:.2f} MB gathered per pass")
        if self.replaced:
            line += f"; {self.replaced} chunk(s) placed again after a worker was lost"
        return line


class DaskChunks:
    """Chunks of SNPs (all individuals) held on the workers of a Dask cluster.

    Implements :class:`admixspec.core.chunks.GenotypeChunks`. Build it with
    :meth:`scatter` (from an int8 matrix in memory) or :meth:`from_bed`
    (each worker reads its chunks from a ``.bed`` file).

    Attributes
    ----------
    client : distributed.Client
    n_individuals, n_snps : int
    bounds : list of (int, int)
        The chunks' SNP ranges, in order.
    n_observed : numpy.ndarray, float64, shape (n_individuals,)
    threads : int
        Numba threads of each task's kernels.
    traffic : Traffic
        What :meth:`map` moved (shared by every source of one
        :func:`~admixspec.backends.distributed.use_client` block).
    """

    def __init__(self, client, futures, bounds, n_individuals, *, source, threads=1,
                 traffic=None):
        self.client = client
        self._futures = list(futures)
        self._source = source
        self.bounds = list(bounds)
        self.n_individuals = int(n_individuals)
        self.n_snps = self.bounds[-1][1] if self.bounds else 0
        self.threads = int(threads)
        self.traffic = Traffic() if traffic is None else traffic
        self._holders = self._live = None  # where the chunks are: asked once
        self.traffic.sources += 1
        observed = client.gather([client.submit(count_observed, f, pure=False)
                                  for f in self._futures])
        self.n_observed = (np.sum(observed, axis=0) if observed
                           else np.zeros(self.n_individuals))

    # ---------------------------------------------------------------- builders
    @classmethod
    def scatter(cls, client, G, *, chunk_snps=None, threads=1, traffic=None):
        """Send an int8 matrix to the workers, one chunk of SNPs per task slot.

        Parameters
        ----------
        client : distributed.Client
        G : numpy.ndarray, int8, shape (n_individuals, n_snps)
            Checked dosage (see :func:`admixspec.ml.likelihood.check_dosage`).
            Kept by reference: a chunk whose worker is lost is sent again
            from it.
        chunk_snps : int, optional
            SNPs per chunk (default: one chunk per worker thread, at most
            256 MiB of genotypes each).
        threads : int
            Numba threads of each task's kernels.
        traffic : Traffic, optional
            Record to add this source's traffic to (default: its own).

        Returns
        -------
        DaskChunks
        """
        import_distributed()
        slots = _worker_slots(client)
        m, n = G.shape
        bounds = chunk_bounds(n, chunk_snps or _default_chunk_snps(m, n, len(slots)))
        return cls._sent(client, slots, bounds, m,
                         lambda start, stop: np.ascontiguousarray(G[:, start:stop]),
                         threads=threads, traffic=traffic)

    @classmethod
    def from_chunks(cls, client, source, *, chunk_snps=None, threads=1, traffic=None):
        """Send another source's chunks (e.g. a streamed ``.vcz`` store) to the workers.

        Each chunk is read here, one at a time, and sent; a chunk lost with
        its worker is read and sent again.

        Parameters
        ----------
        client : distributed.Client
        source : admixspec.io.streamed.StreamedChunks
            Read with its own chunks, or re-chunked to ``chunk_snps``.
        chunk_snps, threads, traffic
            As in :meth:`scatter`.

        Returns
        -------
        DaskChunks
        """
        import_distributed()
        if chunk_snps is not None:
            source = source.subset(chunk_snps=chunk_snps)
        return cls._sent(client, _worker_slots(client), list(source.bounds),
                         source.n_individuals,
                         lambda start, stop: source.chunk(start, stop).copy(),
                         threads=threads, traffic=traffic)

    @classmethod
    def _sent(cls, client, slots, bounds, n_individuals, read, *, threads, traffic):
        """Chunks ``read(start, stop)`` here and sent to the workers in turn."""

        def place(index, worker):
            return client.scatter(read(*bounds[index]), workers=[worker], hash=False)

        futures = [place(i, slots[i % len(slots)]) for i in range(len(bounds))]
        return cls(client, futures, bounds, n_individuals, source=place, threads=threads,
                   traffic=traffic)

    @classmethod
    def from_bed(cls, client, path, *, rows=None, columns=None, chunk_snps=None,
                 threads=1, traffic=None):
        """Have the workers read their chunks of a PLINK ``.bed`` file themselves.

        The file must be readable at the same path on every worker. A chunk
        is the result of a read task, so Dask reads it again on another
        worker when its worker is lost.

        Parameters
        ----------
        client : distributed.Client
        path : str or path-like
            The ``.bed`` file or its prefix; ``.fam`` and ``.bim`` beside it.
        rows : array_like of int, optional
            Individuals (rows of the ``.fam``) to read, in order; default all.
        columns : array_like of int, optional
            SNPs (rows of the ``.bim``) to read, in order; default all.
        chunk_snps : int, optional
            SNPs per chunk (default as :meth:`scatter`).
        threads : int
            Numba threads of each task's kernels.
        traffic : Traffic, optional
            Record to add this source's traffic to (default: its own).

        Returns
        -------
        DaskChunks
            Genotypes count the A2 allele, as :func:`admixspec.io.read_plink`.

        Raises
        ------
        InputError
            A ``.fam``, ``.bim`` or ``.bed`` that is missing or malformed, a
            ``.bed`` whose size disagrees with them, or one that a worker
            cannot read.
        """
        from ...io.plink import check_bed, plink_prefix, read_bim, read_fam

        prefix = str(plink_prefix(path))  # "cohort.v2": no suffix to replace
        n_samples = len(read_fam(prefix + ".fam"))
        n_variants = len(read_bim(prefix + ".bim"))
        check_bed(prefix + ".bed", n_samples, n_variants)
        rows = np.arange(n_samples) if rows is None else np.asarray(rows, np.intp)
        columns = np.arange(n_variants) if columns is None else np.asarray(columns,
                                                                           np.intp)
        return cls._reading(client, prefix + ".bed", n_samples, n_variants,
                            rows, columns, chunk_snps=chunk_snps, threads=threads,
                            traffic=traffic)

    @classmethod
    def from_bed_chunks(cls, client, source, *, chunk_snps=None, threads=1,
                        traffic=None):
        """The individuals and SNPs of a streamed ``.bed`` source, read by the workers.

        Parameters
        ----------
        client : distributed.Client
        source : admixspec.io.bed_chunks.BedChunks
            Its file, individuals and SNPs (not its chunk size: the chunks
            are sized for the cluster, as in :meth:`scatter`).
        chunk_snps, threads, traffic
            As in :meth:`from_bed`.

        Returns
        -------
        DaskChunks
        """
        return cls._reading(client, source.path, source.n_samples, source.n_variants,
                            np.asarray(source.rows, np.intp),
                            np.asarray(source.columns, np.intp), chunk_snps=chunk_snps,
                            threads=threads, traffic=traffic)

    @classmethod
    def _reading(cls, client, bed, n_samples, n_variants, rows, columns, *, chunk_snps,
                 threads, traffic):
        """Chunks that are read-task results (see :meth:`from_bed`)."""
        import_distributed()
        slots = _worker_slots(client)
        m, n = len(rows), len(columns)
        bounds = chunk_bounds(n, chunk_snps or _default_chunk_snps(m, n, len(slots)))
        bed = str(Path(bed).absolute())  # a worker's working folder may be another
        futures = [
            client.submit(_read_bed_chunk, bed, n_samples, n_variants, rows,
                          columns[start:stop], workers=[slots[i % len(slots)]],
                          allow_other_workers=True, pure=False)
            for i, (start, stop) in enumerate(bounds)
        ]
        return cls(client, futures, bounds, m, source=None, threads=threads,
                   traffic=traffic)

    # ---------------------------------------------------------------- the pass
    def map(self, function, P, *shared) -> list:
        """``[function(G_chunk, P[start:stop], *shared) ...]`` run on the workers.

        The array arguments in ``shared`` are sent to every worker once per
        call; each chunk's P rows go to the worker holding the chunk. A pass
        that fails because a worker was lost is rerun after its chunks are
        placed again (see the module notes).

        Parameters
        ----------
        function : callable
            Module-level (picklable) function of ``(G_chunk, P_rows, *shared)``.
        P : numpy.ndarray, shape (n_snps, ...)
        *shared
            Arguments common to every chunk.

        Returns
        -------
        list
            The results, in the order of :attr:`bounds`.

        Raises
        ------
        DistributedError
            The pass failed four times in a row, a chunk cannot be placed
            again, or the cluster has had no worker for :data:`WORKER_WAIT` s.
        """
        def attempt():
            results = self.client.gather(self._submit(function, P, shared))
            return results, sum(_nbytes(result) for result in results)

        return self._retried(attempt)

    def map_sum(self, function, P, *shared) -> tuple[list, tuple]:
        """:func:`admixspec.core.chunks.map_sum` with the sums added on the workers.

        Each task's ``sums`` are added pairwise in a binary tree of tasks
        (neighbouring chunks first, so the order of the additions is fixed and
        the bits repeat): the client receives every chunk's ``rows`` and one
        summed tuple, not one ``m × K``-sized tuple per chunk.

        Returns
        -------
        rows : list
            Each chunk's ``rows``, in the order of :attr:`bounds`.
        sums : tuple
            The chunks' ``sums``, added.
        """
        return self._retried(
            lambda: self._gather_tree(self._submit(function, P, shared)))

    def _retried(self, attempt_pass):
        """Run a pass, again after chunks lost with a worker are placed again.

        ``attempt_pass()`` returns the pass's results and the bytes gathered.
        """
        for attempt in range(_RETRIES + 1):
            try:
                results, received = attempt_pass()
                self.traffic.bytes_received += received
                self.traffic.passes += 1
                return results
            except _worker_loss_errors() as error:
                self._holders = None
                if attempt == _RETRIES:
                    raise DistributedError(
                        f"a likelihood pass failed {attempt + 1} times on the Dask "
                        f"cluster, the last time with {type(error).__name__}: {error}"
                    ) from None
                time.sleep(0.5 * (attempt + 1))  # let the scheduler see who is gone
                self._replace_lost()
        raise AssertionError("unreachable")  # pragma: no cover

    def _gather_tree(self, tasks) -> tuple[list, tuple]:
        """Gather the tasks' ``rows``; add their ``sums`` in a tree on the workers."""
        client = self.client
        rows = [client.submit(_part, task, 0, pure=False) for task in tasks]
        sums = [client.submit(_part, task, 1, pure=False) for task in tasks]
        while len(sums) > 1:
            pairs = [sums[i:i + 2] for i in range(0, len(sums), 2)]
            sums = [client.submit(_add_pair, *pair, pure=False) if len(pair) == 2
                    else pair[0] for pair in pairs]
        rows, total = client.gather([rows, sums])
        total = total[0] if total else ()
        received = sum(_nbytes(part) for part in rows) + _nbytes(total)
        return (rows, total), received

    def _submit(self, function, P, shared) -> list:
        """One task per chunk: ``function(G_chunk, P_rows, *shared)`` (futures)."""
        client = self.client
        if self._holders is None:  # after placing, and again after a worker was lost
            self._live = set(workers_now(client))
            self._holders = client.who_has(self._futures)
        live = self._live
        sent_shared = []
        for value in shared:  # arrays once to every worker; flags travel inline
            if isinstance(value, np.ndarray):
                # sent to one worker; the others fetch it from there once, for
                # all their tasks (scatter(broadcast=True) hung when a worker
                # died during its replication)
                self.traffic.bytes_sent += value.nbytes * len(live)
                value = client.scatter(value, hash=False)
            sent_shared.append(value)
        rows = self._send_rows(P, live)
        # not strict: release() empties _futures but keeps bounds (rows has one
        # entry per bound), and a pass after it submits no task
        return [client.submit(_run_chunk, function, self.threads, chunk, chunk_rows,
                              *sent_shared, pure=False)
                for chunk, chunk_rows in zip(self._futures, rows, strict=False)]

    def _send_rows(self, P, live) -> list:
        """Futures of each chunk's P rows, sent to the worker holding the chunk.

        One scatter per worker; rows of a chunk whose holder is unknown or no
        longer alive go wherever the scheduler puts them.
        """
        by_worker: dict = {}
        for index, future in enumerate(self._futures):
            alive = [w for w in self._holders.get(future.key, ()) if w in live]
            by_worker.setdefault(alive[0] if alive else None, []).append(index)
        rows = [None] * len(self.bounds)
        for worker, indices in by_worker.items():
            parts = [np.ascontiguousarray(P[slice(*self.bounds[i])]) for i in indices]
            self.traffic.bytes_sent += sum(part.nbytes for part in parts)
            try:
                futures = self.client.scatter(parts, workers=None if worker is None
                                              else [worker], hash=False)
            except KeyError:  # the scheduler no longer knows the worker
                raise ConnectionError(f"worker {worker} left the cluster") from None
            for i, future in zip(indices, futures, strict=True):  # one per part
                rows[i] = future
        return rows

    def _replace_lost(self):
        """Place again every chunk whose future was lost with its worker."""
        lost = [i for i, future in enumerate(self._futures)
                if future.status in ("cancelled", "lost", "error")]
        if self._source is None:  # chunks with a lineage: Dask reads "lost" ones again
            if any(self._futures[i].status != "lost" for i in lost):
                raise DistributedError("chunks read from the .bed file were lost with "
                                       "their worker and could not be read again")
            lost = []
        slots = _worker_slots(self.client, wait=WORKER_WAIT)
        for n, i in enumerate(lost):
            self._futures[i] = self._source(i, slots[n % len(slots)])
        self.traffic.replaced += len(lost)
        logger.warning("Dask: a worker was lost; pass rerun%s",
                       f" after placing {len(lost)} chunk(s) again" if lost else "")

    def release(self):
        """Free the chunks on the workers (also done when this object is collected)."""
        self._futures = []
