"""Simulators: Balding-Nichols (numpy) and the paper's msprime admixture design."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.core.exceptions import MissingDependencyError, UsageError
from admixspec.simulate import simulate_admixture

SMALL = {"n_haplotypes": 10, "sequence_length": 2e6}


def assert_valid_alleles(variants):
    counted = variants["counted"].to_numpy(dtype=str)
    other = variants["other"].to_numpy(dtype=str)
    assert set(counted) <= set("ACGT") and set(other) <= set("ACGT")
    assert np.all(counted != other)


class TestBaldingNichols:
    def test_simulate_balding_nichols__valid_distinct_nucleotide_alleles(self):
        sim = simulate_balding_nichols(10, 100, 2, seed=0)
        assert_valid_alleles(sim.genotypes.variants)

    def test_simulate_balding_nichols__seeded(self):
        first = simulate_balding_nichols(10, 100, 2, seed=7)
        again = simulate_balding_nichols(10, 100, 2, seed=7)
        other = simulate_balding_nichols(10, 100, 2, seed=8)
        np.testing.assert_array_equal(first.genotypes.dosage, again.genotypes.dosage)
        assert not np.array_equal(first.genotypes.dosage, other.genotypes.dosage)


class TestArguments:
    """Bad settings are refused at the call, naming the argument, before any draw.

    Before they were declared, ``n_individuals=0`` returned an empty data set,
    ``missing_rate=2`` one with every call missing, and ``n_snps=-5``, ``K=0``,
    ``alpha=-1``, ``unadmixed_fraction=2`` and ``seed=-1`` raised NumPy's
    errors from inside the draws.
    """

    @pytest.mark.parametrize(("argument", "value", "message"), [
        ("n_individuals", 0, "n_individuals must be an integer >= 1, got 0"),
        ("n_snps", -5, "n_snps must be an integer >= 1, got -5"),
        ("K", 0, "K must be an integer >= 1, got 0"),
        ("fst", 1.5, r"fst must be in \(0, 1\), got 1.5"),
        ("alpha", -1, "alpha must be positive, got -1"),
        ("alpha", [1, -2], r"alpha must be positive \(a number or an array of them\)"),
        ("alpha", [1, 2, 3], r"alpha must be one number or K = 2 of them"),
        ("unadmixed_fraction", 2, r"unadmixed_fraction must be in \[0, 1\], got 2"),
        ("missing_rate", 2, r"missing_rate must be in \[0, 1\), got 2"),
        ("min_ancestral_frequency", 0.5, "min_ancestral_frequency must be in"),
        ("seed", -1, "seed must be a non-negative integer, got -1"),
    ])
    def test_balding_nichols__usage_error_naming_the_argument(self, argument, value,
                                                               message):
        arguments = {"n_individuals": 10, "n_snps": 100, "K": 2, argument: value}
        with pytest.raises(UsageError, match=message):
            simulate_balding_nichols(**arguments)

    def test_balding_nichols__alpha_per_component(self):
        sim = simulate_balding_nichols(400, 10, 2, alpha=[0.2, 5.0], seed=1)
        # Dirichlet(0.2, 5) puts the first component's mean at 0.2 / 5.2
        assert sim.Q[:, 0].mean() == pytest.approx(0.2 / 5.2, abs=0.02)

    @pytest.mark.parametrize(("argument", "value"), [
        ("n_admixed", 0), ("K", 0), ("alpha", 0), ("n_haplotypes", 0),
        ("split_time", 0), ("population_size", -1), ("mutation_rate", 0),
        ("recombination_rate", -1e-8), ("sequence_length", 0), ("block_rate", 0),
        ("bp_per_morgan", 0), ("n_snps", 0), ("seed", -1),
    ])
    def test_simulate_admixture__usage_error_before_msprime(self, argument, value,
                                                            monkeypatch):
        # refused before msprime is imported: no simulation starts
        monkeypatch.setitem(sys.modules, "msprime", None)
        with pytest.raises(UsageError, match=f"^{argument} must be"):
            simulate_admixture(**{"n_admixed": 4, "K": 2, argument: value})


class TestWithoutMsprime:
    def test_simulate_admixture__without_msprime_names_the_extra(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "msprime", None)  # import msprime fails
        needs_sim = r"pip install 'admixspec\[sim\]'"
        with pytest.raises(MissingDependencyError, match=needs_sim):
            simulate_admixture(4, 2, **SMALL)


class TestSimulateAdmixture:
    @pytest.fixture(autouse=True)
    def _msprime_fixture(self):
        """The coalescent tests need the ``sim`` extra; Balding-Nichols runs without."""
        pytest.importorskip("msprime")

    def test_simulate_admixture__shapes_and_simplex(self):
        sim = simulate_admixture(12, 3, seed=1, **SMALL)
        n, m = sim.genotypes.dosage.shape
        assert n == 12 and sim.Q.shape == (12, 3) and sim.P.shape == (m, 3)
        np.testing.assert_allclose(sim.Q.sum(axis=1), 1.0)
        assert sim.Q.min() >= 0 and 0 <= sim.P.min() and sim.P.max() <= 1
        assert set(np.unique(sim.genotypes.dosage)) <= {0, 1, 2}
        assert_valid_alleles(sim.genotypes.variants)
        assert np.all(np.diff(sim.genotypes.variants["pos"].to_numpy()) > 0)
        # every kept SNP is polymorphic among the simulated individuals
        dosage = sim.genotypes.dosage
        assert np.all(dosage.min(axis=0) < dosage.max(axis=0))

    def test_simulate_admixture__seeded(self):
        first = simulate_admixture(5, 2, seed=3, **SMALL)
        again = simulate_admixture(5, 2, seed=3, **SMALL)
        np.testing.assert_array_equal(first.genotypes.dosage, again.genotypes.dosage)
        np.testing.assert_array_equal(first.Q, again.Q)
        other = simulate_admixture(5, 2, seed=4, **SMALL)
        assert not np.array_equal(first.Q, other.Q)

    def test_simulate_admixture__q_is_realised_block_fraction(self):
        # One block per chromosome (rate 1e-3 per Morgan on 2 Mb): each
        # individual's realised Q is a multiple of 1/2, whatever W was drawn.
        sim = simulate_admixture(20, 3, block_rate=1e-3, seed=5, **SMALL)
        np.testing.assert_allclose(sim.Q * 2, np.round(sim.Q * 2), atol=1e-12)
        W = np.array(sim.parameters["dirichlet_proportions"])
        assert not np.allclose(sim.Q, W)

    def test_simulate_admixture__many_blocks_realise_the_dirichlet_draw(self):
        # 2 Mb at 20,000 per Morgan: ~400 blocks per chromosome.
        sim = simulate_admixture(10, 3, block_rate=2e4, seed=6, **SMALL)
        W = np.array(sim.parameters["dirichlet_proportions"])
        assert np.abs(sim.Q - W).max() < 0.1

    def test_simulate_admixture__unadmixed_genotypes_follow_their_population_p(self):
        proportions = np.repeat(np.eye(2), 30, axis=0)
        sim = simulate_admixture(K=2, proportions=proportions, seed=2, **SMALL)
        np.testing.assert_array_equal(sim.Q, proportions)
        dosage = sim.genotypes.dosage
        for k in range(2):
            rows = slice(30 * k, 30 * (k + 1))
            fixed_counted = sim.P[:, k] == 1.0
            fixed_other = sim.P[:, k] == 0.0
            assert np.all(dosage[rows][:, fixed_counted] == 2)
            assert np.all(dosage[rows][:, fixed_other] == 0)
            # 60 chromosomes copied from the population's 10 haplotypes
            frequency = dosage[rows].mean(axis=0) / 2
            assert np.abs(frequency - sim.P[:, k]).mean() < 0.06

    def test_simulate_admixture__n_snps_subsamples_in_order(self):
        full = simulate_admixture(8, 2, seed=9, **SMALL)
        sub = simulate_admixture(8, 2, n_snps=100, seed=9, **SMALL)
        assert sub.genotypes.n_snps == 100
        assert set(sub.genotypes.variants["pos"]) <= set(full.genotypes.variants["pos"])

    def test_simulate_admixture__bad_proportions(self):
        with pytest.raises(ValueError, match="proportions"):
            simulate_admixture(K=3, proportions=np.ones((4, 2)), **SMALL)
