"""The Python API on small, degenerate and unusual inputs (found by a bug hunt)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from admixspec import (
    InputError,
    UsageError,
    align_components,
    apply_filters,
    check_K,
    fit_admixture,
    fit_ml,
    k_hint,
    loglikelihood,
    q_error,
    read_genotypes,
    simulate_balding_nichols,
)
from admixspec.core.genotypes import Genotypes, check_dosage
from admixspec.core.parameters import Q_MIN
from admixspec.ml.start import subspace_starts

from .conftest import DATA


@pytest.fixture(scope="module")
def sim_fixture():
    return simulate_balding_nichols(30, 500, 2, fst=0.3, alpha=0.3, seed=2)


class TestMoreComponentsThanSnps:
    # the SVD start read the K-th singular value of a sketch with fewer: an
    # IndexError from deep inside the start

    def test_subspace_starts__fewer_snps_than_K_gives_one_start(self, sim_fixture):
        G = sim_fixture.genotypes.dosage[:, :3]
        starts = subspace_starts(G, 5, 4, seed=1)
        assert len(starts) == 1
        Q, P = starts[0]
        assert Q.shape == (30, 5) and P.shape == (3, 5)
        np.testing.assert_allclose(Q.sum(axis=1), 1.0)

    @pytest.mark.parametrize("method", ["auto", "ml"])
    def test_fit_admixture__fits_K_above_the_number_of_snps(self, sim_fixture, method):
        result = fit_admixture(sim_fixture.genotypes.dosage[:, :3], 5, seed=1,
                               method=method)
        assert result.Q.shape == (30, 5) and result.P.shape == (3, 5)
        assert np.isfinite(result.loglik)

    def test_fit_ml__fits_K_above_the_number_of_snps(self, sim_fixture):
        result = fit_ml(sim_fixture.genotypes.dosage[:, :5], 6, seed=1)
        assert result.Q.shape == (30, 6) and np.isfinite(result.loglik)


class TestSpectralFallbackLog:
    def test_fit_admixture__fewer_candidates_than_K_logs_the_fallback(self):
        # every call heterozygous: the whitened tensor gives one candidate for
        # K = 2, no subset search ran, and the log line read its count (KeyError)
        G = np.ones((20, 100), dtype=np.int8)
        result = fit_admixture(G, 2, seed=1, refine=False)
        assert result.path == "ml-fallback"
        assert "fewer than K=2" in result.diagnostics["fallback_reason"]
        spectral = [line for line in result.log_lines if line.startswith("Spectral:")]
        assert len(spectral) == 1 and "subsets searched" not in spectral[0]
        assert any(line.startswith("Fallback reason: the whitened tensor gave")
                   for line in result.log_lines)


class TestMissingCallsOfOtherContainers:
    @pytest.fixture
    def calls_fixture(self):
        rng = np.random.default_rng(0)
        values = rng.integers(0, 3, (6, 8))
        missing = rng.random((6, 8)) < 0.3
        return values, missing, np.where(missing, -1, values)

    def test_check_dosage__masked_entries_are_missing(self, calls_fixture):
        # np.asarray dropped the mask: the values under it were fitted as calls
        values, missing, expected = calls_fixture
        under = np.where(missing, 9, values).astype(np.uint8)
        masked = np.ma.masked_array(under, mask=missing)
        assert check_dosage(masked).tolist() == expected.tolist()

    def test_genotypes__masked_int8_dosage_keeps_its_mask(self, calls_fixture):
        values, missing, expected = calls_fixture
        masked = np.ma.masked_array(values.astype(np.int8), mask=missing)
        genotypes = Genotypes.from_array(masked)
        assert genotypes.dosage.tolist() == expected.tolist()
        direct = Genotypes(masked, samples=genotypes.samples,
                           variants=genotypes.variants)
        assert type(direct.dosage) is np.ndarray
        assert direct.dosage.tolist() == expected.tolist()

    def test_fit_admixture__masked_array_fits_as_its_missing_calls(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        missing = np.random.default_rng(1).random(G.shape) < 0.2
        plain = fit_admixture(np.where(missing, -1, G).astype(np.int8), 2, seed=1)
        masked = fit_admixture(np.ma.masked_array(G, mask=missing), 2, seed=1)
        assert masked.loglik == plain.loglik
        np.testing.assert_array_equal(masked.Q, plain.Q)

    def test_check_dosage__pandas_nullable_na_is_missing(self, calls_fixture):
        # pd.NA made an object array: "dosage must be numeric, got dtype object"
        values, missing, expected = calls_fixture
        frame = pd.DataFrame(values).astype("Int8").mask(missing)
        assert check_dosage(frame).tolist() == expected.tolist()

    def test_check_dosage__pandas_strings_are_still_refused(self):
        with pytest.raises(InputError, match="dosage must be numeric, got dtype object"):
            check_dosage(pd.DataFrame([["0", "1"], ["2", "1"]]))

    def test_check_dosage__ragged_rows_raise_an_input_error(self):
        # NumPy's ValueError ("inhomogeneous shape") came through unexplained
        with pytest.raises(InputError, match=r"^dosage must be a 2-d array of numbers"):
            check_dosage([[0, 1, 2], [1, 2]])


@pytest.fixture(scope="module")
def hint_fixture():
    return simulate_balding_nichols(60, 5000, 3, fst=0.2, alpha=0.3, seed=2)


class TestKHintInputs:
    def test_k_hint__float_nan_missing_reads_as_missing(self, hint_fixture):
        # NaN reached the eigensolver: LinAlgError "Eigenvalues did not converge"
        G = hint_fixture.genotypes.dosage
        missing = np.random.default_rng(0).random(G.shape) < 0.3
        as_float = np.where(missing, np.nan, G)
        as_int8 = np.where(missing, -1, G).astype(np.int8)
        hint = k_hint(as_float, seed=0)
        assert hint.K == 3
        np.testing.assert_array_equal(hint.eigenvalues,
                                      k_hint(as_int8, seed=0).eigenvalues)

    def test_k_hint__takes_genotypes_as_fit_admixture_does(self, hint_fixture):
        # Genotypes had no .shape: AttributeError
        assert k_hint(hint_fixture.genotypes, seed=0).K == 3

    def test_k_hint__refuses_values_other_than_dosages(self, hint_fixture):
        G = hint_fixture.genotypes.dosage.astype(np.int64)
        with pytest.raises(InputError, match="dosage must hold 0, 1, 2 or -1"):
            k_hint(np.where(G == 2, 3, G), seed=0)


class TestHelpersOnBadValues:
    @pytest.mark.parametrize("K", [None, float("nan"), float("inf"), "2"])
    def test_check_K__names_a_non_integer_K(self, K):
        with pytest.raises(UsageError, match=r"^K must be an integer, got "):
            check_K(K, 10)

    def test_q_error__refuses_nan_proportions(self):
        Q = np.array([[0.9, 0.1], [0.2, 0.8]])
        with pytest.raises(UsageError,
                           match=r"^Q_est must be finite, got nan in row 1, column 0$"):
            q_error(Q, np.array([[0.9, 0.1], [np.nan, 0.8]]))

    def test_align_components__refuses_infinite_proportions(self):
        Q = np.array([[0.9, 0.1], [0.2, 0.8]])
        with pytest.raises(UsageError, match=r"^Q #1 must be finite"):
            align_components([Q, np.array([[np.inf, 0.1], [0.2, 0.8]])])

    def test_apply_filters__filters_a_bare_array(self):
        out = apply_filters(np.array([[0, 1, 2, 0], [0, 2, 1, -1], [0, 0, 0, 1]]))
        assert out.dosage.tolist() == [[1, 2, 0], [2, 1, -1], [0, 0, 1]]
        assert [entry["filter"] for entry in out.filter_log] == ["monomorphic"]


class TestFixedFrequenciesAreChecked:
    # P outside [0, 1] was clipped into the box and used without a word

    @pytest.mark.parametrize(("scale", "message"), [
        (5.0, r"P must be allele frequencies, numbers in \[0, 1\]: P\[\d+, \d\] = "),
        (-1.0, r"P must be allele frequencies, numbers in \[0, 1\]: P\[0, 0\] = -"),
    ])
    def test_fit_admixture__refuses_projection_onto_p_outside_0_1(
            self, sim_fixture, scale, message):
        with pytest.raises(UsageError, match=message):
            fit_admixture(sim_fixture.genotypes, 2, P=sim_fixture.P * scale, seed=1)

    def test_fit_admixture__refuses_p_that_is_not_numbers(self, sim_fixture):
        # a path given as P: NumPy's ValueError from inside the projection
        with pytest.raises(UsageError, match=r"^P must be allele frequencies.*got str"):
            fit_admixture(sim_fixture.genotypes, 2, P="reference.2.P", seed=1)

    def test_loglikelihood__refuses_p_outside_0_1(self, sim_fixture):
        with pytest.raises(UsageError, match=r"P\[\d+, \d\] = nan"):
            loglikelihood(sim_fixture.genotypes, sim_fixture.Q,
                          np.where(sim_fixture.P > 0.5, np.nan, sim_fixture.P))
        with pytest.raises(UsageError, match="P must be allele frequencies"):
            loglikelihood(sim_fixture.genotypes, sim_fixture.Q, sim_fixture.P + 1.0)

    def test_loglikelihood__takes_frequencies_of_exactly_0_and_1(self, sim_fixture):
        P = np.round(sim_fixture.P)  # clipped into the box, as documented
        assert np.isfinite(loglikelihood(sim_fixture.genotypes, sim_fixture.Q, P))


class TestGivenMlStarts:
    @pytest.mark.parametrize(("given", "message"), [
        ({"Q0": np.full((30, 3), 1 / 3)}, r"Q0 must have shape \(30, 2\)"),
        ({"P0": np.full((500, 1), 0.5)}, r"P0 must have shape \(500, 2\)"),
        ({"Q0": np.full((5, 2), 0.5)}, r"Q0 must have shape \(30, 2\)"),
        ({"Q0": np.full((30, 2), np.nan)}, "Q0 must be finite"),
    ])
    def test_fit_ml__refuses_a_start_of_another_shape(self, sim_fixture, given,
                                                      message):
        # a start of another K was fitted at its K (Q had 3 columns for K = 2)
        with pytest.raises(UsageError, match=message):
            fit_ml(sim_fixture.genotypes, 2, seed=1, **given)

    def test_fit_ml__more_batches_than_snp_blocks(self, sim_fixture):
        # 500 SNPs are 8 blocks: 100 batches left empty ones (ValueError)
        result = fit_ml(sim_fixture.genotypes, 2, accel="squarem", batches=100,
                        seed=1)
        reference = fit_ml(sim_fixture.genotypes, 2, seed=1)
        assert result.loglik == pytest.approx(reference.loglik, abs=0.01)


class TestSpectralPathInTheBox:
    def test_spectral_path__q_in_the_box_and_its_loglik_is_the_written_fit(self):
        # the simplex projection left exact zeros in Q (33 on the example data),
        # and the log-likelihood reported was 0.22 units off loglikelihood(G, Q, P)
        genotypes = read_genotypes(DATA / "example.bed")
        result = fit_admixture(genotypes, 3, seed=1, refine=False)
        assert result.path == "spectral"
        assert result.Q.min() >= 0.99 * Q_MIN
        # loglikelihood rescales Q's rows once more (by ~1e-10 here): 1e-10 relative
        assert result.loglik == pytest.approx(
            loglikelihood(genotypes, result.Q, result.P), rel=1e-10)
