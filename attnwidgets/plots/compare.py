"""Static twin of AttentionCompare: A | B (or B − A on a diverging scale centred on 0) and the per-head summary
grid, as one matplotlib Figure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.compare import SUMMARIES
from ..viewdata.compare import COMPARE_SHOW, compare_head, compare_labels, make_comparison
from ..viewdata.labels import token_label
from .style import lecture_fit, lecture_fonts, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['B − A (aligned tokens)', 'Jensen–Shannon divergence (bits)']
    """
    if show not in COMPARE_SHOW:
        raise ValueError(f"show must be one of {list(COMPARE_SHOW)}, got {show!r}")
    extra = dict(extra or {})
    if summary not in SUMMARIES and summary not in extra:
        raise ValueError(f"summary must be one of {[*SUMMARIES, *extra]}, got {summary!r}")
    c = make_comparison(a, b, kind, words=words, who="plot_compare")
    theme = resolve_theme(theme)
    with lecture_fonts(theme):
        return _draw(c, layer, head, show, summary, theme, cmap, diverging, extra)


def _draw(c: Any, layer: int, head: int, show: str, summary: str, theme: str, cmap: str | None,
          diverging: str | None, extra: dict[str, tuple[str, Any]]) -> Figure:
    shown = compare_head(c, layer, head)
    labels = compare_labels(c)
    kind = c.kind
    big = theme == "lecture"
    font = 15 if big else 9
    signed = summary in extra
    values = np.asarray(extra[summary][1], dtype=np.float64) if signed else c.summary(summary)
    n = max(len(labels["a"][0]), len(labels["b"][0]))
    side = min(7.0, max(2.6, 0.32 * n + 1.2)) * (1.25 if big else 1.0)
    panels = 1 if show == "diff" else 2
    L, H = c.shape
    grid_w = min(6.0, max(2.5, 0.3 * H + 1.0)) * (1.25 if big else 1.0)
    fig = new_figure((side * panels + grid_w + 1.6, max(side, grid_w * L / max(H, 1)) + 1.0), layout="constrained")
    widths = [side] * panels + [grid_w]
    axes = fig.subplots(1, panels + 1, gridspec_kw={"width_ratios": widths})
    if show == "diff":
        q, k = labels["aligned"]
        d = max(shown.dmax, 1e-12)
        im = axes[0].imshow(np.ma.masked_invalid(shown.diff), cmap=diverging or _DIVERGING[theme], vmin=-d, vmax=d)
        _ticks(axes[0], q, k, None, None, font)
        axes[0].set_title("B − A (aligned tokens)", fontsize=font + 1)
        bar = fig.colorbar(im, ax=axes[0], shrink=0.7)
        bar.set_label("B − A" + ("" if shown.dmax > 0 else " (zero everywhere)"), fontsize=font)
    else:
        for ax, m, side_labels, ok, name in (
                (axes[0], shown.a, labels["a"], labels["a_matched"], "A"),
                (axes[1], shown.b, labels["b"], labels["b_matched"], "B")):
            im = ax.imshow(np.ma.masked_invalid(m), cmap=cmap or _CMAPS[theme], vmin=0.0, vmax=shown.vmax)
            _ticks(ax, side_labels[0], side_labels[1], ok[0], ok[1], font)
            who = c.a if name == "A" else c.b
            ax.set_title(f"{name} · {who.model.name}" + (" · ablated" if who.ablation is not None else ""),
                         fontsize=font + 1)
        fig.colorbar(im, ax=list(axes[:2]), shrink=0.7).set_label("attention weight", fontsize=font)
    g = axes[-1]
    if signed:
        vmax = max(float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 0.0, 1e-12)
        img = g.imshow(np.ma.masked_invalid(values), cmap=diverging or _DIVERGING[theme], vmin=-vmax, vmax=vmax,
                       aspect="equal")
    else:
        gcmap = (cmap or _CMAPS[theme]) + ("" if summary == "js" else "_r")
        img = g.imshow(np.ma.masked_invalid(values), cmap=gcmap, aspect="equal")
    g.set_xlabel("head", fontsize=font)
    g.set_ylabel("layer", fontsize=font)
    g.set_title(extra[summary][0] if signed else SUMMARIES[summary], fontsize=font + 1)
    if head >= 0:
        g.add_patch(_outline(head, layer))
    fig.colorbar(img, ax=g, shrink=0.7)
    which = "mean of heads" if head == -1 else f"head {head}"
    fig.suptitle(f"{kind} attention · layer {layer} · {which}", fontsize=font + 2)
    return fig


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
