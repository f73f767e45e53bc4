"""``admixspec report``: the HTML report, checked in Python and in headless Chromium.

The browser tests load the page from a file URL in Debian's ``chromium``
through ``chromium-driver`` (``tests/browser.py``); where either is missing they
skip with a reason that names it (``.ci/run`` installs both).
"""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest

from admixspec import (
    InputError,
    UsageError,
    read_q,
    simulate_balding_nichols,
    write_q,
)
from admixspec.core.exceptions import MissingDependencyError
from admixspec.fit.modes import align_mode_panels, find_modes
from admixspec.io.admixture import format_matrix
from admixspec.io.common import write_text
from admixspec.io.modes import write_modes
from admixspec.plot import ancestry_palette, individual_order
from admixspec.report import (
    _LEVELS,
    _bar_image,
    _load_panels,
    _orders,
    report_html,
    write_report,
)

from . import browser

pytest.importorskip("bokeh", reason="the report needs Bokeh (admixspec[report])")

N = 45


def _run_folder(folder):
    """What ``admixspec run -K 2 3 --cv 5 -B ...`` with 3 runs at K = 3 leaves behind.

    K = 2 merges the K = 3 truth's component 2 into component 0 and has a
    bootstrap ``Q_se``; K = 3 has two modes over three runs, its runs' labels
    shuffled, the best run in the major mode.
    """
    sim = simulate_balding_nichols(N, 200, 3, alpha=0.3, seed=5)
    truth3 = sim.Q
    truth2 = np.column_stack([truth3[:, 0] + truth3[:, 2], truth3[:, 1]])
    prefix = folder / "run"
    write_q(f"{prefix}.2.Q", truth2)
    se = np.random.default_rng(0).uniform(0.001, 0.02, truth2.shape)
    write_text(f"{prefix}.2.Q_se", format_matrix(se, "Q_se", clamp=False))
    write_text(f"{prefix}.2.log", "admixspec 0.1.0\nCommand: admixspec run x -K 2 3\n"
               "Estimator: spectral\nRefine reason: kept the spectral estimate\n"
               "Loglikelihood: -1500.5\nCV error (K=2): 0.61\n")
    other = truth3.copy()
    other[:8] = np.roll(other[:8], 1, axis=1)  # a component moved on 8 individuals
    runs = [truth3[:, [2, 0, 1]], truth3, other[:, [1, 2, 0]]]
    modes = find_modes(runs, logliks=[-1200.0, -1200.1, -1250.0])
    write_q(f"{prefix}.3.Q", runs[modes.reference])
    write_modes(prefix, 3, modes)
    record = {"K": 3, "path": "spectral+ml", "loglik": -1200.0, "cv_error": 0.55,
              "n_iter": 12, "converged": True, "seconds": 1.5, "version": "0.1.0",
              "seed": 43, "command": "admixspec run x.bed -K 2 3 --cv 5 --runs 3",
              "input": str(folder / "absent.bed"), "n_individuals": N, "n_snps": 200,
              "filters": [{"filter": "monomorphic", "unit": "variants", "removed": 7,
                           "reason": "monomorphic (one observed allele)"}],
              "diagnostics": {
                  "refine_reason": "ML predicts held-out individuals better"},
              "modes": modes.record()}
    write_text(f"{prefix}.3.json", json.dumps(record))
    labels = folder / "labels.txt"
    write_text(labels, "".join(f"{p}\n" for p in sim.populations))
    return prefix, labels, sim, modes


@pytest.fixture
def run_fixture(tmp_path):
    return _run_folder(tmp_path)


class TestBarImage:
    def test_bar_image__each_column_holds_its_individual_stacked_to_one_percent(self):
        Q = np.random.default_rng(2).dirichlet(np.full(5, 0.4), 300)
        image = _bar_image(Q)
        assert image.shape == (_LEVELS, 300)
        assert image.dtype == np.uint8
        counts = np.stack([(image == k).sum(0) for k in range(5)], axis=1)
        assert np.abs(counts - Q * _LEVELS).max() <= 1.0
        # stacked bottom-up in component order
        assert (np.diff(image.astype(int), axis=0) >= 0).all()

    def test_bar_image__unnormalised_rows_are_scaled_to_one(self):
        image = _bar_image(np.array([[2.0, 2.0], [0.0, 3.0]]))
        assert (image[:, 0] == 0).sum() == 50
        assert (image[:, 1] == 1).all()


class TestOrders:
    def test_orders__main_is_plots_order_and_components_sort_within_population(self):
        sim = simulate_balding_nichols(60, 50, 3, seed=3)
        orders, groups = _orders(sim.Q, sim.populations, None)
        expected, expected_groups = individual_order(sim.Q, sim.populations, None)
        np.testing.assert_array_equal(orders["main"], expected)
        assert groups == expected_groups
        for k in range(3):
            order = orders[f"c{k}"]
            assert sorted(order) == list(range(60))
            for name, start, stop in groups:
                members = order[start:stop]
                assert set(sim.populations[members]) == {name}
                assert (np.diff(sim.Q[members, k]) <= 0).all()

    def test_orders__without_labels_sorts_everyone_by_the_component(self):
        Q = np.random.default_rng(4).dirichlet(np.ones(3), 30)
        orders, groups = _orders(Q, None, None)
        assert groups == []
        assert (np.diff(Q[orders["c2"], 2]) <= 0).all()


class TestReportHtml:
    def test_report_html__is_one_file_with_every_section_and_no_external_resource(
        self, run_fixture
    ):
        prefix, labels, sim, _ = run_fixture
        text = report_html(prefix, labels=labels)
        assert text.startswith("<!DOCTYPE html>")
        lowered = text.lower()
        assert "<script src=" not in lowered.replace(" ", "")
        assert "<link" not in lowered
        assert "cdn.bokeh.org" not in lowered
        for needle in ("K=2", "K=3\\nmode 1 (67%)*", "K=3\\nmode 2 (33%)",
                       "Refine reason: kept the spectral estimate",
                       "ML predicts held-out individuals better", "spectral+ml",
                       "admixspec run x.bed -K 2 3 --cv 5 --runs 3", "monomorphic",
                       "CV error against K", "Share of runs in each mode",
                       "Log-likelihood of each run, minus its K"):
            assert needle in text, needle

    def test_report_html__without_logs_or_json_still_draws_the_bars(self, tmp_path):
        sim = simulate_balding_nichols(20, 50, 2, seed=1)
        write_q(tmp_path / "r.2.Q", sim.Q)
        text = report_html(tmp_path / "r")
        assert "No log or JSON beside the Q files." in text
        assert "individual 20" in text

    def test_report_html__a_single_population_run_draws_one_colour(self, tmp_path):
        write_q(tmp_path / "r.1.Q", np.ones((12, 1)))
        write_q(tmp_path / "r.2.Q", np.tile([0.3, 0.7], (12, 1)))
        text = report_html(tmp_path / "r")
        assert '"name":"panel-1"' in text
        assert (_bar_image(np.ones((12, 1))) == 0).all()

    def test_write_report__real_admixture_output_with_fam_ids_and_label_table(
        self, hapmap3_fixture, tmp_path
    ):
        out = write_report(hapmap3_fixture / "hapmap3", tmp_path / "hm.html",
                           labels=hapmap3_fixture / "labels.tsv",
                           sample_ids=hapmap3_fixture / "hapmap3.fam")
        text = out.read_text()
        for population in ("ASW", "CEU", "MEX", "YRI"):
            assert population in text
        assert "NA19916" in text

    def test_write_report__errors(self, run_fixture, tmp_path, monkeypatch):
        prefix, labels, _, _ = run_fixture
        with pytest.raises(InputError, match="no PREFIX.K.Q files found"):
            write_report(tmp_path / "nothing", tmp_path / "x.html")
        with pytest.raises(UsageError, match="3 labels for 45 individuals"):
            write_report(prefix, tmp_path / "x.html", labels=["a", "b", "c"])
        with pytest.raises(UsageError, match="2 sample IDs for 45 individuals"):
            write_report(prefix, tmp_path / "x.html", sample_ids=["a", "b"])
        monkeypatch.setitem(sys.modules, "bokeh", None)
        with pytest.raises(MissingDependencyError,
                           match=r"admixspec report needs bokeh: pip install "
                                 r"'admixspec\[report\]'"):
            write_report(prefix, tmp_path / "x.html")
        assert not (tmp_path / "x.html").exists()

    def test_write_report__a_malformed_mode_table_names_the_file(self, run_fixture):
        prefix, _, _, _ = run_fixture
        tsv = prefix.parent / "run.3.modes.tsv"
        tsv.write_text(tsv.read_text().replace("True", "False"))
        with pytest.raises(InputError, match="exactly one mode"):
            report_html(prefix)


class TestReportInputs:
    def test_report_html__json_that_is_not_an_object_is_an_input_error(
        self, run_fixture
    ):
        prefix, _, _, _ = run_fixture
        write_text(f"{prefix}.3.json", "[1, 2]")
        with pytest.raises(InputError, match=r"run\.3\.json: is not an admixspec run "
                           r"record: expected a JSON object, found an array"):
            report_html(prefix)

    def test_report_html__a_json_field_of_the_wrong_type_is_an_input_error(
        self, run_fixture
    ):
        prefix, _, _, _ = run_fixture
        record = json.loads(prefix.with_name("run.3.json").read_text())
        write_text(f"{prefix}.3.json", json.dumps({**record, "input": 5}))
        with pytest.raises(InputError, match='"input" must be a string, found a number'):
            report_html(prefix)

    def test_report_html__q_file_whose_rows_do_not_sum_to_1_is_an_input_error(
        self, run_fixture
    ):
        prefix, _, _, _ = run_fixture
        Q = read_q(f"{prefix}.2.Q")
        Q[4] = [0.9, 0.9]
        write_text(f"{prefix}.2.Q", format_matrix(Q))
        with pytest.raises(InputError, match=r"run\.2\.Q: row 5 sums to 1\.8, not 1"):
            report_html(prefix)

    def test_report_html__a_mode_q_whose_rows_do_not_sum_to_1_is_an_input_error(
        self, run_fixture
    ):
        prefix, _, _, _ = run_fixture
        write_text(f"{prefix}.3.mode2.Q", "0.5 0.5 0.5\n" * N)
        with pytest.raises(InputError, match=r"run\.3\.mode2\.Q: row 1 sums to 1\.5"):
            report_html(prefix)

    def test_write_report__an_output_not_named_html_is_a_usage_error(
        self, run_fixture, tmp_path
    ):
        prefix, _, _, _ = run_fixture
        with pytest.raises(UsageError, match=r"the report is an HTML page: name it "
                           r"\.html or \.htm, not '.*rep\.png'"):
            write_report(prefix, tmp_path / "rep.png")
        assert not (tmp_path / "rep.png").exists()
        assert write_report(prefix, tmp_path / "REP.HTM").is_file()

    def test_main_report__a_png_output_is_one_line_and_exit_2(
        self, run_fixture, tmp_path, capsys
    ):
        from admixspec.cli import main

        prefix, _, _, _ = run_fixture
        assert main(["report", str(prefix), "-o", str(tmp_path / "rep.png")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "the report is an HTML page" in err[0]

    def _table(self, folder, sim):
        """A label table of the run's individuals, ind0..ind44, rows reversed."""
        table = folder / "labels.tsv"
        write_text(table, "sample_id\tpopulation\n" + "".join(
            f"ind{i}\t{sim.populations[i]}\n" for i in reversed(range(N))))
        return table

    def test_report_html__a_label_table_without_sample_ids_is_an_input_error(
        self, run_fixture, tmp_path
    ):
        prefix, _, sim, _ = run_fixture
        with pytest.raises(InputError, match=r"labels\.tsv: the label table names "
                           r"samples in its 'sample_id' column.*\(--ids\)"):
            report_html(prefix, labels=self._table(tmp_path, sim))

    def test_report_html__a_label_table_is_looked_up_by_the_runs_fam(
        self, run_fixture, tmp_path, monkeypatch
    ):
        import admixspec.report as report

        prefix, _, sim, _ = run_fixture
        write_text(f"{prefix}.fam", "".join(f"F ind{i} 0 0 0 -9\n" for i in range(N)))
        seen = {}
        bar_section = report._bar_section

        def spy(panels, perms, labels, ids, *args):
            seen.update(labels=labels, ids=ids)
            return bar_section(panels, perms, labels, ids, *args)

        monkeypatch.setattr(report, "_bar_section", spy)
        report_html(prefix, labels=self._table(tmp_path, sim))
        assert seen["ids"].tolist() == [f"ind{i}" for i in range(N)]
        assert seen["labels"].tolist() == sim.populations.tolist()


# ----------------------------------------------------------------------- browser

#: After load: every panel's image and its hover source's Q, in page order.
_PAGE_DATA = """
const doc = Bokeh.documents[0];
const source = doc.get_model_by_name("ancestry").data;
const out = {individual: Array.from(source.individual), sample: source.sample,
             population: source.population, q: {}, image: {}};
for (const [name, column] of Object.entries(source)) {
  if (name.startsWith("q") || name.startsWith("se")) out.q[name] = Array.from(column);
}
for (let j = 0; ; j++) {
  const model = doc.get_model_by_name("image-" + j);
  if (model == null) break;
  out.image[j] = Array.from(model.data.image[0]);
}
return out;
"""

#: Choose "component 1" in the sort control, as a user would, wait for its
#: callback (Bokeh runs CustomJS asynchronously), then read the page.
_SORT = ("""
const before = Bokeh.documents[0].get_model_by_name("ancestry").data;
Bokeh.documents[0].get_model_by_name("sort").value = "c0";
for (let i = 0; i < 400; i++) {
  if (Bokeh.documents[0].get_model_by_name("ancestry").data !== before) break;
  await new Promise((resolve) => setTimeout(resolve, 25));
}
""" + _PAGE_DATA)


@pytest.fixture(scope="module")
def page_fixture(tmp_path_factory):
    reason = browser.missing()
    if reason:
        pytest.skip("browser test needs Debian's chromium and chromium-driver: "
                    + reason)
    folder = tmp_path_factory.mktemp("report")
    prefix, labels, sim, modes = _run_folder(folder)
    html = write_report(prefix, folder / "report.html", labels=labels)
    page = browser.open_page(
        html, screenshot=folder / "report.png", width=1300, height=1200,
        scripts=[("loaded", _PAGE_DATA), ("sorted", _SORT)],
        hover=[("panel-0", 0.5), ("panel-1", 5.5), ("panel-2", N - 0.5)])
    return page, prefix, sim, modes


def _panels(prefix):
    """The Q of every panel in page order, aligned as the report aligns them."""
    panels = [read_q(f"{prefix}.2.Q"), read_q(f"{prefix}.3.Q"),
              read_q(f"{prefix}.3.mode2.Q")]
    perms = align_mode_panels(panels)
    return [Q[:, perm] for Q, perm in zip(panels, perms, strict=True)]


def _check_page_matches(data, aligned):
    """Each panel's image column r and hover row r show individual ``individual[r]``."""
    order = np.array(data["individual"])
    n = len(order)
    for j, Q in enumerate(aligned):
        K = Q.shape[1]
        image = np.array(data["image"][str(j)] if str(j) in data["image"]
                         else data["image"][j]).reshape(_LEVELS, n)
        counts = np.stack([(image == k).sum(0) for k in range(K)], axis=1)
        rows = Q[order] / Q[order].sum(1, keepdims=True)
        assert np.abs(counts - rows * _LEVELS).max() <= 1.0, f"panel {j}"
        # the tooltip shows the Q file's values
        shown = np.column_stack([data["q"][f"q{j}_{k}"] for k in range(K)])
        np.testing.assert_allclose(shown, Q[order], atol=1e-6)


class TestReportInBrowser:
    def test_page__loads_with_no_console_error_and_no_network_request(
        self, page_fixture
    ):
        page = page_fixture[0]
        assert page.errors == []
        assert page.requests, "the page's own file request was not logged"
        outside = [url for url in page.requests
                   if not url.startswith(("file:", "data:"))]
        assert outside == []

    def test_page__screenshot_is_not_blank_and_shows_the_palette(self, page_fixture):
        from matplotlib.image import imread

        page = page_fixture[0]
        pixels = (imread(str(page.screenshot))[..., :3] * 255).round().astype(int)
        white = (pixels > 245).all(axis=2)
        assert white.mean() < 0.9
        for colour in ancestry_palette(3):
            rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
            share = (np.abs(pixels - rgb).max(axis=2) <= 3).mean()
            assert share > 0.005, colour

    def test_page__each_panel_holds_one_bar_per_individual(self, page_fixture):
        page = page_fixture[0]
        assert sorted(page.bars) == ["0", "1", "2"]  # K=2; K=3 mode 1 and mode 2
        for panel in page.bars.values():
            assert panel["glyph"] == "Image"
            assert panel["shape"] == [_LEVELS, N]
            assert panel["drawn"] == [_LEVELS, N]
            assert panel["tooltip_rows"] == N

    def test_page__bars_show_each_individuals_aligned_q_in_plot_order(
        self, page_fixture
    ):
        page, prefix, sim, _ = page_fixture
        aligned = _panels(prefix)
        data = page.results["loaded"]
        expected, _ = individual_order(aligned[1], sim.populations, None)
        np.testing.assert_array_equal(data["individual"], expected)
        assert data["population"] == sim.populations[expected].tolist()
        _check_page_matches(data, aligned)
        # bootstrap standard errors ride along with K = 2, in the same order
        se = read_q(f"{prefix}.2.Q_se")
        np.testing.assert_allclose(
            np.column_stack([data["q"]["se0_0"], data["q"]["se0_1"]]),
            se[expected][:, align_mode_panels([read_q(f"{prefix}.2.Q")])[0]],
            atol=1e-6)

    def test_page__hovering_a_bar_shows_its_individual(self, page_fixture):
        # the mouse moves after the sort: the tooltips follow the new order
        page = page_fixture[0]
        data = page.results["sorted"]
        assert len(page.tooltips) == 3
        for tooltip, (j, r, K) in zip(page.tooltips, [(0, 0, 2), (1, 5, 3),
                                                       (2, N - 1, 3)], strict=True):
            lines = tooltip.splitlines()
            assert lines[0] == f"{data['sample'][r]} ({data['population'][r]})"
            for k in range(K):
                value = f"{data['q'][f'q{j}_{k}'][r]:.3f}"
                se = f" ± {data['q'][f'se{j}_{k}'][r]:.3f}" if j == 0 else ""
                assert lines[1 + k] == f"■ component {k + 1}: {value}{se}"

    def test_page__sorting_by_a_component_reorders_bars_and_images_together(
        self, page_fixture
    ):
        page, prefix, sim, _ = page_fixture
        aligned = _panels(prefix)
        data = page.results["sorted"]
        order = np.array(data["individual"])
        expected, _ = _orders(aligned[1], sim.populations, None)
        np.testing.assert_array_equal(order, expected["c0"])
        assert order.tolist() != page.results["loaded"]["individual"]
        _check_page_matches(data, aligned)


class TestReportCommand:
    def test_main_report__writes_the_page_with_its_own_command_line(
        self, run_fixture, tmp_path
    ):
        from admixspec.cli import main

        prefix, labels, _, _ = run_fixture
        out = tmp_path / "page.html"
        argv = ["report", str(prefix), "-o", str(out), "--labels", str(labels),
                "-K", "3", "--title", "My run"]
        assert main(argv) == 0
        text = out.read_text()
        assert "<title>My run</title>" in text
        assert "admixspec report " + str(prefix) in text
        assert "K=3\\nmode 2 (33%)" in text
        # -K 3: the two modes of K = 3 and no K = 2 panel
        panels = sorted(set(re.findall(r'"name":"panel-(\d+)"', text)))
        assert panels == ["0", "1"]

    def test_main_report__missing_run_is_one_line_and_exit_1(self, tmp_path, capsys):
        from admixspec.cli import main

        out = str(tmp_path / "x.html")
        assert main(["report", str(tmp_path / "none"), "-o", out]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [
            f"admixspec: error: {tmp_path / 'none'}.*.Q: no PREFIX.K.Q files found"]

    def test_main_report__a_K_not_run_names_the_K_found(self, run_fixture, tmp_path,
                                                        capsys):
        from admixspec.cli import main

        prefix, _, _, _ = run_fixture
        assert main(["report", str(prefix), "-K", "7", "-o",
                     str(tmp_path / "x.html")]) == 1
        assert capsys.readouterr().err.splitlines() == [
            f"admixspec: error: no {prefix}.7.Q (found K = 2, 3 for {prefix})"]

    def test_main_report__a_K_missing_beside_ones_run_is_refused_not_dropped(
        self, run_fixture, tmp_path, capsys
    ):
        from admixspec.cli import main

        prefix, _, _, _ = run_fixture
        out = tmp_path / "x.html"
        assert main(["report", str(prefix), "-K", "3", "5-7", "-o", str(out)]) == 1
        assert capsys.readouterr().err.splitlines() == [
            f"admixspec: error: no {prefix}.K.Q for K = 5-7 (found K = 2, 3 for "
            f"{prefix})"]
        assert not out.exists()
        with pytest.raises(InputError, match=r"run\.4\.Q \(found K = 2, 3 for "):
            report_html(prefix, Ks=[2, 4])

    @pytest.mark.parametrize(("flag", "what"), [("--labels", "labels"),
                                                ("--ids", "sample IDs")])
    def test_main_report__a_file_of_another_length_names_it_and_the_q(
        self, flag, what, run_fixture, tmp_path, capsys
    ):
        from admixspec.cli import main

        prefix, _, _, _ = run_fixture
        short = tmp_path / "short.txt"
        write_text(short, "".join(f"s{i}\n" for i in range(N - 1)))
        assert main(["report", str(prefix), flag, str(short), "-o",
                     str(tmp_path / "x.html")]) == 1
        assert capsys.readouterr().err.splitlines() == [
            f"admixspec: error: {short}: {N - 1} {what} for {N} individuals (the rows "
            "of run.2.Q)"]


class TestFilesOfAnEarlierRun:
    def test_standard_errors_left_by_an_earlier_run_are_not_shown(self, tmp_path,
                                                                  caplog):
        # 'run -B' then 'run' of that K without -B: Q and JSON are rewritten, and
        # the earlier run's Q_se, left beside them, was shown as this fit's
        prefix, _, _, _ = _run_folder(tmp_path)
        write_text(f"{prefix}.2.json", json.dumps({"K": 2, "loglik": -1500.5}))
        assert _load_panels(prefix, [2])[0][0].se is None
        assert "run.2.Q_se: ignored, left by an earlier run" in caplog.text
        write_text(f"{prefix}.2.json", json.dumps({"K": 2, "loglik": -1500.5,
                                                   "bootstrap": True}))
        assert _load_panels(prefix, [2])[0][0].se is not None
