"""AttentionHeatmap: one head's attention as a query x key heatmap (front end: js/src/heatmap.ts)."""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..analysis.words import word_level
from ..result import AttentionResult, head_matrix
from ..viewdata.checks import check_view, check_words
from ..viewdata.display import is_causal, mask_future, overview, region
from ..viewdata.labels import kind_tokens
from ..viewdata.wire import pack
from ._base import AttnWidget, Colormap, Index, checked
from ._result import ShowsResult, proposed_view, take_result


class AttentionHeatmap(ShowsResult, AttnWidget):
    """One head of one layer as a heatmap: query rows x key columns, token labels, hover for exact weights.

    Only the head on screen is sent when the widget appears; other heads are fetched when chosen, as binary
    float32 buffers, and kept in the page.

    Wheel or the +/- buttons zoom, dragging pans. Inputs longer than 1024 tokens (a decoder's 4,096-token context)
    are sent as a block-max overview; once zoomed in, the page fetches the visible region at full detail, so hover
    always reports exact weights there. A decoder's causal mask (future keys) is drawn light grey.

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
    colormap : str
        "blues", "viridis", "cividis", "greys" or "reds"; "" (default) the theme's.
    theme : str
        "light" or "lecture".

    Examples
    --------
    >>> import attnwidgets as aw
    >>> w = aw.AttentionHeatmap(aw.run("The cat sat."), layer=2, head=-1)
    >>> w.layer, w.head
    (2, -1)
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

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, attention kinds, [layers, heads] per kind and token-level labels per kind. Word-level labels come
    by "labels" request (and in ``_payload`` when it is word level), so a saved page can switch levels offline."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {key, matrix, factor, labels?}: the first view's matrix as a binary buffer, so the first paint needs no
    round trip, and ``{"tokens": labels(True)}`` when ``words`` is on. Above 1024 tokens the matrix is a block-max
    overview (``factor`` cells per pixel); zooming in fetches exact tiles."""

    def __init__(self, result: AttentionResult, **kwargs: Any) -> None:
        self._result = take_result("AttentionHeatmap", result, kwargs)
        self._words_result: AttentionResult | None = None
        super().__init__(**kwargs)
        self._check_view(self.kind, self.layer, self.head)
        self._refresh_meta()

    def _source(self, words: bool) -> AttentionResult:
        if not check_words(self._result, words):
            return self._result
        if self._words_result is None:
            self._words_result = word_level(self._result)
        return self._words_result

    def _check_view(self, kind: str, layer: int, head: int) -> None:
        checked(check_view, self._result, kind, layer, head)

    def matrix(self, kind: str | None = None, layer: int | None = None, head: int | None = None,
               words: bool | None = None) -> np.ndarray:
        """The (query, key) matrix the widget shows (for the current selection unless given)."""
        kind = self.kind if kind is None else kind
        words = self.words if words is None else words
        attention, _, _ = self._source(words).attention_of(kind)  # type: ignore[arg-type]
        return head_matrix(attention, self.layer if layer is None else layer, self.head if head is None else head)

    def labels(self, words: bool | None = None) -> dict[str, list[list[str]]]:
        """{kind: [query labels, key labels]} at token level, or at word level (``words=True``)."""
        return kind_tokens(self._source(self.words if words is None else words))

    def _refresh_meta(self) -> None:
        r = self._result
        shapes = {kind: [int(s) for s in r.attention_of(kind)[0].shape[:2]] for kind in r.kinds}
        shown, factor = overview(self._display(self.kind, self.layer, self.head, self.words))
        self._payload = {
            "key": f"{self.kind}/{self.layer}/{self.head}/{'w' if self.words else 't'}",
            "matrix": pack(shown),
            "factor": factor,
            **({"labels": {"tokens": self.labels(True)}} if self.words else {}),  # as a "labels" request answers
        }
        self._meta = {
            "title": r.model.name,
            "kinds": list(r.kinds),
            "shapes": shapes,
            "tokens": self.labels(False),
            "can_words": bool((r.word_ids >= 0).any()) and r.cross_attention is None,
        }

    @traitlets.observe("words")
    def _on_words(self, change: dict[str, Any]) -> None:
        try:
            self._source(change["new"])
        except ValueError as exc:
            self._error = str(exc)
            return
        self._refresh_meta()

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

    def _handlers(self) -> dict[str, Any]:
        return {"matrix": self._matrix_request, "region": self._region_request, "labels": self._labels_request}

    def _labels_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        return {"tokens": self.labels(bool(req.get("words", False)))}, []

    def _export_requests(self, scope: str) -> list[dict[str, Any]]:
        """Requests a saved page answers without a kernel: every (kind, layer, head or mean), token-level and (when
        it can) word-level with the word labels, or only the view on screen (``scope="view"``)."""
        labels = [{"what": "labels", "words": True}]
        if scope == "view":
            view = {"what": "matrix", "kind": self.kind, "layer": self.layer, "head": self.head, "words": self.words}
            return [view, *(labels if self.words else [])]
        # Word level doubles the file; it is saved for short inputs (<= 256 tokens) or when it is the view on screen.
        short = max((len(q) for q, _ in self._meta["tokens"].values()), default=0) <= 256
        levels = [False, True] if self._meta.get("can_words") and (short or self.words) else [bool(self.words)]
        out = [{"what": "matrix", "kind": kind, "layer": layer, "head": head, "words": words}
               for words in levels for kind, (n_layers, n_heads) in self._meta["shapes"].items()
               for layer in range(n_layers) for head in range(-1, n_heads)]
        return out + (labels if True in levels else [])

    def _matrix_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        # Long inputs (> 1024 tokens) come as a block-max overview; zooming in fetches exact "region" tiles.
        m, factor = overview(self._display(str(req["kind"]), int(req["layer"]), int(req["head"]),
                                           bool(req.get("words", False))))
        packed = pack(m)
        return {"shape": packed["shape"], "dtype": packed["dtype"], "factor": factor}, [packed["buffer"]]

    def _region_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        q0, q1, k0, k1 = (int(req[k]) for k in ("q0", "q1", "k0", "k1"))
        m = self.matrix(str(req["kind"]), int(req["layer"]), int(req["head"]), bool(req.get("words", False)))
        block = region(m, q0, q1, k0, k1)
        if is_causal(self._result, str(req["kind"])):
            block = mask_future(block, max(0, q0), max(0, k0))
        packed = pack(block)
        return {"shape": packed["shape"], "dtype": packed["dtype"], "q0": max(0, q0), "k0": max(0, k0)}, [
            packed["buffer"]
        ]
