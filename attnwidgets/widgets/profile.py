"""AttentionProfile: where in a long document a query span looks (front end: js/src/views/profile/)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import traitlets

from ..result import AttentionResult
from ..viewdata.checks import check_int
from ..viewdata.profile import (
    check_span,
    check_unit,
    default_query,
    query_profile,
    unit_of,
    unit_sums,
    view_shape,
)
from ..viewdata.selection import span_row
from ..viewdata.state import to_reply
from ..viewdata.views.profile import (
    ProfileDoc,
    ProfileOptions,
    profile_doc,
    profile_key,
    profile_state,
    profile_weights,
)
from ._base import AttnWidget, Colormap, Index, checked
from ._result import ShowsResult, proposed_view, take_result
from ._span import SpanSelection

__all__ = ["AttentionProfile", "ProfileLink", "Span", "zoom_window"]


class Span(traitlets.List):  # type: ignore[type-arg]
    """A [start, stop] trait that also takes an int ``i`` (the span [i, i + 1]) or a tuple; the range is checked by
    the view (:func:`~attnwidgets.viewdata.profile.check_span`, which also says what an empty span is)."""

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)  # the view's @validate makes it [i, i + 1] once it has checked the range
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise traitlets.TraitError(f"query must be a token index or a (start, stop) span, got "
                                       f"{type(value).__name__} {value!r}")
        return [checked(check_int, value[0], "query start"), checked(check_int, value[1], "query stop")]


class AttentionProfile(SpanSelection, ShowsResult, AttnWidget):
    """The document itself, each key token (or sentence, or paragraph) coloured by the attention it receives from
    a query token or span: "where in this long document is the model looking?".

    The profile is the mean over the span's query rows of the attention to each key, for one head or the mean of the
    layer's heads (``head=-1``); a sentence or paragraph gets the sum over its keys. Everything is read a block of
    rows at a time (``result.rows``), so an 8,000-token result held as queries and keys works without its dense
    attention. Only the profile on screen crosses to the page (one float32 per key); other layers and heads are
    fetched when chosen.

    In the page: hover a token for its exact weight; click a token, sentence or paragraph (by ``unit``) to select it
    (``selected``, the keys :meth:`link_heatmap` zooms to). The query tokens are chosen with a modifier, since a plain
    click picks keys here: alt-click a token to make it the query alone, shift-click another to extend the query to
    a contiguous span, ctrl/cmd-click to add or remove one token (the query may then have gaps); Escape goes back
    to the default query.

    ``selection`` is the query tokens, the same trait as in :class:`AttentionHeatmap` and :class:`ModelView`, and
    ``combine`` ("mean", default, or "sum") how their rows are combined; ``query`` is the span ``[min, max + 1]``
    that covers them (setting it selects every token of the span). The selection is never empty: ``[]`` goes back
    to the default query.

    Parameters
    ----------
    result : AttentionResult
        From :func:`attnwidgets.run` (or any other source), dense or held as queries and keys.
    layer, head : int
        The layer; the head, or -1 (default) for the mean of the layer's heads.
    query : int or (start, stop)
        The query token, or span of query tokens (stop exclusive). Default: the last token that is not a special
        token.
    unit : str
        "token" (default), "sentence" or "paragraph": what the keys are added up into.
    kind : str
        "self", or "encoder" / "decoder" / "cross" for encoder-decoder results (cross: target queries over the
        source document).
    colormap : str
        "blues", "viridis", "cividis", "greys" or "reds"; "" (default) is blues in both themes.
    selection : list of int, optional
        Query tokens (any set, not only a span); overrides ``query``.
    combine : str
        "mean" (default) or "sum" of the query rows.
    theme : str
        "light" or "lecture".

    Examples
    --------
    >>> import attnwidgets as aw
    >>> r = aw.run("The cat sat on the mat. It was tired.")
    >>> w = aw.AttentionProfile(r, layer=2, query=9, unit="sentence")
    >>> w.query, len(w.profile()) == len(w.unit_starts())
    ([9, 10], True)
    """

    _bundle = "profile"

    layer = Index(0).tag(sync=True)
    """int, default 0: the layer shown. Two-way: choosing a layer in the page sets it, setting it here redraws."""

    head = Index(-1).tag(sync=True)
    """int, default -1 (the mean of the layer's heads): the head shown. Two-way like ``layer``."""

    kind = traitlets.Unicode("self").tag(sync=True)
    """str, default "self": which attention; "encoder", "decoder" or "cross" for encoder-decoders."""

    colormap = Colormap().tag(sync=True)
    """str, default "" (blues in both themes: text is read on its colour, so the lowest weights look like the white
    page): "blues", "viridis", "cividis", "greys" or "reds"."""

    query = Span().tag(sync=True)
    """list[int], [start, stop]: the query span (stop exclusive). Set it to an int ``i`` for the token ``i`` alone
    or to a (start, stop) pair; shift-clicking tokens in the page sets it. Two-way."""

    unit = traitlets.Unicode("token").tag(sync=True)
    """str, default "token": "token", "sentence" or "paragraph", what each colour stands for. Two-way."""

    selected = traitlets.List(traitlets.Int()).tag(sync=True)
    """list[int], [] or [k0, k1]: the key range the user clicked (a token, sentence or paragraph; k1 exclusive).
    :meth:`link_heatmap` zooms an :class:`AttentionHeatmap` there. Two-way."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {title, kinds, shapes {kind: [layers, heads]}, docs {kind: {pieces, queries, sentence, paragraph}},
    key, weights}: the document of every kind (each key token's text as it reads in running text, the query
    tokens, the first token of each sentence and paragraph) and the first profile (``weights``, float32 per key) as a
    binary buffer, so the first paint needs no round trip. Other profiles come by "profile" request."""

    def __init__(self, result: AttentionResult, *, query: Any = None, **kwargs: Any) -> None:
        self._result = take_result("AttentionProfile", result, kwargs)
        kind = checked(view_shape, self._result, kwargs.get("kind", "self"), 0, -1)[0]
        if query is None:
            query = default_query(self._result, kind)
        self._docs: dict[str, ProfileDoc] = {}
        self._ready = False
        self._syncing = False
        selection = kwargs.pop("selection", None)
        super().__init__(query=query, **kwargs)
        self._ready = True
        checked(view_shape, self._result, self.kind, self.layer, self.head)
        if selection:
            self.selection = selection  # sets query to the span that covers it
        else:
            self.selection = list(range(*self.query))
        self._refresh()

    # -- what it shows -----------------------------------------------------------------------------------------------

    @property
    def selection_shape(self) -> tuple[int, int]:
        """(layers, heads) of the attention shown: what :func:`link_selection` checks, without building it."""
        n_layers, n_heads, _, _ = self._result.attention_shape(self.kind)  # type: ignore[arg-type]
        return n_layers, n_heads

    def weights(self, layer: int | None = None, head: Any = None, query: Any = None,
                kind: str | None = None) -> np.ndarray:
        """(key,) float32: the attention each key token receives from the query tokens, combined by ``combine``
        (the current view unless given; ``query`` a token or (start, stop) span, always their mean; ``head`` may also
        be a list of heads, averaged)."""
        layer = self.layer if layer is None else layer
        head = self.head if head is None else head
        kind = self.kind if kind is None else kind
        if query is None and self.selection:
            return span_row(self._result, layer, list(self.selection), head, kind, self.combine)
        return query_profile(self._result, layer, list(self.query) if query is None else query, head, kind)

    def _span_view(self) -> tuple[str, int, int]:
        return self.kind, self.layer, self.head

    def unit_starts(self, unit: str | None = None) -> np.ndarray:
        """(units,) the first key token of each unit (``unit`` or the current one)."""
        unit = check_unit(unit or self.unit)
        doc = self._doc(self.kind)
        return np.arange(len(doc.pieces)) if unit == "token" else np.asarray(getattr(doc, unit), dtype=np.int64)

    def profile(self, unit: str | None = None) -> np.ndarray:
        """(units,) what the page colours: the weight of each token, sentence or paragraph (sum over its keys)."""
        return unit_sums(self.weights(), self.unit_starts(check_unit(unit or self.unit)))

    def _doc(self, kind: str) -> ProfileDoc:
        if kind not in self._docs:
            self._docs[kind] = profile_doc(self._result, kind)
        return self._docs[kind]

    def _key(self, kind: str, layer: int, head: int, selection: list[int], combine: str) -> str:
        """The page's name for a profile (js/src/views/profile/state.ts profileKey): the selection as runs "a:b,c:d"."""
        return profile_key(ProfileOptions(kind, layer, head, tuple(selection), combine))

    def _refresh(self) -> None:
        if not self._ready or not self.selection:
            return  # the selection is set at the end of __init__, which refreshes then
        options = ProfileOptions(self.kind, self.layer, self.head, tuple(self.selection), self.combine)
        state = profile_state(self._result, options, docs=self._docs)
        self._docs.update(state.payload.docs)
        self._show(state)

    # -- traits --------------------------------------------------------------------------------------------------------

    @traitlets.validate("layer", "head", "kind")
    def _valid(self, proposal: dict[str, Any]) -> Any:
        if hasattr(self, "_result"):
            kind, layer, head = proposed_view(self, proposal)
            checked(view_shape, self._result, kind, layer, head)
        return proposal["value"]

    @traitlets.validate("query")
    def _valid_query(self, proposal: dict[str, Any]) -> list[int]:
        n = self._result.attention_shape(self.kind)[2]  # type: ignore[arg-type]
        return list(checked(check_span, proposal["value"], n))

    @traitlets.validate("selection")
    def _valid_selection(self, proposal: dict[str, Any]) -> list[int]:
        if not hasattr(self, "_result"):
            return list(proposal["value"])
        value = super()._valid_selection(proposal)
        return value or list(range(*default_query(self._result, self.kind)))

    @traitlets.observe("selection")
    def _on_selection(self, change: dict[str, Any]) -> None:
        # the query span follows: the span that covers the selection
        if not self._ready or self._syncing or not change["new"]:
            return
        self._syncing = True
        try:
            self.query = [change["new"][0], change["new"][-1] + 1]
        finally:
            self._syncing = False

    @traitlets.observe("query")
    def _on_query(self, change: dict[str, Any]) -> None:
        # a query span set here (or in the page's boxes) selects every token of it
        if not self._ready or self._syncing:
            return
        self._syncing = True
        try:
            self.selection = list(range(*change["new"]))
        finally:
            self._syncing = False

    @traitlets.validate("unit")
    def _valid_unit(self, proposal: dict[str, Any]) -> str:
        return checked(check_unit, proposal["value"])

    @traitlets.validate("selected")
    def _valid_selected(self, proposal: dict[str, Any]) -> list[int]:
        value = list(proposal["value"])
        if not value:
            return []
        n = self._result.attention_shape(self.kind)[3]  # type: ignore[arg-type]
        if len(value) != 2 or not 0 <= value[0] < value[1] <= n:
            raise traitlets.TraitError(f"selected must be [] or a key range [k0, k1] with 0 <= k0 < k1 <= {n}, "
                                       f"got {value}")
        return value

    @traitlets.observe("kind")
    def _on_kind(self, change: dict[str, Any]) -> None:
        if not self._ready or change["old"] == change["new"]:
            return  # set while the widget is built
        # a new kind may have other queries (cross: the target's): start from its default query, nothing selected
        with self.hold_trait_notifications():
            self.query = list(default_query(self._result, change["new"]))
            self.selected = []
        self._refresh()

    # -- requests from the page --------------------------------------------------------------------------------------

    def _handlers(self) -> dict[str, Any]:
        return {"profile": self._profile_request}

    def _profile_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        layer, head, kind = int(req["layer"]), int(req["head"]), str(req["kind"])
        if "selection" in req:  # any set of query tokens, combined by mean or sum
            answer = profile_weights(self._result, layer, head, kind, selection=list(req["selection"]),
                                     combine=str(req.get("combine", "mean")))
        else:
            answer = profile_weights(self._result, layer, head, kind, query=(int(req["q0"]), int(req["q1"])))
        content, buffers = to_reply(answer)
        return {"shape": content["shape"], "dtype": content["dtype"]}, buffers

    def _export_requests(self, scope: str) -> list[dict[str, Any]]:
        """Requests a saved page answers without a kernel: the current query's profile for every layer and head (and
        the mean) of the kind shown, or only the view on screen (``scope="view"``). Another query needs a kernel."""
        sel = {"selection": list(self.selection), "combine": self.combine}
        if scope == "view":
            return [{"what": "profile", "kind": self.kind, "layer": self.layer, "head": self.head, **sel}]
        n_layers, n_heads = self.selection_shape
        return [{"what": "profile", "kind": self.kind, "layer": layer, "head": head, **sel}
                for layer in range(n_layers) for head in range(-1, n_heads)]

    # -- linking -------------------------------------------------------------------------------------------------------

    def region(self, key: int, unit: str | None = None) -> tuple[int, int]:
        """The key range (k0, k1) of the token, sentence or paragraph that holds key ``key``."""
        n = self._result.attention_shape(self.kind)[3]  # type: ignore[arg-type]
        return unit_of(self.unit_starts(unit), key, n)

    def link_heatmap(self, heatmap: Any, *, selection: bool = True) -> ProfileLink:
        """Zoom ``heatmap`` (an :class:`AttentionHeatmap` of the same result and kind) to the query span's rows and
        the selected keys whenever a region is clicked here; with ``selection`` (default) the two also keep the same
        layer and head (:func:`link_selection`, in the page).

        >>> import attnwidgets as aw
        >>> r = aw.run("The cat sat on the mat. It was tired.")
        >>> p, h = aw.AttentionProfile(r, query=9), aw.AttentionHeatmap(r)
        >>> link = p.link_heatmap(h)
        >>> p.selected = [1, 7]
        >>> h.zoom
        [6, 12, 1, 7]
        """
        from .heatmap import AttentionHeatmap
        from .linking import link_selection

        if not isinstance(heatmap, AttentionHeatmap):
            raise TypeError(f"link_heatmap takes an AttentionHeatmap, got {type(heatmap).__name__}")
        theirs = heatmap.result.attention_shape(heatmap.kind)  # type: ignore[arg-type]
        ours = self._result.attention_shape(self.kind)  # type: ignore[arg-type]
        if heatmap.kind != self.kind or theirs != ours:
            raise ValueError("link_heatmap needs a heatmap of the same result and attention kind "
                             f"(this profile shows {self.kind!r} attention)")
        links = [link_selection(self, heatmap)] if selection else []

        def zoom(_change: Any = None) -> None:
            if self.selected:
                heatmap.zoom = zoom_window(self.query, self.selected, self._result.attention_shape(self.kind)[2])  # type: ignore[arg-type]

        self.observe(zoom, names=["selected"])
        zoom()
        return ProfileLink(self, heatmap, zoom, links)


def zoom_window(query: list[int], keys: list[int], n_queries: int) -> list[int]:
    """[q0, q1, k0, k1]: the query rows (the span, widened to as many rows as there are keys, centred on it and
    kept inside the matrix) and the key columns a heatmap zooms to, so the region shows square cells.

    >>> zoom_window([9, 10], [1, 7], 12)
    [6, 12, 1, 7]
    """
    q0, q1 = query
    k0, k1 = keys
    rows = min(n_queries, max(q1 - q0, k1 - k0))
    start = min(max(0, (q0 + q1) // 2 - rows // 2), n_queries - rows)
    return [start, start + rows, k0, k1]


class ProfileLink:
    """What :meth:`AttentionProfile.link_heatmap` made; ``unlink()`` undoes it."""

    def __init__(self, profile: AttentionProfile, heatmap: Any, zoom: Any, links: list[Any]) -> None:
        self.profile, self.heatmap, self._zoom, self.links = profile, heatmap, zoom, links

    def unlink(self) -> None:
        """Stop zooming the heatmap and following its selection."""
        self.profile.unobserve(self._zoom, names=["selected"])
        for link in self.links:
            link.unlink()
        self.links = []
