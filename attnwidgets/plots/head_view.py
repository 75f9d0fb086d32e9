"""Static twin of HeadView: the line view (queries left, keys right, one colour per head) as a matplotlib Figure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..result import AttentionResult
from ..viewdata.checks import check_head, check_kind, check_layer, check_query
from ..viewdata.labels import axis_segments, axis_tokens, token_label
from ..viewdata.lines import filter_mask, window_heads
from ..viewdata.windows import check_window, default_window, is_long
from .style import LECTURE_SCALE, lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# The same categorical palette as js/src/draw/colors.ts (Okabe-Ito first), so a head keeps its colour.
HEAD_COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
                "#8c564b", "#7f7f7f", "#bcbd22", "#17becf", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]


@lecture_fit
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
    window: tuple[int, int] | list[int] | None = None,
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
    window : (start, stop), optional
        Draw only the query tokens ``start..stop-1`` (and those keys), plus the strongest "far" keys outside them,
        as the widget's window does (:mod:`attnwidgets.viewdata.windows`). A long input (more than 512 tokens, or
        a lazy result) is always drawn in a window: by default 64 tokens from the start, or around ``queries``.
        Its dense attention is never built.
    theme : str, optional
        "light" or "lecture" (larger fonts); default the one :func:`attnwidgets.set_theme` chose.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> r = aw.AttentionResult.from_arrays(np.eye(3, dtype=np.float32)[None, None], ["[CLS]", "hi", "[SEP]"])
    >>> len(aw.plots.plot_head_view(r).axes[0].lines)
    3
    """
    kind = check_kind(result, kind)
    theme = resolve_theme(theme)
    n_layers, n_heads = result.attention_shape(kind)[:2]  # type: ignore[arg-type]
    layer = check_layer(layer, n_layers)
    heads = list(range(n_heads)) if heads is None else [check_head(h, n_heads, allow_mean=False) for h in heads]
    n_q = result.attention_shape(kind)[2]  # type: ignore[arg-type]
    if window is not None or is_long(n_q, result.is_lazy):
        if words:
            raise ValueError("word level is not drawn in a window; use words=False (or a text of up to 512 tokens)")
        win = check_window(window, n_q) if window is not None else default_window(n_q, result.is_lazy, queries or [])
        return _plot_window(result, kind, layer, heads, win, sentence_filter, queries, min_weight, theme)
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
    fig, ax, font = _lines(a, heads, keep, min_weight, list(range(len(ktok))), n, theme)
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


def _lines(a: np.ndarray, heads: list[int], keep: np.ndarray, min_weight: float, y_key: list[int], n: int,
           theme: str) -> tuple[Figure, Any, int]:
    """The figure, its axes and font size, with one line per (head, query, key) kept: query ``q`` at height ``q`` on
    the left, key ``k`` at height ``y_key[k]`` on the right, as opaque as its weight."""
    font = 15 if theme == "lecture" else 9
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    fig = new_figure((5.5 * scale, max(2.5, 0.22 * n + 1) * scale))
    ax = fig.add_subplot()
    for hd in heads:
        colour = HEAD_COLOURS[hd % len(HEAD_COLOURS)]
        qs, ks = np.nonzero((a[hd] >= min_weight) & keep)
        for q, k in zip(qs.tolist(), ks.tolist()):
            ax.plot([0, 1], [q, y_key[k]], color=colour, alpha=float(min(1.0, a[hd, q, k])), linewidth=1.5)
    return fig, ax, font


def _plot_window(result: AttentionResult, kind: str, layer: int, heads: list[int], window: tuple[int, int],
                 sentence_filter: str, queries: list[int] | None, min_weight: float, theme: str) -> Figure:
    """plot_head_view of a window: its queries, its keys, then (after a gap) the far keys, labelled ``#position``."""
    a, info = window_heads(result, kind, layer, window, max(0.0, min_weight))
    q0, q1 = info["q"]
    k0, k1 = info["k"]
    far = info["far"]
    qtok_all, ktok_all = axis_tokens(result, kind)
    qseg_all, kseg_all = axis_segments(result, kind)
    cols = [*range(k0, k1), *far]
    qtok, ktok = qtok_all[q0:q1], [ktok_all[k] for k in cols]
    keep = filter_mask(qseg_all[q0:q1], [kseg_all[k] for k in cols], sentence_filter)
    if queries is not None:
        rows = np.zeros(len(qtok), bool)
        picked = [check_query(q, len(qtok_all)) - q0 for q in queries]
        rows[[q for q in picked if 0 <= q < len(qtok)]] = True
        keep &= rows[:, None]
    n_win = k1 - k0
    gap = 1 if far else 0
    y_key = [j if j < n_win else j + gap for j in range(len(cols))]
    n = max(len(qtok), len(cols) + gap)
    fig, ax, font = _lines(a, heads, keep, min_weight, y_key, n, theme)
    for i, t in enumerate(qtok):
        ax.text(-0.03, i, f"{q0 + i} {token_label(t, 20)}", ha="right", va="center", fontsize=font, color="#1f2328")
    for j, k in enumerate(cols):
        far_key = j >= n_win
        label = f"#{k} {token_label(ktok[j], 20)}" if far_key else f"{k} {token_label(ktok[j], 20)}"
        ax.text(1.03, y_key[j], label, ha="left", va="center", fontsize=font,
                color="#6e7781" if far_key else "#1f2328", style="italic" if far_key else "normal")
    if far:
        ax.text(1.03, n_win, "far keys (outside the window):", ha="left", va="center", fontsize=font - 1,
                color="#6e7781")
    ax.set_xlim(-0.55, 1.55)
    ax.set_ylim(n - 0.5, -0.5)
    ax.axis("off")
    shown = ", ".join(str(h) for h in heads) if len(heads) <= 6 else f"{len(heads)} heads"
    ax.set_title(f"{result.model.name} · {kind} · layer {layer} · heads {shown} · tokens {q0}–{q1 - 1} of "
                 f"{info['n'][0]}", fontsize=font + 1)
    fig.tight_layout()
    return fig
