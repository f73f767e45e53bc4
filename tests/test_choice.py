"""The default's estimator choice (fit.choice), on point clouds and against truth."""

import warnings

import numpy as np
import pytest

from admixspec import (
    ConvergenceWarning,
    fit_admixture,
    q_error,
    simulate_admixture,
    simulate_balding_nichols,
)
from admixspec.fit.choice import (
    ANCHOR_RADIUS,
    CLUSTER_EXCESS,
    CORNER_RANK,
    CORNER_REACH,
    MAX_SPREAD,
    MIN_NEAR_EXTREME,
    MIN_RARE_SHARE,
    choose_estimator,
    cluster_excess,
    corner_reach,
    extreme_neighbours,
    premise_absent,
    second_look,
    successive_projection,
)
from admixspec.spectral.estimate import COMMON_WINDOW_END


def _three_ways(genotypes, K):
    """(spectral, spectral+ML, default) fits of one data set."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return [fit_admixture(genotypes, K, seed=0, refine=refine)
                for refine in (False, True, "auto")]


class TestGeometry:
    def test_successive_projection__finds_the_vertices_of_a_noisy_simplex(self):
        rng = np.random.default_rng(0)
        Q = np.vstack([rng.dirichlet([1, 1, 1], 200), np.eye(3)])
        noisy = Q + rng.normal(0, 0.01, Q.shape)
        picks = successive_projection(noisy, 3)
        # each pick is within noise of a different vertex
        assert sorted(np.argmax(Q[picks], axis=1).tolist()) == [0, 1, 2]
        assert Q[picks].max(axis=1).min() > 0.9

    def test_extreme_neighbours__counts_clusters_at_the_vertices(self):
        rng = np.random.default_rng(1)
        clusters = np.eye(3).repeat([4, 6, 8], axis=0)
        Q = np.vstack([clusters, rng.dirichlet([2, 2, 2], 50)])
        _, near, spacing = extreme_neighbours(Q, radius=0.05)
        assert spacing == pytest.approx(np.sqrt(2))
        # the clusters, plus any Dirichlet draw that falls inside the radius
        assert sorted(near.tolist())[0] >= 4
        assert sorted(near.tolist()) == sorted(
            np.count_nonzero(np.linalg.norm(Q[:, None] - np.eye(3), axis=2)
                             <= 0.05 * np.sqrt(2), axis=0).tolist())

    def test_anchored_cloud__chooses_ml(self):
        rng = np.random.default_rng(2)
        Q = np.vstack([np.eye(3).repeat(MIN_NEAR_EXTREME, axis=0),
                       rng.dirichlet([1, 1, 1], 40)])
        choice = choose_estimator(Q, 0.6)
        assert choice.estimator == "spectral+ml"
        assert min(choice.statistics["near_extreme"]) >= MIN_NEAR_EXTREME
        assert choice.statistics["anchored_components"] == 3
        assert "3 of 3 components anchored" in choice.reason

    def test_clusters_away_from_the_corners__keep_spectral(self):
        # the anchored cloud above, shrunk towards the centre: its extremes
        # still have clusters around them, but nobody is near a corner
        rng = np.random.default_rng(2)
        anchored = np.vstack([np.eye(3).repeat(MIN_NEAR_EXTREME, axis=0),
                              rng.dirichlet([1, 1, 1], 40)])
        shrunk = 0.5 * anchored + 0.5 / 3
        choice = choose_estimator(shrunk, 0.6)
        assert choice.statistics["anchored_components"] == 3
        assert choice.statistics["components_at_corner"] == 0
        assert max(choice.statistics["corner_reach"]) < CORNER_REACH
        assert choice.estimator == "spectral"
        assert "0 of 3 components reach" in choice.reason

    @pytest.mark.parametrize(("at_corner", "estimator"),
                             [(2, "spectral+ml"), (1, "spectral")])
    def test_most_components_at_their_corner__decides(self, at_corner, estimator):
        # every component anchored; the clusters of some are pulled off the corner
        rng = np.random.default_rng(6)
        corners = np.eye(3)
        centre = np.full(3, 1 / 3)
        pulled = np.array([c if k < at_corner else 0.4 * c + 0.6 * centre
                           for k, c in enumerate(corners)])
        Q = np.vstack([pulled.repeat(2 * MIN_NEAR_EXTREME, axis=0),
                       rng.dirichlet([3, 3, 3], 60)])
        choice = choose_estimator(Q, 0.6)
        assert choice.statistics["anchored_components"] == 3
        assert choice.statistics["components_at_corner"] == at_corner
        assert choice.estimator == estimator

    def test_corner_reach__is_the_rank_th_highest_proportion_of_each_component(self):
        Q = np.random.default_rng(7).dirichlet([1, 1, 1], 40)
        reach = corner_reach(Q)
        for k in range(3):
            assert np.count_nonzero(Q[:, k] >= reach[k]) == CORNER_RANK
        # fewer individuals than the rank: the lowest proportion
        np.testing.assert_array_equal(corner_reach(Q[:3]), Q[:3].min(axis=0))

    def test_unanchored_cloud__keeps_spectral(self):
        Q = np.random.default_rng(3).dirichlet([10, 10, 10], 60)
        choice = choose_estimator(Q, 0.6)
        assert choice.estimator == "spectral"
        assert choice.statistics["anchored_components"] <= 1

    @pytest.mark.parametrize(("anchored_corners", "estimator"),
                             [(2, "spectral+ml"), (1, "spectral")])
    def test_most_components_anchored__decides(self, anchored_corners, estimator):
        # clusters at some corners; the cloud reaches the others only by a
        # lone individual
        rng = np.random.default_rng(5)
        corners = np.eye(3)
        Q = np.vstack([corners[:anchored_corners].repeat(2 * MIN_NEAR_EXTREME, axis=0),
                       corners[anchored_corners:],
                       rng.dirichlet([3, 3, 3], 60)])
        choice = choose_estimator(Q, 0.6)
        assert choice.statistics["anchored_components"] == anchored_corners
        assert choice.estimator == estimator

    def test_few_rare_alleles__choose_ml_whatever_the_geometry(self):
        Q = np.random.default_rng(3).dirichlet([10, 10, 10], 60)
        choice = choose_estimator(Q, MIN_RARE_SHARE / 2)
        assert choice.estimator == "spectral+ml"
        assert "minor allele frequency" in choice.reason

    def test_premise_absent__is_the_rule_s_first_question_without_a_q(self):
        below = premise_absent(MIN_RARE_SHARE / 2)
        assert below.estimator == "ml"
        assert below.reason == choose_estimator(np.eye(3), MIN_RARE_SHARE / 2).reason
        assert below.record()["statistics"] == {"rare_allele_share": MIN_RARE_SHARE / 2}
        assert premise_absent(MIN_RARE_SHARE) is None

    def test_record__holds_statistics_thresholds_and_decision(self):
        choice = choose_estimator(np.random.default_rng(4).dirichlet([1, 1], 30), 0.5)
        record = choice.record()
        assert record["estimator"] == choice.estimator
        assert record["thresholds"] == {"min_rare_share": MIN_RARE_SHARE,
                                        "anchor_radius": ANCHOR_RADIUS,
                                        "min_near_extreme": MIN_NEAR_EXTREME,
                                        "corner_rank": CORNER_RANK,
                                        "corner_reach": CORNER_REACH}
        assert len(record["statistics"]["near_extreme"]) == 2
        assert len(record["statistics"]["corner_reach"]) == 2


class TestAgainstTruth:
    def test_balding_nichols__chooses_ml_which_beats_the_biased_spectral_estimate(self):
        # few rare alleles: the spectral premise is absent, so the default skips
        # the spectral stage (ML reaches its corners) and its fit is plain ML's,
        # bit for bit
        sim = simulate_balding_nichols(60, 4000, 3, fst=0.1, alpha=0.1, seed=5)
        spectral, ml, default = _three_ways(sim.genotypes, 3)
        assert default.diagnostics["choice"]["statistics"]["rare_allele_share"] < \
            MIN_RARE_SHARE
        assert default.path == "ml-svd"
        assert default.diagnostics["choice"]["estimator"] == "ml"
        assert "spectral" not in default.timings
        assert "Spectral stage: skipped" in "\n".join(default.log_lines)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            plain = fit_admixture(sim.genotypes, 3, seed=0, init="svd")
        np.testing.assert_array_equal(default.Q, plain.Q)
        assert default.loglik == plain.loglik
        assert q_error(sim.Q, ml.Q) < 0.8 * q_error(sim.Q, spectral.Q)
        assert q_error(sim.Q, default.Q) < 0.8 * q_error(sim.Q, spectral.Q)

    def test_balding_nichols_second_look__keeps_ml_where_the_spectral_q_is_spread(self):
        # ML reaches no corner of an admixed cloud, so the spectral stage runs;
        # its estimate puts individuals near the corners too, and ML stays
        sim = simulate_balding_nichols(60, 4000, 3, fst=0.1, alpha=1.0, seed=10)
        spectral, ml, default = _three_ways(sim.genotypes, 3)
        statistics = default.diagnostics["choice"]["statistics"]
        assert default.path == "ml-svd"
        assert statistics["ml_components_at_corner"] < 2
        assert statistics["cluster_excess"] <= CLUSTER_EXCESS
        assert max(statistics["spectral_spread"]) >= MAX_SPREAD
        assert "spectral" in default.timings
        assert "Spectral stage: run for the second look" in "\n".join(default.log_lines)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            plain = fit_admixture(sim.genotypes, 3, seed=0, init="svd")
        np.testing.assert_array_equal(default.Q, plain.Q)
        assert q_error(sim.Q, default.Q) < 0.8 * q_error(sim.Q, spectral.Q)

    def test_balding_nichols_second_look__keeps_spectral_which_beats_ml(self):
        # Dirichlet(10): nobody near-unadmixed, and ML's Q runs to the corners
        sim = simulate_balding_nichols(200, 4000, 3, fst=0.1, alpha=10.0, seed=3)
        spectral, ml, default = _three_ways(sim.genotypes, 3)
        statistics = default.diagnostics["choice"]["statistics"]
        assert statistics["rare_allele_share"] < MIN_RARE_SHARE
        assert default.path == "spectral"
        assert default.diagnostics["choice"]["estimator"] == "spectral"
        np.testing.assert_array_equal(default.Q, spectral.Q)
        assert q_error(sim.Q, spectral.Q) < 0.8 * q_error(sim.Q, ml.Q)

    def test_cluster_excess__tells_populations_from_one_admixed_cloud(self):
        populations = simulate_balding_nichols(150, 4000, 3, fst=0.1, alpha=0.1,
                                               seed=1)
        cloud = simulate_balding_nichols(150, 4000, 3, fst=0.1, alpha=10.0, seed=1)
        clustered, excess = cluster_excess(populations.genotypes.dosage, 3, seed=0)
        assert excess > 2 * CLUSTER_EXCESS and clustered > 0.8
        assert cluster_excess(cloud.genotypes.dosage, 3, seed=0)[1] <= CLUSTER_EXCESS
        assert cluster_excess(cloud.genotypes.dosage, 3, seed=0) == \
            cluster_excess(cloud.genotypes.dosage, 3, seed=0)

    def test_second_look__runs_wherever_ml_misses_a_corner(self):
        # spurious corners: ML can push a few of an admixed cloud to some of the
        # corners (50 individuals at Dirichlet(10): five at 0.99998 in two of
        # three components), so only a fit at every corner skips the look
        first = premise_absent(MIN_RARE_SHARE / 2)
        cloud = np.random.default_rng(5).dirichlet([10, 10, 10], 60)
        two_corners = np.vstack([np.eye(3)[[0, 1]].repeat(5, axis=0), cloud])
        step, choice = second_look(two_corners, first)
        assert choice.statistics["ml_components_at_corner"] == 2
        assert step == "cluster"
        assert second_look(np.vstack([np.eye(3).repeat(5, axis=0), cloud]),
                           first)[0] == "ml"

    def test_second_look__ends_at_ml_saying_why_when_a_step_cannot_run(self):
        first = premise_absent(MIN_RARE_SHARE / 2)
        cloud = np.random.default_rng(5).dirichlet([10, 10, 10], 60)
        step, choice = second_look(cloud, first, skipped="more than 5,000 individuals")
        assert (step, choice.estimator) == ("ml", "ml")
        assert "more than 5,000 individuals" in choice.reason
        step, choice = second_look(cloud, first, excess=(0.55, 0.0),
                                   skipped="no usable whitened tensor")
        assert (step, choice.estimator) == ("ml", "ml")
        assert choice.statistics["cluster_excess"] == 0.0
        assert choice.reason.endswith("maximum likelihood, as ADMIXTURE")

    def test_spectral_stage__scores_common_windows_only_where_rare_alleles_are_few(
            self):
        coalescent = simulate_admixture(50, 3, alpha=0.1, n_snps=10_000, seed=1)
        drift = simulate_balding_nichols(60, 4000, 3, fst=0.1, alpha=1.0, seed=10)
        for sim, scored in ((coalescent, False), (drift, True)):
            spectral = fit_admixture(sim.genotypes, 3, seed=0, refine=False)
            rare = spectral.diagnostics["rare_allele_share"] >= MIN_RARE_SHARE
            common = [window for window in spectral.diagnostics["windows"]
                      if window["max_frequency"] > COMMON_WINDOW_END]
            assert rare != scored
            assert common and all(("skipped" not in window) == scored
                                  for window in common)

    def test_coalescent_with_anchors__chooses_ml_which_beats_spectral(self):
        # the seed paper's setting at alpha = 0.1: most individuals near-unadmixed
        sim = simulate_admixture(50, 3, alpha=0.1, n_snps=10_000, seed=1)
        spectral, ml, default = _three_ways(sim.genotypes, 3)
        assert default.path == "spectral+ml"
        with warnings.catch_warnings():  # the default's ML is plain ML's own fit
            warnings.simplefilter("ignore", ConvergenceWarning)
            plain = fit_admixture(sim.genotypes, 3, seed=0, init="svd")
        np.testing.assert_array_equal(default.Q, plain.Q)
        assert q_error(sim.Q, ml.Q) < q_error(sim.Q, spectral.Q)
        assert q_error(sim.Q, default.Q) < q_error(sim.Q, spectral.Q)

    def test_coalescent_without_anchors__keeps_spectral_which_beats_ml(self):
        # the seed paper's setting at alpha = 10: nobody is near-unadmixed, and
        # maximum likelihood spreads Q to the simplex's corners
        sim = simulate_admixture(50, 3, alpha=10.0, n_snps=10_000, seed=1)
        spectral, ml, default = _three_ways(sim.genotypes, 3)
        assert default.path == "spectral"
        assert q_error(sim.Q, default.Q) == q_error(sim.Q, spectral.Q)
        assert q_error(sim.Q, spectral.Q) < 0.8 * q_error(sim.Q, ml.Q)
