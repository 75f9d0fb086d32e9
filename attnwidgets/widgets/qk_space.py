"""QKSpaceView: one head's queries and keys over a corpus as one scatter (AttentionViz; front end:
js/src/views/qk_space/)."""

from __future__ import annotations

from typing import Any

import traitlets

from ..viewdata.qk_space import check_qk_space, check_space_selection, check_view_color, selected_points
from ..viewdata.state import to_reply
from ..viewdata.views.qk_space import qk_space_state, sentence_weights
from ._base import AttnWidget, Colormap, checked
from ._span import Selection

__all__ = ["QKSpaceView"]


class QKSpaceView(AttnWidget):
    """A head's queries (filled dots) and keys (rings) over a corpus, embedded together, on a canvas.

    Colour by relative position in the sentence, by token (the most frequent ones), by part of speech (when the
    space came from a CoNLL-U file) or by the attention each key receives (queries grey). Hovering a point shows its
    token in its sentence; clicking it sets ``sentence`` and ``point`` and opens that sentence's attention on this
    head in the panel beside the scatter (query rows, key columns; the clicked token's row or column marked). The
    panel lives in the widget itself and its map comes by the widget's own message, so the click works alike in
    JupyterLab, Notebook 7, marimo and a saved page; code can follow the click with
    ``view.observe(callback, "sentence")``.

    Coordinates travel as one packed float32 buffer (nine numbers per point); the page hit-tests through a grid of
    buckets, so 10,000+ points stay interactive.

    Parameters
    ----------
    space : QKSpace
        From :func:`attnwidgets.studies.qk_space`.
    color : str
        "position", "token", "pos" or "attention" (default: the space's own ``color``).
    sentence : int
        The sentence whose map the panel shows (-1: none yet).
    selection : list[int], optional
        Selected query tokens of that sentence (see the trait).
    colormap : str
        The continuous colour map ("blues", "viridis", ...); "" viridis for the points, the theme's for the panel.
    theme : str
        "light" or "lecture".

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.analysis.qk_space import build_qk_space
    >>> rng = np.random.default_rng(0)
    >>> q = [rng.normal(size=(4, 8)) for _ in range(3)]
    >>> w = [np.full((4, 4), 0.25) for _ in range(3)]
    >>> space = build_qk_space(q, q, w, [["[CLS]", "a", "b", "[SEP]"]] * 3)
    >>> view = QKSpaceView(space, color="attention")
    >>> view.color, view.sentence, view._payload["points"]["shape"]
    ('attention', -1, [24, 9])
    """

    _bundle = "qk_space"

    color = traitlets.Unicode("position").tag(sync=True)
    """str: what colours the points ("position", "token", "pos", "attention"); the page's menu sets it."""

    colormap = Colormap().tag(sync=True)
    """str, default "" (viridis for the points, whose near-white end would vanish on white; the theme's for the
    panel's map): the continuous colour map."""

    sentence = traitlets.Int(-1).tag(sync=True)
    """int: the sentence the panel shows (set by a click; -1 none)."""

    point = traitlets.Int(-1).tag(sync=True)
    """int: the clicked point (index into the space's rows; -1 none)."""

    selection = Selection().tag(sync=True)
    """list[int], default []: the selected query tokens of the sentence shown (positions in its tokens, sorted), as
    the heatmap's ``selection``: :func:`attnwidgets.widgets.link_span` links it to a heatmap of that sentence (set
    ``sentence`` first). Clicking a query point selects its token (shift-click extends to a span of its sentence,
    ctrl/cmd-click adds or removes; a point of another sentence starts again there), Escape clears; the selected
    tokens' query points are ringed in the scatter and their rows outlined in the panel. A click on a key point
    opens its sentence without selecting. Setting ``sentence`` from Python clears it; with no sentence (-1) only
    [] is allowed. A position out of range, a repeat or a non-integer is a TraitError."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, method, layer, head, each sentence's tokens, the token and part-of-speech category names."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {points}: a packed (N, 9) float32 buffer, columns x, y, kind (0 query, 1 key), sentence, token,
    relative position, attention received (NaN for queries), token category, part-of-speech category
    (:func:`attnwidgets.viewdata.qk_space.qk_space_columns`)."""

    def __init__(self, space: Any, **kwargs: Any) -> None:
        self.space = check_qk_space(space, "QKSpaceView")
        kwargs.setdefault("color", self.space.color)
        selection = kwargs.pop("selection", [])
        super().__init__(**kwargs)
        self.selection = selection  # after the sentence, which it indexes
        self._show(qk_space_state(self.space))

    @traitlets.validate("color")
    def _valid_color(self, proposal: dict[str, Any]) -> str:
        return checked(check_view_color, proposal["value"], self.space)

    @traitlets.validate("sentence")
    def _valid_sentence(self, proposal: dict[str, Any]) -> int:
        value = int(proposal["value"])
        n = self.space.n_sentences
        if not -1 <= value < n:
            raise traitlets.TraitError(f"sentence {value} is out of range: there are {n} sentences (0..{n - 1}, "
                                       "or -1 for none)")
        return value

    @traitlets.validate("point")
    def _valid_point(self, proposal: dict[str, Any]) -> int:
        value = int(proposal["value"])
        n = self.space.n_points
        if not -1 <= value < n:
            raise traitlets.TraitError(f"point {value} is out of range: there are {n} points (0..{n - 1}, or -1)")
        return value

    def _n_queries(self) -> int | None:
        """Query tokens of the sentence shown, what a selection indexes (None with no sentence): what
        :func:`attnwidgets.widgets.link_span` checks."""
        return None if self.sentence < 0 else len(self.space.tokens[self.sentence])

    def selected_points(self) -> list[int]:
        """The rows of the query points of the selected tokens (what the scatter rings), in token order."""
        return selected_points(self.space, self.sentence, self.selection).tolist()

    @traitlets.validate("selection")
    def _valid_selection(self, proposal: dict[str, Any]) -> list[int]:
        if not hasattr(self, "space"):
            return list(proposal["value"])
        return checked(check_space_selection, self.space, self.sentence, proposal["value"])

    @traitlets.observe("sentence")
    def _on_sentence(self, _change: dict[str, Any]) -> None:
        # Positions of one sentence mean nothing in another. A page click sends the new sentence together with the
        # selection it makes (its query point's token); ipywidgets holds those keys in _property_lock while it
        # applies them, so that selection is kept.
        if "selection" not in getattr(self, "_property_lock", {}):
            self.selection = []

    def _handlers(self) -> dict[str, Any]:
        return {"sentence": self._sentence_request}

    def _sentence_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        return to_reply(sentence_weights(self.space, int(req["sentence"])))

    def _export_requests(self, scope: str) -> list[dict[str, Any]]:
        """A saved page answers the map of every sentence (``scope="all"``) or of the one on screen (``"view"``)."""
        if scope == "view":
            return [] if self.sentence < 0 else [{"what": "sentence", "sentence": self.sentence}]
        return [{"what": "sentence", "sentence": s} for s in range(self.space.n_sentences)]
