"""QKStepThrough's state (front end: js/src/views/qk/): what the page draws for captured layers and the view's
choices, and the answer to its "qk" request, as pure functions of the captures.

One head's arrays travel as :class:`QKArrays` (a boolean mask as uint8, everything else float32); a long capture
crosses one query over a window of keys plus a few "far" keys (:func:`attnwidgets.viewdata.windows.qk_window`), and
``keys`` says which key each row is.

Examples
--------
>>> import numpy as np
>>> from attnwidgets.qk_result import QKCapture
>>> rng = np.random.default_rng(0)
>>> cap = QKCapture.from_vectors(*rng.normal(size=(3, 2, 3, 4)), ["a", "b", "c"])
>>> state = qk_state({0: cap}, QKOptions(layer=0, head=1, query=2, window=(0, 3)))
>>> state.payload.key, state.payload.arrays.logits.shape, state.meta.n_heads, state.meta.long
('0/1', (3, 3), 2, False)
>>> qk_state({0: cap}, QKOptions(0, 1, 2, (1, 3))).payload.arrays.keys.tolist()  # the window's keys, then key 0
[1.0, 2.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...qk_result import QKCapture
from ..state import OPTIONAL, packed_as, to_wire
from ..windows import check_window, is_long, qk_window

__all__ = ["ROPE_ARRAYS", "QKArrays", "QKMeta", "QKOptions", "QKPayload", "QKState", "extra_arrays", "is_windowed",
           "qk_arrays", "qk_meta", "qk_reply", "qk_state", "view_key"]


@dataclass(frozen=True)
class QKOptions:
    """What the widget's traits choose: the head, the query and the window of keys."""

    layer: int
    head: int
    query: int
    window: tuple[int, int]


@dataclass(frozen=True)
class QKArrays:
    """One head's arrays: q, output (n, d); k, v (m, d); logits, scaled, weights, mask (n, m); in a window one query's
    row (n = 1) with ``keys`` and ``outside``; bias, bucket (n, m) when the model adds a position bias; a rotary
    model's step: q_pre (n, d), k_pre (m, d), logits_pre (n, m), angle (m, r/2) of each key row and q_angle
    (n, r/2) of each query row."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    logits: np.ndarray
    scaled: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    mask: np.ndarray = field(metadata=packed_as("uint8"))
    keys: np.ndarray | None = field(default=None, metadata=OPTIONAL)  # a window: the key position of each row
    outside: np.ndarray | None = field(default=None, metadata=OPTIONAL)  # a window: the weight outside it
    bias: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    bucket: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    q_pre: np.ndarray | None = field(default=None, metadata=OPTIONAL)  # RoPE: q before the rotation
    k_pre: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    logits_pre: np.ndarray | None = field(default=None, metadata=OPTIONAL)  # q·k before the rotation
    angle: np.ndarray | None = field(default=None, metadata=OPTIONAL)  # radians each pair turns at each key row
    q_angle: np.ndarray | None = field(default=None, metadata=OPTIONAL)  # ... and at each query row


@dataclass(frozen=True)
class QKPayload:
    """``_payload``: the first view's arrays, so the first paint needs no round trip."""

    key: str  # layer/head, and /query/start-stop in a window (state.ts viewKey)
    arrays: QKArrays


@dataclass(frozen=True)
class QKMeta:
    """``_meta``: what the panels' labels need whatever head is on screen."""

    title: str
    stack: str
    layers: list[int]
    n_heads: int
    n_kv_heads: int
    head_dim: int
    scaling: float
    tokens: list[str]
    key_tokens: list[str]
    long: bool  # shown in windows only (more than 512 keys)
    bias: bool  # the model adds a position bias to the scaled logits: a "+ bias" panel
    buckets: bool  # the bias is T5's: each key's relative-position bucket is shown
    rope: bool  # a rotary model: q and k before the rotation, the angles, q·k before (three more panels)
    rotary_dim: int  # how many of each head's dimensions rotate (0 without RoPE; < head_dim: partial rotary)


@dataclass(frozen=True)
class QKState:
    payload: QKPayload
    meta: QKMeta


def _first(captures: Mapping[int, QKCapture]) -> QKCapture:
    return next(iter(captures.values()))


def is_windowed(captures: Mapping[int, QKCapture], window: tuple[int, int] | list[int]) -> bool:
    """Whether ``window`` is drawn as a window: a long capture, or narrower than its keys."""
    n_keys = len(_first(captures).key_tokens)
    return is_long(n_keys) or list(window) != [0, n_keys]


def view_key(captures: Mapping[int, QKCapture], options: QKOptions) -> str:
    """The page's name for the view (js/src/views/qk/state.ts viewKey): layer/head, and /query/start-stop in a
    window."""
    key = f"{options.layer}/{options.head}"
    if is_windowed(captures, options.window):
        key += f"/{options.query}/{options.window[0]}-{options.window[1]}"
    return key


ROPE_ARRAYS = ("q_pre", "k_pre", "logits_pre", "angle", "q_angle")


def extra_arrays(cap: QKCapture) -> tuple[str, ...]:
    """The arrays a capture adds: ("bias", "bucket") for T5, ("bias",) for a bias without buckets; a rotary model's
    :data:`ROPE_ARRAYS` after them."""
    bias: tuple[str, ...] = () if cap.bias is None else ("bias", "bucket") if cap.bucket is not None else ("bias",)
    return bias + (ROPE_ARRAYS if cap.rope is not None else ())


def qk_arrays(cap: QKCapture, head: int, query: int | None = None,
              window: tuple[int, int] | list[int] | None = None) -> QKArrays:
    """One head's arrays: every query (``query`` None), or one query's row over ``window``'s keys and the far
    keys."""
    if query is not None and window is not None:
        a = qk_window(cap, head, int(query), check_window(list(window), len(cap.key_tokens)))
        f32 = {name: np.asarray(a[name], np.float32) for name in a}
        return QKArrays(**{name: f32[name] for name in ("q", "k", "v", "logits", "scaled", "weights", "output",
                                                        "keys", "outside", *extra_arrays(cap))},
                        mask=np.asarray(a["mask"], bool))
    arr = cap.head(head)
    if cap.rope is not None:
        arr["q_angle"] = arr["angle"][: len(cap.tokens)]
    return QKArrays(arr["q"], arr["k"], arr["v"], arr["logits"], arr["scaled"], arr["weights"], arr["output"],
                    mask=np.asarray(cap.mask, bool),
                    **{name: np.asarray(arr[name], np.float32) for name in extra_arrays(cap)})


def qk_meta(captures: Mapping[int, QKCapture]) -> QKMeta:
    first = _first(captures)
    return QKMeta(
        title=first.model.name if first.model is not None else "arrays", stack=first.stack,
        layers=sorted(captures), n_heads=int(first.n_heads), n_kv_heads=int(first.k.shape[0]),
        head_dim=int(first.head_dim), scaling=float(first.scaling), tokens=list(first.tokens),
        key_tokens=list(first.key_tokens), long=is_long(len(first.key_tokens)), bias=first.bias is not None,
        buckets=first.bucket is not None, rope=first.rope is not None,
        rotary_dim=0 if first.rope is None else first.rope.rotary_dim)


def qk_state(captures: Mapping[int, QKCapture], options: QKOptions) -> QKState:
    """What the page draws for the head, query and window of ``options``."""
    windowed = is_windowed(captures, options.window)
    arrays = qk_arrays(captures[options.layer], options.head, options.query if windowed else None,
                       options.window if windowed else None)
    return QKState(QKPayload(view_key(captures, options), arrays), qk_meta(captures))


def qk_reply(arrays: QKArrays) -> tuple[dict[str, Any], list[memoryview]]:
    """A "qk" request's reply: ``{arrays: [{name, dtype, shape...}]}`` and one buffer per array, in that order."""
    specs, buffers = [], []
    for name, packed in to_wire(arrays).items():
        buffers.append(packed.pop("buffer"))
        specs.append({**packed, "name": name})
    return {"arrays": specs}, buffers
