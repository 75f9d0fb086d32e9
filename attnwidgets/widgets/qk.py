"""QKStepThrough: one head's attention for one query, step by step (front end: js/src/views/qk/).

bertviz's neuron view, for any eager model: the query vector and the key vectors as colour strips, their elementwise
product, q·k per key, the scaling by √d, the softmax, and the weighted sum of the values, each in its own panel.
The vectors are captured from the real model (:func:`attnwidgets.runner.capture_qk`), after rotary embeddings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import traitlets

from ..qk_result import QKCapture
from ..viewdata.captures import captures_by_layer, check_captured
from ..viewdata.checks import DIVERGING_COLORMAPS, check_head
from ..viewdata.selection import check_selection, one_query
from ..viewdata.views.qk import QKOptions, QKState, extra_arrays, is_windowed, qk_arrays, qk_reply, qk_state, view_key
from ..viewdata.windows import check_window, default_window, is_long, qk_window, window_around
from ._base import AttnWidget, Colormap, Index, checked
from ._span import Selection

# The arrays of one (layer, head), in the order their buffers travel; a capture with a position bias adds "bias"
# (and T5's "bucket") after them.
ARRAYS = ("q", "k", "v", "logits", "scaled", "weights", "output", "mask")


class QKStepThrough(AttnWidget):
    """For a chosen head and query token: q and k as colour strips, q·k, ÷√d, + bias, softmax, Σ weight·v.

    A rotary model's capture (Llama, Mistral, GPT-NeoX: ``capture.rope``) starts three panels earlier: q and k before
    the rotation, q·k before it, and the angle each pair of dimensions turns at each position (a colour wheel;
    partial rotary leaves the pairs past ``rotary_dim`` blank); then q and k after it, and on as for every model.

    The "+ bias" panel appears only when the model adds a position bias to the scaled logits (T5's relative-position
    bias, with each key's bucket; an ALiBi-style linear bias); BERT, GPT-2 and the like have none and show no panel.

    Only the head on screen crosses when the widget appears; other heads and layers are fetched when chosen.

    A long capture (more than 512 keys) shows a ``window`` of keys around the query (64 by default), plus the 3 keys
    outside it with the largest weight as "far" rows, and only that query's numbers cross (the same trait and
    rules as :class:`attnwidgets.HeadView`'s window; :mod:`attnwidgets.viewdata.windows`).

    Parameters
    ----------
    capture : QKCapture or sequence of QKCapture
        What the view shows: from :func:`attnwidgets.runner.capture_qk` (one layer) or
        :func:`attnwidgets.runner.capture_qk_layers` (several). Unlike the other attention views it takes a capture, not
        an AttentionResult: it needs the query, key and value vectors, which a result does not keep.
        ``captures=`` is its old name, accepted with a DeprecationWarning for one release.
    layer, head, query : int
        What to show first: the layer (one of the captured ones), the query head (single heads only: there is no
        mean of q·k over heads) and the query token.
    selection : list[int], optional
        Query tokens selected (see the trait); the query follows it.
    window : list[int], optional
        ``[start, stop]``: the key positions shown (default: every key of a short capture, else 64 around the
        query).
    colormap : str
        The diverging scale of the signed vectors: "rdbu" or "puor"; "" (default) the theme's.
    theme : str
        "light" or "lecture".

    Notes
    -----
    No ``kind``: a capture holds one attention stack (``_meta["stack"]``); capture another to see it. No ``words``:
    q and k are vectors of token pieces, and a word has no single query vector to step through.

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.runner.qk import QKCapture
    >>> rng = np.random.default_rng(0)
    >>> cap = QKCapture.from_vectors(rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4)),
    ...                              rng.normal(size=(2, 3, 4)), ["[CLS]", "hi", "[SEP]"])
    >>> w = QKStepThrough(cap, head=1, query=2)
    >>> w.head, w.query, w.values()["weights"].shape
    (1, 2, (3,))
    """

    _bundle = "qk"

    layer = Index(0).tag(sync=True)
    """int, default: the first captured layer. The layer shown (one of those captured); arrow up/down in the page
    moves between captured layers. Two-way."""

    head = Index(0).tag(sync=True)
    """int, default 0: the query head shown; arrow left/right in the page changes it. Two-way."""

    query = Index(0).tag(sync=True)
    """int, default: the first word (encoders) or the last token (decoders). The query token whose attention is
    stepped through; clicking a token in the page or choosing it in the menu sets it. Two-way."""

    selection = Selection().tag(sync=True)
    """list[int], default []: the selected query tokens (sorted; [] is none), as the heatmap's ``selection`` and
    linked to it by :func:`attnwidgets.widgets.link_span`. Click a token in the first panel to select it,
    shift-click to extend to a span, ctrl/cmd-click to add or remove one, Escape clears. The panels are the arithmetic
    of one query (the softmax of a mean of rows is not the mean of their softmaxes), so they step through one
    selected token: ``query`` while it is selected, else the first selected token (choose another selected one in
    the query menu); the first panel marks every selected token. Choosing a query outside the selection selects it
    alone. A position out of range, a repeat or a non-integer is a TraitError."""

    window = traitlets.List(traitlets.Int()).tag(sync=True)
    """list[int] ``[start, stop]``: the key positions shown, at most 256 wide (or all of up to
    512 keys). Default: every key of a capture of up
    to 512 keys; else 64 keys around the query. Two-way: the page's ◀ ▶ buttons set it; choosing a query outside it
    moves it there. Keys outside it with the largest weight are shown as "far" rows."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, stack, captured layers, heads, kv heads, head size, scaling, query and key tokens, ``long``."""

    colormap = Colormap(DIVERGING_COLORMAPS).tag(sync=True)
    """str, default "" (the theme's: "rdbu", "puor" in the lecture theme): the diverging scale of q, k, v and
    their products."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: the first view's arrays as binary buffers (``{key, arrays: {name: packed}}``), so the first paint needs
    no round trip."""

    def __init__(self, capture: QKCapture | Sequence[QKCapture], **kwargs: Any) -> None:
        self._captures = captures_by_layer(capture, "QKStepThrough")
        first = next(iter(self._captures.values()))
        kwargs.setdefault("layer", first.layer)
        n = len(first.tokens)
        causal = n > 1 and not first.mask[0, 1:].any()
        kwargs.setdefault("query", n - 1 if causal else min(1, n - 1))
        window_given = "window" in kwargs
        selection = kwargs.pop("selection", [])
        super().__init__(**kwargs)
        self.selection = selection  # after the query, which then follows it
        if not window_given:
            self.window = list(self._window_for(self.query))
        self._refresh_payload()

    @property
    def long(self) -> bool:
        """Whether the capture is shown in windows only (more than 512 keys)."""
        return is_long(self._n_keys())

    def _n_keys(self) -> int:
        return len(next(iter(self._captures.values())).key_tokens)

    def _key_of(self, query: int) -> int:
        """The key position of a query: itself for self-attention, the same share of the source for cross."""
        cap = next(iter(self._captures.values()))
        n, m = len(cap.tokens), len(cap.key_tokens)
        return query if n == m else min(m - 1, query * m // max(n, 1))

    def _window_for(self, query: int) -> tuple[int, int]:
        return default_window(self._n_keys(), around=[self._key_of(query)])

    def windowed(self, window: list[int] | None = None) -> bool:
        """Whether ``window`` (default: the current one) is drawn as a window: a long capture, or narrower."""
        return is_windowed(self._captures, self.window if window is None else window)

    def window_values(self, layer: int | None = None, head: int | None = None, query: int | None = None
                      ) -> dict[str, np.ndarray]:
        """What the panels show in the window: :func:`attnwidgets.viewdata.windows.qk_window` of the current view."""
        cap = self.capture(layer)
        return qk_window(cap, self.head if head is None else head, self.query if query is None else query,
                         check_window(self.window, self._n_keys()))

    @traitlets.validate("window")
    def _valid_window(self, proposal: dict[str, Any]) -> list[int]:
        if not hasattr(self, "_captures"):
            return list(proposal["value"])
        return list(checked(check_window, proposal["value"], self._n_keys()))

    def _n_queries(self) -> int:
        """How many query tokens ``selection`` indexes (what :func:`attnwidgets.widgets.link_span` checks)."""
        return len(next(iter(self._captures.values())).tokens)

    @traitlets.validate("selection")
    def _valid_selection(self, proposal: dict[str, Any]) -> list[int]:
        if not hasattr(self, "_captures"):
            return list(proposal["value"])
        return checked(check_selection, proposal["value"], self._n_queries())

    @traitlets.observe("selection")
    def _on_selection(self, change: dict[str, Any]) -> None:
        self.query = one_query(list(change["new"]), int(self.query))

    @traitlets.observe("query")
    def _on_query(self, change: dict[str, Any]) -> None:
        if self.selection and change["new"] not in self.selection:
            self.selection = [int(change["new"])]
        # A query whose own key is outside the window: move the window to it, keeping its width.
        if hasattr(self, "_captures") and self.window and self.windowed():
            start, stop = self.window
            key = self._key_of(int(change["new"]))
            if not start <= key < stop:
                self.window = list(window_around([key], self._n_keys(), stop - start))

    @property
    def captures(self) -> list[QKCapture]:
        """The captured layers (read-only)."""
        return [self._captures[k] for k in sorted(self._captures)]

    def capture(self, layer: int | None = None) -> QKCapture:
        layer = self.layer if layer is None else layer
        if layer not in self._captures:
            raise IndexError(f"layer {layer} was not captured; captured layers: {sorted(self._captures)}. "
                             "Capture it with attnwidgets.runner.capture_qk_layers(text, layers=[...])")
        return self._captures[layer]

    def values(self, layer: int | None = None, head: int | None = None, query: int | None = None
               ) -> dict[str, np.ndarray]:
        """What the panels show for one query: q (d,), k (m, d), logits/scaled/weights (m,), mask (m,), output (d,);
        with a position bias also bias (m,) (and T5's bucket (m,)); a rotary model's q_pre (d,), k_pre (m, d),
        logits_pre (m,), angle (m, r/2) of each key and q_angle (r/2,) of the query."""
        cap = self.capture(layer)
        arr = cap.head(self.head if head is None else head)
        i = self.query if query is None else query
        out = {"q": arr["q"][i], "k": arr["k"], "v": arr["v"], "logits": arr["logits"][i],
               "scaled": arr["scaled"][i], "weights": arr["weights"][i], "mask": cap.mask[i],
               "output": arr["output"][i]}
        for name in extra_arrays(cap):
            if name in ("k_pre", "angle"):
                out[name] = arr[name]
            elif name == "q_angle":
                out[name] = arr["angle"][i]
            else:
                out[name] = arr[name][i]
        return out

    def _options(self) -> QKOptions:
        return QKOptions(self.layer, self.head, self.query, (int(self.window[0]), int(self.window[1])))

    def _view_key(self) -> str:
        """The page's name for the view (js/src/views/qk/state.ts viewKey)."""
        return view_key(self._captures, self._options())

    def _refresh_payload(self) -> None:
        if not self.window:
            return
        self._show(qk_state(self._captures, self._options()))

    def page_state(self) -> QKState | None:
        """The state of the head on screen: the synced one while the traits still choose it, else the same state of
        the head, query and window they choose now, which the page fetched by a "qk" request (what
        :func:`attnwidgets.plots.paint` and the picture in the display bundle draw)."""
        state: QKState | None = super().page_state()
        if state is None or state.payload.key == self._view_key():
            return state
        return qk_state(self._captures, self._options())

    @traitlets.validate("layer", "head", "query")
    def _valid(self, proposal: dict[str, Any]) -> int:
        name, value = proposal["trait"].name, int(proposal["value"])
        if not hasattr(self, "_captures"):
            return value
        # Captured layers share heads and tokens; a layer being refused must not hide a head or query check.
        cap = next(iter(self._captures.values()))
        if name == "layer":
            checked(check_captured, value, self._captures)
        elif name == "head":
            checked(check_head, value, cap.n_heads, allow_mean=False)
        elif not 0 <= value < len(cap.tokens):
            n = len(cap.tokens)
            raise traitlets.TraitError(f"query {value} is out of range: there are {n} query tokens (0..{n - 1})")
        return value

    def _handlers(self) -> dict[str, Any]:
        return {"qk": self._qk_request}

    def _qk_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        window = req.get("window")
        query = req.get("query")
        if window is not None and query is None:
            raise ValueError("a windowed qk request needs the query")
        if query is not None and window is None:
            window = self.window
        if query is not None and not 0 <= int(query) < len(self.capture(int(req["layer"])).tokens):
            raise ValueError(f"query {query} is out of range")
        cap = self.capture(int(req["layer"]))
        head = int(req["head"]) if query is None else checked(check_head, int(req["head"]), cap.n_heads,
                                                                 allow_mean=False)
        return qk_reply(qk_arrays(cap, head, None if query is None else int(query), window))

    def _export_requests(self, scope: str) -> list[dict[str, Any]]:
        """Requests a saved page answers without a kernel: every captured layer x head, or the view on screen."""
        win = ({"query": self.query, "window": list(self.window)} if self.windowed() else {})
        if scope == "view":
            return [{"what": "qk", "layer": self.layer, "head": self.head, **win}]
        return [{"what": "qk", "layer": layer, "head": h, **win} for layer in sorted(self._captures)
                for h in range(self._captures[layer].n_heads)]
