"""Static view of a mixture-of-experts model's routing: which expert each token goes to in each layer (a token x layer
strip) and the load per expert (a layer x expert grid), as a matplotlib Figure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.colors import to_rgb

from ..router_result import RouterResult
from ..viewdata.labels import token_label
from .style import COLORBLIND, cell_map, colormap, lecture_fit, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def expert_colour(expert: int, weight: float) -> np.ndarray:
    """RGB of an expert (the colour-blind-safe palette, cycled past ten) faded toward white as its gate weight
    falls: a weight of 1 is the full colour, 0 is white.

    >>> expert_colour(0, 1.0).round(3).tolist(), expert_colour(0, 0.0).tolist()
    ([0.004, 0.451, 0.698], [1.0, 1.0, 1.0])
    """
    base = np.asarray(to_rgb(COLORBLIND[expert % len(COLORBLIND)]))
    w = float(np.clip(weight, 0.0, 1.0))
    return base * w + (1.0 - w)


@lecture_fit
def plot_routers(result: RouterResult, *, span: Any = None, weighted: bool = False, theme: str | None = None
                 ) -> Figure:
    """Draw the routing: ① a token x layer strip, each cell coloured by the token's first expert (faded by its gate
    weight) and labelled with its k experts ("3·1"); the rows of ``span`` outlined. ② The load per expert in each
    layer over the tokens of ``span`` (all by default): the share of the token-slot assignments, or of the gate
    weight with ``weighted`` (:meth:`RouterResult.load`).

    Parameters
    ----------
    result : RouterResult
        From :func:`attnwidgets.runner.route`.
    span : (start, stop), range or slice, optional
        Token rows to outline and to count the load over.
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
    >>> fig = plot_routers(r, span=(0, 2))
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['① first expert of each token', '② load per expert, tokens 0–1']
    """
    if not isinstance(result, RouterResult):
        raise TypeError(f"plot_routers takes a RouterResult (from attnwidgets.runner.route), got "
                        f"{type(result).__name__}")
    theme = resolve_theme(theme)
    big = theme == "lecture"
    font = 14 if big else 9
    rows = result.span_rows(span)
    n, n_layers = len(result.tokens), len(result.layers)
    strip = np.stack([[expert_colour(int(result.experts[li, t, 0]), float(result.weights[li, t, 0]))
                       for li in range(n_layers)] for t in range(n)])  # (T, L, 3)
    # constrained: the suptitle above both panel titles (it met panel ①'s title in the light theme)
    fig = new_figure((4 + 0.9 * n_layers + 0.5 * result.n_experts, min(20.0, 1.8 + 0.28 * n)), layout="constrained")
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [max(1, n_layers), max(2, result.n_experts)]})
    left.imshow(strip, aspect="auto", interpolation="nearest")
    if n <= 48 and n_layers <= 16:
        for t in range(n):
            for li in range(n_layers):
                label = "·".join(str(int(e)) for e in result.experts[li, t])
                left.text(li, t, label, ha="center", va="center", fontsize=font - 2, color=".1")
    left.set_yticks(range(n), [token_label(tok) for tok in result.tokens] if n <= 80 else [""] * n, fontsize=font)
    left.set_xticks(range(n_layers), [str(layer) for layer in result.layers], fontsize=font)
    left.set_xlabel("layer", fontsize=font)
    if span is not None:
        from matplotlib.patches import Rectangle

        left.add_patch(Rectangle((-0.5, rows.start - 0.5), n_layers, rows.stop - rows.start, fill=False,
                                 edgecolor=colormap("Greys")(0.95), linewidth=2.0))
    left.set_title("① first expert of each token", fontsize=font + 1)
    load = result.load(span, weighted=weighted)
    cell_map(right, load, cmap="Blues", vmin=0.0, vmax=float(load.max()) or 1.0, annotate=result.n_experts <= 16,
             fontsize=font - 2, xticklabels=[str(e) for e in range(result.n_experts)],
             yticklabels=[str(layer) for layer in result.layers])
    right.set_xlabel("expert", fontsize=font)
    right.set_ylabel("layer", fontsize=font)
    where = "all tokens" if span is None else f"tokens {rows.start}–{rows.stop - 1}"
    right.set_title(f"② {'gate weight' if weighted else 'load'} per expert, {where}", fontsize=font + 1)
    name = result.model.name if result.model is not None else "arrays"
    fig.suptitle(f"{name} · top-{result.top_k} of {result.n_experts} experts · balanced load = "
                 f"{1 / result.n_experts:.2f}", fontsize=font + 2)
    return fig
