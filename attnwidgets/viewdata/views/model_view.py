"""ModelView's state (front end: js/src/views/model_view/): every layer x head as a thumbnail of one attention kind, and
the answers to the page's requests ("thumbs" for another kind; "matrix" for a head's detail, the heatmap's own
:func:`~attnwidgets.viewdata.views.heatmap.heatmap_matrix`), as pure functions of the result.

Examples
--------
>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> r = AttentionResult.from_arrays(np.full((2, 3, 4, 4), 0.25, np.float32), list("abcd"))
>>> state = model_view_state(r, ModelViewOptions(thumb_size=4))
>>> state.payload.thumbs.shape, state.payload.thumbs.dtype.name, state.meta.shapes, state.meta.causal
((2, 3, 4, 4), 'uint8', {'self': (2, 3)}, {'self': False})
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...analysis.norms import can_norms
from ...result import AttentionResult
from ..display import is_causal, kv_group_size, result_thumbnails
from ..labels import MEASURE_LABELS, kind_tokens
from ..state import packed_as

__all__ = ["ModelViewMeta", "ModelViewOptions", "ModelViewPayload", "ModelViewState", "ModelViewThumbs",
           "model_view_meta", "model_view_state", "model_view_thumbs", "model_view_title", "shown_kind"]


@dataclass(frozen=True)
class ModelViewOptions:
    """What the widget's traits choose: the kind in the grid, how thumbnails merge cells, the measure."""

    kind: str = "self"
    reduce: str = "max"
    measure: str = "weights"
    thumb_size: int = 32


@dataclass(frozen=True)
class ModelViewThumbs:
    """A "thumbs" request's answer: one kind's thumbnails, uint8 [layer, head, tq, tk], each to its own maximum."""

    thumbs: np.ndarray = field(metadata=packed_as("uint8"))
    factor: int
    rows_used: int


@dataclass(frozen=True)
class ModelViewPayload:
    """``_payload``: the current kind's thumbnails (full heads come by "matrix" request)."""

    kind: str
    factor: int
    rows_used: int
    reduce: str
    thumbs: np.ndarray = field(metadata=packed_as("uint8"))


@dataclass(frozen=True)
class ModelViewMeta:
    """``_meta``: titles, shapes, labels and which kinds are causal."""

    title: str
    measure: str
    can_norms: bool
    kinds: list[str]
    shapes: dict[str, tuple[int, int]]
    tokens: dict[str, tuple[list[str], list[str]]]
    causal: dict[str, bool]
    kv_group_size: dict[str, int]
    reduce: str


@dataclass(frozen=True)
class ModelViewState:
    payload: ModelViewPayload
    meta: ModelViewMeta


def shown_kind(result: AttentionResult, kind: str) -> str:
    """The kind as the result knows it: "encoder" is "self" for a result without cross-attention."""
    return "self" if kind == "encoder" and result.cross_attention is None else kind


def model_view_thumbs(result: AttentionResult, kind: str, options: ModelViewOptions) -> ModelViewThumbs:
    thumbs, factor, used = result_thumbnails(result, shown_kind(result, kind), options.thumb_size, options.reduce)
    return ModelViewThumbs(thumbs, int(factor), int(used))


def model_view_meta(result: AttentionResult, options: ModelViewOptions, *,
                    weights: AttentionResult | None = None) -> ModelViewMeta:
    kinds: list[str] = list(result.kinds)
    shapes = {kind: result.attention_shape(kind) for kind in kinds}  # type: ignore[arg-type]
    return ModelViewMeta(
        title=result.model.name + MEASURE_LABELS[options.measure], measure=options.measure,
        can_norms=can_norms(result if weights is None else weights), kinds=kinds,
        shapes={kind: (int(s[0]), int(s[1])) for kind, s in shapes.items()},
        tokens={kind: (list(q), list(k)) for kind, (q, k) in kind_tokens(result).items()},
        causal={kind: is_causal(result, kind) for kind in kinds},
        kv_group_size={kind: kv_group_size(result, kind) for kind in kinds}, reduce=options.reduce)


def model_view_state(result: AttentionResult, options: ModelViewOptions, *,
                     weights: AttentionResult | None = None) -> ModelViewState:
    """What the page draws: ``result`` is what the view shows (weights or a measure), ``weights`` the result given."""
    t = model_view_thumbs(result, options.kind, options)
    payload = ModelViewPayload(options.kind, t.factor, t.rows_used, options.reduce, t.thumbs)
    return ModelViewState(payload, model_view_meta(result, options, weights=weights))


def model_view_title(state: ModelViewState) -> str:
    """The title over the grid, as the page writes it (``gridTitle`` in js/src/views/model_view/state.ts): the result
    (with its measure), the kind, the grid's size, the KV-head groups and the thumbnails' row sampling. The static
    twin writes this one.

    >>> r = AttentionResult.from_arrays(np.full((2, 3, 4, 4), 0.25, np.float32), list("abcd"))
    >>> model_view_title(model_view_state(r, ModelViewOptions()))
    'arrays · self attention · 2 layers × 3 heads'
    """
    payload, meta = state.payload, state.meta
    kind = payload.kind if payload.kind in meta.shapes else "self"
    n_layers, n_heads = meta.shapes[kind]
    size = meta.kv_group_size.get(kind, 1)
    groups = f" · shaded: heads sharing a KV head ({size} per group)" if size > 1 else ""
    sampled = (f" · thumbnails read {payload.rows_used} of every {payload.factor} query rows"
               if payload.rows_used < payload.factor else "")
    return f"{meta.title} · {payload.kind} attention · {n_layers} layers × {n_heads} heads{groups}{sampled}"
