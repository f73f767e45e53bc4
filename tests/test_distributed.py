"""The likelihood passes on a Dask LocalCluster of 2 worker processes."""

from __future__ import annotations

import logging
import os
import signal
import sys

import numpy as np
import pytest

from admixspec import fit_admixture, read_q, simulate_balding_nichols
from admixspec.cli import main
from admixspec.core.exceptions import InputError, UsageError
from admixspec.io import read_plink, write_plink
from admixspec.ml.likelihood import Engine
from admixspec.ml.newton import BlockNewton

distributed = pytest.importorskip("distributed")

from admixspec.backends.distributed import DaskChunks, connect, use_client  # noqa: E402
from admixspec.backends.distributed.cluster import parse_scheduler  # noqa: E402

K = 3


@pytest.fixture(scope="module")
def client_fixture():
    """A client of a LocalCluster of 2 single-threaded worker processes.

    Started as ``--scheduler local:2`` starts it; the command-line test then
    connects to it by address, which runs the rest of that code path.
    """
    with connect("local:2") as client:
        yield client


@pytest.fixture(scope="module")
def sim_fixture():
    return simulate_balding_nichols(60, 1500, K, fst=0.2, alpha=0.5, seed=3)


def _relative(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def test_passes__equal_in_memory_passes(client_fixture, sim_fixture):
    G, Q, P = sim_fixture.genotypes.dosage, sim_fixture.Q, sim_fixture.P
    chunks = DaskChunks.scatter(client_fixture, G, chunk_snps=512)
    assert chunks.bounds == [(0, 512), (512, 1024), (1024, 1500)]
    np.testing.assert_array_equal(chunks.n_observed, (G >= 0).sum(axis=1))
    local, remote = Engine(G, K), Engine(chunks, K)
    assert _relative(remote.loglik(Q, P), local.loglik(Q, P)) < 1e-12
    for want, got in zip(local.em(Q, P), remote.em(Q, P), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for want, got in zip(BlockNewton(local).step(Q, P), BlockNewton(remote).step(Q, P),
                         strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_traffic__counts_p_rows_and_shared_arrays_per_worker(client_fixture,
                                                             sim_fixture):
    G, Q, P = sim_fixture.genotypes.dosage, sim_fixture.Q, sim_fixture.P
    chunks = DaskChunks.scatter(client_fixture, G)
    assert len(chunks.bounds) == 2  # one chunk per worker thread
    Engine(chunks, K).loglik(Q, P)
    traffic = chunks.traffic
    assert traffic.passes == 1
    assert traffic.bytes_sent == P.nbytes + 2 * Q.nbytes  # Q to each of 2 workers
    assert traffic.bytes_received < 1000  # two floats and their framing


def test_q_statistics__summed_in_a_tree_on_the_workers(client_fixture, sim_fixture):
    G, Q, P = sim_fixture.genotypes.dosage, sim_fixture.Q, sim_fixture.P
    chunks = DaskChunks.scatter(client_fixture, G, chunk_snps=192)
    assert len(chunks.bounds) == 8
    local, remote = Engine(G, K), Engine(chunks, K)
    for want, got in zip(BlockNewton(local).step(Q, P), BlockNewton(remote).step(Q, P),
                         strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # the client gathers the new P rows and one (m, K + K(K+1)/2) sum, not eight
    statistics = G.shape[0] * (K + K * (K + 1) // 2) * 8
    assert chunks.traffic.bytes_received < P.nbytes + 2 * statistics


def test_from_bed__workers_read_the_file(client_fixture, sim_fixture, tmp_path):
    write_plink(tmp_path / "sim", sim_fixture.genotypes)
    rows, columns = np.arange(5, 60), np.arange(100, 1400)
    chunks = DaskChunks.from_bed(client_fixture, tmp_path / "sim.bed", rows=rows,
                                 columns=columns, chunk_snps=640)
    G = read_plink(tmp_path / "sim.bed").dosage[np.ix_(rows, columns)]
    Q, P = sim_fixture.Q[rows], sim_fixture.P[columns]
    np.testing.assert_array_equal(chunks.n_observed, (G >= 0).sum(axis=1))
    assert _relative(Engine(chunks, K).loglik(Q, P), Engine(G, K).loglik(Q, P)) < 1e-12


def test_from_bed__prefix_with_a_dot(client_fixture, sim_fixture, tmp_path):
    # "cohort.v2" is a prefix: its files are cohort.v2.fam, not cohort.fam
    write_plink(tmp_path / "cohort.v2", sim_fixture.genotypes)
    for path in (tmp_path / "cohort.v2.bed", tmp_path / "cohort.v2"):
        chunks = DaskChunks.from_bed(client_fixture, path)
        assert (chunks.n_individuals, chunks.n_snps) == (60, 1500)


def test_from_bed__size_that_disagrees_is_the_readers_error(client_fixture,
                                                            sim_fixture, tmp_path):
    write_plink(tmp_path / "sim", sim_fixture.genotypes)
    os.truncate(tmp_path / "sim.bed", 1000)
    with pytest.raises(InputError, match=r"sim\.bed: size 1000 bytes disagrees"):
        DaskChunks.from_bed(client_fixture, tmp_path / "sim.bed")


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_streamed_bed_the_workers_cannot_read__error_names_it(
        client_fixture, sim_fixture, tmp_path, damage):
    # checked by the client, then gone or cut short where the workers read it
    # (a cluster's nodes that do not see the file at the same path)
    from admixspec.io.bed_chunks import BedChunks

    write_plink(tmp_path / "sim", sim_fixture.genotypes)
    source = BedChunks(tmp_path / "sim.bed", 60, 1500)
    if damage == "missing":
        os.remove(tmp_path / "sim.bed")
    else:
        os.truncate(tmp_path / "sim.bed", 1000)
    with pytest.raises(InputError, match=r"^\S*sim\.bed: cannot read as a PLINK 1 "
                       r"\.bed file on a Dask worker \((OSError|ValueError): "):
        DaskChunks.from_bed_chunks(client_fixture, source)


def test_use_client__streamed_bed_is_read_by_the_workers(client_fixture, sim_fixture,
                                                         tmp_path):
    from admixspec.io.bed_chunks import BedChunks

    write_plink(tmp_path / "sim", sim_fixture.genotypes)
    m, n = sim_fixture.genotypes.dosage.shape
    rows, columns = np.arange(0, m, 2), np.arange(50, n)
    source = BedChunks(tmp_path / "sim.bed", m, n, rows=rows, columns=columns,
                       chunk_snps=256)
    Q, P = sim_fixture.Q[rows], sim_fixture.P[columns]
    want = Engine(source, K).loglik(Q, P)
    with use_client(client_fixture) as traffic:
        engine = Engine(source, K)
        got = engine.loglik(Q, P)
    assert isinstance(engine.chunks, DaskChunks)
    assert len(engine.chunks.bounds) == 2  # sized for the cluster, not the stream
    assert traffic.passes == 1
    assert _relative(got, want) < 1e-12


def test_from_chunks__another_streamed_source_is_sent_chunk_by_chunk(client_fixture,
                                                                      sim_fixture,
                                                                      tmp_path):
    from admixspec.io.bed_chunks import BedChunks

    write_plink(tmp_path / "sim", sim_fixture.genotypes)
    m, n = sim_fixture.genotypes.dosage.shape
    source = BedChunks(tmp_path / "sim.bed", m, n, chunk_snps=640)
    chunks = DaskChunks.from_chunks(client_fixture, source)
    assert chunks.bounds == source.bounds == [(0, 640), (640, 1280), (1280, 1500)]
    Q, P = sim_fixture.Q, sim_fixture.P
    want = Engine(sim_fixture.genotypes.dosage, K).loglik(Q, P)
    assert _relative(Engine(chunks, K).loglik(Q, P), want) < 1e-12


def test_use_client__fit_equals_in_memory_fit(client_fixture, sim_fixture):
    want = fit_admixture(sim_fixture.genotypes, K, method="ml", seed=1, threads=1)
    with use_client(client_fixture) as traffic:
        got = fit_admixture(sim_fixture.genotypes, K, method="ml", seed=1, threads=1)
    assert traffic.passes >= got.n_iter > 3
    assert got.n_iter == want.n_iter
    assert _relative(got.loglik, want.loglik) < 1e-8
    np.testing.assert_allclose(got.Q, want.Q, atol=1e-8)


def test_cli_scheduler__same_q_and_loglik_as_in_memory(client_fixture, sim_fixture,
                                                        tmp_path):
    write_plink(tmp_path / "sim", sim_fixture.genotypes)
    common = ["run", str(tmp_path / "sim.bed"), "-K", str(K), "--init", "svd",
              "-j", "1", "-q"]
    assert main([*common, "--out", str(tmp_path / "mem")]) == 0
    # local:N's cluster speaks TLS with a certificate held in memory: the
    # command line reaches it with that certificate written to files
    security = client_fixture.security
    files = {}
    for flag, pem in (("--tls-ca-file", security.tls_ca_file),
                      ("--tls-cert", security.tls_client_cert),
                      ("--tls-key", security.tls_client_key)):
        files[flag] = tmp_path / f"{flag.strip('-')}.pem"
        files[flag].write_text(pem)
    tls = [str(part) for item in files.items() for part in item]
    address = client_fixture.scheduler.address
    assert address.startswith("tls://")
    assert main([*common, "--out", str(tmp_path / "dask"), "--scheduler", address,
                 *tls]) == 0
    # Q is printed to 6 decimals and the cluster's sums differ from in memory by
    # ~1e-14 relative: a printed digit can move only across a rounding boundary
    np.testing.assert_allclose(read_q(tmp_path / f"dask.{K}.Q"),
                               read_q(tmp_path / f"mem.{K}.Q"), rtol=0, atol=1.01e-6)
    lls = [_loglik_line(tmp_path / f"{name}.{K}.log") for name in ("mem", "dask")]
    assert _relative(lls[1], lls[0]) < 1e-8


def _loglik_line(path) -> float:
    lines = [line for line in path.read_text().splitlines()
             if line.startswith("Loglikelihood:")]
    return float(lines[-1].split()[1])


@pytest.mark.parametrize("spec, message", [
    ("local:0", "local:N needs a worker count N >= 1"),
    ("local:x", "local:N needs a worker count N >= 1"),
    ("no-such-file.json", "not local:N, a scheduler address"),
])
def test_parse_scheduler__bad_spec_is_a_usage_error(spec, message):
    with pytest.raises(UsageError, match=message):
        parse_scheduler(spec)


def test_cli_scheduler__unreachable_address_is_one_line_error(capsys, tmp_path,
                                                              monkeypatch):
    from admixspec.backends.distributed import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 1)
    write_plink(tmp_path / "sim", simulate_balding_nichols(10, 100, 2, seed=1).genotypes)
    status = main(["run", str(tmp_path / "sim.bed"), "-K", "2", "-q",
                   "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.startswith("admixspec: error: could not connect to the Dask scheduler "
                          "tcp://127.0.0.1:9")
    assert len(err.splitlines()) == 1


# Last: a killed worker's replacement pays admixspec's import on its first task.
def test_from_bed__chunk_of_a_killed_worker_is_read_again(client_fixture, sim_fixture,
                                                           tmp_path):
    write_plink(tmp_path / "sim", sim_fixture.genotypes)
    chunks = DaskChunks.from_bed(client_fixture, tmp_path / "sim.bed")
    engine, Q, P = Engine(chunks, K), sim_fixture.Q, sim_fixture.P
    before = engine.loglik(Q, P)
    pids = client_fixture.run(os.getpid)
    holder = next(iter(client_fixture.who_has(chunks._futures).values()))[0]
    os.kill(pids[holder], signal.SIGKILL)
    assert engine.loglik(Q, P) == before  # Dask read the lost chunk again
    assert chunks.traffic.replaced == 0  # no placing again by admixspec


def test_killed_worker__fit_completes_with_the_in_memory_answer(
        client_fixture, sim_fixture, caplog):
    want = fit_admixture(sim_fixture.genotypes, K, method="ml", seed=2, threads=1)
    pids = client_fixture.run(os.getpid)
    victim = min(pids)

    def kill_once(info):  # after the third iteration: chunks are on both workers
        if info.iteration == 3:
            os.kill(pids[victim], signal.SIGKILL)

    with caplog.at_level(logging.WARNING, logger="admixspec"), \
            use_client(client_fixture) as traffic:
        got = fit_admixture(sim_fixture.genotypes, K, method="ml", seed=2, threads=1,
                            callback=kill_once)
    assert got.n_iter > 3
    assert traffic.replaced >= 1
    assert "a worker was lost" in caplog.text
    assert _relative(got.loglik, want.loglik) < 1e-8
    np.testing.assert_allclose(got.Q, want.Q, atol=1e-8)


def test_cli_scheduler__with_device_cuda_is_a_usage_error(capsys, tmp_path):
    write_plink(tmp_path / "sim", simulate_balding_nichols(10, 100, 2, seed=1).genotypes)
    status = main(["run", str(tmp_path / "sim.bed"), "-K", "2", "-q",
                   "--scheduler", "local:2", "--device", "cuda"])
    assert status == 2
    assert capsys.readouterr().err == (
        "admixspec: error: --scheduler runs the CPU engine's passes on Dask workers; "
        "it cannot be combined with --device cuda\n")


def test_cli_scheduler__without_the_extra_is_one_line_error(capsys, tmp_path,
                                                             monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails
    write_plink(tmp_path / "sim", simulate_balding_nichols(10, 100, 2, seed=1).genotypes)
    status = main(["run", str(tmp_path / "sim.bed"), "-K", "2", "-q",
                   "--scheduler", "local:2"])
    assert status == 1
    assert capsys.readouterr().err == (
        "admixspec: error: running on a Dask cluster (--scheduler) needs distributed: "
        "pip install 'admixspec[distributed]'\n")


def test_cli_scheduler__local_cluster_from_the_console_process(tmp_path):
    """The real process, not main([...]): its signal handling is the console's.

    It was killed by SIGPIPE (exit 141, no output) while main() reset SIGPIPE
    to the default for every console run: a write to a socket the cluster had
    closed then ended the process instead of raising.
    """
    import subprocess

    write_plink(tmp_path / "sim", simulate_balding_nichols(20, 200, 2, seed=1).genotypes)
    done = subprocess.run(
        [sys.executable, "-m", "admixspec", "run", str(tmp_path / "sim.bed"), "-K", "2",
         "--scheduler", "local:2", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "K=2: wrote" in done.stderr
    assert read_q(tmp_path / "out.2.Q").shape == (20, 2)
