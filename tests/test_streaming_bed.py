"""The .bed chunk source: the reader's dosages bit for bit, one chunk in memory."""

import io
import logging
import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.core.exceptions import InputError
from admixspec.core.genotypes import snp_statistics
from admixspec.core.parameters import check_params
from admixspec.io import bed_chunks, read_genotypes, streamed, write_plink
from admixspec.io.bed_chunks import CODE_DOSAGE, BedChunks, _decode
from admixspec.io.plink import read_plink
from admixspec.io.reader import open_streamed
from admixspec.io.streamed import chunk_snps_for
from admixspec.ml.likelihood import Engine
from admixspec.ml.newton import BlockNewton


@pytest.fixture(scope="module")
def fileset(tmp_path_factory):
    # 203 individuals: the last byte of each SNP row is partly padding
    sim = simulate_balding_nichols(203, 700, 3, fst=0.1, missing_rate=0.03, seed=7)
    prefix = tmp_path_factory.mktemp("bed") / "toy"
    write_plink(prefix, sim.genotypes)
    return str(prefix) + ".bed", sim


def test_chunks_equal_the_reader(fileset):
    path, _ = fileset
    G = read_plink(path).dosage
    source = BedChunks(path, *G.shape, chunk_snps=128)
    assert len(source.bounds) == 6
    np.testing.assert_array_equal(source.read(), G)
    called, sums, missing = source.statistics()
    for ours, theirs in zip((called, sums, missing), snp_statistics(G), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(source.n_observed, (G >= 0).sum(axis=1))


def test_kept_rows_and_scattered_columns(fileset):
    path, sim = fileset
    G = read_plink(path).dosage
    rng = np.random.default_rng(1)
    rows = np.sort(rng.choice(203, 77, replace=False))
    columns = np.sort(rng.choice(700, 300, replace=False))
    # a chunk of 64 kept SNPs spans more file rows than the byte buffer holds
    source = BedChunks(path, *G.shape, rows=rows, columns=columns, chunk_snps=64)
    np.testing.assert_array_equal(source.read(), G[np.ix_(rows, columns)])
    keep = [str(s) for s in sim.genotypes.samples[rows]]
    np.testing.assert_array_equal(
        BedChunks(path, *G.shape, rows=rows).read(), read_genotypes(
            path, keep=keep, drop_monomorphic=False).dosage)
    inner = source.subset(rows=np.arange(0, 77, 2), columns=np.arange(10, 200))
    np.testing.assert_array_equal(inner.read(), G[np.ix_(rows[::2], columns[10:200])])


def test_few_kept_individuals__byte_buffer_no_larger_than_the_chunk(fileset):
    # a file row holds all 203 individuals (51 bytes); with 10 kept, a chunk of
    # 128 file rows took 5x the int8 chunk's bytes, outside the --memory budget
    path, _ = fileset
    G = read_plink(path).dosage
    rows = np.arange(0, 200, 20)
    source = BedChunks(path, *G.shape, rows=rows, chunk_snps=128)
    np.testing.assert_array_equal(source.chunk(0, 128), G[rows, :128])
    assert source._raw.nbytes <= 10 * 128
    np.testing.assert_array_equal(source.statistics()[0],
                                  snp_statistics(G[rows])[0])


class _ShortReads(io.FileIO):
    """A file whose reads return at most 7 bytes (as one over 2 GiB does, or NFS)."""

    def readinto(self, buffer):
        return super().readinto(memoryview(buffer)[:7])


def test_short_reads_are_read_on(fileset, monkeypatch):
    path, _ = fileset
    G = read_plink(path).dosage
    monkeypatch.setattr(bed_chunks, "open", lambda name, mode, buffering: _ShortReads(
        name, mode), raising=False)
    np.testing.assert_array_equal(BedChunks(path, *G.shape, chunk_snps=128).read(), G)


def test_file_truncated_while_streamed__one_line_error(fileset, tmp_path):
    path, _ = fileset
    copy = tmp_path / "cut.bed"
    copy.write_bytes(Path(path).read_bytes())
    source = BedChunks(copy, 203, 700, chunk_snps=128)
    source.chunk(0, 128)
    os.truncate(copy, 3 + 300 * 51)
    with pytest.raises(InputError) as error:
        source.chunk(256, 384)
    assert str(error.value) == (f"{copy}: file ended early: 15303 bytes, expected "
                                "35703 (it was truncated or replaced while being read)")


def test_decoder__any_rows_in_any_order_across_steps_of_snps(fileset):
    # the decoder buffers each task's bytes for 512 SNPs at a time; rows out of
    # order and repeated share or repeat bytes, and must still land in place
    path, _ = fileset
    G = read_plink(path).dosage
    raw = np.fromfile(path, dtype=np.uint8, offset=3).reshape(700, -1)
    rng = np.random.default_rng(2)
    rows = np.concatenate([rng.permutation(203), [5, 5, 202]])
    snps = np.sort(rng.choice(700, 650, replace=False))
    out = np.zeros((len(rows), 660), dtype=np.int8)
    _decode(raw, snps, rows, out, 10, CODE_DOSAGE)
    np.testing.assert_array_equal(out[:, 10:], G[np.ix_(rows, snps)])
    assert not out[:, :10].any()


def test_streamed_passes_equal_in_memory(fileset):
    path, sim = fileset
    G = read_plink(path).dosage
    Q, P = check_params(sim.Q, sim.P, *G.shape)
    whole, streamed = Engine(G, 3), Engine(BedChunks(path, *G.shape, chunk_snps=192), 3)
    assert streamed.loglik(Q, P) == pytest.approx(whole.loglik(Q, P), rel=1e-13)
    Q1, P1, _ = whole.em(Q, P)
    Q2, P2, _ = streamed.em(Q, P)
    np.testing.assert_allclose(Q2, Q1, rtol=1e-12)
    np.testing.assert_array_equal(P2, P1)
    _, P3, ll3 = BlockNewton(whole).step(Q, P)
    _, P4, ll4 = BlockNewton(streamed).step(Q, P)
    np.testing.assert_array_equal(P4, P3)
    assert ll4 == pytest.approx(ll3, rel=1e-13)


def test_chunk_size_from_a_budget():
    assert chunk_snps_for(20_000, 100e6) == 4992
    assert chunk_snps_for(10**7, 1e6) == 64


def test_open_streamed_filters_as_the_reader(fileset):

    path, sim = fileset
    keep = [str(s) for s in sim.genotypes.samples[5:150]]
    options = {"maf": 0.05, "geno": 0.04, "mind": 0.035}
    read = read_genotypes(path, keep=keep, **options)
    streamed = open_streamed(path, memory_bytes=8 * 64 * 150, samples=keep, **options)
    assert len(streamed.chunks.bounds) > 5
    np.testing.assert_array_equal(streamed.chunks.read(), read.dosage)
    np.testing.assert_array_equal(streamed.samples, read.samples)
    assert streamed.variants.equals(read.variants)
    np.testing.assert_array_equal(streamed.chunks.n_observed, (read.dosage >= 0).sum(1))

    def summary(log):
        return [(e["filter"], e["removed"]) for e in log]

    assert summary(streamed.filter_log) == summary(read.filter_log)
    assert all(removed > 0 for name, removed in summary(read.filter_log)[1:])


@pytest.mark.parametrize("maf", [0.0, 0.3])
def test_filter_pass__kept_calls_whether_few_or_most_snps_go(fileset, maf):
    # the pass counts the calls at the kept SNPs from the smaller side: all
    # SNPs kept, or most kept (the removed are counted), or most removed
    path, _ = fileset
    read = read_genotypes(path, maf=maf)
    streamed = open_streamed(path, memory_bytes=8 * 64 * 203, maf=maf)
    assert (read.n_snps < 350) == (maf > 0)
    np.testing.assert_array_equal(streamed.chunks.n_observed, (read.dosage >= 0).sum(1))


def test_filter_passes_log_their_progress(fileset, caplog, monkeypatch):
    monkeypatch.setattr(streamed, "PROGRESS_INTERVAL", 0.0)
    with caplog.at_level(logging.INFO, logger="admixspec"):
        open_streamed(fileset[0], memory_bytes=80_000, mind=0.5)  # 64-SNP chunks
    assert "counted 64 of 700 SNPs (9%)" in caplog.text  # the --mind pass
    assert "filtered 64 of 700 SNPs (9%)" in caplog.text
    assert "filtered 700 of 700 SNPs (100%)" in caplog.text


def test_filter_pass__holds_the_chunk_buffer_not_copies_of_it(tmp_path):
    # the filters read the source's buffer in place; a copy of each chunk, and
    # the previous chunk's kept while the next was filtered, tripled the pass
    sim = simulate_balding_nichols(2000, 3000, 2, fst=0.1, seed=3)
    write_plink(tmp_path / "wide", sim.genotypes)
    source = BedChunks(str(tmp_path / "wide.bed"), 2000, 3000, chunk_snps=960)
    options = {"maf": 0.0, "geno": 1.0, "drop_monomorphic": True}
    streamed._chunk_filters(source, options)  # the buffers exist from here on
    tracemalloc.start()
    try:
        kept, _, observed = streamed._chunk_filters(source, options)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(kept) == 3000 and observed.sum() == 2000 * 3000
    # the call counts' mask (one byte a call, at most the chunk's) and a few
    # per-SNP arrays, not a chunk-sized copy (2000 x 960 bytes)
    assert peak < 1.5 * 2000 * 960, peak  # measured 2.2 MB; 6.1 MB with the copies
