"""Static twin of HeadView: the line view (queries left, keys right, one colour per head) as a matplotlib Figure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..result import AttentionResult
from ..viewdata.checks import check_head, check_kind, check_layer, check_query
from ..viewdata.labels import token_label
from ..viewdata.lines import SENTENCE_FILTERS, unpack
from ..viewdata.views.head_view import (
    HeadViewOptions,
    HeadViewState,
    head_view_columns,
    head_view_state,
    head_view_title,
    line_threshold,
)
from ..viewdata.windows import check_window, default_window, is_long
from .style import LECTURE_SCALE, lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["HEAD_COLOURS", "paint_head_view", "plot_head_view"]

# The same categorical palette as js/src/draw/colors.ts (Okabe-Ito first), so a head keeps its colour.
HEAD_COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
                "#8c564b", "#7f7f7f", "#bcbd22", "#17becf", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]

#: The page's ink by theme (js/src/shared/theme.ts): text, muted text, the selection's accent; and a greyed token.
_INK = {"light": ("#1f2328", "#6e7781", "#d1242f"), "lecture": ("#000000", "#333333", "#d55e00")}
_GREYED = "#b8bec6"
_STEPS = 16  # the page's opacity steps per head (paint.ts STEPS)


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
    """Draw one layer's heads as lines from query tokens (left) to key tokens (right), opacity = weight: the head
    view's state (:func:`~attnwidgets.viewdata.views.head_view.head_view_state`) drawn by :func:`paint_head_view`.

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
    >>> len(aw.plots.plot_head_view(r).axes[0].collections[0].get_segments())
    3
    """
    kind = check_kind(result, kind)
    n_layers, n_heads, n_q = result.attention_shape(kind)[:3]  # type: ignore[arg-type]
    layer = check_layer(layer, n_layers)
    heads = list(range(n_heads)) if heads is None else [check_head(h, n_heads, allow_mean=False) for h in heads]
    if sentence_filter not in SENTENCE_FILTERS:
        raise ValueError(f"unknown sentence filter {sentence_filter!r}; choose one of {list(SENTENCE_FILTERS)}")
    win = None
    if window is not None or is_long(n_q, result.is_lazy):
        if words:
            raise ValueError("word level is not drawn in a window; use words=False (or a text of up to 512 tokens)")
        win = check_window(window, n_q) if window is not None else default_window(n_q, result.is_lazy, queries or [])
    state = head_view_state(result, HeadViewOptions(kind, layer, words, win, max(0.0, min_weight)))
    if queries is not None:
        n_rows = len(head_view_columns(state).tokens[0]) if words else n_q
        queries = [check_query(q, n_rows) for q in queries]
        if not queries:  # no query selected: no lines (the page draws every row for an empty selection)
            heads = []
    return _paint(state, None, heads, sentence_filter, queries or [], min_weight, theme)


@lecture_fit
def paint_head_view(state: HeadViewState, ax: Any = None, *, heads: Sequence[int] | None = None,
                    sentence_filter: str = "all", selected: Sequence[int] = (), min_weight: float = 0.02,
                    theme: str | None = None) -> Figure:
    """Draw a HeadView state (:func:`attnwidgets.viewdata.views.head_view.head_view_state`) as the page draws it:
    the layer its payload holds as lines from the query tokens (left) to the key tokens (right), one colour per
    head in ``heads`` (the widget's trait; default every head) and opacity by weight in the page's 16 steps, only
    lines of at least ``min_weight`` (0.1 for more than 128 rows and nothing selected) that the
    ``sentence_filter`` keeps, from the ``selected`` query positions alone when any are selected (marked in the
    accent colour); under the page's title
    (:func:`~attnwidgets.viewdata.views.head_view.head_view_title`), with the heads drawn named under the lines as
    the page's swatches name them.

    Examples
    --------
    >>> from attnwidgets.result import AttentionResult
    >>> r = AttentionResult.from_arrays(np.full((2, 3, 4, 4), 0.25, np.float32), list("abcd"))
    >>> ax = paint_head_view(head_view_state(r, HeadViewOptions(layer=1)), heads=[0, 2], selected=[1]).axes[0]
    >>> ax.get_title(), len(ax.collections), [len(c.get_segments()) for c in ax.collections]
    ('arrays · self attention · layer 1', 2, [4, 4])
    """
    return _paint(state, ax, heads, sentence_filter, selected, min_weight, theme)


def _paint(state: HeadViewState, ax: Any, heads: Sequence[int] | None, sentence_filter: str, selected: Sequence[int],
           min_weight: float, theme: str | None) -> Figure:
    """:func:`paint_head_view` (which :func:`plot_head_view` calls too, fitted to the lecture box once)."""
    theme = resolve_theme(theme)
    fg, muted, accent = _INK.get(theme, _INK["light"])
    (queries, keys), (qseg, kseg), win = head_view_columns(state)
    a = unpack(state.payload.heads)  # [head, query, key]: weights under the payload's floor read 0
    heads = list(range(a.shape[0])) if heads is None else [h for h in heads if 0 <= h < a.shape[0]]
    q0 = win["q"][0] if win else 0
    rows = sorted({q - q0 for q in selected if 0 <= q - q0 < len(queries)})
    n_win = win["k"][1] - win["k"][0] if win else len(keys)
    gap = 1 if win and win["far"] else 0
    n = max(len(queries), len(keys) + gap, 1)
    y_key = np.array([j if j < n_win else j + gap for j in range(len(keys))], dtype=np.float64)
    keep = _kept(a.shape[1:], qseg, kseg, sentence_filter, rows)
    floor = line_threshold(n, min_weight, bool(rows))
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    font = 15 if theme == "lecture" else 9
    if ax is None:
        fig = new_figure((5.5 * scale, max(2.5, 0.22 * n + 1.3) * scale))
        ax = fig.add_subplot()
    _draw_lines(ax, a, heads, keep & (a >= floor) & (a > 0), y_key)
    sel = set(rows)
    for i, t in enumerate(queries):
        kept = sentence_filter == "all" or bool(np.isin(qseg[i], _sides(sentence_filter)[0]))
        ax.text(-0.03, i, token_label(t, 20), ha="right", va="center", fontsize=font,
                color=accent if i in sel else fg if kept else _GREYED, fontweight="bold" if i in sel else "normal")
        if win:
            ax.text(-0.45, i, str(q0 + i), ha="left", va="center", fontsize=font - 2, color=muted)
    for j, t in enumerate(keys):
        far = j >= n_win
        kept = sentence_filter == "all" or bool(np.isin(kseg[j], _sides(sentence_filter)[1]))
        ax.text(1.03, y_key[j], token_label(t, 24), ha="left", va="center", fontsize=font,
                color=muted if far else fg if kept else _GREYED)
        if win and not far:
            ax.text(1.45, y_key[j], str(win["k"][0] + j), ha="right", va="center", fontsize=font - 2, color=muted)
    if gap:
        ax.text(1.03, n_win, "far keys:", ha="left", va="center", fontsize=font - 1, color=muted)
    # a sentence pair: "A" / "B" and a bar along each segment's rows, outside both columns (paint.ts paintSegments)
    pair = not win and (1 in qseg[:len(queries)] or 1 in kseg[:len(keys)])
    if pair:
        _segments(ax, list(qseg[:len(queries)]), np.arange(len(queries), dtype=np.float64), -0.47, "left", font, fg,
                  muted)
        _segments(ax, list(kseg[:len(keys)]), y_key, 1.47, "right", font, fg, muted)
    ax.set_xlim(-0.55 if pair else -0.5 if win else -0.45, 1.55 if pair else 1.5 if win else 1.45)
    ax.set_ylim(n - 0.5, -0.5)
    ax.axis("off")
    _swatches(ax, heads, font)
    ax.set_title(head_view_title(state), fontsize=font + 1)
    ax.figure.tight_layout()
    return ax.figure  # type: ignore[no-any-return]


def _segments(ax: Any, seg: list[int], ys: np.ndarray, x: float, ha: str, font: float, fg: str, muted: str) -> None:
    """Each run of one segment: its letter at its first row and a muted bar along its rows, at ``x``."""
    start = 0
    for i in range(1, len(seg) + 1):
        if i < len(seg) and seg[i] == seg[start]:
            continue
        bar = x + (0.035 if ha == "left" else -0.035)
        ax.plot([bar, bar], [ys[start] - 0.35, ys[i - 1] + 0.35], color=muted, lw=2.5, solid_capstyle="butt")
        ax.text(x, ys[start], "B" if seg[start] else "A", ha=ha, va="center", fontsize=font, color=fg)
        start = i


def _sides(sentence_filter: str) -> tuple[list[int], list[int]]:
    """The query and key segments a sentence filter keeps (state.ts queryKept, keyKept)."""
    qs, ks = SENTENCE_FILTERS[sentence_filter]
    return [0, 1] if qs is None else [qs], [0, 1] if ks is None else [ks]


def _kept(shape: tuple[int, ...], qseg: Sequence[int], kseg: Sequence[int], sentence_filter: str,
          rows: list[int]) -> np.ndarray:
    """(queries, keys) bool: the lines the page draws: the sentence filter's (state.ts keeps), from the selected
    rows alone when any are selected (queriesDrawn)."""
    if sentence_filter not in SENTENCE_FILTERS:
        raise ValueError(f"unknown sentence filter {sentence_filter!r}; choose one of {list(SENTENCE_FILTERS)}")
    qs, ks = _sides(sentence_filter)
    keep = np.isin(np.asarray(qseg[:shape[0]]), qs)[:, None] & np.isin(np.asarray(kseg[:shape[1]]), ks)[None, :]
    if rows:
        picked = np.zeros(shape[0], bool)
        picked[rows] = True
        keep &= picked[:, None]
    return keep  # type: ignore[no-any-return]


def _draw_lines(ax: Any, a: np.ndarray, heads: list[int], keep: np.ndarray, y_key: np.ndarray) -> None:
    """One LineCollection per head: a line from query q (height q, left) to key k (height ``y_key[k]``, right) for
    every weight ``keep`` [head, query, key] keeps, its opacity the page's step (paint.ts: ``max(0.06, (step + 1) /
    16)``, step = weight in 16ths); a head alone in its colour darkened to 4.5 : 1 on white, as the page draws it."""
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_rgb

    for hd in heads:
        qs, ks = np.nonzero(keep[hd])
        weights = a[hd, qs, ks]
        step = np.minimum(_STEPS - 1, np.floor(np.minimum(1.0, weights) * _STEPS))
        colour = HEAD_COLOURS[hd % len(HEAD_COLOURS)]
        rgb = to_rgb(_readable(colour) if len(heads) == 1 else colour)
        rgba = np.column_stack([np.tile(rgb, (len(qs), 1)), np.maximum(0.06, (step + 1) / _STEPS)])
        segments = np.stack([np.column_stack([np.zeros(len(qs)), qs]), np.column_stack([np.ones(len(qs)), y_key[ks]])],
                            axis=1)
        ax.add_collection(LineCollection(list(segments), colors=rgba, linewidths=1.5, label=f"head {hd}"))


def _readable(hex_colour: str, ratio: float = 4.5) -> str:
    """draw/colors.ts readableOn on white: the colour mixed towards black until its contrast is at least ``ratio``."""
    from matplotlib.colors import to_hex, to_rgb

    def luminance(rgb: np.ndarray) -> float:
        lin = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
        return float(lin @ np.array([0.2126, 0.7152, 0.0722]))

    base = np.round(np.array(to_rgb(hex_colour)) * 255)
    for k in range(21):
        rgb = np.round(base * (1 - k / 20)) / 255
        if 1.05 / (luminance(rgb) + 0.05) >= ratio:
            return to_hex(tuple(rgb.tolist()))
    return "#000000"


def _swatches(ax: Any, heads: list[int], font: float) -> None:
    """The heads drawn, named in their colours under the lines as the page's swatches name them."""
    from matplotlib.lines import Line2D

    if not heads:
        return
    handles = [Line2D([], [], marker="s", linestyle="", markersize=font * 0.9,
                      color=HEAD_COLOURS[h % len(HEAD_COLOURS)]) for h in heads]
    ax.legend(handles, [str(h) for h in heads], loc="upper center", bbox_to_anchor=(0.5, 0.0),
              ncols=min(len(heads), 6), frameon=False, fontsize=font - 1, handletextpad=0.1,
              columnspacing=0.8, title="heads", title_fontsize=font - 1)
