"""What users look at after a fit: ``plot``, ``report`` and ``summary`` on odd inputs.

Each test states a property that a defect found by hand once broke.
"""

from __future__ import annotations

import numpy as np
import pytest

from admixspec import InputError, UsageError, simulate_balding_nichols, write_q
from admixspec.cli import main
from admixspec.io.common import write_text
from admixspec.io.results import (
    find_runs,
    read_population_labels,
    read_sample_ids,
    summarize_runs,
)
from admixspec.plot import plot_ancestry

N = 12


def _run(folder, name="run", Ks=(2, 3)):
    """``PREFIX.K.Q`` (and a log) for each K, of one simulated set of individuals."""
    sim = simulate_balding_nichols(N, 100, max(Ks), seed=3)
    prefix = folder / name
    for K in Ks:
        Q = sim.Q[:, :K].copy()
        Q[:, -1] += sim.Q[:, K:].sum(1)
        write_q(f"{prefix}.{K}.Q", Q)
        write_text(f"{prefix}.{K}.log", f"Loglikelihood: -{1000 - K}.5\n"
                   f"CV error (K={K}): 0.{50 + K}\n")
    return prefix, sim


class TestRunFiles:
    def test_plot__a_runs_q_file_with_other_columns_than_its_K_is_refused(
            self, tmp_path, capsys):
        prefix, _ = _run(tmp_path)
        # PREFIX.3.Q holding K = 2's matrix: drawn as a second K = 2 before
        write_text(f"{prefix}.3.Q", (tmp_path / "run.2.Q").read_text())
        with pytest.raises(InputError,
                           match=r"run\.3\.Q: has 2 columns, expected K = 3"):
            plot_ancestry(prefix)
        assert main(["plot", str(prefix), "-K", "3", "-o", str(tmp_path / "a.png")]) == 1
        assert capsys.readouterr().err.strip() == (
            f"admixspec: error: {prefix}.3.Q: has 2 columns, expected K = 3")
        assert not (tmp_path / "a.png").exists()

    def test_prefix_with_glob_characters__finds_its_own_files(self, tmp_path, capsys):
        prefix, _ = _run(tmp_path, name="run[1]")
        _run(tmp_path, name="run1", Ks=(4,))  # what the pattern run[1] matches
        assert [K for K, _ in find_runs(prefix)] == [2, 3]
        assert summarize_runs(prefix)["K"].tolist() == [2, 3]
        assert len(plot_ancestry(prefix).axes) == 2
        assert main(["summary", str(prefix)]) == 0
        assert "0.53" in capsys.readouterr().out


    def test_a_runs_file_given_for_its_prefix_names_the_prefix(self, tmp_path, capsys):
        prefix, _ = _run(tmp_path)
        for given in (f"{prefix}.3.Q", f"{prefix}.2.log", f"{prefix}.3"):
            assert main(["summary", given]) == 1
            assert capsys.readouterr().err.strip() == (
                f"admixspec: error: {given}.*.Q: no PREFIX.K.Q files found: give "
                f"the run's prefix, {prefix}")
        with pytest.raises(InputError, match=r"no PREFIX.K.Q files found$"):
            summarize_runs(tmp_path / "other")


class TestLabelTables:
    def _ids(self, folder):
        fam = folder / "x.fam"
        write_text(fam, "".join(f"F{i} s{i} 0 0 0 -9\n" for i in range(4)))
        return read_sample_ids(fam)

    def test_a_quoted_csv_field_keeps_its_comma(self, tmp_path):
        ids = self._ids(tmp_path)
        table = tmp_path / "labels.csv"
        write_text(table, 'sample_id,population\ns2,"Luhya in Webuye, Kenya"\n'
                   's0,CEU\ns3,"Yoruba in Ibadan, Nigeria"\ns1,CEU\n')
        assert read_population_labels(table, sample_ids=ids).tolist() == [
            "CEU", "CEU", "Luhya in Webuye, Kenya", "Yoruba in Ibadan, Nigeria"]

    def test_a_byte_order_mark_is_not_part_of_the_header(self, tmp_path):
        ids = self._ids(tmp_path)
        table = tmp_path / "labels.csv"  # as a spreadsheet saves "CSV UTF-8"
        table.write_bytes("\ufeffsample_id,population\ns0,A\ns1,B\ns2,A\ns3,B\n"
                          .encode())
        assert read_population_labels(table, sample_ids=ids).tolist() == [
            "A", "B", "A", "B"]

    def test_a_sample_listed_twice_with_two_populations_is_refused(self, tmp_path):
        ids = self._ids(tmp_path)
        table = tmp_path / "labels.tsv"
        write_text(table, "sample_id\tpopulation\ns0\tA\ns1\tB\ns2\tA\ns3\tB\n"
                   "s1\tC\n")
        with pytest.raises(InputError, match=r"labels\.tsv: sample s1 is listed twice, "
                           r"on lines 3 and 6, with populations 'B' and 'C'"):
            read_population_labels(table, sample_ids=ids)
        # listed twice with one population: no doubt which
        write_text(table, "sample_id\tpopulation\ns0\tA\ns1\tB\ns2\tA\ns3\tB\ns1\tB\n")
        assert read_population_labels(table, sample_ids=ids).tolist() == [
            "A", "B", "A", "B"]

    @pytest.mark.parametrize("line", ["s{i}\tpop{p}", "F{i} s{i} pop{p}"])
    def test_a_headerless_id_table_is_refused_not_read_as_one_label_per_line(
            self, tmp_path, line):
        # read as one label per line, each whole line was a population of one
        ids = self._ids(tmp_path)
        labels = tmp_path / "labels.txt"
        write_text(labels, "".join(line.format(i=i, p=i % 2) + "\n" for i in range(4)))
        with pytest.raises(InputError, match=r"labels\.txt:1: each line names a "
                           "sample in word [12] .*needs a header line"):
            read_population_labels(labels, sample_ids=ids)
        write_text(labels, "pop 0\npop 1\npop 0\npop 1\n")  # labels with a space
        assert read_population_labels(labels, sample_ids=ids).tolist() == [
            "pop 0", "pop 1", "pop 0", "pop 1"]

    def test_a_fam_with_one_iid_in_two_families_labels_each_row_by_its_family(
            self, tmp_path):
        # PLINK allows an IID in two families; as the run's own .fam, each row
        # is its individual
        fam = tmp_path / "x.fam"
        write_text(fam, "YRI a 0 0 0 -9\nCEU b 0 0 0 -9\nCHB a 0 0 0 -9\n")
        ids = read_sample_ids(fam)
        assert read_population_labels(fam, sample_ids=ids).tolist() == [
            "YRI", "CEU", "CHB"]
        with pytest.raises(InputError, match="sample a is listed twice, on lines 1 "
                           "and 3, with families 'YRI' and 'CHB'"):
            read_population_labels(fam, sample_ids=["b", "a", "a"])


class TestSampleIds:
    def test_a_plink2_fileset_gives_the_psam_iids(self, tmp_path):
        psam = tmp_path / "x.psam"
        write_text(psam, "#FID\tIID\tSEX\nF1\ts1\tNA\nF2\ts2\tNA\n")
        (tmp_path / "x.pgen").write_bytes(b"l\x1b\x10\xb8\x00")  # binary, not IDs
        for name in ("x.psam", "x.pgen", "x.pvar"):
            assert read_sample_ids(tmp_path / name).tolist() == ["s1", "s2"], name

    def test_a_plink2_run_is_labelled_from_its_recorded_input(self, tmp_path):
        prefix, sim = _run(tmp_path)
        write_text(tmp_path / "in.psam", "#IID\tSEX\n" + "".join(
            f"s{i}\tNA\n" for i in range(N)))
        write_text(f"{prefix}.3.json", '{"K": 3, "input": "in.pgen"}')
        table = tmp_path / "labels.tsv"
        order = np.random.default_rng(0).permutation(N)
        write_text(table, "sample_id\tpopulation\n" + "".join(
            f"s{i}\t{sim.populations[i]}\n" for i in order))
        fig = plot_ancestry(prefix, labels=table)
        assert fig.axes[-1].get_xticklabels()[0].get_text() == sim.populations[0]

    @pytest.mark.parametrize("fileset", ["fam", "psam"])
    def test_a_run_of_a_plink_prefix_is_labelled_from_its_fileset(self, tmp_path,
                                                                 fileset):
        # 'admixspec run data -K 3' records the input as written: data
        prefix, sim = _run(tmp_path)
        rows = [f"F{i} s{i} 0 0 0 -9\n" if fileset == "fam" else f"s{i}\tNA\n"
                for i in range(N)]
        write_text(tmp_path / f"data.{fileset}",
                   ("" if fileset == "fam" else "#IID\tSEX\n") + "".join(rows))
        write_text(f"{prefix}.2.json", '{"K": 2, "input": "data"}')
        table = tmp_path / "labels.tsv"
        write_text(table, "sample_id\tpopulation\n" + "".join(
            f"s{i}\t{sim.populations[i]}\n" for i in reversed(range(N))))
        fig = plot_ancestry(prefix, labels=table)
        assert fig.axes[-1].get_xticklabels()[0].get_text() == sim.populations[0]
        assert read_sample_ids(tmp_path / "data").tolist() == [f"s{i}" for i in range(N)]

    def test_an_id_list_of_fid_iid_lines_gives_the_iids_as_run_keep_reads_it(
            self, tmp_path):
        ids = tmp_path / "keep.txt"
        write_text(ids, "# FID IID\n2431 NA19916\n2424 NA19835\n")
        assert read_sample_ids(ids).tolist() == ["NA19916", "NA19835"]
        write_text(ids, "NA19916\nNA19835\n")
        assert read_sample_ids(ids).tolist() == ["NA19916", "NA19835"]


class TestPopulationOrder:
    def test_a_population_named_twice_is_a_usage_error_not_extra_bars(
            self, tmp_path, capsys):
        prefix, sim = _run(tmp_path)
        labels = tmp_path / "labels.pop"
        write_text(labels, "".join(f"{p}\n" for p in sim.populations))
        first = sim.populations[0]
        with pytest.raises(UsageError, match="names a population more than once"):
            plot_ancestry(prefix, labels=sim.populations,
                          population_order=[first, first])
        for command, out in (("plot", "a.png"), ("report", "a.html")):
            if command == "report":
                pytest.importorskip("bokeh")
            code = main([command, str(prefix), "--labels", str(labels), "-o",
                         str(tmp_path / out), "--population-order",
                         f"{first},{first}"])
            assert code == 2
            assert capsys.readouterr().err.strip() == (
                "admixspec: error: population_order names a population more than "
                f"once: ['{first}']")
            assert not (tmp_path / out).exists()


class TestModesOrder:
    def test_plot_with_modes_orders_individuals_by_the_largest_Ks_major_mode(
            self, tmp_path):
        from admixspec.fit.modes import find_modes
        from admixspec.io.modes import write_modes

        sim = simulate_balding_nichols(30, 100, 3, alpha=0.3, seed=5)
        prefix = tmp_path / "run"
        write_q(f"{prefix}.2.Q", np.column_stack([sim.Q[:, 0] + sim.Q[:, 2],
                                                  sim.Q[:, 1]]))
        other = sim.Q.copy()
        other[:, [0, 1]] = other[:, [1, 0]]  # a minor mode that swaps two columns
        other[:10] = sim.Q[:10]
        modes = find_modes([sim.Q, sim.Q, other], logliks=[-10.0, -10.5, -12.0])
        assert len(modes.modes) == 2
        write_q(f"{prefix}.3.Q", sim.Q)
        write_modes(prefix, 3, modes)
        fig = plot_ancestry(prefix, labels=sim.populations, modes=True)
        major = plot_ancestry(f"{prefix}.3.Q", labels=sim.populations)
        # ordered by K = 3's major mode (PREFIX.3.Q), as the report orders them,
        # not by the last panel drawn (the rarest mode)
        np.testing.assert_array_equal(fig.admixspec_order, major.admixspec_order)


class TestLabelsDrawnAsWritten:
    LABELS = ("a$^$b", "$$x^2$$", "c$d$")

    def _labels(self, sim):
        names = dict(zip(sorted(set(sim.populations)), self.LABELS, strict=False))
        return np.array([names.get(p, p) for p in sim.populations])

    def test_plot__a_label_with_dollar_signs_is_text_not_mathtext(self, tmp_path):
        prefix, sim = _run(tmp_path)
        labels = self._labels(sim)
        fig = plot_ancestry(prefix, labels=labels, out=tmp_path / "a.png")
        ticks = fig.axes[-1].get_xticklabels()
        assert {t.get_text() for t in ticks} == set(labels)
        assert not any(t.get_parse_math() for t in ticks)
        assert (tmp_path / "a.png").stat().st_size > 0

    def test_report__a_label_with_dollar_signs_is_text_not_tex(self, tmp_path,
                                                               monkeypatch):
        pytest.importorskip("bokeh")
        from bokeh.models import LinearAxis, PlainText

        import admixspec.report as report

        prefix, sim = _run(tmp_path)
        labels = self._labels(sim)
        figures = []
        panel_figure = report._panel_figure

        def spy(*args):
            figures.append(panel_figure(*args))
            return figures[-1]

        monkeypatch.setattr(report, "_panel_figure", spy)
        report.report_html(prefix, labels=labels)
        shown = [value for fig in figures for axis in fig.above + fig.below
                 if isinstance(axis, LinearAxis)
                 for value in axis.major_label_overrides.values()]
        assert shown and all(isinstance(value, PlainText) for value in shown)
        assert {value.text for value in shown} == set(labels)


class TestCvFigure:
    def test_a_nan_cv_error_is_not_marked_best(self, tmp_path):
        from admixspec.plot import plot_cv

        fig = plot_cv({2: float("nan"), 3: 0.52, 4: 0.50, 5: 0.51})
        assert fig.axes[0].get_title() == "best K = 4 (lowest CV error)"
        with pytest.raises(InputError, match="no finite CV error"):
            plot_cv({2: float("nan")})

    def test_main_plot__cv_out_naming_the_bars_file_is_refused(self, tmp_path, capsys):
        prefix, _ = _run(tmp_path)
        out = tmp_path / "fig.png"
        assert main(["plot", str(prefix), "-o", str(out), "--cv-out",
                     f"{tmp_path}/./fig.png"]) == 2
        assert capsys.readouterr().err.strip() == (
            f"admixspec: error: --cv-out and --out name the same file: {out}")
        assert not out.exists()


class TestRecordedInput:
    def _two_inputs(self, tmp_path, monkeypatch, other_ids):
        """A run recorded as input 'data.bed', its folder's and the working
        directory's data.fam holding ``other_ids``."""
        run_dir, here = tmp_path / "run", tmp_path / "here"
        run_dir.mkdir()
        here.mkdir()
        prefix, sim = _run(run_dir)
        write_text(f"{prefix}.2.json", '{"K": 2, "input": "data.bed"}')
        write_text(run_dir / "data.fam", "".join(f"F s{i} 0 0 0 -9\n" for i in range(N)))
        write_text(here / "data.fam", "".join(f"F {s} 0 0 0 -9\n" for s in other_ids))
        monkeypatch.chdir(here)
        return prefix, sim

    def test_an_input_name_found_in_two_places_with_other_ids_is_not_guessed(
            self, tmp_path, monkeypatch):
        from admixspec.io.results import recorded_sample_ids

        prefix, _ = self._two_inputs(tmp_path, monkeypatch,
                                     [f"s{i}" for i in reversed(range(N))])
        with pytest.raises(InputError, match=r"run\.2\.Q: the run's input, recorded "
                           r"as data\.bed, may be data\.bed or .*run/data\.bed, whose "
                           r"sample IDs differ: give the sample IDs"):
            recorded_sample_ids([f"{prefix}.2.Q"], N)

    def test_an_input_name_found_twice_with_the_same_ids_is_read(
            self, tmp_path, monkeypatch):
        from admixspec.io.results import recorded_sample_ids

        prefix, _ = self._two_inputs(tmp_path, monkeypatch,
                                     [f"s{i}" for i in range(N)])
        assert recorded_sample_ids([f"{prefix}.2.Q"], N).tolist() == [
            f"s{i}" for i in range(N)]
