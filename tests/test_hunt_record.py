"""What a streamed or Dask run records about itself, and ``--memory``'s floor.

The Dask tests use an in-process cluster (worker threads, a ``tcp://`` loopback
address the command line connects to), which starts in well under a second.
"""

from __future__ import annotations

import json
import logging
import os
import tracemalloc

import numpy as np
import pytest

from admixspec import fit_admixture, simulate_balding_nichols
from admixspec.cli import main
from admixspec.core.exceptions import InputError
from admixspec.io import write_plink
from admixspec.io.provenance import dask_record
from admixspec.io.reader import open_genotypes

from .conftest import hide_from_workers

distributed = pytest.importorskip("distributed")

from admixspec.backends.distributed import Traffic, use_client  # noqa: E402


class TestDaskRecord:
    def test_scheduler_run__json_and_log_name_the_cluster_and_each_ks_own_passes(
            self, dask_fixture, sim_bed_fixture, tmp_path, capsys):
        address = dask_fixture.scheduler.address
        assert main(["run", str(sim_bed_fixture), "-K", "2", "3", "-j", "1", "--init",
                     "svd", "--out", str(tmp_path / "out"), "--scheduler", address]) == 0
        err = capsys.readouterr().err.splitlines()
        records = {K: json.loads((tmp_path / f"out.{K}.json").read_text())["dask"]
                   for K in (2, 3)}
        for K, record in records.items():
            assert (record["scheduler"], record["workers"]) == (address, 2)
            assert record["chunks"] >= 1 and record["passes"] > 0
            assert record["bytes_sent"] > 0 and record["bytes_received"] > 0
            log = (tmp_path / f"out.{K}.log").read_text().splitlines()
            assert (f"Dask: {record['passes']} likelihood passes on the cluster at "
                    f"{address} (2 workers, {record['chunks']} chunks of SNPs)") in \
                " ".join(log)
        # each K's counts are its own fit's: they add up to the run's total
        passes = records[2]["passes"] + records[3]["passes"]
        assert any(line.startswith(f"admixspec: Dask: {passes} passes on the cluster")
                   for line in err)

    def test_run_without_scheduler__records_nothing_of_dask(self, sim_bed_fixture,
                                                          tmp_path):
        assert main(["run", str(sim_bed_fixture), "-K", "2", "-j", "1", "--init", "svd",
                     "-q", "--out", str(tmp_path / "out")]) == 0
        assert "dask" not in json.loads((tmp_path / "out.2.json").read_text())
        assert "Dask" not in (tmp_path / "out.2.log").read_text()

    def test_dask_record__counts_since_the_fit_began(self):
        traffic = Traffic(passes=30, bytes_sent=900, bytes_received=600,
                          scheduler="tls://10.0.0.1:8786", workers=4, chunks=8)
        before = traffic.record()
        traffic.passes, traffic.bytes_sent, traffic.replaced = 42, 1000, 1
        assert dask_record(traffic, before) == {
            "scheduler": "tls://10.0.0.1:8786", "workers": 4, "chunks": 8,
            "passes": 12, "bytes_sent": 100, "bytes_received": 0, "replaced": 1}
        assert dask_record(None) is None


class TestInputFiles:
    def test_run_json__records_the_input_files_and_their_sizes(self, sim_bed_fixture,
                                                              tmp_path):
        prefix = str(sim_bed_fixture)[:-len(".bed")]
        assert main(["run", prefix, "-K", "2", "-j", "1", "--init", "svd", "-q",
                     "--out", str(tmp_path / "out")]) == 0
        files = json.loads((tmp_path / "out.2.json").read_text())["input_files"]
        assert [(entry["path"], entry["bytes"]) for entry in files] == [
            (prefix + suffix, os.path.getsize(prefix + suffix))
            for suffix in (".bed", ".bim", ".fam")]
        assert all(entry["modified"].endswith("Z") for entry in files)


class TestMemoryBudgetRecord:
    def test_streamed_run__log_and_json_record_the_memory_budget(self, sim_bed_fixture,
                                                                 tmp_path):
        # the budget chose the reference fit's SNPs, so it is needed to reproduce
        # a run of the default --memory (half of the machine's) elsewhere
        assert main(["run", str(sim_bed_fixture), "-K", "2", "-j", "1", "--init", "svd",
                     "-q", "--memory", "1", "--out", str(tmp_path / "out")]) == 0
        assert json.loads((tmp_path / "out.2.json").read_text())["memory_mib"] == 1.0
        assert ("Streamed from disk under a workspace budget of 1 MiB (--memory)"
                in (tmp_path / "out.2.log").read_text().splitlines())

    def test_run_in_memory__records_no_budget(self, sim_bed_fixture, tmp_path):
        assert main(["run", str(sim_bed_fixture), "-K", "2", "-j", "1", "--init", "svd",
                     "-q", "--memory", "64", "--out", str(tmp_path / "out")]) == 0
        assert "memory_mib" not in json.loads((tmp_path / "out.2.json").read_text())
        assert "Streamed" not in (tmp_path / "out.2.log").read_text()


class TestEngineLine:
    def test_engine_under_a_cluster__log_says_the_dask_workers_run_it(
            self, dask_fixture, caplog):
        G = simulate_balding_nichols(20, 300, 2, seed=1).genotypes.dosage
        with distributed.Client(dask_fixture) as client, \
                caplog.at_level(logging.INFO, logger="admixspec"), \
                use_client(client):
            fit_admixture(G, 2, method="ml", seed=1, threads=1)
        engine_lines = [message for message in caplog.messages
                        if message.startswith("likelihood engine:")]
        assert engine_lines
        assert set(engine_lines) == {
            "likelihood engine: CPU kernels on the Dask workers"}


class TestStreamedFitUnderAClient:
    def test_workers_that_cannot_read_the_bed__fail_the_fit_before_the_reference_fit(
            self, dask_fixture, sim_bed_fixture, monkeypatch, caplog):
        import admixspec.fit.admixture as admixture

        genotypes = open_genotypes(sim_bed_fixture, memory_mib=1, drop_monomorphic=False)
        assert hasattr(genotypes, "chunks")  # streamed from disk
        hide_from_workers(monkeypatch, sim_bed_fixture)

        def reference_fit(*args, **kwargs):
            raise AssertionError("the reference fit started")

        monkeypatch.setattr(admixture, "fit_streamed", reference_fit)
        with distributed.Client(dask_fixture) as client, use_client(client), \
                pytest.raises(InputError, match="the Dask worker tcp://") as error:
            fit_admixture(genotypes, 2, seed=1, threads=1)
        assert str(error.value).startswith(f"{sim_bed_fixture.absolute()}: ")


def _stop_at_the_reference_fit(monkeypatch):
    """``fit_admixture``'s streamed fit replaced by a stop: only its entry runs."""
    import admixspec.fit.admixture as admixture

    class Stopped(Exception):
        pass

    def reference_fit(*args, **kwargs):
        raise Stopped

    monkeypatch.setattr(admixture, "fit_streamed", reference_fit)
    return Stopped


class TestWorkspaceFloor:
    def test_streamed_fit_whose_floor_exceeds_memory__logs_floor_and_why(
            self, tmp_path, monkeypatch, caplog):
        # 600 x 2000 int8 (1.1 MiB) stream under --memory 1; the spectral
        # stage's 600 x 600 float64 moments alone take 2.7 MiB
        write_plink(tmp_path / "wide",
                    simulate_balding_nichols(600, 2000, 2, fst=0.2, seed=5).genotypes)
        genotypes = open_genotypes(tmp_path / "wide.bed", memory_mib=1,
                                   drop_monomorphic=False)
        assert hasattr(genotypes, "chunks")
        stopped = _stop_at_the_reference_fit(monkeypatch)
        with caplog.at_level(logging.INFO, logger="admixspec"), \
                pytest.raises(stopped):
            fit_admixture(genotypes, 2, seed=1, threads=1)
        warnings = [record.getMessage() for record in caplog.records
                    if record.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert warnings[0].startswith(
            f"{tmp_path / 'wide.bed'}: K=2 needs at least 2.9 MiB in memory whatever "
            "--memory (the spectral stage's 600 x 600 float64 moments of the reference "
            "individuals: 2.7 MiB; ")
        assert warnings[0].endswith("more than the workspace budget of 1.0 MiB: the "
                                    "run will exceed it (raise --memory, or lower "
                                    "--reference-size)")

    def test_streamed_fit_within_memory__logs_no_warning(self, sim_bed_fixture,
                                                         monkeypatch, caplog):
        genotypes = open_genotypes(sim_bed_fixture, memory_mib=1, drop_monomorphic=False)
        assert hasattr(genotypes, "chunks")
        stopped = _stop_at_the_reference_fit(monkeypatch)
        with caplog.at_level(logging.INFO, logger="admixspec"), \
                pytest.raises(stopped):
            fit_admixture(genotypes, 2, seed=1, threads=1)
        assert not [record for record in caplog.records
                    if record.levelno >= logging.WARNING]


def _big_sums(G, P_rows):
    """A pass whose per-chunk sums (800 kB) dwarf its chunk."""
    return P_rows.sum(), (np.full(100_000, float(G.sum())), float(G.shape[1]))


class TestStreamedPassSums:
    def test_map_sum__same_bits_as_summing_every_chunks_sums(self, sim_bed_fixture):
        from admixspec.core.chunks import add_sums, map_sum
        from admixspec.ml.likelihood import _chunk_em

        streamed = open_genotypes(sim_bed_fixture, memory_mib=1)
        chunks = streamed.chunks.subset(chunk_snps=640)
        assert len(chunks.bounds) > 2
        rng = np.random.default_rng(1)
        Q = rng.dirichlet(np.ones(2), chunks.n_individuals)
        P = rng.uniform(0.05, 0.95, (chunks.n_snps, 2))
        parts = chunks.map(_chunk_em, P, Q, True, True, False)
        rows, sums = map_sum(chunks, _chunk_em, P, Q, True, True, False)
        for got, want in zip(rows, [part[0] for part in parts], strict=True):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(sums, add_sums([part[1] for part in parts]), strict=True):
            assert np.array_equal(got, want)

    def test_map_sum__memory_does_not_grow_with_the_chunks(self, sim_bed_fixture):
        from admixspec.core.chunks import map_sum

        streamed = open_genotypes(sim_bed_fixture, memory_mib=1)
        chunks = streamed.chunks.subset(chunk_snps=64)
        assert len(chunks.bounds) > 80
        P = np.zeros((chunks.n_snps, 1))
        tracemalloc.start()
        try:
            _, (_, snps) = map_sum(chunks, _big_sums, P)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert snps == chunks.n_snps
        # one running total and a chunk's sums, not every chunk's (70 MB)
        assert peak < 5 * 800_000
