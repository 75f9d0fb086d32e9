"""AttentionHeatmap: one head's attention as a query x key heatmap (front end: js/src/views/heatmap/)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import traitlets

from ..result import AttentionResult
from ..viewdata.checks import check_view, check_vmax, check_words
from ..viewdata.display import Reduced, check_reduce, is_causal, kv_group, mask_future, sink_keys
from ..viewdata.labels import kind_tokens
from ..viewdata.state import to_reply
from ..viewdata.views.heatmap import (
    HeatmapOptions,
    HeatmapState,
    heatmap_labels,
    heatmap_matrix,
    heatmap_region,
    heatmap_state,
    words_source,
)
from ._base import AttnWidget, Colormap, Index, checked
from ._measure import check_measure, measure_trait, shown, try_shown
from ._result import proposed_view, take_result
from ._span import SpanSelection


class AttentionHeatmap(SpanSelection, AttnWidget):
    """One head of one layer as a heatmap: query rows x key columns, token labels, hover for exact weights.

    Only the head on screen is sent when the widget appears; other heads are fetched when chosen, as binary
    float32 buffers, and kept in the page.

    Wheel or the +/- buttons zoom, dragging pans. Inputs longer than 1024 tokens (a decoder's 4,096-token context)
    are sent as a block-max (or block-mean, ``reduce="mean"``) overview, computed a block of rows at a time from the
    result (a long input's attention is never built whole); once zoomed in, the page fetches the visible region at
    full detail, so hover always reports exact weights there. Past about 4,096 x 4,096 weights the overview reads a
    run of rows in the middle of each block instead of all of them (the caption says so), so switching heads stays
    fast at 8k tokens. A decoder's causal mask (future keys) is drawn light grey.

    Select query tokens to read their attention together: click a row (its label or a cell) to select it,
    shift-click to extend to a contiguous span ("New York"), ctrl/cmd-click to add or remove one, Escape or "clear"
    to reset. The selected rows are outlined and their mean (or sum, ``combine``) is drawn as one extra row under
    the map, computed in Python by :func:`attnwidgets.viewdata.selection.span_row` (any length).

    Parameters
    ----------
    result : AttentionResult
        From :func:`attnwidgets.run` (or any other source of attention).
    layer, head : int
        What to show first. ``head=-1`` shows the mean over the layer's heads.
    kind : str
        "self" (encoders/decoders), or "encoder" / "decoder" / "cross" for encoder-decoder results.
    words : bool
        Word-level attention (to a word: sum over its pieces; from a word: mean over its pieces).
    reduce : str
        "max" (default: one sharp weight stays visible) or "mean" (mass) for the overview of a long input.
    discount_sinks : bool or list of int
        Top the colour scale at the largest weight on other keys than these (``True``: key 0, the usual attention
        sink), so the rest of the pattern becomes visible; the sink's cells are clipped to the top colour and the
        colour bar says so.
    vmax : float or None
        None (default): each map's colour scale tops at its own maximum. A number: a fixed scale 0..vmax for every
        map (1.0 for weights), so a near-uniform map looks pale and training or ablation steps compare; the colour
        bar says "fixed" or "per map". Larger values are clipped to the top colour.
    colormap : str
        "blues", "viridis", "cividis", "greys" or "reds"; "" (default) the theme's.
    selection : list of int
        Query rows selected (positions of the rows on screen); [] (default) none.
    combine : str
        "mean" (default) or "sum" of the selected rows.
    measure : {"weights", "norms", "value_zeroing"}
        Attention weights, Kobayashi et al. 2020's norms ‖α_ij f(x_j)‖ as a share of each row, or Mohebbi et al.
        2023's value zeroing (one map per layer, shown in each of its heads; see
        :mod:`attnwidgets.widgets._measure`); a switch in the page sets it.
    theme : str
        "light" or "lecture".

    Examples
    --------
    >>> import attnwidgets as aw
    >>> w = aw.AttentionHeatmap(aw.run("The cat sat."), layer=2, head=-1)
    >>> w.layer, w.head
    (2, -1)
    >>> w.selection = [1, 2]; round(float(w.span_weights().sum()), 4)
    1.0
    """

    _bundle = "heatmap"

    layer = Index(0).tag(sync=True)
    """int, default 0: the layer shown. Two-way: choosing a layer in the page sets it, setting it here redraws."""

    head = Index(0).tag(sync=True)
    """int, default 0: the head shown; -1 shows the mean over the layer's heads. Two-way like ``layer``."""

    kind = traitlets.Unicode("self").tag(sync=True)
    """str, default "self": which attention to show; "encoder", "decoder" or "cross" for encoder-decoders."""

    words = traitlets.Bool(False).tag(sync=True)
    """bool, default False: show word-level attention (pieces merged) instead of token-level."""

    colormap = Colormap().tag(sync=True)
    """str, default "" (the theme's): "blues", "viridis", "cividis", "greys" or "reds"."""

    zoom = traitlets.List(traitlets.Int()).tag(sync=True)
    """list[int], default []: set it to [q0, q1, k0, k1] (query rows q0..q1, key columns k0..k1, stops exclusive) to
    zoom the page onto that region (the whole of it in view, centred); [] is no request. The page's own zooming does
    not write back. :meth:`AttentionProfile.link_heatmap` sets it when a region of the profile is clicked."""

    reduce = traitlets.Unicode("max").tag(sync=True)
    """str, default "max": how a long input's overview merges a block of cells, "max" or "mean". Two-way."""

    discount_sinks = traitlets.Union([traitlets.Bool(), traitlets.List(traitlets.Int())], default_value=False).tag(
        sync=True)
    """bool or list of int, default False: keys left out of the colour scale's top (True: key 0). Two-way."""

    vmax = traitlets.Float(None, allow_none=True).tag(sync=True)
    """float or None, default None: the colour scale's fixed top (e.g. 1.0), the same for every map; None tops each
    map at its own maximum (or over non-sink keys, ``discount_sinks``). Validated: a positive finite number."""

    measure = measure_trait()
    """str, default "weights": "weights", "norms" (the row share of ‖α_ij f(x_j)‖) or "value_zeroing" (Mohebbi et al.
    2023, per layer). Two-way: the page's switch sets it. Both run the model again; a result that cannot give them
    keeps the weights and the error box says why."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, attention kinds, [layers, heads] per kind and token-level labels per kind. Word-level labels come
    by "labels" request (and in ``_payload`` when it is word level), so a saved page can switch levels offline."""

    _state: HeatmapState  # what _payload and _meta were made from (viewdata.views.heatmap)

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {key, matrix, factor, labels?}: the first view's matrix as a binary buffer, so the first paint needs no
    round trip, and ``{"tokens": labels(True)}`` when ``words`` is on. Above 1024 tokens the matrix is a block-max
    overview (``factor`` cells per pixel); zooming in fetches exact tiles."""

    def __init__(self, result: AttentionResult, **kwargs: Any) -> None:
        self._result = take_result("AttentionHeatmap", result, kwargs)
        self._weights = self._result
        self._words_result: AttentionResult | None = None
        measure = check_measure(kwargs.pop("measure", "weights"))
        super().__init__(**kwargs)
        if measure != "weights":
            self._result = shown(self._weights, measure)
            self.measure = measure
        self._check_view(self.kind, self.layer, self.head)
        self._refresh_meta()

    @property
    def result(self) -> AttentionResult:
        """The result given (its weights, whatever ``measure`` shows; read-only)."""
        return self._weights

    def _source(self, words: bool) -> AttentionResult:
        if not check_words(self._result, words):
            return self._result
        if self._words_result is None:
            self._words_result = words_source(self._result, True)
        return self._words_result

    def _check_view(self, kind: str, layer: int, head: int) -> None:
        checked(check_view, self._result, kind, layer, head)

    def _span_source(self, words: bool | None = None) -> AttentionResult:
        return self._source(self.words if words is None else words)

    def _span_view(self) -> tuple[str, int, int]:
        return self.kind, self.layer, self.head

    def matrix(self, kind: str | None = None, layer: int | None = None, head: int | None = None,
               words: bool | None = None) -> np.ndarray:
        """The (query, key) matrix the widget shows (for the current selection unless given)."""
        kind = self.kind if kind is None else kind
        words = self.words if words is None else words
        return self._source(words).head(self.layer if layer is None else layer,
                                        self.head if head is None else head, kind=kind)  # type: ignore[arg-type]

    def labels(self, words: bool | None = None) -> dict[str, list[list[str]]]:
        """{kind: [query labels, key labels]} at token level, or at word level (``words=True``)."""
        return kind_tokens(self._source(self.words if words is None else words))

    def _options(self, **changes: Any) -> HeatmapOptions:
        """The view the traits choose, with ``changes`` (what a request names)."""
        sinks = self.discount_sinks if isinstance(self.discount_sinks, bool) else tuple(self.discount_sinks)
        options = HeatmapOptions(kind=self.kind, layer=self.layer, head=self.head, words=self.words,
                                 reduce=self.reduce, discount_sinks=sinks, vmax=self.vmax, measure=self.measure)
        return dataclasses.replace(options, **changes)

    def _state_now(self) -> HeatmapState:
        return heatmap_state(self._result, self._options(), weights=self._weights,
                             words=self._source(True) if self.words else None)

    def _refresh_meta(self) -> None:
        state = self._state_now()
        self._state = state
        self._show(state)

    def page_state(self) -> HeatmapState | None:
        """The state of the map on screen: the synced one (``_payload`` holds the first view's map) while the traits
        still choose it, else the same state of the map they choose now, which the page fetched by a "matrix"
        request (what :func:`attnwidgets.plots.paint` and the picture in the display bundle draw)."""
        state: HeatmapState | None = super().page_state()
        key = f"{self.kind}/{self.layer}/{self.head}/{'w' if self.words else 't'}"
        return state if state is None or state.payload.key == key else self._state_now()

    def overview(self, kind: str | None = None, layer: int | None = None, head: int | None = None,
                 words: bool | None = None) -> Reduced:
        """What the page draws for a view (the current one unless given): the map itself up to 1024 tokens, else
        its block max or mean (``reduce``), computed from the result a block of rows at a time."""
        options = self._options(**{k: v for k, v in (("kind", kind), ("layer", layer), ("head", head),
                                                     ("words", words)) if v is not None})
        shown = heatmap_matrix(self._source(options.words), dataclasses.replace(options, vmax=None))
        return Reduced(shown.matrix, shown.factor, shown.rows_used, shown.vmax)

    @traitlets.validate("vmax")
    def _valid_vmax(self, proposal: dict[str, Any]) -> float | None:
        return checked(check_vmax, proposal["value"])

    @traitlets.validate("reduce")
    def _valid_reduce(self, proposal: dict[str, Any]) -> str:
        return checked(check_reduce, str(proposal["value"]))

    @traitlets.validate("discount_sinks")
    def _valid_sinks(self, proposal: dict[str, Any]) -> Any:
        if hasattr(self, "_result"):
            n_keys = self._result.attention_shape(self.kind)[3]  # type: ignore[arg-type]
            checked(sink_keys, proposal["value"], n_keys)
        return proposal["value"]

    @traitlets.observe("reduce", "discount_sinks", "vmax")
    def _on_scale(self, change: dict[str, Any]) -> None:
        if hasattr(self, "_result") and self._meta:
            self._refresh_meta()

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
        self._words_result = None
        self._refresh_meta()

    @traitlets.observe("words")
    def _on_words(self, change: dict[str, Any]) -> None:
        try:
            self._source(change["new"])
        except ValueError as exc:
            self._error = str(exc)
            return
        if self._meta:  # built: positions of token rows do not name word rows
            self.selection = []
        self._refresh_meta()

    @traitlets.observe("kind")
    def _on_kind_selection(self, change: dict[str, Any]) -> None:
        if self._meta and change["new"] != change["old"]:
            self.selection = []  # another kind has other query rows (kept while the widget is built)

    @traitlets.validate("words")
    def _valid_words(self, proposal: dict[str, Any]) -> bool:
        # An encoder-decoder has no word level: refused here, at construction or when set, as every view refuses it.
        if hasattr(self, "_result"):
            return checked(check_words, self._result, proposal["value"])
        return bool(proposal["value"])

    @traitlets.validate("layer", "head", "kind")
    def _valid(self, proposal: dict[str, Any]) -> Any:
        if hasattr(self, "_result"):
            self._check_view(*proposed_view(self, proposal))
        return proposal["value"]

    @traitlets.validate("zoom")
    def _valid_zoom(self, proposal: dict[str, Any]) -> list[int]:
        value = list(proposal["value"])
        if value and (len(value) != 4 or not (0 <= value[0] < value[1] and 0 <= value[2] < value[3])):
            raise traitlets.TraitError(f"zoom must be [] or [q0, q1, k0, k1] with q0 < q1 and k0 < k1, got {value}")
        return value

    def _display(self, kind: str, layer: int, head: int, words: bool) -> np.ndarray:
        """The matrix as drawn: float32, NaN where a causal mask hides the key (painted light grey)."""
        m = self.matrix(kind, layer, head, words)
        return mask_future(m) if is_causal(self._result, kind) else np.asarray(m, dtype=np.float32)

    def kv_head(self, head: int | None = None, kind: str | None = None) -> int | None:
        """The key/value head a query head reads under grouped-query attention (None without GQA or for a mean)."""
        return kv_group(self._result, self.head if head is None else head, self.kind if kind is None else kind)

    def _handlers(self) -> dict[str, Any]:
        return {"matrix": self._matrix_request, "region": self._region_request, "labels": self._labels_request,
                "span": self._span_request}

    def _labels_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        return to_reply(heatmap_labels(self._source(bool(req.get("words", False)))))

    def _export_requests(self, scope: str) -> list[dict[str, Any]]:
        """Requests a saved page answers without a kernel: every (kind, layer, head or mean), token-level and (when
        it can) word-level with the word labels, or only the view on screen (``scope="view"``)."""
        labels = [{"what": "labels", "words": True}]
        if scope == "view":
            view = {"what": "matrix", "kind": self.kind, "layer": self.layer, "head": self.head, "words": self.words}
            return [view, *(labels if self.words else []), *self._span_export(view)]
        # Word level doubles the file; it is saved for short inputs (<= 256 tokens) or when it is the view on screen.
        meta = self._state.meta
        short = max((len(q) for q, _ in meta.tokens.values()), default=0) <= 256
        levels = [False, True] if meta.can_words and (short or self.words) else [bool(self.words)]
        out = [{"what": "matrix", "kind": kind, "layer": layer, "head": head, "words": words}
               for words in levels for kind, (n_layers, n_heads) in meta.shapes.items()
               for layer in range(n_layers) for head in range(-1, n_heads)]
        view = {"kind": self.kind, "layer": self.layer, "head": self.head, "words": self.words}
        return out + (labels if True in levels else []) + self._span_export(view, clicks=True)

    def _request_options(self, req: dict[str, Any]) -> HeatmapOptions:
        options = self._options(kind=str(req["kind"]), layer=int(req["layer"]), head=int(req["head"]),
                                words=bool(req.get("words", False)))
        self._check_view(options.kind, options.layer, options.head)
        return options

    def _matrix_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        # Long inputs (> 1024 tokens) come as a block-max overview; zooming in fetches exact "region" tiles.
        options = self._request_options(req)
        return to_reply(heatmap_matrix(self._source(options.words), options))

    def _region_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        options = self._request_options(req)
        q0, q1, k0, k1 = (int(req[k]) for k in ("q0", "q1", "k0", "k1"))
        return to_reply(heatmap_region(self._source(options.words), options, q0, q1, k0, k1))
