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

import numpy as np

from ..head_stats import HeadStats, entropy_baseline
from ..labels import MEASURE_LABELS
from ..scales import nice_ticks
from .head_stats_grid import HeadStatsMeta, HeadStatsPayload, head_stats_fields

__all__ = [
    "ROWS",
    "ROW_LABELS",
    "EntropyBarsMeta",
    "EntropyBarsPayload",
    "EntropyBarsState",
    "available_rows",
    "entropy_bars_state",
    "entropy_names",
    "entropy_scale",
    "entropy_title",
    "entropy_values",
]

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


def entropy_values(state: EntropyBarsState, rows: str) -> np.ndarray | None:
    """(L, H) the entropies the page draws for row choice ``rows``, or None when the source has none."""
    name = state.meta.row_stat.get(rows, "")
    return state.payload.stats[state.meta.names.index(name)] if name in state.meta.names else None


def entropy_title(state: EntropyBarsState, rows: str) -> str:
    """The view's title, as the page writes it (``entropyTitle`` in js/src/views/entropy_bars/state.ts): the source
    and the row choice. The static twin writes this one.

    >>> import numpy as np
    >>> stats = HeadStats({"entropy": np.ones((1, 2)), "entropy_uniform": np.full((1, 2), 1.5)}, "demo")
    >>> state = entropy_bars_state(stats, measure="weights", can_norms=False, can_words=False, tokens=[])
    >>> entropy_title(state, "all"), entropy_scale(state, "all")
    ('demo · attention entropy, all rows', ([0.0, 0.5, 1.0, 1.5], 1.53))
    """
    label = dict(state.meta.rows).get(rows, rows)
    return f"{state.meta.title} · attention entropy, {label}"


def entropy_scale(state: EntropyBarsState, rows: str) -> tuple[list[float], float]:
    """The y axis the page draws for ``rows`` (``entropyScale`` in js/src/views/entropy_bars/state.ts): its ticks and
    its top, over the largest bar and the uniform baseline."""
    values = entropy_values(state, rows)
    base = state.meta.baselines.get(rows)
    top = base or 0.0
    if values is not None and np.isfinite(values).any():
        top = max(top, float(np.nanmax(np.where(np.isfinite(values), values, -np.inf))))
    ticks = nice_ticks(0.0, (top or 1.0) * 1.08, 5)
    return ticks, max(ticks[-1], (top or 1.0) * 1.02)
