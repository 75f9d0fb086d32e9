"""HeadView's state (front end: js/src/views/head_view/): what the page draws for a result and the view's options,
and the answers to its requests ("layer", "labels"), as pure functions of the result.

A layer's lines keep their own wire form (:func:`attnwidgets.viewdata.lines.layer_payload`: sparse float16 rows, or
one dense buffer when that is smaller), typed by hand in js/src/shared/lines.ts (``LinePayload``).

Examples
--------
>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> r = AttentionResult.from_arrays(np.full((2, 3, 4, 4), 0.25, np.float32), list("abcd"))
>>> state = head_view_state(r, HeadViewOptions(layer=1, window=(0, 4)))
>>> state.payload.key, state.payload.heads["format"], state.meta.shapes, state.meta.long
('self/1/t', 'dense', {'self': (2, 3)}, False)
>>> head_view_state(r, HeadViewOptions(window=(1, 3))).payload.key
'self/0/t/1-3'
>>> head_view_title(state), head_view_columns(head_view_state(r, HeadViewOptions(window=(1, 3)))).tokens
('arrays · self attention · layer 1', (['b', 'c'], ['b', 'c', '#0 a', '#3 d']))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ...analysis.words import word_level
from ...result import AttentionResult
from ..labels import axis_segments, kind_tokens
from ..lines import layer_payload, window_payload
from ..state import OPTIONAL, typed_as
from ..windows import check_window, is_long

__all__ = ["HeadViewColumns", "HeadViewMeta", "HeadViewOptions", "HeadViewPayload", "HeadViewState", "LineLabels",
           "head_view_columns", "head_view_labels", "head_view_layer", "head_view_state", "head_view_title",
           "is_windowed", "line_threshold", "shown_view", "view_key"]

LINES = typed_as("LinePayload", "../shared/lines")


@dataclass(frozen=True)
class HeadViewOptions:
    """What the widget's traits choose: the layer (kind, layer, level), the window and the lightest line sent."""

    kind: str = "self"
    layer: int = 0
    words: bool = False
    window: tuple[int, int] | None = None  # None: every token
    min_weight: float = 0.0


@dataclass(frozen=True)
class LineLabels:
    """Labels of every kind at one level (token or word): what a "labels" request answers."""

    tokens: dict[str, tuple[list[str], list[str]]]  # kind -> [query tokens, key tokens]
    segments: dict[str, tuple[list[int], list[int]]]  # kind -> [query segments, key segments]


@dataclass(frozen=True)
class HeadViewPayload:
    """``_payload``: the first layer's lines, so the first paint needs no round trip."""

    key: str  # kind/layer/level, and /start-stop in a window (state.ts viewKey)
    heads: dict[str, Any] = field(metadata=LINES)  # [head, query, key] lines (viewdata.lines)
    labels: LineLabels | None = field(default=None, metadata=OPTIONAL)  # word-level labels, at word level


@dataclass(frozen=True)
class HeadViewMeta:
    """``_meta``: titles, shapes and token-level labels, whatever layer is on screen."""

    title: str
    kinds: list[str]
    shapes: dict[str, tuple[int, int]]  # [layers, heads] per kind
    tokens: dict[str, tuple[list[str], list[str]]]  # token level
    segments: dict[str, tuple[list[int], list[int]]]  # token level
    can_words: bool
    long: bool  # shown in windows only (more than 512 tokens, or a lazy result)
    n_kv_heads: int  # GQA: key/value heads (0 or = heads: none shared)


@dataclass(frozen=True)
class HeadViewState:
    payload: HeadViewPayload
    meta: HeadViewMeta


def _n_queries(result: AttentionResult, kind: str) -> int:
    return int(result.attention_shape(kind)[2])  # type: ignore[arg-type]


def is_windowed(result: AttentionResult, kind: str, window: tuple[int, int] | list[int] | None) -> bool:
    """Whether ``window`` is drawn as a window: a long input, or narrower than the input."""
    n = _n_queries(result, kind)
    return is_long(n, result.is_lazy) or (window is not None and list(window) != [0, n])


def view_key(result: AttentionResult, options: HeadViewOptions) -> str:
    """The page's name for a view (js/src/views/head_view/state.ts viewKey): kind/layer/level, /start-stop in a
    window."""
    key = f"{options.kind}/{options.layer}/{'w' if options.words else 't'}"
    window = options.window
    if not options.words and window is not None and is_windowed(result, options.kind, window):
        key += f"/{window[0]}-{window[1]}"
    return key


def head_view_labels(source: AttentionResult) -> LineLabels:
    """Tokens and sentence segments of every kind at ``source``'s level."""
    tokens = {kind: (q, k) for kind, (q, k) in kind_tokens(source).items()}
    return LineLabels(tokens, {kind: axis_segments(source, kind) for kind in source.kinds})


def head_view_layer(result: AttentionResult, source: AttentionResult, options: HeadViewOptions) -> dict[str, Any]:
    """A layer's lines in their wire form: a window of ``result`` (token level), or every line of ``source`` (the
    result at the view's level) of weight >= ``min_weight``."""
    floor = max(0.0, options.min_weight)
    window = options.window
    if not options.words and window is not None and is_windowed(result, options.kind, window):
        checked = check_window(list(window), _n_queries(result, options.kind))
        return window_payload(result, options.kind, options.layer, checked, floor)
    attention, _, _ = source.attention_of(options.kind)  # type: ignore[arg-type]
    return layer_payload(np.asarray(attention[options.layer], dtype=np.float32), floor)


def head_view_state(result: AttentionResult, options: HeadViewOptions, *,
                    words: AttentionResult | None = None) -> HeadViewState:
    """What the page draws; ``words`` is the word-level result when already made (made here when needed)."""
    source = (words if words is not None else word_level(result)) if options.words else result
    long = is_long(_n_queries(result, options.kind), result.is_lazy)
    kinds: list[str] = list(result.kinds)
    shapes = {kind: result.attention_shape(kind) for kind in kinds}  # type: ignore[arg-type]
    labels = head_view_labels(result)
    meta = HeadViewMeta(
        title=result.model.name, kinds=kinds,
        shapes={kind: (int(shape[0]), int(shape[1])) for kind, shape in shapes.items()},
        tokens=labels.tokens, segments=labels.segments,
        can_words=bool((result.word_ids >= 0).any()) and result.cross_attention is None and not long,
        long=long, n_kv_heads=int(result.model.n_kv_heads or 0))
    payload = HeadViewPayload(view_key(result, options), head_view_layer(result, source, options),
                              head_view_labels(source) if options.words else None)
    return HeadViewState(payload, meta)


class HeadViewColumns(NamedTuple):
    """What the two columns of a state show: the query (left) and key (right) tokens and their sentence segments,
    a window's keys followed by its far keys (``#position token``), and the window (None: every token)."""

    tokens: tuple[list[str], list[str]]
    segments: tuple[list[int], list[int]]
    window: dict[str, Any] | None


def shown_view(state: HeadViewState) -> HeadViewOptions:
    """The kind, layer and level (and window) a state shows, read from its key (state.ts viewKey)."""
    kind, layer, level, *window = state.payload.key.split("/")
    span = tuple(int(x) for x in window[0].split("-")) if window else None
    return HeadViewOptions(kind, int(layer), level == "w", span)  # type: ignore[arg-type]


def head_view_columns(state: HeadViewState) -> HeadViewColumns:
    """The columns of the layer a state shows (state.ts columnsOf and windowColumns): word labels at word level, a
    window's query and key tokens then its far keys."""
    view = shown_view(state)
    labels = state.payload.labels if view.words and state.payload.labels is not None else state.meta
    (qt, kt), (qs, ks) = labels.tokens[view.kind], labels.segments[view.kind]
    win = state.payload.heads.get("window")
    if win is None:
        return HeadViewColumns((list(qt), list(kt)), (list(qs), list(ks)), None)
    (q0, q1), (k0, k1), far = win["q"], win["k"], win["far"]
    tokens = (list(qt[q0:q1]), [*kt[k0:k1], *(f"#{p} {kt[p]}" for p in far)])
    return HeadViewColumns(tokens, (list(qs[q0:q1]), [*ks[k0:k1], *(ks[p] for p in far)]), win)


def head_view_title(state: HeadViewState) -> str:
    """The view's title as the page writes it (js/src/views/head_view/state.ts titleText): the model, the attention
    kind, the layer, the level and a window's tokens."""
    view = shown_view(state)
    which = "target (left) → source (right)" if view.kind == "cross" else f"{view.kind} attention"
    win = state.payload.heads.get("window")
    where = f" · tokens {win['q'][0]}–{win['q'][1] - 1} of {win['n'][0]}" if win else ""
    return f"{state.meta.title} · {which} · layer {view.layer}{' · words' if view.words else ''}{where}"


def line_threshold(rows: int, min_weight: float, focused: bool) -> float:
    """The lightest line drawn (state.ts lineThreshold): ``min_weight``, or 0.1 when more than 128 rows are drawn
    and no token is selected, so the picture stays readable."""
    return max(min_weight, 0.1) if not focused and rows > 128 else min_weight
