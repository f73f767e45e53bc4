import numpy as np
import pytest

from admixspec import UsageError, fit_admixture, simulate_balding_nichols
from admixspec.ml._kernels.likelihood import fold_of
from admixspec.ml.crossval import CVResult, cross_validate, format_cv


def _cv_best_k(G, ks, seed, folds=5, tol=None):
    errors = {k: cross_validate(G, k, folds=folds, seed=seed, tol=tol).error for k in ks}
    return min(errors, key=errors.get), errors


class TestCrossValidate:
    def test_cross_validate__picks_true_k_small(self):
        sim = simulate_balding_nichols(90, 2000, 3, fst=0.2, alpha=0.3, seed=51)
        best, errors = _cv_best_k(sim.genotypes.dosage, [2, 3, 4], seed=0, folds=3,
                                  tol=1e-2)
        assert best == 3, errors

    def test_cross_validate__fold_errors_average_to_error(self):
        sim = simulate_balding_nichols(30, 1000, 2, fst=0.2, seed=52)
        res = cross_validate(sim.genotypes.dosage, 2, folds=4, seed=3, tol=1e-2)
        assert isinstance(res, CVResult) and res.fold_errors.shape == (4,)
        assert res.error == pytest.approx(res.fold_errors.mean(), rel=0.02)

    def test_cross_validate__custom_fit_is_used(self):
        sim = simulate_balding_nichols(30, 1000, 2, fst=0.2, seed=53)
        calls = []

        def truth_fit(Gm, K, seed):
            calls.append(int((Gm < 0).sum()))
            return sim.Q, sim.P

        res = cross_validate(sim.genotypes.dosage, 2, folds=3, seed=0, fit=truth_fit)
        assert len(calls) == 3
        # each fold masks about a third of the entries
        assert all(abs(c / sim.genotypes.dosage.size - 1 / 3) < 0.02 for c in calls)
        assert 0 < res.error < 1

    def test_cross_validate__one_fold_raises(self):
        sim = simulate_balding_nichols(10, 100, 2, seed=0)
        with pytest.raises(UsageError):
            cross_validate(sim.genotypes.dosage, 2, folds=1)

    def test_format_cv__admixture_line(self):
        assert format_cv(2, CVResult(0.4819, np.zeros(1))) == "CV error (K=2): 0.48190"

    def test_cv_of_a_spectral_estimate__folds_start_from_the_likelihood_optimum(self):
        # as ADMIXTURE's folds start from its full-data fit: the spectral
        # estimate kept by the default is not a maximum of the likelihood
        sim = simulate_balding_nichols(200, 4000, 3, fst=0.1, alpha=10.0, seed=3)
        result = fit_admixture(sim.genotypes, 3, seed=0, cv=3)
        assert result.path == "spectral"
        from_optimum = cross_validate(sim.genotypes.dosage, 3, folds=3, seed=0)
        assert result.cv.error == from_optimum.error
        assert any(line.startswith("CV: the folds start from a maximum-likelihood fit")
                   for line in result.log_lines)

    def test_fold_of__balanced(self):
        folds = np.array([fold_of(i, j, 100, 7, 5)
                          for i in range(20) for j in range(100)])
        counts = np.bincount(folds, minlength=5)
        assert counts.min() > 330 and counts.max() < 470


@pytest.mark.slow
class TestCrossValidateStudy:
    # K = K_true + 1 has flat directions: its full-data fit may stop at max_iter
    # (ConvergenceWarning), as it would for a user; the CV error still ranks it
    @pytest.mark.filterwarnings("ignore::admixspec.ConvergenceWarning")
    @pytest.mark.parametrize("K_true", [2, 3, 4, 5])
    def test_cross_validate__picks_true_k_issue_setting(self, K_true):
        sim = simulate_balding_nichols(200, 50_000, K_true, fst=0.1, alpha=0.5,
                                       seed=100 + K_true)
        best, errors = _cv_best_k(sim.genotypes.dosage, range(max(1, K_true - 1),
                                                             K_true + 2), seed=0)
        assert best == K_true, errors


class TestCrossValidationOfFixedReferenceFits:
    """--cv refits a supervised fit or a projection as the point estimate was fitted."""

    def _labelled(self):
        sim = simulate_balding_nichols(60, 3000, 2, fst=0.2, alpha=1.0,
                                       unadmixed_fraction=0.5, seed=3)
        reference = sim.Q.max(axis=1) > 0.999
        return sim, list(np.where(reference, np.where(sim.Q.argmax(axis=1) == 0, "A",
                                                      "B"), None))

    @pytest.mark.parametrize("method", ["supervised", "projection"])
    def test_folds_are_never_refitted_unsupervised(self, method, monkeypatch):
        # the folds ran unsupervised maximum likelihood, which frees the labelled
        # rows' Q and re-estimates a projection's P
        def unsupervised(*args, **kwargs):
            raise AssertionError("a fold was refitted unsupervised")

        monkeypatch.setattr("admixspec.ml.crossval.fit_ml", unsupervised)
        sim, labels = self._labelled()
        fixed = {"supervised": {"labels": labels}, "projection": {"P": sim.P}}[method]
        result = fit_admixture(sim.genotypes, 2, cv=5, seed=0, **fixed)
        assert 0.3 < result.cv.error < 0.8
