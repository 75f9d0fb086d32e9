"""Coreference scores as per-head statistics, for :meth:`attnwidgets.HeadStatsGrid.from_coref` and
:func:`attnwidgets.plots.plot_coref` (the same table: one statistic, ``antecedent_selection``, and a title that
names the baselines)."""

from __future__ import annotations

import numpy as np

from ..analysis.coref import CorefScores
from .head_stats import HeadStats

__all__ = ["COREF_STATISTIC", "coref_stats"]

COREF_STATISTIC = "antecedent_selection"
"""The statistic's name in the grid's menu (its label: "antecedent selection")."""


def coref_stats(scores: CorefScores) -> HeadStats:
    """Each head's antecedent selection accuracy as a one-statistic table, titled with the baselines.

    Examples
    --------
    >>> s = CorefScores(np.array([[[True, False], [True, True]]]), {b: np.array([True, False])
    ...                 for b in ("nearest", "same_head", "rules")}, [{"kind": "pronoun"}] * 2, model="m")
    >>> st = coref_stats(s)
    >>> st.values["antecedent_selection"].tolist(), st.title
    ([[0.5, 1.0]], 'm · 2 coreferent mentions · baselines: nearest 0.50, same head 0.50, rules 0.50')
    """
    if not isinstance(scores, CorefScores):
        raise TypeError(f"expected CorefScores (from attnwidgets.studies.coref_scores), got {type(scores).__name__}")
    return HeadStats({COREF_STATISTIC: np.asarray(scores.accuracy, dtype=np.float64)}, scores.caption())
