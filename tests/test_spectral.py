"""The spectral admixture estimator: where theory says exact, it must be accurate."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from admixspec.core.genotypes import allele_counts
from admixspec.core.metrics import q_error
from admixspec.core.parameters import P_MAX, P_MIN, simplex_projection
from admixspec.spectral.estimate import (
    COMMON_WINDOW_END,
    k_hint,
    privacy_pass,
    private_allele_snps,
    rare_allele_snps,
    snp_sample,
    spectral_pass,
    spectral_scan,
)
from admixspec.spectral.search import binomial_loglik, infeasibility, q_from_candidates

from .conftest import blas_threads, blas_threads_in
from .reference import simulate_structured as _simulate


def _run(dosage, K, snps, flip, seed=0):
    rng = np.random.default_rng(seed)
    sample = snp_sample(dosage, 4000, rng)
    rescore = snp_sample(dosage, 12000, rng)
    return spectral_pass(dosage, K, snps, flip, sample=sample, rescore_sample=rescore,
                         seed=seed)


def _all_polymorphic(dosage):
    counted, observed = allele_counts(dosage)
    snps = np.flatnonzero((counted > 0) & (counted < observed))
    return snps, np.zeros(len(snps), dtype=bool)


class TestSpectralPass:
    # near-uniform proportions (alpha = 10) make W ill-conditioned: the same
    # candidate error costs more Q error there (measured 0.022 at this size)
    @pytest.mark.parametrize(("alpha", "bound"),
                             [(0.1, 0.01), (1.0, 0.01), (10.0, 0.03)])
    def test_binary_frequencies__recover_q(self, alpha, bound):
        dosage, Q, _ = _simulate("binary", alpha=alpha)
        result = _run(dosage, 3, *_all_polymorphic(dosage))
        assert q_error(Q, result.Q) < bound

    @pytest.mark.parametrize(("alpha", "bound"),
                             [(0.1, 0.02), (1.0, 0.02), (10.0, 0.05)])
    def test_private_alleles__recover_q(self, alpha, bound):
        dosage, Q, _ = _simulate("private", alpha=alpha)
        result = _run(dosage, 3, *_all_polymorphic(dosage))
        assert q_error(Q, result.Q) < bound

    def test_true_candidates_are_found_and_chosen(self):
        dosage, Q, _ = _simulate("binary", alpha=1.0, seed=3)
        result = _run(dosage, 3, *_all_polymorphic(dosage))
        truth = np.linalg.pinv(Q.T).T  # rows: columns of W^+
        vectors = result.candidates.vectors
        nearest = [
            int(np.argmin(np.linalg.norm(vectors - row, axis=1))) for row in truth
        ]
        distances = [
            np.linalg.norm(vectors[i] - row) / np.linalg.norm(row)
            for i, row in zip(nearest, truth, strict=True)
        ]
        assert max(distances) < 0.05
        assert sorted(nearest) == sorted(result.search.subset.tolist())
        # the true candidates are the local maxima (negative curvature), the
        # 2^K - 1 - K composite eigenpairs are not
        assert np.all(result.candidates.curvature[nearest] < 0)
        others = np.setdiff1d(np.arange(len(vectors)), nearest)
        assert np.all(result.candidates.curvature[others] > 0)

    def test_same_seed__same_estimate(self):
        dosage, _, _ = _simulate("binary", n=5000)
        snps, flip = _all_polymorphic(dosage)
        first = _run(dosage, 3, snps, flip, seed=7)
        second = _run(dosage, 3, snps, flip, seed=7)
        np.testing.assert_array_equal(first.Q, second.Q)


def _family_sharing(seed, *, m=120, n_common=4000, n_rare=6000, n_families=8, share=0.3):
    """Admixed genotypes whose rare alleles are partly shared within families.

    Common SNPs have uniform frequencies and the rare ones are private to one
    population, but 30% of the rare SNPs instead carry one copy in each of
    three relatives (8 fixed families): identity by descent, as individuals
    copying the same source haplotype in the suite's mosaics. Those alleles
    add structure outside the span of Q that dominates the rare windows'
    second moment, not the all-SNP one.
    """
    rng = np.random.default_rng(seed)
    Q = rng.dirichlet(np.ones(3), size=m)
    common = rng.uniform(0.05, 0.95, size=(n_common, 3))
    rare = np.zeros((n_rare, 3))
    rare[np.arange(n_rare), rng.integers(3, size=n_rare)] = rng.uniform(
        0.02, 0.1, n_rare)
    dosage = rng.binomial(
        2, np.clip(Q @ np.vstack([common, rare]).T, 0, 1)).astype(np.int8)
    families = rng.permutation(m)[: 3 * n_families].reshape(n_families, 3)
    shared = n_common + np.flatnonzero(rng.random(n_rare) < share)
    dosage[:, shared] = 0
    dosage[families[rng.integers(n_families, size=len(shared))].T, shared[None, :]] = 1
    return dosage, Q


class TestAnchoredScan:
    def test_family_sharing__anchored_windows_recover_q(self):
        dosage, Q = _family_sharing(0)
        rng = np.random.default_rng(0)
        sample, rescore = snp_sample(dosage, 2000, rng), snp_sample(dosage, 8000, rng)
        errors = {}
        for anchor in (False, True):
            best, _ = spectral_scan(dosage, 3, sample=sample, rescore_sample=rescore,
                                       anchor=anchor, seed=0)
            errors[anchor] = q_error(Q, best.Q)
        # measured 0.021 anchored, 0.214 with each window's own eigenspace
        assert errors[True] < 0.04
        assert errors[False] > 3 * errors[True]
        assert best.details["whitening"] == "anchored"

    def test_without_common_windows__same_estimate_from_the_rare_windows(self):
        # the common window's SNPs still anchor the column space, so the rare
        # windows' passes are the same and only the common window's is skipped
        dosage, _ = _family_sharing(0)
        rng = np.random.default_rng(0)
        sample, rescore = snp_sample(dosage, 2000, rng), snp_sample(dosage, 8000, rng)
        runs = {common: spectral_scan(dosage, 3, sample=sample, rescore_sample=rescore,
                                      common_windows=common, seed=0)
                for common in (True, False)}
        (with_common, full_scan), (without, scan) = runs[True], runs[False]
        assert with_common.details["max_frequency"] <= COMMON_WINDOW_END
        np.testing.assert_array_equal(without.Q, with_common.Q)
        common = [entry for entry in scan if entry["max_frequency"] > COMMON_WINDOW_END]
        assert common and all("skipped" in entry for entry in common)
        assert [entry.get("score") for entry in scan if "skipped" not in entry] == [
            entry.get("score") for entry in full_scan
            if entry["max_frequency"] <= COMMON_WINDOW_END]

    def test_without_common_windows__a_scan_of_common_windows_alone_runs_them(self):
        dosage, _ = _family_sharing(0, n_common=2000, n_rare=2000)
        rng = np.random.default_rng(0)
        sample, rescore = snp_sample(dosage, 2000, rng), snp_sample(dosage, 4000, rng)
        best, scan = spectral_scan(dosage, 3, sample=sample, rescore_sample=rescore,
                                   windows=(0.5,), common_windows=False, seed=0)
        assert best is not None and best.Q is not None
        assert "skipped" not in scan[0]

    @pytest.mark.parametrize("individuals, serial", [(100, True), (120, False)])
    def test_spectral_scan__runs_blas_serially_below_the_size_where_its_threads_pay(
            self, monkeypatch, individuals, serial):
        # the windows' BLAS calls are too small for BLAS's threads; above the
        # limit the scan keeps the caller's
        from threadpoolctl import threadpool_limits

        from admixspec.spectral import estimate

        seen = blas_threads_in(monkeypatch, estimate, "spectral_pass")
        monkeypatch.setattr(estimate, "SERIAL_BLAS_BELOW", 110)
        dosage, _ = _family_sharing(0, m=individuals, n_common=1000, n_rare=2000)
        rng = np.random.default_rng(0)
        sample, rescore = snp_sample(dosage, 1000, rng), snp_sample(dosage, 2000, rng)
        with threadpool_limits(limits=2, user_api="blas"):
            callers = blas_threads()
            spectral_scan(dosage, 3, sample=sample, rescore_sample=rescore, seed=0)
        assert seen and all(threads == ({1} if serial else callers) for threads in seen)


class TestPrivacyPass:
    def test_private_allele_snps__keeps_private_alleles_and_counts_them(self):
        rng = np.random.default_rng(5)
        m, n = 400, 3000
        Q = rng.dirichlet(np.ones(3), size=m)
        P = np.full((n, 3), 0.04)  # shared by all three populations
        private = np.arange(0, n, 3)  # one population carries the counted allele
        P[private] = 0.0
        P[private, rng.integers(3, size=len(private))] = 0.12
        other = np.arange(1, n, 3)  # one population lacks the other allele
        P[other] = 1.0
        P[other, rng.integers(3, size=len(other))] = 0.88
        dosage = rng.binomial(2, Q @ P.T).astype(np.int8)
        snps, flip = private_allele_snps(dosage, Q, allele_counts(dosage), threshold=0.8,
                                         max_frequency=0.1)
        kinds = snps % 3
        assert np.mean(kinds != 2) > 0.97  # shared SNPs are not private
        assert np.sum(kinds == 0) > 0.8 * len(private)
        assert np.sum(kinds == 1) > 0.8 * len(other)
        np.testing.assert_array_equal(flip, kinds == 1)  # the rare, private allele

    def test_privacy_pass__anchored_and_accurate_on_private_alleles(self):
        dosage, Q, _ = _simulate("private", alpha=1.0)
        counts = allele_counts(dosage)
        rng = np.random.default_rng(0)
        sample, rescore = snp_sample(dosage, 4000, rng), snp_sample(dosage, 12000, rng)
        subspace = np.linalg.qr(Q)[0]
        rough = simplex_projection(Q + rng.normal(0, 0.1, Q.shape))
        result = privacy_pass(dosage, 3, rough, subspace, sample=sample,
                              rescore_sample=rescore, counts=counts, max_frequency=0.5,
                              seed=0)
        assert result.details["whitening"] == "anchored"
        # measured 0.026 from a start at 0.060 (40 individuals: the start's
        # least-squares P is noisy, so fewer SNPs pass than are private)
        assert q_error(Q, result.Q) < 0.035
        assert q_error(Q, result.Q) < 0.5 * q_error(Q, rough)


class TestSnpSelection:
    def test_rare_allele_snps__counts_minor_allele(self):
        counted = np.array([1, 3, 97, 50, 10])
        observed = np.full(5, 100)
        snps, flip = rare_allele_snps(counted, observed, min_count=2, max_frequency=0.05)
        assert snps.tolist() == [1, 2]
        assert flip.tolist() == [False, True]


class TestSearchCriteria:
    def test_true_subset_is_the_most_feasible(self):
        rng = np.random.default_rng(4)
        Q = rng.dirichlet(np.ones(3), size=30)
        truth = np.linalg.pinv(Q.T).T
        mixing = rng.dirichlet(np.ones(3), size=4)  # sum-to-one mixtures of truth rows
        candidates = np.vstack([truth, mixing @ truth])
        subsets = np.array([[0, 1, 2], [0, 1, 3], [3, 4, 5], [2, 5, 6]])
        scores = infeasibility(candidates, subsets)
        assert scores[0] < 1e-8
        assert np.all(scores[1:] > 1e-3)
        np.testing.assert_allclose(q_from_candidates(candidates[[0, 1, 2]]), Q,
                                   atol=1e-10)

    def test_infeasibility__is_the_pseudo_inverse_score_of_regular_and_singular_subsets(
            self):
        rng = np.random.default_rng(5)
        candidates = rng.standard_normal((8, 40))
        candidates[7] = candidates[0]  # subsets holding both are singular
        subsets = np.array(list(itertools.combinations(range(8), 3)))

        def by_pseudo_inverse(rows):
            Q_raw = np.linalg.pinv(candidates[rows].T).T
            return np.maximum(-Q_raw, 0).sum() + np.abs(Q_raw.sum(axis=1) - 1).sum()

        expected = [by_pseudo_inverse(rows) for rows in subsets]
        regular = [i for i, rows in enumerate(subsets) if not {0, 7} <= set(rows)]
        np.testing.assert_allclose(infeasibility(candidates, subsets[regular]),
                                   np.take(expected, regular), rtol=1e-10)
        # the singular subsets take the decomposition's pseudo-inverse
        np.testing.assert_allclose(infeasibility(candidates, subsets), expected,
                                   rtol=1e-10)

    @pytest.mark.parametrize("closeness", [1e-2, 1e-5])
    def test_infeasibility__is_the_pseudo_inverse_score_of_ill_conditioned_subsets(
            self, closeness):
        # Gram condition numbers about 1e5 (the Cholesky kernel's) and 1e11
        # (beyond its bound: the eigendecomposition's pseudo-inverse)
        rng = np.random.default_rng(6)
        candidates = rng.standard_normal((6, 50))
        candidates[5] = candidates[0] + closeness * rng.standard_normal(50)
        subsets = np.array(list(itertools.combinations(range(6), 4)))
        expected = [np.maximum(-(Q := np.linalg.pinv(candidates[rows].T).T), 0).sum()
                    + np.abs(Q.sum(axis=1) - 1).sum() for rows in subsets]
        np.testing.assert_allclose(infeasibility(candidates, subsets), expected,
                                   rtol=1e-6)

    def test_binomial_loglik__is_the_binomial_pmf_over_observed_calls(self):
        from scipy.special import comb
        from scipy.stats import binom

        rng = np.random.default_rng(7)
        Q = rng.dirichlet(np.ones(3), size=(2, 4, 12))  # two batch axes
        P = rng.uniform(0, 1, size=(2, 4, 30, 3))
        P[0, 0, 0] = 1.0  # a frequency of exactly 1 is clipped, not log(0)
        dosage = rng.integers(0, 3, size=(12, 30)).astype(np.int8)
        observed = rng.random((12, 30)) > 0.1
        dosage[~observed] = -1
        g = np.where(observed, dosage, 0)
        f = np.clip(Q @ np.swapaxes(P, -1, -2), P_MIN, P_MAX)
        expected = np.where(observed, binom.logpmf(g, 2, f) - np.log(comb(2, g)),
                            0.0).sum(axis=(-1, -2))
        got = binomial_loglik(dosage, Q, P)
        assert got.shape == (2, 4)
        np.testing.assert_allclose(got, expected, rtol=1e-12)

    @settings(max_examples=50, deadline=None)
    @given(arrays(np.float64, (6, 4), elements=st.floats(-5, 5)))
    def test_simplex_projection__rows_on_simplex(self, Y):
        projected = simplex_projection(Y)
        assert np.all(projected >= 0)
        np.testing.assert_allclose(projected.sum(axis=1), 1.0, atol=1e-9)

    @settings(max_examples=30, deadline=None)
    @given(arrays(np.float64, (5, 3), elements=st.floats(0.01, 1)))
    def test_simplex_projection__fixes_points_on_simplex(self, Y):
        on_simplex = Y / Y.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(simplex_projection(on_simplex), on_simplex,
                                   atol=1e-12)


class TestKHint:
    @pytest.mark.parametrize("K", [2, 3, 4, 5, 6])
    @pytest.mark.parametrize("alpha", [0.2, 1.0])
    def test_k_hint__finds_the_simulated_K(self, K, alpha):
        # Balding-Nichols, F_ST 0.1: the gap sat at the true K with ratio >= 3.5
        # for K = 2..6 at m = 200, 50k SNPs (measured); smaller data here
        from admixspec import simulate_balding_nichols

        sim = simulate_balding_nichols(150, 20_000, K, fst=0.1, alpha=alpha, seed=K)
        hint = k_hint(sim.genotypes.dosage, seed=0)
        assert hint.K == K
        assert hint.ratios[K - 2] == hint.ratios.max()

    @pytest.mark.parametrize("seed", [100, 101, 102, 103])
    def test_k_hint__finds_K_in_a_cohort_of_24(self, seed):
        # the rank-10 diagonal completion it used before fitted noise on so few
        # individuals and suggested 8-10 on each of these
        from admixspec import simulate_balding_nichols

        sim = simulate_balding_nichols(24, 5_000, 3, fst=0.1, alpha=0.2, seed=seed)
        assert k_hint(sim.genotypes.dosage, seed=0).K == 3

    def test_k_hint__unstructured_data_gives_no_gap(self):
        rng = np.random.default_rng(3)
        p = rng.uniform(0.05, 0.95, 5000)
        dosage = rng.binomial(2, p, size=(80, 5000)).astype(np.int8)
        assert k_hint(dosage, seed=0).K == 1

    def test_k_hint__a_large_cohort_is_sampled_and_keeps_its_K(self):
        from admixspec import simulate_balding_nichols

        sim = simulate_balding_nichols(400, 8_000, 3, fst=0.1, alpha=0.5, seed=4)
        hint = k_hint(sim.genotypes.dosage, seed=0, max_individuals=150)
        assert hint.n_individuals == 150 and hint.K == 3
        assert "8000 SNPs and 150 individuals" in hint.describe()

    def test_k_hint__a_cohort_within_the_cap_gives_the_same_hint(self):
        dosage = _simulate("private", m=40, n=3000, K=2, seed=1)[0]
        a = k_hint(dosage, seed=5)
        b = k_hint(dosage, seed=5, max_individuals=40)
        assert a.n_individuals == 40
        assert np.array_equal(a.eigenvalues, b.eigenvalues)

    @pytest.mark.parametrize(("argument", "value"), [
        ("seed", -1), ("k_max", 0), ("max_snps", 0), ("max_individuals", 0),
        ("min_ratio", 0.5),
    ])
    def test_k_hint__usage_error_naming_a_bad_setting(self, argument, value):
        # a negative seed raised NumPy's error; the others ran on nonsense
        from admixspec import UsageError

        dosage = _simulate("private", m=20, n=500, K=2, seed=1)[0]
        with pytest.raises(UsageError, match=f"^{argument} must be"):
            k_hint(dosage, **{argument: value})

    def test_k_hint__of_some_rows_is_the_hint_of_those_rows(self):
        dosage = _simulate("private", m=60, n=3000, K=2, seed=2)[0]
        rows = np.arange(5, 60, 2)
        a = k_hint(dosage, individuals=rows, seed=1)
        b = k_hint(dosage[rows], seed=1)
        assert a.n_individuals == len(rows)
        assert np.array_equal(a.eigenvalues, b.eigenvalues)

    def test_k_hint__same_seed_same_hint(self):
        dosage = _simulate("private", m=40, n=3000, K=2, seed=1)[0]
        a, b = k_hint(dosage, seed=5), k_hint(dosage, seed=5)
        assert a.K == b.K and np.array_equal(a.eigenvalues, b.eigenvalues)
