"""Which Dask cluster runs the likelihood passes: a client's, or one started here.

Security (docs/distributed.md, "Who can reach the cluster"): Dask's ``tcp://``
is neither authenticated nor encrypted, and whoever reaches a scheduler can
run code on its workers and send the client pickles. So ``local:N`` starts
its cluster with TLS and a temporary self-signed certificate that only this
process and its workers hold; a ``tls://`` scheduler is reached with Dask's
TLS options (``--tls-ca-file``, ``--tls-cert``, ``--tls-key``, or a
``distributed.Security``, or Dask's ``distributed.comm.tls`` configuration);
and a plain ``tcp://`` address that is not this machine's loopback warns
(:class:`InsecureSchedulerWarning`).
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import logging
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from ...core.exceptions import InputError, UsageError, import_optional
from .chunks import (
    DaskChunks,
    DistributedError,
    Traffic,
    check_workers_read_bed,
    import_distributed,
    workers_now,
)

__all__ = ["InsecureSchedulerWarning", "check_workers_read", "connect",
           "device_with_scheduler", "is_loopback", "parse_scheduler", "scheduler",
           "tls_security", "use_client"]

logger = logging.getLogger("admixspec")

#: Seconds to wait for a scheduler to answer before giving up.
CONNECT_TIMEOUT = 30
#: Seconds to wait, on connecting, for a cluster's first worker (one starting
#: beside the run may not have joined yet).
FIRST_WORKER_WAIT = 60
#: Reads of a scheduler file that does not hold an address yet, and seconds between.
FILE_TRIES, FILE_WAIT = 10, 0.05
#: Address schemes whose connections Dask encrypts and authenticates.
ENCRYPTED_SCHEMES = ("tls", "wss")


class InsecureSchedulerWarning(UserWarning):
    """A scheduler reached over a plain (unencrypted, unauthenticated) connection
    to another machine: whoever can reach its port can run code as the user."""


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
    Two local worker processes (not run as a doctest: it starts a cluster, which
    :func:`connect` secures with TLS)::

        with connect("local:2") as client, use_client(client) as traffic:
            result = fit_admixture(genotypes, 3, seed=1)
        print(traffic.describe())
    """
    from ...core.chunks import placement
    from ..gpu import default_device

    traffic = Traffic()
    token = placement.set(functools.partial(_place, client, chunk_snps=chunk_snps,
                                            threads=threads, traffic=traffic,
                                            noted=set()))
    try:
        with default_device("cpu"):  # the workers run the CPU engine's kernels
            yield traffic
    finally:
        placement.reset(token)
        if traffic.sources:
            logger.info("Dask: %s", traffic.describe())


def _place(client, genotypes, *, noted, **options):
    """``genotypes`` as :class:`DaskChunks` on ``client``'s workers.

    An int8 matrix is sent to them; a ``.bed`` source streamed from disk
    (:class:`admixspec.io.bed_chunks.BedChunks`) is read by them from its
    file; another streamed source (a ``.vcz`` store) is read here chunk by
    chunk and sent; sources already on the cluster are used as they are.
    ``noted``: the lines :func:`_note_placement` logged so far.
    """
    from ...io.bed_chunks import BedChunks
    from ...io.streamed import StreamedChunks

    if isinstance(genotypes, np.ndarray):
        chunks = DaskChunks.scatter(client, genotypes, **options)
    elif isinstance(genotypes, BedChunks):
        chunks = DaskChunks.from_bed_chunks(client, genotypes, **options)
    elif isinstance(genotypes, StreamedChunks):
        chunks = DaskChunks.from_chunks(client, genotypes, **options)
    else:
        return genotypes
    _note_placement(client, chunks, noted)
    return chunks


def _note_placement(client, chunks, noted: set) -> None:
    """Log where a source's passes run (after "likelihood engine: CPU"); record it.

    The engine's own line names the CPU, whose kernels the workers run; this
    line names the cluster, and :attr:`DaskChunks.traffic` keeps it for the
    run's record (:meth:`Traffic.record`). A line already in ``noted`` (the
    bootstrap's replicates, say) goes to DEBUG.
    """
    traffic = chunks.traffic
    workers = len(workers_now(client))
    traffic.scheduler = client.scheduler.address
    traffic.workers = max(traffic.workers, workers)
    traffic.chunks = max(traffic.chunks, len(chunks.bounds))
    widest = max((stop - start for start, stop in chunks.bounds), default=0)
    line = (f"likelihood passes on the Dask cluster at {traffic.scheduler} "
            f"({_workers_words(workers)}): {chunks.n_individuals} x {chunks.n_snps} "
            f"genotypes in {len(chunks.bounds)} chunks of up to {widest} SNPs")
    logger.log(logging.DEBUG if line in noted else logging.INFO, "%s", line)
    noted.add(line)


def _workers_words(n: int) -> str:
    """``"1 worker"``, ``"2 workers"``.

    Examples
    --------
    >>> _workers_words(1), _workers_words(2)
    ('1 worker', '2 workers')
    """
    return f"{n} worker" + ("" if n == 1 else "s")


def check_workers_read(genotypes) -> None:
    """Under :func:`use_client`: fail now if the workers cannot read a streamed ``.bed``.

    Genotypes streamed from a ``.bed`` (``run --memory``) are read by the
    workers from the file (:meth:`DaskChunks.from_bed`), at the client's
    path; a worker that cannot read it there would otherwise stop the run
    only at its first engine on the file, after the reference fit. Anything
    else, or outside :func:`use_client`, is not checked.

    Parameters
    ----------
    genotypes : Genotypes, admixspec.io.streamed.StreamedGenotypes or GenotypeChunks

    Raises
    ------
    InputError
        The ``.bed``, a worker that cannot read it and why
        (:func:`~admixspec.backends.distributed.chunks.check_workers_read_bed`).
    """
    from ...core.chunks import placement
    from ...io.bed_chunks import BedChunks

    place = placement.get()
    source = getattr(genotypes, "chunks", genotypes)
    if getattr(place, "func", None) is _place and isinstance(source, BedChunks):
        check_workers_read_bed(place.args[0], source.path, source.n_samples,
                               source.n_variants)


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
    """``--scheduler`` as ``("local", N)``, ``("address", spec)`` or ``("file", spec)``.

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
                     "(tls:// or tcp://host:port) or an existing scheduler file")


@contextlib.contextmanager
def scheduler(spec: str | None, *, threads: int | None = None, security=None):
    """Run the likelihood passes inside the block on the cluster ``spec`` names.

    :func:`connect` and :func:`use_client` together: the code path of
    ``admixspec run --scheduler``.

    Parameters
    ----------
    spec : str or None
        See :func:`connect`. None: everything in this process.
    threads : int, optional
        Threads per worker of a local cluster.
    security : distributed.Security, optional
        See :func:`connect` (``--tls-*``, made by :func:`tls_security`).

    Yields
    ------
    Traffic or None
        What the passes moved (see :func:`use_client`); None without ``spec``.

    Raises
    ------
    UsageError
        ``security`` without ``spec``.
    """
    if spec is None:
        if security is not None:
            raise UsageError("--tls-ca-file, --tls-cert and --tls-key are for a "
                             "tls:// --scheduler; no --scheduler was given")
        yield None
        return
    with connect(spec, threads=threads, security=security) as client, \
            use_client(client) as traffic:
        yield traffic


def tls_security(ca_file=None, cert=None, key=None):
    """A ``distributed.Security`` from Dask's TLS options, or None when none is given.

    Parameters
    ----------
    ca_file : str, optional
        The certificate authority that signed the scheduler's and workers'
        certificates (``--tls-ca-file``).
    cert : str, optional
        This client's certificate, signed by that authority (``--tls-cert``);
        Dask's TLS requires one: the scheduler refuses clients without it.
    key : str, optional
        Its private key (``--tls-key``), unless appended to ``cert``.

    Returns
    -------
    distributed.Security or None
        TLS required, the files as the client's.

    Raises
    ------
    UsageError
        Some options but not ``ca_file`` and ``cert``, or a file that does not exist.
    """
    given = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    if all(value is None for value in given.values()):
        return None
    missing = [flag for flag in ("--tls-ca-file", "--tls-cert") if given[flag] is None]
    if missing:
        raise UsageError(f"TLS needs {' and '.join(missing)} too (Dask's TLS "
                         "authenticates both ends: the client shows a certificate "
                         "signed by the cluster's authority)")
    for flag, value in given.items():
        if value is not None and not Path(value).is_file():
            raise UsageError(f"{flag} {value}: file not found")
    distributed = import_distributed()
    return distributed.Security(require_encryption=True, tls_ca_file=str(ca_file),
                                tls_client_cert=str(cert),
                                tls_client_key=None if key is None else str(key))


@contextlib.contextmanager
def connect(spec: str, *, threads: int | None = None, security=None):
    """A client of the cluster ``spec`` names, for the block.

    Parameters
    ----------
    spec : str
        ``local:N`` starts a local cluster of N worker processes
        (``threads`` threads each, default 1), its connections encrypted and
        authenticated by TLS with a temporary self-signed certificate (made
        for this cluster and held in memory by this process and its workers;
        Dask writes it to a private temporary folder only while it loads
        it), and stops it on exit. A scheduler address (``tls://`` or
        ``tcp://host:port``) or a scheduler file connects to a running
        cluster (left running).
    threads : int, optional
        Threads per worker of a local cluster.
    security : distributed.Security, optional
        TLS settings for a ``tls://`` scheduler (see :func:`tls_security`);
        default: Dask's configuration (``distributed.comm.tls``).

    Yields
    ------
    distributed.Client

    Raises
    ------
    UsageError
        ``spec`` is none of the three forms; a ``tls://`` address without
        TLS settings; ``security`` with ``local:N`` or a plain address.
    MissingDependencyError
        ``local:N`` without the ``cryptography`` package (its certificate).
    DistributedError
        The scheduler did not answer, refused this client, or had no worker
        for :data:`FIRST_WORKER_WAIT` seconds.

    Warns
    -----
    InsecureSchedulerWarning
        A plain ``tcp://`` address that is not this machine's loopback.
    """
    kind, value = parse_scheduler(spec)
    distributed = import_distributed()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_quiet_interrupted_gathers())
        if kind == "local":
            if security is not None:
                raise UsageError(f"--scheduler {spec} makes its own temporary TLS "
                                 "certificate; --tls-* are for a tls:// scheduler")
            import_optional("cryptography", extra="distributed",
                            needed_for=f"--scheduler {spec} (TLS between its processes)")
            client = _local_client(stack, distributed, value, threads or 1)
        else:
            address = value if kind == "address" else _file_address(value)
            _check_address(spec, address)
            security = _transport_security(spec, address, security, distributed)
            client = stack.enter_context(_client(distributed, kind, value, security))
        logger.info("Dask: likelihood passes on %s (%s)", spec,
                    _workers_words(_first_workers(client, spec)))
        yield client


def _local_client(stack, distributed, n_workers: int, threads: int):
    """A client of a local TLS cluster of ``n_workers`` processes, closed by ``stack``.

    A start interrupted (Ctrl-C) leaves Dask a half-started cluster, whose
    close at exit fails on its starting workers with a traceback; it is
    left to the exit of its worker processes (daemons) instead.
    """
    from distributed.deploy.spec import SpecCluster

    # the workers' scratch space (spilled data, locks) in a folder of this
    # run, removed after the cluster stops: Dask's default left
    # dask-scratch-space/ behind in the system's temporary folder
    scratch = stack.enter_context(tempfile.TemporaryDirectory(
        prefix="admixspec-dask-", ignore_cleanup_errors=True))
    before = set(SpecCluster._instances)
    try:
        # the scheduler's HTTP server (health, metrics) on 127.0.0.1, a free
        # port (8787 may be taken), and no dashboard: ":0" served one,
        # unauthenticated and unencrypted, on every interface (0.0.0.0)
        cluster = distributed.LocalCluster(
            n_workers=n_workers, threads_per_worker=threads, processes=True,
            dashboard_address="127.0.0.1:0",
            scheduler_kwargs={"dashboard": False, "local_directory": scratch},
            silence_logs=logging.CRITICAL, local_directory=scratch,
            security=distributed.Security.temporary())
    except BaseException:
        for started in set(SpecCluster._instances) - before:
            started.shutdown_on_close = False  # Dask's close at exit would fail
        raise
    stack.enter_context(cluster)
    return stack.enter_context(distributed.Client(cluster))


def _first_workers(client, spec: str) -> int:
    """The cluster's workers, after waiting up to :data:`FIRST_WORKER_WAIT` s for one.

    A cluster without any would otherwise fail the run at its first
    likelihood pass, after the reading, the filters and the spectral stage.

    Raises
    ------
    DistributedError
        No worker joined in time.
    """
    deadline = time.monotonic() + FIRST_WORKER_WAIT
    if not (workers := workers_now(client)):
        logger.info("Dask: %s has no workers yet; waiting up to %g s for one", spec,
                    FIRST_WORKER_WAIT)
    while not workers and time.monotonic() < deadline:
        time.sleep(0.25)
        workers = workers_now(client)
    if not workers:
        raise DistributedError(f"--scheduler {spec}: the Dask cluster has no workers "
                               f"(waited {FIRST_WORKER_WAIT:g} s for one to join)")
    return len(workers)


class _InterruptedGather(logging.Filter):
    """Drops asyncio's "Task exception was never retrieved" for Dask's ``AllExit``.

    A pass interrupted by Ctrl-C leaves the client's gather waiting on its
    futures; closing the client cancels them, and every waiter but the first
    ends with ``distributed.client.AllExit``, which asyncio prints as a
    traceback each (Dask's internal signal, not an error of the run).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from distributed.client import AllExit

        return not (record.exc_info and isinstance(record.exc_info[1], AllExit))


@contextlib.contextmanager
def _quiet_interrupted_gathers():
    """:class:`_InterruptedGather` on the ``asyncio`` logger for the block."""
    quiet, asyncio_logger = _InterruptedGather(), logging.getLogger("asyncio")
    asyncio_logger.addFilter(quiet)
    try:
        yield
    finally:
        asyncio_logger.removeFilter(quiet)


def _file_address(path: str, *, tries: int = FILE_TRIES) -> str:
    """The scheduler address a scheduler file holds.

    Read again, a moment apart, while it is not yet JSON with an
    ``"address"``: a scheduler may still be writing it (Dask's client waits
    so too). Then it is not a scheduler file: Dask's client would stop on a
    bare ``AssertionError``.

    Raises
    ------
    InputError
        The file, and why it holds no address.
    """
    for attempt in range(tries):
        if attempt:
            time.sleep(FILE_WAIT)
        try:
            address = json.loads(Path(path).read_text()).get("address")
        except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
            problem = f"not JSON ({error})"
        except AttributeError:
            problem = "not a JSON object"
        else:
            if isinstance(address, str) and address:
                return address
            problem = 'no "address" string'
    raise InputError(f"not a Dask scheduler file (--scheduler): {problem}", path=path)


def _check_address(spec: str, address: str) -> None:
    """Refuse an address Dask cannot connect to: ``bogus://``, ``tcp://`` (no port).

    Dask's client would stop on a bare ``ValueError`` from deep inside it
    (a malformed ``inproc://``), or try a port above 65535 until it times out.
    """
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)  # no scheme: Dask's tcp
        get_backend(scheme)
        if scheme == "inproc":  # a scheduler of this process only (its pid)
            _check_inproc(location)
        elif not 0 < parse_host_port(location)[1] < 65536:
            raise ValueError(f"port out of range 1-65535 in address {address!r}")
    except ValueError as error:
        raise UsageError(f"--scheduler {spec}: not a Dask scheduler address "
                         f"({error}); give tls://host:port (or tcp://host:port)"
                         ) from None


def _check_inproc(location: str) -> None:
    """Refuse an ``inproc://`` address that is not of a scheduler in this process.

    Dask's client splits it bare (a traceback for another form) and checks
    the host and process ID only as it connects.

    Raises
    ------
    ValueError
    """
    from distributed.comm.inproc import global_manager

    if location.count("/") != 2:
        raise ValueError(f"an inproc address is inproc://host/pid/name, not "
                         f"inproc://{location}")
    try:
        global_manager.validate_address(location)
    except ValueError:
        raise ValueError("an inproc:// scheduler is reachable only from the process "
                         "that runs it, which this is not") from None


def is_loopback(address: str) -> bool:
    """Whether a scheduler address names this machine's loopback interface.

    Only a literal loopback IP or ``localhost`` counts: another host name may
    resolve anywhere.

    Examples
    --------
    >>> [is_loopback(a) for a in ("tcp://127.0.0.1:8786", "tcp://[::1]:8786",
    ...                           "tcp://localhost:8786", "tcp://10.0.0.1:8786",
    ...                           "tcp://node7:8786")]
    [True, True, True, False, False]
    """
    location = address.split("://", 1)[-1]
    host = location.rsplit(":", 1)[0] if location.count(":") == 1 or \
        location.startswith("[") else location
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _transport_security(spec: str, address: str | None, security, distributed):
    """The ``security`` to connect with, after checking it fits the address's scheme."""
    scheme = address.split("://", 1)[0] if address and "://" in address else "tcp"
    if scheme in ENCRYPTED_SCHEMES:
        security = security if security is not None else distributed.Security()
        if not (security.tls_ca_file and security.tls_client_cert):
            raise UsageError(
                f"--scheduler {spec}: a {scheme}:// scheduler needs --tls-ca-file, "
                "--tls-cert and --tls-key (or Dask's distributed.comm.tls "
                "configuration)")
        return security
    if security is not None:
        raise UsageError(f"--scheduler {spec}: --tls-* need a tls:// scheduler address "
                         f"(this is {scheme}://)")
    if address is not None and scheme != "inproc" and not is_loopback(address):
        warnings.warn(
            f"--scheduler {spec}: a plain {scheme}:// connection to another machine is "
            "neither encrypted nor authenticated: anyone who can reach the scheduler's "
            "port can run code as you on the workers and read the genotypes; use a "
            "tls:// scheduler with --tls-ca-file, --tls-cert and --tls-key "
            "(docs/distributed.md)", InsecureSchedulerWarning, stacklevel=4)
    return None


def _client(distributed, kind: str, value: str, security=None):
    """A client of the running scheduler at an address or in a scheduler file."""
    where = {"address": value} if kind == "address" else {"scheduler_file": value}
    if security is not None:
        where["security"] = security
    try:
        return distributed.Client(**where, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as error:
        raise DistributedError(
            f"could not connect to the Dask scheduler {value}: {error}") from None
    except (TypeError, ImportError) as error:  # a transport not usable here (ucx://)
        raise DistributedError(
            f"could not connect to the Dask scheduler {value}: its transport is not "
            f"usable here ({type(error).__name__}: {error})") from None
