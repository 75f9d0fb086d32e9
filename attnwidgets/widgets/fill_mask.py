"""FillMask: type a sentence with [MASK], see the model's top-k fillers and where the [MASK] position attends
(front end: js/src/views/fill_mask/; static twin: attnwidgets.plots.plot_fill_mask)."""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..viewdata.checks import check_head, check_layer
from ..viewdata.selection import check_combine, check_selection
from ..viewdata.views.fill_mask import fill_mask_row, fill_mask_state
from ._base import AttnWidget, Index, checked
from ._span import Selection

__all__ = ["FillMask"]


class FillMask(AttnWidget):
    """Fill in the [MASK], live: the top-``k`` fillers of every ``[MASK]`` in a sentence as bars with their
    probabilities, and the attention of a [MASK] position over the tokens (one layer, one head or their mean).

    Type another sentence in the page's box (Enter) and Python fills it in again. The bundled model uses the
    masked-LM head shipped with attnwidgets (:mod:`attnwidgets.studies.masked_lm`); a model with its own masked-LM
    head uses that.

    Parameters
    ----------
    text : str
        A sentence with one or more ``[MASK]`` (``<mask>`` is accepted too).
    k : int
        How many fillers to show per mask (1..20).
    model : str or Runner, optional
        The model (default: the bundled one).
    layer, head : int
        Whose attention the [MASK] row shows (``head=-1``: mean over the layer's heads). Default: the last layer.
    mask : int
        Which [MASK] the attention row (and the lens table) belongs to (0 = the first).
    selection : list[int], optional
        The query rows the attention panel shows (default: that [MASK]'s position); ``combine`` ("mean" or "sum")
        combines several.
    lens : bool
        Show the logit lens at the [MASK]: each layer's top-``k`` fillers, read from the stream after the embeddings
        and after each layer through the head that fills in (for the bundled model, the head attnwidgets trained on
        its last layer), ``layer``'s row outlined (:func:`attnwidgets.studies.masked_lm.fill_mask_lens`).
    theme : str
        "light" or "lecture".

    Examples
    --------
    >>> import attnwidgets as aw
    >>> w = aw.FillMask("The chef tasted the [MASK] and added more salt.")
    >>> len(w.fills()[0]["tokens"])
    5
    """

    _bundle = "fill_mask"

    text = traitlets.Unicode("").tag(sync=True)
    """str: the sentence (the page's text box sets it; Python fills it in again)."""
    k = traitlets.Int(5).tag(sync=True)
    layer = Index(0).tag(sync=True)
    head = Index(-1).tag(sync=True)
    mask = Index(0).tag(sync=True)

    selection = Selection().tag(sync=True)
    """list[int], default: the position of [MASK] ``mask``: the query tokens whose attention the panel under the
    bars shows (sorted), as the heatmap's ``selection`` and linked to it by :func:`attnwidgets.widgets.link_span`.
    Click a token under the panel to select it, shift-click to extend to a span, ctrl/cmd-click to add or remove
    one, Escape goes back to the [MASK]. Several rows are combined by ``combine``; [] shows the [MASK]'s row.
    Choosing another [MASK] (a click on its bars) or another sentence selects that [MASK] again. A position out of
    range, a repeat or a non-integer is a TraitError."""

    combine = traitlets.Unicode("mean").tag(sync=True)
    """str, default "mean": how the selected rows are combined, "mean" (a distribution over the tokens) or "sum"
    (the total attention the selected tokens give each token)."""

    lens = traitlets.Bool(False).tag(sync=True)
    """bool, default False: show the logit lens table of the [MASK] (the page's "lens" box toggles it)."""

    _meta = traitlets.Dict().tag(sync=True)

    def __init__(self, text: str, *, model: Any = None, **kwargs: Any) -> None:
        k = kwargs.pop("k", 5)
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= 20:
            raise ValueError(f"k must be a whole number from 1 to 20, got {k!r}")
        self._model = model
        from ..studies.masked_lm import fill_mask_view

        self._view = fill_mask_view(text, int(k), model)         # raises for a bad text: nothing half-built
        last = "layer" not in kwargs
        selection = kwargs.pop("selection", None)
        super().__init__(text=text, k=int(k), **kwargs)
        if last:                                                  # default: the last layer
            self.layer = self._view["rows"].shape[1] - 1
        self.selection = self._mask_row() if selection is None else selection
        self._publish()

    @property
    def view(self) -> dict[str, Any]:
        """What is drawn (:func:`attnwidgets.studies.masked_lm.fill_mask_view`); ``aw.plots.plot_fill_mask(w.view)``."""
        return self._view

    def fills(self) -> list[dict[str, Any]]:
        """Per [MASK]: its top-k ``tokens`` and ``probs`` as shown."""
        return self._view["fills"]

    def lens_rows(self) -> list[list[tuple[str, float]]]:
        """The logit lens the panel draws for the selected [MASK]: per row (the embeddings, then each layer) its
        ``(token, probability)`` pairs, most probable first."""
        lens = self._view["lens"]
        return [[(t, float(p)) for t, p in zip(toks, probs, strict=True)]
                for toks, probs in zip(lens["tokens"][self.mask], lens["probs"][self.mask], strict=True)]

    def attention_row(self) -> np.ndarray:
        """(tokens,) what the attention panel shows at ``layer``/``head`` (head=-1: the heads' mean): the
        ``combine`` of the selected query rows (by default the [MASK]'s own row); with nothing selected, the row
        of [MASK] ``mask`` (:func:`attnwidgets.viewdata.views.fill_mask.fill_mask_row`)."""
        return fill_mask_row(self._view, self.layer, self.head, self.selection, self.combine, self.mask)

    def _mask_row(self) -> list[int]:
        """The default selection: the position of [MASK] ``mask``."""
        return [int(self._view["positions"][self.mask])]

    def _n_queries(self) -> int:
        """How many query tokens ``selection`` indexes (what :func:`attnwidgets.widgets.link_span` checks)."""
        return len(self._view["tokens"])

    @traitlets.validate("selection")
    def _valid_selection(self, proposal: dict[str, Any]) -> list[int]:
        if not hasattr(self, "_view"):
            return list(proposal["value"])
        return checked(check_selection, proposal["value"], self._n_queries())

    @traitlets.validate("combine")
    def _valid_combine(self, proposal: dict[str, Any]) -> str:
        return checked(check_combine, proposal["value"])

    @traitlets.observe("mask")
    def _on_mask(self, _change: dict[str, Any]) -> None:
        if hasattr(self, "_view"):
            self.selection = self._mask_row()

    @traitlets.validate("layer", "head", "mask")
    def _valid_index(self, proposal: dict[str, Any]) -> int:
        value, name = proposal["value"], proposal["trait"].name
        if not hasattr(self, "_view"):
            return value
        _, n_layers, n_heads, _ = self._view["rows"].shape
        if name == "layer":
            return checked(check_layer, value, n_layers)
        if name == "head":
            return checked(check_head, value, n_heads, allow_mean=True)
        n_masks = len(self._view["positions"])
        limit = {"layer": n_layers, "head": n_heads, "mask": n_masks}[name]
        low = -1 if name == "head" else 0
        if not low <= value < limit:
            what = {"layer": "layers", "head": "heads", "mask": "[MASK]s"}[name]
            raise traitlets.TraitError(f"{name} {value} is out of range: there are {limit} {what} "
                                       f"({low}..{limit - 1})")
        return value

    @traitlets.validate("k")
    def _valid_k(self, proposal: dict[str, Any]) -> int:
        k = proposal["value"]
        if not 1 <= k <= 20:
            raise traitlets.TraitError(f"k must be from 1 to 20, got {k}")
        return int(k)

    @traitlets.observe("text", "k")
    def _changed(self, _change: dict[str, Any]) -> None:
        if not hasattr(self, "_view"):
            return
        try:
            from ..studies.masked_lm import fill_mask_view

            view = fill_mask_view(self.text, self.k, self._model)
        except (TypeError, ValueError) as exc:
            self._error = str(exc)                                 # the page keeps the last good picture
            return
        self._view = view
        with self.hold_trait_notifications():
            if self.mask >= len(view["positions"]):
                self.mask = 0
            self.selection = self._mask_row()  # positions of the old sentence mean nothing in the new one
        self._error = ""
        self._publish()

    def _publish(self) -> None:
        self._show(fill_mask_state(self._view, self.text))
