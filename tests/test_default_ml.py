"""The default's maximum-likelihood fit is plain ML's; fit_ml screens extra starts."""

from __future__ import annotations

import numpy as np
import pytest

from admixspec import (
    fit_admixture,
    fit_ml,
    read_genotypes,
    simulate_balding_nichols,
)
from admixspec.fit.monomorphic import monomorphic_snps

from .conftest import HAPMAP3, require_realdata


class TestExtraStarts:
    @pytest.mark.parametrize("seed", [2, 3, 4])
    def test_screen__never_below_plain_ml(self, seed):
        # a poor extra start (random proportions) is screened out, and the fit
        # is plain ML's own; the truth as the start may win, never to end lower
        sim = simulate_balding_nichols(120, 3000, 4, fst=0.1, alpha=0.3, seed=seed)
        G = sim.genotypes.dosage
        plain = fit_ml(G, 4, seed=0)
        poor = np.random.default_rng(seed).dirichlet(np.ones(4), size=120)
        fit = fit_ml(G, 4, seed=0, extra_starts=[(poor, None)])
        assert fit.diagnostics["start"] < fit.diagnostics["starts"] - 1
        assert fit.loglik == plain.loglik
        np.testing.assert_array_equal(fit.Q, plain.Q)
        fit = fit_ml(G, 4, seed=0, extra_starts=[(sim.Q, None)])
        assert fit.loglik >= plain.loglik - 1e-9 * abs(plain.loglik)

    def test_screen__costs_one_fit(self):
        # an extra start adds its screen to plain ML's passes: its first map
        # (1 pass) and one accelerated iteration (2), not a fit
        sim = simulate_balding_nichols(100, 3000, 3, fst=0.1, alpha=0.5, seed=6)
        G = sim.genotypes.dosage
        poor = np.random.default_rng(0).dirichlet(np.ones(3), size=100)
        fit = fit_ml(G, 3, seed=0, extra_starts=[(poor, None)])
        plain = fit_ml(G, 3, seed=0)
        assert fit.n_passes == plain.n_passes + 3


class TestDefaultML:
    def test_refine__climbs_from_the_spectral_estimate(self):
        # asked for (refine=True), the spectral estimate is ML's one start
        sim = simulate_balding_nichols(60, 2000, 2, fst=0.2, alpha=0.5, seed=3)
        spectral = fit_admixture(sim.genotypes, 2, seed=0, refine=False)
        refined = fit_admixture(sim.genotypes, 2, seed=0, refine=True)
        assert refined.path == "spectral+ml"
        assert "ML start: the spectral estimate (--refine)" in refined.log_lines
        dosage = sim.genotypes.dosage  # fit_admixture leaves monomorphic SNPs out
        direct = fit_ml(dosage[:, ~monomorphic_snps(dosage)[0]], 2, Q0=spectral.Q,
                        seed=0)
        np.testing.assert_array_equal(refined.Q, direct.Q)
        plain = fit_admixture(sim.genotypes, 2, seed=0, init="svd")
        assert not np.array_equal(refined.Q, plain.Q)


@pytest.mark.slow
class TestDefaultMLHapMap3:
    def test_k4__default_is_plain_ml(self):
        # HapMap3 at K = 4 has several local maxima (10 SVD + ALS starts ended
        # in 6 different ones); array data have few rare alleles, so the default
        # decides on ML before the spectral stage and its fit is plain ML's
        require_realdata(HAPMAP3)
        genotypes = read_genotypes(HAPMAP3 / "hapmap3.bed")
        default = fit_admixture(genotypes, 4, seed=43)
        plain = fit_admixture(genotypes, 4, seed=43, init="svd")
        assert default.path == "ml-svd"
        assert default.loglik == plain.loglik
        np.testing.assert_array_equal(default.Q, plain.Q)


def test_fit_admixture__counts_alleles_once(monkeypatch):
    # the monomorphic-SNP filter's counts serve the default's stages too: one
    # pass over the genotypes, not one per layer
    from admixspec.core import genotypes
    from admixspec.fit import default, monomorphic

    calls = []

    def counting(G):
        calls.append(G.shape)
        return genotypes.allele_counts(G)

    monkeypatch.setattr(monomorphic, "allele_counts", counting)
    monkeypatch.setattr(default, "allele_counts", counting)
    sim = simulate_balding_nichols(40, 1500, 2, fst=0.2, alpha=0.5, seed=3)
    G = sim.genotypes.dosage.copy()
    G[:, :4] = 0  # monomorphic SNPs, dropped from the fit and put back
    result = fit_admixture(G, 2, seed=0)
    assert calls == [G.shape]
    assert result.P.shape == (1500, 2)
