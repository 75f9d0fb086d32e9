"""Static twin of GenerationView: one step of a generation, its attention on the text, the steps x keys map and the
step's top-k predictions, as a matplotlib Figure."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..generation_result import GenerationResult
from ..viewdata.checks import check_head, check_int, check_layer
from ..viewdata.labels import token_label
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
    """Black or white, whichever reads on ``face`` (as js/src/shared/heads.ts textOn)."""
    if not isinstance(face, tuple):
        return "black"
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in face[:3]]
    return "black" if 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] > 0.36 else "white"


def _outline(step: int, n_keys: int):  # type: ignore[no-untyped-def]
    from matplotlib.patches import Rectangle

    return Rectangle((-0.5, step - 0.5), n_keys, 1, fill=False, edgecolor="#d1242f", lw=2)
