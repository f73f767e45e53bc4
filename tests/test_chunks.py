"""The chunked likelihood passes against the one-chunk (in-memory) passes."""

import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.core.chunks import GenotypeChunks, InMemoryChunks, as_chunks, chunk_bounds
from admixspec.core.parameters import check_params
from admixspec.ml.likelihood import Engine
from admixspec.ml.newton import BlockNewton


class SplitChunks:
    """An in-memory matrix served in several SNP chunks (copies, as a reader makes)."""

    def __init__(self, G, chunk_snps):
        self.G = G
        self.n_individuals, self.n_snps = G.shape
        self.bounds = chunk_bounds(self.n_snps, chunk_snps)
        self.n_observed = (G >= 0).sum(axis=1).astype(np.float64)
        self.calls = 0

    def map(self, function, P, *shared):
        self.calls += 1
        return [function(np.ascontiguousarray(self.G[:, a:b]), P[a:b], *shared)
                for a, b in self.bounds]


@pytest.fixture(scope="module")
def problem():
    sim = simulate_balding_nichols(60, 1000, 3, fst=0.1, seed=11)
    G = sim.genotypes.dosage.copy()
    rng = np.random.default_rng(0)
    G[rng.random(G.shape) < 0.05] = -1
    Q, P = check_params(sim.Q * 0.5 + 0.5 / 3, np.clip(sim.P + 0.05, 0, 1), *G.shape)
    return G, Q, P


def test_bounds_are_block_aligned_and_cover():
    bounds = chunk_bounds(1000, 300)
    assert bounds == [(0, 256), (256, 512), (512, 768), (768, 1000)]
    assert chunk_bounds(10, 1) == [(0, 10)]


def test_sources_satisfy_the_protocol(problem):
    G = problem[0]
    assert isinstance(InMemoryChunks(G), GenotypeChunks)
    assert isinstance(SplitChunks(G, 128), GenotypeChunks)
    assert isinstance(as_chunks(G), InMemoryChunks)
    source = SplitChunks(G, 128)
    assert as_chunks(source) is source


@pytest.mark.parametrize("chunk_snps", [64, 320, 5000])
def test_em_and_loglik_equal_in_memory(problem, chunk_snps):
    G, Q, P = problem
    whole, split = Engine(G, 3), Engine(SplitChunks(G, chunk_snps), 3)
    np.testing.assert_array_equal(whole.n_obs, split.n_obs)
    assert split.loglik(Q, P) == pytest.approx(whole.loglik(Q, P), rel=1e-13)
    for kwargs in ({}, {"update_p": False}, {"update_q": False}):
        Q1, P1, ll1 = whole.em(Q, P, **kwargs)
        Q2, P2, ll2 = split.em(Q, P, **kwargs)
        np.testing.assert_allclose(Q2, Q1, rtol=1e-12)
        np.testing.assert_array_equal(P2, P1)  # P rows depend on their own SNP only
        assert ll2 == pytest.approx(ll1, rel=1e-13)


def test_em_on_a_subset_of_blocks(problem):
    G, Q, P = problem
    whole, split = Engine(G, 3), Engine(SplitChunks(G, 192), 3)
    blocks = np.array([0, 2, 3, 4, 9, 15])  # runs that cross chunk edges
    Q1, P1, ll1 = whole.em(Q, P, blocks=blocks)
    Q2, P2, ll2 = split.em(Q, P, blocks=blocks)
    np.testing.assert_allclose(Q2, Q1, rtol=1e-12)
    np.testing.assert_array_equal(P2, P1)
    assert ll2 == pytest.approx(ll1, rel=1e-13)
    swept = np.concatenate([np.arange(64 * b, min(64 * b + 64, 1000)) for b in blocks])
    untouched = np.setdiff1d(np.arange(1000), swept)
    np.testing.assert_array_equal(P2[untouched], P[untouched])
    assert not np.array_equal(P2[swept], P[swept])


def test_block_newton_step_equals_in_memory(problem):
    G, Q, P = problem
    for update_p in (True, False):
        a = BlockNewton(Engine(G, 3), frozen_rows=np.arange(3))
        b = BlockNewton(Engine(SplitChunks(G, 128), 3), frozen_rows=np.arange(3))
        Q1, P1, ll1 = a.step(Q, P, update_p=update_p)
        Q2, P2, ll2 = b.step(Q, P, update_p=update_p)
        # Q statistics summed in another order differ by ~1e-16 relative; the
        # simplex-constrained Newton solve magnifies that (5e-9 measured here)
        np.testing.assert_allclose(Q2, Q1, rtol=0, atol=1e-7)
        np.testing.assert_array_equal(P2, P1)
        assert ll2 == pytest.approx(ll1, rel=1e-13)
        assert a.em_rows == b.em_rows


def test_every_pass_goes_through_map(problem):
    G, Q, P = problem
    source = SplitChunks(G, 256)
    engine = Engine(source, 3)
    engine.loglik(Q, P)
    engine.em(Q, P)
    BlockNewton(engine).step(Q, P)
    assert source.calls == 3


def test_count_observed__makes_no_matrix_sized_temporary():
    # an in-memory engine counts each individual's calls once; a boolean copy of
    # G whole doubled the memory of a 5,000 x 107,374 reference sample (512 MiB).
    # tracemalloc sees NumPy's arrays; the kernel's own are a row of partial
    # counts per thread (threads x individuals), which it cannot see
    import tracemalloc

    from admixspec.core import chunks

    rng = np.random.default_rng(3)
    G = rng.integers(-1, 3, size=(200, 5000), dtype=np.int8)
    chunks.count_observed(G)  # compiled (or loaded) before the measurement
    tracemalloc.start()
    try:
        observed = chunks.count_observed(G)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(observed, (G >= 0).sum(axis=1))
    assert peak < G.nbytes / 4
