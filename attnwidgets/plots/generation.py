"""Static twin of GenerationView: one step of a generation, its attention on the text, the steps x keys map and the
step's top-k predictions, as a matplotlib Figure.

:func:`paint_generation` draws the view's state (:func:`attnwidgets.viewdata.views.generation.generation_state`, what
the page draws) at one step; :func:`plot_generation` builds that state from a generation, then paints it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..generation_result import GenerationResult
from ..viewdata.checks import check_head, check_int, check_layer
from ..viewdata.labels import token_label
from ..viewdata.selection import check_selection, selection_share
from ..viewdata.views.generation import GenerationOptions, GenerationState, generation_state
from .head_view import HEAD_COLOURS
from .style import LECTURE_BOX, SELECTED, colormap, lecture_fit, lecture_fonts, new_figure, resolve_theme

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
    kind = gen.default_kind if kind is None else kind
    if kind == "self" and gen.is_encoder_decoder:
        kind = "decoder"
    if kind not in gen.kinds:
        raise ValueError(f"this generation has {gen.kinds} attention per step, not {kind!r}")
    n_layers, n_heads = gen.result.attention_shape(kind)[:2]  # type: ignore[arg-type]
    options = GenerationOptions(kind, check_layer(layer, n_layers), check_head(head, n_heads))
    # The page's own state (viewdata.views.generation): its matrix, tokens, top-k and title are what is drawn.
    return _paint(generation_state(gen, options), None, step, theme, cmap)


@lecture_fit
def paint_generation(state: GenerationState, ax: Any = None, *, step: int = 0, selection: list[int] | None = None,
                     theme: str | None = None, cmap: str | None = None) -> Figure:
    """Draw a GenerationView's state (:func:`~attnwidgets.viewdata.views.generation.generation_state`) at ``step`` as
    its page draws it: the page's title (``titleText`` in js/src/views/generation/state.ts), the text shaded by the
    step's row, the steps x keys map (one colour scale with the text, 0 to the map's largest weight; keys not written
    yet grey) and the step's top-k on the page's fixed 0–100 % axis, the chosen token in bold; the selected tokens
    underlined in the text, as the page underlines them (its span-share panel is not drawn: see
    :func:`plot_span_share`).

    Parameters
    ----------
    state : GenerationState
    ax : matplotlib Axes, optional
        Split it into the view's three panels instead of drawing a new figure.
    step : int
        The generated step on screen (the widget's ``step``; -1 the last).
    selection : list of int, optional
        The selected tokens (the widget's ``selection``: positions in the prompt, then the generated tokens fed back).
    theme, cmap : str, optional
        As :func:`plot_generation`'s: how it looks, not what it shows.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.result import AttentionResult
    >>> att = np.tril(np.ones((3, 3), np.float32)); att /= att.sum(1, keepdims=True)
    >>> r = AttentionResult.from_arrays(att, ["a", "b", "c"], kind="decoder")
    >>> g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d"], np.array([2, 3]),
    ...                      np.array([[2], [3]]), np.array([[0.9], [0.8]], np.float32), [["c"], ["d"]])
    >>> paint_generation(generation_state(g, GenerationOptions()), step=1)._suptitle.get_text()
    'arrays · generated token 2 of 2'
    """
    return _paint(state, ax, step, theme, cmap, selection)


def _view(state: GenerationState) -> tuple[str, int, int]:
    """The state's (kind, layer, head), from its key "kind/layer/head"."""
    kind, layer, head = state.payload.key.split("/")
    return kind, int(layer), int(head)


def _check_step(step: int, n: int) -> int:
    step = check_int(step, "step")
    if not -n <= step < n:
        raise ValueError(f"step {step} is out of range: {n} tokens were generated (0..{n - 1})")
    return step % n


def _scale(matrix: np.ndarray) -> float:
    """The top of the map's and the text's one colour scale: the largest finite weight, 1 when there is none
    (js/src/views/generation/state.ts finiteMax, ``|| 1``).

    >>> _scale(np.array([[0.25, np.nan], [0.5, 0.125]]))
    0.5
    """
    finite = matrix[np.isfinite(matrix)]
    top = float(finite.max()) if finite.size else 0.0
    return top if top > 0 else 1.0


def _paint(state: GenerationState, ax: Any, step: int, theme: str | None, cmap: str | None,
           selection: list[int] | None = None) -> Figure:
    meta = state.meta
    theme = resolve_theme(theme)
    step = _check_step(step, len(meta.generated))
    kind = _view(state)[0]
    matrix = np.asarray(state.payload.matrix, np.float32)
    top = _scale(matrix)
    cm = colormap(cmap or _CMAPS[theme])
    big = theme == "lecture"
    with lecture_fonts(theme):
        fig, (ax_text, ax_map, ax_top) = _panels(ax, len(meta.keys[kind]), big)
        picked = set(check_selection([] if selection is None else selection, meta.n_selectable))
        _draw_text(ax_text, state, step, matrix[step], top, cm, big, picked)
        _draw_map(ax_map, state, step, matrix, top, cm)
        _draw_topk(ax_top, state, step, big)
        fig.suptitle(_title(state, step))
        if ax is None:
            fig.tight_layout()
    return fig


def _title(state: GenerationState, step: int) -> str:
    """The page's title at ``step`` (js/src/views/generation/state.ts titleText)."""
    return f"{state.meta.title} · generated token {step + 1} of {len(state.meta.generated)}"


def _panels(ax: Any, n_keys: int, big: bool) -> tuple[Figure, tuple[Any, Any, Any]]:
    """The text across the top, the map and the top-k under it: in a new figure, or splitting ``ax``."""
    if ax is None:
        size_in = (max(7.0, min(16.0, 0.32 * n_keys + 5)) * (1.3 if big else 1), 6.5 * (1.3 if big else 1))
        if big:  # the lecture box now: the tokens below are laid out by their measured width at this size
            size_in = (min(size_in[0], LECTURE_BOX[0]), min(size_in[1], LECTURE_BOX[1]))
        fig = new_figure(size_in)
        grid = fig.add_gridspec(2, 2, height_ratios=[0.8, 2.4], width_ratios=[3, 1])
    else:
        fig = ax.figure
        grid = ax.get_subplotspec().subgridspec(2, 2, height_ratios=[0.8, 2.4], width_ratios=[3, 1])
        ax.remove()
    return fig, (fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1]))


def _text_lines(state: GenerationState, kind: str, step: int) -> tuple[list[tuple[str, list[str], bool]], int, int]:
    """The text's lines (label, tokens, shaded by the step's row) as the page lays them out (state.ts textLines), the
    line of the output and the index on it of the token the step wrote (currentIndex). A token's position, what a
    selection names, is its index on the first line (the prompt, then a decoder's generated tokens)."""
    meta = state.meta
    if meta.encoder_decoder:
        output = [meta.keys.get("decoder", [""])[0], *meta.generated]
        return [("source: ", meta.prompt, kind == "cross"), ("output: ", output, kind != "cross")], 1, step + 1
    return [("", [*meta.prompt, *meta.generated], True)], 0, len(meta.prompt) + step


def _draw_text(ax: Any, state: GenerationState, step: int, row: np.ndarray, top: float, cm: Any, big: bool,
               picked: set[int]) -> None:
    """The key tokens shaded by the step's weights; the written token outlined, later ones grey, the selected ones
    underlined in the accent."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    lines, current_line, current = _text_lines(state, _view(state)[0], step)
    ax.axis("off")
    renderer = FigureCanvasAgg(ax.figure).get_renderer()  # to measure each token's box as it is laid out
    y = 0.8
    size = 15 if big else 11
    for li, (label, toks, shaded) in enumerate(lines):
        x = 0.0
        if label:
            t = ax.text(x, y, label, fontsize=size, color="#57606a", transform=ax.transAxes)
            x += t.get_window_extent(renderer).width / ax.get_window_extent(renderer).width + 0.005
        for i, tok in enumerate(toks):
            w = row[i] if shaded and i < row.size else np.nan
            face = cm(float(w) / top) if np.isfinite(w) else "none"
            later = li == current_line and i > current
            edge = "#d1242f" if li == current_line and i == current else "none"
            t = ax.text(x, y, token_label(tok), fontsize=size, transform=ax.transAxes,
                        color="#aaaaaa" if later else _text_on(face),
                        bbox=dict(facecolor=face, edgecolor=edge, boxstyle="round,pad=0.15", lw=2))
            box = t.get_window_extent(renderer).transformed(ax.transAxes.inverted())
            if li == 0 and i in picked:  # the page's .aw-sel: a bar under the token
                t.set_fontweight("bold")
                ax.plot([box.x0, box.x1], [box.y0 - 0.04] * 2, color=SELECTED, lw=3, transform=ax.transAxes,
                        solid_capstyle="butt")
            x += box.width + 0.008
            if x > 0.97:
                x, y = 0.0, y - 0.22
        y -= 0.3


def _draw_map(ax: Any, state: GenerationState, step: int, matrix: np.ndarray, top: float, cm: Any) -> None:
    """The steps x keys map on the scale 0..``top`` (keys not written yet grey), the step outlined and its token in
    red, as the page's map."""
    kind, layer, head = _view(state)
    keys, generated = state.meta.keys[kind], state.meta.generated
    ax.imshow(np.ma.masked_invalid(matrix), cmap=cm.with_extremes(bad="#ebebeb"), vmin=0, vmax=top, aspect="auto",
              interpolation="nearest")
    ax.add_patch(_outline(step, len(keys)))
    ax.set_yticks(range(len(generated)), [token_label(t) for t in generated])
    ax.get_yticklabels()[step].set_color("#d1242f")
    ax.set_xticks(range(len(keys)), [token_label(t) for t in keys], rotation=90)
    what = "mean of heads" if head == -1 else f"head {head}"
    ax.set_title(f"steps x keys · {kind} attention · layer {layer} · {what}")


def _draw_topk(ax: Any, state: GenerationState, step: int, big: bool) -> None:
    """The step's next-token probabilities on the page's one 0–100 % axis, the token the step chose in bold."""
    probs = np.asarray(state.payload.topk_probs[step], np.float64)
    tokens = state.meta.topk_tokens[step]
    k = len(probs)
    ax.barh(range(k), probs, color="#d55e00" if big else "#0969da")
    ax.set_yticks(range(k), [token_label(t) for t in tokens])
    chosen = state.meta.generated[step]
    for label, tok in zip(ax.get_yticklabels(), tokens):
        if tok == chosen:
            label.set_fontweight("bold")
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xticks([0, 0.5, 1], ["0 %", "50 %", "100 %"])
    ax.set_title(f"step {step}: next token")


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
