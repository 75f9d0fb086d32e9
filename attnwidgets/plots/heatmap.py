"""Static twin of AttentionHeatmap: the same view as a matplotlib Figure, for slides and papers.

:func:`paint_heatmap` draws the view's state (:func:`attnwidgets.viewdata.views.heatmap.heatmap_state`, what the
page draws); :func:`plot_heatmap` builds that state from a result and the view's options, then paints it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..result import AttentionResult
from ..viewdata.checks import check_view, check_vmax, scale_note
from ..viewdata.display import check_reduce, sink_keys
from ..viewdata.labels import token_label
from ..viewdata.selection import check_combine, check_selection, span_label, span_row
from ..viewdata.views.heatmap import (
    HeatmapOptions,
    HeatmapState,
    heatmap_axis_labels,
    heatmap_state,
    heatmap_title,
    words_source,
)
from ._measure import MEASURE_VALUE, measured
from .style import cell_map, lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_CMAPS = {"light": "Blues", "lecture": "viridis"}


@lecture_fit
def plot_heatmap(
    result: AttentionResult,
    layer: int = 0,
    head: int = 0,
    *,
    kind: str = "self",
    words: bool = False,
    theme: str | None = None,
    cmap: str | None = None,
    ax: Any = None,
    annotate: bool | None = None,
    vmax: float | None = None,
    reduce: str = "max",
    discount_sinks: bool | list[int] = False,
    selection: list[int] | None = None,
    combine: str = "mean",
    measure: str = "weights",
) -> Figure:
    """Draw one head (``head=-1``: the mean over the layer's heads) as a query x key heatmap.

    Parameters
    ----------
    result : AttentionResult
    layer, head : int
        Which map; ``head=-1`` averages the layer's heads, like the widget's "mean of heads". Checked as the
        widget checks them (:mod:`attnwidgets.viewdata.checks`): TypeError for a non-integer, ValueError out of range.
    kind : str
        "self", or "encoder" / "decoder" / "cross" for encoder-decoder results.
    words : bool
        Word-level attention (see :func:`attnwidgets.analysis.word_level`).
    theme : str, optional
        "light" (Blues) or "lecture" (viridis, larger fonts); default the one :func:`attnwidgets.set_theme` chose.
    cmap : str, optional
        Any matplotlib colour map name; overrides the theme's.
    ax : matplotlib Axes, optional
        Draw into this axes instead of a new figure.
    annotate : bool, optional
        Write each weight in its cell (default: when there are at most 16 tokens).
    vmax : float, optional
        A fixed top of the colour scale (1.0 for weights: maps compare); default the map's maximum, as in the widget.
        The colour bar's label says "fixed" or "per-map".
    reduce : str
        "max" or "mean": how an input over 1024 tokens is reduced to its overview (as the widget draws it).
    discount_sinks : bool or list of int
        Top the colour scale at the largest weight on other keys (True: key 0), clipping the sink to the top colour.
    selection : list of int, optional
        Query rows to outline, with their ``combine`` drawn as one more row under the map (as the widget's
        ``selection``; :func:`attnwidgets.viewdata.selection.span_row`).
    combine : str
        "mean" (default, on the map's colour scale) or "sum" (on its own scale) of the selected rows.
    measure : {"weights", "norms", "value_zeroing"}
        As the widget's switch: the weights, Kobayashi et al. 2020's ‖α_ij f(x_j)‖ as a share of each row (see
        :func:`attnwidgets.studies.norm_attention`), or Mohebbi et al. 2023's value zeroing (one map per layer, shown in
        each of its heads; see :mod:`attnwidgets.studies.zeroing`); a result of :func:`attnwidgets.run`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> r = aw.AttentionResult.from_arrays(np.eye(3, dtype=np.float32), ["[CLS]", "hi", "[SEP]"])
    >>> fig = aw.plots.plot_heatmap(r)
    >>> fig.axes[0].get_title()
    'arrays · self attention · layer 0 · head 0'
    """
    kind, layer, head = check_view(result, kind, layer, head)
    check_reduce(reduce)
    shown = measured(result, measure)
    n_k = shown.attention_shape(kind)[3]  # type: ignore[arg-type]
    sinks = sink_keys(discount_sinks, n_k)
    # The page's own state (viewdata.views.heatmap): the same function the widget's traits come from; the picture
    # reads its matrix, scale, labels and title and nothing else.
    state = heatmap_state(shown, HeatmapOptions(kind, layer, head, words=words, reduce=reduce, discount_sinks=sinks,
                                                vmax=check_vmax(vmax), measure=measure), weights=result)
    queries, _keys = heatmap_axis_labels(state)
    combine = check_combine(combine)
    selection = check_selection([] if selection is None else selection, len(queries))
    # the selection's combined row as the page's "span" request answers it (the rows of the map, not of an overview)
    span = span_row(words_source(shown, words), layer, selection, head, kind, combine) if selection else None
    fig = _paint_all(state, ax, theme, cmap, annotate, selection, combine, span)
    if ax is None:  # a caller's axes: its figure's layout is the caller's (a panel_grid is constrained)
        fig.tight_layout()
    return fig


class _Look(NamedTuple):
    """How a painted map looks, for what is drawn beside it (the selection's row): its colour map, scale top, font
    size and whether its cells carry their numbers."""

    cmap: str
    top: float
    font: int
    annotate: bool


@lecture_fit
def paint_heatmap(state: HeatmapState, ax: Any = None, *, theme: str | None = None, cmap: str | None = None,
                  annotate: bool | None = None, selection: list[int] | None = None, combine: str = "mean",
                  span: Any = None) -> Figure:
    """Draw a heatmap's state (:func:`attnwidgets.viewdata.views.heatmap.heatmap_state`) as the page draws it: its
    matrix (NaN cells, a causal head's future, left blank), on its colour scale (0 to ``payload.vmax``), with its
    labels and the page's title (:func:`~attnwidgets.viewdata.views.heatmap.heatmap_title`); with a ``selection``,
    the selected rows outlined, their combined row under the map (on the map's scale for "mean", its own for "sum",
    as js/src/draw/span.ts spanTop) and the selection's caption at the end of the title, as the page's.

    Parameters
    ----------
    state : HeatmapState
    ax : matplotlib Axes, optional
        Draw into this axes instead of a new figure.
    theme, cmap, annotate
        As :func:`plot_heatmap`'s: how it looks, not what it shows.
    selection : list of int, optional
        The selected query rows (the widget's ``selection``).
    combine : {"mean", "sum"}
        How they combine (the widget's ``combine``).
    span : array (keys,), optional
        Their combined row, as the page's "span" request answers it
        (:func:`attnwidgets.viewdata.selection.span_row`; :func:`attnwidgets.plots.paint` passes the widget's
        ``span_weights()``); default: combined from the state's own map, which is exact for a map drawn whole (not
        a long input's block overview: there it must be given).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.result import AttentionResult
    >>> r = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"])
    >>> paint_heatmap(heatmap_state(r, HeatmapOptions(head=-1))).axes[0].get_title()
    'arrays · self attention · layer 0 · mean of heads'
    """
    fig = _paint_all(state, ax, theme, cmap, annotate, selection, combine, span)
    if ax is None:
        fig.tight_layout()
    return fig


def _paint_all(state: HeatmapState, ax: Any, theme: str | None, cmap: str | None, annotate: bool | None,
               selection: list[int] | None, combine: str, span: Any) -> Figure:
    """The map and, with a selection, its rows outlined, their combined row and the title's caption."""
    fig, ax, look = _paint(state, ax, theme, cmap, annotate)
    queries, _keys = heatmap_axis_labels(state)
    picked = check_selection([] if selection is None else selection, len(queries))
    if picked:
        combine = check_combine(combine)
        row = _span_of(state, picked, combine, span)
        _draw_span(ax, state, picked, combine, row, look)
        ax.set_title(f"{heatmap_title(state)} · {span_label([token_label(q) for q in queries], picked, combine)}",
                     fontsize=look.font + 1, pad=12)
    return fig


def _span_of(state: HeatmapState, selection: list[int], combine: str, span: Any) -> np.ndarray:
    """The selection's combined row: ``span`` as given (the page's "span" reply), else the ``combine`` of the
    selected rows of the state's map (NaN, a causal head's future, counted as 0, as the rows' weights are)."""
    n_keys = len(heatmap_axis_labels(state)[1])
    if span is not None:
        row = np.asarray(span, np.float32).reshape(-1)
        if row.shape != (n_keys,):
            raise ValueError(f"span has {row.size} values for a map of {n_keys} keys: pass the selection's combined "
                             "row (span_row) of the map on screen")
        return row
    if state.payload.factor > 1:
        raise ValueError(f"this state draws a long map as {state.payload.factor}x{state.payload.factor} blocks: its "
                         "rows are not the selection's; pass span= (span_row, or the widget's span_weights())")
    total = np.nansum(state.payload.matrix[selection].astype(np.float64), axis=0)
    return (total / len(selection) if combine == "mean" else total).astype(np.float32)


def _paint(state: HeatmapState, ax: Any, theme: str | None, cmap: str | None,
           annotate: bool | None) -> tuple[Figure, Any, _Look]:
    """:func:`paint_heatmap`, handing back the axes and how the map looks, for what the caller draws beside it."""
    theme = resolve_theme(theme)
    payload, meta = state.payload, state.meta
    queries, keys = heatmap_axis_labels(state)
    top = payload.vmax or 1.0
    label = MEASURE_VALUE[meta.measure] + f"\n{scale_note(meta.vmax, top)}"
    if meta.sinks:
        label += f" (sink key{'s' if len(meta.sinks) > 1 else ''} {', '.join(map(str, meta.sinks[:4]))} clipped)"
    if payload.factor > 1:
        label += f"\n{meta.reduce} of {payload.factor}x{payload.factor} blocks"
    big = theme == "lecture"
    n = max(len(queries), len(keys))
    annotate = n <= 16 if annotate is None else annotate
    if ax is None:
        side = min(14.0, max(4.0, 0.38 * n + 1.5)) * (1.3 if big else 1.0)
        fig = new_figure((side + 1.2, side))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    font = 16 if big else 9
    colours = cmap or _CMAPS.get(theme, "Blues")
    cell_map(ax, payload.matrix, cmap=colours, vmin=0.0, vmax=top, annotate=annotate,
             fontsize=font - 2, xticklabels=[token_label(k) for k in keys] if n <= 80 else False,
             yticklabels=[token_label(q) for q in queries] if n <= 80 else False,
             colorbar={"shrink": 0.7, "label": label})
    ax.xaxis.tick_top()
    ax.tick_params(axis="x", rotation=90, labelsize=font)
    ax.tick_params(axis="y", rotation=0, labelsize=font)
    ax.set_xlabel("key (attended to)", fontsize=font)
    ax.set_ylabel("query (attending)", fontsize=font)
    ax.set_title(heatmap_title(state), fontsize=font + 1, pad=12)
    return fig, ax, _Look(colours, top, font, annotate)


def _draw_span(ax: Any, state: HeatmapState, selection: list[int], combine: str, row: np.ndarray,
               look: _Look) -> None:
    """Outline the selected rows and draw their combined row under the map, as the page does (a long map's block
    overview: the outlines at the blocks the rows fall in)."""
    cmap, top, font, annotate = look
    from matplotlib.patches import Rectangle

    from ..viewdata.selection import runs

    n_rows, n_cols = state.payload.matrix.shape
    factor = state.payload.factor
    for a, b in runs(selection):
        ax.add_patch(Rectangle((0, a / factor), n_cols, (b - a) / factor, fill=False, edgecolor="#d1242f",
                               linewidth=2.5, clip_on=False))
    row_top = top if combine == "mean" else float(row.max()) or 1.0  # js/src/draw/span.ts spanTop
    # one row high, 1.8 rows under the map (the key axis label moves above the map, beside the key labels)
    inset = ax.inset_axes((0, -1.8 / n_rows, 1, 1 / n_rows))
    inset.imshow(row[None, :], cmap=cmap, vmin=0, vmax=row_top, aspect="auto", interpolation="nearest",
                 extent=(0, len(row), 1, 0))
    if annotate:
        for k, v in enumerate(row):
            inset.text(k + 0.5, 0.5, f"{v:.2f}", ha="center", va="center", fontsize=font - 2,
                       color="white" if v > 0.6 * row_top else "black")
    inset.set_xticks([])
    inset.set_yticks([0.5], [combine], fontsize=font, color="#d1242f")
    for spine in inset.spines.values():
        spine.set_edgecolor("#d1242f")
        spine.set_linewidth(2)
    ax.xaxis.set_label_position("top")
