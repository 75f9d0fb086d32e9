"""HeadView's line sets: which (query, key) pairs a sentence filter keeps, and the layer payload: per head, only
the weights the page can draw a line for. :func:`attnwidgets.plots.plot_head_view` draws from the same filter.

A layer of a 12-head model at 512 tokens is 3.1 million weights, but the page never draws a line lighter than
``min_weight`` (0.02 by default), and a softmax row has at most ``1 / min_weight`` such weights; in real models
far fewer (about 0.7 % of the cells of the bundled model at 512 tokens). So the layer crosses as sparse rows:

- ``counts`` [head * query]: how many kept weights each (head, query) row has (uint8, uint16 or uint32);
- ``keys`` [n]: their key positions, row after row, ascending within a row (uint16, or uint32 past 65,536 keys);
- ``values`` [n]: their weights, float16.

A weight is kept when its float16 value is ``>= floor`` (the widget's ``min_weight``), so every line the page can
draw is in the payload, at the same float16 value a dense layer would carry: hovering a token is exact with no
round trip. When sparse rows would not be smaller (``min_weight`` near 0), the dense layer is sent instead
(float16, or uint8 with 255 = weight 1 above 256 x 256 cells), as before.

A long input (:mod:`attnwidgets.viewdata.windows`) crosses as a window instead: :func:`window_payload` reads only the
window's query rows (``result.rows``), keeps the window's keys and the strongest "far" keys outside it, and adds
``window = {"q": [start, stop], "k": [start, stop], "far": [positions], "n": [queries, keys]}`` so the page knows
which token each row and column is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..result import AttentionResult
from .windows import FAR_KEYS, far_keys, key_window, window_columns

#: Above this many query x key cells a dense layer crosses as uint8 (1/255 steps) instead of float16.
FLOAT16_MAX_CELLS = 256 * 256

#: Sentence filters: which (query segment, key segment) pairs keep their lines. None = any segment.
SENTENCE_FILTERS: dict[str, tuple[int | None, int | None]] = {
    "all": (None, None),
    "AA": (0, 0),
    "AB": (0, 1),
    "BA": (1, 0),
    "BB": (1, 1),
}

__all__ = ["FLOAT16_MAX_CELLS", "SENTENCE_FILTERS", "dense_layer", "filter_mask", "layer_payload", "payload_bytes",
           "payload_reply", "unpack", "window_payload"]


def filter_mask(query_segments: Sequence[int] | np.ndarray, key_segments: Sequence[int] | np.ndarray,
                which: str = "all") -> np.ndarray:
    """(nq, nk) bool: the (query, key) pairs whose lines the sentence filter ``which`` keeps.

    ``"AB"`` keeps lines from sentence A queries to sentence B keys, and so on; ``"all"`` keeps every pair.

    Examples
    --------
    >>> filter_mask(np.array([0, 0, 1]), np.array([0, 1, 1]), "AB").astype(int).tolist()
    [[0, 1, 1], [0, 1, 1], [0, 0, 0]]
    """
    if which not in SENTENCE_FILTERS:
        raise ValueError(f"unknown sentence filter {which!r}; choose one of {list(SENTENCE_FILTERS)}")
    qs, ks = SENTENCE_FILTERS[which]
    q = np.ones(len(query_segments), bool) if qs is None else np.asarray(query_segments) == qs
    k = np.ones(len(key_segments), bool) if ks is None else np.asarray(key_segments) == ks
    return q[:, None] & k[None, :]


def _uint(max_value: int, choices: tuple[str, ...] = ("uint8", "uint16", "uint32")) -> str:
    for name in choices:
        if max_value <= np.iinfo(name).max:
            return name
    raise ValueError(f"{max_value} does not fit in {choices[-1]}")


def _part(data: np.ndarray, dtype: str) -> dict[str, Any]:
    a = np.ascontiguousarray(data, dtype=np.dtype(dtype).newbyteorder("<"))
    return {"buffer": memoryview(a.tobytes()), "dtype": dtype, "shape": [int(a.size)]}


def dense_layer(heads: np.ndarray) -> dict[str, Any]:
    """A layer ``[head, query, key]`` as one dense buffer: float16, or uint8 (255 = weight 1) past 256 x 256 cells.

    Examples
    --------
    >>> p = dense_layer(np.full((1, 2, 2), 0.5, np.float32))
    >>> p["format"], p["dtype"], p["shape"], len(p["buffer"])
    ('dense', 'float16', [1, 2, 2], 8)
    """
    heads = np.asarray(heads, dtype=np.float32)
    shape = [int(s) for s in heads.shape]
    if heads.shape[1] * heads.shape[2] <= FLOAT16_MAX_CELLS:
        data = np.ascontiguousarray(heads, dtype="<f2").tobytes()
        return {"format": "dense", "shape": shape, "dtype": "float16", "scale": 1.0, "floor": 0.0,
                "buffer": memoryview(data)}
    # A fixed scale (255 = weight 1) so that the page's threshold means the same in every layer.
    data = np.rint(np.clip(np.nan_to_num(heads), 0, 1) * 255).astype(np.uint8).tobytes()
    return {"format": "dense", "shape": shape, "dtype": "uint8", "scale": 1.0, "floor": 0.0,
            "buffer": memoryview(data)}


def layer_payload(heads: np.ndarray, floor: float) -> dict[str, Any]:
    """What crosses for one layer ``[head, query, key]``: sparse rows of the weights ``>= floor``, or dense if smaller.

    Examples
    --------
    >>> a = np.zeros((2, 3, 5), np.float32); a[:, :, 1] = 0.9; a[1, 2, 4] = 0.05
    >>> p = layer_payload(a, 0.02)
    >>> p["format"], p["counts"]["dtype"], p["keys"]["shape"], [round(v, 3) for v in unpack(p)[1, 2].tolist()]
    ('sparse', 'uint8', [7], [0.0, 0.9, 0.0, 0.0, 0.05])
    """
    heads = np.asarray(heads, dtype=np.float32)
    if heads.ndim != 3:
        raise ValueError(f"a layer is [head, query, key]; got shape {heads.shape}")
    floor = float(floor)
    h16 = np.nan_to_num(heads).astype(np.float16)
    keep = h16.astype(np.float32) >= floor
    counts = keep.sum(-1).reshape(-1)
    n, n_keys = int(counts.sum()), heads.shape[2]
    count_dtype = _uint(int(counts.max()) if counts.size else 0)
    key_dtype = _uint(max(n_keys - 1, 0), ("uint16", "uint32"))
    sparse = counts.size * np.dtype(count_dtype).itemsize + n * (np.dtype(key_dtype).itemsize + 2)
    dense = dense_layer(heads)
    if sparse >= len(dense["buffer"]):
        return dense
    _, _, keys = np.nonzero(keep)  # C order: head, then query, then key ascending
    return {
        "format": "sparse",
        "shape": [int(s) for s in heads.shape],
        "floor": floor,
        "counts": _part(counts, count_dtype),
        "keys": _part(keys, key_dtype),
        "values": _part(h16[keep], "float16"),
    }


PARTS = ("counts", "keys", "values")


def payload_bytes(payload: dict[str, Any]) -> int:
    """Bytes of the binary buffers of a payload (what crosses besides a few lines of JSON)."""
    if payload["format"] == "dense":
        return len(payload["buffer"])
    return sum(len(payload[p]["buffer"]) for p in PARTS)


def payload_reply(payload: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
    """A payload as a request reply: JSON content (buffers described in ``parts``) and the binary buffers."""
    if payload["format"] == "dense":
        return {k: v for k, v in payload.items() if k != "buffer"}, [payload["buffer"]]
    content = {"format": "sparse", "shape": payload["shape"], "floor": payload["floor"],
               "parts": [{"name": p, "dtype": payload[p]["dtype"], "shape": payload[p]["shape"]} for p in PARTS],
               **({"window": payload["window"]} if "window" in payload else {})}
    return content, [payload[p]["buffer"] for p in PARTS]


def window_heads(result: AttentionResult, kind: str, layer: int, window: tuple[int, int], floor: float = 0.0,
                 far: int = FAR_KEYS) -> tuple[np.ndarray, dict[str, Any]]:
    """A window's lines: ``[head, window query, shown key]`` float32 (the window's keys, then the far keys) and the
    ``window`` description (see the module docstring). Reads only the window's rows, at any input length.

    Examples
    --------
    >>> r = AttentionResult.from_arrays(np.full((1, 1, 8, 8), 0.125, np.float32), list("abcdefgh"))
    >>> a, w = window_heads(r, "self", 0, (2, 5), far=2)
    >>> a.shape, w
    ((1, 3, 5), {'q': [2, 5], 'k': [2, 5], 'far': [0, 1], 'n': [8, 8]})
    """
    _, _, nq, nk = result.attention_shape(kind)  # type: ignore[arg-type]
    q0, q1 = window
    keys = key_window(window, nq, nk)
    rows = np.asarray(result.rows(layer, q0, q1, kind=kind), dtype=np.float32)  # type: ignore[arg-type]
    picked = far_keys(rows, keys, far, floor)
    info = {"q": [int(q0), int(q1)], "k": [int(keys[0]), int(keys[1])], "far": picked, "n": [int(nq), int(nk)]}
    return window_columns(rows, keys, picked), info


def window_payload(result: AttentionResult, kind: str, layer: int, window: tuple[int, int], floor: float,
                   far: int = FAR_KEYS) -> dict[str, Any]:
    """:func:`layer_payload` of a window's lines (:func:`window_heads`), with its ``window`` description.

    Examples
    --------
    >>> r = AttentionResult.from_arrays(np.eye(6, dtype=np.float32)[None, None], list("abcdef"))
    >>> p = window_payload(r, "self", 0, (1, 3), 0.02)
    >>> p["shape"], p["window"]["k"], unpack(p)[0].tolist()
    ([1, 2, 2], [1, 3], [[1.0, 0.0], [0.0, 1.0]])
    """
    heads, info = window_heads(result, kind, layer, window, floor, far)
    return {**layer_payload(heads, floor), "window": info}


def unpack(payload: dict[str, Any]) -> np.ndarray:
    """The layer ``[head, query, key]`` float32 back from a payload (weights under the floor read 0); for tests.

    Examples
    --------
    >>> a = np.random.default_rng(0).random((2, 4, 6)).astype(np.float32)
    >>> bool(np.allclose(unpack(layer_payload(a, 0.9)), np.where(a >= 0.9, a, 0), atol=1e-3))
    True
    """
    shape = tuple(payload["shape"])
    if payload["format"] == "dense":
        if payload["dtype"] == "float16":
            return np.frombuffer(bytes(payload["buffer"]), "<f2").astype(np.float32).reshape(shape)
        return np.frombuffer(bytes(payload["buffer"]), np.uint8).reshape(shape) * np.float32(payload["scale"] / 255)
    read = {p: np.frombuffer(bytes(payload[p]["buffer"]), np.dtype(payload[p]["dtype"]).newbyteorder("<"))
            for p in PARTS}
    out = np.zeros(shape, np.float32)
    rows = np.repeat(np.arange(read["counts"].size), read["counts"].astype(np.int64))
    out.reshape(-1, shape[2])[rows, read["keys"].astype(np.int64)] = read["values"].astype(np.float32)
    return out
