"""Which Dask cluster runs the likelihood passes: a client's, or one started here."""

from __future__ import annotations

import contextlib
import functools
import logging
from pathlib import Path

import numpy as np

from ...core.exceptions import UsageError
from .chunks import DaskChunks, DistributedError, Traffic, import_distributed, workers_now

__all__ = ["connect", "device_with_scheduler", "parse_scheduler", "scheduler", "use_client"]

logger = logging.getLogger("admixspec")

#: Seconds to wait for a scheduler to answer before giving up.
CONNECT_TIMEOUT = 30


@contextlib.contextmanager
def use_client(client, *, chunk_snps=None, threads=1):
    """Run the likelihood passes of every fit inside the block on ``client``'s cluster.

    Every ML engine built inside the block (the fit, the projection, the
    cross-validation and bootstrap refits, the estimator selection's fits)
    is the CPU engine (a fit's ``device=None`` means ``"cpu"`` here) and puts
    its genotypes on the workers as :class:`DaskChunks` (an in-memory matrix
    is sent to them; a ``.bed`` streamed from disk, ``run --memory``, is read
    by them from the file, which they must see at the same path), and runs
    each pass there. What is not a likelihood pass (reading the input, filters,
    the spectral stage, start values, the Q Newton step, the SQUAREM
    extrapolation) runs in this process, as without a cluster.

    Parameters
    ----------
    client : distributed.Client
    chunk_snps : int, optional
        SNPs per chunk (default: one chunk per worker thread, see
        :meth:`DaskChunks.scatter`).
    threads : int
        Numba threads of each task's kernels (Dask already runs one task per
        worker thread).

    Yields
    ------
    Traffic
        Passes run on the cluster and bytes moved, summed over the block's
        fits (also logged at INFO when the block ends).

    Examples
    --------
    >>> from dask.distributed import Client, LocalCluster  # doctest: +SKIP
    >>> with LocalCluster(n_workers=2) as cluster, Client(cluster) as client:
    ...     with use_client(client) as traffic:
    ...         result = fit_admixture(genotypes, 3, seed=1)  # doctest: +SKIP
    ...     print(traffic.describe())  # doctest: +SKIP
    """
    from ...core.chunks import placement
    from ..gpu import default_device

    traffic = Traffic()
    token = placement.set(functools.partial(_place, client, chunk_snps=chunk_snps,
                                            threads=threads, traffic=traffic))
    try:
        with default_device("cpu"):  # the workers run the CPU engine's kernels
            yield traffic
    finally:
        placement.reset(token)
        if traffic.sources:
            logger.info("Dask: %s", traffic.describe())


def _place(client, genotypes, **options):
    """``genotypes`` as :class:`DaskChunks` on ``client``'s workers.

    An int8 matrix is sent to them; a ``.bed`` source streamed from disk
    (:class:`admixspec.io.bed_chunks.BedChunks`) is read by them from its
    file; another streamed source (a ``.vcz`` store) is read here chunk by
    chunk and sent; sources already on the cluster are used as they are.
    """
    from ...io.bed_chunks import BedChunks
    from ...io.streamed import StreamedChunks

    if isinstance(genotypes, np.ndarray):
        return DaskChunks.scatter(client, genotypes, **options)
    if isinstance(genotypes, BedChunks):
        return DaskChunks.from_bed_chunks(client, genotypes, **options)
    if isinstance(genotypes, StreamedChunks):
        return DaskChunks.from_chunks(client, genotypes, **options)
    return genotypes


def device_with_scheduler(spec: str | None, device: str) -> str:
    """``run``'s ``--device`` beside ``--scheduler``: the workers run the CPU engine.

    Examples
    --------
    >>> device_with_scheduler("local:2", "auto"), device_with_scheduler(None, "auto")
    ('cpu', 'auto')
    """
    if spec is None:
        return device
    if device == "cuda":
        raise UsageError("--scheduler runs the CPU engine's passes on Dask workers; "
                         "it cannot be combined with --device cuda")
    return "cpu"


def parse_scheduler(spec: str):
    """``("local", N)``, ``("address", spec)`` or ``("file", spec)`` from ``--scheduler``.

    Examples
    --------
    >>> parse_scheduler("local:2"), parse_scheduler("tcp://10.0.0.1:8786")
    (('local', 2), ('address', 'tcp://10.0.0.1:8786'))
    """
    if spec.startswith("local:"):
        count = spec.partition(":")[2]
        if not (count.isdigit() and int(count) >= 1):
            raise UsageError(f"--scheduler {spec}: local:N needs a worker count N >= 1")
        return "local", int(count)
    if "://" in spec:
        return "address", spec
    if Path(spec).is_file():
        return "file", spec
    raise UsageError(f"--scheduler {spec}: not local:N, a scheduler address "
                     "(tcp://host:port) or an existing scheduler file")


@contextlib.contextmanager
def scheduler(spec: str | None, *, threads: int | None = None):
    """Run the likelihood passes inside the block on the cluster ``spec`` names.

    :func:`connect` and :func:`use_client` together: the code path of
    ``admixspec run --scheduler``.

    Parameters
    ----------
    spec : str or None
        See :func:`connect`. None: everything in this process.
    threads : int, optional
        Threads per worker of a local cluster.

    Yields
    ------
    Traffic or None
        What the passes moved (see :func:`use_client`); None without ``spec``.
    """
    if spec is None:
        yield None
        return
    with connect(spec, threads=threads) as client, use_client(client) as traffic:
        yield traffic


@contextlib.contextmanager
def connect(spec: str, *, threads: int | None = None):
    """A client of the cluster ``spec`` names, for the block.

    Parameters
    ----------
    spec : str
        ``local:N`` starts a local cluster of N worker processes
        (``threads`` threads each, default 1) and stops it on exit; a
        ``tcp://`` address or a scheduler file connects to a running
        cluster (left running).
    threads : int, optional
        Threads per worker of a local cluster.

    Yields
    ------
    distributed.Client

    Raises
    ------
    UsageError
        ``spec`` is none of the three forms.
    DistributedError
        The scheduler did not answer.
    """
    kind, value = parse_scheduler(spec)
    distributed = import_distributed()
    with contextlib.ExitStack() as stack:
        if kind == "local":
            # ":0": a free port for the scheduler's HTTP server (8787 may be taken)
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=value, threads_per_worker=threads or 1, processes=True,
                dashboard_address=":0", silence_logs=logging.CRITICAL))
            client = stack.enter_context(distributed.Client(cluster))
        else:
            client = stack.enter_context(_client(distributed, kind, value))
        logger.info("Dask: likelihood passes on %s (%d workers)", spec,
                    len(workers_now(client)))
        yield client


def _client(distributed, kind: str, value: str):
    """A client of the running scheduler at an address or in a scheduler file."""
    where = {"address": value} if kind == "address" else {"scheduler_file": value}
    try:
        return distributed.Client(**where, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as error:
        raise DistributedError(
            f"could not connect to the Dask scheduler {value}: {error}") from None
