"""Static twin of HeadStatsGrid: one per-head statistic as a layers x heads heatmap, for slides and papers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..viewdata.checks import check_head, check_layer
from ..viewdata.head_stats import head_stats, stat_labels
from .style import cell_map, lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_head_stats"]

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
    """Draw one statistic of every head as a layers x heads grid (layer 0 at the top), like the widget.

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
    from matplotlib.patches import Rectangle

    theme = resolve_theme(theme)
    stats = head_stats(source, words=words, who="plot_head_stats")
    if statistic not in stats.values:
        raise ValueError(f"unknown statistic {statistic!r}; this source has {stats.names()}")
    values = np.asarray(stats.values[statistic], dtype=np.float64)
    n_layers, n_heads = values.shape
    if selected is not None:
        selected = (check_layer(selected[0], n_layers), check_head(selected[1], n_heads))
    big = theme == "lecture"
    font = 16 if big else 9
    if annotate is None:
        annotate = n_heads <= 16
    own = ax is None  # a caller's axes: its figure's layout is the caller's
    if ax is None:
        scale = 1.3 if big else 1.0
        fig = new_figure((scale * max(4.0, 0.55 * n_heads + 2), scale * max(2.5, 0.45 * n_layers + 1.2)))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    finite = values[np.isfinite(values)]
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 1.0
    vmin = 0.0 if lo >= 0 else lo  # shares and entropies start at 0, as in the widget
    label = stat_labels([statistic])[statistic]
    if statistic in stats.signed:  # both signs: a diverging scale centred on 0, as the widget draws it
        half = max(float(np.abs(finite).max()) if finite.size else 0.0, 1e-12)
        vmin, hi = -half, half
        cmap = cmap or _DIVERGING.get(theme, "RdBu_r")
    cell_map(ax, values, cmap=cmap or _CMAPS.get(theme, "Blues"), vmin=vmin, vmax=hi if hi > vmin else vmin + 1.0,
             annotate=annotate, fontsize=font - 2, linewidth=0.5, colorbar={"shrink": 0.8, "label": label})
    if selected is not None:
        layer, head = selected
        x, w = (0, n_heads) if head < 0 else (head, 1)
        ax.add_patch(Rectangle((x, layer), w, 1, fill=False, edgecolor="#d1242f", linewidth=2.5))
    ax.set_xlabel("head", fontsize=font)
    ax.set_ylabel("layer", fontsize=font)
    ax.tick_params(axis="both", labelsize=font)
    ax.tick_params(axis="y", rotation=0)
    ax.set_title(f"{stats.title} · {label}", fontsize=font + 1)
    if own:
        fig.tight_layout()
    return fig


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
