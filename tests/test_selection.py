"""choose_estimator: the default's held-out-likelihood choice, tested against truth."""

import numpy as np
import pytest

from admixspec import simulate_balding_nichols
from admixspec.core.metrics import q_error
from admixspec.ml.likelihood import loglikelihood
from admixspec.fit.admixture import fit_admixture
from admixspec.ml.project import maximize_p
from admixspec.fit.choice import (
    EFFECT_THRESHOLD,
    _held_out_folds,
    choose_estimator,
    individual_logliks,
)

from .reference import simulate_structured


def _spectral_p(G, Q):
    return maximize_p(G, Q).P


def _both_errors(G, Q_true, K=3):
    spectral = fit_admixture(G, K, seed=0, refine=False)
    refined = fit_admixture(G, K, seed=0, refine=True)
    return spectral, q_error(Q_true, spectral.Q), q_error(Q_true, refined.Q)


class TestChooseEstimator:
    def test_private_alleles_without_anchors__keeps_spectral(self):
        # nobody unadmixed: ML drifts along its flat directions (measured error
        # 0.088 against spectral 0.013); ML's P predicts held-out people no better
        G, Q, _ = simulate_structured("private", m=60, n=8000, alpha=1.0, seed=1)
        spectral, spectral_error, ml_error = _both_errors(G, Q)
        choice = choose_estimator(G, spectral.Q, _spectral_p, seed=0)
        assert spectral_error < ml_error
        assert choice.estimator == "spectral"
        assert choice.evidence["effect"] <= EFFECT_THRESHOLD

    def test_shared_alleles_with_references__chooses_ml(self):
        # Balding-Nichols frequencies: no private alleles, the spectral estimate is
        # biased (0.18 against ML's 0.023) and its P predicts new people worse
        sim = simulate_balding_nichols(80, 4000, 3, fst=0.1, alpha=1.0,
                                       unadmixed_fraction=0.25, seed=1)
        G = sim.genotypes.dosage
        spectral, spectral_error, ml_error = _both_errors(G, sim.Q)
        choice = choose_estimator(G, spectral.Q, _spectral_p, seed=0)
        assert ml_error < spectral_error
        assert choice.estimator == "spectral+ml"
        assert choice.evidence["effect"] > EFFECT_THRESHOLD
        assert "effect " in choice.reason

    def test_same_seed__same_evidence(self):
        sim = simulate_balding_nichols(40, 1500, 2, fst=0.2, alpha=0.5, seed=3)
        G = sim.genotypes.dosage
        Q = fit_admixture(G, 2, seed=0, refine=False).Q
        first = choose_estimator(G, Q, _spectral_p, seed=5)
        second = choose_estimator(G, Q, _spectral_p, seed=5)
        assert first.evidence["held_out"] == 40  # every individual, in 4 folds
        assert first.evidence["folds"] == 4
        assert first.evidence["effect"] == second.evidence["effect"]

    def test_too_few_individuals__maximum_likelihood(self):
        G = np.zeros((10, 50), dtype=np.int8)
        choice = choose_estimator(G, np.full((10, 2), 0.5), _spectral_p, seed=0)
        assert choice.estimator == "spectral+ml"
        assert "too few" in choice.reason


class TestHeldOutFolds:
    def test_small_data__hold_out_everyone_once(self):
        folds = _held_out_folds(60, np.random.default_rng(0))
        assert len(folds) == 4
        np.testing.assert_array_equal(np.sort(np.concatenate(folds)), np.arange(60))

    def test_large_data__hold_out_one_random_quarter(self):
        folds = _held_out_folds(400, np.random.default_rng(0))
        assert len(folds) == 1
        assert len(folds[0]) == 100 == len(np.unique(folds[0]))


class TestIndividualLogliks:
    def test_sum__is_the_model_loglikelihood(self):
        sim = simulate_balding_nichols(30, 700, 3, fst=0.2, seed=2, missing_rate=0.1)
        G = sim.genotypes.dosage
        per_individual = individual_logliks(G, sim.Q, sim.P)
        assert per_individual.shape == (30,)
        assert per_individual.sum() == pytest.approx(loglikelihood(G, sim.Q, sim.P),
                                                     rel=1e-10)
