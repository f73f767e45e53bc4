"""The Dask cluster mode's security: TLS schedulers, local:N's TLS, plain-tcp warnings.

A real scheduler and two workers are started as ``dask scheduler`` / ``dask
worker`` processes on 127.0.0.1 with TLS, from certificates made here (a
certificate authority, one certificate for the cluster's processes, one for
the client, and a stranger's from another authority). ``admixspec run
--scheduler tls://...`` with the client's certificate gets the in-memory
Q; clients without a certificate of that authority are refused. No test
sends anything to an address that is not this machine's loopback: the
warning for a plain ``tcp://`` address to another host is raised before
connecting, and the tests replace the connection itself.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from admixspec import read_q, simulate_balding_nichols
from admixspec.cli import main
from admixspec.io import write_plink

distributed = pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from admixspec.backends.distributed import cluster  # noqa: E402
from admixspec.backends.distributed.chunks import DistributedError  # noqa: E402
from admixspec.backends.distributed.cluster import (  # noqa: E402
    InsecureSchedulerWarning,
    connect,
    tls_security,
)

#: Seconds to wait for the scheduler and workers to start.
START_TIMEOUT = 120
#: Seconds a refused client keeps trying (Dask retries until its timeout).
REFUSED_TIMEOUT = 5


def _name(common_name: str):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(folder: Path, name: str, issuer=None):
    """A key and a certificate for ``name``, signed by ``issuer`` (self-signed: a CA).

    Returns ``(cert_path, key_path, (cert, key))``.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    issuer_cert, issuer_key = issuer if issuer else (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(issuer_cert.subject if issuer_cert else _name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None),
                       critical=True)
    )
    cert = builder.sign(issuer_key, hashes.SHA256())
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path, (cert, key)


@pytest.fixture(scope="module")
def certificates_fixture(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tls")
    ca, _, ca_pair = _certificate(folder, "admixspec-test-ca")
    node, node_key, _ = _certificate(folder, "cluster-node", ca_pair)
    client, client_key, _ = _certificate(folder, "client", ca_pair)
    _, _, other_ca = _certificate(folder, "stranger-ca")
    stranger, stranger_key, _ = _certificate(folder, "stranger", other_ca)
    return {"ca": ca, "node": node, "node_key": node_key, "client": client,
            "client_key": client_key, "stranger": stranger, "stranger_key": stranger_key}


def _dask(role: str, *args: str, log: Path) -> subprocess.Popen:
    module = {"scheduler": "distributed.cli.dask_scheduler",
              "worker": "distributed.cli.dask_worker"}[role]
    with open(log, "w") as handle:
        return subprocess.Popen([sys.executable, "-m", module, *args], stdout=handle,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def tls_cluster_fixture(certificates_fixture, tmp_path_factory):
    """A TLS scheduler and two TLS workers on 127.0.0.1: the scheduler's address."""
    folder = tmp_path_factory.mktemp("tls_cluster")
    certs = certificates_fixture
    tls = ["--tls-ca-file", str(certs["ca"]), "--tls-cert", str(certs["node"]),
           "--tls-key", str(certs["node_key"])]
    scheduler_file = folder / "scheduler.json"
    # --no-dashboard alone leaves the HTTP server on 0.0.0.0:8787
    processes = [_dask("scheduler", "--host", "tls://127.0.0.1", "--port", "0",
                       "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
                       "--scheduler-file", str(scheduler_file), *tls,
                       log=folder / "scheduler.log")]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not scheduler_file.exists():
            assert processes[0].poll() is None, (folder / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "the TLS scheduler did not start"
            time.sleep(0.2)
        for i in range(2):
            processes.append(_dask(
                "worker", "--scheduler-file", str(scheduler_file), "--host", "127.0.0.1",
                "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", f"w{i}",
                *tls, log=folder / f"worker{i}.log"))
        security = tls_security(certs["ca"], certs["client"], certs["client_key"])
        with distributed.Client(scheduler_file=str(scheduler_file), security=security,
                                timeout=START_TIMEOUT) as client:
            client.wait_for_workers(2, timeout=START_TIMEOUT)
            address = client.scheduler.address
        yield address, scheduler_file
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in reversed(processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def bed_fixture(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tls_data")
    sim = simulate_balding_nichols(60, 1500, 3, fst=0.2, alpha=0.5, seed=3)
    write_plink(folder / "sim", sim.genotypes)
    return folder / "sim.bed"


def assert_refused(address: str, security) -> None:
    """A Dask client with ``security`` (None: Dask's default, plain) cannot connect."""
    options = {} if security is None else {"security": security}
    with pytest.raises((OSError, TimeoutError)):
        distributed.Client(address, timeout=REFUSED_TIMEOUT, **options).close()


def assert_refused_without_certificate(address: str, ca) -> None:
    """A TLS client that trusts the cluster's authority but shows no certificate of
    its own is refused by the server (Dask cannot even build such a client, so
    this one is made with :mod:`ssl`): the handshake fails, or the server's
    first answer is an alert, never the Dask handshake an accepted client gets."""
    import socket
    import ssl

    host, port = address.removeprefix("tls://").rsplit(":", 1)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False  # Dask's own clients do not check it either
    if "\n" in str(ca):  # a certificate held in memory (Security.temporary)
        context.load_verify_locations(cadata=str(ca))
    else:
        context.load_verify_locations(cafile=str(ca))
    def first_byte() -> bytes:
        with socket.create_connection((host, int(port)), timeout=REFUSED_TIMEOUT * 4) \
                as raw, context.wrap_socket(raw) as tls:
            tls.sendall(b"\0" * 8)
            data = tls.recv(1)
        if not data:  # closed without an alert: refused all the same
            raise ConnectionResetError("closed by the server")
        return data

    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        first_byte()


def process_ids() -> set[int]:
    """This process and its children (a dependency of distributed: psutil)."""
    import psutil

    me = psutil.Process()
    return {me.pid} | {child.pid for child in me.children(recursive=True)}


def listening_hosts(pids) -> set[str]:
    """The addresses processes ``pids`` listen on (TCP)."""
    import psutil

    return {c.laddr.ip for c in psutil.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.pid in pids}


def _tls_flags(certs, cert="client"):
    return ["--tls-ca-file", str(certs["ca"]), "--tls-cert", str(certs[cert]),
            "--tls-key", str(certs[f"{cert}_key"])]


class TestTlsScheduler:
    def test_run__tls_scheduler_gives_the_in_memory_q(self, tls_cluster_fixture,
                                                      certificates_fixture, bed_fixture,
                                                      tmp_path):
        address, _ = tls_cluster_fixture
        assert address.startswith("tls://127.0.0.1:")
        common = ["run", str(bed_fixture), "-K", "3", "--init", "svd", "-j", "1", "-q"]
        assert main([*common, "--out", str(tmp_path / "mem")]) == 0
        assert main([*common, "--out", str(tmp_path / "tls"), "--scheduler", address,
                     *_tls_flags(certificates_fixture)]) == 0
        # Q is printed to 6 decimals; the passes' sums differ from in memory by
        # ~1e-14 relative, which can move a printed digit only across a rounding
        # boundary: one unit of the last digit at most
        np.testing.assert_allclose(read_q(tmp_path / "tls.3.Q"),
                                   read_q(tmp_path / "mem.3.Q"), rtol=0, atol=1.01e-6)

    def test_connect__scheduler_file_with_tls_address(self, tls_cluster_fixture,
                                                      certificates_fixture):
        _, scheduler_file = tls_cluster_fixture
        certs = certificates_fixture
        security = tls_security(certs["ca"], certs["client"], certs["client_key"])
        with connect(str(scheduler_file), security=security) as client:
            assert len(client.scheduler_info()["workers"]) == 2

    @pytest.mark.parametrize("who", ["no certificate", "another authority's certificate",
                                     "plain tcp"])
    def test_client_without_the_clusters_certificate__is_refused(
            self, tls_cluster_fixture, certificates_fixture, who):
        address, _ = tls_cluster_fixture
        certs = certificates_fixture
        if who == "no certificate":  # trusts the cluster, but shows nothing
            assert_refused_without_certificate(address, certs["ca"])
            return
        if who == "plain tcp":
            address, security = address.replace("tls://", "tcp://"), None
        else:
            security = distributed.Security(
                require_encryption=True, tls_ca_file=str(certs["ca"]),
                tls_client_cert=str(certs["stranger"]),
                tls_client_key=str(certs["stranger_key"]))
        assert_refused(address, security)

    def test_connect__another_authoritys_certificate_is_one_line_error(
            self, tls_cluster_fixture, certificates_fixture, monkeypatch):
        address, _ = tls_cluster_fixture
        certs = certificates_fixture
        monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", REFUSED_TIMEOUT)
        security = tls_security(certs["ca"], certs["stranger"], certs["stranger_key"])
        with pytest.raises(DistributedError, match="could not connect to the Dask "
                                                   "scheduler tls://"), \
                connect(address, security=security):
            pass

    def test_run__tls_address_without_tls_settings_is_a_usage_error(
            self, tls_cluster_fixture, bed_fixture, capsys):
        import dask

        address, _ = tls_cluster_fixture
        with dask.config.set({"distributed.comm.tls.ca-file": None,
                              "distributed.comm.tls.client.cert": None}):
            status = main(["run", str(bed_fixture), "-K", "2", "-q",
                           "--scheduler", address])
        assert status == 2
        assert capsys.readouterr().err == (
            f"admixspec: error: --scheduler {address}: a tls:// scheduler needs "
            "--tls-ca-file, --tls-cert and --tls-key (or Dask's distributed.comm.tls "
            "configuration)\n")


class TestLocalClusterTls:
    def test_local__scheduler_speaks_tls_and_refuses_a_client_without_its_certificate(
            self, monkeypatch):
        monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", REFUSED_TIMEOUT)
        before = process_ids() - {os.getpid()}  # the module fixture's cluster
        with connect("local:2") as client:
            address = client.scheduler.address
            assert address.startswith("tls://127.0.0.1:")
            assert client.security.require_encryption
            assert len(client.scheduler_info()["workers"]) == 2
            # another user of the machine: reaches the port, has no certificate
            assert_refused_without_certificate(address, client.security.tls_ca_file)
            # and nothing of the cluster listens beyond this machine's loopback
            # (the dashboard used to, on 0.0.0.0, unauthenticated)
            assert listening_hosts(process_ids() - before) == {"127.0.0.1"}
            assert_refused(address.replace("tls://", "tcp://"), None)

    def test_local__without_cryptography_is_one_line_error(self, capsys, bed_fixture,
                                                           monkeypatch):
        monkeypatch.setitem(sys.modules, "cryptography", None)  # import fails
        status = main(["run", str(bed_fixture), "-K", "2", "-q", "--scheduler",
                       "local:2"])
        assert status == 1
        assert capsys.readouterr().err == (
            "admixspec: error: --scheduler local:2 (TLS between its processes) needs "
            "cryptography: pip install 'admixspec[distributed]'\n")


@pytest.fixture
def no_connection_fixture(monkeypatch):
    """Replace the connection: these tests name addresses that must not be contacted."""
    def refuse(*args, **kwargs):
        raise DistributedError("not connected (test)")

    monkeypatch.setattr(cluster, "_client", refuse)


class TestPlainAddress:
    @pytest.mark.parametrize("address", ["tcp://10.1.2.3:8786", "tcp://node7:8786",
                                         "tcp://[fe80::1]:8786", "ws://10.1.2.3:8786"])
    def test_connect__plain_address_of_another_host_warns(self, no_connection_fixture,
                                                          address):
        with pytest.warns(InsecureSchedulerWarning, match="neither encrypted nor "
                                                          "authenticated"), \
                pytest.raises(DistributedError), connect(address):
            pass

    @pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "tcp://localhost:8786",
                                         "tcp://[::1]:8786"])
    def test_connect__loopback_address_does_not_warn(self, no_connection_fixture,
                                                     address):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(DistributedError), connect(address):
                pass

    def test_connect__scheduler_file_with_a_plain_remote_address_warns(
            self, no_connection_fixture, tmp_path):
        path = tmp_path / "scheduler.json"
        path.write_text('{"address": "tcp://10.1.2.3:8786"}')
        with pytest.warns(InsecureSchedulerWarning), pytest.raises(DistributedError), \
                connect(str(path)):
            pass

    @pytest.mark.filterwarnings("default::admixspec.backends.distributed.cluster.InsecureSchedulerWarning")
    def test_cli__plain_remote_address_prints_the_warning(self, no_connection_fixture,
                                                          bed_fixture, capsys):
        status = main(["run", str(bed_fixture), "-K", "2", "-q", "--scheduler",
                       "tcp://10.1.2.3:8786"])
        err = capsys.readouterr().err.splitlines()
        assert status == 1
        assert err[0].startswith("admixspec: InsecureSchedulerWarning: --scheduler "
                                 "tcp://10.1.2.3:8786: a plain tcp:// connection")
        assert err[-1] == "admixspec: error: not connected (test)"


class TestTlsOptions:
    def test_tls_security__none_without_options(self):
        assert tls_security() is None

    def test_tls_security__files_become_the_clients(self, certificates_fixture):
        certs = certificates_fixture
        security = tls_security(certs["ca"], certs["client"], certs["client_key"])
        assert security.require_encryption
        assert security.tls_ca_file == str(certs["ca"])
        assert security.tls_client_cert == str(certs["client"])
        assert security.tls_client_key == str(certs["client_key"])

    @pytest.mark.parametrize(("flags", "message"), [
        (["--tls-cert", "{client}"], "TLS needs --tls-ca-file too"),
        (["--tls-ca-file", "{ca}"], "TLS needs --tls-cert too"),
        (["--tls-key", "{client_key}"], "TLS needs --tls-ca-file and --tls-cert too"),
        (["--tls-ca-file", "{ca}", "--tls-cert", "/no/such.pem"],
         "--tls-cert /no/such.pem: file not found"),
    ])
    def test_cli__incomplete_tls_options_are_usage_errors(self, certificates_fixture,
                                                          bed_fixture, capsys, flags,
                                                          message):
        flags = [flag.format(**certificates_fixture) for flag in flags]
        status = main(["run", str(bed_fixture), "-K", "2", "-q", "--scheduler",
                       "tls://127.0.0.1:9", *flags])
        assert status == 2
        assert capsys.readouterr().err.startswith(f"admixspec: error: {message}")

    @pytest.mark.parametrize(("scheduler", "message"), [
        ([], "--tls-ca-file, --tls-cert and --tls-key are for a tls:// --scheduler; no "
             "--scheduler was given"),
        (["--scheduler", "local:2"], "--scheduler local:2 makes its own temporary TLS "
                                     "certificate"),
        (["--scheduler", "tcp://127.0.0.1:9"], "--scheduler tcp://127.0.0.1:9: --tls-* "
                                               "need a tls:// scheduler address"),
    ])
    def test_cli__tls_options_without_a_tls_scheduler_are_usage_errors(
            self, certificates_fixture, bed_fixture, capsys, scheduler, message):
        status = main(["run", str(bed_fixture), "-K", "2", "-q", *scheduler,
                       *_tls_flags(certificates_fixture)])
        assert status == 2
        assert capsys.readouterr().err.startswith(f"admixspec: error: {message}")

