"""Static twin of HeadView: the line view (queries left, keys right, one colour per head) as a matplotlib Figure."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..result import AttentionResult
from ..viewdata.checks import check_head, check_kind, check_layer, check_query
from ..viewdata.labels import axis_segments, token_label
from ..viewdata.lines import filter_mask
from .style import LECTURE_SCALE, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# The same categorical palette as js/src/shared/colors.ts (Okabe-Ito first), so a head keeps its colour.
HEAD_COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
                "#8c564b", "#7f7f7f", "#bcbd22", "#17becf", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]


def plot_head_view(
    result: AttentionResult,
    layer: int = 0,
    heads: list[int] | None = None,
    *,
    kind: str = "self",
    words: bool = False,
    sentence_filter: str = "all",
    queries: list[int] | None = None,
    min_weight: float = 0.02,
    theme: str | None = None,
) -> Figure:
    """Draw one layer's heads as lines from query tokens (left) to key tokens (right), opacity = weight.

    Parameters
    ----------
    result : AttentionResult
    layer : int
    heads : list[int], optional
        Heads to draw (default all), each in its own colour (the widget's colours). ``layer`` and ``heads`` are
        checked as the widget checks them (:mod:`attnwidgets.viewdata.checks`).
    kind : str
        "self", or "encoder" / "decoder" / "cross" (target left, source right).
    words : bool
        Word-level attention (:func:`attnwidgets.analysis.word_level`).
    sentence_filter : str
        "all", "AA", "AB", "BA" or "BB" (see :func:`attnwidgets.viewdata.lines.filter_mask`).
    queries : list[int], optional
        Draw only the lines from these query positions (as selecting tokens in the widget does).
    min_weight : float
        Lines lighter than this are left out.
    theme : str, optional
        "light" or "lecture" (larger fonts); default the one :func:`attnwidgets.set_theme` chose.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> r = aw.AttentionResult.from_arrays(np.eye(3, dtype=np.float32)[None, None], ["[CLS]", "hi", "[SEP]"])
    >>> len(aw.plot_head_view(r).axes[0].lines)
    3
    """
    kind = check_kind(result, kind)
    theme = resolve_theme(theme)
    n_layers, n_heads = (int(s) for s in result.attention_of(kind)[0].shape[:2])  # type: ignore[arg-type]
    layer = check_layer(layer, n_layers)
    heads = list(range(n_heads)) if heads is None else [check_head(h, n_heads, allow_mean=False) for h in heads]
    if words:
        from ..analysis.words import word_level

        result = word_level(result)
    attention, qtok, ktok = result.attention_of(kind)  # type: ignore[arg-type]
    a = attention[layer]  # [head, query, key]
    keep = filter_mask(*axis_segments(result, kind), sentence_filter)
    if queries is not None:
        rows = np.zeros(len(qtok), bool)
        rows[[check_query(q, len(qtok)) for q in queries]] = True
        keep &= rows[:, None]
    n = max(len(qtok), len(ktok))
    font = 15 if theme == "lecture" else 9
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    fig = new_figure((5.5 * scale, max(2.5, 0.22 * n + 1) * scale))
    ax = fig.add_subplot()
    for hd in heads:
        colour = HEAD_COLOURS[hd % len(HEAD_COLOURS)]
        qs, ks = np.nonzero((a[hd] >= min_weight) & keep)
        for q, k in zip(qs.tolist(), ks.tolist()):
            ax.plot([0, 1], [q, k], color=colour, alpha=float(min(1.0, a[hd, q, k])), linewidth=1.5)
    for i, t in enumerate(qtok):
        ax.text(-0.03, i, token_label(t, 20), ha="right", va="center", fontsize=font,
                color="#1f2328" if keep[i].any() or sentence_filter == "all" else "#b8bec6")
    for j, t in enumerate(ktok):
        ax.text(1.03, j, token_label(t, 20), ha="left", va="center", fontsize=font,
                color="#1f2328" if keep[:, j].any() or sentence_filter == "all" else "#b8bec6")
    ax.set_xlim(-0.45, 1.45)
    ax.set_ylim(n - 0.5, -0.5)
    ax.axis("off")
    shown = ", ".join(str(h) for h in heads) if len(heads) <= 6 else f"{len(heads)} heads"
    ax.set_title(f"{result.model.name} · {kind} · layer {layer} · heads {shown}", fontsize=font + 1)
    fig.tight_layout()
    return fig
