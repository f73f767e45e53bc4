"""fit_admixture: the public estimator and the paths it takes."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

import admixspec.fit.default as default_path
from admixspec import (
    InputError,
    UsageError,
    simulate_admixture,
    simulate_balding_nichols,
)
from admixspec.core.metrics import q_error
from admixspec.fit.admixture import fit_admixture
from admixspec.fit.default import rare_allele_share
from admixspec.ml.likelihood import loglikelihood

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
        dosage, Q, _ = simulate_structured("private", m=50, n=15_000, alpha=alpha,
                                           seed=1)
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
        monkeypatch.setattr(default_path, "spectral_scan",
                            lambda *args, **kwargs: (None, []))
        sim = simulate_balding_nichols(60, 3000, 2, fst=0.2, alpha=0.3, seed=6)
        # refine=True: with the default's "auto", these few rare alleles would
        # skip the spectral stage altogether (path ml-svd)
        result = fit_admixture(sim.genotypes, 2, seed=0, refine=True)
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
    def test_default__follows_the_choice(self):
        # which estimator is right is tested against truth in test_choice.py;
        # here few rare alleles: ML decided before the spectral stage
        sim = simulate_balding_nichols(80, 4000, 3, fst=0.1, alpha=1.0,
                                       unadmixed_fraction=0.25, seed=1)
        default = fit_admixture(sim.genotypes, 3, seed=0)
        choice = default.diagnostics["choice"]
        assert choice["estimator"] == "ml"
        assert default.path == "ml-svd"
        assert choice["statistics"]["rare_allele_share"] == \
            default.diagnostics["rare_allele_share"]
        reason = default.diagnostics["refine_reason"]
        assert reason == choice["reason"]
        assert f"Refine reason: {reason}" in default.log_lines

    def test_default_ml__is_plain_ml_bit_for_bit(self):
        # the default's ML after the spectral stage (the seed paper's setting at
        # alpha = 0.1: rare alleles, anchors) is one fit, plain ML's own (as
        # --init svd, same seed): the spectral estimate decided the estimator
        sim = simulate_admixture(50, 3, alpha=0.1, n_snps=10_000, seed=1)
        default = fit_admixture(sim.genotypes, 3, seed=0)
        plain = fit_admixture(sim.genotypes, 3, seed=0, init="svd")
        assert default.path == "spectral+ml"
        assert plain.path == "ml-svd"
        np.testing.assert_array_equal(default.Q, plain.Q)
        np.testing.assert_array_equal(default.P, plain.P)
        assert default.loglik == plain.loglik
        assert "spectral" in default.timings
        start = "plain maximum likelihood's own (its SVD + ALS starts, as --init svd)"
        assert default.diagnostics["ml_start"] == start
        assert f"ML start: {start}" in default.log_lines

    @pytest.mark.parametrize(("refine", "path"), [(True, "spectral+ml"),
                                                  (False, "spectral")])
    def test_refine_override__skips_the_choice(self, refine, path):
        sim = simulate_balding_nichols(40, 1500, 2, fst=0.2, alpha=0.5, seed=3)
        result = fit_admixture(sim.genotypes, 2, seed=0, refine=refine)
        assert result.path == path
        assert "choice" not in result.diagnostics
        assert result.diagnostics["refine_reason"] == "requested"

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


def _masked(lines):
    """Log lines without wall times (they differ between any two runs)."""
    return [re.sub(r"Elapsed: [0-9.]+", "Elapsed: *", line) for line in lines]


@pytest.fixture(scope="module")
def cli_data_fixture(tmp_path_factory):
    """A small PLINK data set with reference labels and a P file to project onto."""
    from admixspec.io import read_genotypes, write_p, write_simulation

    folder = tmp_path_factory.mktemp("dispatch")
    sim = simulate_balding_nichols(40, 2000, 2, fst=0.2, unadmixed_fraction=0.5, seed=4)
    write_simulation(sim, folder / "sim", vcf=False)
    pop = [p if i % 2 == 0 else "-" for i, p in enumerate(sim.populations)]
    (folder / "sim.pop").write_text("".join(f"{p}\n" for p in pop))
    # the true P of the SNPs the reader keeps (it drops monomorphic ones)
    kept = read_genotypes(folder / "sim.bed").variants["id"]
    rows = sim.genotypes.variants.reset_index().set_index("id").loc[kept, "index"]
    write_p(folder / "ref.P", sim.P[rows.to_numpy()])
    return folder


class TestFitAdmixtureMatchesRun:
    """``fit_admixture(..., method=...)`` is what ``admixspec run`` computes and logs."""

    @pytest.mark.parametrize(
        ("flags", "method"),
        [
            ([], "auto"),
            (["--init", "svd"], "ml"),
            (["--supervised"], "supervised"),
            (["--project", "ref.P"], "projection"),
        ],
    )
    def test_same_q_p_loglik_and_log(self, cli_data_fixture, flags, method):
        from admixspec.cli import main
        from admixspec.io import read_genotypes, read_p, read_pop, write_p, write_q

        folder = cli_data_fixture
        flags = [str(folder / f) if f.endswith(".P") else f for f in flags]
        out = folder / f"run_{method}"
        assert main(["run", str(folder / "sim.bed"), "-K", "2", "--out", str(out), "-q",
                     *flags]) == 0
        # run keeps monomorphic SNPs (P has a row per input SNP); a bare P given to
        # --project has the polymorphic ones, which run then projects on
        genotypes = read_genotypes(folder / "sim.bed",
                                   drop_monomorphic=method == "projection")
        given = {
            "auto": {},
            "ml": {"init": "svd"},
            "supervised": {"labels": read_pop(folder / "sim.pop")},
            "projection": {"P": read_p(folder / "ref.P")},
        }[method]
        result = fit_admixture(genotypes, 2, method=method, seed=43, **given)
        write_q(folder / "lib.Q", result.Q)
        write_p(folder / "lib.P", result.P)
        for kind in ("Q", "P"):
            cli_file = Path(f"{out}.2.{kind}")
            assert (folder / f"lib.{kind}").read_bytes() == cli_file.read_bytes()
        record = json.loads(Path(f"{out}.2.json").read_text())
        assert record["loglik"] == result.loglik
        assert record["path"] == result.path
        logged = Path(f"{out}.2.log").read_text().splitlines()
        # the run's log: its header, the fit's lines, then the wall time
        fit_lines = logged[-1 - len(result.log_lines) : -1]
        assert _masked(fit_lines) == _masked(result.log_lines)
        assert logged[-1].startswith("Elapsed: ")
        assert result.log_lines[-1] == f"Loglikelihood: {result.loglik:.6f}"


class TestMethodDispatch:
    def test_auto__picks_the_method_from_the_inputs(self):
        sim = simulate_balding_nichols(30, 500, 2, fst=0.3, seed=4)
        G = sim.genotypes.dosage
        assert fit_admixture(G, 2, P=sim.P).path == "projection"
        labels = [p if i < 10 else "-" for i, p in enumerate(sim.populations)]
        assert fit_admixture(G, 2, labels=labels, seed=1).path == "supervised"
        assert fit_admixture(G, 2, init="random", seed=1).path == "ml-random"

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"method": "em"}, "method must be one of"),
            ({"method": "projection"}, "needs the fixed allele frequencies"),
            ({"method": "supervised"}, "needs the reference labels"),
            ({"method": "ml", "init": "spectral"}, "starts from 'svd' or 'random'"),
            ({"method": "spectral", "init": "svd"}, "starts from the spectral"),
            ({"method": "ml", "labels": ["a"] * 30}, "labels are used only"),
            ({"init": "kmeans"}, "init must be"),
        ],
    )
    def test_inconsistent_arguments__usage_error(self, kwargs, match):
        sim = simulate_balding_nichols(30, 500, 2, fst=0.3, seed=4)
        with pytest.raises(UsageError, match=match):
            fit_admixture(sim.genotypes.dosage, 2, **kwargs)

    def test_projection__p_with_other_k_is_a_usage_error(self):
        sim = simulate_balding_nichols(30, 500, 3, fst=0.3, seed=4)
        with pytest.raises(UsageError, match="P has 3 columns"):
            fit_admixture(sim.genotypes.dosage, 2, P=sim.P)

    def test_cv_and_bootstrap__are_attached_and_logged(self):
        sim = simulate_balding_nichols(30, 600, 2, fst=0.3, seed=4)
        result = fit_admixture(sim.genotypes.dosage, 2, init="svd", seed=1, cv=3,
                               bootstrap=4)
        assert result.cv.fold_errors.shape == (3,)
        assert result.bootstrap.Q_se.shape == (30, 2)
        assert result.log_lines[-2] == f"CV error (K=2): {result.cv.error:.5f}"
        assert result.log_lines[-1] == "Bootstrap: 4 replicates over blocks of SNPs"
        assert result.record()["cv_error"] == result.cv.error
