"""Static twin of QKStepThrough: one head's attention for one query, step by step, as a matplotlib Figure.

:func:`paint_qk` draws the view's state (:func:`attnwidgets.viewdata.views.qk.qk_state`, what the page draws: one
head's arrays, every query or one query's window of keys); :func:`plot_qk` builds that state from captures and the
view's options, then paints it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..qk_result import QKCapture
from ..viewdata.captures import captures_by_layer, check_captured
from ..viewdata.checks import check_head, check_query
from ..viewdata.labels import token_label
from ..viewdata.selection import check_selection, one_query, runs, span_tokens
from ..viewdata.views.qk import ROPE_ARRAYS, QKOptions, QKState, qk_state
from ..viewdata.windows import check_window, default_window, is_long
from .style import SELECTED, colormap, lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["paint_qk", "plot_qk"]

_DIVERGING = {"light": "RdBu_r", "lecture": "PuOr_r"}
_NUMBERS = "①②③④⑤⑥⑦⑧⑨⑩"


@lecture_fit
def plot_qk(capture: QKCapture | Sequence[QKCapture], head: int = 0, query: int | None = None, *,
            layer: int | None = None, window: tuple[int, int] | list[int] | None = None,
            selection: list[int] | None = None, theme: str | None = None, rope: bool | None = None) -> Figure:
    """Draw the QK step-through of ``head`` for query token ``query``: six panels sharing the key rows (seven with
    a position bias).

    Panels: ① q (top) and the keys k as colour strips, ② q ⊙ k, ③ q·k, ④ × scaling ("× 1/√d" when the model scales
    by it, as the page writes it), ⑤ softmax, ⑥ the values (faded by weight) and their weighted sum (top) — the same
    panels as the widget. A capture with a position bias (T5, ALiBi-style) gets a "⑤ + bias" panel before the
    softmax, each key's T5 bucket written beside its bar ("b3"), and the panels after it are numbered on. A rotary
    model's capture starts with three more panels: q and k before the rotation, q·k before it, and the angle of each
    pair of dimensions at each position (a cyclic "twilight" scale, the query's on top); ① then shows q and k after
    the rotation.

    Parameters
    ----------
    capture : QKCapture or list of QKCapture
        From :func:`attnwidgets.runner.capture_qk` (one layer) or :func:`attnwidgets.runner.capture_qk_layers`
        (several), as
        :class:`attnwidgets.QKStepThrough` takes.
    head, query : int
        Query head and query token (default: the first selected token, else 0).
    layer : int, optional
        Which captured layer to draw (default: the first one given, as the widget starts with).
    window : (start, stop), optional
        Draw only the keys ``start..stop-1`` and the strongest "far" keys outside them, as the widget's window does.
        A capture of more than 512 keys is always drawn in a window (default: 64 keys around the query).
    selection : list of int, optional
        Query tokens selected, as the widget's ``selection``: the panels step through ``query`` if it is selected,
        else the first selected token, and the first panel marks every selected token's key row (accent, bold) where
        queries and keys are the same tokens.
    theme : str, optional
        "light" (RdBu) or "lecture" (PuOr, larger fonts), both colour-blind safe; default the one
        :func:`attnwidgets.set_theme` chose.
    rope : bool, optional
        Draw the rotary step: None (default) when the capture has one, True to require it (a capture of a model
        without rotary embeddings is an error), False never.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.qk_result import QKCapture
    >>> rng = np.random.default_rng(0)
    >>> c = QKCapture.from_vectors(rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4)),
    ...                            rng.normal(size=(2, 3, 4)), ["[CLS]", "hi", "[SEP]"])
    >>> fig = plot_qk(c, head=1, query=1)
    >>> [ax.get_title() for ax in fig.axes[2:5]]
    ['③ q · k', '④ × 1/√d', '⑤ softmax']
    >>> b = QKCapture.from_vectors(c.q, c.k, c.v, c.tokens, bias=np.ones((2, 3, 3)), bucket=np.zeros((3, 3), int),
    ...                            scaling=1.0)
    >>> [ax.get_title() for ax in plot_qk(b, head=1, query=1).axes[3:7]]
    ['④ × 1', '⑤ + bias', '⑥ softmax', '⑦ Σ weight × v']
    >>> from attnwidgets.qk_result import Rotary
    >>> r = Rotary.from_vectors(c.q, c.k, np.arange(3)[:, None] * np.array([[1.0, 0.1]]))
    >>> rc = QKCapture.from_vectors(*r.rotated(), c.v, c.tokens, rope=r)
    >>> [ax.get_title() for ax in plot_qk(rc, head=1, query=1).axes[:4]]
    ['① q, k before RoPE', '② q · k before RoPE', '③ angle per pair', '④ q, k after RoPE']
    """
    captures = captures_by_layer(capture, "plot_qk")
    layer = next(iter(captures)) if layer is None else check_captured(layer, captures)
    cap = captures[layer]
    _check_rope(rope, cap.rope is not None)
    head = check_head(head, cap.n_heads, allow_mean=False)
    n_q, m_all = len(cap.tokens), len(cap.key_tokens)
    picked = check_selection([] if selection is None else selection, n_q)
    query = one_query(picked, 0 if query is None else check_query(query, n_q))
    if window is not None or is_long(m_all):
        own = query if n_q == m_all else min(m_all - 1, query * m_all // max(n_q, 1))
        win = check_window(window, m_all) if window is not None else default_window(m_all, around=[own])
    else:
        win = (0, m_all)
    # The page's own state (viewdata.views.qk): its arrays, labels and title are what the picture draws.
    state = qk_state(captures, QKOptions(layer, head, query, (int(win[0]), int(win[1]))))
    return _paint(state, None, query, picked, theme, None, rope)


@lecture_fit
def paint_qk(state: QKState, ax: Any = None, *, query: int | None = None, selection: list[int] | None = None,
             theme: str | None = None, cmap: str | None = None, rope: bool | None = None) -> Figure:
    """Draw a QKStepThrough's state (:func:`~attnwidgets.viewdata.views.qk.qk_state`) as its page draws it: the
    panels of ``query`` over the state's key rows (a window's keys, then its far keys), titled as the page titles
    them (``panels`` and ``titleText`` in js/src/views/qk/state.ts), the selected tokens' key rows marked.

    Parameters
    ----------
    state : QKState
    ax : matplotlib Axes, optional
        Split it into the view's panels instead of drawing a new figure.
    query : int, optional
        The query on screen (the widget's ``query``; a window's state holds its own query; default 0).
    selection : list of int, optional
        The selected query tokens, as the widget's ``selection``: the panels step through ``query`` if it is
        selected, else the first selected token.
    theme, cmap : str, optional
        How it looks: the theme, and a matplotlib diverging map (default: the theme's, RdBu or PuOr).
    rope : bool, optional
        As :func:`plot_qk`'s.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from attnwidgets.qk_result import QKCapture
    >>> rng = np.random.default_rng(0)
    >>> cap = QKCapture.from_vectors(*rng.normal(size=(3, 2, 3, 4)), ["a", "b", "c"])
    >>> fig = paint_qk(qk_state({0: cap}, QKOptions(layer=0, head=1, query=2, window=(0, 3))), query=2)
    >>> fig._suptitle.get_text()
    'arrays · self attention · layer 0 · head 1 · query 2 (c)'
    """
    return _paint(state, ax, query, selection, theme, cmap, rope)


def _check_rope(rope: bool | None, has_rope: bool) -> None:
    if rope and not has_rope:
        raise ValueError("this capture has no rotary step: its model has no rotary position embeddings, or it was "
                         "captured with rope=False; capture a rotary model (Llama, Mistral, GPT-NeoX) or pass "
                         "rope=None")


@dataclass(frozen=True)
class _Row:
    """What the panels show for one query, sliced from the state's arrays (js/src/views/qk/state.ts queryRow): its
    vectors, one number per key row, which keys it may see, and each row's key position and label."""

    query: int
    q: np.ndarray  # (d,)
    k: np.ndarray  # (m, d)
    v: np.ndarray  # (m, d)
    out: np.ndarray  # (d,)
    logits: np.ndarray  # (m,)
    scaled: np.ndarray
    weights: np.ndarray
    allowed: np.ndarray  # (m,) bool
    bias: np.ndarray | None
    bucket: np.ndarray | None
    pre: tuple[np.ndarray, ...] | None  # RoPE: q_pre (d,), k_pre (m, d), logits_pre (m,), q_angle (r/2,), angle
    positions: list[int]  # the key position of each row
    labels: list[str]  # each row's label ("far #p tok" for a far key)
    where: str  # a window's keys and the weight outside them, for the title


def _view(state: QKState) -> tuple[int, int, int | None, tuple[int, int] | None]:
    """The state's layer, head and, in a window, its query and window (its key "layer/head[/query/start-stop]")."""
    parts = state.payload.key.split("/")
    if len(parts) == 2:
        return int(parts[0]), int(parts[1]), None, None
    start, stop = parts[3].split("-")
    return int(parts[0]), int(parts[1]), int(parts[2]), (int(start), int(stop))


def _row(state: QKState, query: int, rope: bool) -> _Row:
    """The rows the panels draw for ``query`` (a window holds its one query's row)."""
    a, meta = state.payload.arrays, state.meta
    _layer, _head, _query, window = _view(state)
    i = 0 if window is not None else query
    labels = [token_label(t) for t in meta.key_tokens]
    where = ""
    if window is not None and a.keys is not None and a.outside is not None:
        positions = np.rint(a.keys).astype(int).tolist()
        n_win = window[1] - window[0]
        labels = [f"{'far #' if j >= n_win else ''}{p} {labels[p]}" for j, p in enumerate(positions)]
        where = (f" · keys {window[0]}–{window[1] - 1} of {len(meta.key_tokens)}, "
                 f"{100 * float(a.outside[0]):.1f} % of the weight outside")
    else:
        positions = list(range(a.logits.shape[1]))
    pre: tuple[np.ndarray, ...] | None = None
    rotary = [x for x in (a.q_pre, a.k_pre, a.logits_pre, a.q_angle, a.angle) if x is not None]
    if rope and len(rotary) == len(ROPE_ARRAYS):
        q_pre, k_pre, logits_pre, q_angle, angle = rotary
        pre = (q_pre[i], k_pre, logits_pre[i], q_angle[i], angle)
    return _Row(query, a.q[i], a.k, a.v, a.output[i], a.logits[i], a.scaled[i], a.weights[i],
                np.asarray(a.mask[i], bool), None if a.bias is None else a.bias[i],
                None if a.bucket is None else a.bucket[i], pre, positions, labels, where)


def _query(state: QKState, query: int | None, selection: list[int]) -> int:
    """The query on screen: a window's own, else ``query`` (or the first selected token) clamped to the queries."""
    own = _view(state)[2]
    if own is not None:
        return own
    n = len(state.meta.tokens)
    return min(one_query(selection, 0 if query is None else int(query)), n - 1)


def _titles(state: QKState, rope: bool) -> list[str]:
    """The panels' titles as the page numbers them (js/src/views/qk/state.ts panels): a rotary model's three panels
    first, "+ bias" only for a model that adds one, "× 1/√d" when the model scales by it, else its factor."""
    meta = state.meta
    root_d = abs(meta.scaling - 1 / np.sqrt(meta.head_dim)) < 1e-6
    steps = [*(["q, k before RoPE", "q · k before RoPE", "angle per pair"] if rope else []),
             "q, k after RoPE" if rope else "query q, keys k", "q ⊙ k", "q · k",
             "× 1/√d" if root_d else f"× {meta.scaling:.3g}", *(["+ bias"] if meta.bias else []), "softmax",
             "Σ weight × v"]
    return [f"{_NUMBERS[i]} {step}" for i, step in enumerate(steps)]


def _paint(state: QKState, ax: Any, query: int | None, selection: list[int] | None, theme: str | None,
           cmap: str | None, rope: bool | None) -> Figure:
    meta = state.meta
    _check_rope(rope, meta.rope)
    show_rope = meta.rope and rope is not False
    theme = resolve_theme(theme)
    picked = check_selection([] if selection is None else selection, len(meta.tokens))
    r = _row(state, _query(state, query, picked), show_rope)
    big = theme == "lecture"
    look = _Look(cmap or _DIVERGING.get(theme, "RdBu_r"), 15 if big else 9)
    titles = _titles(state, show_rope)
    marks = bool(picked) and len(meta.tokens) == len(meta.key_tokens)  # the selection is marked and named
    fig, top, body = _layout(ax, len(titles), len(r.weights), big, long_title=bool(r.where) or marks)
    o = 3 if show_rope else 0  # a rotary step's three panels come first
    _draw_strips(top, body, r, o, look)
    _draw_bars(body, r, o, look)
    _draw_softmax(body[-2], r, look.font)
    _draw_values(top[-1], body[-1], r, look)
    _label_panels(top, body, r, titles, o, look.font, token_label(meta.tokens[r.query]))
    where = r.where + _mark_selection(body[0], state, r, picked)
    layer, head = _view(state)[:2]
    fig.suptitle(f"{meta.title} · {meta.stack} attention · layer {layer} · head {head} · query {r.query} "
                 f"({token_label(meta.tokens[r.query])}){where}", fontsize=look.font + 2)
    return fig


@dataclass(frozen=True)
class _Look:
    cmap: str
    font: int


def _layout(ax: Any, n_cols: int, m: int, big: bool, long_title: bool) -> tuple[Figure, list[Any], list[Any]]:
    """Two rows of ``n_cols`` panels sharing their columns: a short top row (the query's vectors) over the key rows;
    in a new figure or splitting ``ax``. A new figure whose title is long (a window's keys, a selection) is laid out
    by constrained layout, which keeps the title above the panels' titles (without it they overlapped); it costs
    about a third more time to draw, so a one-line title keeps the fixed margins."""
    rows = max(m, 1)
    grid_kw = {"height_ratios": [1, max(2, rows)], "hspace": 0.05, "wspace": 0.35}
    if ax is None:
        height = min(24.0, 1.6 + 0.3 * rows) * (1.3 if big else 1.0)
        fig = new_figure(((17 if big else 13) * n_cols / 6, height), layout="constrained" if long_title else None)
        grid = fig.add_gridspec(2, n_cols, **grid_kw)
    else:
        fig = ax.figure
        grid = ax.get_subplotspec().subgridspec(2, n_cols, **grid_kw)
        ax.remove()
    top = [fig.add_subplot(grid[0, c]) for c in range(n_cols)]
    body = [fig.add_subplot(grid[1, c], sharex=top[c]) for c in range(n_cols)]
    return fig, top, body


def _strip(ax: Any, values: np.ndarray, lim: float, cmap: str) -> None:
    ax.imshow(values, vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest", cmap=cmap)


def _draw_strips(top: list[Any], body: list[Any], r: _Row, o: int, look: _Look) -> None:
    """q over the keys k (and, for a rotary model, before the rotation and the angles), and q ⊙ k, as colour strips
    each on its own symmetric scale."""
    def vectors(col: int, qv: np.ndarray, kv: np.ndarray) -> None:
        lim = float(np.abs(np.concatenate([qv[None], kv])).max()) or 1.0
        _strip(top[col], qv[None], lim, look.cmap)
        _strip(body[col], np.where(r.allowed[:, None], kv, np.nan), lim, look.cmap)

    vectors(o, r.q, r.k)
    prods = r.q[None] * r.k
    _strip(body[o + 1], np.where(r.allowed[:, None], prods, np.nan), float(np.abs(prods).max()) or 1.0, look.cmap)
    if r.pre is not None:
        q_pre, k_pre, _logits_pre, q_angle, k_angle = r.pre
        vectors(0, q_pre, k_pre)
        wheel: dict[str, Any] = {"aspect": "auto", "interpolation": "nearest", "cmap": "twilight", "vmin": -np.pi,
                                 "vmax": np.pi}
        top[2].imshow(np.repeat(q_angle[None], 2, axis=1), **wheel)
        body[2].imshow(np.where(r.allowed[:, None], np.repeat(k_angle, 2, axis=1), np.nan), **wheel)


def _draw_bars(body: list[Any], r: _Row, o: int, look: _Look) -> None:
    """q·k, × scaling, + bias (and q·k before RoPE) as signed bars; the bias's value and T5 bucket beside each."""
    y = np.arange(len(r.weights))
    signed = [(body[o + 2], r.logits), (body[o + 3], r.scaled)] + ([] if r.bias is None else [(body[o + 4], r.bias)])
    if r.pre is not None:
        signed.append((body[1], r.pre[2]))
    for ax, values in signed:
        vals = np.where(r.allowed, values, 0.0)
        lim = float(np.abs(vals).max()) or 1.0
        ax.barh(y, vals, color=np.where(vals >= 0, "#b2182b", "#2166ac"), height=0.7)
        ax.axvline(0, color="#888888", lw=0.8)
        ax.set_xlim(-lim * 1.05, lim * 1.05)
    if r.bias is not None:
        lim = float(np.abs(np.where(r.allowed, r.bias, 0.0)).max()) or 1.0
        for j in np.flatnonzero(r.allowed):
            tag = f"{r.bias[j]:.2f}" + ("" if r.bucket is None else f" b{int(r.bucket[j])}")
            body[o + 4].text(lim * 1.02, j, tag, va="center", ha="left", fontsize=look.font - 2)


def _draw_softmax(ax: Any, r: _Row, font: int) -> None:
    """The weights on a 0–1 axis, the strongest key the query may see in orange, each weight written beside it."""
    w = r.weights
    best = int(np.argmax(np.where(r.allowed, w, -1)))
    ax.barh(np.arange(len(w)), w, color=["#d55e00" if j == best else "#2171b5" for j in range(len(w))], height=0.7)
    ax.set_xlim(0, 1)
    for j in np.flatnonzero(r.allowed):
        ax.text(min(w[j] + 0.03, 0.75), j, f"{w[j]:.3f}", va="center", fontsize=font - 1)


def _draw_values(top: Any, body: Any, r: _Row, look: _Look) -> None:
    """Each value vector faded by its weight (masked keys grey), their weighted sum on top."""
    v_max = float(np.abs(np.concatenate([r.out[None], r.v])).max()) or 1.0
    _strip(top, r.out[None], v_max, look.cmap)
    rgba = colormap(look.cmap)((np.clip(r.v / v_max, -1, 1) + 1) / 2)
    rgba[..., 3] = (0.08 + 0.92 * r.weights / (r.weights.max() or 1.0))[:, None]
    rgba[~r.allowed] = (0.85, 0.85, 0.85, 1.0)
    body.imshow(rgba, aspect="auto", interpolation="nearest")


def _label_panels(top: list[Any], body: list[Any], r: _Row, titles: list[str], o: int, font: int,
                  query: str) -> None:
    """Titles over the panels, the query's and the key rows' labels down the first, axis labels under the strips."""
    m = len(r.weights)
    vals_col = len(titles) - 1
    strips = {0, o, o + 1, vals_col} | ({2} if r.pre is not None else set())  # panels of vectors (or angles)
    with_top = strips - {o + 1}  # q ⊙ k has no top row
    for i, ax in enumerate(body):
        ax.set_ylim(m - 0.5, -0.5)
        ax.tick_params(labelsize=font - 1)
        if i > 0:
            ax.set_yticks([])
        top[i].set_title(titles[i], fontsize=font + 1)
        if i in strips:
            ax.set_xlabel("pair" if r.pre is not None and i == 2 else "component", fontsize=font - 1)
        if i in with_top:
            top[i].set_xticks([])
            top[i].set_yticks([])
        else:
            top[i].axis("off")
    top[0].set_yticks([0], [f"q · {query}"], fontsize=font)
    top[vals_col].set_yticks([0], ["Σ"], fontsize=font)
    body[0].set_yticks(np.arange(m), r.labels if m <= 80 else [""] * m, fontsize=font)


def _mark_selection(ax: Any, state: QKState, r: _Row, picked: list[int]) -> str:
    """Mark the selected tokens' key rows in the first panel (accent, bold, outlined) where queries and keys are the
    same tokens; the selection's words for the title."""
    tokens = state.meta.tokens
    if not picked or len(tokens) != len(state.meta.key_tokens):
        return ""
    from matplotlib.patches import Rectangle

    for label, p in zip(ax.get_yticklabels(), r.positions):
        if p in picked:
            label.set_color(SELECTED)
            label.set_fontweight("bold")
    width = ax.get_xlim()
    for a0, a1 in runs([j for j, p in enumerate(r.positions) if p in picked]):
        ax.add_patch(Rectangle((width[0], a0 - 0.5), width[1] - width[0], a1 - a0, fill=False, edgecolor=SELECTED,
                               linewidth=2.5, clip_on=False))
    return f" · selected: {span_tokens([token_label(t) for t in tokens], picked)}"
