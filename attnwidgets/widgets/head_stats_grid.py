"""HeadStatsGrid: a layers x heads grid coloured by any per-head statistic (front end: js/src/head_stats_grid.ts).

The widget form of Clark et al. 2019's per-head statistics ([CLS], [SEP], punctuation, self, previous, next, entropy);
its static twin is :func:`attnwidgets.plots.plot_head_stats`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ._base import MISSING, Colormap
from ._headstats import HeadWidget

__all__ = ["HeadStatsGrid"]


class HeadStatsGrid(HeadWidget):
    """Every head as one cell of a layers x heads grid, coloured by a statistic chosen in the page.

    All statistics travel to the page at once (one small binary buffer), so the menu switches between them without
    asking the kernel. Hovering a cell shows its value; clicking it selects that head (``layer``, ``head``).

    Parameters
    ----------
    result : AttentionResult, list of AttentionResult, CorpusStats, DataFrame or dict
        One result (:func:`attnwidgets.run`), several (averaged), corpus statistics
        (:func:`attnwidgets.corpus_stats` or its tidy ``.frame()``), or a dict of (layers, heads) arrays.
    statistic : str
        What colours the grid first: a key of :data:`attnwidgets.analysis.STATISTICS` ("cls", "sep", "punct",
        "self", "prev", "next", "first", "entropy", ...). Default: "sep", or "first" for decoders.
    words : bool
        Word-level attention (attention sources only).
    smoothing : float
        Entropy smoothing (1e-4 reproduces Clark et al.'s code).
    colormap : str
        "blues", "viridis", "cividis", "greys" or "reds"; default the theme's.
    layer, head : int
        The selected head (``head=-1``: the whole layer).
    theme : str
        "light" or "lecture".

    Examples
    --------
    >>> import attnwidgets as aw
    >>> grid = aw.HeadStatsGrid(aw.run("The cat sat on the mat."), statistic="prev")
    >>> grid.values("prev").shape
    (6, 12)
    """

    _bundle = "head_stats_grid"

    statistic = traitlets.Unicode("").tag(sync=True)
    """str, default "sep" ("first" for decoders): the statistic that colours the cells. The page's menu sets it and
    repaints from the data it already holds; setting it here repaints the page."""

    colormap = Colormap().tag(sync=True)
    """str, default "" (the theme's): "blues", "viridis", "cividis", "greys" or "reds"."""

    def __init__(self, result: Any = MISSING, *, smoothing: float = 0.0, **kwargs: Any) -> None:
        super().__init__(result, smoothing=smoothing, **kwargs)
        if not self.statistic:
            self.statistic = self._default_statistic()

    def _default_statistic(self) -> str:
        names = self.stats.names()
        prefer = ("first", "sep", "cls") if self.stats.causal else ("sep", "cls", "first")
        for name in prefer:
            v = self.stats.values.get(name)
            if v is not None and np.isfinite(v).any() and np.nanmax(v) > 0:
                return name
        return names[0]

    @traitlets.validate("statistic")
    def _valid_statistic(self, proposal: dict[str, Any]) -> str:
        value = str(proposal["value"])
        if value and hasattr(self, "stats") and value not in self.stats.names():
            raise ValueError(f"unknown statistic {value!r}; this source has {self.stats.names()}")
        return value

    def _recompute(self, words: bool) -> None:
        super()._recompute(words)
        if self.statistic and self.statistic not in self.stats.names():
            self.statistic = self._default_statistic()
