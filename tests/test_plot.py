"""Ancestry bar plots, CV plots, component alignment and label/log readers."""

from __future__ import annotations

import numpy as np
import pytest

from admixspec import InputError, UsageError, simulate_balding_nichols
from admixspec.core.metrics import align_components
from admixspec.io.admixture import write_q
from admixspec.io.results import (
    check_q_rows,
    find_runs,
    read_population_labels,
    read_run_log,
    read_run_record,
    read_sample_ids,
    summarize_runs,
)
from admixspec.plot import MAX_PIXELS, ancestry_palette, plot_ancestry, plot_cv

from .conftest import DATA


def _nested_truth(n=90, K_max=5, seed=3):
    """Q at K = 2..K_max where K is K+1 with its last component merged into the first.

    Component 0 is the largest, so at every split K -> K+1 the piece that keeps
    the parent's index (and colour) is component 0 and the new one is K.
    """
    rng = np.random.default_rng(seed)
    alpha = np.linspace(1.0, 0.3, K_max)
    alpha[0] = 2.0
    Q = rng.dirichlet(alpha * 0.5, size=n)
    truth = {K_max: Q}
    for K in range(K_max - 1, 1, -1):
        Q = truth[K + 1]
        merged = Q[:, :K].copy()
        merged[:, 0] += Q[:, K]
        truth[K] = merged
    return truth


def _png_pixels(path):
    from matplotlib.image import imread

    return imread(str(path))


class TestAlignComponents:
    def test_align_components__recovers_known_shuffle_across_K(self):
        truth = _nested_truth()
        rng = np.random.default_rng(11)
        Ks = [4, 2, 5, 3]  # deliberately not in K order
        shuffles = {K: rng.permutation(K) for K in Ks}
        shuffles[2] = np.arange(2)  # the smallest-K panel keeps its order
        Qs = [truth[K][:, shuffles[K]] for K in Ks]
        perms = align_components(Qs)
        for K, Q, perm in zip(Ks, Qs, perms, strict=True):
            np.testing.assert_array_equal(shuffles[K][perm], np.arange(K))
            np.testing.assert_allclose(Q[:, perm], truth[K])

    def test_align_components__matches_two_runs_at_same_K(self):
        truth = _nested_truth()[4]
        noise = np.random.default_rng(0).uniform(0, 0.05, truth.shape)
        other = truth + noise
        other /= other.sum(1, keepdims=True)
        shuffle = np.array([2, 3, 0, 1])
        perms = align_components([truth, other[:, shuffle]])
        np.testing.assert_array_equal(perms[0], np.arange(4))
        np.testing.assert_array_equal(shuffle[perms[1]], np.arange(4))

    def test_align_components__rejects_different_row_counts(self):
        with pytest.raises(UsageError, match="same individuals"):
            align_components([np.ones((3, 2)) / 2, np.ones((4, 2)) / 2])


class TestPalette:
    def test_ancestry_palette__distinct_up_to_60(self):
        for K in (1, 2, 12, 13, 60):
            colours = ancestry_palette(K)
            assert len(colours) == K
            assert len(set(colours)) == K

    def test_ancestry_palette__rejects_zero(self):
        with pytest.raises(UsageError):
            ancestry_palette(0)


class TestPlotAncestry:
    def test_plot_ancestry__png_has_panels_in_K_order_and_is_not_blank(self, tmp_path):
        truth = _nested_truth()
        labels = np.array([f"P{k}" for k in truth[5].argmax(1)])
        out = tmp_path / "bars.png"
        fig = plot_ancestry(
            [truth[5], truth[3], truth[2], truth[4]], labels=labels, out=out, dpi=80
        )
        assert [ax.get_ylabel() for ax in fig.axes] == ["K=2", "K=3", "K=4", "K=5"]
        pixels = _png_pixels(out)
        width, height = fig.get_size_inches() * 80
        assert pixels.shape[:2] == (round(height), round(width))
        rgb = pixels[..., :3]
        # many distinct colours, and most of the image is not white
        assert len(np.unique(rgb.reshape(-1, 3), axis=0)) >= 5
        assert (rgb.min(axis=2) < 0.95).mean() > 0.4
        # the blue of component 0 is present
        blue = np.array([0x00, 0x72, 0xB2]) / 255
        assert (np.abs(rgb - blue).max(axis=2) < 0.02).sum() > 100

    def test_plot_ancestry__groups_populations_and_sorts_within(self):
        sim = simulate_balding_nichols(40, 30, 3, alpha=0.5, seed=2)
        labels = np.where(np.arange(40) % 2 == 0, "EVEN", "ODD")
        fig = plot_ancestry(sim.Q, labels=labels, population_order=["ODD", "EVEN"])
        order = fig.admixspec_order
        assert np.all(labels[order[:20]] == "ODD")
        assert np.all(labels[order[20:]] == "EVEN")
        ticks = [t.get_text() for t in fig.axes[-1].get_xticklabels()]
        assert ticks == ["ODD", "EVEN"]
        for block in (order[:20], order[20:]):
            main = sim.Q[block].mean(0).argmax()
            assert np.all(np.diff(sim.Q[block, main]) <= 0)

    def test_plot_ancestry__draws_into_the_users_axes(self, tmp_path):
        from matplotlib.figure import Figure

        truth = _nested_truth()
        user = Figure(figsize=(8, 5))
        grid = user.subplots(3, 1)
        grid[0].plot([0, 1], [0, 1])  # the user's own panel stays as it was
        out = tmp_path / "combined.png"
        fig = plot_ancestry([truth[3], truth[2]], ax=grid[1:], title="mine", out=out)
        assert fig is user and len(user.axes) == 3 and len(grid[0].lines) == 1
        assert [a.get_ylabel() for a in grid[1:]] == ["K=2", "K=3"]
        assert grid[1].get_title() == "mine"
        # K = 2 then K = 3: one filled patch per component in each
        assert [len(a.patches) for a in grid[1:]] == [2, 3]
        assert tuple(user.get_size_inches()) == (8, 5) and out.stat().st_size > 0

    def test_plot_ancestry__one_axes_for_one_panel(self):
        from matplotlib.figure import Figure

        axes = Figure().subplots()
        fig = plot_ancestry(_nested_truth()[4], ax=axes)
        assert fig is axes.figure and len(axes.patches) == 4

    def test_plot_ancestry__axes_count_must_match_panels(self):
        from matplotlib.figure import Figure

        with pytest.raises(UsageError, match="1 axes given for 2 panels"):
            plot_ancestry([_nested_truth()[2], _nested_truth()[3]],
                          ax=Figure().subplots())

    @pytest.mark.parametrize("suffix", [".pdf", ".svg"])
    def test_plot_ancestry__writes_vector_formats(self, tmp_path, suffix):
        out = tmp_path / f"bars{suffix}"
        plot_ancestry(_nested_truth()[3], out=out)
        head = out.read_bytes()[:200]
        assert (b"%PDF" in head) if suffix == ".pdf" else (b"<svg" in out.read_bytes())

    def test_plot_ancestry__reads_q_files(self, tmp_path):
        truth = _nested_truth()
        for K in (2, 3):
            np.savetxt(tmp_path / f"run.{K}.Q", truth[K], fmt="%.6f")
        paths = [tmp_path / "run.3.Q", tmp_path / "run.2.Q"]
        fig = plot_ancestry(paths)
        assert [ax.get_ylabel() for ax in fig.axes] == ["K=2", "K=3"]

    def test_plot_ancestry__rejects_unknown_extension(self, tmp_path):
        with pytest.raises(UsageError, match="format"):
            plot_ancestry(_nested_truth()[2], out=tmp_path / "x.jpeg2")

    def test_plot_ancestry__rejects_unknown_population(self):
        with pytest.raises(UsageError, match="NOPE"):
            plot_ancestry(
                _nested_truth()[2], labels=["A"] * 90, population_order=["NOPE"]
            )

    def test_plot_ancestry__rejects_mismatched_individuals(self):
        with pytest.raises(UsageError, match="individuals"):
            plot_ancestry([np.full((5, 2), 0.5), np.full((6, 2), 0.5)])

    def test_plot_ancestry__missing_file_is_input_error(self, tmp_path):
        with pytest.raises(InputError, match="no such Q file"):
            plot_ancestry(tmp_path / "absent.3.Q")

    def test_plot_ancestry__expands_prefix_and_looks_labels_up_by_id(self, tmp_path):
        truth = _nested_truth(n=6)
        for K in (2, 3, 4):
            np.savetxt(tmp_path / f"run.{K}.Q", truth[K], fmt="%.6f")
        (tmp_path / "run.fam").write_text(
            "".join(f"f{i} s{i} 0 0 0 -9\n" for i in range(6))
        )
        (tmp_path / "labels.tsv").write_text(
            "sample_id\tpopulation\n"
            + "".join(f"s{i}\t{'AB'[i % 2]}\n" for i in reversed(range(6)))
        )
        fig = plot_ancestry(
            tmp_path / "run",
            labels=tmp_path / "labels.tsv",
            sample_ids=tmp_path / "run.fam",
            Ks=[2, 4],
        )
        assert [ax.get_ylabel() for ax in fig.axes] == ["K=2", "K=4"]
        assert sorted(fig.admixspec_order[:3] % 2) == [0, 0, 0]


    def test_plot_ancestry__a_keep_runs_rows_are_labelled_by_the_kept_ids(
        self, tmp_path
    ):
        from admixspec.cli import main

        kept = ["pop3-02", "adm-05", "pop1-01", "pop2-04"]  # not in file order
        (tmp_path / "keep.txt").write_text("\n".join(kept) + "\n")
        prefix = tmp_path / "kept"
        assert main(["run", str(DATA / "example.bed"), "-K", "2", "--keep",
                     str(tmp_path / "keep.txt"), "--out", str(prefix), "-q"]) == 0
        in_q_order = ["pop1-01", "pop2-04", "pop3-02", "adm-05"]  # the .fam's order
        assert read_run_record(f"{prefix}.2.json")["samples"] == in_q_order
        (tmp_path / "labels.tsv").write_text(
            "sample_id\tpopulation\n" + "".join(f"{s}\t{s[:4]}\n" for s in kept))
        fig = plot_ancestry(prefix, labels=tmp_path / "labels.tsv")
        ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
        assert sorted(ticks) == ["adm-", "pop1", "pop2", "pop3"]


class TestPlotCV:
    def test_plot_cv__marks_lowest_error_from_logs(self, tmp_path):
        for K, cv in [(2, 0.7), (3, 0.52), (4, 0.55)]:
            (tmp_path / f"r.{K}.log").write_text(
                f"Loglikelihood: -{K}00.5\nCV error (K={K}): {cv}\n"
            )
        out = tmp_path / "cv.png"
        fig = plot_cv(sorted(tmp_path.glob("r.*.log")), out=out)
        assert fig.axes[0].get_title().startswith("best K = 3")
        for K in (2, 3, 4):
            np.savetxt(tmp_path / f"r.{K}.Q", np.full((2, K), 1 / K))
        fig = plot_cv(tmp_path / "r")
        assert fig.axes[0].get_lines()[0].get_xdata().tolist() == [2, 3, 4]
        assert _png_pixels(out).shape[0] > 100

    def test_plot_cv__logs_without_cv_are_input_error(self, tmp_path):
        log = tmp_path / "r.2.log"
        log.write_text("Loglikelihood: -1\n")
        with pytest.raises(InputError, match="CV error"):
            plot_cv([log])

    def test_plot_cv__q_files_without_their_logs_name_the_missing_logs(self, tmp_path):
        # ADMIXTURE's logs are its stdout (log3.out): the CV figure needs them
        # saved as PREFIX.K.log, and says so rather than "run with --cv"
        for K in (2, 3):
            np.savetxt(tmp_path / f"r.{K}.Q", np.full((2, K), 1 / K))
        with pytest.raises(InputError, match=r"r\.2\.log, r\.3\.log not found.*"
                           "PREFIX.K.log"):
            plot_cv(tmp_path / "r")


class TestReaders:
    def test_read_population_labels__pop_fam_and_table(self, tmp_path):
        (tmp_path / "a.pop").write_text("YRI\n-\nCEU\n")
        assert read_population_labels(tmp_path / "a.pop").tolist() == ["YRI", "-", "CEU"]
        (tmp_path / "a.fam").write_text("F1 s1 0 0 0 -9\nF2 s2 0 0 0 -9\n")
        assert read_population_labels(tmp_path / "a.fam").tolist() == ["F1", "F2"]
        by_id = read_population_labels(tmp_path / "a.fam", sample_ids=["s2", "s1"])
        assert by_id.tolist() == ["F2", "F1"]
        (tmp_path / "a.csv").write_text("id,pop,extra\ns1,A,x\ns2,B,y\n")
        table = read_population_labels(tmp_path / "a.csv", sample_ids=["s2"])
        assert table.tolist() == ["B"]

    def test_read_population_labels__unlabelled_sample_is_input_error(self, tmp_path):
        (tmp_path / "l.tsv").write_text("sample_id\tpopulation\ns1\tA\n")
        with pytest.raises(InputError, match="no population label: s9"):
            read_population_labels(tmp_path / "l.tsv", sample_ids=["s1", "s9"])

    def test_read_population_labels__pop_count_mismatch_is_input_error(self, tmp_path):
        (tmp_path / "a.pop").write_text("A\nB\n")
        with pytest.raises(InputError, match="2 labels for 3"):
            read_population_labels(tmp_path / "a.pop", sample_ids=["x", "y", "z"])

    def test_summarize_runs__reads_logs_and_json(self, tmp_path):
        for K, cv in [(3, 0.5), (2, 0.6), (10, 0.7)]:
            np.savetxt(tmp_path / f"r.{K}.Q", np.full((2, K), 1 / K))
            (tmp_path / f"r.{K}.log").write_text(
                f"1 (EM)\tLoglikelihood: -99\nLoglikelihood: -{K}.5\n"
                f"CV error (K={K}): {cv}\n"
            )
            record = f'{{"path": "spectral", "timings": {{"a": {K}, "b": 1.5}}}}'
            (tmp_path / f"r.{K}.json").write_text(record)
        assert [K for K, _ in find_runs(tmp_path / "r")] == [2, 3, 10]
        table = summarize_runs(tmp_path / "r")
        assert table["K"].tolist() == [2, 3, 10]
        assert table["loglik"].tolist() == [-2.5, -3.5, -10.5]
        assert table["seconds"].tolist() == [3.5, 4.5, 11.5]
        assert table["best"].tolist() == [False, True, False]
        assert table["estimator"].tolist() == ["spectral"] * 3

    def test_read_run_log__admixture_tutorial_log(self, hapmap3_fixture):
        log = hapmap3_fixture / "starmie_extdata" / "log3.out"
        info = read_run_log(log)
        assert info["loglik"] == pytest.approx(-3799887.17, abs=0.01)
        assert set(info["cv_errors"]) == {3}


class TestRealData:
    def test_align_components__admixture_hapmap3_keeps_yri_and_ceu_colours(
        self, hapmap3_fixture
    ):
        from admixspec.io.admixture import read_q

        extdata = hapmap3_fixture / "starmie_extdata"
        Qs = [read_q(extdata / f"hapmap3.{K}.Q") for K in (2, 4, 5)]
        Qs.append(read_q(hapmap3_fixture / "hapmap3.3.Q"))
        labels = read_population_labels(
            hapmap3_fixture / "labels.tsv", sample_ids=read_sample_ids(
                hapmap3_fixture / "hapmap3.fam"
            )
        )
        perms = align_components(Qs)
        for Q, perm in zip(Qs, perms, strict=True):
            aligned = Q[:, perm]
            assert aligned[labels == "YRI"].mean(0).argmax() == 0
            assert aligned[labels == "CEU"].mean(0).argmax() == 1
            if Q.shape[1] >= 3:
                assert aligned[labels == "MEX"].mean(0).argmax() == 2


class TestPlotCommand:
    def _run_files(self, folder):
        truth = _nested_truth(n=8)
        for K, cv in [(2, 0.6), (3, 0.5), (4, 0.55)]:
            np.savetxt(folder / f"run.{K}.Q", truth[K], fmt="%.6f")
            (folder / f"run.{K}.log").write_text(
                f"Loglikelihood: -{10 - K}.25\nCV error (K={K}): {cv}\n"
            )
        (folder / "run.pop").write_text("A\nB\nA\nB\nA\nB\nA\nB\n")
        return folder / "run"

    def test_plot_command__writes_bars_and_cv_figures(self, tmp_path):
        from admixspec.cli import main

        prefix = self._run_files(tmp_path)
        status = main(
            [
                "plot", str(prefix), "-K", "2-3", "--labels", str(prefix) + ".pop",
                "--population-order", "B,A", "--out", str(tmp_path / "bars.svg"),
                "--cv-out", str(tmp_path / "cv.png"), "-q",
            ]
        )
        assert status == 0
        svg = (tmp_path / "bars.svg").read_text()
        assert "K=2" in svg and "K=3" in svg and "K=4" not in svg
        assert _png_pixels(tmp_path / "cv.png").shape[0] > 100

    def test_plot_command__bad_extension_exits_2(self, tmp_path, capsys):
        from admixspec.cli import main

        prefix = self._run_files(tmp_path)
        assert main(["plot", str(prefix), "--out", str(tmp_path / "x.gif")]) == 2
        assert "use .png, .pdf or .svg" in capsys.readouterr().err

    def test_plot_command__missing_input_exits_1(self, tmp_path, capsys):
        from admixspec.cli import main

        out = str(tmp_path / "x.png")
        assert main(["plot", str(tmp_path / "none"), "--out", out]) == 1
        err = capsys.readouterr().err
        assert err.startswith("admixspec: error: ") and "none" in err

    def test_summary_command__prints_and_writes_tsv(self, tmp_path, capsys):
        from admixspec.cli import main

        prefix = self._run_files(tmp_path)
        assert main(["summary", str(prefix)]) == 0
        printed = capsys.readouterr().out
        assert "cv_error" in printed and "-7.25" in printed
        out = str(tmp_path / "s.tsv")
        assert main(["summary", str(prefix), "-K", "2", "4", "--out", out]) == 0
        lines = (tmp_path / "s.tsv").read_text().splitlines()
        header = ["K", "estimator", "loglik", "cv_error", "seconds", "best"]
        assert lines[0].split("\t") == header
        assert [line.split("\t")[0] for line in lines[1:]] == ["2", "4"]
        assert lines[2].split("\t")[-1] == "True"


def _fam(path, ids):
    path.write_text("".join(f"F{i} {sample} 0 0 0 -9\n" for i, sample in enumerate(ids)))
    return path


class TestRunRecord:
    def test_summarize_runs__json_that_is_not_an_object_is_an_input_error(
        self, tmp_path
    ):
        write_q(tmp_path / "r.2.Q", np.full((3, 2), 0.5))
        (tmp_path / "r.2.json").write_text("[1, 2]")
        with pytest.raises(InputError, match=r"r\.2\.json: is not an admixspec run "
                           r"record: expected a JSON object, found an array"):
            summarize_runs(tmp_path / "r")

    @pytest.mark.parametrize("field, value, where", [
        ("loglik", '"-12.5"', r'"loglik" must be a number, found a string'),
        ("timings", "[1.5]", r'"timings" must be an object, found an array'),
        ("seconds", "true", r'"seconds" must be a number, found true or false'),
        ("input", "5", r'"input" must be a string, found a number'),
        ("filters", '["x"]', r'"filters"\[0\] must be an object, found a string'),
        ("modes", '{"runs": [{"loglik": "x"}]}',
         r'"modes"\."runs"\[0\]\."loglik" must be a number, found a string'),
    ])
    def test_read_run_record__a_field_of_the_wrong_type_is_an_input_error_naming_it(
        self, tmp_path, field, value, where
    ):
        path = tmp_path / "r.2.json"
        path.write_text(f'{{"K": 2, "{field}": {value}}}')
        with pytest.raises(InputError, match="not an admixspec run record: " + where):
            read_run_record(path)

    def test_read_run_record__absent_and_null_fields_are_unknown(self, tmp_path):
        path = tmp_path / "r.2.json"
        path.write_text('{"loglik": null, "seed": null, "modes": {"runs": []}}')
        assert read_run_record(path, K=2)["loglik"] is None

    def test_read_run_record__a_K_other_than_the_files_is_an_input_error(
        self, tmp_path
    ):
        path = tmp_path / "r.2.json"
        path.write_text('{"K": 3, "loglik": -1.0}')
        with pytest.raises(InputError, match="records K = 3, but its name says K = 2"):
            read_run_record(path, K=2)

    def test_summary_command__json_that_is_not_an_object_exits_1_in_one_line(
        self, tmp_path, capsys
    ):
        from admixspec.cli import main

        write_q(tmp_path / "r.2.Q", np.full((3, 2), 0.5))
        (tmp_path / "r.2.json").write_text("[1, 2]")
        assert main(["summary", str(tmp_path / "r")]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "expected a JSON object" in err


class TestFigureSize:
    def test_plot_ancestry__a_figure_over_the_pixel_limit_is_a_usage_error(self):
        Q = np.full((4, 2), 0.5)
        with pytest.raises(UsageError, match=r"100000 x [\d.]+ inches at 150 dpi is "
                           rf"15000000 x \d+ pixels, over the limit of {MAX_PIXELS}"):
            plot_ancestry(Q, width=100_000)
        with pytest.raises(UsageError, match=f"{MAX_PIXELS + 1} x .* over the limit"):
            plot_ancestry(Q, width=(MAX_PIXELS + 1) / 10, dpi=10)
        fig = plot_ancestry(Q, width=MAX_PIXELS / 10, dpi=10)  # at the limit: drawn
        assert fig.get_size_inches()[0] * 10 == MAX_PIXELS

    @pytest.mark.parametrize("argument", ["width", "panel_height", "dpi"])
    def test_plot_ancestry__a_size_that_is_not_positive_is_a_usage_error(
        self, argument
    ):
        with pytest.raises(UsageError, match=f"{argument} must be positive, got 0"):
            plot_ancestry(np.full((4, 2), 0.5), **{argument: 0})

    def test_plot_cv__a_dpi_over_the_pixel_limit_is_a_usage_error(self):
        with pytest.raises(UsageError, match="over the limit of 65535 pixels"):
            plot_cv({2: 0.6, 3: 0.5}, dpi=20_000)

    def test_plot_command__a_huge_width_exits_2_in_one_line(self, tmp_path, capsys):
        from admixspec.cli import main

        write_q(tmp_path / "r.2.Q", np.full((4, 2), 0.5))
        argv = ["plot", str(tmp_path / "r"), "-o", str(tmp_path / "p.png"),
                "--width", "100000"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "15000000 x 195 pixels" in err
        assert not (tmp_path / "p.png").exists()


class TestQRows:
    def test_plot_ancestry__q_file_whose_rows_do_not_sum_to_1_is_an_input_error(
        self, tmp_path
    ):
        (tmp_path / "r.2.Q").write_text("0.5 0.5\n0.2 0.8\n0.9 0.9\n")
        with pytest.raises(InputError, match=r"r\.2\.Q: row 3 sums to 1\.8, not 1"):
            plot_ancestry(tmp_path / "r")

    def test_plot_ancestry__a_p_file_is_not_plotted_as_q(self, tmp_path):
        P = np.random.default_rng(0).uniform(0.05, 0.95, (500, 3))
        path = tmp_path / "bare.P"
        path.write_text("".join(" ".join(f"{v:.6f}" for v in row) + "\n" for row in P))
        with pytest.raises(InputError, match=r"bare\.P: row 1 sums to .*a \.P file"):
            plot_ancestry(path)

    def test_plot_ancestry__a_mode_q_whose_rows_do_not_sum_to_1_is_an_input_error(
        self, tmp_path
    ):
        from admixspec.fit.modes import find_modes
        from admixspec.io.modes import write_modes

        Q = _nested_truth(n=6)[3]
        modes = find_modes([Q, np.roll(Q, 1, axis=0)], logliks=[-1.0, -2.0])
        write_q(tmp_path / "r.3.Q", Q)
        write_modes(tmp_path / "r", 3, modes)
        (tmp_path / "r.3.mode2.Q").write_text("0.9 0.9 0.9\n" * 6)
        with pytest.raises(InputError, match=r"r\.3\.mode2\.Q: row 1 sums to 2\.7"):
            plot_ancestry(tmp_path / "r", modes=True)

    @pytest.mark.parametrize("K, decimals", [(2, 6), (20, 6), (5, 3), (12, 3)])
    def test_check_q_rows__accepts_rounded_and_clamped_rows(self, K, decimals):
        Q = np.random.default_rng(K).dirichlet(np.full(K, 0.2), 2000)
        Q[0] = np.eye(K)[0]  # clamped to 1 - 1e-5 and 1e-5 on writing
        check_q_rows(np.round(np.clip(Q, 1e-5, 1 - 1e-5), decimals), "r.Q")


class TestLabelsById:
    def _run(self, folder):
        """A run of 6 individuals, s0..s5 in that Q row order; labels A, B, A, ..."""
        truth = _nested_truth(n=6)
        for K in (2, 3):
            write_q(folder / f"run.{K}.Q", truth[K])
        table = folder / "labels.tsv"
        table.write_text("sample_id\tpopulation\n" + "".join(
            f"s{i}\t{'AB'[i % 2]}\n" for i in reversed(range(6))))
        return folder / "run", table

    def _groups(self, fig):
        """Each population's plotted individuals (rows of Q)."""
        names = [t.get_text() for t in fig.axes[-1].get_xticklabels()]
        order = fig.admixspec_order
        return {name: sorted(order[3 * j:3 * j + 3] % 2) for j, name in enumerate(names)}

    def test_read_population_labels__a_table_without_sample_ids_is_an_input_error(
        self, tmp_path
    ):
        (tmp_path / "l.tsv").write_text("sample_id\tpopulation\ns2\tB\ns1\tA\n")
        with pytest.raises(InputError, match=r"l\.tsv: the label table names samples "
                           r"in its 'sample_id' column.*\(--ids\)"):
            read_population_labels(tmp_path / "l.tsv")

    def test_plot_ancestry__a_label_table_is_looked_up_by_the_ids_the_run_recorded(
        self, tmp_path
    ):
        prefix, table = self._run(tmp_path)
        fam = _fam(tmp_path / "input.fam", [f"s{i}" for i in range(6)])
        (tmp_path / "run.3.json").write_text(f'{{"K": 3, "input": "{fam}"}}')
        fig = plot_ancestry(prefix, labels=table)
        assert self._groups(fig) == {"A": [0, 0, 0], "B": [1, 1, 1]}

    def test_plot_ancestry__a_label_table_is_looked_up_by_admixtures_input_fam(
        self, tmp_path
    ):
        prefix, table = self._run(tmp_path)
        _fam(tmp_path / "run.fam", [f"s{i}" for i in range(6)])
        fig = plot_ancestry(tmp_path / "run.3.Q", labels=table)
        assert self._groups(fig) == {"A": [0, 0, 0], "B": [1, 1, 1]}

    def test_plot_command__a_label_table_without_ids_exits_1_saying_to_pass_ids(
        self, tmp_path, capsys
    ):
        from admixspec.cli import main

        prefix, table = self._run(tmp_path)
        argv = ["plot", str(prefix), "--labels", str(table), "-o",
                str(tmp_path / "p.png")]
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "(--ids)" in err


class TestAtomicFigures:
    """A figure is written whole or not at all: an error or Ctrl-C mid-write keeps
    the old file and leaves no temporary one."""

    @staticmethod
    def _failing_savefig(monkeypatch, error):
        from matplotlib.figure import Figure

        def savefig(self, fname, **kwargs):
            fname.write(b"half a figure")
            raise error

        monkeypatch.setattr(Figure, "savefig", savefig)

    @pytest.mark.parametrize("draw", ["ancestry", "cv"])
    @pytest.mark.parametrize("error", [RuntimeError("renderer failed"),
                                       KeyboardInterrupt()])
    def test_plot__a_failing_write_keeps_the_old_file_and_leaves_no_temporary(
        self, draw, error, tmp_path, monkeypatch
    ):
        out = tmp_path / "figure.png"
        out.write_bytes(b"the old figure")
        self._failing_savefig(monkeypatch, error)
        with pytest.raises(type(error)):
            if draw == "ancestry":
                plot_ancestry(_nested_truth()[3], out=out)
            else:
                plot_cv({2: 0.6, 3: 0.5}, out=out)
        assert out.read_bytes() == b"the old figure"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png"]

    def test_plot_command__interrupted_leaves_no_figure_and_no_temporary(
        self, tmp_path, monkeypatch, capsys
    ):
        from admixspec.cli import main

        prefix = TestPlotCommand._run_files(self, tmp_path)
        before = sorted(p.name for p in tmp_path.iterdir())
        self._failing_savefig(monkeypatch, KeyboardInterrupt())
        assert main(["plot", str(prefix), "-o", str(tmp_path / "p.svg")]) == 130
        assert capsys.readouterr().err == "admixspec: interrupted\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == before

    @pytest.mark.parametrize("suffix", [".png", ".PDF", ".svg"])
    def test_plot__the_format_follows_the_extension(self, suffix, tmp_path):
        magic = {".png": b"\x89PNG", ".pdf": b"%PDF", ".svg": b"<?xml"}
        for draw, out in [(plot_ancestry, tmp_path / f"bars{suffix}"),
                          (plot_cv, tmp_path / f"cv{suffix}")]:
            draw(_nested_truth()[3] if draw is plot_ancestry else {2: 0.6, 3: 0.5},
                 out=out)
            assert out.read_bytes().startswith(magic[suffix.lower()])
        assert len(list(tmp_path.iterdir())) == 2


class TestMessagesNameTheFiles:
    """A count that does not fit, or a K not run, says which file and which K."""

    _run_files = TestPlotCommand._run_files  # run.K.Q for K = 2-4, 8 individuals

    def _error(self, argv, capsys, code) -> str:
        from admixspec.cli import main

        assert main([str(a) for a in argv]) == code
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1
        return lines[0]

    def test_summary_command__a_K_not_run_names_the_K_found(self, tmp_path, capsys):
        prefix = self._run_files(tmp_path)
        assert self._error(["summary", prefix, "-K", "7"], capsys, 1) == (
            f"admixspec: error: no {prefix}.7.Q (found K = 2-4 for {prefix})")

    def test_plot_command__a_K_not_in_the_inputs_names_the_K_found(self, tmp_path,
                                                                   capsys):
        prefix = self._run_files(tmp_path)
        argv = ["plot", prefix, "-K", "6", "7", "-o", tmp_path / "p.png"]
        assert self._error(argv, capsys, 1) == (
            "admixspec: error: no Q matrix with K = 6, 7 to plot (found K = 2-4 "
            f"in {prefix})")
        assert not (tmp_path / "p.png").exists()

    @pytest.mark.parametrize("subcommand", ["plot", "summary", "report"])
    def test_missing_K__is_a_data_error_exit_1_in_every_command(
        self, subcommand, tmp_path, capsys
    ):
        if subcommand == "report":
            pytest.importorskip("bokeh",
                                reason="the report needs Bokeh (admixspec[report])")
        prefix = self._run_files(tmp_path)
        out = {"plot": ["-o", tmp_path / "p.png"], "summary": [],
               "report": ["-o", tmp_path / "r.html"]}[subcommand]
        line = self._error([subcommand, prefix, "-K", "9", *out], capsys, 1)
        assert "K = 9" in line or f"{prefix}.9.Q" in line
        assert line.endswith(f"(found K = 2-4 in {prefix})" if subcommand == "plot"
                             else f"(found K = 2-4 for {prefix})")
        assert not (tmp_path / "p.png").exists() and not (tmp_path / "r.html").exists()

    def test_plot_command__a_K_missing_beside_ones_found_is_refused_not_dropped(
        self, tmp_path, capsys
    ):
        prefix = self._run_files(tmp_path)
        argv = ["plot", prefix, "-K", "3", "6-8", "-o", tmp_path / "p.png", "--cv-out",
                tmp_path / "cv.png"]
        assert self._error(argv, capsys, 1) == (
            "admixspec: error: no Q matrix with K = 6-8 to plot (found K = 2-4 "
            f"in {prefix})")
        assert not (tmp_path / "p.png").exists() and not (tmp_path / "cv.png").exists()

    def test_plot_command__a_K_missing_from_q_files_names_them(self, tmp_path, capsys):
        prefix = self._run_files(tmp_path)
        files = [f"{prefix}.2.Q", f"{prefix}.3.Q"]
        argv = ["plot", *files, "-K", "2", "4", "-o", tmp_path / "p.png"]
        assert self._error(argv, capsys, 1) == (
            "admixspec: error: no Q matrix with K = 4 to plot (found K = 2, 3 in "
            f"{files[0]}, {files[1]})")

    def test_summary_command__a_K_missing_beside_ones_found_is_refused_not_dropped(
        self, tmp_path, capsys
    ):
        prefix = self._run_files(tmp_path)
        assert self._error(["summary", prefix, "-K", "3", "7"], capsys, 1) == (
            f"admixspec: error: no {prefix}.7.Q (found K = 2-4 for {prefix})")
        argv = ["summary", prefix, "-K", "2-9", "-o", tmp_path / "s.tsv"]
        assert self._error(argv, capsys, 1) == (
            f"admixspec: error: no {prefix}.K.Q for K = 5-9 (found K = 2-4 for "
            f"{prefix})")
        assert not (tmp_path / "s.tsv").exists()

    def test_plot_ancestry__a_K_no_input_has_is_an_input_error(self):
        truth = _nested_truth(n=8)
        with pytest.raises(InputError, match=r"^no Q matrix with K = 5 to plot \(found "
                           r"K = 2, 3 in Q #0, Q #1\)$"):
            plot_ancestry([truth[2], truth[3]], Ks=[2, 5])
        with pytest.raises(UsageError, match="Ks is empty"):
            plot_ancestry([truth[2], truth[3]], Ks=[])

    def test_summarize_runs__a_K_not_run_is_an_input_error(self, tmp_path):
        prefix = self._run_files(tmp_path)
        with pytest.raises(InputError, match=r"run\.K\.Q for K = 5, 7 \(found K = 2-4"):
            summarize_runs(prefix, Ks=[2, 5, 7])
        with pytest.raises(UsageError, match="Ks is empty"):
            summarize_runs(prefix, Ks=[])
        assert summarize_runs(prefix, Ks=[4, 2])["K"].tolist() == [2, 4]

    def test_plot_command__a_label_file_of_another_length_names_it_and_the_q(
        self, tmp_path, capsys
    ):
        prefix = self._run_files(tmp_path)
        labels = tmp_path / "seven.pop"
        labels.write_text("A\n" * 7)
        argv = ["plot", prefix, "--labels", labels, "-o", tmp_path / "p.png"]
        assert self._error(argv, capsys, 1) == (
            f"admixspec: error: {labels}: 7 labels for 8 individuals (the rows of "
            "run.2.Q)")

    def test_plot_command__an_ids_file_of_another_length_names_it_and_the_q(
        self, tmp_path, capsys
    ):
        prefix = self._run_files(tmp_path)
        ids = tmp_path / "seven.txt"
        ids.write_text("".join(f"s{i}\n" for i in range(7)))
        argv = ["plot", prefix, "--ids", ids, "-o", tmp_path / "p.png"]
        assert self._error(argv, capsys, 1) == (
            f"admixspec: error: {ids}: 7 sample IDs for 8 individuals (the rows of "
            "run.2.Q)")

    def test_plot_ancestry__q_files_of_other_lengths_name_both(self, tmp_path):
        write_q(tmp_path / "a.2.Q", np.full((5, 2), 0.5))
        write_q(tmp_path / "b.2.Q", np.full((6, 2), 0.5))
        with pytest.raises(UsageError, match=r"^b\.2\.Q has 6 individuals, a\.2\.Q "
                                             r"has 5$"):
            plot_ancestry([tmp_path / "a.2.Q", tmp_path / "b.2.Q"])
