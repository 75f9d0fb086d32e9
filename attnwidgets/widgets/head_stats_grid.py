"""HeadStatsGrid: a layers x heads grid coloured by any per-head statistic (front end: js/src/views/head_stats_grid/).

The widget form of Clark et al. 2019's per-head statistics ([CLS], [SEP], punctuation, self, previous, next, entropy);
its static twin is :func:`attnwidgets.plots.plot_head_stats`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..viewdata.views.head_stats_grid import HeadStatsState, default_statistic, head_stats_state, query_labels
from ._base import Colormap
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
        (:func:`attnwidgets.studies.corpus_stats` or its tidy ``.frame()``), or a dict of (layers, heads) arrays.
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

    def __init__(self, result: Any, *, smoothing: float = 0.0, **kwargs: Any) -> None:
        super().__init__(result, smoothing=smoothing, **kwargs)

    @classmethod
    def from_sinks(cls, result: Any, keys: Any = (0,), *, kind: str = "self", **kwargs: Any) -> HeadStatsGrid:
        """Attention sinks as a layers x heads grid: each head's mean share of attention on ``keys`` (default the
        first token; :func:`attnwidgets.analysis.sink_shares`), read a block of rows at a time, so any length works.

        Keyword arguments go to :class:`HeadStatsGrid` (``theme``, ``colormap``, ``layer``, ``head``). Its static twin
        is :func:`attnwidgets.plots.plot_sinks`.

        Examples
        --------
        >>> import numpy as np, attnwidgets as aw
        >>> a = np.array([[1, 0, 0], [.8, .2, 0], [.5, .25, .25]], np.float32)
        >>> g = aw.HeadStatsGrid.from_sinks(aw.AttentionResult.from_arrays(a, ["<s>", "a", "b"], kind="decoder"))
        >>> g.statistic, round(float(g.values("sink")[0, 0]), 3)
        ('sink', 0.65)
        """
        from ..viewdata.head_stats import sink_stats

        return cls(sink_stats(result, keys, kind), statistic="sink", **kwargs)

    @classmethod
    def from_coref(cls, scores: Any, **kwargs: Any) -> HeadStatsGrid:
        """Every head's antecedent selection accuracy (:func:`attnwidgets.studies.coref_scores`) as a layers x
        heads grid; the title names the baselines (nearest mention, same head word, rule-based sieves). Clicking a
        cell selects that head (``layer``, ``head``), which :func:`attnwidgets.widgets.link_selection` passes on to a
        head view or heatmap.

        Keyword arguments go to :class:`HeadStatsGrid` (``theme``, ``colormap``, ``layer``, ``head``); without ``layer``
        and ``head`` the best head is selected. Its static twin is :func:`attnwidgets.plots.plot_coref`.

        Examples
        --------
        >>> import numpy as np, attnwidgets as aw
        >>> from attnwidgets.analysis.coref import CorefScores
        >>> s = CorefScores(np.array([[[True, False], [True, True]]]), {b: np.array([True, False])
        ...                 for b in ("nearest", "same_head", "rules")}, [{"kind": "pronoun"}] * 2)
        >>> g = aw.HeadStatsGrid.from_coref(s)
        >>> g.statistic, g.values("antecedent_selection").tolist(), (g.layer, g.head)
        ('antecedent_selection', [[0.5, 1.0]], (0, 1))
        """
        from ..viewdata.coref import COREF_STATISTIC, coref_stats

        stats = coref_stats(scores)
        if "layer" not in kwargs and "head" not in kwargs:
            best = scores.best_heads(1).iloc[0]
            kwargs.update(layer=int(best["layer"]), head=int(best["head"]))
        return cls(stats, statistic=COREF_STATISTIC, **kwargs)

    @classmethod
    def from_logit_attribution(cls, attribution: Any, **kwargs: Any) -> HeadStatsGrid:
        """Each head's direct share of a logit (:func:`attnwidgets.studies.logit_attribution`) as a layers x heads
        grid on a diverging scale centred on 0 (red/orange pushes the token up, blue/purple down); the title gives
        the token, the position, the logit and what the other parts (embeddings, MLPs, biases, the norm's offset)
        add. Without ``layer`` and ``head`` the head with the largest share is selected. Its static twin is
        :func:`attnwidgets.plots.plot_logit_attribution`.

        Examples
        --------
        >>> import numpy as np, attnwidgets as aw
        >>> from attnwidgets.studies.logits import LogitAttribution
        >>> a = LogitAttribution(np.array([[1.0, -2.0]]), np.zeros(1), np.array([0.5]), 0.25, 0.0, -0.25, ("x",), 1,
        ...                      ["a", "b"], "toy")
        >>> g = aw.HeadStatsGrid.from_logit_attribution(a)
        >>> g.statistic, (g.layer, g.head), g._meta["signed"]
        ('logit_share', (0, 1), ['logit_share'])
        """
        from ..viewdata.head_stats import HeadStats

        a = attribution
        heads = np.asarray(a.heads, dtype=np.float64)
        if heads.ndim != 2:
            raise ValueError(f"expected a logit attribution's [layer, head] shares, got shape {heads.shape}")
        other = float(a.total() - heads.sum())
        answer = " − ".join(repr(t) for t in a.answer)
        title = (f"{a.model} · logit({answer}) at position {a.position} = {a.logit:.3f}: heads {heads.sum():+.3f}, "
                 f"the rest {other:+.3f}")
        stats = HeadStats({"logit_share": heads}, title, causal=True, signed=("logit_share",))
        if "layer" not in kwargs and "head" not in kwargs:
            i = int(np.argmax(np.abs(heads)))
            kwargs.update(layer=i // heads.shape[1], head=i % heads.shape[1])
        return cls(stats, statistic="logit_share", **kwargs)

    def _state(self) -> HeadStatsState:
        return head_stats_state(self.stats, can_words=self._can_words,
                                tokens=query_labels(self._source, self.stats.words))

    def _before_open(self) -> None:
        if not self.statistic:  # in the first state the page gets
            self.statistic = self._default_statistic()

    def _default_statistic(self) -> str:
        return default_statistic(self._state())  # the rule the static twin reads too

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
