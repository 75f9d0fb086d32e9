"""HeadStatsGrid's state (front end: js/src/views/head_stats_grid/), and the part every per-head statistic view
shares (EntropyBars and HeadClusterMap extend :class:`HeadStatsMeta` and :class:`HeadStatsPayload`): the statistics
as one (S, L, H) array and what the page's controls need, as pure functions of a
:class:`~attnwidgets.viewdata.head_stats.HeadStats` (which :func:`~attnwidgets.viewdata.head_stats.head_stats` loads
from a result, a corpus or a table, and the static twins read too).

Examples
--------
>>> import numpy as np
>>> from attnwidgets.viewdata.head_stats import HeadStats
>>> stats = HeadStats({"sep": np.full((1, 2), 0.5), "entropy": np.zeros((1, 2))}, "two heads")
>>> state = head_stats_state(stats, can_words=False, tokens=[])
>>> state.payload.stats.shape, state.meta.names, state.meta.shape, state.meta.labels["sep"]
((2, 1, 2), ['sep', 'entropy'], (1, 2), 'attention to [SEP]')
>>> default_statistic(state), grid_title(state, "sep"), grid_scale(state, "entropy")
('sep', 'two heads · attention to [SEP]', (0.0, 1.0, False))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...result import AttentionResult
from ..head_stats import HeadStats, stat_labels
from ..labels import axis_tokens

__all__ = ["HeadStatsMeta", "HeadStatsPayload", "HeadStatsState", "default_statistic", "grid_scale", "grid_title",
           "grid_values", "head_stats_fields", "head_stats_state", "query_labels"]


@dataclass(frozen=True)
class HeadStatsPayload:
    """``_payload`` of every per-head statistic view: the statistics as one (S, L, H) array, in the order of the
    meta's ``names``."""

    stats: np.ndarray


@dataclass(frozen=True)
class HeadStatsMeta:
    """``_meta`` of every per-head statistic view: the title, the statistics' names and labels, [layers, heads],
    whether the words switch applies, the query tokens a selection picks among ([] without one result's attention)
    and whether the attention is causal."""

    title: str
    names: list[str]
    labels: dict[str, str]
    shape: tuple[int, int]
    can_words: bool
    tokens: list[str]
    causal: bool
    signed: list[str]  # statistics drawn on a diverging scale centred on 0


@dataclass(frozen=True)
class HeadStatsState:
    payload: HeadStatsPayload
    meta: HeadStatsMeta


def query_labels(source: Any, words: bool) -> list[str]:
    """The query tokens a selection picks among (words at word level); [] for statistics without attention."""
    if not isinstance(source, AttentionResult):
        return []
    if words:
        from ...analysis.words import word_level

        source = word_level(source)
    return axis_tokens(source, "self" if source.cross_attention is None else "encoder")[0]


def head_stats_fields(stats: HeadStats, names: Sequence[str], *, can_words: bool,
                      tokens: list[str]) -> tuple[np.ndarray, dict[str, Any]]:
    """The (S, L, H) array of ``names`` and the fields of :class:`HeadStatsMeta`, for a view's state to extend."""
    n_layers, n_heads = stats.shape
    names = list(names)
    meta = {"title": stats.title + (" · words" if stats.words else ""), "names": names,
            "labels": stat_labels(names), "shape": (int(n_layers), int(n_heads)), "can_words": bool(can_words),
            "tokens": list(tokens), "causal": bool(stats.causal),
            "signed": [n for n in names if n in stats.signed]}
    return stats.stacked(names), meta


def head_stats_state(stats: HeadStats, *, can_words: bool, tokens: list[str]) -> HeadStatsState:
    """What HeadStatsGrid's page draws: every statistic of ``stats``."""
    array, meta = head_stats_fields(stats, stats.names(), can_words=can_words, tokens=tokens)
    return HeadStatsState(HeadStatsPayload(array), HeadStatsMeta(**meta))


def default_statistic(state: HeadStatsState) -> str:
    """The statistic a grid shows first (HeadStatsGrid's ``statistic`` before one is chosen): attention to the first
    token, [SEP] or [CLS] (a decoder: first, sep, cls; else sep, cls, first), the first of them with a value above 0,
    else the first statistic."""
    prefer = ("first", "sep", "cls") if state.meta.causal else ("sep", "cls", "first")
    for name in prefer:
        if name in state.meta.names:
            v = grid_values(state, name)
            if np.isfinite(v).any() and np.nanmax(v) > 0:
                return name
    return state.meta.names[0]


def grid_values(state: HeadStatsState, statistic: str) -> np.ndarray:
    """(L, H) float64: one statistic of every head; ValueError for a statistic the state does not hold."""
    if statistic not in state.meta.names:
        raise ValueError(f"unknown statistic {statistic!r}; this source has {state.meta.names}")
    return np.asarray(state.payload.stats[state.meta.names.index(statistic)], dtype=np.float64)


def grid_title(state: HeadStatsState, statistic: str) -> str:
    """The grid's title as the page writes it (js/src/views/head_stats_grid/state.ts gridTitle): the source and the
    statistic's label."""
    return f"{state.meta.title} · {state.meta.labels.get(statistic, statistic)}"


def grid_scale(state: HeadStatsState, statistic: str) -> tuple[float, float, bool]:
    """The colour scale's (low, high) as the page draws it (js/src/views/head_stats_grid/paint.ts paintGrid), and
    whether it is diverging: a signed statistic on ±(its largest |value|), centred on 0; a statistic that is never
    negative from 0 to its maximum (1 when that is 0); else from its minimum to its maximum, one value alone from 0
    to it (draw/heads.ts statRange)."""
    values = grid_values(state, statistic)
    finite = values[np.isfinite(values)]
    if statistic in state.meta.signed:
        half = max(float(np.abs(finite).max()) if finite.size else 0.0, 1e-12)
        return -half, half, True
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if lo == hi:  # draw/heads.ts finiteRange: one value spans 0 to it
        lo, hi = min(0.0, lo), max(0.0, hi)
    if lo >= 0:
        return 0.0, hi if hi > 0 else 1.0, False
    return lo, hi, False
