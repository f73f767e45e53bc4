import numpy as np
import pytest

from admixspec import UsageError, simulate_balding_nichols
from admixspec.ml.bootstrap import bootstrap


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
