"""ADMIXTURE-style ancestry bar plots and CV-error curves.

The figure of every admixture paper: one stacked bar per individual, the
height of each colour its ancestry proportion, individuals grouped by
population. Several K are stacked as panels in numeric K order and each
ancestral component keeps one colour from panel to panel: components are
matched between consecutive panels by optimal assignment (the Hungarian
algorithm) on their overlap, as pong and CLUMPP do, and a component that is
new at a larger K gets a new colour.
:func:`admixspec.core.metrics.align_components` exposes the permutations.

matplotlib is imported inside the functions, so ``import admixspec`` stays
light; figures are made with :class:`matplotlib.figure.Figure` directly (no
pyplot state, no GUI backend).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from .core.exceptions import InputError, UsageError
from .core.metrics import align_components
from .core.validation import Interval, validate_params

__all__ = ["ancestry_palette", "individual_order", "plot_ancestry", "plot_cv"]

logger = logging.getLogger("admixspec")

#: Colour-blind-safe colours for K <= 12: Okabe & Ito (2008) without black,
#: then Paul Tol's "muted" scheme for the rest.
PALETTE_12 = (
    "#0072B2",  # blue (Okabe-Ito)
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#CC79A7",  # reddish purple
    "#F0E442",  # yellow
    "#332288",  # indigo (Tol muted)
    "#882255",  # wine
    "#999933",  # olive
    "#88CCEE",  # cyan
    "#BBBBBB",  # grey
)

_FORMATS = (".png", ".pdf", ".svg")

#: Most pixels a figure may have on a side. matplotlib's Agg renderer refuses
#: 2**16 and more up to version 3.9 (2**23 since 3.10, matplotlib PR 28904),
#: with a traceback; one limit for every supported version, and a figure that
#: wide is more than any screen or page shows anyway.
MAX_PIXELS = 2**16 - 1


def ancestry_palette(K: int) -> list[str]:
    """Colours for K ancestral components, as hex strings.

    Up to 12 components: a colour-blind-safe palette (Okabe–Ito, then Paul
    Tol's muted colours). Beyond 12: matplotlib's ``tab20``, ``tab20b`` and
    ``tab20c`` (60 distinct colours, then repeated) — distinguishable on
    screen but not guaranteed colour-blind safe.

    Parameters
    ----------
    K : int
        Number of colours, >= 1.

    Returns
    -------
    list of str, length K

    Examples
    --------
    >>> ancestry_palette(3)
    ['#0072B2', '#E69F00', '#009E73']
    >>> len(ancestry_palette(30)), len(set(ancestry_palette(30)))
    (30, 30)
    """
    if K < 1:
        raise UsageError(f"K must be >= 1, got {K}")
    if K <= len(PALETTE_12):
        return list(PALETTE_12[:K])
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    colours = [
        to_hex(c)
        for name in ("tab20", "tab20b", "tab20c")
        for c in colormaps[name].colors
    ]
    return [colours[k % len(colours)] for k in range(K)]


def _mode_panels(prefix: Path, K: int, q_path: Path) -> list[tuple[np.ndarray, str]]:
    """A K's modes (``PREFIX.K.modes.tsv``) as panels named ``K=4 mode 2 (30%)``.

    The kept run's mode (``PREFIX.K.Q``'s) is marked ``*``; without a modes
    table, the K's Q alone.
    """
    from .io.modes import mode_panels
    from .io.results import read_ancestry_q

    panels = []
    for mode, share, Q, path in mode_panels(prefix, K):
        best = "*" if path.resolve() == q_path.resolve() else ""
        percent = "" if np.isnan(share) else f" ({100 * share:.0f}%)"
        panels.append((Q, f"K={K}\nmode {mode}{percent}{best}"))
    return panels or [(read_ancestry_q(q_path, K=K), f"K={K}")]


def _load_panels(Qs, Ks, *, modes: bool = False):
    """(Q, source name) for arrays, ``.Q`` paths and run prefixes, and the files.

    With ``modes``, a run prefix gives each K's modes (:func:`_mode_panels`),
    named for the figure. Returns ``(panels, q_paths)``: the ``.Q`` files
    given or found (each K's best run's), beside which the run's sample IDs
    may be recorded.
    """
    from .io.results import find_runs, k_values, read_ancestry_q

    if isinstance(Qs, (str, os.PathLike)) or (
        isinstance(Qs, np.ndarray) and Qs.ndim == 2
    ):
        Qs = [Qs]
    panels, q_paths = [], []
    for index, item in enumerate(Qs):
        if isinstance(item, (str, os.PathLike)):
            path = Path(item)
            if path.is_file():
                panels.append((read_ancestry_q(path), path.name))
                q_paths.append(path)
                continue
            runs = find_runs(path)
            if not runs:
                raise InputError("no such Q file, nor PREFIX.K.Q files", path=path)
            if modes:
                for K, q_path in runs:
                    panels.extend(_mode_panels(path, K, q_path))
            else:
                # the K of a run's file name is its K: a file of other width
                # would be drawn, and picked by -K, as another K's
                panels.extend((read_ancestry_q(q_path, K=K), q_path.name)
                              for K, q_path in runs)
            q_paths.extend(q_path for _, q_path in runs)
            continue
        Q = np.asarray(item, dtype=float)
        if Q.ndim != 2:
            raise UsageError(f"Q #{index} must be 2-d (individuals x K), got {Q.shape}")
        panels.append((Q, f"Q #{index}"))
    if not panels:
        raise UsageError("no Q matrix to plot")
    if Ks is not None:
        wanted = {int(K) for K in Ks}
        if not wanted:
            raise UsageError("Ks is empty: give at least one K, or None for every K")
        found = {Q.shape[1] for Q, _ in panels}
        if missing := wanted - found:  # a K asked for is never dropped silently
            raise InputError(f"no Q matrix with K = {k_values(missing)} to plot (found "
                             f"K = {k_values(found)} in {_inputs_text(Qs)})")
        panels = [p for p in panels if p[0].shape[1] in wanted]
    return panels, q_paths


def _inputs_text(Qs) -> str:
    """The inputs for a message: their paths, or ``Q #i`` for arrays."""
    return ", ".join(str(item) if isinstance(item, (str, os.PathLike)) else f"Q #{i}"
                     for i, item in enumerate(Qs))


def individual_order(Q: np.ndarray, labels, population_order):
    """Order individuals: by population, then by the population's main component.

    Returns (order, groups) where groups is a list of (name, start, stop)
    in plotting coordinates.
    """
    n = Q.shape[0]
    if labels is None:
        dominant = Q.argmax(axis=1)
        order = np.lexsort((-Q[np.arange(n), dominant], dominant))
        return order, []
    labels = np.asarray(labels, dtype=str)
    present = list(dict.fromkeys(labels.tolist()))
    if population_order is None:
        populations = present
    else:
        populations = [str(p) for p in population_order]
        unknown = [p for p in populations if p not in present]
        if unknown:
            raise UsageError(
                f"population_order names populations not in the labels: {unknown}"
            )
        # a population named twice would be drawn twice: more bars than individuals
        twice = sorted({p for p in populations if populations.count(p) > 1})
        if twice:
            raise UsageError(f"population_order names a population more than once: "
                             f"{twice}")
        populations += [p for p in present if p not in populations]
    order, groups, start = [], [], 0
    for name in populations:
        members = np.flatnonzero(labels == name)
        main = Q[members].mean(axis=0).argmax()
        members = members[np.argsort(-Q[members, main], kind="stable")]
        order.append(members)
        groups.append((name, start, start + len(members)))
        start += len(members)
    return np.concatenate(order), groups


def _check_panel_inputs(loaded, q_paths, labels, sample_ids, out):
    """Labels (read from a file if a path), after checking every size.

    A label file is read by sample ID where the IDs are known: given, or
    recorded beside the run's Q files
    (:func:`~admixspec.io.results.recorded_sample_ids`), so a table's rows
    may come in any order.
    """
    from .io.results import read_population_labels, read_sample_ids, recorded_sample_ids

    n, first = loaded[0][0].shape[0], loaded[0][1]
    for Q, source in loaded:
        if Q.shape[0] != n:
            raise UsageError(f"{source} has {Q.shape[0]} individuals, {first} has {n}")
    ids_file = sample_ids if _is_path(sample_ids) else None
    if ids_file is not None:
        sample_ids = read_sample_ids(ids_file)
    check_count(sample_ids, "sample IDs", ids_file, n, first)
    labels_file = labels if _is_path(labels) else None
    if labels_file is not None:
        if sample_ids is None:
            sample_ids = recorded_sample_ids(q_paths, n)
        labels = read_population_labels(labels_file, sample_ids=sample_ids)
    check_count(labels, "labels", labels_file, n, first)
    if out is not None:
        figure_format(out)
    return labels


def _is_path(value) -> bool:
    return isinstance(value, (str, os.PathLike))


def check_count(values, what: str, path, n: int, q_name: str) -> None:
    """Refuse one-per-individual ``values`` (labels, sample IDs) not one per Q row.

    Parameters
    ----------
    values : sequence or None
        None passes.
    what : str
        Their name in the message, plural: ``"labels"``.
    path : str or os.PathLike or None
        The file they were read from, or None where they were given.
    n : int
        Rows of the Q matrix.
    q_name : str
        The Q matrix's file (or name), for the message.

    Raises
    ------
    InputError
        Read from ``path``, naming it; UsageError when given.
    """
    if values is None or len(values) == n:
        return
    message = f"{len(values)} {what} for {n} individuals (the rows of {q_name})"
    if path is None:
        raise UsageError(message)
    raise InputError(message, path=path)


def figure_format(out) -> str:
    """The format of a figure file, from its extension.

    Parameters
    ----------
    out : str or os.PathLike
        The figure's file name.

    Returns
    -------
    str
        ``"png"``, ``"pdf"`` or ``"svg"``, in lower case.

    Raises
    ------
    UsageError
        Any other extension.

    Examples
    --------
    >>> figure_format("bars.PDF")
    'pdf'
    """
    suffix = Path(out).suffix.lower()
    if suffix not in _FORMATS:
        raise UsageError(
            f"cannot tell the figure format from {str(out)!r}: use .png, .pdf or .svg"
        )
    return suffix[1:]


def save_figure(fig, out, *, dpi: float) -> None:
    """Write a figure atomically, in the format its extension names.

    The figure goes to a temporary file beside ``out`` that replaces it only
    when complete (:func:`admixspec.io.common.atomic_write`): an error or an
    interrupt while drawing leaves no partial ``out`` and an existing one as
    it was.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, e.g. from :func:`plot_ancestry` or :func:`plot_cv`.
    out : str or os.PathLike
        The file to write: ``.png``, ``.pdf`` or ``.svg``
        (:func:`figure_format`).
    dpi : float
        Resolution of a PNG, in pixels per inch.

    Raises
    ------
    UsageError
        An unsupported extension (nothing is written).
    OSError
        A failed write, naming ``out``.
    """
    from .io.common import atomic_write

    kind = figure_format(out)  # a file object has no extension to go by
    with atomic_write(out, "wb") as handle:
        fig.savefig(handle, format=kind, dpi=dpi)
    logger.info("wrote %s", out)


def _aligned_panels(loaded, *, align, names, modes=False):
    """Panels in K order with aligned columns: (perms, aligned Qs, panel names).

    With ``modes`` each K's first panel is aligned across K and its other
    panels to it (:func:`admixspec.fit.modes.align_mode_panels`), and the
    panels are named as loaded.
    """
    mats = [Q for Q, _ in loaded]
    if not align:
        perms = [np.arange(Q.shape[1]) for Q in mats]
    elif modes:
        from .fit.modes import align_mode_panels

        perms = align_mode_panels(mats)
    else:
        perms = align_components(mats)
    if modes and names is None:
        names = [name for _, name in loaded]
    order_k = sorted(range(len(mats)), key=lambda j: mats[j].shape[1])
    aligned = [mats[j][:, perms[j]] for j in order_k]
    Ks = [Q.shape[1] for Q in aligned]
    if names is None:
        panel_names = [f"K={K}" for K in Ks]
        for i, j in enumerate(order_k):
            if Ks.count(Ks[i]) > 1:
                panel_names[i] += f"\n{loaded[j][1]}"
    else:
        if len(names) != len(mats):
            raise UsageError(f"{len(names)} names for {len(mats)} panels")
        panel_names = [str(names[j]) for j in order_k]
    return perms, aligned, panel_names


def _new_figure(n_panels, n, groups, *, width, panel_height, dpi, title, rotate_labels,
                names=()):
    """A figure sized for the panels and their and the populations' names.

    Returns (figure, axes, rotate).
    """
    from matplotlib.figure import Figure

    if width is None:
        width = float(np.clip(4.0 + n / 60.0, 6.0, 18.0))
    if rotate_labels is None:
        longest = max((len(g[0]) for g in groups), default=0)
        rotate_labels = len(groups) * (longest + 1) * 0.09 > width
    bottom_margin = 0.0
    if groups:
        longest = max(len(g[0]) for g in groups)
        bottom_margin = 0.12 * longest + 0.2 if rotate_labels else 0.35
    height = panel_height * n_panels + bottom_margin + (0.4 if title else 0.1)
    _check_pixels(width, height, dpi)
    fig = Figure(figsize=(width, height), dpi=dpi)
    axes = fig.subplots(n_panels, 1, sharex=True, squeeze=False)[:, 0]
    # a panel name's longest line, at about 0.075 inch per character of 9 pt text
    longest_name = max((len(line) for name in names for line in name.split("\n")),
                       default=0)
    fig.subplots_adjust(
        left=max(0.8, 0.075 * longest_name + 0.2) / width,
        right=1 - 0.15 / width,
        top=1 - (0.4 if title else 0.1) / height,
        bottom=(bottom_margin + 0.05) / height,
        hspace=0.08,
    )
    return fig, list(axes), rotate_labels


def _check_pixels(width: float, height: float, dpi: float) -> None:
    """Refuse a figure larger than :data:`MAX_PIXELS` on a side.

    Parameters
    ----------
    width, height : float
        The figure's size in inches.
    dpi : float
        Its resolution, in pixels per inch.

    Raises
    ------
    UsageError
        Giving the size in inches and pixels, and the limit.
    """
    # matplotlib's Agg renderer truncates the size to whole pixels
    pixels = (int(width * dpi), int(height * dpi))
    if max(pixels) > MAX_PIXELS:
        raise UsageError(
            f"a figure of {width:g} x {height:g} inches at {dpi:g} dpi is "
            f"{pixels[0]} x {pixels[1]} pixels, over the limit of {MAX_PIXELS} "
            "pixels a side: lower the width, panel height or dpi"
        )


def _given_axes(ax, n_panels):
    """The user's axes, one per panel, and their figure."""
    axes = [ax] if hasattr(ax, "stairs") else list(ax)
    if len(axes) != n_panels:
        raise UsageError(f"{len(axes)} axes given for {n_panels} panels (one per K)")
    return axes[0].figure, axes


def _draw_panel(ax, Q, order, groups, name, colours) -> None:
    """One K: a stacked bar per individual, population boundaries as lines."""
    n = Q.shape[0]
    rows = Q[order]
    totals = rows.sum(1, keepdims=True)
    top = np.cumsum(rows / np.where(totals > 0, totals, 1), axis=1)
    edges = np.arange(n + 1)
    lower = np.zeros(n)
    for k in range(Q.shape[1]):
        ax.stairs(top[:, k], edges, baseline=lower, fill=True, color=colours[k],
                  linewidth=0)
        lower = top[:, k]
    for _, start, _ in groups[1:]:
        ax.axvline(start, color="black", linewidth=0.9)
    ax.set_xlim(0, n)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    ax.tick_params(axis="x", length=0)
    # names and labels come from files: drawn as written, never as mathtext ($...$)
    ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=9,
                  parse_math=False)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_linewidth(0.6)


def _label_individuals(ax, groups, n, rotate) -> None:
    """Population names under the bottom panel (or how individuals are grouped)."""
    if groups:
        ax.set_xticks([(start + stop) / 2 for _, start, stop in groups])
        ax.set_xticklabels([g[0] for g in groups], rotation=90 if rotate else 0,
                           fontsize=8 if rotate else 9, parse_math=False)
        ax.tick_params(axis="x", length=0)
    else:
        ax.set_xticks([])
        ax.set_xlabel(f"{n} individuals, grouped by dominant component")


@validate_params({
    "width": Interval(float, 0, closed="neither", allow_none=True),
    "panel_height": Interval(float, 0, closed="neither"),
    "dpi": Interval(float, 0, closed="neither"),
})
def plot_ancestry(
    Qs,
    *,
    labels=None,
    sample_ids=None,
    population_order=None,
    Ks=None,
    names=None,
    align: bool = True,
    sort_panel: int | None = None,
    colors=None,
    ax=None,
    out=None,
    title: str | None = None,
    width: float | None = None,
    panel_height: float = 1.2,
    dpi: int = 150,
    rotate_labels: bool | None = None,
    modes: bool = False,
):
    """Stacked-bar ancestry plot of one or several Q matrices.

    Parameters
    ----------
    Qs : array_like or path, or a sequence of them
        Q matrices, shape (n_individuals, K), for the same individuals in the
        same row order: arrays, ``PREFIX.K.Q`` paths, or run prefixes (every
        ``PREFIX.K.Q`` found). Panels are drawn top to bottom in numeric K
        order.
    labels : sequence of str, shape (n_individuals,), or path, optional
        Population of each individual, or a file of them (``.pop``, ``.fam``
        or CSV/TSV; see :func:`admixspec.io.results.read_population_labels`).
        Without labels individuals are grouped by their dominant component.
    sample_ids : sequence of str or path, optional
        Sample IDs in Q row order (or a ``.fam``/``.bed``/VCF/ID-list file,
        see :func:`admixspec.io.results.read_sample_ids`), to look a label
        file up by ID. Default: the IDs recorded beside the Q files
        (:func:`admixspec.io.results.recorded_sample_ids`); a CSV/TSV label
        table cannot be read without IDs.
    population_order : sequence of str, optional
        Left-to-right order of populations; unlisted ones follow in order of
        first appearance (the default order).
    Ks : sequence of int, optional
        Keep only the panels with these K; each must be among the inputs'.
    names : sequence of str, optional
        Panel names, one per Q, in input order (default ``K=<K>``, plus the
        file name when two panels share a K).
    align : bool
        Match components across panels so a component keeps its colour
        (:func:`~admixspec.core.metrics.align_components`). With ``False`` columns are
        drawn as given.
    sort_panel : int, optional
        Which panel (index in K order) decides the order of individuals
        within a population: by decreasing share of the population's mean
        dominant component. Default: the first panel of the largest K (with
        ``modes``, its major mode), as ``admixspec report`` orders them.
    colors : sequence of str, optional
        One colour per aligned component (default :func:`ancestry_palette`).
    ax : matplotlib.axes.Axes or sequence of them, optional
        Draw into these axes (one per panel, top to bottom in K order), e.g.
        a panel of a larger figure; ``width``, ``panel_height`` and ``dpi``
        then leave the user's figure alone and ``title`` goes on the top axes.
        Default: a new figure.
    out : str or os.PathLike, optional
        Write the figure here, atomically (an error or interrupt while
        writing leaves an existing file as it was); the format follows the
        extension (``.png``, ``.pdf`` or ``.svg``).
    title : str, optional
        Figure title.
    width, panel_height : float
        Figure width (default from the number of individuals) and height of
        one panel, in inches.
    dpi : float
        Resolution of a PNG, in pixels per inch. The figure may have at most
        :data:`MAX_PIXELS` pixels a side.
    rotate_labels : bool, optional
        Rotate population names vertically (default: when the labels would
        crowd).
    modes : bool
        For run prefixes: draw every mode of each K that ``run --runs`` found
        (``PREFIX.K.modes.tsv``), one panel per mode named ``K=4 mode 2
        (30%)`` (``*`` on the kept run's mode), each minor mode aligned to
        its K's first (:func:`admixspec.fit.modes.align_mode_panels`).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (the one holding ``ax`` when given);
        ``fig.admixspec_permutations`` holds the alignment permutations
        (input order) and ``fig.admixspec_order`` the plotted order of
        individuals.

    Raises
    ------
    UsageError
        Inconsistent shapes, unknown populations in ``population_order``, a
        number of axes other than the number of panels, an unsupported
        output extension, a size or resolution that is not positive, an
        empty ``Ks``, or a figure over :data:`MAX_PIXELS` pixels a side.
    InputError
        An unreadable Q file, one whose rows do not sum to 1
        (:func:`admixspec.io.results.check_q_rows`), a label table
        without sample IDs to look it up by, a label or ID file with
        another count than Q's rows (naming it and the Q file), or a K of
        ``Ks`` that no input has (naming it and the K there are).

    Examples
    --------
    >>> from admixspec import simulate_balding_nichols
    >>> sim = simulate_balding_nichols(30, 50, 3, seed=1)
    >>> fig = plot_ancestry([sim.Q[:, :2] / sim.Q[:, :2].sum(1, keepdims=True), sim.Q],
    ...                     labels=sim.populations)
    >>> len(fig.axes)
    2
    """
    loaded, q_paths = _load_panels(Qs, Ks, modes=modes)
    labels = _check_panel_inputs(loaded, q_paths, labels, sample_ids, out)
    perms, aligned, panel_names = _aligned_panels(loaded, align=align, names=names,
                                                  modes=modes)
    K_max = max(Q.shape[1] for Q in aligned)
    colours = list(colors) if colors is not None else ancestry_palette(K_max)
    if len(colours) < K_max:
        raise UsageError(f"{len(colours)} colours for K = {K_max} components")
    n = aligned[0].shape[0]
    if sort_panel is None:  # not the last panel: with modes, the K's rarest mode
        sort_panel = next(j for j, Q in enumerate(aligned) if Q.shape[1] == K_max)
    order, groups = individual_order(aligned[sort_panel], labels, population_order)
    if ax is None:
        fig, axes, rotate_labels = _new_figure(
            len(aligned), n, groups, width=width, panel_height=panel_height, dpi=dpi,
            title=title, rotate_labels=rotate_labels, names=panel_names,
        )
        if title:
            fig.suptitle(title)
    else:
        fig, axes = _given_axes(ax, len(aligned))
        if title:
            axes[0].set_title(title)
    for panel_ax, Q, name in zip(axes, aligned, panel_names, strict=True):
        _draw_panel(panel_ax, Q, order, groups, name, colours)
    _label_individuals(axes[-1], groups, n, bool(rotate_labels))
    fig.admixspec_permutations = perms
    fig.admixspec_order = order
    if out is not None:
        save_figure(fig, out, dpi=dpi)
    return fig


#: plot_cv's figure size, in inches.
_CV_SIZE = (4.5, 3.2)


@validate_params({"dpi": Interval(float, 0, closed="neither")})
def plot_cv(results, *, out=None, title: str | None = None, dpi: int = 150):
    """Cross-validation error against K, with the best K marked.

    Parameters
    ----------
    results : mapping, path or sequence of paths
        ``{K: cv_error}``, or paths to ``PREFIX.K.log`` files (or ADMIXTURE
        logs) containing ``CV error (K=k): value`` lines, or ``PREFIX.K.Q``
        paths or run prefixes (for the ``PREFIX.K.log`` beside each Q).
    out : str or os.PathLike, optional
        Output file (``.png``, ``.pdf`` or ``.svg``), written atomically.
    title : str, optional
        Axes title.
    dpi : float
        Resolution of a PNG, in pixels per inch; the figure may have at most
        :data:`MAX_PIXELS` pixels a side.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    InputError
        When the logs hold no CV error line.
    UsageError
        An unsupported output extension, or a ``dpi`` that is not positive
        or makes the figure over :data:`MAX_PIXELS` pixels a side.

    Examples
    --------
    >>> fig = plot_cv({2: 0.61, 3: 0.55, 4: 0.56})
    >>> fig.axes[0].get_title()
    'best K = 3 (lowest CV error)'
    """
    from matplotlib.figure import Figure

    from .io.results import find_runs, read_run_log

    if out is not None:
        figure_format(out)
    _check_pixels(*_CV_SIZE, dpi)
    if isinstance(results, (str, os.PathLike)):
        results = [results]
    if not hasattr(results, "items"):
        expanded = []
        for item in results:
            if str(item).endswith(".Q") and Path(item).is_file():
                expanded.append(Path(str(item)[: -len(".Q")] + ".log"))
            elif Path(item).is_file():
                expanded.append(Path(item))
            else:
                runs = find_runs(item)
                if not runs:
                    raise InputError("no such log file, nor PREFIX.K.Q files", path=item)
                expanded.extend(Path(str(q)[: -len(".Q")] + ".log") for _, q in runs)
        results = [p for p in expanded if p.is_file()]
        if not results:
            missing = ", ".join(p.name for p in expanded[:3])
            more = f" and {len(expanded) - 3} more" if len(expanded) > 3 else ""
            raise InputError(f"no run log beside the Q files ({missing}{more} not "
                             "found): the CV errors are read from PREFIX.K.log; save "
                             "ADMIXTURE's log of each K under that name",
                             path=expanded[0].parent)
    if hasattr(results, "items"):
        cv = {int(K): float(v) for K, v in results.items()}
    else:
        cv = {}
        for path in results:
            cv.update(read_run_log(path)["cv_errors"])
        if not cv:
            raise InputError("no 'CV error (K=...)' line in the logs (run with --cv)")
    Ks = sorted(cv)
    values = [cv[K] for K in Ks]
    # a nan (a failed CV) is no best K: np.argmin would pick it
    finite = [K for K in Ks if np.isfinite(cv[K])]
    if not finite:
        raise InputError(f"no finite CV error (K = {', '.join(map(str, Ks))})")
    best = min(finite, key=cv.__getitem__)
    fig = Figure(figsize=_CV_SIZE, dpi=dpi)
    ax = fig.add_subplot()
    ax.plot(Ks, values, marker="o", color=PALETTE_12[0])
    ax.plot([best], [cv[best]], marker="*", markersize=14, color=PALETTE_12[3],
            linestyle="none", label=f"best K = {best}")
    ax.set_xticks(Ks)
    ax.set_xlabel("K")
    ax.set_ylabel("CV error")
    ax.set_title(title or f"best K = {best} (lowest CV error)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    if out is not None:
        save_figure(fig, out, dpi=dpi)
    return fig
