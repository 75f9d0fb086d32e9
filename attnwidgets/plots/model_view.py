"""Static twin of ModelView: every layer x head as a small heatmap in one grid, as a matplotlib Figure."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..result import AttentionResult
from ..viewdata.checks import check_head, check_kind, check_layer
from ..viewdata.display import is_causal, mask_future
from .style import colormap, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_CMAPS = {"light": "Blues", "lecture": "viridis"}


def plot_model_view(
    result: AttentionResult,
    *,
    kind: str = "self",
    theme: str | None = None,
    cmap: str | None = None,
    highlight: tuple[int, int] | None = None,
    size: float = 1.1,
) -> Figure:
    """Draw every head of ``kind`` attention: layers as rows, heads as columns, each map scaled to its own maximum.

    Parameters
    ----------
    result : AttentionResult
    kind : str
        "self", or "encoder" / "decoder" / "cross" for encoder-decoder results.
    theme : str, optional
        "light" (Blues) or "lecture" (viridis, larger fonts); default the one :func:`attnwidgets.set_theme` chose.
    cmap : str, optional
        Any matplotlib colour map name; overrides the theme's.
    highlight : (layer, head), optional
        Outline one head, as the widget outlines the selected one.
    size : float
        Inches per thumbnail.

    Returns
    -------
    matplotlib.figure.Figure
        Decoder self-attention shows its causal mask (future keys) in light grey.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> r = aw.AttentionResult.from_arrays(np.full((2, 3, 4, 4), 0.25, np.float32), list("abcd"))
    >>> len(aw.plot_model_view(r).axes)
    6
    """
    kind = check_kind(result, kind)
    theme = resolve_theme(theme)
    attention, _, _ = result.attention_of(kind)  # type: ignore[arg-type]
    n_layers, n_heads = attention.shape[:2]
    if highlight is not None:
        highlight = (check_layer(highlight[0], n_layers), check_head(highlight[1], n_heads, allow_mean=False))
    causal = is_causal(result, kind)
    colours = colormap(cmap or _CMAPS.get(theme, "Blues")).with_extremes(bad="#ebebeb")
    font = 14 if theme == "lecture" else 8
    fig = new_figure((size * n_heads + 0.6, size * n_layers + 0.6))
    axes = fig.subplots(n_layers, n_heads, squeeze=False)
    for layer in range(n_layers):
        for head in range(n_heads):
            ax = axes[layer, head]
            m = attention[layer, head]
            m = mask_future(m) if causal else m
            top = float(np.nanmax(m)) if np.isfinite(m).any() else 1.0
            ax.imshow(np.ma.masked_invalid(m), cmap=colours, vmin=0, vmax=top or 1.0, interpolation="nearest",
                      aspect="auto")
            ax.set_xticks([])
            ax.set_yticks([])
            if layer == 0:
                ax.set_title(str(head), fontsize=font)
            if head == 0:
                ax.set_ylabel(f"L{layer}", fontsize=font, rotation=0, ha="right", va="center")
            if highlight == (layer, head):
                for spine in ax.spines.values():
                    spine.set_edgecolor("#d1242f")
                    spine.set_linewidth(2.5)
    fig.suptitle(f"{result.model.name} · {kind} attention · rows: layers, columns: heads", fontsize=font + 2)
    fig.tight_layout()
    return fig
