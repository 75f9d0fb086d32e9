"""BERT's input as a picture: per token the token, segment and position embeddings, their sum and the sum after
LayerNorm (heat strips over the first dimensions), and the size of each part (its norm, per token).

The figure takes an :class:`~attnwidgets.teaching.embeddings.InputEmbeddings` by its attributes (plots never import
the teaching kit).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..viewdata.labels import token_label
from ..viewdata.theme import resolve_theme
from .style import fit_panels, missing_glyphs_quiet, panel_grid

__all__ = ["plot_input_embeddings"]

_PARTS = (("token", "token"), ("segment", "segment"), ("position", "position"), ("total", "sum"))
_COLOURS = {"token": "#1f77b4", "segment": "#d62728", "position": "#2ca02c", "sum": "#000000"}
_MARKERS = {"token": "o", "segment": "D", "position": "^", "sum": "s"}
_SENTENCE = ("#1f4e99", "#b35900")  # A, B: the tick labels' colours


def plot_input_embeddings(parts: Any, *, dims: int = 16, theme: str | None = None) -> Figure:
    """Per token (rows; sentence A in blue, B in orange, a line between them) the first ``dims`` dimensions of the
    token, segment and position embeddings and of their sum, on one colour scale (they are added, so their sizes
    compare), the sum after LayerNorm on its own scale, and the norm of every part per token.

    ``parts`` is an :class:`~attnwidgets.teaching.embeddings.InputEmbeddings` (anything with ``tokens``, ``part``,
    ``token``, ``segment``, ``position``, ``total``, ``normed``, ``model`` and ``segment_rows``).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> x = np.ones((3, 8), np.float32)
    >>> p = SimpleNamespace(tokens=["[CLS]", "a", "[SEP]"], part=np.array([0, 0, 1]), token=x, segment=x,
    ...                     position=x, total=3 * x, normed=x, model="m", segment_rows=2)
    >>> fig = plot_input_embeddings(p, dims=4, theme="light")
    >>> [ax.get_title() for ax in fig.axes if ax.get_title()][3:]
    ['sum = token + segment + position', 'LayerNorm(sum): what layer 0 reads', 'norm per token']
    """
    tokens = list(parts.tokens)
    n = len(tokens)
    arrays = {k: np.asarray(getattr(parts, k), dtype=np.float64) for k in ("token", "segment", "position", "total",
                                                                         "normed")}
    if any(a.ndim != 2 or a.shape[0] != n for a in arrays.values()):
        raise ValueError(f"every part must be (tokens={n}, dims), got {[a.shape for a in arrays.values()]}")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise ValueError(f"dims must be a positive integer, got {dims!r}")
    k = min(dims, arrays["token"].shape[1])
    part = np.asarray(parts.part, dtype=np.int64)
    theme = resolve_theme(theme)
    fig, axes = panel_grid(6, (3.6, max(3.2, 0.24 * n + 1.2)), cols=3, theme=theme)
    shared = max(float(np.abs(arrays[key][:, :k]).max()) for key, _ in _PARTS) or 1.0
    labels = [token_label(t) for t in tokens]
    boundary = int(np.argmax(part > 0)) if (part > 0).any() else None
    segment_title = "segment" if getattr(parts, "segment_rows", 2) >= 2 else (
        "segment (one row for all)" if getattr(parts, "segment_rows", 0) == 1 else "segment (none: zeros)")

    def strip(ax: Any, values: np.ndarray, title: str, vmax: float, bar: bool) -> None:
        im = ax.imshow(values[:, :k], cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto", interpolation="nearest")
        ax.set_title(title)
        ax.set_xlabel(f"dimension (first {k})")
        if bar:  # one colour bar per scale (each one costs a layout pass)
            fig.colorbar(im, ax=ax, shrink=0.8)
        _token_axis(ax, labels, part, boundary)

    with missing_glyphs_quiet():
        for ax, (key, name) in zip(axes, _PARTS):
            title = segment_title if key == "segment" else (
                "sum = token + segment + position" if key == "total" else name)
            strip(ax, arrays[key], title, shared, key == "total")
        strip(axes[4], arrays["normed"], "LayerNorm(sum): what layer 0 reads",
              float(np.abs(arrays["normed"][:, :k]).max()) or 1.0, True)
        ax = axes[5]
        y = np.arange(n)
        for key, name in _PARTS:  # segment and position are often about the same size: open markers show both
            ax.plot(np.linalg.norm(arrays[key], axis=-1), y, _MARKERS[name], color=_COLOURS[name], label=name,
                    markersize=7, markerfacecolor="none" if name in ("segment", "position") else _COLOURS[name])
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_xlim(left=0)
        ax.set_xlabel("norm (all dimensions)")
        ax.set_title("norm per token")
        ax.legend(frameon=False, loc="lower right", fontsize="small")
        _token_axis(ax, labels, part, boundary)
        fig.suptitle(f"input of {parts.model}: token + segment + position (one colour scale), then LayerNorm")
    return fit_panels(fig, theme)


def _token_axis(ax: Any, labels: list[str], part: np.ndarray, boundary: int | None) -> None:
    ax.set_yticks(range(len(labels)), labels)
    for tick, p in zip(ax.get_yticklabels(), part.tolist()):
        tick.set_color(_SENTENCE[min(int(p), 1)])
    if boundary is not None:
        ax.axhline(boundary - 0.5, color="black", linewidth=1.5)
