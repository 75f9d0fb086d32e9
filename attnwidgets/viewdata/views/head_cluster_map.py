"""HeadClusterMap's state (front end: js/src/views/head_cluster_map/): every head's MDS coordinates beside the
per-head statistics to colour them by, as a pure function of the embedding (from
:func:`~attnwidgets.viewdata.head_stats.head_points`) and a :class:`~attnwidgets.viewdata.head_stats.HeadStats`
(the shared part is :mod:`.head_stats_grid`'s).

Examples
--------
>>> import numpy as np, pandas as pd
>>> from attnwidgets.viewdata.head_stats import HeadStats
>>> stats = HeadStats({"layer": np.zeros((1, 2)), "sep": np.full((1, 2), 0.5)}, "demo")
>>> xy = pd.DataFrame({"layer": [0, 0], "head": [0, 1], "x": [0.0, 1.0], "y": [1.0, 0.0]})
>>> state = head_cluster_map_state(stats, xy, can_words=False, tokens=[])
>>> state.payload.points.tolist(), state.meta.names, state.meta.colors
([[0.0, 1.0], [1.0, 0.0]], ['sep'], [('layer', 'layer'), ('sep', 'sep')])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..head_stats import HeadStats
from ..scales import stat_range
from .head_stats_grid import HeadStatsMeta, HeadStatsPayload, head_stats_fields

__all__ = ["HeadClusterMapMeta", "HeadClusterMapPayload", "HeadClusterMapState", "cluster_colors", "cluster_names",
           "cluster_title", "head_cluster_map_state"]


@dataclass(frozen=True)
class HeadClusterMapPayload(HeadStatsPayload):
    """``_payload``: the statistics (S, L, H) and the heads' MDS coordinates (K, 2), layer-major (k = layer * H +
    head)."""

    points: np.ndarray


@dataclass(frozen=True)
class HeadClusterMapMeta(HeadStatsMeta):
    """``_meta``: the per-head statistic views' meta and the colour menu ("layer", then the statistics)."""

    colors: list[tuple[str, str]]


@dataclass(frozen=True)
class HeadClusterMapState:
    payload: HeadClusterMapPayload
    meta: HeadClusterMapMeta


def cluster_names(stats: HeadStats) -> list[str]:
    """The statistics the points can be coloured by (all but "layer", which the page knows)."""
    return [n for n in stats.names() if n != "layer"]


def head_cluster_map_state(stats: HeadStats, embedding: Any, *, can_words: bool,
                           tokens: list[str]) -> HeadClusterMapState:
    """What HeadClusterMap's page draws; ValueError when the embedding and the statistics count different heads."""
    names = cluster_names(stats)
    n_layers, n_heads = stats.shape
    if len(embedding) != n_layers * n_heads:
        raise ValueError(f"the embedding has {len(embedding)} heads but the statistics {n_layers} x {n_heads}")
    array, fields = head_stats_fields(stats, names, can_words=can_words, tokens=tokens)
    points = embedding[["x", "y"]].to_numpy(np.float32)
    return HeadClusterMapState(HeadClusterMapPayload(array, points),
                               HeadClusterMapMeta(**fields, colors=[("layer", "layer")] + [(n, n) for n in names]))


def cluster_title(state: HeadClusterMapState, color: str) -> str:
    """The view's title, as the page writes it (``clusterTitle`` in js/src/views/head_cluster_map/state.ts): the
    source and the colouring. The static twin writes this one.

    >>> import pandas as pd
    >>> stats = HeadStats({"layer": np.zeros((1, 2)), "sep": np.full((1, 2), 0.5)}, "demo")
    >>> xy = pd.DataFrame({"layer": [0, 0], "head": [0, 1], "x": [0.0, 1.0], "y": [1.0, 0.0]})
    >>> state = head_cluster_map_state(stats, xy, can_words=False, tokens=[])
    >>> cluster_title(state, "layer"), cluster_colors(state, "sep")
    ('demo · head map, coloured by layer', (array([0.5, 0.5], dtype=float32), (0.0, 0.5)))
    """
    label = "layer" if color == "layer" else state.meta.labels.get(color, color)
    return f"{state.meta.title} · head map, coloured by {label}"


def cluster_colors(state: HeadClusterMapState, color: str) -> tuple[np.ndarray, tuple[float, float]]:
    """(K,) what each point is coloured by, layer-major, and the colour scale the page sets for it (a statistic's
    :func:`~attnwidgets.viewdata.scales.stat_range`; the layers 0 … L − 1 for "layer")."""
    n_layers, n_heads = state.meta.shape
    if color == "layer":
        return np.repeat(np.arange(n_layers, dtype=np.float32), n_heads), (0.0, float(max(n_layers - 1, 1)))
    if color not in state.meta.names:
        raise ValueError(f"color must be 'layer' or one of {state.meta.names}, got {color!r}")
    values = state.payload.stats[state.meta.names.index(color)].ravel()
    return values, stat_range(values)
