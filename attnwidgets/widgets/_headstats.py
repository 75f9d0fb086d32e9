"""The base of the per-head widgets (EntropyBars, HeadStatsGrid, HeadClusterMap): the synced ``layer``/``head``
selection, the words switch and the packed statistics. The statistics themselves come from
:mod:`attnwidgets.viewdata.head_stats`, which the static twins share.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..result import AttentionResult
from ..viewdata.checks import check_head, check_layer
from ..viewdata.head_stats import HeadStats, head_stats, takes_attention
from ._base import AttnWidget, Index, checked
from ._span import SpanSelection

__all__ = ["HeadWidget"]


class HeadWidget(SpanSelection, AttnWidget):
    """Base of the widgets that show one number per head and select a head by click.

    The first argument, ``result``, is what they show: an AttentionResult, a list of them, CorpusStats, a tidy
    statistics DataFrame or a dict of (layers, heads) arrays (see :func:`head_stats`). ``source=`` is its old
    name, accepted with a DeprecationWarning for one release.

    They have no ``kind``: the statistics are of a result's self-attention (an encoder-decoder's encoder), as
    :func:`~attnwidgets.analysis.surface_stats` measures them.

    Given one result's attention, they select query tokens as the heatmap does (``selection`` and ``combine``, the
    same clicks on the token strip under the picture, :func:`attnwidgets.link_span`): the statistics are then of
    the selected rows only, their mean (``combine="mean"``) or, for the shares of attention, their sum
    (:func:`~attnwidgets.viewdata.head_stats.head_stats`'s ``rows``). ``[]`` (default) measures every row.

    Subclasses call ``super().__init__`` and implement :meth:`_state` (their state function in
    :mod:`attnwidgets.viewdata.views`, called whenever the statistics change).
    """

    layer = Index(0).tag(sync=True)
    """int, default 0: the selected head's layer. Clicking a head in the page sets it; setting it here moves the
    highlight. Link it to other widgets with :func:`attnwidgets.widgets.link_selection`."""

    head = Index(0).tag(sync=True)
    """int, default 0: the selected head; -1 selects the whole layer (the heatmap's "mean of heads"). Two-way like
    ``layer``."""

    words = traitlets.Bool(False).tag(sync=True)
    """bool, default False: word-level statistics (to a word: sum over its pieces; from a word: mean over its
    pieces). Only for attention sources; the page shows the switch when it can be used and the widget recomputes
    in Python when it changes."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {stats}: the statistics as one packed (S, L, H) float32 buffer, in the order of ``_meta["names"]``;
    widgets add their own parts (HeadClusterMap: ``points``)."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, names and labels of the statistics, [layers, heads], whether the words switch applies, and
    widget-specific entries."""

    def __init__(self, result: Any, *, smoothing: float = 0.0, **kwargs: Any) -> None:
        self._source = result
        self._smoothing = float(smoothing)
        self._can_words = takes_attention(result)
        words = kwargs.get("words", False)  # a bad value is refused by the trait, with its message
        self.stats = self._load_stats(result, isinstance(words, (bool, int, np.bool_)) and bool(words))
        self._complete = False
        self._result = result
        super().__init__(**kwargs)  # opens no comm yet (see open)
        if self.selection:  # the statistics of the rows asked for
            self.stats = self._load_stats(result, bool(self.words))
        self._publish()
        self._before_open()
        self._complete = True
        self.open()

    def open(self) -> None:
        """Open the comm once the statistics are published, never before: the page builds its model from the state
        the comm opens with, and a view drawn from a state without ``_payload["stats"]`` and ``_meta`` failed with
        "Cannot read properties of undefined (reading 'buffer')" (notebook 06's head-roles grid in a full Run
        All), until the update that carried them arrived."""
        if getattr(self, "_complete", True):
            super().open()

    def _before_open(self) -> None:
        """Set what depends on the statistics before the page gets its first state (subclasses)."""

    @property
    def result(self) -> Any:
        """What the widget shows, as given (read-only; make a new widget for another input)."""
        return self._source

    # -- selection -----------------------------------------------------------------------------------------------

    @property
    def selection_shape(self) -> tuple[int, int]:
        """(layers, heads) of the statistics, what :func:`attnwidgets.widgets.link_selection` checks linked widgets
        by."""
        return self.stats.shape

    def _n_selectable(self, kind: str | None = None, words: bool | None = None) -> int:
        """Query rows of the statistics (tokens, or words at word level)."""
        return int(self.stats.n_tokens)

    def _span_view(self) -> tuple[str, int, int]:
        return "self", self.layer, self.head

    @traitlets.validate("selection")
    def _valid_selection(self, proposal: dict[str, Any]) -> list[int]:
        if proposal["value"] and hasattr(self, "_source") and not isinstance(self._source, AttentionResult):
            raise traitlets.TraitError(f"{type(self).__name__} selects query tokens only when given one result's "
                                       f"attention (an AttentionResult); these statistics came from "
                                       f"{type(self._source).__name__}")
        if not hasattr(self, "stats"):
            return list(proposal["value"])
        return super()._valid_selection(proposal)

    @traitlets.observe("selection", "combine")
    def _on_span(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "stats") or not self._meta or getattr(self, "_clearing", False):
            return
        if change["name"] == "combine" and not self.selection:
            return
        self._recompute(bool(self.words))
        self._publish()

    @traitlets.validate("layer", "head")
    def _valid_head_pick(self, proposal: dict[str, Any]) -> int:
        value = int(proposal["value"])
        if hasattr(self, "stats"):
            n_layers, n_heads = self.stats.shape
            if proposal["trait"].name == "layer":
                checked(check_layer, value, n_layers)
            else:
                checked(check_head, value, n_heads)
        return value

    @traitlets.validate("words")
    def _valid_words(self, proposal: dict[str, Any]) -> bool:
        if proposal["value"] and hasattr(self, "_can_words") and not self._can_words:
            raise traitlets.TraitError(f"{type(self).__name__} can switch to word level only when given attention; "
                                       "for corpus statistics pass words=True to corpus_stats() instead")
        return bool(proposal["value"])

    @traitlets.observe("words")
    def _on_words(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "stats") or not self._meta:
            return
        try:
            self._clearing = True
            self.selection = []  # positions of tokens mean nothing among words, and back
            self._clearing = False
            self._recompute(bool(change["new"]))
        except Exception as exc:  # shown in the page's red box; the trait stays as the user set it
            self._error = f"{type(exc).__name__}: {exc}"
            return
        self._error = ""
        self._publish()

    # -- hooks for subclasses ------------------------------------------------------------------------------------

    def _load_stats(self, source: Any, words: bool) -> HeadStats:
        rows = list(getattr(self, "selection", []) or []) or None
        return head_stats(source, words=words, smoothing=self._smoothing, who=type(self).__name__, rows=rows,
                          combine=getattr(self, "combine", "mean"))

    def _recompute(self, words: bool) -> None:
        """Recompute what the page shows for the words switch (subclasses add their own state)."""
        self.stats = self._load_stats(self._source, words)

    # -- what the page gets --------------------------------------------------------------------------------------

    def _state(self) -> Any:
        """The view's state (subclasses: their function in :mod:`attnwidgets.viewdata.views`)."""
        raise NotImplementedError

    def _publish(self) -> None:
        self._show(self._state())

    def show_stats(self, source: Any) -> None:
        """Show other statistics of the same heads in place (a dict of (L, H) arrays or a :class:`HeadStats`, as the
        first argument takes): the head selection and the statistic on screen stay. The head-roles view shows the
        role scores of the rows selected in its heatmap so.

        Examples
        --------
        >>> import numpy as np, attnwidgets as aw
        >>> g = aw.HeadStatsGrid({"sep": np.zeros((1, 2))})
        >>> g.show_stats({"sep": np.ones((1, 2))}); g.values("sep").tolist()
        [[1.0, 1.0]]
        """
        stats = head_stats(source, smoothing=self._smoothing, who=type(self).__name__)
        if stats.shape != self.stats.shape or set(stats.values) != set(self.stats.values):
            raise ValueError(f"show_stats takes statistics of the same heads and names: {self.stats.shape} heads, "
                             f"{sorted(self.stats.values)}; got {stats.shape}, {sorted(stats.values)}")
        self._source = source
        self.stats = stats
        self._publish()

    def values(self, statistic: str) -> np.ndarray:
        """(L, H) values of one statistic as the widget shows them (float64).

        Examples
        --------
        >>> import numpy as np, attnwidgets as aw
        >>> r = aw.AttentionResult.from_arrays(np.full((1, 2, 3, 3), 1 / 3, np.float32), ["[CLS]", "hi", "[SEP]"])
        >>> aw.HeadStatsGrid(r).values("sep").round(4).tolist()
        [[0.3333, 0.3333]]
        """
        if statistic not in self.stats.values:
            raise ValueError(f"unknown statistic {statistic!r}; this widget has {self._meta['names']}")
        return np.asarray(self.stats.values[statistic], dtype=np.float64)
