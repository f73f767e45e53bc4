"""fit_admixture: the public estimator and the paths it takes."""

import numpy as np
import pytest

import admixspec.model as model
from admixspec import InputError, UsageError, simulate_balding_nichols
from admixspec.ml.likelihood import loglikelihood
from admixspec.metrics import q_error
from admixspec.model import fit_admixture, rare_allele_share, refinement_decision

from .reference import simulate_structured


class TestFitAdmixture:
    def test_single_population__is_allele_frequency(self):
        sim = simulate_balding_nichols(30, 500, 2, seed=0, missing_rate=0.05)
        result = fit_admixture(sim.genotypes, 1)
        G = sim.genotypes.dosage
        observed = G >= 0
        frequency = np.where(observed, G, 0).sum(axis=0) / (2 * observed.sum(axis=0))
        np.testing.assert_allclose(result.P[:, 0], np.clip(frequency, 1e-5, 1 - 1e-5))
        np.testing.assert_array_equal(result.Q, 1.0)
        assert result.path == "single-population"
        assert result.loglik == pytest.approx(loglikelihood(G, result.Q, result.P))

    @pytest.mark.parametrize("alpha", [0.5, 2.0])
    def test_private_alleles__spectral_estimate_is_accurate(self, alpha):
        dosage, Q, _ = simulate_structured("private", m=50, n=15_000, alpha=alpha, seed=1)
        result = fit_admixture(dosage, 3, seed=0, refine=False)
        assert result.path == "spectral"
        assert q_error(Q, result.Q) < 0.03
        assert result.diagnostics["local_maxima"] >= 3
        assert result.loglik == pytest.approx(loglikelihood(dosage, result.Q, result.P))

    def test_missing_genotypes__cost_little_accuracy(self):
        complete, Q, _ = simulate_structured("private", m=50, n=15_000, seed=2)
        holes = complete.copy()
        holes[np.random.default_rng(3).random(holes.shape) < 0.05] = -1
        error_complete = q_error(Q, fit_admixture(complete, 3, seed=0, refine=False).Q)
        result = fit_admixture(holes, 3, seed=0, refine=False)
        assert "missing_imputation" in result.diagnostics
        assert q_error(Q, result.Q) < 1.2 * error_complete + 0.005

    def test_balding_nichols__refined_estimate_is_accurate(self):
        sim = simulate_balding_nichols(80, 4000, 2, fst=0.2, alpha=0.3, seed=4)
        result = fit_admixture(sim.genotypes, 2, seed=0, refine=True)
        assert result.path == "spectral+ml"
        assert q_error(sim.Q, result.Q) < 0.03

    def test_same_seed__same_result(self):
        dosage, _, _ = simulate_structured("private", m=30, n=4000, seed=5)
        first = fit_admixture(dosage, 3, seed=11)
        second = fit_admixture(dosage, 3, seed=11)
        np.testing.assert_array_equal(first.Q, second.Q)
        np.testing.assert_array_equal(first.P, second.P)

    def test_no_spectral_candidates__falls_back_to_likelihood(self, monkeypatch):
        monkeypatch.setattr(model, "spectral_scan", lambda *args, **kwargs: (None, []))
        sim = simulate_balding_nichols(60, 3000, 2, fst=0.2, alpha=0.3, seed=6)
        result = fit_admixture(sim.genotypes, 2, seed=0)
        assert result.path == "ml-fallback"
        assert "fallback_reason" in result.diagnostics
        assert q_error(sim.Q, result.Q) < 0.03

    @pytest.mark.parametrize("K", [0, 5])
    def test_invalid_K__is_a_usage_error(self, K):
        with pytest.raises(UsageError, match="K must be"):
            fit_admixture(np.zeros((5, 5), dtype=np.int8), K)

    def test_invalid_refine__is_a_usage_error(self):
        with pytest.raises(UsageError, match="refine"):
            fit_admixture(np.zeros((5, 5), dtype=np.int8), 2, refine="sometimes")


class TestRefinementDecision:
    def test_anchors_in_every_component__refine(self):
        Q = np.array([[0.95, 0.05], [0.02, 0.98], [0.5, 0.5]])
        assert refinement_decision(Q, 0.5)[0]

    def test_component_without_anchor__keep_spectral(self):
        Q = np.array([[0.95, 0.05], [0.3, 0.7], [0.5, 0.5]])
        refine, reason = refinement_decision(Q, 0.5)
        assert not refine
        assert "[1]" in reason

    def test_few_rare_alleles__refine(self):
        Q = np.array([[0.95, 0.05], [0.3, 0.7], [0.5, 0.5]])
        refine, reason = refinement_decision(Q, 0.05)
        assert refine
        assert "minor allele frequency" in reason

    def test_rare_allele_share__counts_low_frequency_polymorphic_snps(self):
        dosage = np.zeros((20, 4), dtype=np.int8)  # 40 alleles per SNP
        dosage[0, 0] = 1  # 1/40 = 2.5%: rare
        dosage[:5, 1] = 1  # 5/40 = 12.5%
        dosage[:, 2] = 2  # monomorphic: not counted
        dosage[:10, 3] = 1  # 25%
        assert rare_allele_share(dosage) == pytest.approx(1 / 3)


class TestFitAdmixtureInput:
    @pytest.mark.parametrize(
        ("bad", "match"),
        [
            (1.9, r"dosage\[3, 7\] = 1.9 .*fractional"),
            (256, r"dosage\[3, 7\] = 256"),
            (-5, r"dosage\[3, 7\] = -5"),
        ],
    )
    def test_fit_admixture__bad_dosage_raises_input_error(self, bad, match):
        sim = simulate_balding_nichols(30, 200, 2, fst=0.3, seed=4)
        dosage = sim.genotypes.dosage.astype(np.float64 if bad == 1.9 else np.int16)
        dosage[3, 7] = bad
        with pytest.raises(InputError, match=match):
            fit_admixture(dosage, 2, seed=1)

    def test_fit_admixture__transposed_genotypes_raise_input_error(self):
        sim = simulate_balding_nichols(30, 200, 2, fst=0.3, seed=4)
        genotypes = sim.genotypes
        genotypes.dosage = np.ascontiguousarray(genotypes.dosage.T)
        with pytest.raises(InputError, match="SNP-major"):
            fit_admixture(genotypes, 2, seed=1)
