"""The Dask back end's failures, logs and clean-up (``run --scheduler``).

Most tests use an in-process cluster (worker threads, a ``tcp://`` loopback
address the command line connects to), which starts in well under a second.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.cli import main
from admixspec.core.exceptions import UsageError

from .conftest import hide_from_workers

distributed = pytest.importorskip("distributed")

from admixspec.backends.distributed import cluster as cluster_module  # noqa: E402
from admixspec.backends.distributed import connect, use_client  # noqa: E402


class TestWorkersThatCannotReadTheBed:
    def test_streamed_run__fails_before_any_fit_with_one_line_naming_the_file(
            self, dask_fixture, sim_bed_fixture, tmp_path, monkeypatch, capsys):
        hide_from_workers(monkeypatch, sim_bed_fixture)
        status = main(["run", str(sim_bed_fixture), "-K", "2", "-j", "1",
                       "--memory", "1", "--out", str(tmp_path / "out"),
                       "--scheduler", dask_fixture.scheduler.address])
        err = capsys.readouterr().err
        assert status == 1
        last = err.splitlines()[-1]
        assert last.startswith(f"admixspec: error: {sim_bed_fixture}: the Dask worker tcp://")
        assert last.endswith("cannot read it: file not found (the .bed file of the "
                             "PLINK fileset); the workers read a streamed .bed "
                             "themselves and must see it at this path")
        assert "(and 1 more of the 2 workers)" in last
        assert "K=2: fitting" not in err  # no reference fit ran first
        assert not list(tmp_path.iterdir())

    def test_check__passes_a_bed_the_workers_read(self, dask_fixture, sim_bed_fixture):
        from admixspec.backends.distributed.chunks import check_workers_read_bed

        with distributed.Client(dask_fixture) as client:
            assert check_workers_read_bed(client, sim_bed_fixture, 100, 6000) is None


class TestWhereThePassesRan:
    def test_log_names_the_cluster_its_workers_and_the_chunks(self, dask_fixture,
                                                              caplog):
        from admixspec.ml.likelihood import make_engine

        G = simulate_balding_nichols(20, 300, 2, seed=1).genotypes.dosage
        with distributed.Client(dask_fixture) as client, \
                caplog.at_level(logging.INFO, logger="admixspec"), \
                use_client(client, chunk_snps=128) as traffic:
            make_engine(G, 2)
            make_engine(G, 2)  # a bootstrap replicate's: the same line, not again
        address = dask_fixture.scheduler.address
        line = (f"likelihood passes on the Dask cluster at {address} (2 workers): "
                "20 x 300 genotypes in 3 chunks of up to 128 SNPs")
        assert caplog.messages.count(line) == 1
        record = traffic.record()
        assert (record["scheduler"], record["workers"], record["chunks"],
                record["sources"]) == (address, 2, 3, 2)


class TestSchedulerAddresses:
    @pytest.mark.parametrize("address, problem", [
        ("inproc://x", "an inproc address is inproc://host/pid/name"),
        ("inproc://192.0.2.1/1/0", "an inproc:// scheduler is reachable only from the "
                                   "process that runs it"),
        ("tcp://127.0.0.1:99999", "port out of range 1-65535"),
        ("tcp://127.0.0.1:0", "port out of range 1-65535"),
    ])
    def test_unusable_address_is_a_usage_error_at_once(self, monkeypatch, address,
                                                      problem):
        monkeypatch.setattr(cluster_module, "CONNECT_TIMEOUT", 1)
        with pytest.raises(UsageError, match=f"--scheduler {address}: not a Dask "
                           rf"scheduler address \({problem}"):
            with connect(address):
                pass

    def test_transport_without_its_library_is_one_line_error(self, monkeypatch,
                                                            capsys, sim_bed_fixture):
        monkeypatch.setattr(cluster_module, "CONNECT_TIMEOUT", 1)
        status = main(["run", str(sim_bed_fixture), "-K", "2", "-q",
                       "--scheduler", "ucx://127.0.0.1:9"])
        err = capsys.readouterr().err
        assert status == 1
        assert err.startswith("admixspec: error: could not connect to the Dask "
                              "scheduler ucx://127.0.0.1:9")
        assert len(err.splitlines()) == 1


def test_cluster_without_workers__fails_at_connect_not_at_the_first_pass(
        monkeypatch, capsys, sim_bed_fixture, tmp_path):
    monkeypatch.setattr(cluster_module, "FIRST_WORKER_WAIT", 0.5)
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://",
                                  dashboard_address="127.0.0.1:0") as cluster:
        address = cluster.scheduler.address
        status = main(["run", str(sim_bed_fixture), "-K", "2", "-j", "1",
                       "--out", str(tmp_path / "out"), "--scheduler", address])
    err = capsys.readouterr().err
    assert status == 1
    assert err.splitlines()[-1] == (
        f"admixspec: error: --scheduler {address}: the Dask cluster has no workers "
        "(waited 0.5 s for one to join)")
    assert "K=2: fitting" not in err


def _slow(x):
    time.sleep(2)
    return x


def test_interrupted_pass__no_asyncio_tracebacks(dask_fixture, caplog):
    """Ctrl-C during a gather: the run stops with no "Task exception was never
    retrieved" traceback per waiting future."""
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        with pytest.raises(KeyboardInterrupt):
            with connect(dask_fixture.scheduler.address) as client:
                futures = [client.submit(_slow, i, pure=False) for i in range(4)]
                timer.start()
                client.gather(futures)
        timer.cancel()
    assert not [r for r in caplog.records if r.name == "asyncio"]


def test_local_cluster__leaves_no_scratch_folder(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with connect("local:1") as client:
        assert client.submit(np.add, 1, 2).result() == 3
    assert not list(tmp_path.iterdir())



def test_interrupted_local_start__leaves_dask_no_cluster_to_close_at_exit(monkeypatch):
    """Ctrl-C while local:N starts: Dask's close at exit of the half-started
    cluster failed on its starting workers with an AssertionError traceback."""
    from distributed.deploy.spec import SpecCluster

    class HalfStarted:  # what LocalCluster leaves registered when interrupted
        shutdown_on_close = True

    half = HalfStarted()

    def interrupted(**options):
        SpecCluster._instances.add(half)
        raise KeyboardInterrupt

    monkeypatch.setattr(distributed, "LocalCluster", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt), connect("local:1"):
            pass
        assert half.shutdown_on_close is False  # skipped by close_clusters at exit
    finally:
        SpecCluster._instances.discard(half)
