"""Static twin of FillMask: the top-k fillers of each [MASK] as bars, and where one [MASK] attends."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np

from ..viewdata.labels import token_label
from ..viewdata.selection import check_selection, span_label
from ..viewdata.views.fill_mask import fill_mask_row
from .style import lecture_fit, lecture_fonts, missing_glyphs_quiet, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_fill_mask"]

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
    rows = np.asarray(v["rows"])
    n_masks, n_layers, n_heads, n = rows.shape
    if not 0 <= mask < n_masks:
        raise ValueError(f"mask {mask} is out of range: the text has {n_masks} [MASK] (0..{n_masks - 1})")
    layer = n_layers - 1 if layer == -1 else layer
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer {layer} is out of range: there are {n_layers} layers (0..{n_layers - 1})")
    if not -1 <= head < n_heads:
        raise ValueError(f"head {head} is out of range: there are {n_heads} heads (0..{n_heads - 1}, or -1)")
    picked = check_selection([] if selection is None else selection, n) or [int(v["positions"][mask])]
    row = fill_mask_row(v, layer, head, picked if selection else None, combine, mask)
    name = resolve_theme(theme)
    accent = _ACCENT.get(name, _ACCENT["light"])
    with lecture_fonts(name), missing_glyphs_quiet():
        fig = new_figure((max(8.0, 2.6 * n_masks + 0.55 * n), 6.0), layout="constrained")
        grid = fig.add_gridspec(2, n_masks, height_ratios=[1, 1])
        # One fixed 0-100 % axis for every [MASK], as on the page: an 8 % guess is a short bar, not a full one.
        for m, fill in enumerate(v["fills"]):
            ax = fig.add_subplot(grid[0, m])
            labels = [token_label(t) for t in fill["tokens"]][::-1]
            probs = list(fill["probs"])[::-1]
            ax.barh(range(len(probs)), probs, color=accent if m == mask else _BAR)
            ax.set_yticks(range(len(probs)), labels)
            ax.set_xlim(0, 1)
            ax.set_xticks([0, 0.5, 1], ["0 %", "50 %", "100 %"])
            for i, p in enumerate(probs):
                ax.text(p, i, f" {100 * p:.1f} %", va="center")
            ax.set_title(f"[MASK] #{m + 1} (token {v['positions'][m]})")
            ax.set_xlabel("probability")
        head_text = str(v.get("head", ""))
        ours = head_text.startswith("Not the model's own head")
        fig.suptitle(f"{v.get('model', '')} · fill in the [MASK]" + (" · attnwidgets' head" if ours else ""))
        if head_text:
            # wrapped narrow enough for the narrowest figure (8 in) in the lecture theme's large font
            fig.supxlabel("\n".join(textwrap.wrap(head_text, 72)), fontsize="small")
        ax = fig.add_subplot(grid[1, :])
        colors = [accent if j in picked else _BAR for j in range(n)]
        ax.bar(range(n), row, color=colors)
        labels = [token_label(t) for t in v["tokens"]]
        ax.set_xticks(range(n), labels, rotation=45, ha="right")
        for j, tick in enumerate(ax.get_xticklabels()):
            if j in picked:
                tick.set_color(accent)
                tick.set_fontweight("bold")
        ax.set_ylabel("attention" if combine == "mean" or not selection else "attention (sum)")
        which = "mean of the heads" if head == -1 else f"head {head}"
        who = (f"[MASK] #{mask + 1}" if not selection or picked == [int(v["positions"][mask])]
               else span_label(labels, picked, combine))
        ax.set_title(f"where {who} attends: layer {layer}, {which}")
    return fig
