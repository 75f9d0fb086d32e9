"""The coreference grid: Clark et al.'s antecedent selection accuracy of every head as a HeadStatsGrid."""

from __future__ import annotations

from typing import Any

from .head_stats_grid import HeadStatsGrid

__all__ = ["coref_grid"]


def coref_grid(scores: Any, **kwargs: Any) -> HeadStatsGrid:
    """Every head's antecedent selection accuracy (:func:`attnwidgets.coref_scores`) as a layers x heads grid; the
    title names the baselines (nearest mention, same head word, rule-based sieves). Clicking a cell selects that head
    (``layer``, ``head``), which :func:`attnwidgets.link_selection` passes on to a head view or heatmap.

    Keyword arguments go to :class:`HeadStatsGrid` (``theme``, ``colormap``, ``layer``, ``head``); without ``layer``
    and ``head`` the best head is selected. Its static twin is :func:`attnwidgets.plots.plot_coref`.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> from attnwidgets.analysis.coref import CorefScores
    >>> s = CorefScores(np.array([[[True, False], [True, True]]]), {b: np.array([True, False])
    ...                 for b in ("nearest", "same_head", "rules")}, [{"kind": "pronoun"}] * 2)
    >>> g = aw.coref_grid(s)
    >>> g.statistic, g.values("antecedent_selection").tolist(), (g.layer, g.head)
    ('antecedent_selection', [[0.5, 1.0]], (0, 1))
    """
    from ..viewdata.coref import COREF_STATISTIC, coref_stats

    stats = coref_stats(scores)
    if "layer" not in kwargs and "head" not in kwargs:
        best = scores.best_heads(1).iloc[0]
        kwargs.update(layer=int(best["layer"]), head=int(best["head"]))
    return HeadStatsGrid(stats, statistic=COREF_STATISTIC, **kwargs)
