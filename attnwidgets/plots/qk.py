"""Static twin of QKStepThrough: one head's attention for one query, step by step, as a matplotlib Figure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..qk_result import QKCapture
from ..viewdata.captures import captures_by_layer, check_captured
from ..viewdata.checks import check_head, check_query
from ..viewdata.labels import token_label
from ..viewdata.selection import check_selection, one_query, runs, span_tokens
from ..viewdata.windows import check_window, default_window, is_long, qk_window
from .style import SELECTED, colormap, lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_DIVERGING = {"light": "RdBu_r", "lecture": "PuOr_r"}


@lecture_fit
def plot_qk(capture: QKCapture | Sequence[QKCapture], head: int = 0, query: int | None = None, *,
            layer: int | None = None, window: tuple[int, int] | list[int] | None = None,
            selection: list[int] | None = None, theme: str | None = None, rope: bool | None = None) -> Figure:
    """Draw the QK step-through of ``head`` for query token ``query``: six panels sharing the key rows (seven with
    a position bias).

    Panels: ① q (top) and the keys k as colour strips, ② q ⊙ k, ③ q·k, ④ × scaling, ⑤ softmax, ⑥ the values
    (faded by weight) and their weighted sum (top) — the same panels as the widget. A capture with a position bias
    (T5, ALiBi-style) gets a "⑤ + bias" panel before the softmax, each key's T5 bucket written beside its bar
    ("b3"), and the panels after it are numbered on. A rotary model's capture starts with three more panels: q and
    k before the rotation, q·k before it, and the angle of each pair of dimensions at each position (a cyclic
    "twilight" scale, the query's on top); ① then shows q and k after the rotation.

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
    ['③ q · k', '④ × 0.5', '⑤ softmax']
    >>> b = QKCapture.from_vectors(c.q, c.k, c.v, c.tokens, bias=np.ones((2, 3, 3)), bucket=np.zeros((3, 3), int))
    >>> [ax.get_title() for ax in plot_qk(b, head=1, query=1).axes[3:7]]
    ['④ × 0.5', '⑤ + bias', '⑥ softmax', '⑦ Σ weight × v']
    >>> from attnwidgets.qk_result import Rotary
    >>> r = Rotary.from_vectors(c.q, c.k, np.arange(3)[:, None] * np.array([[1.0, 0.1]]))
    >>> rc = QKCapture.from_vectors(*r.rotated(), c.v, c.tokens, rope=r)
    >>> [ax.get_title() for ax in plot_qk(rc, head=1, query=1).axes[:4]]
    ['① q, k before RoPE', '② q · k before RoPE', '③ angle per pair', '④ q, k after RoPE']
    """
    captures = captures_by_layer(capture, "plot_qk")
    capture = captures[next(iter(captures)) if layer is None else check_captured(layer, captures)]
    if rope and capture.rope is None:
        raise ValueError("this capture has no rotary step: its model has no rotary position embeddings, or it was "
                         "captured with rope=False; capture a rotary model (Llama, Mistral, GPT-NeoX) or pass "
                         "rope=None")
    show_rope = capture.rope is not None and rope is not False
    theme = resolve_theme(theme)
    head = check_head(head, capture.n_heads, allow_mean=False)
    a = capture.head(head)
    n, m_all = a["logits"].shape
    picked = check_selection([] if selection is None else selection, n)
    query = one_query(picked, 0 if query is None else check_query(query, n))
    big = theme == "lecture"
    font = 15 if big else 9
    cmap = _DIVERGING.get(theme, "RdBu_r")
    key_labels = [token_label(t) for t in capture.key_tokens]
    if window is not None or is_long(m_all):
        n_q = len(capture.tokens)
        own = query if n_q == m_all else min(m_all - 1, query * m_all // max(n_q, 1))
        win = check_window(window, m_all) if window is not None else default_window(m_all, around=[own])
        cut = qk_window(capture, head, query, win)
        q, k, v, out = cut["q"][0], cut["k"], cut["v"], cut["output"][0]
        logits, scaled, w = cut["logits"][0], cut["scaled"][0], cut["weights"][0]
        bias = cut["bias"][0] if "bias" in cut else None
        bucket = cut["bucket"][0] if "bucket" in cut else None
        pre = (cut["q_pre"][0], cut["k_pre"], cut["logits_pre"][0], cut["q_angle"][0], cut["angle"]) \
            if show_rope else None
        allowed = cut["mask"][0] > 0.5
        positions = cut["keys"].tolist()
        n_win = win[1] - win[0]
        key_labels = [f"{'far #' if j >= n_win else ''}{p} {key_labels[p]}" for j, p in enumerate(positions)]
        share = 100 * float(cut["outside"][0])
        where = f" · keys {win[0]}–{win[1] - 1} of {m_all}, {share:.1f} % of the weight outside"
    else:
        q, k, v = a["q"][query], a["k"], a["v"]
        out = a["output"][query]
        logits, scaled = a["logits"][query], a["scaled"][query]
        bias = a["bias"][query] if "bias" in a else None
        bucket = a["bucket"][query] if "bucket" in a else None
        pre = (a["q_pre"][query], a["k_pre"], a["logits_pre"][query], a["angle"][query], a["angle"]) \
            if show_rope else None
        allowed = capture.mask[query]
        w = a["weights"][query]
        where = ""
        positions = list(range(len(w)))
    m = len(w)
    rows = max(m, 1)
    height = min(24.0, 1.6 + 0.3 * rows) * (1.3 if big else 1.0)
    o = 0 if pre is None else 3  # a rotary step's three panels come first
    n_cols = (6 if bias is None else 7) + o
    fig = new_figure(((17 if big else 13) * n_cols / 6, height))
    axes = fig.subplots(2, n_cols, sharex="col",
                        gridspec_kw={"height_ratios": [1, max(2, rows)], "hspace": 0.05, "wspace": 0.35})
    top, body = axes[0], axes[1]
    soft, vals_col = n_cols - 2, n_cols - 1  # the softmax and the weighted sum are the last two panels
    strip: dict[str, Any] = {"aspect": "auto", "interpolation": "nearest", "cmap": cmap}

    def vectors(col: int, qv: np.ndarray, kv: np.ndarray) -> None:
        lim = float(np.abs(np.concatenate([qv[None], kv])).max()) or 1.0
        top[col].imshow(qv[None], vmin=-lim, vmax=lim, **strip)
        body[col].imshow(np.where(allowed[:, None], kv, np.nan), vmin=-lim, vmax=lim, **strip)

    vectors(o, q, k)
    prods = q[None] * k
    prod_max = float(np.abs(prods).max()) or 1.0
    v_max = float(np.abs(np.concatenate([out[None], v])).max()) or 1.0
    body[o + 1].imshow(np.where(allowed[:, None], prods, np.nan), vmin=-prod_max, vmax=prod_max, **strip)
    top[vals_col].imshow(out[None], vmin=-v_max, vmax=v_max, **strip)
    top[vals_col].set_yticks([0], ["Σ"], fontsize=font)
    rgba = colormap(cmap)((np.clip(v / v_max, -1, 1) + 1) / 2)
    rgba[..., 3] = (0.08 + 0.92 * w / (w.max() or 1.0))[:, None]
    rgba[~allowed] = (0.85, 0.85, 0.85, 1.0)
    body[vals_col].imshow(rgba, aspect="auto", interpolation="nearest")
    y = np.arange(m)
    signed = [(body[o + 2], logits), (body[o + 3], scaled)] + ([] if bias is None else [(body[o + 4], bias)])
    if pre is not None:
        q_pre, k_pre, logits_pre, q_angle, k_angle = pre
        vectors(0, q_pre, k_pre)
        signed.append((body[1], logits_pre))
        wheel: dict[str, Any] = {"aspect": "auto", "interpolation": "nearest", "cmap": "twilight", "vmin": -np.pi,
                                 "vmax": np.pi}
        top[2].imshow(np.repeat(q_angle[None], 2, axis=1), **wheel)
        body[2].imshow(np.where(allowed[:, None], np.repeat(k_angle, 2, axis=1), np.nan), **wheel)
    for ax, values in signed:
        vals = np.where(allowed, values, 0.0)
        lim = float(np.abs(vals).max()) or 1.0
        ax.barh(y, vals, color=np.where(vals >= 0, "#b2182b", "#2166ac"), height=0.7)
        ax.axvline(0, color="#888888", lw=0.8)
        ax.set_xlim(-lim * 1.05, lim * 1.05)
    if bias is not None:
        lim = float(np.abs(np.where(allowed, bias, 0.0)).max()) or 1.0
        for j in range(m):
            if allowed[j]:
                tag = f"{bias[j]:.2f}" + ("" if bucket is None else f" b{int(bucket[j])}")
                body[o + 4].text(lim * 1.02, j, tag, va="center", ha="left", fontsize=font - 2)
    best = int(np.argmax(np.where(allowed, w, -1)))
    body[soft].barh(y, w, color=["#d55e00" if j == best else "#2171b5" for j in range(m)], height=0.7)
    body[soft].set_xlim(0, 1)
    for j in range(m):
        if allowed[j]:
            body[soft].text(min(w[j] + 0.03, 0.75), j, f"{w[j]:.3f}", va="center", fontsize=font - 1)
    steps = [*([] if pre is None else ["q, k before RoPE", "q · k before RoPE", "angle per pair"]),
             "query q, keys k" if pre is None else "q, k after RoPE", "q ⊙ k", "q · k", f"× {capture.scaling:.3g}",
             *([] if bias is None else ["+ bias"]), "softmax", "Σ weight × v"]
    titles = [f"{'①②③④⑤⑥⑦⑧⑨⑩'[i]} {step}" for i, step in enumerate(steps)]
    strips = {0, o, o + 1, vals_col} | ({2} if pre is not None else set())  # panels of vectors (or angles)
    with_top = strips - {o + 1}  # q ⊙ k has no top row
    for i, ax in enumerate(body):
        ax.set_ylim(m - 0.5, -0.5)
        ax.tick_params(labelsize=font - 1)
        if i > 0:
            ax.set_yticks([])
        top[i].set_title(titles[i], fontsize=font + 1)
        if i in strips:
            ax.set_xlabel("pair" if pre is not None and i == 2 else "component", fontsize=font - 1)
        if i in with_top:
            top[i].set_xticks([])
            top[i].set_yticks([])
        else:
            top[i].axis("off")
    top[0].set_yticks([0], [f"q · {token_label(capture.tokens[query])}"], fontsize=font)
    top[vals_col].set_yticks([0], ["Σ"], fontsize=font)
    body[0].set_yticks(y, key_labels if m <= 80 else [""] * m, fontsize=font)
    if picked and len(capture.tokens) == m_all:  # self-attention: key j is query token j too
        from matplotlib.patches import Rectangle

        for label, p in zip(body[0].get_yticklabels(), positions):
            if p in picked:
                label.set_color(SELECTED)
                label.set_fontweight("bold")
        width = body[0].get_xlim()
        for a0, a1 in runs([j for j, p in enumerate(positions) if p in picked]):
            body[0].add_patch(Rectangle((width[0], a0 - 0.5), width[1] - width[0], a1 - a0, fill=False,
                                        edgecolor=SELECTED, linewidth=2.5, clip_on=False))
        where += f" · selected: {span_tokens([token_label(t) for t in capture.tokens], picked)}"
    name = capture.model.name if capture.model is not None else "arrays"
    fig.suptitle(f"{name} · {capture.stack} attention · layer {capture.layer} · head {head} · query "
                 f"{query} ({token_label(capture.tokens[query])}){where}", fontsize=font + 2)
    return fig
