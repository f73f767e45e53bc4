"""Arguments are declared once per public function and checked once per call."""

import argparse

import numpy as np
import pytest

from admixspec import UsageError, fit_admixture, fit_ml, simulate_balding_nichols
from admixspec.core import validation
from admixspec.core.validation import (
    Dosage,
    Increasing,
    Interval,
    Options,
    validate_params,
)


@pytest.fixture
def scans(monkeypatch):
    """Counts the scans of a genotype matrix for validation (check_dosage calls)."""
    calls = []
    original = validation.check_dosage

    def counting(value):
        calls.append(np.shape(getattr(value, "dosage", value)))
        return original(value)

    monkeypatch.setattr(validation, "check_dosage", counting)
    return calls


class TestCheckedOnce:
    def test_default_fit__scans_the_matrix_once(self, scans):
        # the default runs the spectral stage, the estimator choice (training
        # fits, projections) and maximum likelihood: public functions, each
        # of which checks its genotypes when a user calls it
        sim = simulate_balding_nichols(60, 2000, 3, fst=0.1, alpha=0.5, seed=1)
        result = fit_admixture(sim.genotypes, 3, seed=1, cv=2, bootstrap=2)
        assert result.cv is not None and result.bootstrap is not None
        assert scans == [(60, 2000)]

    def test_reference_fit__scans_the_cohort_once(self, scans):
        sim = simulate_balding_nichols(120, 1000, 2, fst=0.2, alpha=0.5, seed=2)
        result = fit_admixture(sim.genotypes, 2, seed=1, reference_size=50)
        assert len(result.reference) == 50
        assert scans == [(120, 1000)]

    def test_a_nested_call_after_the_fit__is_checked_again(self, scans):
        sim = simulate_balding_nichols(30, 500, 2, seed=3)
        fit_ml(sim.genotypes.dosage, 2, seed=0)
        fit_ml(sim.genotypes.dosage, 2, seed=0)
        assert len(scans) == 2

    def test_bad_genotypes__are_refused_at_the_boundary(self):
        with pytest.raises(ValueError, match="dosage must hold 0, 1, 2 or -1"):
            fit_admixture(np.full((10, 20), 3), 2)


class TestConstraints:
    @pytest.mark.parametrize(("constraint", "value", "message"), [
        (Interval(float, 0, closed="neither"), 0, "tol must be positive, got 0"),
        (Interval(int, 1), 0, "tol must be an integer >= 1, got 0"),
        (Interval(int, 1), 2.5, "tol must be an integer >= 1, got 2.5"),
        (Interval(int, 1), True, "tol must be an integer >= 1, got True"),
        (Interval(float, 0, 0.5), 0.7, r"tol must be in \[0, 0.5\], got 0.7"),
        (Options("auto", True, False), 1,
         "tol must be one of 'auto', True, False; got 1"),
    ])
    def test_out_of_range__usage_error_naming_the_argument(self, constraint, value,
                                                            message):
        with pytest.raises(UsageError, match=message):
            constraint.check("tol", value)

    @pytest.mark.parametrize("value", [(0.1, 0.05), (0.05, 0.05), (), (-0.1,), (0.7,),
                                       (float("nan"),), ("a",), "0.1", 0.1, None])
    def test_increasing__refuses_all_but_rising_numbers_in_range(self, value):
        windows = Increasing(Interval(float, 0, 0.5, closed="right"))
        message = (r"windows must be a non-empty, strictly increasing sequence of "
                   r"numbers in \(0, 0.5\]")
        with pytest.raises(UsageError, match=message):
            windows.check("windows", value)

    def test_increasing__passes_rising_numbers_on_as_a_tuple(self):
        windows = Increasing(Interval(float, 0, 0.5, closed="right"))
        assert windows.check("windows", np.array([0.02, 0.5])) == (0.02, 0.5)

    def test_none__only_where_allowed(self):
        assert Interval(int, 1, allow_none=True).check("threads", None) is None
        with pytest.raises(UsageError):
            Interval(int, 1).check("threads", None)

    def test_parse__is_an_argparse_type_with_the_same_rule(self):
        parse = Interval(float, 0, closed="neither").parse
        assert parse("1e-4") == 1e-4
        with pytest.raises(argparse.ArgumentTypeError, match="must be positive, got 0"):
            parse("0")
        with pytest.raises(argparse.ArgumentTypeError, match="expected a number"):
            parse("x")

    def test_dosage__passes_streamed_genotypes_through_when_allowed(self):
        class Streamed:
            chunks = object()

        value = Streamed()
        assert Dosage(streamed=True).check("genotypes", value) is value

    def test_validate_params__names_only_real_arguments(self):
        with pytest.raises(TypeError, match="no argument"):
            validate_params({"nope": Interval(int)})(lambda x: x)

    def test_public_fit__usage_error_for_a_bad_option(self):
        G = simulate_balding_nichols(10, 50, 2, seed=1).genotypes
        with pytest.raises(UsageError, match="refine must be one of"):
            fit_admixture(G, 2, refine="always")
        with pytest.raises(UsageError, match="method must be one of"):
            fit_admixture(G, 2, method="em")

    @pytest.mark.parametrize(("argument", "value", "message"), [
        ("windows", (0.1, 0.05), "windows must be a non-empty, strictly increasing"),
        ("windows", (), "windows must be a non-empty, strictly increasing"),
        ("seed", -1, "seed must be a non-negative integer, got -1"),
        ("seed", 1.5, "seed must be a non-negative integer, got 1.5"),
        ("n_starts", 1, "n_starts must be an integer >= 2, got 1"),
    ])
    def test_public_fit__usage_error_for_a_bad_setting(self, argument, value, message):
        # before these were declared: windows=() raised max()'s ValueError deep
        # in the scan, (0.1, 0.05) fitted without a word, seed=-1 raised NumPy's
        G = simulate_balding_nichols(10, 50, 2, seed=1).genotypes
        with pytest.raises(UsageError, match=message):
            fit_admixture(G, 2, **{argument: value})
