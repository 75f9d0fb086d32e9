"""Static twin of HeadStatsGrid: one per-head statistic as a layers x heads heatmap, for slides and papers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..viewdata.checks import check_head, check_layer
from ..viewdata.head_stats import head_stats
from ..viewdata.views.head_stats_grid import (
    HeadStatsState,
    default_statistic,
    grid_scale,
    grid_title,
    grid_values,
    head_stats_state,
)
from .style import SELECTED, cell_map, lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["paint_head_stats_grid", "plot_head_stats", "plot_sinks"]

# The page's colour maps by theme (js/src/shared/theme.ts colormap; draw/diverging.ts for a signed statistic).
_CMAPS = {"light": "Blues", "lecture": "viridis"}
_DIVERGING = {"light": "RdBu_r", "lecture": "PuOr_r"}


@lecture_fit
def plot_head_stats(
    source: Any,
    statistic: str = "sep",
    *,
    words: bool = False,
    theme: str | None = None,
    cmap: str | None = None,
    ax: Any = None,
    annotate: bool | None = None,
    selected: tuple[int, int] | None = None,
) -> Figure:
    """Draw one statistic of every head as a layers x heads grid (layer 0 at the top), like the widget: the grid's
    state (:func:`~attnwidgets.viewdata.views.head_stats_grid.head_stats_state`) drawn by
    :func:`paint_head_stats_grid`.

    Parameters
    ----------
    source : AttentionResult, list of AttentionResult, CorpusStats, DataFrame or dict
        What :class:`attnwidgets.HeadStatsGrid` takes: a result, several, corpus statistics (or their tidy
        ``.frame()``), or a dict of (layers, heads) arrays.
    statistic : str
        A key of :data:`attnwidgets.analysis.STATISTICS` ("cls", "sep", "punct", "self", "prev", "next", "first",
        "entropy", ...).
    words : bool
        Word-level attention (attention sources only).
    theme : str, optional
        "light" (Blues) or "lecture" (viridis, larger fonts); default the one :func:`attnwidgets.set_theme` chose.
    cmap : str, optional
        Any matplotlib colour map name; overrides the theme's.
    ax : matplotlib Axes, optional
        Draw into this axes instead of a new figure.
    annotate : bool, optional
        Write each value in its cell (default: at most 16 heads).
    selected : (layer, head), optional
        Outline this head (head -1: the whole layer), as the widget outlines its selection.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> from attnwidgets.plots import plot_head_stats
    >>> r = aw.AttentionResult.from_arrays(np.full((2, 3, 3, 3), 1 / 3, np.float32), ["[CLS]", "hi", "[SEP]"])
    >>> fig = plot_head_stats(r, "sep")
    >>> fig.axes[0].get_title()
    'arrays · attention to [SEP]'
    """
    stats = head_stats(source, words=words, who="plot_head_stats")
    if statistic not in stats.values:
        raise ValueError(f"unknown statistic {statistic!r}; this source has {stats.names()}")
    layer = head = None
    if selected is not None:
        n_layers, n_heads = stats.shape
        layer, head = check_layer(selected[0], n_layers), check_head(selected[1], n_heads)
    state = head_stats_state(stats, can_words=False, tokens=[])
    return _paint(state, ax, statistic, layer, head, theme, cmap, annotate)


@lecture_fit
def paint_head_stats_grid(state: HeadStatsState, ax: Any = None, *, statistic: str = "", layer: int | None = None,
                          head: int | None = None, theme: str | None = None, cmap: str | None = None,
                          annotate: bool | None = None) -> Figure:
    """Draw a HeadStatsGrid state (:func:`attnwidgets.viewdata.views.head_stats_grid.head_stats_state`) as the page
    draws it: ``statistic`` (the widget's trait; "" the grid's first choice,
    :func:`~attnwidgets.viewdata.views.head_stats_grid.default_statistic`) of every head as a layers x heads grid on
    the page's colour scale (:func:`~attnwidgets.viewdata.views.head_stats_grid.grid_scale`), the head ``layer``,
    ``head`` outlined (head -1: the whole layer; None: nothing), under the page's title
    (:func:`~attnwidgets.viewdata.views.head_stats_grid.grid_title`). ``cmap`` replaces the theme's colour map;
    ``annotate`` writes the values in the cells (default: at most 16 heads).

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.viewdata.head_stats import HeadStats
    >>> stats = HeadStats({"sep": np.array([[0.2, 0.6]]), "entropy": np.ones((1, 2))}, "demo")
    >>> fig = paint_head_stats_grid(head_stats_state(stats, can_words=False, tokens=[]), layer=0, head=1)
    >>> ax = fig.axes[0]
    >>> ax.get_title(), [round(float(v), 3) for v in ax.collections[0].get_clim()], len(ax.patches)
    ('demo · attention to [SEP]', [0.0, 0.6], 1)
    """
    return _paint(state, ax, statistic, layer, head, theme, cmap, annotate)


def _paint(state: HeadStatsState, ax: Any, statistic: str, layer: int | None, head: int | None, theme: str | None,
           cmap: str | None, annotate: bool | None) -> Figure:
    """:func:`paint_head_stats_grid` (which :func:`plot_head_stats` calls too, fitted to the lecture box once)."""
    from matplotlib.patches import Rectangle

    statistic = statistic or default_statistic(state)
    values = grid_values(state, statistic)
    lo, hi, signed = grid_scale(state, statistic)
    theme = resolve_theme(theme)
    n_layers, n_heads = values.shape
    big = theme == "lecture"
    font = 16 if big else 9
    own = ax is None  # a caller's axes: its figure's layout is the caller's
    if ax is None:
        scale = 1.3 if big else 1.0
        fig = new_figure((scale * max(4.0, 0.55 * n_heads + 2), scale * max(2.5, 0.45 * n_layers + 1.2)))
        ax = fig.add_subplot()
    label = state.meta.labels.get(statistic, statistic)
    cmap = cmap or (_DIVERGING if signed else _CMAPS).get(theme, "RdBu_r" if signed else "Blues")
    cell_map(ax, values, cmap=cmap, vmin=lo, vmax=hi, annotate=n_heads <= 16 if annotate is None else annotate,
             fontsize=font - 2, linewidth=0.5, colorbar={"shrink": 0.8, "label": label})
    if layer is not None and head is not None and 0 <= layer < n_layers and head < n_heads:
        x, w = (0, n_heads) if head < 0 else (head, 1)  # the page's selectionInside: an outline only inside
        ax.add_patch(Rectangle((x, layer), w, 1, fill=False, edgecolor=SELECTED, linewidth=2.5))
    ax.set_xlabel("head", fontsize=font)
    ax.set_ylabel("layer", fontsize=font)
    ax.tick_params(axis="both", labelsize=font)
    ax.tick_params(axis="y", rotation=0)
    ax.set_title(grid_title(state, statistic), fontsize=font + 1)
    if own:
        ax.figure.tight_layout()
    return ax.figure  # type: ignore[no-any-return]


@lecture_fit
def plot_sinks(result: Any, keys: Any = (0,), *, kind: str = "self", **kwargs: Any) -> Figure:
    """Static twin of :meth:`attnwidgets.HeadStatsGrid.from_sinks`: each head's mean share of attention on ``keys``
    (default the first token) as a layers x heads grid. Keyword arguments go to :func:`plot_head_stats`.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> a = np.array([[1, 0, 0], [.8, .2, 0], [.5, .25, .25]], np.float32)
    >>> fig = aw.plots.plot_sinks(aw.AttentionResult.from_arrays(a, ["<s>", "a", "b"], kind="decoder"))
    >>> "share of attention on key 0" in fig.axes[0].get_title()
    True
    """
    from ..viewdata.head_stats import sink_stats

    return plot_head_stats(sink_stats(result, keys, kind), "sink", **kwargs)
