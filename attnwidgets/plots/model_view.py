"""Static twin of ModelView: every layer x head as a small heatmap in one grid, as a matplotlib Figure."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.patches import Rectangle

from ..result import AttentionResult
from ..viewdata.checks import check_head, check_kind, check_layer
from ..viewdata.display import block_reduce, is_causal, mask_future
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
    >>> len(aw.plot_model_view(r).axes)    # one image of every head
    1
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
    mosaic, (tq, tk) = _mosaic(attention, causal)
    fig = new_figure((size * n_heads + 0.6, size * n_layers + 0.6))
    ax = fig.add_subplot()
    # One image of every head (each scaled to its own maximum, as the widget's thumbnails are): one axes instead of
    # layers x heads of them, so drawing it costs about what one heatmap costs.
    ax.imshow(np.ma.masked_invalid(mosaic), cmap=colours, vmin=0, vmax=1, interpolation="nearest", aspect="auto")
    ax.set_xticks([h * (tk + 1) + (tk - 1) / 2 for h in range(n_heads)], [str(h) for h in range(n_heads)],
                  fontsize=font)
    ax.set_yticks([lay * (tq + 1) + (tq - 1) / 2 for lay in range(n_layers)], [f"L{lay}" for lay in range(n_layers)],
                  fontsize=font)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if highlight is not None:
        layer, head = highlight
        ax.add_patch(Rectangle((head * (tk + 1) - 0.5, layer * (tq + 1) - 0.5), tk, tq, fill=False,
                               edgecolor="#d1242f", linewidth=2.5))
    fig.suptitle(f"{result.model.name} · {kind} attention · rows: layers, columns: heads", fontsize=font + 2)
    fig.tight_layout()
    return fig


def _mosaic(attention: np.ndarray, causal: bool, side: int = 32) -> tuple[np.ndarray, tuple[int, int]]:
    """Every head's map, block-max reduced to at most ``side`` cells a side and scaled to its own maximum, tiled
    layers x heads with a one-cell NaN gap (drawn as the background): ``(mosaic, (rows, cols) of one tile)``."""
    n_layers, n_heads, n_q, n_k = attention.shape
    factor = max(1, -(-max(n_q, n_k) // side))
    maps = mask_future(attention) if causal else np.asarray(attention, dtype=np.float32)
    small = block_reduce(maps, factor, "max") if factor > 1 else maps
    top = np.nanmax(np.where(np.isfinite(small), small, -np.inf), axis=(-2, -1), keepdims=True)
    scaled = small / np.where(top > 0, top, 1.0)
    tq, tk = scaled.shape[-2:]
    mosaic = np.full((n_layers * (tq + 1) - 1, n_heads * (tk + 1) - 1), np.nan, dtype=np.float32)
    for layer in range(n_layers):
        for head in range(n_heads):
            mosaic[layer * (tq + 1): layer * (tq + 1) + tq, head * (tk + 1): head * (tk + 1) + tk] = scaled[layer, head]
    return mosaic, (tq, tk)
