"""Static twin of :class:`~attnwidgets.widgets.RouterView`: a mixture-of-experts model's routing drawn from the view's
state (:mod:`attnwidgets.viewdata.views.routers`): which expert each token goes to in each layer (a token x layer
strip) and one layer's load per expert over the selected tokens (bars, 0–100 %), as a matplotlib Figure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..router_result import RouterResult
from ..viewdata.labels import token_label
from ..viewdata.views.routers import (
    RouterLoad,
    RouterOptions,
    RouterState,
    expert_rgb,
    router_load,
    router_state,
)
from .style import lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["STRIP_TITLE", "paint_routers", "plot_routers"]

#: The strip's heading (js/src/views/routers/state.ts ``STRIP_TITLE`` is the same).
STRIP_TITLE = "top expert of each token (strength: its gate weight)"


def paint_routers(state: RouterState, shown: RouterLoad, layer: int, selection: Sequence[int], fig: Figure,
                  big: bool) -> None:
    """Draw ``state``'s strip (``selection``'s rows outlined, ``layer``'s column marked) and ``shown``'s bars in
    ``fig``."""
    m, p = state.meta, state.payload
    font = 14 if big else 9
    n, n_layers = len(m.tokens), len(m.layers)
    experts, weights = p.experts.astype(np.int64), p.weights
    strip = np.array([[expert_rgb(m.palette, m.fade_floor, experts[li, t, 0], weights[li, t, 0])
                       for li in range(n_layers)] for t in range(n)]).reshape(n, n_layers, 3)  # (T, L, 3)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [max(1.5, 0.6 * n_layers + 1),
                                                                   max(2.0, 0.35 * m.n_experts)]})
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
    state = router_state(result)  # checks the type
    options = RouterOptions(result.layers[0] if layer is None else layer, tuple(sorted(selection or ())),
                            bool(weighted))
    shown = router_load(result, options)
    big = resolve_theme(theme) == "lecture"
    n = len(result.tokens)
    # constrained: the suptitle above both panel titles
    fig = new_figure((4.5 + 0.6 * len(result.layers) + 0.35 * result.n_experts, min(20.0, 2.2 + 0.28 * n)),
                     layout="constrained")
    paint_routers(state, shown, options.layer, options.selection, fig, big)
    return fig
