"""What the views that select query tokens share (AttentionHeatmap, ModelView, AttentionProfile): the synced
``selection`` and ``combine`` traits, their checks, and the "span" request the page sends for the combined row.

The numbers come from :mod:`attnwidgets.viewdata.selection` (the static twins use the same functions); the page's
click rules are in js/src/draw/span.ts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..result import AttentionResult
from ..viewdata.checks import check_int
from ..viewdata.selection import check_combine, check_selection, span_row
from ..viewdata.wire import pack
from ._base import checked

__all__ = ["CLICKS_SAVED", "Selection", "SpanSelection"]

#: Tokens up to which a saved page (scope "all") answers a click on any single token of the map on screen.
CLICKS_SAVED = 256


class Selection(traitlets.List):  # type: ignore[type-arg]
    """A list of query positions: a list or tuple of ints (not bools, floats or strings), kept sorted; the range and
    repeats are checked by the view, which knows how many query tokens it shows."""

    def validate(self, obj: Any, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            raise traitlets.TraitError(f"selection must be a list of token positions, got {type(value).__name__} "
                                       f"{value!r}")
        return [checked(check_int, p, "selection position") for p in value]


class SpanSelection(traitlets.HasTraits):
    """Mixin: ``selection`` (query positions) and ``combine`` ("mean" or "sum") and the combined row they name.

    A view sets ``_span_source()`` (the result its rows are read from, word level included) and ``_span_view()``
    (kind, layer, head of the map on screen).
    """

    selection = Selection().tag(sync=True)
    """list[int], default []: the selected query tokens (positions of the rows on screen, sorted; [] is none). Click
    a token to select it, shift-click to extend to a contiguous span, ctrl/cmd-click to add or remove one, Escape
    or "clear" to reset. Setting it here redraws the page; a position out of range, a repeat or a non-integer is a
    TraitError. The page shows the ``combine`` of the selected rows."""

    combine = traitlets.Unicode("mean").tag(sync=True)
    """str, default "mean": how the selected rows are combined, "mean" (a distribution over keys, sums to 1) or
    "sum" (the total attention the selected tokens give each key). Two-way: the page's menu sets it."""

    _result: AttentionResult

    def _span_source(self, words: bool | None = None) -> AttentionResult:
        return self._result

    def _span_view(self) -> tuple[str, int, int]:
        raise NotImplementedError

    def _span_kind(self, kind: str) -> str:
        """The attention kind a page's request names, as the result knows it."""
        return kind

    def _n_selectable(self, kind: str | None = None, words: bool | None = None) -> int:
        """How many query rows the view shows (what a selection indexes)."""
        kind = kind or self._span_view()[0]
        return int(self._span_source(words).attention_shape(kind)[2])  # type: ignore[arg-type]

    @traitlets.validate("selection")
    def _valid_selection(self, proposal: dict[str, Any]) -> list[int]:
        if not hasattr(self, "_result"):
            return list(proposal["value"])
        return checked(check_selection, proposal["value"], self._n_selectable())

    @traitlets.validate("combine")
    def _valid_combine(self, proposal: dict[str, Any]) -> str:
        return checked(check_combine, proposal["value"])

    def span_weights(self, combine: str | None = None) -> np.ndarray:
        """(key,) float32: the ``combine`` (default: the trait) of the selected rows of the map on screen, what the
        page draws under it. ValueError when nothing is selected."""
        kind, layer, head = self._span_view()
        return span_row(self._span_source(), layer, list(self.selection), head, kind,  # type: ignore[attr-defined]
                        self.combine if combine is None else combine)  # type: ignore[attr-defined]

    def _span_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        kind, layer, head = self._span_kind(str(req["kind"])), int(req["layer"]), int(req["head"])
        words = bool(req.get("words", False))
        row = span_row(self._span_source(words), layer, list(req["selection"]), head, kind,
                       str(req.get("combine", "mean")))
        packed = pack(row)
        return {"shape": packed["shape"], "dtype": packed["dtype"]}, [packed["buffer"]]

    def _span_export(self, view: dict[str, Any], clicks: bool = False) -> list[dict[str, Any]]:
        """The "span" request of the selection on screen (for a saved page), or none; with ``clicks``, also the one
        a click on each single token sends in the map on screen (up to :data:`CLICKS_SAVED` tokens), so a saved page
        answers a click (one row each: a few bytes per token)."""
        current = [list(self.selection)] if self.selection else []  # type: ignore[attr-defined]
        n = self._n_selectable(self._span_kind(str(view["kind"])), bool(view.get("words", False))) if clicks else 0
        singles = [[i] for i in range(n)] if n <= CLICKS_SAVED else []
        out = [{**view, "what": "span", "selection": sel, "combine": self.combine}  # type: ignore[attr-defined]
               for sel in current]
        out += [{**view, "what": "span", "selection": sel, "combine": "mean"} for sel in singles
                if not (sel in current and self.combine == "mean")]  # type: ignore[attr-defined]
        return out
