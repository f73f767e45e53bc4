"""Parity with ADMIXTURE 1.3's own runs on the tutorial HapMap3 data.

Skips when ../shared/realdata is absent (a user's clone). The fits for K >= 2
and the CV ordering are slow (minutes on a loaded 2-core machine) and marked
``slow``; run them with ``pytest -m slow tests/test_hapmap3_parity.py``.
"""

import re
from pathlib import Path

import numpy as np
import pytest

HAPMAP3 = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata" / (
    "hapmap3_admixture_tutorial")


def _admixture(K):
    folder = HAPMAP3 if K == 3 else HAPMAP3 / "starmie_extdata"
    Q = np.loadtxt(folder / f"hapmap3.{K}.Q").reshape(-1, K)
    P = np.loadtxt(folder / f"hapmap3.{K}.P").reshape(-1, K)
    log = (HAPMAP3 / "starmie_extdata" / f"log{K}.out").read_text()
    ll = float(re.findall(r"^Loglikelihood: (\S+)", log, re.M)[-1])
    cv = float(re.search(r"CV error \(K=\d+\): (\S+)", log).group(1))
    return Q, P, ll, cv


def _admixture_iterations(K):
    """ADMIXTURE's iterations in its main run: its 5 EM steps plus its QN/Block ones."""
    log = (HAPMAP3 / "starmie_extdata" / f"log{K}.out").read_text()
    return len(re.findall(r"^\d+ \((?:EM|QN/Block)\)", log.split("Converged")[0], re.M))


@pytest.fixture
def dosage_fixture(hapmap3_fixture):
    from admixspec import read_genotypes

    # ADMIXTURE keeps monomorphic SNPs: keep them too so log-likelihoods compare
    return read_genotypes(hapmap3_fixture / "hapmap3.bed", drop_monomorphic=False).dosage


class TestLoglikelihoodParity:
    @pytest.mark.parametrize("K", [1, 3, 5])
    def test_loglikelihood__recomputes_admixture_logged_value(self, dosage_fixture, K):
        from admixspec import loglikelihood

        Q, P, ll, _ = _admixture(K)
        # ADMIXTURE prints P and Q to 6 decimals: agreement to ~1e-8 relative
        assert loglikelihood(dosage_fixture, Q, P) == pytest.approx(ll, rel=1e-8)

    def test_fit_ml__k1_matches_admixture(self, dosage_fixture):
        from admixspec import fit_ml

        _, _, ll, _ = _admixture(1)
        assert fit_ml(dosage_fixture, 1).loglik == pytest.approx(ll, rel=1e-9)


@pytest.mark.slow
class TestFitParity:
    @pytest.mark.parametrize("K", [2, 3, 4, 5])
    def test_fit_ml__reaches_admixture_loglik_and_q(self, dosage_fixture, K):
        from admixspec import fit_ml, q_error

        Q_ref, _, ll_ref, _ = _admixture(K)
        res = fit_ml(dosage_fixture, K, seed=1)
        rel = (res.loglik - ll_ref) / abs(ll_ref)
        assert res.converged and rel > -1e-6
        # issue #12: every pass of every screened start counts
        assert res.n_passes <= 3 * _admixture_iterations(K)
        if rel < 1e-6:
            # same optimum as ADMIXTURE: same Q (measured 5.5e-6 / 4.2e-5 for K=2/3)
            assert q_error(Q_ref, res.Q) < 1e-3
        # else a strictly better optimum was found (measured for K=4: +1.15e-4
        # relative, Q differs by 0.028; K=5: +4.03e-4): Q parity does not apply

    def test_cross_validate__reproduces_admixture_cv_ordering(self, dosage_fixture):
        from admixspec import cross_validate, fit_ml

        ours, theirs = {}, {}
        for K in range(1, 6):
            _, _, _, theirs[K] = _admixture(K)
            full = fit_ml(dosage_fixture, K, seed=1)
            ours[K] = cross_validate(dosage_fixture, K, seed=1,
                                     start=(full.Q, full.P)).error
        assert sorted(ours, key=ours.get) == sorted(theirs, key=theirs.get), ours
