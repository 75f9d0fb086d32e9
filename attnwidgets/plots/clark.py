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

from ..viewdata.head_stats import HeadStats, entropy_baseline, head_points, head_stats
from ..viewdata.views.entropy_bars import ROW_LABELS, ROWS
from ._measure import MEASURE_SUFFIX, measured
from .style import COLORBLIND, LECTURE_SCALE, lecture_fit, lecture_fonts, new_figure, resolve_theme

__all__ = ["plot_entropy_by_layer", "plot_head_clusters", "plot_token_attention"]

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
    the entropy of uniform attention as a dashed line.

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
    >>> [ax.get_title() for ax in fig.axes]
    ['entropy, all rows', 'entropy, [CLS] row']
    """
    theme = resolve_theme(theme)
    table = _table(measured(stats, measure), "plot_entropy_by_layer")
    arrays = table.values
    rows = list(rows) if rows is not None else ["all", "last" if table.causal else "cls"]
    unknown = [r for r in rows if r not in ROWS]
    if unknown or not rows:
        raise ValueError(f"rows must name some of {list(ROWS)}, got {rows!r}")
    _need(arrays, [ROWS[r] for r in rows])
    colors = COLORBLIND[:len(rows)]
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        fig = new_figure((3.5 * len(rows) * scale, 3.0 * scale))
        axes = fig.subplots(1, len(rows), sharey=True, squeeze=False)[0]
        for ax, row, color in zip(axes, rows, colors):
            _layer_dots(ax, arrays[ROWS[row]], color, int(paper_numbers))
            uniform = entropy_baseline(table, row)
            if uniform is not None:
                ax.axhline(uniform, ls="--", color="0.4", lw=1, label="uniform attention")
            ax.set_title(f"entropy, {ROW_LABELS[row]}{MEASURE_SUFFIX[measure]}")
        axes[0].set_ylabel("avg. attention entropy (nats)")
        if axes[-1].get_lines()[1:]:
            axes[-1].legend(loc="lower right", frameon=False)
        if title:
            fig.suptitle(title)
        fig.tight_layout()
    return fig


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
    theme = resolve_theme(theme)
    source, embedding = embedding, head_points(embedding, words=words, seed=seed, who="plot_head_clusters")
    if stats is None and embedding is not source:  # attention or CorpusStats bring their own statistics
        stats = source
    layer = embedding["layer"].to_numpy()
    head = embedding["head"].to_numpy()
    first = int(paper_numbers)
    if isinstance(color_by, str) and color_by == "layer":
        values, label, cmap = layer + first, "layer" if first == 0 else "layer (1-based)", "viridis"
    else:
        if isinstance(color_by, str):
            if stats is None:
                raise ValueError(f"pass stats= to colour by the statistic {color_by!r}")
            arrays = head_stats(stats, words=words and stats is source, who="plot_head_clusters").values
            _need(arrays, (color_by,))
            grid, label = arrays[color_by], color_by
        else:
            grid, label = np.asarray(color_by), "value"
        values, cmap = grid[layer, head], "magma"
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        fig = new_figure((5.0 * scale, 4.2 * scale))
        ax = fig.add_subplot()
        points = ax.scatter(embedding["x"], embedding["y"], c=values, cmap=cmap, s=36 * scale, edgecolors="white",
                            linewidths=0.5)
        fig.colorbar(points, ax=ax, label=label)
        if annotate:
            for x, y, lay, h in zip(embedding["x"], embedding["y"], layer, head):
                ax.annotate(f"{lay + first}-{h + first}", (x, y), fontsize=6 * scale, xytext=(2, 2),
                            textcoords="offset points")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title or "heads (MDS of Jensen–Shannon distances)")
        fig.tight_layout()
    return fig
