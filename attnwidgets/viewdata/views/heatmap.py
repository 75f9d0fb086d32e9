"""AttentionHeatmap's state (front end: js/src/views/heatmap/): what the page draws for a result and the view's options,
and the answers to the page's requests ("matrix", "region", "labels"), as pure functions of the result.

The widget holds the traits and calls these; ``aw.plots.plot_heatmap`` and ``aw.save_html`` read the same functions
(the static twin through :func:`heatmap_matrix`, a saved page through the widget's requests).

Examples
--------
>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> r = AttentionResult.from_arrays(np.array([[1.0, 0.0], [0.25, 0.75]], np.float32), ["a", "b"])
>>> state = heatmap_state(r, HeatmapOptions(layer=0, head=0))
>>> state.payload.key, state.payload.matrix.tolist(), state.meta.shapes
('self/0/0/t', [[1.0, 0.0], [0.25, 0.75]], {'self': (1, 1)})
>>> heatmap_matrix(r, HeatmapOptions(vmax=2.0)).vmax
2.0
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...analysis.norms import can_norms
from ...analysis.words import word_level
from ...result import AttentionResult
from ..display import head_overview, kv_group_size, region_of, sink_keys
from ..labels import MEASURE_LABELS, kind_tokens
from ..state import OPTIONAL

__all__ = ["HeatmapMatrix", "HeatmapMeta", "HeatmapOptions", "HeatmapPayload", "HeatmapRegion", "HeatmapState",
           "LevelLabels", "heatmap_axis_labels", "heatmap_labels", "heatmap_matrix", "heatmap_region", "heatmap_state",
           "heatmap_title", "map_of_key", "words_source"]


@dataclass(frozen=True)
class HeatmapOptions:
    """What the widget's traits choose: the map (kind, layer, head, words) and how it is scaled."""

    kind: str = "self"
    layer: int = 0
    head: int = 0
    words: bool = False
    reduce: str = "max"
    discount_sinks: bool | tuple[int, ...] = False
    vmax: float | None = None
    measure: str = "weights"


@dataclass(frozen=True)
class LevelLabels:
    """A "labels" request's answer: ``{kind: [query labels, key labels]}`` at one level (tokens or words)."""

    tokens: dict[str, tuple[list[str], list[str]]]  # kind -> [query labels, key labels]


@dataclass(frozen=True)
class HeatmapMatrix:
    """A "matrix" request's answer: one map as drawn (or its block overview past 1024 tokens)."""

    matrix: np.ndarray
    factor: int  # cells of the full map per drawn cell, along each side
    rows_used: int  # query rows read per block (fewer than factor: sampled)
    vmax: float  # the colour scale's top: the fixed vmax, else the map's own


@dataclass(frozen=True)
class HeatmapRegion:
    """A "region" request's answer: a tile at full detail, clipped to the map, and where it starts."""

    matrix: np.ndarray
    q0: int
    k0: int


@dataclass(frozen=True)
class HeatmapPayload:
    """``_payload``: the first view's map, so the first paint needs no round trip."""

    key: str  # kind/layer/head/w or t
    matrix: np.ndarray
    factor: int
    rows_used: int
    vmax: float
    labels: LevelLabels | None = field(default=None, metadata=OPTIONAL)  # the word labels, when the view is word level


@dataclass(frozen=True)
class HeatmapMeta:
    """``_meta``: what the page's controls and axes need whatever map is on screen."""

    title: str
    kinds: list[str]
    shapes: dict[str, tuple[int, int]]  # [layers, heads] per kind
    measure: str
    can_norms: bool
    tokens: dict[str, tuple[list[str], list[str]]]  # token-level labels per kind
    can_words: bool
    reduce: str
    sinks: list[int]
    vmax: float | None  # the fixed top, or None: per map
    kv_group_size: dict[str, int]


@dataclass(frozen=True)
class HeatmapState:
    payload: HeatmapPayload
    meta: HeatmapMeta


def words_source(result: AttentionResult, words: bool, cached: AttentionResult | None = None) -> AttentionResult:
    """The result a view reads: ``result`` itself, or its word-level result (``cached`` when given)."""
    if not words:
        return result
    return cached if cached is not None else word_level(result)


def _sinks(source: AttentionResult, options: HeatmapOptions) -> tuple[int, ...]:
    return sink_keys(options.discount_sinks, source.attention_shape(options.kind)[3])  # type: ignore[arg-type]


def heatmap_matrix(source: AttentionResult, options: HeatmapOptions) -> HeatmapMatrix:
    """The map of ``options`` (kind, layer, head) from ``source`` (already word level when the view is) as drawn."""
    shown = head_overview(source, options.kind, options.layer, options.head, options.reduce,
                          discount=_sinks(source, options))
    return HeatmapMatrix(shown.matrix, int(shown.factor), int(shown.rows_used),
                         float(shown.vmax if options.vmax is None else options.vmax))


def heatmap_region(source: AttentionResult, options: HeatmapOptions, q0: int, q1: int, k0: int,
                   k1: int) -> HeatmapRegion:
    """A tile of the map of ``options`` at full detail (only its rows are computed)."""
    block, a0, b0 = region_of(source, options.kind, options.layer, options.head, q0, q1, k0, k1)
    return HeatmapRegion(block, int(a0), int(b0))


def heatmap_labels(source: AttentionResult) -> LevelLabels:
    """The labels of every kind at ``source``'s level."""
    return LevelLabels({kind: (q, k) for kind, (q, k) in kind_tokens(source).items()})


def heatmap_state(result: AttentionResult, options: HeatmapOptions, *, weights: AttentionResult | None = None,
                  words: AttentionResult | None = None) -> HeatmapState:
    """What the page draws: ``result`` is what the view shows (the weights, or their norms), ``weights`` the result
    given (whether it can give norms; default ``result``), ``words`` its word-level result when already made."""
    source = words_source(result, options.words, words)
    shown = heatmap_matrix(source, options)
    level = "w" if options.words else "t"
    payload = HeatmapPayload(key=f"{options.kind}/{options.layer}/{options.head}/{level}", matrix=shown.matrix,
                             factor=shown.factor, rows_used=shown.rows_used, vmax=shown.vmax,
                             labels=heatmap_labels(source) if options.words else None)
    kinds: list[str] = list(result.kinds)
    shapes = {kind: result.attention_shape(kind) for kind in kinds}  # type: ignore[arg-type]
    meta = HeatmapMeta(
        title=result.model.name + MEASURE_LABELS[options.measure],
        kinds=kinds,
        shapes={kind: (int(shape[0]), int(shape[1])) for kind, shape in shapes.items()},
        measure=options.measure,
        can_norms=can_norms(result if weights is None else weights),
        tokens={kind: (q, k) for kind, (q, k) in kind_tokens(result).items()},
        can_words=bool((result.word_ids >= 0).any()) and result.cross_attention is None,
        reduce=options.reduce,
        sinks=list(_sinks(source, options)),
        vmax=options.vmax,
        kv_group_size={kind: kv_group_size(result, kind) for kind in kinds},
    )
    return HeatmapState(payload, meta)



def map_of_key(key: str) -> tuple[str, int, int, bool]:
    """The map a payload's ``key`` names: ``(kind, layer, head, words)``.

    >>> map_of_key("cross/2/-1/w")
    ('cross', 2, -1, True)
    """
    kind, layer, head, level = key.split("/")
    return kind, int(layer), int(head), level == "w"


def heatmap_title(state: HeatmapState) -> str:
    """The title over the state's map, as the page writes it at zoom 1 with nothing selected (``titleText`` in
    js/src/views/heatmap/state.ts): the result (with its measure), kind, layer, head or "mean of heads", the KV head
    under grouped-query attention and "words" at word level. The static twin writes this one.

    >>> r = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"])
    >>> heatmap_title(heatmap_state(r, HeatmapOptions(head=-1, words=True)))
    'arrays · self attention · layer 0 · mean of heads · words'
    """
    kind, layer, head, words = map_of_key(state.payload.key)
    size = state.meta.kv_group_size.get(kind, 1)
    kv = f" · KV head {head // size}" if size > 1 and head >= 0 else ""
    which = "mean of heads" if head < 0 else f"head {head}"
    return f"{state.meta.title} · {kind} attention · layer {layer} · {which}{kv}{' · words' if words else ''}"


def heatmap_axis_labels(state: HeatmapState) -> tuple[list[str], list[str]]:
    """The (query, key) labels of the state's map: the word labels at word level, else the tokens of its kind."""
    kind, _layer, _head, words = map_of_key(state.payload.key)
    level = state.payload.labels.tokens if words and state.payload.labels is not None else state.meta.tokens
    queries, keys = level[kind]
    return list(queries), list(keys)
