"""Static twin of :class:`~attnwidgets.widgets.RouterView`: a mixture-of-experts model's routing drawn from the view's
state (:mod:`attnwidgets.viewdata.views.routers`): which expert each token goes to in each layer (a token x layer
strip) and one layer's load per expert over the selected tokens (bars, 0–100 %), as a matplotlib Figure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..router_result import RouterResult
from ..viewdata.labels import token_label
from ..viewdata.selection import check_selection
from ..viewdata.views.routers import (
    RouterLoad,
    RouterState,
    check_router_layer,
    expert_rgb,
    load_title,
    router_state,
)
from .style import lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["STRIP_TITLE", "paint_routers", "plot_routers"]

#: The strip's heading (js/src/views/routers/state.ts ``STRIP_TITLE`` is the same).
STRIP_TITLE = "top expert of each token (strength: its gate weight)"


@lecture_fit
def paint_routers(state: RouterState, ax: Any = None, *, layer: int | None = None,
                  selection: Sequence[int] | None = None, weighted: bool = False, theme: str | None = None) -> Figure:
    """Draw a RouterView's state (:func:`~attnwidgets.viewdata.views.routers.router_state`) as its page draws it:
    the token x layer strip from the state's experts and gate weights (``selection``'s rows outlined, ``layer``'s
    column marked) and ``layer``'s load per expert over the selection, which the page computes from the same arrays
    (:meth:`~attnwidgets.router_result.RouterResult.load`'s rule), on its fixed 0–100 % axis; the page's titles.

    Parameters
    ----------
    state : RouterState
    ax : matplotlib Axes, optional
        Split its place into the strip and the bars instead of drawing a new figure.
    layer, selection, weighted, theme
        As :func:`plot_routers`'s (the widget's traits of those names; ``layer`` defaults to the first MoE layer).

    Examples
    --------
    >>> from attnwidgets.viewdata.views.routers import router_state
    >>> r = RouterResult(["a", "b", "c"], [0, 2], np.zeros((2, 3, 4), np.float32),
    ...                  np.array([[[0, 1], [2, 3], [0, 2]], [[3, 0], [3, 1], [1, 2]]]),
    ...                  np.full((2, 3, 2), 0.5, np.float32))
    >>> fig = paint_routers(router_state(r), layer=2, selection=[0, 1])
    >>> bars = fig.axes[1]
    >>> bars.get_title(), [round(b.get_height()) for b in bars.patches], bars.get_ylim() == (0, 100)
    ('load per expert, layer 2, tokens 0–1', [25, 25, 0, 50], True)
    """
    return _paint(state, ax, layer, selection, weighted, theme)


def _paint(state: RouterState, ax: Any, layer: int | None, selection: Sequence[int] | None, weighted: bool,
           theme: str | None) -> Figure:
    m = state.meta
    layer = check_router_layer(m.layers[0] if layer is None else layer, m.layers)
    sel = sorted(check_selection(list(selection or ()), len(m.tokens)))
    shown = _state_load(state, layer, sel, bool(weighted))
    big = resolve_theme(theme) == "lecture"
    if ax is None:
        # constrained: the suptitle above both panel titles
        fig = new_figure((4.5 + 0.6 * len(m.layers) + 0.35 * m.n_experts, min(20.0, 2.2 + 0.28 * len(m.tokens))),
                         layout="constrained")
        left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": _widths(state)})
    else:
        fig = ax.figure
        cells = ax.get_subplotspec().subgridspec(1, 2, width_ratios=_widths(state))
        ax.remove()
        left, right = (fig.add_subplot(cell) for cell in cells)
    _draw(state, shown, layer, sel, left, right, big)
    return fig


def _state_load(state: RouterState, layer: int, selection: Sequence[int], weighted: bool) -> RouterLoad:
    """The bars the page draws from the state's arrays: ``layer``'s share of the assignments (or of the gate weight
    with ``weighted``) per expert over ``selection`` (every token when empty), as
    :meth:`~attnwidgets.router_result.RouterResult.load` counts them, and their title."""
    m, p = state.meta, state.payload
    rows = list(selection) or list(range(len(m.tokens)))
    li = m.layers.index(layer)
    experts = p.experts[li, rows].astype(np.int64).ravel()
    out = np.zeros(m.n_experts, np.float64)
    np.add.at(out, experts, p.weights[li, rows].astype(np.float64).ravel() if weighted else 1.0)
    total = out.sum()
    return RouterLoad((out / (total if total > 0 else 1.0)).astype(np.float32), load_title(layer, selection, weighted))


def _widths(state: RouterState) -> list[float]:
    return [max(1.5, 0.6 * len(state.meta.layers) + 1), max(2.0, 0.35 * state.meta.n_experts)]


def _draw(state: RouterState, shown: RouterLoad, layer: int, selection: Sequence[int], left: Any, right: Any,
          big: bool) -> None:
    """Draw ``state``'s strip in ``left`` (``selection``'s rows outlined, ``layer``'s column marked) and ``shown``'s
    bars in ``right``."""
    m, p = state.meta, state.payload
    fig = left.figure
    font = 14 if big else 9
    n, n_layers = len(m.tokens), len(m.layers)
    experts, weights = p.experts.astype(np.int64), p.weights
    strip = np.array([[expert_rgb(m.palette, m.fade_floor, experts[li, t, 0], weights[li, t, 0])
                       for li in range(n_layers)] for t in range(n)]).reshape(n, n_layers, 3)  # (T, L, 3)
    left.imshow(strip, aspect="auto", interpolation="nearest")
    if n <= 48 and n_layers <= 16:
        for t in range(n):
            for li in range(n_layers):
                label = "·".join(str(int(e)) for e in experts[li, t])
                left.text(li, t, label, ha="center", va="center", fontsize=font - 2, color=".1")
    left.set_yticks(range(n), [token_label(tok) for tok in m.tokens] if n <= 80 else [""] * n, fontsize=font)
    left.set_xticks(range(n_layers), [str(x) for x in m.layers], fontsize=font)
    left.set_xlabel("layer", fontsize=font)
    from matplotlib.patches import Rectangle

    col = m.layers.index(layer)
    # dark outlines (an accent colour would vanish against the palette's orange); the selected tokens' labels bold
    left.add_patch(Rectangle((col - 0.5, -0.5), 1, n, fill=False, edgecolor=".1", linewidth=3.0))
    for t in selection:
        left.add_patch(Rectangle((-0.5, t - 0.5), n_layers, 1, fill=False, edgecolor=".1", linewidth=1.5))
    for t, tick in enumerate(left.get_yticklabels()):
        tick.set_fontweight("bold" if t in selection else "normal")
    left.get_xticklabels()[col].set_fontweight("bold")
    left.set_title(STRIP_TITLE, fontsize=font)
    pct = 100 * np.asarray(shown.load, np.float64)
    colours = [expert_rgb(m.palette, m.fade_floor, e, 1.0) for e in range(m.n_experts)]
    right.bar(range(m.n_experts), pct, color=colours, edgecolor=".2", linewidth=0.5)
    right.axhline(100 / m.n_experts, color=".2", linestyle="--", linewidth=1.2)
    right.set_ylim(0, 100)
    right.set_xticks(range(m.n_experts), [str(e) for e in range(m.n_experts)] if m.n_experts <= 32 else
                     [str(e) if e % 8 == 0 else "" for e in range(m.n_experts)], fontsize=font)
    right.tick_params(axis="y", labelsize=font)
    right.set_xlabel(f"expert (dashed: balanced, {100 / m.n_experts:.1f} %)", fontsize=font)
    right.set_ylabel("share (%)", fontsize=font)
    right.set_title(shown.title, fontsize=font)
    fig.suptitle(m.title, fontsize=font + 2)


@lecture_fit
def plot_routers(result: RouterResult, *, layer: int | None = None, selection: Sequence[int] | None = None,
                 weighted: bool = False, theme: str | None = None) -> Figure:
    """Draw the routing as :class:`~attnwidgets.widgets.RouterView` shows it: ① a token x layer strip, each cell
    coloured by the token's top expert (its strength the gate weight, the same palette) and labelled with its k
    experts ("3·1"), ``layer``'s column and the selected rows outlined; ② ``layer``'s load per expert over the
    selected tokens (all by default), 0–100 %: the share of the token-slot assignments, or of the gate weight with
    ``weighted`` (:meth:`RouterResult.load`).

    Parameters
    ----------
    result : RouterResult
        From :func:`attnwidgets.runner.route`.
    layer : int, optional
        The layer whose load is drawn (the model's layer number; default the first MoE layer).
    selection : list of int, optional
        Token positions to outline and to count the load over.
    weighted : bool
        Load as a share of the gate weight instead of the assignments.
    theme : str, optional
        "light" or "lecture".

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> r = RouterResult(["a", "b", "c"], [0, 2], np.zeros((2, 3, 4), np.float32),
    ...                  np.array([[[0, 1], [2, 3], [0, 2]], [[3, 0], [3, 1], [1, 2]]]),
    ...                  np.full((2, 3, 2), 0.5, np.float32))
    >>> fig = plot_routers(r, layer=2, selection=[0, 1])
    >>> fig.axes[1].get_title(), [round(b.get_height()) for b in fig.axes[1].patches]
    ('load per expert, layer 2, tokens 0–1', [25, 25, 0, 50])
    """
    return _paint(router_state(result), None, layer, selection, weighted, theme)  # router_state checks the type
