"""EntropyBars' state (front end: js/src/views/entropy_bars/): the entropy statistics of every head, the row
choices the source has and each one's uniform baseline, as pure functions of a
:class:`~attnwidgets.viewdata.head_stats.HeadStats` (the shared part is :mod:`.head_stats_grid`'s).

Examples
--------
>>> import numpy as np
>>> from attnwidgets.viewdata.head_stats import HeadStats
>>> stats = HeadStats({"entropy": np.ones((1, 2)), "entropy_cls": np.zeros((1, 2)),
...                    "entropy_uniform": np.full((1, 2), 1.5)}, "demo")
>>> state = entropy_bars_state(stats, measure="weights", can_norms=False, can_words=False, tokens=[])
>>> state.meta.names, state.meta.rows, state.meta.baselines
(['entropy', 'entropy_cls'], [('all', 'all rows'), ('cls', '[CLS] row')], {'all': 1.5, 'cls': 1.5})
"""

from __future__ import annotations

from dataclasses import dataclass

from ..head_stats import HeadStats, entropy_baseline
from ..labels import MEASURE_LABELS
from .head_stats_grid import HeadStatsMeta, HeadStatsPayload, head_stats_fields

__all__ = ["ROWS", "ROW_LABELS", "EntropyBarsMeta", "EntropyBarsPayload", "EntropyBarsState", "available_rows",
           "entropy_bars_state", "entropy_names"]

ROWS = {"all": "entropy", "cls": "entropy_cls", "last": "entropy_last"}
"""Row choice -> the statistic it shows."""

ROW_LABELS = {"all": "all rows", "cls": "[CLS] row", "last": "last row"}


@dataclass(frozen=True)
class EntropyBarsMeta(HeadStatsMeta):
    """``_meta``: the per-head statistic views' meta, the measure, and the row choices with their statistic and
    uniform baseline (nats; None when the source does not give it)."""

    measure: str
    can_norms: bool
    rows: list[tuple[str, str]]  # [value, label] of the row choices this source has
    row_stat: dict[str, str]  # row choice -> statistic name
    baselines: dict[str, float | None]  # row choice -> uniform entropy (nats)


@dataclass(frozen=True)
class EntropyBarsPayload(HeadStatsPayload):
    """``_payload``: the entropy statistics as one (S, L, H) array, in the order of the meta's ``names``."""


@dataclass(frozen=True)
class EntropyBarsState:
    payload: EntropyBarsPayload
    meta: EntropyBarsMeta


def entropy_names(stats: HeadStats) -> list[str]:
    """The entropy statistics ``stats`` has, in row-choice order."""
    return [ROWS[r] for r in ROWS if ROWS[r] in stats.values]


def available_rows(stats: HeadStats) -> list[str]:
    """The row choices ``stats`` can show: a decoder's first row sees one key (its entropy is always 0), and an
    encoder's last row is shown only when there is no "all"."""
    have = [r for r, name in ROWS.items() if name in stats.values]
    if stats.causal:
        have = [r for r in have if r != "cls"]
    elif "all" in have:
        have = [r for r in have if r != "last"]
    return have


def entropy_bars_state(stats: HeadStats, *, measure: str, can_norms: bool, can_words: bool,
                       tokens: list[str]) -> EntropyBarsState:
    """What EntropyBars' page draws: the entropies of ``stats`` (of the weights, or of ``measure``'s maps)."""
    array, fields = head_stats_fields(stats, entropy_names(stats), can_words=can_words, tokens=tokens)
    rows = available_rows(stats)
    fields["title"] += MEASURE_LABELS[measure]
    meta = EntropyBarsMeta(**fields, measure=measure, can_norms=bool(can_norms),
                           rows=[(r, ROW_LABELS[r]) for r in rows], row_stat={r: ROWS[r] for r in rows},
                           baselines={r: entropy_baseline(stats, r) for r in rows})
    return EntropyBarsState(EntropyBarsPayload(array), meta)
