"""Static twin of GenerationView: one step of a generation, its attention on the text, the steps x keys map and the
step's top-k predictions, as a matplotlib Figure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..generation_result import GenerationResult
from ..viewdata.checks import check_head, check_int, check_layer
from ..viewdata.labels import token_label
from ..viewdata.selection import check_selection, selection_share
from .head_view import HEAD_COLOURS
from .style import LECTURE_BOX, colormap, lecture_fit, lecture_fonts, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_CMAPS = {"light": "Blues", "lecture": "viridis"}


@lecture_fit
def plot_generation(gen: GenerationResult, step: int = 0, layer: int = 0, head: int = -1, *, kind: str | None = None,
                    theme: str | None = None, cmap: str | None = None) -> Figure:
    """Draw step ``step`` of a generation: the text with each key token shaded by the attention the step's query
    gives it, the steps x keys map (keys not yet written grey, the step outlined) and the step's top-k tokens.

    Parameters
    ----------
    gen : GenerationResult
    step, layer, head : int
        ``head=-1`` (default) is the mean over heads; ``step=-1`` the last step.
    kind : str, optional
        "self" (decoders) or "decoder" / "cross" (encoder-decoders; default "cross").
    theme, cmap : str, optional
        As :func:`attnwidgets.plots.plot_heatmap`.

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.result import AttentionResult
    >>> att = np.tril(np.ones((3, 3), np.float32)); att /= att.sum(1, keepdims=True)
    >>> r = AttentionResult.from_arrays(att, ["a", "b", "c"], kind="decoder")
    >>> g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d"], np.array([2, 3]),
    ...                      np.array([[2], [3]]), np.array([[0.9], [0.8]], np.float32), [["c"], ["d"]])
    >>> fig = plot_generation(g, step=1)
    >>> fig.axes[1].get_title()
    'steps x keys · self attention · layer 0 · mean of heads'
    """
    if not isinstance(gen, GenerationResult):
        raise TypeError(f"plot_generation takes a GenerationResult (from attnwidgets.generate), got "
                        f"{type(gen).__name__}")
    theme = resolve_theme(theme)
    step = check_int(step, "step")
    if not -gen.n_steps <= step < gen.n_steps:
        raise ValueError(f"step {step} is out of range: {gen.n_steps} tokens were generated (0..{gen.n_steps - 1})")
    step %= gen.n_steps
    kind = gen.default_kind if kind is None else kind
    kinds = gen.kinds
    if kind == "self" and gen.is_encoder_decoder:
        kind = "decoder"
    if kind not in kinds:
        raise ValueError(f"this generation has {kinds} attention per step, not {kind!r}")
    n_layers, n_heads = gen.result.attention_shape(kind)[:2]  # type: ignore[arg-type]
    layer = check_layer(layer, n_layers)
    head = check_head(head, n_heads)
    m = gen.steps_matrix(layer, head, kind)
    row = m[step]
    cm = colormap(cmap or _CMAPS[theme])
    keys = gen.key_tokens(kind)
    big = theme == "lecture"
    n_keys = len(keys)
    with lecture_fonts(theme):
        size_in = (max(7.0, min(16.0, 0.32 * n_keys + 5)) * (1.3 if big else 1), 6.5 * (1.3 if big else 1))
        if big:  # the lecture box now: the tokens below are laid out by their measured width at this size
            size_in = (min(size_in[0], LECTURE_BOX[0]), min(size_in[1], LECTURE_BOX[1]))
        fig = new_figure(size_in)
        grid = fig.add_gridspec(2, 2, height_ratios=[0.8, 2.4], width_ratios=[3, 1])
        ax_text = fig.add_subplot(grid[0, :])
        ax_map = fig.add_subplot(grid[1, 0])
        ax_top = fig.add_subplot(grid[1, 1])
        # The text: key tokens shaded by this step's weights; the written token outlined, later ones grey.
        ax_text.axis("off")
        vmax = float(np.nanmax(row)) if np.isfinite(row).any() and np.nanmax(row) > 0 else 1.0
        if gen.is_encoder_decoder:
            lines = [("source: ", gen.prompt_tokens, kind == "cross"),
                     ("output: ", [gen.key_tokens("decoder")[0], *gen.generated_tokens], kind != "cross")]
            current_line, current = 1, step + 1
        else:
            lines = [("", [*gen.prompt_tokens, *gen.generated_tokens], True)]
            current_line, current = 0, gen.prompt_length + step
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        renderer = FigureCanvasAgg(fig).get_renderer()  # to measure each token's box as it is laid out
        y = 0.8
        size = 15 if big else 11
        for li, (label, toks, shaded) in enumerate(lines):
            x = 0.0
            if label:
                t = ax_text.text(x, y, label, fontsize=size, color="#57606a", transform=ax_text.transAxes)
                x += t.get_window_extent(renderer).width / ax_text.get_window_extent(renderer).width + 0.005
            for i, tok in enumerate(toks):
                w = row[i] if shaded and i < row.size else np.nan
                face = cm(float(w) / vmax) if np.isfinite(w) else "none"
                later = li == current_line and i > current
                edge = "#d1242f" if li == current_line and i == current else "none"
                t = ax_text.text(x, y, token_label(tok), fontsize=size, transform=ax_text.transAxes,
                                 color="#aaaaaa" if later else _text_on(face),
                                 bbox=dict(facecolor=face, edgecolor=edge, boxstyle="round,pad=0.15", lw=2))
                width = t.get_window_extent(renderer).width / ax_text.get_window_extent(renderer).width
                x += width + 0.008
                if x > 0.97:
                    x, y = 0.0, y - 0.22
            y -= 0.3
        # The steps x keys map.
        shown = np.ma.masked_invalid(m)
        cmap_ = cm.with_extremes(bad="#ebebeb")
        ax_map.imshow(shown, cmap=cmap_, vmin=0, vmax=float(np.nanmax(m)) or 1.0, aspect="auto",
                      interpolation="nearest")
        ax_map.add_patch(_outline(step, n_keys))
        ax_map.set_yticks(range(gen.n_steps), [token_label(t) for t in gen.generated_tokens])
        ax_map.set_xticks(range(n_keys), [token_label(t) for t in keys], rotation=90)
        what = "mean of heads" if head == -1 else f"head {head}"
        ax_map.set_title(f"steps x keys · {kind} attention · layer {layer} · {what}")
        # Top-k of the step.
        probs = gen.topk_probs[step]
        ax_top.barh(range(gen.k), probs, color="#d55e00" if big else "#0969da")
        ax_top.set_yticks(range(gen.k), [token_label(t) for t in gen.topk_tokens[step]])
        ax_top.invert_yaxis()
        ax_top.set_xlim(0, max(1e-6, float(probs.max())) * 1.15)
        ax_top.set_title(f"step {step}: next token")
        fig.suptitle(f"{gen.model.name} · step {step} of {gen.n_steps}: {token_label(gen.generated_tokens[step])!s}")
        fig.tight_layout()
    return fig


def _text_on(face: object) -> str:
    """Black or white, whichever reads on ``face`` (as js/src/draw/heads.ts textOn)."""
    if not isinstance(face, tuple):
        return "black"
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in face[:3]]
    return "black" if 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] > 0.36 else "white"


def _outline(step: int, n_keys: int):  # type: ignore[no-untyped-def]
    from matplotlib.patches import Rectangle

    return Rectangle((-0.5, step - 0.5), n_keys, 1, fill=False, edgecolor="#d1242f", lw=2)


@lecture_fit
def plot_span_share(gen: GenerationResult, span: Any = None, *, selection: Any = None, by: str = "layer",
                    layer: int = 0, step: int | None = None, combine: str = "sum",
                    theme: str | None = None) -> Figure:
    """The static twin of GenerationView's span-share panel: for every generated step, the share of its attention
    on ``span`` of the prompt (:meth:`GenerationResult.span_share`), a line per layer (the mean of its heads) or,
    ``by="head"``, per head of ``layer``; the span's tokens in the title, ``step`` marked.

    Parameters
    ----------
    gen : GenerationResult
    span : (start, stop), range or slice
        Tokens of the prompt (the source of an encoder-decoder), stop exclusive.
    selection : list of int, optional
        Instead of ``span``: any set of positions, as the view's ``selection`` (the shares of its runs add up).
    by : str
        "layer" (default) or "head".
    layer : int
        The layer whose heads ``by="head"`` draws.
    step : int, optional
        A step to mark (the view's scrubber).
    combine : str
        "sum" (default: the share) or "mean" (the share over the number of tokens).
    theme : str, optional

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.result import AttentionResult
    >>> att = np.tril(np.ones((4, 4), np.float32)); att /= att.sum(1, keepdims=True)
    >>> r = AttentionResult.from_arrays(att, ["a", "b", "c", "d"], kind="decoder")
    >>> g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d", "e"], np.array([2, 3, 4]),
    ...                      np.array([[2], [3], [4]]), np.ones((3, 1), np.float32), [["c"], ["d"], ["e"]])
    >>> fig = plot_span_share(g, (0, 2), step=1)
    >>> [round(float(v), 3) for v in fig.axes[0].lines[0].get_ydata()]
    [1.0, 0.667, 0.5]
    """
    if not isinstance(gen, GenerationResult):
        raise TypeError(f"plot_span_share takes a GenerationResult (from attnwidgets.generate), got "
                        f"{type(gen).__name__}")
    theme = resolve_theme(theme)
    if (span is None) == (selection is None):
        raise TypeError("plot_span_share takes a span (start, stop) or a selection (a list of positions), one of them")
    if selection is None:
        start, stop = gen.span_bounds(span)
        selection = list(range(start, stop))
    else:
        selection = check_selection(selection, gen.result.n_tokens)
    lines, labels = selection_share(gen, selection, combine, by, layer)
    n = gen.n_steps
    if step is not None:
        step = check_int(step, "step")
        if not -n <= step < n:
            raise ValueError(f"step {step} is out of range: {n} tokens were generated (0..{n - 1})")
        step %= n
    big = theme == "lecture"
    tokens = gen.key_tokens()
    shown = " ".join(token_label(tokens[p]) for p in selection[:8]) + (" …" if len(selection) > 8 else "")
    with lecture_fonts(theme):
        fig = new_figure((9.0 * (1.3 if big else 1), 3.6 * (1.3 if big else 1)))
        ax = fig.add_subplot(1, 1, 1)
        x = np.arange(n)
        for j, label in enumerate(labels):
            ax.plot(x, lines[:, j], color=HEAD_COLOURS[j % len(HEAD_COLOURS)], lw=2.5 if big else 1.6, label=label,
                    marker="o" if n <= 12 else None, ms=4)
        if step is not None:
            ax.axvline(step, color="#333333", lw=1.5, ls="--")  # as the view: the accent is a line colour
        top = 1.0 if combine == "sum" else max(1e-6, float(np.nanmax(lines))) * 1.1
        ax.set_ylim(0, top * 1.02)
        pad = 0.5 if n == 1 else 0.02 * (n - 1)  # so that a marked first or last step shows
        ax.set_xlim(-pad, max(0, n - 1) + pad)
        if n <= 24:  # each step with the token it wrote
            ax.set_xticks(range(n), [f"{t}\n{token_label(tok, 8)}" for t, tok in enumerate(gen.generated_tokens)])
        else:
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("generated step")
        ax.set_ylabel("share of attention" if combine == "sum" else "mean weight per token")
        ax.set_title(f"{gen.model.name} · attention on {len(selection)} tokens: {shown}")
        if len(labels) <= 16:
            ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        fig.tight_layout()
    return fig
