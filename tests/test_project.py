import numpy as np
import pytest

from admixspec import InputError, UsageError, simulate_balding_nichols
from admixspec.io import read_pop
from admixspec.ml.project import fit_supervised, project
from admixspec.ml.refine import fit_ml


@pytest.fixture(scope="module")
def sim_fixture():
    return simulate_balding_nichols(60, 4000, 3, fst=0.2, alpha=0.4,
                                    unadmixed_fraction=0.5, seed=31)


class TestProject:
    def test_project__training_individuals_reproduce_fitted_q(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        fit = fit_ml(G, 3, seed=0)
        Q = project(G, fit.P)
        assert np.abs(Q - fit.Q).mean() < 0.01

    def test_project__new_cohort_near_truth(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        Q = project(G[:20], sim_fixture.P)
        assert np.abs(Q - sim_fixture.Q[:20]).mean() < 0.03
        np.testing.assert_allclose(Q.sum(axis=1), 1.0)

    def test_project__p_outside_zero_one_is_refused_not_clipped(self, sim_fixture):
        with pytest.raises(UsageError, match=r"numbers in \[0, 1\]: P\[0, 0\] = 1\."):
            project(sim_fixture.genotypes.dosage, sim_fixture.P + 1)

    def test_project__wrong_p_rows_raise(self, sim_fixture):
        with pytest.raises(UsageError):
            project(sim_fixture.genotypes.dosage, sim_fixture.P[:-1])


class TestSupervised:
    def test_fit_supervised__references_get_one_hot(self, sim_fixture):
        G = sim_fixture.genotypes.dosage
        labels = [p if i < 30 else "-" for i, p in enumerate(sim_fixture.populations)]
        res = fit_supervised(G, None, labels, seed=0)
        assert res.Q.shape == (60, 3)
        k = [res.populations.index(p) for p in sim_fixture.populations[:30]]
        assert np.all(res.Q[np.arange(30), k] > 0.99)
        # unlabelled individuals are estimated, not forced
        truth = sim_fixture.Q[30:][:, [int(p[3:]) - 1 for p in res.populations]]
        assert np.abs(res.Q[30:] - truth).mean() < 0.03

    def test_fit_supervised__k_below_population_count_raises(self, sim_fixture):
        labels = list(sim_fixture.populations)
        with pytest.raises(UsageError):
            fit_supervised(sim_fixture.genotypes.dosage, 2, labels)

    def test_fit_supervised__k_below_population_count_names_them(self, sim_fixture):
        labels = ["YRI", "CEU", "-", "CHB"] * 15
        with pytest.raises(UsageError, match=r"K=2 is smaller than the 3 reference "
                           r"populations in the labels \(YRI, CEU, CHB\)$"):
            fit_supervised(sim_fixture.genotypes.dosage, 2, labels)

    def test_fit_supervised__a_label_spelled_two_ways_warns(self, sim_fixture):
        labels = [p if i < 30 else "-" for i, p in enumerate(sim_fixture.populations)]
        labels[3] = labels[3].upper()
        with pytest.warns(UserWarning, match=r"the labels 'pop1', 'POP1' differ only "
                          "in case"):
            res = fit_supervised(sim_fixture.genotypes.dosage, 4, labels, seed=0)
        assert res.populations == ["pop1", "pop2", "pop3", "POP1"]

    def test_fit_supervised__no_labels_raises(self, sim_fixture):
        with pytest.raises(InputError):
            fit_supervised(sim_fixture.genotypes.dosage, 3, ["-"] * 60)

    def test_fit_supervised__no_labels_message_names_the_labels_taken_as_none(
            self, sim_fixture):
        with pytest.raises(InputError, match=r"every label is empty or one of '-', "
                           r"'\.', 'NA', 'None', 'nan', which name none\)$"):
            fit_supervised(sim_fixture.genotypes.dosage, 3, ["NA"] * 30 + ["."] * 30)

    def test_read_pop__no_reference_label_names_the_file(self, tmp_path):
        path = tmp_path / "ref.pop"
        path.write_text("-\n" * 60)
        with pytest.raises(InputError, match=r"ref\.pop: no individual has a "
                           "reference population label"):
            read_pop(path)
