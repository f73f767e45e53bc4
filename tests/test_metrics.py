import numpy as np
import pytest

from admixspec.core.metrics import assign_components, match_components, q_error


class TestMatchComponents:
    def test_match_components__recovers_random_permutation(self):
        rng = np.random.default_rng(0)
        Q = rng.dirichlet(np.ones(5), size=40)
        perm = rng.permutation(5)
        est = Q[:, perm]
        found = match_components(Q, est)
        np.testing.assert_array_equal(est[:, found], Q)

    def test_match_components__extra_estimated_column_left_out(self):
        rng = np.random.default_rng(1)
        Q = rng.dirichlet(np.ones(2), size=30)
        est = np.column_stack([np.zeros(30), Q[:, 1], Q[:, 0]])
        assert match_components(Q, est).tolist() == [2, 1]

    def test_match_components__fewer_estimated_columns_raises(self):
        with pytest.raises(ValueError):
            match_components(np.ones((3, 3)) / 3, np.ones((3, 2)) / 2)


class TestQError:
    def test_q_error__equals_mean_abs_difference_after_matching(self):
        Q = np.array([[1.0, 0.0], [0.5, 0.5]])
        est = np.array([[0.1, 0.9], [0.5, 0.5]])
        assert q_error(Q, est) == pytest.approx(0.05)


class TestAssignComponents:
    @pytest.mark.parametrize("maximize", [False, True])
    def test_square__is_the_best_permutation_by_brute_force(self, maximize):
        import itertools

        cost = np.random.default_rng(3).random((5, 5))
        sign = -1 if maximize else 1
        best = min(itertools.permutations(range(5)),
                   key=lambda p: sign * cost[np.arange(5), list(p)].sum())
        assert assign_components(cost, maximize=maximize).tolist() == list(best)

    def test_fewer_estimated_components__unmatched_are_minus_one(self):
        cost = np.array([[0.0, 9.0], [9.0, 0.0], [1.0, 1.0]])
        assert assign_components(cost).tolist() == [0, 1, -1]
