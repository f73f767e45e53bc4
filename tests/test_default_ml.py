"""The default's maximum-likelihood fit: plain ML's, with the spectral start screened."""

from __future__ import annotations

import numpy as np
import pytest

from admixspec import (
    fit_admixture,
    fit_ml,
    read_genotypes,
    simulate_admixture,
    simulate_balding_nichols,
)
from admixspec.fit.default import _best_ml_fit
from admixspec.fit.result import FitLog

from .conftest import HAPMAP3, require_realdata


def _best(G, K, Q0, *, screen=True, seed=0):
    log = FitLog()
    fit, diagnostics = _best_ml_fit(G, K, {"spectral estimate": (Q0, None)},
                                    screen=screen, tol=1e-4, max_iter=1000, seed=seed,
                                    threads=None, log=log)
    return fit, diagnostics, log


class TestDefaultML:
    def test_default__names_the_start_it_continued(self):
        # rare alleles and anchors: ML chosen after the spectral stage
        sim = simulate_admixture(50, 3, alpha=0.1, n_snps=10_000, seed=1)
        default = fit_admixture(sim.genotypes, 3, seed=0)
        labels = default.diagnostics["ml_starts"]
        assert default.path == "spectral+ml"
        assert default.diagnostics["ml_start"] in labels
        assert labels[-1] == "spectral estimate"
        line = next(x for x in default.log_lines if x.startswith("ML starts screened: "))
        assert line.endswith(f"continued the {default.diagnostics['ml_start']}")
        # one fit: the likelihood stage is that fit's time
        assert default.converged

    @pytest.mark.parametrize("seed", [2, 3, 4])
    def test_screen__never_below_plain_ml(self, seed):
        # a poor spectral start (random proportions) is screened out, and the fit
        # is plain ML's own; the truth as the start may win, never to end lower
        sim = simulate_balding_nichols(120, 3000, 4, fst=0.1, alpha=0.3, seed=seed)
        G = sim.genotypes.dosage
        plain = fit_ml(G, 4, seed=0)
        poor = np.random.default_rng(seed).dirichlet(np.ones(4), size=120)
        fit, diagnostics, _ = _best(G, 4, poor)
        assert diagnostics["ml_start"] != "spectral estimate"
        assert fit.loglik == plain.loglik
        np.testing.assert_array_equal(fit.Q, plain.Q)
        fit, _, _ = _best(G, 4, sim.Q)
        assert fit.loglik >= plain.loglik - 1e-9 * abs(plain.loglik)

    def test_screen__costs_one_fit(self):
        # the spectral start adds its screen to plain ML's passes: its first
        # map (1 pass) and one accelerated iteration (2), not a fit
        sim = simulate_balding_nichols(100, 3000, 3, fst=0.1, alpha=0.5, seed=6)
        G = sim.genotypes.dosage
        poor = np.random.default_rng(0).dirichlet(np.ones(3), size=100)
        fit, _, _ = _best(G, 3, poor)
        plain = fit_ml(G, 3, seed=0)
        assert fit.n_passes == plain.n_passes + 3

    def test_refine__climbs_from_the_spectral_estimate_only(self):
        sim = simulate_balding_nichols(60, 2000, 2, fst=0.2, alpha=0.5, seed=3)
        result = fit_admixture(sim.genotypes, 2, seed=0, refine=True)
        assert result.path == "spectral+ml"
        assert "ml_starts" not in result.diagnostics
        fit, diagnostics, log = _best(sim.genotypes.dosage, 2, sim.Q, screen=False)
        assert diagnostics == {} and fit.init == "given Q"
        assert not any(x.startswith("ML starts") for x in log.lines)


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
