"""One self-contained, interactive HTML report of a run: ``admixspec report``.

:func:`write_report` reads what ``admixspec run`` left beside ``PREFIX`` —
``PREFIX.K.Q`` for every K, and where present ``PREFIX.K.log``/``.json``,
``PREFIX.K.Q_se`` (bootstrap), ``PREFIX.K.modes.tsv`` and
``PREFIX.K.mode<M>.Q`` — and writes one HTML file that opens from disk with
no server and no network:

* ancestry bars of every K (and of every mode of a K), one bar per
  individual, components aligned across K as ``admixspec plot`` aligns them
  and in its colours (:func:`admixspec.plot.ancestry_palette`), individuals
  grouped by population (labels as ``plot`` takes them) and sortable within
  their population by any component; hovering a bar shows the sample ID, the
  population and Q (± the bootstrap standard error where ``-B`` ran);
* the CV error against K, the log-likelihood of every run and the share of
  each mode;
* a table of each K: the estimator it used and why, its log-likelihood, CV
  error, iterations and time; the input and what the filters removed; the
  versions and command lines.

Plotting library: Bokeh
-----------------------
Bokeh (``pip install 'admixspec[report]'``) writes one standalone HTML file
with its JavaScript inlined (``bokeh.resources.INLINE``): no server (pong
needs one) and no CDN, and it draws on an HTML canvas, not SVG. That matters
at 10,000 individuals x K = 2..8, i.e. 350,000 bar segments: as SVG (Plotly's
bar traces draw only SVG; Vega-Lite's default renderer) they are 350,000 DOM
nodes. Plotly would also inline a 3.5 MB bundle; Vega-Lite can draw on canvas
but inlining its JavaScript from Python needs ``vl-convert``. Bokeh's document
model stays inspectable from the page (``Bokeh.documents[0]``), which is how
``tests/test_report.py`` checks the bars in a headless browser.

How the bars are drawn (measured with ``benchmarks/report_speed.py`` in
Debian's headless Chromium): even on a canvas, one rectangle per segment costs
Bokeh a fill call each, seconds for 350,000 (and WebGL, through the software
rasteriser of a machine without a GPU, was slower still); one filled step area
per component is 44 paths of 20,000 sub-pixel edges, slower again to
rasterise. So each panel is one Bokeh ``image``: one column per individual,
each pixel coloured by the component its stacked bar has at that height, to
1% of the height (:func:`_bar_image`), drawn with smoothing off so zooming in
shows exact bars. Hovering a panel gives the cursor's x, i.e. the bar; the
tooltip reads that row of the data source holding every individual's exact Q
(and bootstrap standard errors), so there is no per-bar glyph to index or
paint. The JavaScript written here is two short callbacks: the tooltip's row
lookup, and the sort control's, which permutes rows and image columns by
orders computed in Python.
"""

from __future__ import annotations

import html
import json
import logging
import math
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .core.exceptions import InputError, UsageError, import_optional

__all__ = ["write_report", "report_html"]

logger = logging.getLogger("admixspec")

#: Width of the page's figures, in CSS pixels.
_WIDTH = 1100
#: Height of one ancestry panel.
_PANEL_HEIGHT = 110

#: What the report may be written as: it is one HTML page.
_SUFFIXES = (".html", ".htm")

_ESTIMATOR = re.compile(r"^Estimator:\s*(.+)$", re.MULTILINE)
_REASON = re.compile(r"^(Refine reason|Fallback reason):\s*(.+)$", re.MULTILINE)
_ITERATION = re.compile(r"^\d+ \(")


@dataclass
class _Panel:
    """One bar panel: a Q (aligned later), its K and mode, and where it came from."""

    K: int
    Q: np.ndarray
    source: Path
    mode: int | None = None
    share: float | None = None
    best: bool = True
    se: np.ndarray | None = None

    @property
    def name(self) -> str:
        """The panel's label: ``K=4``, or ``K=4 mode 2 (30%)`` (* on the kept run's)."""
        if self.mode is None:
            return f"K={self.K}"
        share = "" if self.share is None or math.isnan(self.share) else (
            f" ({100 * self.share:.0f}%)")
        return f"K={self.K}\nmode {self.mode}{share}" + ("*" if self.best else "")


@dataclass
class _RunInfo:
    """What the log and JSON of one K say, beside its Q file."""

    K: int
    q_path: Path
    record: dict = field(default_factory=dict)
    log_text: str = ""
    loglik: float = math.nan
    cv_error: float = math.nan
    estimator: str = ""
    reason: str = ""


def _run_info(K: int, q_path: Path) -> _RunInfo:
    from .io.results import read_run_log, read_run_record

    base = str(q_path)[: -len(".Q")]
    json_path = Path(base + ".json")
    # the record's fields are checked once, there: what follows may trust them
    record = read_run_record(json_path, K=K) if json_path.is_file() else {}
    info = _RunInfo(K, q_path, record=record)
    log_path = Path(base + ".log")
    if log_path.is_file():
        info.log_text = log_path.read_text(errors="replace")
        parsed = read_run_log(log_path)
        if parsed["loglik"] is not None:
            info.loglik = parsed["loglik"]
        info.cv_error = parsed["cv_errors"].get(K, math.nan)
        if match := _ESTIMATOR.search(info.log_text):
            info.estimator = match.group(1).strip()
        info.reason = "; ".join(f"{m.group(1)}: {m.group(2).strip()}"
                                for m in _REASON.finditer(info.log_text))
    record = info.record
    if isinstance(record.get("loglik"), (int, float)):
        info.loglik = float(record["loglik"])
    if isinstance(record.get("cv_error"), (int, float)):
        info.cv_error = float(record["cv_error"])
    if record.get("path"):
        info.estimator = info.estimator or str(record["path"])
    diagnostics = record.get("diagnostics") or {}
    if not info.reason:
        info.reason = "; ".join(
            f"{key.replace('_', ' ').capitalize()}: {diagnostics[key]}"
            for key in ("refine_reason", "fallback_reason") if diagnostics.get(key))
    return info


def _standard_errors(path: Path, info: _RunInfo, shape) -> np.ndarray | None:
    """``PREFIX.K.Q_se`` of the run that wrote ``PREFIX.K.Q``, if it has one.

    A run's JSON says ``"bootstrap"`` when it wrote them; a later run of that
    K without ``-B`` rewrites Q and JSON and leaves the earlier run's file,
    which is then ignored with a warning (ADMIXTURE's files, without a JSON,
    are read).
    """
    from .io.admixture import read_q

    if not path.is_file():
        return None
    if info.record and not info.record.get("bootstrap"):
        logger.warning("%s: ignored, left by an earlier run (%s.json records a run "
                       "without -B); its standard errors are not those of %s.Q",
                       path, path.name[: -len(".Q_se")], path.name[: -len(".Q_se")])
        return None
    se = read_q(path)
    if se.shape != tuple(shape):
        raise InputError(f"shape {se.shape} differs from {info.q_path.name}'s "
                         f"{tuple(shape)}", path=path)
    return se


def _load_panels(prefix, Ks) -> tuple[list[_Panel], list[_RunInfo]]:
    from .io.admixture import output_path
    from .io.modes import mode_panels
    from .io.results import read_ancestry_q, select_runs

    runs = select_runs(prefix, Ks)
    panels, infos = [], []
    for K, q_path in runs:
        main_Q = read_ancestry_q(q_path, K=K)
        info = _run_info(K, q_path)
        se = _standard_errors(output_path(prefix, K, "Q_se"), info, main_Q.shape)
        modes = mode_panels(prefix, K)
        if modes:
            for mode, share, Q, path in modes:
                best = path.resolve() == q_path.resolve()
                panels.append(_Panel(K, Q, path, mode, share, best,
                                     se if best else None))
        else:
            panels.append(_Panel(K, main_Q, q_path, se=se))
        infos.append(info)
    n = panels[0].Q.shape[0]
    for panel in panels:
        if panel.Q.shape[0] != n:
            raise InputError(f"has {panel.Q.shape[0]} individuals, "
                             f"{panels[0].source.name} has {n}", path=panel.source)
    return panels, infos


def _sample_ids(sample_ids, infos, n) -> tuple[np.ndarray, bool]:
    """Sample IDs in Q row order, and whether they are real (not placeholders)."""
    from .io.results import read_sample_ids, recorded_sample_ids
    from .plot import check_count

    if sample_ids is None:
        ids = recorded_sample_ids([info.q_path for info in infos], n)
        if ids is not None:
            return ids, True
        return np.array([f"individual {i + 1}" for i in range(n)]), False
    ids_file = sample_ids if isinstance(sample_ids, (str, Path)) else None
    ids = (read_sample_ids(ids_file) if ids_file is not None
           else np.asarray(sample_ids, dtype=str))
    check_count(ids, "sample IDs", ids_file, n, infos[0].q_path.name)
    return ids, True


def _orders(Q: np.ndarray, labels, population_order):
    """The individual shown at each bar position under every sort, and the groups.

    Parameters
    ----------
    Q : numpy.ndarray, float, shape (n_individuals, K)
        The panel that orders the individuals (the largest K's).
    labels, population_order
        As in :func:`admixspec.plot_ancestry`.

    Returns
    -------
    orders : dict of str to numpy.ndarray, int64, shape (n_individuals,)
        ``orders[key][r]`` is the individual at bar ``r``: ``"main"`` is
        ``admixspec plot``'s order (by population, then by the population's
        main component), ``"c<k>"`` sorts each population by component ``k``,
        largest first.
    groups : list of (str, int, int)
        ``(population, start, stop)`` bar ranges; empty without labels (then
        ``"c<k>"`` sorts all individuals by component ``k``).
    """
    from .plot import individual_order

    n, K = Q.shape
    order, groups = individual_order(Q, labels, population_order)
    group_of = np.zeros(n, dtype=np.int64)
    for rank, (_, start, stop) in enumerate(groups):
        group_of[order[start:stop]] = rank
    orders = {"main": np.asarray(order, dtype=np.int64)}
    for k in range(K):
        orders[f"c{k}"] = np.lexsort((-Q[:, k], group_of)).astype(np.int64)
    return orders, groups


def _escape(value) -> str:
    return html.escape(str(value))


def _table(header, rows) -> str:
    head = "".join(f"<th>{_escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return (f'<table class="admixspec"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _number(value, fmt) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return format(value, fmt)


#: Styles of the text sections (each Bokeh Div renders in its own shadow root, so
#: every Div carries them).
_CSS = """
table.admixspec { border-collapse: collapse; font-size: 13px; margin: 4px 0 12px 0; }
table.admixspec th, table.admixspec td { border: 1px solid #ccc; padding: 3px 8px;
  text-align: left; vertical-align: top; }
table.admixspec th { background: #f2f2f2; }
pre.admixspec { font-size: 12px; background: #f7f7f7; padding: 6px;
  white-space: pre-wrap; }
h2.admixspec { margin: 18px 0 4px 0; font-size: 18px; }
h1 { font-size: 24px; margin: 4px 0; }
"""


def _div(text: str, width: int = _WIDTH):
    from bokeh.models import Div, InlineStyleSheet

    return Div(text=text, width=width, stylesheets=[InlineStyleSheet(css=_CSS)])


def _heading(text: str):
    return _div(f'<h2 class="admixspec">{_escape(text)}</h2>')


#: Colours of modes 1, 2, ... in the run charts (mode 1 dark, then plot_cv's).
_MODE_COLOURS = ("#333333", "#D55E00", "#E69F00", "#56B4E9", "#CC79A7", "#999999")

#: Rows of a panel's image: Q is drawn to the nearest 1/_LEVELS (one pixel of a
#: 100-pixel panel).
_LEVELS = 100

#: The tooltip's lookup: the cursor's x is bar ``floor(x)``, i.e. row ``floor(x)``
#: of the data source; ``format`` names the column (``$x{sample}``, ``$x{q0_1}``).
_LOOKUP = """
const row = Math.min(Math.max(Math.floor(value), 0), source.get_length() - 1);
const cell = source.data[format][row];
return typeof cell === "number" ? cell.toFixed(3) : String(cell);
"""

#: The sort control's callback. Row r of the bars' data source, and column r of
#: every panel's image, become individual ``orders[key][r]``.
_REORDER = """
const target = orders.data[select.value];
const current = source.data.individual;
const n = current.length;
const row_of = new Int32Array(n);
for (let r = 0; r < n; r++) row_of[current[r]] = r;
const from = new Int32Array(n);
for (let r = 0; r < n; r++) from[r] = row_of[target[r]];
const data = {};
for (const [name, column] of Object.entries(source.data)) {
  const out = new column.constructor(n);
  for (let r = 0; r < n; r++) out[r] = column[from[r]];
  data[name] = out;
}
source.data = data;
for (const images of panels) {
  const image = images.data.image[0];
  const copy = image.slice();
  const rows = image.length / n;
  for (let y = 0; y < rows; y++) {
    for (let r = 0; r < n; r++) image[y * n + r] = copy[y * n + from[r]];
  }
  images.change.emit();
}
"""


def _bar_image(Q: np.ndarray, levels: int = _LEVELS) -> np.ndarray:
    """A stacked-bar panel as an image of component numbers, shape (levels, n).

    Column i is individual i's bar (``Q`` rows in plotting order); pixel row y
    (0 at the bottom) holds the component whose stacked interval covers the
    height ``(y + 0.5) / levels``.
    """
    totals = Q.sum(1, keepdims=True)
    tops = np.cumsum(Q / np.where(totals > 0, totals, 1), axis=1)
    centres = (np.arange(levels) + 0.5) / levels
    # component of (y, i): how many stacked tops lie below the pixel's centre
    image = (tops[None, :, :-1] < centres[:, None, None]).sum(axis=2)
    return image.astype(np.uint8)


def _bar_section(panels, perms, labels, ids, population_order, colours):
    """The ancestry panels, the sort control, and the data sources they use.

    Each panel is drawn as a Bokeh ``image``: one column per individual, each
    pixel coloured by the component its bar has at that height
    (:func:`_bar_image`), i.e. the stacked bars of ``admixspec plot`` drawn at
    1% vertical resolution. An image is one ``drawImage`` however many
    individuals there are; 10,000 individuals at K = 2..8 as rectangles are
    350,000 canvas fills, seconds of drawing. Hovering the image gives the
    cursor's x, i.e. the bar; the tooltip looks that row up in the data source
    of exact Q (and standard errors), with no per-bar glyph to index or paint.
    """
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS, CustomJSHover, Range1d, Select

    n = panels[0].Q.shape[0]
    aligned = [p.Q[:, perm] for p, perm in zip(panels, perms, strict=True)]
    # the order of individuals follows the largest K's first panel, as plot's
    sort_index = max(range(len(panels)), key=lambda j: (panels[j].K, -j))
    orders, groups = _orders(aligned[sort_index], labels, population_order)
    first = orders["main"]
    data, tooltips = _hover_data(panels, perms, aligned, first, labels, ids, colours)
    source = ColumnDataSource(data=data, name="ancestry")
    lookup = CustomJSHover(args={"source": source}, code=_LOOKUP)
    order_source = ColumnDataSource(
        data={key: value.astype(np.int32) for key, value in orders.items()},
        name="orders")
    x_range = Range1d(0, n, bounds=(0, n))
    figures, image_sources = [], []
    for j, (panel, Q) in enumerate(zip(panels, aligned, strict=True)):
        images = ColumnDataSource(data={"image": [_bar_image(Q[first])]},
                                  name=f"image-{j}")
        image_sources.append(images)
        position = ("first" if j == 0 else "") + (
            "last" if j == len(panels) - 1 else "")
        figures.append(_panel_figure(j, panel, images, x_range, tooltips[j], lookup,
                                     groups, position, colours))
    K_sort = panels[sort_index].K
    options = [("main", "population's main component (as admixspec plot)")] + [
        (f"c{k}", f"component {k + 1}") for k in range(K_sort)]
    select = Select(title="Order individuals within each population by",
                    value="main", options=options, width=420, name="sort")
    select.js_on_change("value", CustomJS(
        args={"source": source, "orders": order_source, "select": select,
              "panels": image_sources},
        code=_REORDER))
    return column(select, *figures), source


def _hover_data(panels, perms, aligned, first, labels, ids, colours):
    """The hover table's columns (individuals in plotting order) and each
    panel's tooltip template reading them."""
    n = len(first)
    population = (np.asarray(labels, dtype=str) if labels is not None
                  else np.array(["-"] * n))
    data = {"individual": first.astype(np.int32),
            "sample": [str(s) for s in np.asarray(ids)[first]],
            "population": population[first].tolist()}
    tooltips = []
    for j, (panel, Q) in enumerate(zip(panels, aligned, strict=True)):
        rows = ["<div><b>$x{sample}</b> ($x{population})</div>"]
        for k in range(panel.K):
            data[f"q{j}_{k}"] = Q[first, k].astype(np.float32)
            se = ""
            if panel.se is not None:
                data[f"se{j}_{k}"] = panel.se[first, perms[j][k]].astype(np.float32)
                se = f" ± $x{{se{j}_{k}}}"
            rows.append(
                f'<div><span style="color:{colours[k]}">&#9632;</span> '
                f"component {k + 1}: $x{{q{j}_{k}}}{se}</div>")
        tooltips.append("".join(rows))
    return data, tooltips


def _panel_figure(j, panel, images, x_range, tooltip, lookup, groups, position,
                  colours):
    """Panel ``j``'s figure: its bar image, hover, population separators and,
    on the first and last panel (``position``), the population names."""
    from bokeh.models import (
        FixedTicker,
        HoverTool,
        LinearAxis,
        LinearColorMapper,
        PlainText,
        Range1d,
        Span,
    )
    from bokeh.plotting import figure

    n = images.data["image"][0].shape[1]
    fig = figure(
        width=_WIDTH, height=_PANEL_HEIGHT, x_range=x_range, y_range=Range1d(0, 1),
        tools="xpan,xwheel_zoom,reset,save", toolbar_location="right",
        name=f"panel-{j}", min_border_left=150,
    )
    mapper = LinearColorMapper(palette=list(colours[: panel.K]) * (
        2 if panel.K == 1 else 1), low=-0.5, high=panel.K - 0.5)
    bars = fig.image(image="image", x=0, y=0, dw=n, dh=1, color_mapper=mapper,
                     source=images, name=f"bars-{j}")
    fig.add_tools(HoverTool(renderers=[bars], tooltips=tooltip,
                            formatters={"$x": lookup}, attachment="below"))
    fig.ygrid.visible = False
    fig.xgrid.visible = False
    fig.yaxis.axis_label = panel.name
    fig.yaxis.ticker = FixedTicker(ticks=[])
    fig.yaxis.axis_label_standoff = 4
    fig.yaxis.axis_label_text_font_size = "11px"
    fig.yaxis.axis_label_text_font_style = "normal"
    fig.outline_line_color = "#444"
    for _, start, _ in groups[1:]:
        fig.add_layout(Span(location=start, dimension="height",
                            line_color="black", line_width=1))
    fig.xaxis.visible = False
    last = "last" in position
    if groups and position:
        # population names under the last panel, and over the first when
        # there are several (a long page scrolls them out of view)
        ticks = [(start + stop) / 2 for _, start, stop in groups]
        axis = LinearAxis(
            ticker=FixedTicker(ticks=ticks),
            # PlainText: a label is drawn as written, never as TeX ($$...$$)
            major_label_overrides={
                t: PlainText(g[0]) for t, g in zip(ticks, groups, strict=True)},
            major_tick_line_color=None, minor_tick_line_color=None,
            major_label_orientation=(math.pi / 2 if len(groups) * 80 > _WIDTH
                                     else "horizontal"))
        fig.add_layout(axis, "below" if last else "above")
        fig.height += 60 if len(groups) * 80 > _WIDTH else 25
    elif last:
        fig.xaxis.visible = True
        fig.xaxis.axis_label = f"{n} individuals, grouped by dominant component"
        fig.xaxis.major_label_text_font_size = "0px"
    return fig


def _run_figures(infos, panels):
    """CV error against K, log-likelihood per run, mode shares (those that exist)."""
    from bokeh.models import ColumnDataSource, HoverTool
    from bokeh.plotting import figure

    from .plot import PALETTE_12

    colours = PALETTE_12  # plot_cv's colours

    figures = []
    cv = [(i.K, i.cv_error) for i in infos if not math.isnan(i.cv_error)]
    if cv:
        Ks, errors = zip(*cv, strict=True)
        best = Ks[int(np.argmin(errors))]
        fig = figure(width=420, height=300,
                     title=f"CV error against K (best K = {best})",
                     x_axis_label="K", y_axis_label="CV error", name="cv",
                     tools="hover,save",
                     tooltips=[("K", "@x"), ("CV error", "@y{0.00000}")])
        fig.line(list(Ks), list(errors), color=colours[0], line_width=2)
        fig.scatter(list(Ks), list(errors), size=8, color=colours[0])
        fig.scatter([best], [min(errors)], size=16, marker="star", color=colours[3])
        fig.xaxis.ticker = list(Ks)
        figures.append(fig)
    runs = {"K": [], "loglik": [], "run": [], "mode": [], "color": []}
    for info in infos:
        rows = (info.record.get("modes") or {}).get("runs") or []
        if not rows and not math.isnan(info.loglik):
            rows = [{"run": "best", "loglik": info.loglik, "mode": 1}]
        for row in rows:
            if row.get("loglik") is None:
                continue
            mode = int(row.get("mode") or 1)
            runs["K"].append(info.K)
            runs["loglik"].append(float(row["loglik"]))
            runs["run"].append(str(row.get("run", "")))
            runs["mode"].append(mode)
            runs["color"].append(_MODE_COLOURS[(mode - 1) % len(_MODE_COLOURS)])
    if runs["K"]:
        Ks = np.array(runs["K"])
        loglik = np.array(runs["loglik"])
        several = len(Ks) > len(set(runs["K"]))
        if several:  # each K's runs against its best: the spread, on one axis
            best = {K: loglik[Ks == K].max() for K in set(runs["K"])}
            runs["y"] = (loglik - np.array([best[K] for K in runs["K"]])).tolist()
            title = "Log-likelihood of each run, minus its K's best"
            label = "Δ log-likelihood"
        else:
            runs["y"] = runs["loglik"]
            title, label = "Log-likelihood against K", "log-likelihood"
        fig = figure(width=420, height=300, title=title, x_axis_label="K",
                     y_axis_label=label, name="loglik", tools="save")
        source = ColumnDataSource(runs)
        r = fig.scatter("K", "y", color="color", size=8, alpha=0.8, source=source)
        fig.add_tools(HoverTool(renderers=[r], tooltips=[
            ("K", "@K"), ("run", "@run"), ("mode", "@mode"),
            ("log-likelihood", "@loglik{0.000}")]))
        fig.xaxis.ticker = sorted(set(runs["K"]))
        figures.append(fig)
    shares = [(p.K, p.mode, p.share) for p in panels
              if p.mode is not None and p.share is not None and not math.isnan(p.share)]
    if shares:
        mode_numbers = sorted({m for _, m, _ in shares})
        Ks = sorted({K for K, _, _ in shares})
        data = {"K": [str(K) for K in Ks]}
        for m in mode_numbers:
            data[f"mode {m}"] = [next((s for K2, m2, s in shares if K2 == K and m2 == m),
                                      0.0) for K in Ks]
        fig = figure(width=420, height=300, title="Share of runs in each mode",
                     x_range=data["K"], y_range=(0, 1), x_axis_label="K",
                     y_axis_label="share of runs", name="modes", tools="hover,save",
                     tooltips="$name: @$name{0%}")
        stackers = [f"mode {m}" for m in mode_numbers]
        fig.vbar_stack(stackers, x="K", width=0.7, source=ColumnDataSource(data),
                       color=[_MODE_COLOURS[(m - 1) % len(_MODE_COLOURS)]
                              for m in mode_numbers],
                       legend_label=stackers)
        fig.add_layout(fig.legend[0], "right")  # beside the bars, not over them
        figures.append(fig)
    return figures


def _k_table(infos, panels) -> str:
    rows = []
    n_modes = {}
    for p in panels:
        if p.mode is not None:
            n_modes[p.K] = max(n_modes.get(p.K, 0), p.mode)
    for info in infos:
        r = info.record
        seconds = r.get("seconds")
        rows.append([
            str(info.K), _escape(info.estimator or "–"), _escape(info.reason or "–"),
            _number(info.loglik, ".6f"), _number(info.cv_error, ".5f"),
            _escape(r.get("n_iter", "–")), _escape(r.get("converged", "–")),
            _number(seconds if isinstance(seconds, (int, float)) else None, ".1f"),
            str(n_modes.get(info.K, "–")),
        ])
    return _table(["K", "estimator", "why", "log-likelihood", "CV error", "iterations",
                   "converged", "seconds", "modes"], rows)


def _input_section(infos) -> str:
    parts = []
    seen = set()
    for info in infos:
        r = info.record
        if r:
            key = json.dumps([r.get("input"), r.get("n_individuals"), r.get("n_snps"),
                              r.get("filters")], sort_keys=True, default=str)
            if key in seen:
                continue
            seen.add(key)
            Ks = [i.K for i in infos if json.dumps(
                [i.record.get("input"), i.record.get("n_individuals"),
                 i.record.get("n_snps"), i.record.get("filters")],
                sort_keys=True, default=str) == key]
            head = (f"<p>K = {', '.join(map(str, Ks))}: input <code>"
                    f"{_escape(r.get('input', '?'))}</code>, "
                    f"{_escape(r.get('n_individuals', '?'))} individuals × "
                    f"{_escape(r.get('n_snps', '?'))} SNPs after filtering.</p>")
            filters = [[_escape(f.get("filter", "")), _escape(f.get("removed", "")),
                        _escape(f.get("unit", "")), _escape(f.get("reason", ""))]
                       for f in r.get("filters") or [] if isinstance(f, dict)]
            parts.append(head + (_table(["filter", "removed", "unit", "what"], filters)
                                 if filters else "<p>No filter removed anything.</p>"))
        elif info.log_text:
            header = []
            for line in info.log_text.splitlines():
                if _ITERATION.match(line):
                    break
                header.append(line)
            key = "\n".join(header)
            if key in seen or not header:
                continue
            seen.add(key)
            parts.append(f"<p>K = {info.K} (from its log):</p>"
                         f'<pre class="admixspec">{_escape(key)}</pre>')
    return "".join(parts) or "<p>No log or JSON beside the Q files.</p>"


def _versions_section(infos, command) -> str:
    import bokeh

    from ._version import __version__

    rows = []
    commands = []
    for info in infos:
        r = info.record
        if r.get("command") and r["command"] not in commands:
            commands.append(r["command"])
        if r.get("version"):
            rows.append([str(info.K), _escape(r["version"]),
                         _escape(r.get("seed", "–"))])
    if not commands:
        for info in infos:
            match = re.search(r"^Command:\s*(.+)$", info.log_text, re.MULTILINE)
            if match and match.group(1) not in commands:
                commands.append(match.group(1))
    text = ""
    if commands:
        plural = "s" if len(commands) > 1 else ""
        text += f"<p>The run's command line{plural}:</p>"
        text += "".join(f'<pre class="admixspec">{_escape(c)}</pre>' for c in commands)
    if rows:
        text += _table(["K", "admixspec version", "seed"], rows)
    text += (f"<p>This report: admixspec {_escape(__version__)}, Bokeh "
             f"{_escape(bokeh.__version__)}, Python {_escape(platform.python_version())}"
             f", numpy {_escape(np.__version__)}.</p>")
    if command:
        text += f'<pre class="admixspec">{_escape(command)}</pre>'
    return text


def report_html(prefix, *, labels=None, sample_ids=None, population_order=None,
                Ks=None, title: str | None = None, command: str | None = None) -> str:
    """The report of a run as HTML text (what :func:`write_report` writes).

    Parameters
    ----------
    prefix, labels, sample_ids, population_order, Ks, title, command
        As in :func:`write_report`.

    Returns
    -------
    str
        A complete HTML document with Bokeh's JavaScript inlined.
    """
    import_optional("bokeh", extra="report", needed_for="admixspec report")
    from bokeh.embed import file_html
    from bokeh.layouts import column, row
    from bokeh.resources import INLINE

    from .fit.modes import align_mode_panels
    from .io.results import read_population_labels
    from .plot import ancestry_palette, check_count

    panels, infos = _load_panels(prefix, Ks)
    n = panels[0].Q.shape[0]
    ids, ids_known = _sample_ids(sample_ids, infos, n)
    labels_file = labels if isinstance(labels, (str, Path)) else None
    if labels_file is not None:
        labels = read_population_labels(labels_file,
                                        sample_ids=ids if ids_known else None)
    check_count(labels, "labels", labels_file, n, infos[0].q_path.name)
    perms = align_mode_panels([p.Q for p in panels])
    K_max = max(p.K for p in panels)
    colours = ancestry_palette(K_max)
    bars, _ = _bar_section(panels, perms, labels, ids, population_order, colours)
    title = title or f"admixspec report: {Path(str(prefix)).name}"
    Ks_shown = sorted({p.K for p in panels})
    intro = (f"<h1>{_escape(title)}</h1><p>{n} individuals; K = "
             f"{', '.join(map(str, Ks_shown))}. Hover a bar for the individual's "
             "ancestry proportions; drag or scroll to zoom. Components keep one colour "
             "across K (aligned as in <code>admixspec plot</code>).")
    if any(p.mode is not None for p in panels):
        intro += (" A K with several runs shows one panel per mode (runs that found "
                  "the same solution), labelled with its share of the runs; * marks "
                  "the mode of the run written as <code>PREFIX.K.Q</code> (the best "
                  "log-likelihood's, or the default's spectral estimate where it "
                  "kept one).")
    intro += "</p>"
    items = [_div(intro), _heading("Ancestry proportions"), bars]
    figures = _run_figures(infos, panels)
    if figures:
        items += [_heading("Runs: CV error, log-likelihood, modes"), row(*figures)]
    items += [_heading("Each K: estimator and fit"), _div(_k_table(infos, panels)),
              _heading("Input and filters"), _div(_input_section(infos)),
              _heading("Versions and command"), _div(_versions_section(infos, command))]
    layout = column(*items)
    return file_html(layout, resources=INLINE, title=title)


def _check_out(out) -> None:
    """Refuse an output name that says it is not HTML (a ``.png`` holding a page)."""
    if Path(out).suffix.lower() not in _SUFFIXES:
        raise UsageError(f"the report is an HTML page: name it .html or .htm, "
                         f"not {str(out)!r}")


def write_report(prefix, out, *, labels=None, sample_ids=None, population_order=None,
                 Ks=None, title: str | None = None, command: str | None = None) -> Path:
    """Write a run's self-contained interactive HTML report.

    Parameters
    ----------
    prefix : str or os.PathLike
        The ``--out`` prefix of ``admixspec run`` (every ``PREFIX.K.Q`` is
        shown, with its modes when ``PREFIX.K.modes.tsv`` exists).
    out : str or os.PathLike
        The HTML file to write (atomically), named ``.html`` or ``.htm``.
    labels : sequence of str, shape (n_individuals,), or path, optional
        Population of each individual, or a ``.pop``/``.fam``/CSV/TSV file of
        them, as :func:`admixspec.plot_ancestry` takes them.
    sample_ids : sequence of str or path, optional
        Sample IDs in Q row order, or a ``.fam``/``.bed``/VCF/ID-list file;
        default: the run's input recorded in ``PREFIX.K.json``, or
        ``PREFIX.fam``, if readable
        (:func:`admixspec.io.results.recorded_sample_ids`).
    population_order : sequence of str, optional
        Left-to-right order of populations.
    Ks : sequence of int, optional
        Only these K; each must have its ``PREFIX.K.Q``.
    title : str, optional
        Page title.
    command : str, optional
        The command that made the report, shown at the end.

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    InputError
        No ``PREFIX.K.Q`` files, unreadable or inconsistent ones, ones whose
        rows do not sum to 1 (:func:`admixspec.io.results.check_q_rows`),
        a ``PREFIX.K.json`` that is not a run record
        (:func:`admixspec.io.results.read_run_record`), a label table
        without sample IDs to look it up by, a label or ID file with
        another count than Q's rows, or a K of ``Ks`` that was not run
        (saying which were).
    UsageError
        Labels/IDs given of the wrong length, an empty ``Ks``, or an ``out``
        not named ``.html``/``.htm``.
    MissingDependencyError
        Bokeh not installed (``pip install 'admixspec[report]'``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from admixspec import simulate_balding_nichols, write_q
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> sim = simulate_balding_nichols(40, 200, 3, seed=1)
    >>> write_q(folder / "r.3.Q", sim.Q)
    >>> path = write_report(folder / "r", folder / "r.html", labels=sim.populations)
    >>> text = path.read_text()
    >>> text.startswith("<!DOCTYPE html>") and "cdn.bokeh.org" not in text
    True
    """
    from .io.common import write_text

    _check_out(out)
    text = report_html(prefix, labels=labels, sample_ids=sample_ids,
                       population_order=population_order, Ks=Ks, title=title,
                       command=command)
    write_text(out, text)
    logger.info("wrote %s", out)
    return Path(out)
