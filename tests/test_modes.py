"""Modes of several runs of one K: alignment, CLUMPP's G', grouping, and the files."""

from __future__ import annotations

import itertools
import json
import math
import os

import numpy as np
import pytest

from admixspec import InputError, UsageError
from admixspec.core.metrics import align_components
from admixspec.fit.modes import (
    DEFAULT_THRESHOLD,
    align_mode_panels,
    find_modes,
    similarity,
)
from admixspec.io.modes import (
    MODES_COLUMNS,
    mode_panels,
    modes_outputs,
    read_modes,
    write_modes,
)
from admixspec.io.results import find_runs

from .conftest import failing_on_call


def _solutions(n=300, seed=0):
    """Two K = 4 solutions that differ in which family of 10 gets component 3.

    Three populations of 100 (components 0-2); in ``first`` the family of
    individuals 0-9 is mostly component 3, in ``second`` the family 100-109
    is, as when a run gives a small family its own component elsewhere.
    """
    rng = np.random.default_rng(seed)
    base = np.zeros((n, 4))
    for pop in range(3):
        members = slice(100 * pop, 100 * (pop + 1))
        base[members, :3] = rng.dirichlet(np.full(3, 0.3), 100) * 0.3
        base[members, pop] += 0.7
    first, second = base.copy(), base.copy()
    for Q, family in ((first, slice(0, 10)), (second, slice(100, 110))):
        Q[family, 3] = 0.8
        Q[family, :3] *= 0.2
    return first, second


def _run(Q, rng, noise=1e-3):
    """A fit of the solution ``Q``: shuffled labels and convergence-sized noise."""
    noisy = np.clip(Q + rng.normal(0, noise, Q.shape), 1e-6, None)
    noisy /= noisy.sum(1, keepdims=True)
    perm = rng.permutation(Q.shape[1])
    return noisy[:, perm], perm


def _brute_force_g_prime(A, B):
    """G' by trying every permutation (tiny K only)."""
    n, K = A.shape
    best = min(np.sqrt(((A - B[:, list(p)]) ** 2).sum())
               for p in itertools.permutations(range(K)))
    return 1 - best / np.sqrt(2 * n)


class TestSimilarity:
    def test_similarity__equals_brute_force_over_all_permutations(self):
        rng = np.random.default_rng(4)
        for _ in range(20):
            A = rng.dirichlet(np.ones(4), 40)
            B = rng.dirichlet(np.ones(4), 40)
            expected = _brute_force_g_prime(A, B)
            assert similarity(A, B) == pytest.approx(expected, abs=1e-12)

    def test_similarity__is_one_for_relabelled_copy_and_zero_at_most_apart(self):
        Q = np.eye(3)[[0, 1, 2, 0, 1]]
        assert similarity(Q, Q[:, [2, 0, 1]]) == pytest.approx(1.0)
        # every individual wholly in a different component, whatever the labels:
        # one column all ones against another, K = 2
        A = np.tile([1.0, 0.0], (6, 1))
        B = np.tile([0.0, 1.0], (6, 1))
        B[:3] = [1.0, 0.0]
        assert similarity(A, B) == pytest.approx(1 - np.sqrt(6) / np.sqrt(12))

    def test_similarity__is_symmetric(self):
        first, second = _solutions()
        assert similarity(first, second) == pytest.approx(similarity(second, first))

    def test_similarity__rejects_shapes_that_differ(self):
        with pytest.raises(UsageError, match="one 2-d shape"):
            similarity(np.ones((3, 2)) / 2, np.ones((3, 3)) / 3)


class TestFindModes:
    def test_find_modes__permuted_noisy_copies_form_one_mode_and_are_unshuffled(self):
        first, _ = _solutions()
        rng = np.random.default_rng(1)
        runs, perms = zip(*[_run(first, rng) for _ in range(6)], strict=True)
        logliks = [-100.0, -99.0, -100.5, -101.0, -99.5, -100.2]
        result = find_modes(runs, logliks=logliks)
        assert len(result.modes) == 1
        assert result.modes[0].runs == tuple(range(6))
        assert result.labels.tolist() == [1] * 6
        assert result.reference == 1  # the best log-likelihood
        # each run aligned to the reference: the same columns of the truth
        for r in range(6):
            true_columns = perms[r][result.permutations[r]]
            np.testing.assert_array_equal(true_columns, perms[1])
            np.testing.assert_allclose(result.aligned[r], first[:, perms[1]], atol=0.01)
        assert result.modes[0].min_similarity > 0.995

    def test_find_modes__two_solutions_form_two_modes_with_their_statistics(self):
        first, second = _solutions()
        assert similarity(first, second) < 0.95  # genuinely different
        rng = np.random.default_rng(2)
        which = [0, 1, 0, 0, 1, 0, 0, 1, 0, 0]
        runs = [_run(first if w == 0 else second, rng)[0] for w in which]
        logliks = np.array([-50.0, -48.0, -50.5, -51.0, -49.0, -50.2, -50.1, -48.5,
                            -52.0, -50.3])
        names = [f"s{r}" for r in range(10)]
        result = find_modes(runs, logliks=logliks, run_names=names)
        major, minor = result.modes
        assert major.runs == tuple(r for r in range(10) if which[r] == 0)
        assert minor.runs == (1, 4, 7)
        assert (major.share, minor.share) == (0.7, 0.3)
        assert major.best_loglik == -50.0
        assert major.representative == 0
        assert major.mean_loglik == pytest.approx(logliks[major.runs, ].mean())
        # the smaller mode holds the best run: it is the reference
        assert minor.best_loglik == -48.0
        assert minor.representative == 1
        assert result.reference == 1
        assert result.labels.tolist() == [2 if w else 1 for w in which]
        assert major.similarity_to_major == 1.0
        assert minor.similarity_to_major == pytest.approx(
            similarity(runs[0], runs[1]))
        table = result.table()
        assert table["best"].tolist() == [False, True]
        assert table["runs"].tolist() == ["s0,s2,s3,s5,s6,s8,s9", "s1,s4,s7"]
        assert table["representative"].tolist() == ["s0", "s1"]

    def test_find_modes__a_given_reference_is_aligned_to_and_represents_its_mode(self):
        # fit_runs reports the default's spectral estimate over better-scoring ML runs
        first, second = _solutions()
        rng = np.random.default_rng(4)
        runs = [_run(Q, rng)[0] for Q in (second, first, first, second)]
        result = find_modes(runs, logliks=[-60.0, -50.0, -51.0, -55.0], reference=3)
        assert result.reference == 3
        np.testing.assert_array_equal(result.permutations[3], np.arange(4))
        mode = result.modes[result.labels[3] - 1]
        assert mode.runs == (0, 3) and mode.representative == 3
        assert mode.best_loglik == -55.0
        assert result.table()["best"].tolist() == [False, True]
        with pytest.raises(UsageError, match="reference run 4 of 4 runs"):
            find_modes(runs, reference=4)

    def test_find_modes__equal_sizes_are_ordered_by_best_loglik(self):
        first, second = _solutions()
        rng = np.random.default_rng(3)
        runs = [_run(Q, rng)[0] for Q in (first, second, first, second)]
        result = find_modes(runs, logliks=[-10.0, -9.0, -10.0, -9.5])
        assert [m.runs for m in result.modes] == [(1, 3), (0, 2)]

    def test_find_modes__every_pair_of_a_mode_meets_the_threshold(self):
        # a chain: a ~ b and b ~ c at the threshold, a and c further apart
        first, _ = _solutions()
        step = np.zeros_like(first)
        step[:30, 0], step[:30, 1] = 0.12, -0.12
        runs = [first, first + step, first + 2 * step]
        S = find_modes(runs).similarity
        threshold = (S[0, 1] + S[0, 2]) / 2
        assert S[0, 1] > threshold
        assert S[1, 2] > threshold
        assert S[0, 2] < threshold
        result = find_modes(runs, threshold=threshold)
        assert len(result.modes) == 2
        for mode in result.modes:
            members = list(mode.runs)
            assert S[np.ix_(members, members)].min() >= threshold

    def test_find_modes__a_pair_exactly_at_the_threshold_is_one_mode(self):
        first, second = _solutions()
        g = similarity(first, second)
        assert len(find_modes([first, second], threshold=g).modes) == 1
        assert len(find_modes([first, second], threshold=g + 1e-9).modes) == 2

    def test_find_modes__default_threshold_separates_noise_from_a_moved_family(self):
        first, second = _solutions()
        rng = np.random.default_rng(5)
        same = similarity(_run(first, rng)[0], _run(first, rng)[0])
        different = similarity(first, second)
        assert different < DEFAULT_THRESHOLD < same

    def test_find_modes__default_threshold_one_individual_moving_is_a_new_mode(self):
        # 324 individuals as in the HapMap3 tutorial: one of them moving wholly
        # from component 0 to 1 is G' = 1 - sqrt(2 / 648) = 0.944
        one = np.tile([0.0, 0.0, 1.0], (324, 1))
        one_moved = one.copy()
        one_moved[0] = [1.0, 0.0, 0.0]
        assert similarity(one, one_moved) == pytest.approx(1 - np.sqrt(2 / 648))
        assert len(find_modes([one, one_moved]).modes) == 2
        # every bar shifted by 0.02 between two components: one mode
        Q = np.tile([0.7, 0.2, 0.1], (324, 1))
        Q[::3] = [0.1, 0.2, 0.7]
        shifted = Q + np.array([0.02, -0.02, 0.0])
        assert similarity(Q, shifted) > DEFAULT_THRESHOLD
        assert len(find_modes([Q, shifted]).modes) == 1

    def test_find_modes__without_logliks_uses_run_zero_and_the_medoid(self):
        first, second = _solutions()
        rng = np.random.default_rng(6)
        runs = [_run(first, rng, noise=n)[0] for n in (3e-3, 1e-4, 2e-3)]
        runs.append(_run(second, rng)[0])
        result = find_modes(runs)
        assert result.reference == 0
        assert np.isnan(result.logliks).all()
        major = result.modes[0]
        assert major.runs == (0, 1, 2)
        assert major.representative == 1
        assert math.isnan(major.best_loglik)
        assert math.isnan(major.mean_loglik)
        assert "loglikelihood" not in result.log_lines()[1]

    def test_find_modes__single_run_is_one_mode(self):
        first, _ = _solutions()
        result = find_modes([first], logliks=[-3.0])
        assert [m.runs for m in result.modes] == [(0,)]
        assert result.modes[0].min_similarity == 1.0

    def test_find_modes__record_is_json_and_log_names_every_mode(self):
        first, second = _solutions()
        result = find_modes([first, second, first], logliks=[-1.0, -2.0, float("nan")],
                            run_names=[41, 42, 43])
        record = json.loads(json.dumps(result.record()))
        assert record["reference"] == "41"
        assert [m["runs"] for m in record["modes"]] == ["41,43", "42"]
        assert record["runs"][2]["loglik"] is None
        assert record["threshold"] == DEFAULT_THRESHOLD
        lines = result.log_lines()
        assert lines[0].startswith("Modes (K=4): 2 modes over 3 runs")
        assert lines[1] == ("Mode 1: 2 runs (67%): 41,43; representative run 41; "
                            "loglikelihood best -1.000000, mean -1.000000")
        assert lines[2].startswith("Mode 2: 1 run (33%): 42;")
        assert "G' to mode 1" in lines[2]

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"threshold": 0.0}, "threshold must be in"),
            ({"threshold": 1.5}, "threshold must be in"),
            ({"logliks": [1.0]}, "1 log-likelihoods for 2 runs"),
            ({"run_names": ["a"]}, "1 run names for 2 runs"),
        ],
    )
    def test_find_modes__rejects_bad_arguments(self, kwargs, message):
        first, _ = _solutions()
        with pytest.raises(UsageError, match=message):
            find_modes([first, first], **kwargs)

    def test_find_modes__rejects_runs_of_other_shapes_and_nan(self):
        first, _ = _solutions()
        with pytest.raises(UsageError, match="run 2 has"):
            find_modes([first, first[:, :3]])
        with pytest.raises(UsageError, match="at least one run"):
            find_modes([])
        bad = first.copy()
        bad[0, 0] = np.nan
        with pytest.raises(UsageError, match="NaN"):
            find_modes([first, bad])


class TestAlignModePanels:
    def test_align_mode_panels__minor_mode_aligns_to_its_own_K_not_the_one_before(self):
        first, second = _solutions()
        K3 = first[:, :3] + first[:, 3:] / 3
        rng = np.random.default_rng(7)
        shuffle = rng.permutation(4)
        minor = second[:, shuffle]
        panels = [K3, first, minor]
        perms = align_mode_panels(panels)
        main = first[:, perms[1]]
        # the minor mode's columns are the main panel's components
        np.testing.assert_array_equal(shuffle[perms[2]], perms[1])
        assert similarity(main, minor[:, perms[2]]) == pytest.approx(
            1 - np.linalg.norm(main - minor[:, perms[2]]) / np.sqrt(2 * 300))
        # the across-K part is align_components' own answer
        across = align_components([K3, first])
        np.testing.assert_array_equal(perms[0], across[0])
        np.testing.assert_array_equal(perms[1], across[1])


class TestModesFiles:
    def _modes(self, best_in_minor=False):
        first, second = _solutions()
        rng = np.random.default_rng(8)
        runs = [_run(Q, rng)[0] for Q in (first, first, second, first)]
        logliks = [-10.0, -10.5, -9.0 if best_in_minor else -12.0, -11.0]
        return runs, find_modes(runs, logliks=logliks)

    def test_write_modes__round_trips_and_minor_mode_q_is_aligned_to_the_best_run(
        self, tmp_path
    ):
        runs, modes = self._modes()
        prefix = tmp_path / "r"
        written = write_modes(prefix, 4, modes)
        assert [p.name for p in written] == ["r.4.modes.tsv", "r.4.mode2.Q"]
        table = read_modes(tmp_path / "r.4.modes.tsv")
        assert list(table.columns) == list(MODES_COLUMNS)
        assert table["q_file"].tolist() == ["r.4.Q", "r.4.mode2.Q"]
        assert table["runs"].tolist() == ["1,2,4", "3"]
        expected = modes.table()
        np.testing.assert_allclose(table["best_loglik"], expected["best_loglik"])
        np.testing.assert_allclose(table["similarity_to_major"],
                                   expected["similarity_to_major"], rtol=1e-9)
        # the mode<M>.Q columns are the best run's components: aligned to run 1
        from admixspec import read_q

        minor = read_q(tmp_path / "r.4.mode2.Q")
        perm = modes.permutations[2]
        np.testing.assert_allclose(minor, np.clip(runs[2][:, perm], 1e-5, 1 - 1e-5),
                                   atol=1e-6)

    def test_write_modes__best_run_in_a_minor_mode_gets_the_main_q(self, tmp_path):
        _, modes = self._modes(best_in_minor=True)
        files = modes_outputs(tmp_path / "r", 4, modes)
        assert sorted(p.name for p in files) == ["r.4.mode1.Q", "r.4.modes.tsv"]
        table = read_modes_text(files[tmp_path / "r.4.modes.tsv"], tmp_path)
        assert table["q_file"].tolist() == ["r.4.mode1.Q", "r.4.Q"]
        assert table["best"].tolist() == [False, True]

    def test_mode_panels__reads_every_mode_q_beside_the_run(self, tmp_path):
        runs, modes = self._modes()
        from admixspec import write_q

        write_q(tmp_path / "r.4.Q", runs[modes.reference])
        write_modes(tmp_path / "r", 4, modes)
        panels = mode_panels(tmp_path / "r", 4)
        assert [(m, s) for m, s, _, _ in panels] == [(1, 0.75), (2, 0.25)]
        assert [p.name for _, _, _, p in panels] == ["r.4.Q", "r.4.mode2.Q"]
        assert mode_panels(tmp_path / "r", 5) == []
        # find_runs still sees only PREFIX.K.Q (a mode file is not a K)
        assert [K for K, _ in find_runs(tmp_path / "r")] == [4]

    def test_mode_panels__a_table_left_by_an_earlier_run_is_ignored(self, tmp_path,
                                                                     caplog):
        # 'run --runs 4' then 'run' of that K without --runs: Q and JSON are
        # rewritten, the earlier run's modes table stays beside them
        runs, modes = self._modes()
        from admixspec import write_q

        write_q(tmp_path / "r.4.Q", runs[modes.reference])
        write_modes(tmp_path / "r", 4, modes)
        record = tmp_path / "r.4.json"
        record.write_text(json.dumps({"K": 4, "modes": modes.record()}))
        assert len(mode_panels(tmp_path / "r", 4)) == 2
        record.write_text(json.dumps({"K": 4, "loglik": -1.0}))
        assert mode_panels(tmp_path / "r", 4) == []
        assert "r.4.modes.tsv: ignored, left by an earlier run" in caplog.text
        other = modes.record()  # a later --runs whose modes the table does not hold
        other["modes"][0]["runs"] = "5,6,7"
        record.write_text(json.dumps({"K": 4, "modes": other}))
        assert mode_panels(tmp_path / "r", 4) == []

    def test_write_modes__a_failure_part_way_leaves_no_file(self, tmp_path, monkeypatch):
        _, modes = self._modes()
        monkeypatch.setattr(os, "replace", failing_on_call(
            os.replace, 2, OSError(28, "No space left on device")))
        with pytest.raises(OSError, match="No space left"):
            write_modes(tmp_path / "r", 4, modes)
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize(
        ("edit", "message"),
        [
            (lambda t: t.replace("\tq_file", "\tfile"), "missing column"),
            (lambda t: t.replace("\n2\t", "\n3\t"), "numbered 1, 2"),
            (lambda t: t.replace("True", "False"), "exactly one mode"),
            (lambda t: t.replace("\n1\t3\t0.75", "\n1\t3\tmany"), "non-numeric share"),
        ],
    )
    def test_read_modes__rejects_malformed_tables(self, tmp_path, edit, message):
        _, modes = self._modes()
        write_modes(tmp_path / "r", 4, modes)
        path = tmp_path / "r.4.modes.tsv"
        path.write_text(edit(path.read_text()))
        with pytest.raises(InputError, match=message):
            read_modes(path)

    def test_read_modes__missing_file_and_missing_mode_q(self, tmp_path):
        with pytest.raises(InputError, match="file not found"):
            read_modes(tmp_path / "none.tsv")
        runs, modes = self._modes()
        write_modes(tmp_path / "r", 4, modes)
        with pytest.raises(InputError, match="mode 1's Q file r.4.Q is missing"):
            mode_panels(tmp_path / "r", 4)
        from admixspec import write_q

        write_q(tmp_path / "r.4.Q", runs[modes.reference])
        (tmp_path / "r.4.mode2.Q").unlink()
        with pytest.raises(InputError, match="mode 2's Q file r.4.mode2.Q is missing"):
            mode_panels(tmp_path / "r", 4)


def read_modes_text(text, folder):
    path = folder / "table.tsv"
    path.write_text(text)
    return read_modes(path)
