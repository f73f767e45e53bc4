"""Streamed (``run --memory``) and Dask (``run --scheduler``) runs: defects found."""

from __future__ import annotations

from pathlib import Path

import pytest

from admixspec import simulate_balding_nichols
from admixspec.io import write_plink

pytest.importorskip("distributed")

from admixspec.backends.distributed import chunks as dask_chunks
from admixspec.backends.distributed.chunks import DaskChunks


class _RecordingClient:
    """Stands in for a ``distributed.Client``: records what the read tasks are given."""

    def __init__(self):
        self.bed_paths = []

    def submit(self, function, *args, **options):
        if function is dask_chunks._read_bed_chunk:
            self.bed_paths.append(args[0])
        return object()

    def gather(self, futures):
        return []


def test_from_bed__workers_get_an_absolute_path_for_a_relative_input(tmp_path,
                                                                     monkeypatch):
    # a worker of a running cluster works in its own folder: 'cohort.bed' there is
    # another file (or none), so the read tasks must name the client's file in full
    write_plink(tmp_path / "sim", simulate_balding_nichols(20, 200, 2, seed=1).genotypes)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(dask_chunks, "_worker_slots", lambda client: ["worker"])
    client = _RecordingClient()
    DaskChunks.from_bed(client, "sim.bed", chunk_snps=64)
    assert client.bed_paths
    assert {Path(path) for path in client.bed_paths} == {tmp_path / "sim.bed"}
    assert all(Path(path).is_absolute() for path in client.bed_paths)
