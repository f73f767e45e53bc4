import subprocess
import sys

import numpy as np
import pytest

from admixspec import Genotypes, simulate_balding_nichols
from admixspec.core.exceptions import InputError, UsageError
from admixspec.core.genotypes import check_dosage
from admixspec.core.parameters import P_MAX, P_MIN
from admixspec.core.threads import thread_limit
from admixspec.ml.likelihood import em_step, loglikelihood, prediction_deviance
from admixspec.ml.refine import fit_ml

from .conftest import blas_threads


def _naive_loglik(G, Q, P):
    F = Q @ P.T
    obs = G >= 0
    g = np.where(obs, G, 0).astype(float)
    return float(np.sum(np.where(obs, g * np.log(F) + (2 - g) * np.log1p(-F), 0.0)))


def _naive_em(G, Q, P):
    F = Q @ P.T
    obs = G >= 0
    g = np.where(obs, G, 0).astype(float)
    h = np.where(obs, 2 - G, 0).astype(float)
    a = g / F
    b = h / (1 - F)
    A = a.T @ Q
    B = b.T @ Q
    P_new = np.clip(P * A / (P * A + (1 - P) * B), P_MIN, P_MAX)
    Q_new = Q * (a @ P + b @ (1 - P)) / (2 * obs.sum(axis=1))[:, None]
    Q_new = np.maximum(Q_new, 1e-5)
    Q_new /= Q_new.sum(axis=1, keepdims=True)
    return Q_new, P_new


@pytest.fixture
def sim_fixture():
    sim = simulate_balding_nichols(37, 301, 3, fst=0.2, missing_rate=0.05, seed=11)
    return sim.genotypes.dosage, sim.Q, np.clip(sim.P, P_MIN, P_MAX)


class TestLoglikelihood:
    def test_loglikelihood__equals_naive_sum_with_missing(self, sim_fixture):
        G, Q, P = sim_fixture
        assert loglikelihood(G, Q, P) == pytest.approx(_naive_loglik(G, Q, P), rel=1e-12)

    def test_loglikelihood__same_for_one_and_two_threads(self, sim_fixture):
        G, Q, P = sim_fixture
        one = loglikelihood(G, Q, P, threads=1)
        two = loglikelihood(G, Q, P, threads=2)
        assert one == pytest.approx(two, rel=1e-12)

    def test_loglikelihood__missing_entries_contribute_nothing(self, sim_fixture):
        G, Q, P = sim_fixture
        G2 = G.copy()
        G2[:, :50] = -1
        expected = _naive_loglik(G[:, 50:], Q, P[50:])
        assert loglikelihood(G2, Q, P) == pytest.approx(expected, rel=1e-12)

    def test_loglikelihood__rejects_bad_dosage_and_shapes(self, sim_fixture):
        G, Q, P = sim_fixture
        with pytest.raises(InputError):
            loglikelihood(np.full((2, 2), 3, dtype=np.int8), np.ones((2, 1)),
                          np.full((2, 1), 0.5))
        with pytest.raises(UsageError):
            loglikelihood(G, Q[:-1], P)


class TestEMStep:
    def test_em_step__matches_dense_formula(self, sim_fixture):
        G, Q, P = sim_fixture
        Q1, P1, ll0 = em_step(G, Q, P)
        Qn, Pn = _naive_em(G, Q, P)
        np.testing.assert_allclose(P1, Pn, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(Q1, Qn, rtol=1e-10, atol=1e-12)
        assert ll0 == pytest.approx(_naive_loglik(G, Q, P), rel=1e-12)

    def test_em_step__never_lowers_loglikelihood(self, sim_fixture):
        G, _, _ = sim_fixture
        rng = np.random.default_rng(0)
        Q = rng.dirichlet(np.ones(3), size=G.shape[0])
        P = rng.uniform(0.05, 0.95, size=(G.shape[1], 3))
        lls = []
        for _ in range(5):
            Q, P, ll = em_step(G, Q, P)
            lls.append(ll)
        assert np.all(np.diff(lls) >= -1e-9)


class TestDeviance:
    def test_prediction_deviance__matches_dense_formula(self, sim_fixture):
        G, Q, P = sim_fixture
        mu = 2 * Q @ P.T
        obs = G >= 0
        g = G.astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(g > 0, g * np.log(g / mu), 0) + np.where(
                g < 2, (2 - g) * np.log((2 - g) / (2 - mu)), 0)
        assert prediction_deviance(G, Q, P) == pytest.approx(d[obs].mean(), rel=1e-10)


class TestThreadLimit:
    def test_thread_limit__rejects_zero(self):
        with pytest.raises(UsageError), thread_limit(0):
            pass

    def test_thread_limit__limits_scipys_own_blas_imported_first_inside_it(self):
        # SciPy's wheels ship their own OpenBLAS; threadpoolctl limits only the
        # libraries loaded when the limit is set
        script = (
            "import sys\n"
            "from admixspec.core.threads import thread_limit\n"
            "from threadpoolctl import threadpool_info\n"
            "assert 'scipy' not in sys.modules\n"
            "with thread_limit(1):\n"
            "    import scipy.linalg\n"
            "    print(sorted({p['num_threads'] for p in threadpool_info()\n"
            "                  if p['user_api'] == 'blas'}))\n"
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["[1]"]

    def test_ml_iterations__run_blas_on_one_thread_and_restore_it(self):
        # BLAS threads busy-waiting between the iterations' tiny products take the
        # cores from numba's kernels (core.threads.serial_blas)
        sim = simulate_balding_nichols(40, 600, 2, fst=0.2, seed=3)
        seen = []
        with thread_limit(2):
            fit_ml(sim.genotypes.dosage, 2, seed=0,
                   callback=lambda info: seen.append(blas_threads()))
            after = blas_threads()
        assert seen and all(threads == {1} for threads in seen)
        assert after == {2}


class TestCheckDosage:
    @pytest.mark.parametrize(
        ("value", "dtype", "shown"),
        [
            (1.9, np.float64, "1.9"),  # an imputed dosage, not a call: cast gave 1
            (0.5, np.float32, "0.5"),  # cast gave 0
            (256, np.int16, "256"),  # cast to int8 gave 0
            (255, np.uint8, "255"),  # cast to int8 gave -1, "missing"
            (3, np.int8, "3"),
            (-2, np.int64, "-2"),
            (np.inf, np.float64, "inf"),
        ],
    )
    def test_check_dosage__rejects_value_naming_it_and_its_position(
        self, value, dtype, shown
    ):
        dosage = np.zeros((3, 4), dtype=dtype)
        dosage[1, 2] = value
        message = rf"dosage\[1, 2\] = {shown} \(1 such value\)"
        with pytest.raises(InputError, match=message):
            check_dosage(dosage)

    def test_check_dosage__fractional_values_are_told_to_be_rounded(self):
        with pytest.raises(InputError, match="fractional dosages must be rounded"):
            check_dosage(np.array([[0.0, 1.5], [2.0, 1.9]]))

    def test_check_dosage__whole_floats_with_nan_as_missing(self):
        dosage = np.array([[0.0, 1.0, np.nan], [2.0, -1.0, 1.0]])
        np.testing.assert_array_equal(
            check_dosage(dosage), np.array([[0, 1, -1], [2, -1, 1]], dtype=np.int8)
        )

    @pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, bool])
    def test_check_dosage__any_integer_dtype_in_range_is_kept(self, dtype):
        dosage = np.array([[0, 1], [1, 0]], dtype=dtype)
        checked = check_dosage(dosage)
        assert checked.dtype == np.int8 and checked.flags.c_contiguous
        np.testing.assert_array_equal(checked, dosage.astype(np.int8))

    def test_check_dosage__rejects_text(self):
        with pytest.raises(InputError, match="must be numeric"):
            check_dosage(np.array([["0", "1"]]))

    def test_check_dosage__transposed_genotypes_are_named_snp_major(self):
        genotypes = Genotypes.from_array(np.zeros((5, 8), dtype=np.int8))
        genotypes.dosage = genotypes.dosage.T.copy()  # SNPs x individuals
        with pytest.raises(InputError, match=r"SNP-major \(transposed\)"):
            check_dosage(genotypes)

    def test_genotypes__rejects_transposed_dosage_at_construction(self):
        genotypes = Genotypes.from_array(np.zeros((5, 8), dtype=np.int8))
        message = r"shape \(8, 5\) but there are 5 sample IDs"
        with pytest.raises(InputError, match=message):
            Genotypes(genotypes.dosage.T, genotypes.samples, genotypes.variants)

    def test_genotypes__checks_values_before_casting(self):
        genotypes = Genotypes.from_array(np.zeros((2, 3), dtype=np.int8))
        with pytest.raises(InputError, match=r"dosage\[0, 1\] = 1.9"):
            Genotypes([[0, 1.9, 0], [0, 0, 0]], genotypes.samples, genotypes.variants)

    def test_genotypes_from_array__checks_values_before_casting(self):
        with pytest.raises(InputError, match=r"dosage\[1, 0\] = 0.5"):
            Genotypes.from_array([[0, 1], [0.5, 2]])
