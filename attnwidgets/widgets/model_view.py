"""ModelView: every layer x head as a thumbnail; click one for its full heatmap (front end:
js/src/views/model_view/)."""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..result import AttentionResult
from ..viewdata.checks import check_view
from ..viewdata.display import Reduced, check_reduce, is_causal, mask_future
from ..viewdata.state import to_reply
from ..viewdata.views.heatmap import HeatmapMatrix, HeatmapOptions, heatmap_matrix
from ..viewdata.views.model_view import (
    ModelViewOptions,
    ModelViewState,
    model_view_state,
    model_view_thumbs,
    shown_kind,
)
from ._base import AttnWidget, Colormap, Index, checked
from ._measure import check_measure, measure_trait, shown, try_shown
from ._result import proposed_view, take_result
from ._span import SpanSelection


class ModelView(SpanSelection, AttnWidget):
    """The whole model at a glance: a grid of small pictures, one per layer (rows) and head (columns).

    Only the thumbnails cross when the widget appears: each head block-reduced on the Python side to at most
    ``thumb_size`` x ``thumb_size`` uint8 (12 x 12 heads at 512 tokens is about 150 kB instead of 50 MB), read from
    the result a block of rows at a time (a long input's attention is never built whole; past about 32M weights in
    all, each block of rows is represented by a run of rows at its middle, and the caption says so). Clicking a
    thumbnail fetches that head at full resolution by message; the page keeps what it fetched. Decoder self-attention
    shows its causal mask (future keys) in light grey. Under grouped-query attention (``model.n_kv_heads`` below the
    heads), the heads that share a key/value head are shaded as one group and the tooltip names it ("KV head g").

    Select query tokens in the large head (click a row label or a cell; shift-click extends to a contiguous span,
    ctrl/cmd-click adds or removes one, Escape or "clear" resets): their rows are outlined and their mean (or sum,
    ``combine``) is drawn as one row under it, for whichever head is opened; ``selection`` is two-way.

    Parameters
    ----------
    result : AttentionResult
    layer, head : int
        The head shown large (and outlined in the grid). Single heads only: ``head=-1`` (a mean) is refused, as
        the grid has no cell for it.
    kind : str
        "self", or "encoder" / "decoder" / "cross" for encoder-decoder results.
    thumb_size : int
        Longest side of a thumbnail in cells (default 32); longer inputs are reduced by block max.
    reduce : str
        "max" (default: a single sharp weight stays visible) or "mean" for the thumbnails and a long head's overview.
        A trait: the page's menu sets it.
    selection : list of int
        Query tokens selected; [] (default) none.
    combine : str
        "mean" (default) or "sum" of the selected rows.
    colormap : str
        "blues", "viridis", "cividis", "greys" or "reds"; "" (default) the theme's.
    theme : str
        "light" or "lecture".

    Notes
    -----
    No ``words`` switch (yet): the grid is token level. Merge pieces first with
    :func:`attnwidgets.analysis.word_level` and show that result for a word-level grid.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> r = aw.AttentionResult.from_arrays(np.full((2, 3, 4, 4), 0.25, np.float32), list("abcd"))
    >>> w = aw.ModelView(r, layer=1, head=2)
    >>> w._payload["thumbs"]["shape"]
    [2, 3, 4, 4]
    """

    _bundle = "model_view"

    layer = Index(0).tag(sync=True)
    """int, default 0: layer of the selected head. Two-way: clicking a thumbnail sets it; setting it here selects."""

    head = Index(0).tag(sync=True)
    """int, default 0: the selected head, shown at full resolution beside the grid. Two-way like ``layer``."""

    kind = traitlets.Unicode("self").tag(sync=True)
    """str, default "self" ("encoder" for encoder-decoders): which attention the grid shows; the page offers a
    selector for "encoder", "decoder" and "cross" when the result has them."""

    colormap = Colormap().tag(sync=True)
    """str, default "" (the theme's): "blues", "viridis", "cividis", "greys" or "reds"."""

    reduce = traitlets.Unicode("max").tag(sync=True)
    """str, default "max": how thumbnails (and a long head's overview) merge a block of cells, "max" or "mean"."""

    measure = measure_trait()
    """str, default "weights": "weights", "norms" (the row share of ‖α_ij f(x_j)‖, Kobayashi et al. 2020) or
    "value_zeroing" (Mohebbi et al. 2023: one map per layer, in each of its heads' thumbnails). Two-way: the page's
    switch sets it. A result that cannot give them keeps the weights and the error box says why."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, kinds, [layers, heads] per kind, [query tokens, key tokens] per kind, and which kinds are causal."""

    _state: ModelViewState  # what _payload and _meta were made from (viewdata.views.model_view)

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {kind, factor, thumbs}: the current kind's thumbnails as one uint8 buffer [layer, head, tq, tk], each
    scaled to its own maximum. The page draws the grid from it; full heads come by "matrix" request. A saved page
    (no kernel to update this when the kind changes) asks for another kind's by "thumbs" request."""

    def __init__(self, result: AttentionResult, *, thumb_size: int = 32, **kwargs: Any) -> None:
        take_result("ModelView", result, kwargs)
        if thumb_size < 4:
            raise ValueError(f"thumb_size must be at least 4 cells, got {thumb_size}")
        check_reduce(kwargs.get("reduce", "max"))
        self._result = self._weights = result
        self._thumb_size = int(thumb_size)
        measure = check_measure(kwargs.pop("measure", "weights"))
        super().__init__(**kwargs)
        if measure != "weights":
            self._result = shown(result, measure)
            self.measure = measure
        self._check(self.kind, self.layer, self.head)
        self._refresh()

    @property
    def result(self) -> AttentionResult:
        """The result given (its weights, whatever ``measure`` shows; read-only)."""
        return self._weights

    def _options(self) -> ModelViewOptions:
        return ModelViewOptions(self.kind, self.reduce, self.measure, self._thumb_size)

    def _refresh(self) -> None:
        """Publish the state (meta and the current kind's thumbnails) in one sync."""
        self._state = model_view_state(self._result, self._options(), weights=self._weights)
        self._show(self._state)

    @traitlets.validate("reduce")
    def _valid_reduce(self, proposal: dict[str, Any]) -> str:
        return checked(check_reduce, str(proposal["value"]))

    @traitlets.validate("measure")
    def _valid_measure(self, proposal: dict[str, Any]) -> str:
        return check_measure(proposal["value"])

    @traitlets.observe("measure")
    def _on_measure(self, change: dict[str, Any]) -> None:
        if not self._meta:
            return
        result, error = try_shown(self._weights, change["new"])
        if error:  # the weights stay; the page's red box says why
            self.measure = "weights"
            self._error = error
            return
        self._result, self._error = result, ""
        self._refresh()

    @traitlets.observe("reduce")
    def _on_reduce(self, change: dict[str, Any]) -> None:
        if hasattr(self, "_result") and self._meta:
            self._refresh()

    def _kind(self, kind: str) -> str:
        return shown_kind(self._result, kind)

    def _check(self, kind: str, layer: int, head: int) -> None:
        checked(check_view, self._result, self._kind(kind), layer, head, allow_mean=False)

    def _span_view(self) -> tuple[str, int, int]:
        return self._kind(self.kind), self.layer, self.head

    def _span_kind(self, kind: str) -> str:
        return self._kind(kind)

    @traitlets.validate("layer", "head", "kind")
    def _valid(self, proposal: dict[str, Any]) -> Any:
        if hasattr(self, "_result"):
            self._check(*proposed_view(self, proposal))
        return proposal["value"]

    @traitlets.observe("kind")
    def _on_kind(self, change: dict[str, Any]) -> None:
        if hasattr(self, "_result") and self._meta:
            n_layers, n_heads = self._result.attention_shape(self._kind(self.kind))[:2]  # type: ignore[arg-type]
            if self.layer >= n_layers or self.head >= n_heads:
                self.layer, self.head = 0, 0
            if change["new"] != change["old"]:
                self.selection = []  # another kind has other query rows
            self._refresh()

    def thumbnails(self, kind: str | None = None) -> tuple[np.ndarray, int]:
        """``(uint8 [layer, head, tq, tk], factor)``: what the grid draws for ``kind`` (default: the current one)."""
        t = model_view_thumbs(self._result, kind or self.kind, self._options())
        return t.thumbs, t.factor

    def matrix(self, kind: str | None = None, layer: int | None = None, head: int | None = None) -> np.ndarray:
        """The full (query, key) map of one head, NaN where a causal mask hides the key (built for this head only)."""
        kind = self._kind(kind or self.kind)
        m = self._result.head(self.layer if layer is None else layer, self.head if head is None else head,
                              kind=kind)  # type: ignore[arg-type]
        return mask_future(m) if is_causal(self._result, kind) else np.asarray(m, dtype=np.float32)

    def overview(self, kind: str | None = None, layer: int | None = None, head: int | None = None) -> Reduced:
        """What the detail pane draws for a head: its map up to 1024 tokens, else its block max or mean."""
        shown = self._detail(kind or self.kind, self.layer if layer is None else layer,
                             self.head if head is None else head)
        return Reduced(shown.matrix, shown.factor, shown.rows_used, shown.vmax)

    def _detail(self, kind: str, layer: int, head: int) -> HeatmapMatrix:
        """A head's map as the detail pane draws it: the heatmap's own (no sinks discounted, its own top)."""
        return heatmap_matrix(self._result, HeatmapOptions(self._kind(kind), layer, head, reduce=self.reduce))

    def _handlers(self) -> dict[str, Any]:
        return {"matrix": self._matrix_request, "thumbs": self._thumbs_request, "span": self._span_request}

    def _thumbs_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        kind = str(req["kind"])
        self._check(kind, 0, 0)
        return to_reply(model_view_thumbs(self._result, kind, self._options()))

    def _export_requests(self, scope: str) -> list[dict[str, Any]]:
        """Requests a saved page answers without a kernel: every head's full map of every attention kind (and the
        other kinds' thumbnails, for the kind selector), or only the head on screen. Maps are stored at the page's
        precision (float16 by default); over 1,024 tokens, as the block-max overview the notebook shows."""
        view = {"kind": self.kind, "layer": self.layer, "head": self.head}
        if scope == "view":
            return [{"what": "matrix", **view}, *self._span_export(view)]
        out: list[dict[str, Any]] = []
        for kind, (n_layers, n_heads) in self._state.meta.shapes.items():
            if kind != self.kind:
                out.append({"what": "thumbs", "kind": kind})
            out += [{"what": "matrix", "kind": kind, "layer": layer, "head": head}
                     for layer in range(n_layers) for head in range(n_heads)]
        return out + self._span_export(view, clicks=True)

    def _matrix_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        kind, layer, head = str(req["kind"]), int(req["layer"]), int(req["head"])
        self._check(kind, layer, head)
        return to_reply(self._detail(kind, layer, head))
