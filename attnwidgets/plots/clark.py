"""Static figures after Clark et al. (2019): Figure 2 (attention to [CLS], [SEP], punctuation by layer), Figure 4
(entropy by layer, and from [CLS], against uniform attention) and Figure 6 (an MDS map of the heads).

Each function takes what the matching widget takes (EntropyBars, HeadClusterMap): a result, a list of results, a
:class:`~attnwidgets.analysis.CorpusStats`, its tidy DataFrame (``layer, head, statistic, value``) or a dict of
(L, H) arrays, read by the same :mod:`attnwidgets.viewdata.head_stats` helpers — and returns the matplotlib Figure.
Layers are numbered from 0, as in every widget and result; ``paper_numbers=True`` numbers them from 1, as the paper
does (for a figure set beside the published one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..viewdata.head_stats import HeadStats, embedding_frame, head_points, head_stats
from ..viewdata.views.entropy_bars import (
    ROWS,
    EntropyBarsState,
    entropy_bars_state,
    entropy_scale,
    entropy_title,
    entropy_values,
)
from ..viewdata.views.head_cluster_map import (
    HeadClusterMapState,
    cluster_colors,
    cluster_title,
    head_cluster_map_state,
)
from ._measure import measured
from .style import COLORBLIND, LECTURE_SCALE, lecture_fit, lecture_fonts, new_figure, resolve_theme

__all__ = ["paint_entropy_bars", "paint_head_cluster_map", "plot_entropy_by_layer", "plot_head_clusters",
           "plot_token_attention"]

_TITLES = {"cls": "[CLS]", "sep": "[SEP]", "punct": ". or ,", "first": "first token", "self": "self",
           "prev": "previous token", "next": "next token"}


def _table(stats: Any, who: str) -> HeadStats:
    """The per-head statistics of any source the per-head widgets take (:func:`~attnwidgets.viewdata.head_stats`)."""
    return head_stats(stats, who=who)


def _need(arrays: Mapping[str, np.ndarray], names: Sequence[str]) -> None:
    missing = [n for n in names if n not in arrays]
    if missing:
        raise KeyError(f"statistics {missing} are missing; compute them with attnwidgets.studies.corpus_stats")


def _layer_dots(ax: Any, values: np.ndarray, color: str, first: int, seed: int = 0) -> None:
    """One dot per head (jittered within its layer) and the layer mean as a line; layers numbered from ``first``."""
    n_layers, n_heads = values.shape
    rng = np.random.default_rng(seed)
    layers = np.arange(first, first + n_layers)
    x = np.repeat(layers, n_heads) + rng.uniform(-0.15, 0.15, n_layers * n_heads)
    ax.scatter(x, values.ravel(), s=12, alpha=0.6, color=color, linewidths=0)
    ax.plot(layers, np.nanmean(values, axis=1), color=color, lw=2)
    ax.set_xticks(layers)
    ax.set_xlabel("layer" if first == 0 else "layer (1-based, as in the paper)")


@lecture_fit
def plot_token_attention(stats: Any, statistics: Sequence[str] = ("cls", "sep", "punct"), *,
                         title: str | None = None, paper_numbers: bool = False, theme: str | None = None,
                         measure: str = "weights") -> Any:
    """Figure 2: average attention to [CLS], [SEP] and punctuation by layer, one dot per head, layer mean as a line.

    Parameters
    ----------
    stats : AttentionResult, list of them, CorpusStats, tidy DataFrame or dict of (L, H) arrays
    statistics : sequence of str
        Which shares to draw, one panel each; e.g. ``("first", "punct")`` for a decoder's attention sink.
    title : str, optional
    paper_numbers : bool
        Number layers from 1, as the paper does (default: from 0, as the widgets do).
    theme : str, optional
        "light" or "lecture" (larger); default the one :func:`attnwidgets.set_theme` chose.
    measure : {"weights", "norms", "value_zeroing"}
        The shares of the weights, of each row's ‖α_ij f(x_j)‖ (Kobayashi et al. 2020), or of Mohebbi et al. 2023's
        value-zeroing map (``stats`` must then be results of :func:`attnwidgets.run`, or pass their
        :func:`attnwidgets.studies.norm_results` with "weights").

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import attnwidgets as aw
    >>> from attnwidgets.analysis import surface_stats
    >>> stats = surface_stats(aw.run("The cat sat on the mat, because it was tired."))   # dict of (L, H) arrays
    >>> fig = plot_token_attention(stats)
    >>> [ax.get_title() for ax in fig.axes]
    ['[CLS]', '[SEP]', '. or ,']
    >>> fig.axes[1].get_lines()[0].get_xdata().tolist()          # the layer means of attention to [SEP]
    [0, 1, 2, 3, 4, 5]
    """
    theme = resolve_theme(theme)
    arrays = _table(measured(stats, measure), "plot_token_attention").values
    _need(arrays, statistics)
    colors = COLORBLIND[:len(statistics)]
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        fig = new_figure((3.2 * len(statistics) * scale, 3.0 * scale))
        axes = fig.subplots(1, len(statistics), sharey=True, squeeze=False)
        for ax, name, color in zip(axes[0], statistics, colors):
            _layer_dots(ax, arrays[name], color, int(paper_numbers))
            ax.set_title(_TITLES.get(name, name))
            ax.set_ylim(0, 1)
        axes[0, 0].set_ylabel({"weights": "avg. attention", "norms": "avg. share of ‖αf(x)‖",
                               "value_zeroing": "avg. value-zeroing share"}[measure])
        if title:
            fig.suptitle(title)
        fig.tight_layout()
    return fig


@lecture_fit
def plot_entropy_by_layer(stats: Any, *, rows: Sequence[str] | None = None, title: str | None = None,
                          paper_numbers: bool = False, theme: str | None = None, measure: str = "weights") -> Any:
    """Figure 4: entropy of each head's attention by layer (left) and of the [CLS] row alone (right), in nats, with
    the entropy of uniform attention as a dashed line; each panel is :func:`paint_entropy_bars` of the statistics'
    state for one row choice (what :class:`attnwidgets.EntropyBars` shows for it).

    Parameters
    ----------
    stats : AttentionResult, list of them, CorpusStats, tidy DataFrame or dict of (L, H) arrays
        What :class:`attnwidgets.EntropyBars` takes. Needs ``entropy`` (and ``entropy_cls`` / ``entropy_last`` for
        those rows); ``entropy_uniform`` draws the baseline.
    rows : sequence of "all", "cls", "last", optional
        One panel each, as the widget's row switch (default: "all" and "cls", or "all" and "last" for a decoder,
        whose first row always has entropy 0).
    title : str, optional
    paper_numbers : bool
        Number layers from 1, as the paper does (default: from 0, as the widgets do).
    theme : str, optional
        "light" or "lecture" (larger); default the one :func:`attnwidgets.set_theme` chose.
    measure : {"weights", "norms", "value_zeroing"}
        As the widget's switch: entropy of the weights, of each row's share of ‖α_ij f(x_j)‖ (Kobayashi et al.
        2020), or of the value-zeroing map (Mohebbi et al. 2023; per layer, so a layer's heads are equal; ``stats``
        must then be results of :func:`attnwidgets.run`).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from attnwidgets.studies import corpus_stats
    >>> stats = corpus_stats(["The cat sat.", "A dog barked at the moon."], progress=False)
    >>> fig = plot_entropy_by_layer(stats)
    >>> [" ".join(ax.get_title().split()).split(" · ")[-1] for ax in fig.axes]   # the page's title for each row
    ['attention entropy, all rows', 'attention entropy, [CLS] row']
    """
    theme = resolve_theme(theme)
    table = _table(measured(stats, measure), "plot_entropy_by_layer")
    rows = list(rows) if rows is not None else ["all", "last" if table.causal else "cls"]
    unknown = [r for r in rows if r not in ROWS]
    if unknown or not rows:
        raise ValueError(f"rows must name some of {list(ROWS)}, got {rows!r}")
    _need(table.values, [ROWS[r] for r in rows])
    # The page's own state (viewdata.views.entropy_bars): one panel per row choice, each as the page draws it.
    state = entropy_bars_state(table, measure=measure, can_norms=False, can_words=False, tokens=[])
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        fig = new_figure((3.5 * len(rows) * scale, 3.0 * scale))
        axes = fig.subplots(1, len(rows), sharey=True, squeeze=False)[0]
        for ax, row, color in zip(axes, rows, COLORBLIND):
            _entropy_panel(state, ax, row, color, int(paper_numbers))
        if len(rows) > 1:
            # The source once, over the panels, each panel titled by its row choice (the page's title is the two
            # together); one shared y axis, named once. Each panel repeating the source wrapped into its neighbour.
            for ax, row in zip(axes, rows):
                ax.set_title(entropy_title(state, row).rsplit(" · ", 1)[-1])
            for ax in axes[1:]:
                ax.set_ylabel("")
            source = state.meta.title
            fig.suptitle(source if not title or title in source else f"{title} · {source}")
        elif title:
            fig.suptitle(title)
        fig.tight_layout()
    return fig


@lecture_fit
def paint_entropy_bars(state: EntropyBarsState, ax: Any = None, *, rows: str = "all",
                       theme: str | None = None) -> Any:
    """Draw an EntropyBars state (:func:`attnwidgets.viewdata.views.entropy_bars.entropy_bars_state`) as the page
    draws it: one bar per head grouped by layer, for the row choice ``rows`` (the widget's trait), on the page's
    y axis (:func:`~attnwidgets.viewdata.views.entropy_bars.entropy_scale`) with the uniform baseline dashed, under
    the page's title (:func:`~attnwidgets.viewdata.views.entropy_bars.entropy_title`).

    Examples
    --------
    >>> from attnwidgets.viewdata.views.entropy_bars import entropy_bars_state
    >>> stats = HeadStats({"entropy": np.ones((2, 3)), "entropy_uniform": np.full((2, 3), 1.5)}, "demo")
    >>> state = entropy_bars_state(stats, measure="weights", can_norms=False, can_words=False, tokens=[])
    >>> ax = paint_entropy_bars(state).axes[0]
    >>> ax.get_title(), [float(y) for y in ax.get_ylim()], [t.get_text() for t in ax.get_xticklabels()]
    ('demo · attention entropy, all rows', [0.0, 1.53], ['0', '1'])
    """
    if rows not in state.meta.row_stat:
        raise ValueError(f"rows must be one of {list(state.meta.row_stat)} for this source, got {rows!r}")
    theme = resolve_theme(theme)
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        if ax is None:
            fig = new_figure((max(4.0, 0.12 * state.meta.shape[0] * (state.meta.shape[1] + 1)) * scale, 3.2 * scale))
            ax = fig.add_subplot()
        _entropy_panel(state, ax, rows, COLORBLIND[0], 0)
        ax.set_title(entropy_title(state, rows))
        ax.figure.tight_layout()
    return ax.figure


def _entropy_panel(state: EntropyBarsState, ax: Any, rows: str, color: str, first: int) -> None:
    """One row choice's bars (a group of heads per layer, layers numbered from ``first``), the page's y axis and the
    uniform baseline."""
    values = entropy_values(state, rows)
    n_layers, n_heads = state.meta.shape
    x = (np.arange(n_layers)[:, None] * (n_heads + 1) + np.arange(n_heads)[None, :]).ravel()
    centres = np.arange(n_layers) * (n_heads + 1) + (n_heads - 1) / 2
    if values is not None:
        ax.plot(centres, np.nanmean(values, axis=1), color="0.15", lw=1.5)  # the layer means, as Clark et al. draw
        ax.bar(x, np.nan_to_num(values.ravel(), nan=0.0), width=0.85, color=color, linewidth=0)
    ticks, top = entropy_scale(state, rows)
    base = state.meta.baselines.get(rows)
    if base is not None:
        ax.axhline(base, ls="--", color="0.4", lw=1, label=f"uniform attention ({base:.2f} nats)")
        ax.legend(loc="lower right", frameon=False, fontsize="small")
    ax.set_ylim(0, top)
    ax.set_yticks(ticks)
    ax.set_xticks(centres, [str(i + first) for i in range(n_layers)])
    ax.set_xlabel(f"layer (each bar one head, 0–{n_heads - 1})" if first == 0 else "layer (1-based, as in the paper)")
    ax.set_ylabel("avg. attention entropy (nats)")
    ax.set_title(entropy_title(state, rows))


@lecture_fit
def plot_head_clusters(embedding: Any, *, color_by: str | np.ndarray = "layer", stats: Any = None,
                       annotate: bool = False, title: str | None = None, paper_numbers: bool = False,
                       words: bool = False, seed: int = 0, theme: str | None = None) -> Any:
    """Figure 6: the heads in 2-D (metric MDS of Jensen–Shannon distances), coloured by layer or by a statistic.

    Parameters
    ----------
    embedding : AttentionResult, list of them, CorpusStats or DataFrame
        What :class:`attnwidgets.HeadClusterMap` takes: one result or several (distances averaged over them),
        CorpusStats made with ``distances=True``, or an embedding DataFrame with columns layer, head, x, y
        (:func:`attnwidgets.analysis.head_embedding`).
    color_by : "layer", a statistic name, or an (L, H) array
        A statistic name is looked up in ``stats``, or in the statistics of ``embedding`` when it holds attention
        or is CorpusStats.
    stats : CorpusStats, tidy DataFrame or dict, optional
        Statistics to colour by, when ``embedding`` is a DataFrame.
    annotate : bool
        Write "layer-head" beside each point.
    title : str, optional
    paper_numbers : bool
        Number layers and heads from 1, as the paper does (default: from 0, as the widgets do).
    words : bool
        Word-level distances and statistics (attention sources only).
    seed : int
        MDS random state (the widget's ``seed``: the same seed gives the same map).
    theme : str, optional
        "light" or "lecture" (larger); default the one :func:`attnwidgets.set_theme` chose.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import attnwidgets as aw
    >>> from attnwidgets.analysis import head_distances, head_embedding, surface_stats
    >>> r = aw.run("The cat sat on the mat.")
    >>> emb = head_embedding(head_distances([r]), n_heads=r.attention.shape[1])    # 72 heads in 2-D
    >>> fig = plot_head_clusters(emb, color_by="entropy", stats=surface_stats(r))
    >>> len(fig.axes[0].collections[0].get_offsets())                              # one point per head
    72
    """
    source, embedding = embedding, head_points(embedding, words=words, seed=seed, who="plot_head_clusters")
    if stats is None and embedding_frame(source) is None:  # attention or CorpusStats bring their own statistics
        stats = source
    n_layers, n_heads = int(embedding["layer"].max()) + 1, int(embedding["head"].max()) + 1
    if not isinstance(color_by, str):
        table = HeadStats({"value": np.asarray(color_by, dtype=np.float64)}, "heads")
        color_by = "value"
    elif stats is None:
        if color_by != "layer":
            raise ValueError(f"pass stats= to colour by the statistic {color_by!r}")
        table = HeadStats({"layer": np.repeat(np.arange(n_layers, dtype=float)[:, None], n_heads, 1)}, "heads")
    else:
        table = head_stats(stats, words=words and stats is source, who="plot_head_clusters")
        if color_by != "layer":
            _need(table.values, (color_by,))
    # The page's own state (viewdata.views.head_cluster_map): its points, colours and title are what is drawn.
    state = head_cluster_map_state(table, embedding, can_words=False, tokens=[])
    return _clusters(state, None, color_by, theme, None, annotate, int(paper_numbers), title)


@lecture_fit
def paint_head_cluster_map(state: HeadClusterMapState, ax: Any = None, *, color: str = "layer",
                           theme: str | None = None, cmap: str | None = None, annotate: bool = False) -> Any:
    """Draw a HeadClusterMap state (:func:`attnwidgets.viewdata.views.head_cluster_map.head_cluster_map_state`) as
    the page draws it: every head at its MDS point, coloured by ``color`` (the widget's trait: "layer" or a
    statistic, on the page's scale, :func:`~attnwidgets.viewdata.views.head_cluster_map.cluster_colors`), under the
    page's title (:func:`~attnwidgets.viewdata.views.head_cluster_map.cluster_title`).

    Examples
    --------
    >>> import pandas as pd
    >>> stats = HeadStats({"layer": np.zeros((1, 2)), "sep": np.array([[0.2, 0.6]])}, "demo")
    >>> xy = pd.DataFrame({"layer": [0, 0], "head": [0, 1], "x": [0.0, 1.0], "y": [1.0, 0.0]})
    >>> state = head_cluster_map_state(stats, xy, can_words=False, tokens=[])
    >>> ax = paint_head_cluster_map(state, color="sep").axes[0]
    >>> " ".join(ax.get_title().split()), [round(v, 3) for v in ax.collections[0].get_clim()]
    ('demo · head map, coloured by attention to [SEP]', [0.0, 0.6])
    """
    return _clusters(state, ax, color, theme, cmap, annotate, 0, None)


def _clusters(state: HeadClusterMapState, ax: Any, color: str, theme: str | None, cmap: str | None,
              annotate: bool, first: int, title: str | None) -> Any:
    """:func:`paint_head_cluster_map`, with layers and heads numbered from ``first`` and the title replaceable."""
    theme = resolve_theme(theme)
    values, (lo, hi) = cluster_colors(state, color)
    if color == "layer":  # layers numbered from ``first`` (the paper's 1)
        values, lo, hi = values + first, lo + first, hi + first
    points = state.payload.points
    n_heads = state.meta.shape[1]
    label = ("layer" if first == 0 else "layer (1-based)") if color == "layer" else state.meta.labels.get(color, color)
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        if ax is None:
            fig = new_figure((5.0 * scale, 4.2 * scale))
            ax = fig.add_subplot()
        dots = ax.scatter(points[:, 0], points[:, 1], c=values, cmap=cmap or ("viridis" if color == "layer" else
                          "magma"), vmin=lo, vmax=hi, s=36 * scale, edgecolors="white", linewidths=0.5)
        ax.figure.colorbar(dots, ax=ax, label=label)
        if annotate:
            for k, (x, y) in enumerate(points):
                ax.annotate(f"{k // n_heads + first}-{k % n_heads + first}", (x, y), fontsize=6 * scale,
                            xytext=(2, 2), textcoords="offset points")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title or cluster_title(state, color))
        ax.figure.tight_layout()
    return ax.figure
