import numpy as np
import pytest

from admixspec import UsageError, fit_admixture, q_error, simulate_balding_nichols
from admixspec.ml.bootstrap import bootstrap

from .reference import simulate_structured


class TestBootstrap:
    def test_bootstrap__se_halves_when_snps_quadruple(self):
        sim = simulate_balding_nichols(30, 8000, 2, fst=0.2, alpha=1.0, seed=41)
        G = sim.genotypes.dosage
        small = bootstrap(G[:, :2000], 2, n_replicates=16, seed=0, tol=1e-2)
        large = bootstrap(G, 2, n_replicates=16, seed=0, tol=1e-2)
        ratio = small.Q_se.mean() / large.Q_se.mean()
        assert 2 * 0.7 < ratio < 2 * 1.3

    def test_bootstrap__bias_small_against_se(self):
        sim = simulate_balding_nichols(30, 2000, 2, fst=0.2, alpha=1.0, seed=42)
        res = bootstrap(sim.genotypes.dosage, 2, n_replicates=8, seed=1, tol=1e-2)
        assert res.Q_se.shape == res.Q_bias.shape == (30, 2)
        assert np.abs(res.Q_bias).mean() < 2 * res.Q_se.mean()

    def test_bootstrap__one_replicate_raises(self):
        sim = simulate_balding_nichols(10, 100, 2, seed=0)
        with pytest.raises(UsageError):
            bootstrap(sim.genotypes.dosage, 2, n_replicates=1)

    def test_bootstrap_of_a_spectral_estimate__refits_the_spectral_estimate(self):
        # private alleles: the spectral estimate is consistent and kept; ML
        # refitted from it drifts towards the corners, and the replicates'
        # mean offset then reported that drift (0.05) as the estimate's bias
        dosage, Q, _ = simulate_structured("private", m=100, n=5000, alpha=1.0, seed=5)
        result = fit_admixture(dosage, 3, seed=0, bootstrap=8)
        assert result.path == "spectral"
        assert q_error(Q, result.Q) < 0.03
        assert np.abs(result.bootstrap.Q_bias).mean() < 0.01
        assert 0.005 < result.bootstrap.Q_se.mean() < 0.05
        assert result.log_lines[-1] == ("Bootstrap: 8 replicates over blocks of SNPs, "
                                        "each refitted by its spectral estimate")


def _half_labelled(seed):
    """Balding-Nichols data whose unadmixed half is labelled by population."""
    sim = simulate_balding_nichols(60, 3000, 2, fst=0.2, alpha=1.0,
                                   unadmixed_fraction=0.5, seed=seed)
    reference = sim.Q.max(axis=1) > 0.999
    labels = np.where(reference, np.where(sim.Q.argmax(axis=1) == 0, "A", "B"), None)
    return sim, reference, list(labels)


class TestBootstrapOfFixedReferenceFits:
    """-B refits a supervised fit or a projection as the point estimate was fitted."""

    def test_bootstrap_of_a_supervised_fit__reference_rows_have_no_spread(self):
        # refitted unsupervised, the labelled rows got SEs up to 0.033
        sim, reference, labels = _half_labelled(3)
        result = fit_admixture(sim.genotypes, 2, labels=labels, bootstrap=4, seed=0)
        se, bias = result.bootstrap
        assert se[reference].max() == 0 and np.abs(bias[reference]).max() == 0
        assert se[~reference].mean() > 0.005
        # the JSON says so, which tells its .Q_se from one an earlier run left
        assert result.record()["bootstrap"] is True
        assert "bootstrap" not in fit_admixture(sim.genotypes, 2, labels=labels).record()

    def test_bootstrap_of_a_projection__never_re_estimates_P(self, monkeypatch):
        # each replicate is projected onto its resampled rows of P; maximum
        # likelihood (which moves P) ran before
        def moves_p(*args, **kwargs):
            raise AssertionError("a replicate re-estimated P")

        monkeypatch.setattr("admixspec.ml.bootstrap.fit_ml", moves_p)
        sim = simulate_balding_nichols(40, 3000, 2, fst=0.2, seed=4)
        result = fit_admixture(sim.genotypes, 2, P=sim.P, bootstrap=4, seed=0)
        se, bias = result.bootstrap
        assert 0 < se.mean() < 0.05 and np.abs(bias).mean() < 0.02
        assert result.log_lines[-1].endswith("each refitted as the point estimate "
                                             "was (projection)")
