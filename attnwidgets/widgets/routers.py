"""RouterView: which experts a mixture-of-experts decoder sends each token to, layer by layer, with the gate weights
and the load per expert (front end: js/src/views/routers/)."""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..router_result import RouterResult
from ..viewdata.selection import check_selection
from ..viewdata.views.routers import RouterOptions, check_router_layer, router_load, router_state
from ._base import AttnWidget, Index, checked
from ._span import Selection

__all__ = ["RouterView"]


class RouterView(AttnWidget):
    """A token x layer strip of a mixture-of-experts decoder's routing, and the load per expert of one layer.

    Each cell is a token (row) in a MoE layer (column), coloured by the expert with the highest gate weight, the
    colour's strength its gate weight, and labelled with the k experts chosen ("3·1"). Hovering a cell names the
    token, the layer and every chosen expert with its gate weight. Clicking a cell selects its token and shows its
    layer's load per expert as bars (0–100 %: each expert's share of the token-slot assignments, or with
    ``weighted`` of the gate weight; a balanced router is the dashed 1/E line, what Fedus et al. 2022's
    load-balancing loss aims for); clicking a layer's number shows that layer without changing the selection. Top-k
    gating as in Shazeer et al. 2017, Mixtral (Jiang et al. 2024) and OLMoE (Muennighoff et al. 2024).

    Select tokens as in the heatmap: click one, shift-click to extend to a span, ctrl/cmd-click to add or remove
    one, Escape clears. The bars then count the selected tokens only (:meth:`RouterResult.load` over them), and
    :func:`attnwidgets.widgets.link_span` links ``selection`` with a heatmap of the same text (``aw.run(text,
    model=...)``: the same tokens), so selecting a span there redraws the bars here.

    Parameters
    ----------
    routes : RouterResult
        From :func:`attnwidgets.runner.route`.
    layer : int
        The layer whose load the bars show (the model's layer number; default the first MoE layer).
    selection : list of int
        Selected tokens (the bars count them; [] is every token).
    weighted : bool
        Count the gate weight each expert gets instead of the assignments (default False).
    theme : str
        "light" or "lecture".

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> from attnwidgets.router_result import RouterResult
    >>> r = RouterResult(["The", " cat", " sat"], [0, 1], np.zeros((2, 3, 4), np.float32),
    ...                  np.array([[[0, 1], [2, 3], [0, 2]], [[3, 0], [3, 1], [1, 2]]]),
    ...                  np.full((2, 3, 2), 0.5, np.float32))
    >>> view = aw.RouterView(r, layer=1, selection=[0, 1])
    >>> view.load().tolist()   # layer 1, tokens 0-1: expert 3 twice, experts 0 and 1 once each
    [0.25, 0.25, 0.0, 0.5]
    """

    _bundle = "routers"

    layer = Index(0).tag(sync=True)
    """int, default the first MoE layer: the layer whose load per expert the bars draw (the model's layer number,
    one with a router). Two-way: clicking a cell or a layer's number in the page sets it."""

    selection = Selection().tag(sync=True)
    """list[int], default []: the selected tokens (sorted positions; [] counts every token). Click a token's cell to
    select it, shift-click to extend to a contiguous span, ctrl/cmd-click to add or remove one, Escape to clear.
    :func:`attnwidgets.widgets.link_span` links it with the heatmap's ``selection``."""

    weighted = traitlets.Bool(False).tag(sync=True)
    """bool, default False: the bars show each expert's share of the gate weight instead of the assignments. Two-way:
    the page's "weighted" box sets it."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, tokens, layers (the model's layer number of each column), n_experts, top_k, renormalised, the
    palette (one hex colour per expert, cycled) and the fade floor of the cells' strength."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {experts (L, T, k) float32 expert indices, weights (L, T, k) float32 gate weights}: the page draws the
    strip and computes the bars of any layer and selection from them, with no round trip."""

    def __init__(self, routes: RouterResult, **kwargs: Any) -> None:
        if not isinstance(routes, RouterResult):
            raise TypeError(f"RouterView takes a RouterResult (from attnwidgets.runner.route), got "
                            f"{type(routes).__name__}")
        self._routes = routes
        kwargs.setdefault("layer", routes.layers[0])
        super().__init__(**kwargs)
        self._show(router_state(routes))

    @property
    def routes(self) -> RouterResult:
        """The routing shown (read-only)."""
        return self._routes

    def _n_selectable(self, kind: str | None = None, words: bool | None = None) -> int:
        """How many tokens a selection indexes (what :func:`attnwidgets.widgets.link_span` compares)."""
        return len(self._routes.tokens)

    @traitlets.validate("layer")
    def _valid_layer(self, proposal: dict[str, Any]) -> int:
        if not hasattr(self, "_routes"):
            return int(proposal["value"])
        return checked(check_router_layer, proposal["value"], self._routes.layers)

    @traitlets.validate("selection")
    def _valid_selection(self, proposal: dict[str, Any]) -> list[int]:
        if not hasattr(self, "_routes"):
            return list(proposal["value"])
        return checked(check_selection, proposal["value"], len(self._routes.tokens))

    def options(self) -> RouterOptions:
        """The view's layer, selection and weighting, as the state functions take them."""
        return RouterOptions(self.layer, tuple(self.selection), self.weighted)

    def load(self) -> np.ndarray:
        """(E,) float32: what the bars draw now (the load per expert of ``layer`` over the selection)."""
        return router_load(self._routes, self.options()).load
