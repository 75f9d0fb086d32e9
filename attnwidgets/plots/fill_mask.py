"""Static twin of FillMask: the top-k fillers of each [MASK] as bars, and where one [MASK] attends."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from ..viewdata.labels import token_label
from ..viewdata.selection import check_selection, span_label
from ..viewdata.views.fill_mask import FillMaskState, fill_mask_row, fill_mask_state
from .style import lecture_fit, lecture_fonts, missing_glyphs_quiet, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["paint_fill_mask", "plot_fill_mask"]

_ACCENT = {"light": "#d1242f", "lecture": "#d55e00"}
_BAR = "#4c72b0"


@lecture_fit
def plot_fill_mask(view: Any, mask: int = 0, layer: int = -1, head: int = -1, *, selection: list[int] | None = None,
                   combine: str = "mean", theme: str | None = None) -> Figure:
    """The fillers of every [MASK] (bars: probability on a fixed 0–100 % axis) and the attention of one [MASK] over
    the tokens; titled with the model and, under the figure, whose guesses these are (``view["head"]``: for the bundled
    model the head attnwidgets trained on its frozen encoder, with its measured top-1 against the word-frequency
    baseline).

    Parameters
    ----------
    view : dict or FillMask
        What :func:`attnwidgets.studies.masked_lm.fill_mask_view` returns (``FillMask(...).view``), or the widget.
    mask : int
        Which [MASK]'s attention to draw (0 = the first).
    layer : int
        The layer (-1: the last).
    head : int
        One head, or -1 for the mean over the layer's heads.
    selection : list of int, optional
        Query tokens, as the widget's ``selection``: the panel draws the ``combine`` ("mean" or "sum") of their rows,
        their bars and labels in the accent colour (default: [MASK] ``mask``'s row).
    combine : str
        "mean" or "sum" of the selected rows.
    theme : str, optional
        "light" or "lecture" (default: the current theme).
    """
    v = getattr(view, "view", view)
    if not isinstance(v, dict) or not {"tokens", "positions", "fills", "rows"} <= set(v):
        raise TypeError("plot_fill_mask takes what fill_mask_view returns (or a FillMask widget), got "
                        f"{type(view).__name__}")
    # The page's own state (viewdata.views.fill_mask): its fillers, rows, title and note are what is drawn.
    state = fill_mask_state({**v, "model": v.get("model", "")}, str(getattr(view, "text", v.get("text", ""))))
    return _paint(state, None, mask, layer, head, selection, combine, theme)


@lecture_fit
def paint_fill_mask(state: FillMaskState, ax: Any = None, *, mask: int = 0, layer: int = -1, head: int = -1,
                    selection: list[int] | None = None, combine: str = "mean", theme: str | None = None) -> Figure:
    """Draw a FillMask's state (:func:`~attnwidgets.viewdata.views.fill_mask.fill_mask_state`) as its page draws
    it: every [MASK]'s fillers on one fixed 0–100 % probability axis, the attention row of [MASK] ``mask`` (or of the
    ``selection``'s query rows), the page's titles, and under them whose guesses these are (the state's ``head``).

    Parameters
    ----------
    state : FillMaskState
    ax : matplotlib Axes, optional
        Split its place into the panels instead of drawing a new figure.
    mask, layer, head, selection, combine, theme
        As :func:`plot_fill_mask`'s (the widget's traits of those names).

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.viewdata.views.fill_mask import fill_mask_state
    >>> view = {"tokens": ["[CLS]", "[MASK]", "[SEP]"], "positions": [1], "model": "toy", "head": "toy's own head.",
    ...         "fills": [{"tokens": ["a", "b"], "probs": [0.75, 0.25]}], "rows": np.full((1, 2, 3, 3), 1 / 3)}
    >>> fig = paint_fill_mask(fill_mask_state(view, "[MASK]"))
    >>> fig.get_suptitle(), fig.axes[0].get_xlim() == (0, 1), fig.axes[1].get_title()
    ('toy · fill in the [MASK]', True, 'Where [MASK] #1 attends: layer 1, mean of the heads')
    """
    return _paint(state, ax, mask, layer, head, selection, combine, theme)


def _paint(state: FillMaskState, ax: Any, mask: int, layer: int, head: int, selection: list[int] | None,
           combine: str, theme: str | None) -> Figure:
    p, meta = state.payload, state.meta
    n_masks, n_layers, n_heads, n = meta.shape
    if not 0 <= mask < n_masks:
        raise ValueError(f"mask {mask} is out of range: the text has {n_masks} [MASK] (0..{n_masks - 1})")
    layer = n_layers - 1 if layer == -1 else layer
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer {layer} is out of range: there are {n_layers} layers (0..{n_layers - 1})")
    if not -1 <= head < n_heads:
        raise ValueError(f"head {head} is out of range: there are {n_heads} heads (0..{n_heads - 1}, or -1)")
    own = [int(p.positions[mask])]
    picked = check_selection([] if selection is None else selection, n) or own
    row = fill_mask_row({"rows": p.rows, "attention": p.attention}, layer, head,
                        picked if selection and picked != own else None, combine, mask)
    name = resolve_theme(theme)
    accent = _ACCENT.get(name, _ACCENT["light"])
    with lecture_fonts(name), missing_glyphs_quiet():
        if ax is None:
            fig = new_figure((max(8.0, 2.6 * n_masks + 0.55 * n), 6.0), layout="constrained")
            grid = fig.add_gridspec(2, n_masks, height_ratios=[1, 1])
        else:
            fig = ax.figure
            grid = ax.get_subplotspec().subgridspec(2, n_masks, height_ratios=[1, 1])
            ax.remove()
        # One fixed 0-100 % axis for every [MASK], as on the page: an 8 % guess is a short bar, not a full one.
        for m, fill in enumerate(p.fills):
            ax = fig.add_subplot(grid[0, m])
            labels = [token_label(t) for t in fill.tokens][::-1]
            probs = list(fill.probs)[::-1]
            ax.barh(range(len(probs)), probs, color=accent if m == mask else _BAR)
            ax.set_yticks(range(len(probs)), labels)
            ax.set_xlim(0, 1)
            ax.set_xticks([0, 0.5, 1], ["0 %", "50 %", "100 %"])
            for i, prob in enumerate(probs):
                ax.text(prob, i, f" {100 * prob:.1f} %", va="center")
            ax.set_title(f"[MASK] #{m + 1} (token {p.positions[m]})")
            ax.set_xlabel("probability")
        fig.suptitle(fill_title(meta.model, meta.head))
        if meta.head:
            # wrapped narrow enough for the narrowest figure (8 in) in the lecture theme's large font
            fig.supxlabel("\n".join(textwrap.wrap(meta.head, 72)), fontsize="small")
        ax = fig.add_subplot(grid[1, :])
        colors = [accent if j in picked else _BAR for j in range(n)]
        ax.bar(range(n), row, color=colors)
        ax.set_xticks(range(n), [token_label(t) for t in p.tokens], rotation=45, ha="right")
        for j, tick in enumerate(ax.get_xticklabels()):
            if j in picked:
                tick.set_color(accent)
                tick.set_fontweight("bold")
        ax.set_ylabel("attention" if combine == "mean" or picked == own else "attention (sum)")
        ax.set_title(row_title(mask, layer, head, p.tokens, picked, combine, own))
    return fig


def fill_title(model: str, head: str) -> str:
    """The page's title (js/src/views/fill_mask/state.ts ``fillTitle``): the model, and when the guesses come from a
    head attnwidgets trained (not the model's own), that.

    >>> fill_title("bert", "Not the model's own head: ..."), fill_title("bert", "")
    ("bert · fill in the [MASK] · attnwidgets' head", 'bert · fill in the [MASK]')
    """
    return f"{model} · fill in the [MASK]" + (" · attnwidgets' head" if head.startswith("Not the model's own head")
                                              else "")


def row_title(mask: int, layer: int, head: int, tokens: list[str], picked: list[int], combine: str,
              own: list[int]) -> str:
    """The title over the attention row (js/src/views/fill_mask/state.ts ``rowTitle``): whose row it is (the
    [MASK]'s, as the page words it, or the selected tokens', in :func:`span_label`'s words), the layer and the
    head.

    >>> row_title(0, 2, -1, ["a", "[MASK]", "c"], [1], "mean", [1])
    'Where [MASK] #1 attends: layer 2, mean of the heads'
    >>> row_title(0, 2, 3, ["a", "[MASK]", "c"], [0, 2], "sum", [1])
    'Where sum of 2 rows: a · c attends: layer 2, head 3'
    """
    which = "mean of the heads" if head < 0 else f"head {head}"
    if picked == own:
        return f"Where [MASK] #{mask + 1} attends: layer {layer}, {which}"
    # the selection named as span_label names it ("sum of 2 rows: New York (4–5)"), which the page's rowTitle words
    # as "New York (4–5) attend (sum of 2 rows)": the same parts, kept in the caption's order that other twins use
    return f"Where {span_label(tokens, picked, combine)} attends: layer {layer}, {which}"
