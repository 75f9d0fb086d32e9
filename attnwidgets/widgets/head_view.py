"""HeadView: bertviz's line view: queries left, keys right, one colour per head (front end: js/src/views/head_view/)."""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..result import AttentionResult
from ..viewdata.checks import check_head, check_view, check_words
from ..viewdata.lines import SENTENCE_FILTERS, filter_mask, payload_reply
from ..viewdata.state import to_reply, to_wire
from ..viewdata.views.head_view import (
    HeadViewOptions,
    HeadViewState,
    head_view_labels,
    head_view_layer,
    head_view_state,
    is_windowed,
    view_key,
)
from ..viewdata.windows import WINDOW_THRESHOLD, check_window, default_window, is_long, window_around
from ._base import AttnWidget, Index, checked
from ._result import ShowsResult, take_result

__all__ = ["HeadView"]


def _word_level(result: AttentionResult) -> AttentionResult:
    from ..analysis.words import word_level

    return word_level(result)


class HeadView(ShowsResult, AttnWidget):
    """One layer's heads as lines between two columns of tokens: queries (from) on the left, keys (to) on the right.

    A line's opacity is its attention weight; each head has its own colour. Click a head's swatch to hide or show
    it, double-click to show it alone. Hover a left token for where it looks, a right token for who looks at it;
    click left tokens (shift-click a span, ctrl/cmd-click several) to keep only their lines. For a sentence pair,
    the filter keeps A→A, A→B, B→A or B→B lines. For cross-attention the left column is the target and the right
    the source.

    Only the layer on screen is sent, and of it only the weights of at least ``min_weight`` (the lines the page can
    draw), as sparse float16 rows (:mod:`attnwidgets.viewdata.lines`; 12 heads at 512 tokens: tens of kB instead of
    3 MB); other layers are fetched when chosen. Lines lighter than ``min_weight`` are not drawn, and with more
    than 128 tokens and no token hovered or selected only lines of weight 0.1 or more are drawn.

    A long input (more than 512 tokens, or any lazy result) is shown a ``window`` at a time: 64 tokens by default,
    read with ``result.rows`` so its dense attention is never built, plus the 3 strongest keys outside the window as
    labelled "far" keys (:mod:`attnwidgets.viewdata.windows`). The page's ◀ ▶ buttons (or Page Up / Page Down) move
    the window; selecting tokens outside it from Python moves it to them. Word level is not offered in windows.

    Parameters
    ----------
    result : AttentionResult
    layer : int
    head : int
        The head whose lines are drawn, as in every view; -1 (default) draws every head's.
    heads : list[int], optional
        Several heads at once (what the page's swatches toggle); overrides ``head``. ``head`` follows it: the head
        when it holds one, -1 otherwise.
    kind : str
        "self", or "encoder" / "decoder" / "cross" for encoder-decoder results.
    words : bool
        Word-level attention (:func:`attnwidgets.analysis.word_level`).
    sentence_filter : str
        "all", "AA", "AB", "BA" or "BB".
    window : list[int], optional
        ``[start, stop]``: the token positions shown (default: all of an input of up to 512 tokens, else 64 from
        the start or around ``selected``).
    theme : str
        "light" or "lecture".

    Notes
    -----
    No ``colormap``: each head has its own categorical colour and a line's opacity is its weight, so there is no
    continuous colour scale to choose.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> r = aw.AttentionResult.from_arrays(np.full((2, 3, 4, 4), 0.25, np.float32), list("abcd"))
    >>> w = aw.HeadView(r, layer=1)
    >>> w.head, w.heads
    (-1, [0, 1, 2])
    >>> w.head = 2; w.heads
    [2]
    """

    _bundle = "head_view"

    layer = Index(0).tag(sync=True)
    """int, default 0: the layer whose heads are drawn. Two-way: the page's layer selector sets it."""

    head = Index(-1).tag(sync=True)
    """int, default -1 (every head): the one head whose lines are drawn, as ``head`` selects in every view. Setting
    it sets ``heads`` (``[head]``, or all for -1); it follows ``heads``: the head when one is shown, else -1."""

    heads = traitlets.List(traitlets.Int()).tag(sync=True)
    """list[int], default all heads: the heads whose lines are drawn. Clicking a swatch toggles one, double-clicking
    isolates it; setting it here redraws."""

    kind = traitlets.Unicode("self").tag(sync=True)
    """str, default "self" ("encoder" for encoder-decoders): which attention; "cross" puts target tokens left and
    source tokens right."""

    words = traitlets.Bool(False).tag(sync=True)
    """bool, default False: word-level attention (to a word: sum over its pieces; from a word: mean)."""

    sentence_filter = traitlets.Unicode("all").tag(sync=True)
    """str, default "all": "AA", "AB", "BA" or "BB" keep only lines from one sentence of a pair to another; the
    page greys out tokens outside the filter."""

    selected = traitlets.List(traitlets.Int()).tag(sync=True)
    """list[int], default []: query (left) positions whose lines alone are drawn. Click a left token to select it,
    shift-click to select the span up to another, ctrl/cmd-click to add or remove one, click it again (or Escape) to
    clear: the click rules of every view's ``selection`` (:func:`attnwidgets.widgets.link_span` links them)."""

    min_weight = traitlets.Float(0.02).tag(sync=True)
    """float, default 0.02: lines lighter than this are not drawn (they would be nearly invisible anyway). It is
    also the floor of what crosses: only weights of at least this are sent, so lowering it re-sends the layer."""

    window = traitlets.List(traitlets.Int()).tag(sync=True)
    """list[int] ``[start, stop]``: the query positions drawn (keys too, for self-attention), at most 256 wide
    (or all of an input of up to 512 tokens).
    Default: every token of an input of up to 512 tokens; else 64 tokens from the start, or around ``selected``.
    Two-way: the page's ◀ ▶ buttons set it; setting it here (or selecting tokens outside it) moves the page's
    window. A window narrower than the input shows token-level lines with the strongest "far" keys outside it."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, kinds, [layers, heads] per kind, token-level [query tokens, key tokens] and [query segments, key
    segments] per kind, and whether word level is available. Word-level labels come by "labels" request (and in
    ``_payload`` when it is word level), so a saved page can switch levels offline."""

    _state: HeadViewState  # what _payload and _meta were made from (viewdata.views.head_view)

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {key, heads, labels?}: the first layer's heads [head, query, key] (sparse rows of the weights >=
    ``min_weight``, or one dense buffer when that is smaller; see :mod:`attnwidgets.viewdata.lines`), so the first
    paint needs no round trip, and the word-level labels (``labels(True)``) when ``words`` is on. Other layers come by
    "layer" request."""

    def __init__(self, result: AttentionResult, **kwargs: Any) -> None:
        self._result = take_result("HeadView", result, kwargs)
        self._words_result: AttentionResult | None = None
        super().__init__(**kwargs)
        self._check(self.kind, self.layer)
        if "window" not in kwargs:
            self.window = list(self._default_window())
        if "heads" not in kwargs:
            self.heads = self._all_heads() if self.head == -1 else [self.head]
        self._refresh_meta()

    def _all_heads(self) -> list[int]:
        return list(range(self._result.attention_shape(self.kind)[1]))  # type: ignore[arg-type]

    def _n_queries(self, kind: str | None = None) -> int:
        return self._result.attention_shape(kind or self.kind)[2]  # type: ignore[arg-type]

    @property
    def long(self) -> bool:
        """Whether this input is shown in windows only: more than 512 tokens, or a lazy result."""
        return is_long(self._n_queries(), self._result.is_lazy)

    def windowed(self, window: list[int] | None = None) -> bool:
        """Whether ``window`` (default: the current one) is drawn as a window: a long input, or narrower than it."""
        return is_windowed(self._result, self.kind, self.window if window is None else window)

    def _default_window(self, kind: str | None = None) -> tuple[int, int]:
        return default_window(self._n_queries(kind), self._result.is_lazy, self.selected)

    def _source(self, words: bool) -> AttentionResult:
        if not check_words(self._result, words):
            return self._result
        if self._words_result is None:
            self._words_result = _word_level(self._result)
        return self._words_result

    def _check(self, kind: str, layer: int, head: int = -1) -> None:
        checked(check_view, self._result, kind, layer, head)

    @traitlets.validate("layer", "kind", "head")
    def _valid(self, proposal: dict[str, Any]) -> Any:
        name = proposal["trait"].name
        kind = proposal["value"] if name == "kind" else self.kind
        layer = 0 if name == "kind" else proposal["value"] if name == "layer" else self.layer
        head = proposal["value"] if name == "head" else -1
        if hasattr(self, "_result"):
            self._check(kind, layer, head)
        return proposal["value"]

    @traitlets.validate("words")
    def _valid_words(self, proposal: dict[str, Any]) -> bool:
        # An encoder-decoder has no word level: refused here, at construction or when set, as every view refuses it.
        if hasattr(self, "_result"):
            words = checked(check_words, self._result, proposal["value"])
            if words and self.window and self.windowed():
                raise traitlets.TraitError(
                    f"word level is not shown in windows: this input has {self._n_queries()} tokens (more than "
                    f"{WINDOW_THRESHOLD}) or is a lazy result, or the window is narrower than the input; word level "
                    f"needs every token of a text of up to {WINDOW_THRESHOLD} tokens")
            return words
        return bool(proposal["value"])

    @traitlets.validate("window")
    def _valid_window(self, proposal: dict[str, Any]) -> list[int]:
        if not hasattr(self, "_result"):
            return list(proposal["value"])
        window = list(checked(check_window, proposal["value"], self._n_queries()))
        if self.words and self.windowed(window):
            raise traitlets.TraitError("a window narrower than the input needs token level: set words=False first")
        return window

    @traitlets.observe("selected")
    def _on_selected(self, change: dict[str, Any]) -> None:
        # Tokens selected outside the window (from Python): move the window to them, keeping its width.
        sel = list(change["new"])
        if hasattr(self, "_result") and self.window and sel and self.windowed():
            start, stop = self.window
            if min(sel) < start or max(sel) >= stop:
                self.window = list(window_around(sel, self._n_queries(), stop - start))

    @traitlets.validate("heads")
    def _valid_heads(self, proposal: dict[str, Any]) -> list[int]:
        heads = list(proposal["value"])
        if hasattr(self, "_result"):
            n_heads = self._result.attention_shape(self.kind)[1]  # type: ignore[arg-type]
            heads = [checked(check_head, h, n_heads, allow_mean=False) for h in heads]
        return heads

    @traitlets.observe("head")
    def _on_head(self, change: dict[str, Any]) -> None:
        if hasattr(self, "_result") and self._meta:
            self.heads = self._all_heads() if change["new"] == -1 else [change["new"]]

    @traitlets.observe("heads")
    def _on_heads(self, change: dict[str, Any]) -> None:
        if hasattr(self, "_result"):
            heads = list(change["new"])
            self.head = heads[0] if len(heads) == 1 and heads != self._all_heads() else -1

    @traitlets.validate("sentence_filter")
    def _valid_filter(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in SENTENCE_FILTERS:
            raise traitlets.TraitError(
                f"unknown sentence filter {proposal['value']!r}; choose one of {list(SENTENCE_FILTERS)}"
            )
        return str(proposal["value"])

    @traitlets.observe("kind")
    def _on_kind(self, change: dict[str, Any]) -> None:
        if hasattr(self, "_result") and self._meta:
            if change["new"] != change["old"]:
                self.layer = 0
                self.selected = []
                self.window = list(self._default_window(change["new"]))
                self.heads = self._all_heads()
            self._refresh_meta()

    @traitlets.observe("words")
    def _on_words(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "_result") or not self._meta:
            return
        try:
            self._source(change["new"])
        except (ValueError, ImportError) as exc:
            self._error = str(exc)
            return
        self.selected = []
        self._refresh_meta()

    def layer_heads(self, kind: str | None = None, layer: int | None = None, words: bool | None = None) -> np.ndarray:
        """[head, query, key] float32: what the lines are drawn from."""
        kind = self.kind if kind is None else kind
        words = self.words if words is None else words
        attention, _, _ = self._source(words).attention_of(kind)  # type: ignore[arg-type]
        return np.asarray(attention[self.layer if layer is None else layer], dtype=np.float32)

    def mask(self, sentence_filter: str | None = None) -> np.ndarray:
        """(nq, nk) bool: the pairs the sentence filter keeps, for the current kind and ``words``."""
        segs = self.labels()["segments"][self.kind]
        return filter_mask(np.array(segs[0]), np.array(segs[1]), sentence_filter or self.sentence_filter)

    def labels(self, words: bool | None = None) -> dict[str, dict[str, list[list[Any]]]]:
        """{"tokens": {kind: [query tokens, key tokens]}, "segments": {kind: [query segments, key segments]}} at
        token level, or at word level (``words=True``; default: the current ``words``)."""
        return to_wire(head_view_labels(self._source(self.words if words is None else words)))

    def _options(self, kind: str, layer: int, words: bool, window: list[int] | None) -> HeadViewOptions:
        return HeadViewOptions(kind, layer, words, None if window is None else (int(window[0]), int(window[1])),
                               self.min_weight)

    def _pack_layer(self, kind: str, layer: int, words: bool, window: list[int] | None = None) -> dict[str, Any]:
        return head_view_layer(self._result, self._source(words), self._options(kind, layer, words, window))

    def window_heads(self, layer: int | None = None) -> np.ndarray:
        """[head, query, key] float32 of the window on screen: its queries, its keys, then the far keys (see
        :func:`attnwidgets.viewdata.lines.window_heads`); read with ``result.rows`` at any length."""
        from ..viewdata.lines import window_heads

        layer = self.layer if layer is None else layer
        return window_heads(self._result, self.kind, layer, check_window(self.window, self._n_queries()),
                            max(0.0, self.min_weight))[0]

    def _view_key(self, kind: str, layer: int, words: bool, window: list[int]) -> str:
        """The page's name for a view (js/src/views/head_view/state.ts viewKey)."""
        return view_key(self._result, self._options(kind, layer, words, window))

    def _refresh_meta(self) -> None:
        window = list(self.window) or list(self._default_window())
        state = head_view_state(self._result, self._options(self.kind, self.layer, self.words, window),
                                words=self._source(True) if self.words else None)
        self._state = state
        self._show(state)

    def _handlers(self) -> dict[str, Any]:
        return {"layer": self._layer_request, "labels": self._labels_request}

    def _labels_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        return to_reply(head_view_labels(self._source(bool(req.get("words", False)))))

    @traitlets.observe("min_weight")
    def _on_min_weight(self, change: dict[str, Any]) -> None:
        # The payload holds only weights >= min_weight: a lower one needs the layer again.
        if hasattr(self, "_result") and self._meta and change["new"] != change["old"]:
            self._refresh_meta()

    def _layer_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        kind, layer, words = str(req["kind"]), int(req["layer"]), bool(req.get("words", False))
        self._check(kind, layer)
        window = req.get("window")
        if window is None and is_long(self._n_queries(kind), self._result.is_lazy):
            window = self.window if kind == self.kind else list(self._default_window(kind))
        return payload_reply(self._pack_layer(kind, layer, words, window))

    def _export_requests(self, scope: str) -> list[dict[str, Any]]:
        """Requests a saved page answers without a kernel: every layer of every attention kind, token-level and
        (when it can) word-level with the word labels, or only the layer on screen. Each reply is the same sparse
        payload the notebook gets."""
        labels = [{"what": "labels", "words": True}]
        if not self.words and self.windowed():
            # A window: every layer of the kind on screen at that window (the page asks with it).
            layers = [self.layer] if scope == "view" else range(self._state.meta.shapes[self.kind][0])
            return [{"what": "layer", "kind": self.kind, "layer": layer, "words": False, "window": list(self.window)}
                    for layer in layers]
        if scope == "view":
            view = {"what": "layer", "kind": self.kind, "layer": self.layer, "words": self.words}
            return [view, *(labels if self.words else [])]
        # Word level is saved for inputs up to 256 tokens (like the heatmap's) or when it is the view on screen.
        meta = self._state.meta
        short = max((len(q) for q, _ in meta.tokens.values()), default=0) <= 256
        levels = [False, True] if meta.can_words and (short or self.words) else [bool(self.words)]
        out = [{"what": "layer", "kind": kind, "layer": layer, "words": words} for words in levels
               for kind, (n_layers, _) in meta.shapes.items() for layer in range(n_layers)]
        return out + (labels if True in levels else [])
