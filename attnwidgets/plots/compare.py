"""Static twin of AttentionCompare: A | B (or B − A on a diverging scale centred on 0) and the per-head summary
grid, as one matplotlib Figure.

:func:`paint_compare` draws the view's state (:func:`attnwidgets.viewdata.views.compare.compare_state`, what the page
draws); :func:`plot_compare` builds that state from two results and the view's options, then paints it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.compare import SUMMARIES
from ..viewdata.compare import COMPARE_SHOW, make_comparison
from ..viewdata.labels import token_label
from ..viewdata.scales import stat_range
from ..viewdata.views.compare import CompareOptions, CompareState, compare_sides, compare_state, compare_title
from .style import lecture_fit, lecture_fonts, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["paint_compare", "plot_compare"]

_CMAPS = {"light": "Blues", "lecture": "viridis"}
_DIVERGING = {"light": "RdBu_r", "lecture": "PuOr_r"}
_UNALIGNED = "#a8a8a8"


@lecture_fit
def plot_compare(a: Any, b: Any, layer: int = 0, head: int = 0, *, kind: str = "self", words: bool = False,
                 show: str = "side", summary: str = "js", theme: str | None = None, cmap: str | None = None,
                 diverging: str | None = None, extra: Mapping[str, tuple[str, Any]] | None = None) -> Figure:
    """Compare two results' attention for one head (``head=-1``: the layer's mean), with every head's summary.

    Parameters
    ----------
    a, b : AttentionResult
        Aligned by token text as :func:`attnwidgets.analysis.compare_attention` aligns them (B − A is the
        difference).
    layer, head : int
    kind : str
    words : bool
        Word level (pieces merged), as the widget's ``words``.
    show : {"side", "diff"}
        Both maps whole (unaligned token labels grey), or B − A over the aligned tokens on a symmetric diverging
        scale (blue below 0, red above in the light theme; purple/orange in the lecture theme).
    summary : {"js", "cosine"} or a name of ``extra``
        The grid's measure.
    theme, cmap, diverging : str, optional
        Theme, the maps' and the difference's matplotlib colour maps.
    extra : dict, optional
        Signed per-head summaries, {name: (label, [layer, head] values)}, drawn on the diverging scale centred on 0
        (a PatchingView's patching effect).

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> a = aw.AttentionResult.from_arrays(np.eye(3, dtype=np.float32), ["The", "cat", "sat"])
    >>> b = aw.AttentionResult.from_arrays(np.full((3, 3), 1 / 3, np.float32), ["The", "cats", "sat"])
    >>> fig = aw.plots.plot_compare(a, b, show="diff")
    >>> fig._suptitle.get_text(), [ax.get_title() for ax in fig.axes[:2]]     # the page's title and panels
    ('arrays: A vs B · head 0/0', ['B − A', 'Jensen–Shannon divergence (bits)'])
    """
    if show not in COMPARE_SHOW:
        raise ValueError(f"show must be one of {list(COMPARE_SHOW)}, got {show!r}")
    extra = dict(extra or {})
    if summary not in SUMMARIES and summary not in extra:
        raise ValueError(f"summary must be one of {[*SUMMARIES, *extra]}, got {summary!r}")
    c = make_comparison(a, b, kind, words=words, who="plot_compare")
    # The page's own state (viewdata.views.compare): its maps, scales, labels and title are what the picture draws.
    state = compare_state(c, (a, b), CompareOptions(layer, head, words, extra=extra))
    return _draw(state, None, show, summary, theme, cmap, diverging)


@lecture_fit
def paint_compare(state: CompareState, ax: Any = None, *, show: str = "side", summary: str = "js",
                  theme: str | None = None, cmap: str | None = None, diverging: str | None = None) -> Figure:
    """Draw a comparison's state (:func:`attnwidgets.viewdata.views.compare.compare_state`) as the page draws it: A
    and B on one scale (0 to ``payload.vmax``) or B − A on a symmetric one (± ``payload.dmax``), every head's
    ``summary`` in a grid with the head on screen framed, and the page's title
    (:func:`~attnwidgets.viewdata.views.compare.compare_title`).

    Parameters
    ----------
    state : CompareState
    ax : matplotlib Axes, optional
        Split into the maps and the grid and draw there, instead of a new figure.
    show, summary, theme, cmap, diverging
        As :func:`plot_compare`'s (``show`` and ``summary`` are the widget's traits of those names).

    Examples
    --------
    >>> from attnwidgets.result import AttentionResult
    >>> from attnwidgets.viewdata.compare import make_comparison
    >>> a = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["x", "y"])
    >>> fig = paint_compare(compare_state(make_comparison(a, a), (a, a), CompareOptions()))
    >>> fig._suptitle.get_text(), [ax.get_title() for ax in fig.axes[:2]]
    ('arrays: A vs B · head 0/0', ['A', 'B'])
    """
    return _draw(state, ax, show, summary, theme, cmap, diverging)


def _draw(state: CompareState, ax: Any, show: str, summary: str, theme: str | None, cmap: str | None,
          diverging: str | None) -> Figure:
    if show not in COMPARE_SHOW:
        raise ValueError(f"show must be one of {list(COMPARE_SHOW)}, got {show!r}")
    meta, payload = state.meta, state.payload
    if summary not in meta.summaries:
        raise ValueError(f"summary must be one of {meta.summaries}, got {summary!r}")
    theme = resolve_theme(theme)
    with lecture_fonts(theme):
        font = 15 if theme == "lecture" else 9
        fig, axes = _axes(state, ax, show, theme)
        sides = compare_sides(state, show)
        looks = {"a": (payload.a, meta.labels.a, meta.labels.a_matched),
                 "b": (payload.b, meta.labels.b, meta.labels.b_matched),
                 "diff": (payload.diff, meta.labels.aligned, (None, None))}
        for panel, (which, name) in zip(axes, sides):
            matrix, (q, k), (q_ok, k_ok) = looks[which]
            d = max(payload.dmax, 1e-12)
            im = panel.imshow(np.ma.masked_invalid(matrix), cmap=diverging or _DIVERGING[theme] if which == "diff"
                              else cmap or _CMAPS[theme], vmin=-d if which == "diff" else 0.0,
                              vmax=d if which == "diff" else payload.vmax)
            _ticks(panel, q, k, q_ok, k_ok, font)
            panel.set_title(name, fontsize=font + 1)
        label = ("B − A" + ("" if payload.dmax > 0 else " (zero everywhere)")) if show == "diff" \
            else "attention weight"
        fig.colorbar(im, ax=list(axes[:len(sides)]), shrink=0.7).set_label(label, fontsize=font)
        _grid(state, axes[-1], summary, theme, cmap, diverging, font)
        fig.suptitle(compare_title(state), fontsize=font + 2)
    return fig


def _axes(state: CompareState, ax: Any, show: str, theme: str) -> tuple[Figure, list[Any]]:
    """The figure and its axes: the maps then the grid (a new figure, or ``ax``'s place split in as many)."""
    big = 1.25 if theme == "lecture" else 1.0
    n = max(len(state.meta.labels.a[0]), len(state.meta.labels.b[0]))
    side = min(7.0, max(2.6, 0.32 * n + 1.2)) * big
    n_layers, n_heads = state.meta.shape
    grid_w = min(6.0, max(2.5, 0.3 * n_heads + 1.0)) * big
    widths = [side] * (1 if show == "diff" else 2) + [grid_w]
    if ax is None:
        fig = new_figure((sum(widths) + 1.6, max(side, grid_w * n_layers / max(n_heads, 1)) + 1.0),
                         layout="constrained")
        return fig, list(fig.subplots(1, len(widths), gridspec_kw={"width_ratios": widths}))
    fig = ax.figure
    cells = ax.get_subplotspec().subgridspec(1, len(widths), width_ratios=widths)
    ax.remove()
    return fig, [fig.add_subplot(cell) for cell in cells]


def _grid(state: CompareState, g: Any, summary: str, theme: str, cmap: str | None, diverging: str | None,
          font: int) -> None:
    """Every head's ``summary`` on the page's scale (``gridScale``: js from 0; a signed one symmetric about 0), the
    head on screen framed."""
    meta = state.meta
    values = state.payload.summary[meta.summaries.index(summary)]
    if summary in meta.signed:
        top = max(float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 0.0, 1e-12)
        lo, hi, gcmap = -top, top, diverging or _DIVERGING[theme]
    else:
        lo, hi = stat_range(values)
        if summary == "js":
            lo, hi = 0.0, max(hi, 1e-9)
        gcmap = (cmap or _CMAPS[theme]) + ("" if summary == "js" else "_r")
    img = g.imshow(np.ma.masked_invalid(values), cmap=gcmap, vmin=lo, vmax=hi, aspect="equal")
    g.set_xlabel("head", fontsize=font)
    g.set_ylabel("layer", fontsize=font)
    g.set_title(meta.summary_labels[summary], fontsize=font + 1)
    layer, head = (int(x) for x in state.payload.key.split("/")[:2])
    if head >= 0:
        g.add_patch(_outline(head, layer))
    g.figure.colorbar(img, ax=g, shrink=0.7, ticks=[lo, hi])  # its two ends, as the page's legend


def _ticks(ax: Any, queries: list[str], keys: list[str], q_ok: list[bool] | None, k_ok: list[bool] | None,
           font: int) -> None:
    show = max(len(queries), len(keys)) <= 80
    ax.set_xticks(range(len(keys)) if show else [])
    ax.set_yticks(range(len(queries)) if show else [])
    if not show:
        return
    ax.set_xticklabels([token_label(t) for t in keys], rotation=90, fontsize=font)
    ax.set_yticklabels([token_label(t) for t in queries], fontsize=font)
    ax.xaxis.tick_top()
    for ticks, ok in ((ax.get_xticklabels(), k_ok), (ax.get_yticklabels(), q_ok)):
        if ok is not None:
            for tick, matched in zip(ticks, ok):
                if not matched:
                    tick.set_color(_UNALIGNED)


def _outline(head: int, layer: int) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, edgecolor="#d1242f", linewidth=2.5)
