"""Static twin of ModelView: every layer x head as a small heatmap in one grid, as a matplotlib Figure.

:func:`paint_model_view` draws the view's state (what the page draws); :func:`plot_model_view` builds it, then
paints it (and the selection's row, under the grid).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.patches import Rectangle

from ..result import AttentionResult
from ..viewdata.checks import check_head, check_kind, check_layer
from ..viewdata.display import check_reduce
from ..viewdata.labels import token_label
from ..viewdata.selection import check_combine, check_selection, span_label, span_row
from ..viewdata.views.model_view import ModelViewOptions, ModelViewState, model_view_state, model_view_title
from ._measure import measured
from .style import colormap, lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_CMAPS = {"light": "Blues", "lecture": "viridis"}


@lecture_fit
def plot_model_view(
    result: AttentionResult,
    *,
    kind: str = "self",
    theme: str | None = None,
    cmap: str | None = None,
    highlight: tuple[int, int] | None = None,
    size: float = 1.1,
    reduce: str = "max",
    selection: list[int] | None = None,
    combine: str = "mean",
    measure: str = "weights",
) -> Figure:
    """Draw every head of ``kind`` attention: layers as rows, heads as columns, each map scaled to its own maximum.

    Parameters
    ----------
    result : AttentionResult
    kind : str
        "self", or "encoder" / "decoder" / "cross" for encoder-decoder results.
    theme : str, optional
        "light" (Blues) or "lecture" (viridis, larger fonts); default the one :func:`attnwidgets.set_theme` chose.
    cmap : str, optional
        Any matplotlib colour map name; overrides the theme's.
    highlight : (layer, head), optional
        Outline one head, as the widget outlines the selected one.
    size : float
        Inches per thumbnail.
    reduce : str
        "max" (default) or "mean": how a thumbnail merges a block of cells (as the widget's ``reduce``).
    selection : list of int, optional
        Query tokens selected, as the widget's ``selection``: their ``combine`` ("mean" or "sum") row of the
        highlighted head (default layer 0, head 0) is drawn under the grid, with the key tokens.
    combine : str
        "mean" (default) or "sum" of the selected rows.
    measure : {"weights", "norms", "value_zeroing"}
        As the widget's switch: the weights, the row share of ‖α_ij f(x_j)‖ (Kobayashi et al. 2020), or Mohebbi et
        al. 2023's value zeroing (one map per layer, drawn in each of its heads).

    Returns
    -------
    matplotlib.figure.Figure
        Decoder self-attention shows its causal mask (future keys) in light grey.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> r = aw.AttentionResult.from_arrays(np.full((2, 3, 4, 4), 0.25, np.float32), list("abcd"))
    >>> len(aw.plots.plot_model_view(r).axes)    # one image of every head
    1
    """
    kind = check_kind(result, kind)
    check_reduce(reduce)
    shown = measured(result, measure)
    n_layers, n_heads, n_queries = shown.attention_shape(kind)[:3]  # type: ignore[arg-type]
    combine = check_combine(combine)
    selection = check_selection([] if selection is None else selection, n_queries)
    if highlight is not None:
        highlight = (check_layer(highlight[0], n_layers), check_head(highlight[1], n_heads, allow_mean=False))
    # The page's own state (viewdata.views.model_view): its thumbnails, title and groups are what the picture draws.
    state = model_view_state(shown, ModelViewOptions(kind=kind, reduce=reduce, measure=measure), weights=result)
    layer, head = highlight if highlight is not None else (None, None)
    # the selection's combined row of the chosen head, as the page's "span" request answers it
    span = span_row(shown, layer or 0, selection, head or 0, kind, combine) if selection else None
    return _paint_all(state, theme, cmap, layer, head, selection, combine, span, size)


@lecture_fit
def paint_model_view(state: ModelViewState, ax: Any = None, *, theme: str | None = None, cmap: str | None = None,
                     layer: int | None = None, head: int | None = None, selection: list[int] | None = None,
                     combine: str = "mean", span: Any = None, size: float = 1.1) -> Figure:
    """Draw a model view's state (:func:`attnwidgets.viewdata.views.model_view.model_view_state`) as the page draws
    it: every head's thumbnail (each to its own maximum, a causal kind's future in light grey) in a layers x heads
    grid, the KV-head groups outlined, the chosen head (``layer``, ``head``) outlined in the accent and the page's
    title (:func:`~attnwidgets.viewdata.views.model_view.model_view_title`); with a ``selection``, its combined row
    of the chosen head under the grid, with the key tokens (the page draws it under the chosen head's detail).

    Parameters
    ----------
    state : ModelViewState
    ax : matplotlib Axes, optional
        Draw the grid into this axes instead of a new figure (the selection's row then needs a figure of its own).
    theme, cmap, size
        As :func:`plot_model_view`'s: how it looks.
    layer, head : int, optional
        The chosen head (the widget's ``layer`` and ``head``), outlined; layer 0, head 0 for the selection's row
        when not given, as the widget starts.
    selection : list of int, optional
        The selected query rows (the widget's ``selection``).
    combine : {"mean", "sum"}
        How they combine (the widget's ``combine``).
    span : array (keys,)
        Their combined row in the chosen head, as the page's "span" request answers it
        (:func:`attnwidgets.viewdata.selection.span_row`; :func:`attnwidgets.plots.paint` passes the widget's
        ``span_weights()``): a state's thumbnails cannot give it, so a selection needs it.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.result import AttentionResult
    >>> r = AttentionResult.from_arrays(np.full((2, 3, 4, 4), 0.25, np.float32), list("abcd"))
    >>> paint_model_view(model_view_state(r, ModelViewOptions()))._suptitle.get_text()
    'arrays · self attention · 2 layers × 3 heads'
    """
    if ax is None:
        return _paint_all(state, theme, cmap, layer, head, selection, combine, span, size)
    if selection:
        raise ValueError("the selection's row is drawn under the grid in a figure of its own: paint the model view "
                         "without ax, or without a selection")
    _paint(state, ax, theme, cmap, _chosen(state, layer, head))
    return ax.figure  # type: ignore[no-any-return]


def _chosen(state: ModelViewState, layer: int | None, head: int | None) -> tuple[int, int] | None:
    """The chosen head, checked against the grid; None when neither is given."""
    if layer is None and head is None:
        return None
    n_layers, n_heads = state.payload.thumbs.shape[:2]
    return check_layer(layer or 0, n_layers), check_head(head or 0, n_heads, allow_mean=False)


def _paint_all(state: ModelViewState, theme: str | None, cmap: str | None, layer: int | None, head: int | None,
               selection: list[int] | None, combine: str, span: Any, size: float) -> Figure:
    """A new figure of the grid and, with a selection, the chosen head's combined row under it."""
    n_layers, n_heads = state.payload.thumbs.shape[:2]
    kind = _kind(state)
    queries, keys = state.meta.tokens[kind]
    picked = check_selection([] if selection is None else selection, len(queries))
    chosen = _chosen(state, layer, head)
    extra = 1.4 if picked else 0.0  # room for the selection's row under the grid
    fig = new_figure((size * n_heads + 0.6, size * n_layers + 0.6 + extra))
    if not picked:
        _paint(state, fig.add_subplot(), theme, cmap, chosen)
        fig.tight_layout()
        return fig
    if span is None:
        raise ValueError("a model view's state has thumbnails, not the chosen head's rows: pass span= (span_row of "
                         "the chosen head, or the widget's span_weights()) with the selection")
    row = np.asarray(span, np.float32).reshape(-1)
    if row.shape != (len(keys),):
        raise ValueError(f"span has {row.size} values for {len(keys)} keys: pass the chosen head's combined row")
    fig.set_layout_engine("constrained")  # tight_layout cannot place two image rows and their titles
    ax, row_ax = fig.subplots(2, 1, gridspec_kw={"height_ratios": [size * n_layers, 0.45]})
    colours, font = _paint(state, ax, theme, cmap, chosen)
    at = chosen or (0, 0)
    _span_panel(row_ax, row, at, picked, check_combine(combine), queries, keys, colours, font)
    return fig


def _paint(state: ModelViewState, ax: Any, theme: str | None, cmap: str | None,
           highlight: tuple[int, int] | None) -> tuple[Any, int]:
    """:func:`paint_model_view` into ``ax``; hands back the colour map and font, for what is drawn beside it."""
    theme = resolve_theme(theme)
    colours = colormap(cmap or _CMAPS.get(theme, "Blues")).with_extremes(bad="#ebebeb")
    font = 14 if theme == "lecture" else 8
    mosaic, (tq, tk) = _mosaic(state)
    n_layers, n_heads = state.payload.thumbs.shape[:2]
    # One image of every head (each scaled to its own maximum, as the widget's thumbnails are): one axes instead of
    # layers x heads of them, so drawing it costs about what one heatmap costs.
    ax.imshow(mosaic, cmap=colours, vmin=0, vmax=1, interpolation="nearest", aspect="auto")
    ax.set_xticks([h * (tk + 1) + (tk - 1) / 2 for h in range(n_heads)], [str(h) for h in range(n_heads)],
                  fontsize=font)
    ax.set_yticks([lay * (tq + 1) + (tq - 1) / 2 for lay in range(n_layers)], [f"L{lay}" for lay in range(n_layers)],
                  fontsize=font)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    group = state.meta.kv_group_size.get(_kind(state), 1)
    if group > 1:  # grouped-query attention: one outline around the heads that share a key/value head
        for g in range(n_heads // group):
            ax.add_patch(Rectangle((g * group * (tk + 1) - 0.9, -0.9), group * (tk + 1) - 0.2,
                                   n_layers * (tq + 1) - 0.2, fill=False, edgecolor="#8c959f", linewidth=1.2,
                                   linestyle="--"))
            ax.text((g * group + group / 2) * (tk + 1) - 1, n_layers * (tq + 1) - 0.2, f"KV head {g}",
                    ha="center", va="top", fontsize=font)
    if highlight is not None:
        layer, head = highlight
        ax.add_patch(Rectangle((head * (tk + 1) - 0.5, layer * (tq + 1) - 0.5), tk, tq, fill=False,
                               edgecolor="#d1242f", linewidth=2.5))
    ax.figure.suptitle(model_view_title(state), fontsize=font + 2)
    return colours, font


def _kind(state: ModelViewState) -> str:
    """The kind as the result knows it (a view's "encoder" is "self" without cross-attention)."""
    return state.payload.kind if state.payload.kind in state.meta.shapes else "self"


def _span_panel(ax: Any, row: np.ndarray, head_at: tuple[int, int], selection: list[int], combine: str,
                queries: list[str], keys: list[str], colours: Any, font: int) -> None:
    """The combined row of the selected query rows of one head on its own scale (the page's for a "sum"; for a
    "mean" the page tops it at the chosen head's maximum, from its "matrix" request, which the state does not hold),
    with the key tokens under it."""
    layer, head = head_at
    ax.imshow(row[None, :], cmap=colours, vmin=0, vmax=float(row.max()) or 1.0, aspect="auto",
              interpolation="nearest")
    ax.set_yticks([0], [combine], fontsize=font)
    if len(keys) <= 80:
        ax.set_xticks(range(len(keys)), [token_label(k) for k in keys], rotation=90, fontsize=font)
    else:
        ax.set_xticks([])
    ax.set_title(f"layer {layer} · head {head} · {span_label([token_label(q) for q in queries], selection, combine)}",
                 fontsize=font + 1)


def _mosaic(state: ModelViewState) -> tuple[np.ndarray, tuple[int, int]]:
    """The state's thumbnails (uint8, each to its own maximum) as one image, tiled layers x heads with a one-cell NaN
    gap (drawn as the background), a causal kind's future blocks NaN too: ``(mosaic, (rows, cols) of one tile)``."""
    thumbs = state.payload.thumbs.astype(np.float32) / 255.0
    n_layers, n_heads, tq, tk = thumbs.shape
    if state.meta.causal.get(_kind(state), False):
        thumbs[..., np.triu(np.ones((tq, tk), dtype=bool), 1)] = np.nan  # a block wholly after its queries
    mosaic = np.full((n_layers * (tq + 1) - 1, n_heads * (tk + 1) - 1), np.nan, dtype=np.float32)
    for layer in range(n_layers):
        for head in range(n_heads):
            mosaic[layer * (tq + 1): layer * (tq + 1) + tq, head * (tk + 1): head * (tk + 1) + tk] = thumbs[layer, head]
    return mosaic, (tq, tk)
