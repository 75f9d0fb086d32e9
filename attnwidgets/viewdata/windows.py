"""Windows of tokens: what the head view and the QK step-through show of a long input instead of thousands of lines.

Above :data:`WINDOW_THRESHOLD` tokens (512, BERT's length: up to it the views show every token, as they always
did), the head view draws the lines of a window of :data:`WINDOW_SIZE` consecutive tokens, and the QK step-through
the rows of a window of keys around its query; a lazy result (attention kept as queries and keys) is always read a
window at a time, which is every token when it has at most 512. A window is ``(start, stop)``: token positions
``start..stop-1``, at most :data:`MAX_WINDOW` wide unless it is the whole of an input of up to 512 tokens. Its rows
are read with ``result.rows(layer, start, stop)`` (heads x window rows x keys float32: 24 MB for 12 heads, 64 rows and
8k keys), so a long input's dense attention is never built.

A line to a key outside the window is not dropped silently: the :data:`FAR_KEYS` keys outside it with the largest
weight from the window's queries (over all heads; e.g. an attention sink at position 0) come with it as extra, labelled
"far" columns, when their weight is at least the drawing floor. The strongest key outside the window is therefore
always on screen.

Examples
--------
>>> window_around([100], 5000)
(68, 132)
>>> window_around([4990], 5000)
(4936, 5000)
>>> check_window([10, 300], 5000)
Traceback (most recent call last):
...
ValueError: window [10, 300] is 290 tokens wide; at most 256 are shown at once
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..qk_result import QKCapture
from .checks import check_int

#: Inputs longer than this many tokens are shown in windows (lazy results always are).
WINDOW_THRESHOLD = 512
#: The width of the window a long input opens with.
WINDOW_SIZE = 64
#: The widest window narrower than the input (a longer one would be the unreadable picture windows exist to avoid).
MAX_WINDOW = 256
#: Keys outside the window shown as labelled "far" keys (the strongest by weight from the window's queries).
FAR_KEYS = 3

__all__ = ["FAR_KEYS", "MAX_WINDOW", "WINDOW_SIZE", "WINDOW_THRESHOLD", "check_window", "default_window", "far_keys",
           "is_long", "key_window", "qk_window", "window_around", "window_columns"]


def is_long(n_tokens: int, lazy: bool = False) -> bool:
    """Whether a view of ``n_tokens`` is read in windows: past :data:`WINDOW_THRESHOLD` tokens, or any lazy result."""
    return bool(lazy) or n_tokens > WINDOW_THRESHOLD


def check_window(window: Any, n: int) -> tuple[int, int]:
    """``(start, stop)`` from a window ``[start, stop]`` over ``n`` tokens; TypeError or ValueError saying why not.

    Examples
    --------
    >>> check_window((3, 9), 10), check_window((0, 400), 400)
    ((3, 9), (0, 400))
    >>> check_window([5, 5], 10)
    Traceback (most recent call last):
    ...
    ValueError: window [5, 5] must satisfy 0 <= start < stop <= 10 (token positions start..stop-1)
    """
    if isinstance(window, (str, bytes)) or not isinstance(window, Sequence) or len(window) != 2:
        raise TypeError(f"window must be [start, stop] (two token positions), got {window!r}")
    start, stop = check_int(window[0], "window start"), check_int(window[1], "window stop")
    if not 0 <= start < stop <= n:
        raise ValueError(f"window [{start}, {stop}] must satisfy 0 <= start < stop <= {n} (token positions "
                         "start..stop-1)")
    if stop - start > MAX_WINDOW and not (start == 0 and stop == n <= WINDOW_THRESHOLD):
        raise ValueError(f"window [{start}, {stop}] is {stop - start} tokens wide; at most {MAX_WINDOW} are shown at "
                         "once")
    return start, stop


def window_around(positions: Sequence[int], n: int, size: int = WINDOW_SIZE) -> tuple[int, int]:
    """A window of ``size`` tokens (fewer when ``n`` is smaller) centred on the middle of ``positions``, kept inside
    ``0..n``; the positions' whole span when it is wider than ``size`` (up to :data:`MAX_WINDOW`).

    Examples
    --------
    >>> window_around([0], 5000), window_around([10, 200], 5000), window_around([3], 20)
    ((0, 64), (10, 201), (0, 20))
    """
    if n <= 0:
        raise ValueError("a window needs at least one token")
    pos = [int(p) for p in positions] or [0]
    lo, hi = min(pos), max(pos) + 1
    size = min(n, MAX_WINDOW, max(int(size), hi - lo, 1))
    start = (lo + hi) // 2 - size // 2
    start = max(0, min(start, n - size))
    return start, start + size


def default_window(n: int, lazy: bool = False, around: Sequence[int] = ()) -> tuple[int, int]:
    """The window a view opens with: every token of a short input, else :data:`WINDOW_SIZE` tokens around
    ``around`` (or at the start).

    Examples
    --------
    >>> default_window(10), default_window(500, lazy=True), default_window(1000), default_window(1000, around=[999])
    ((0, 10), (0, 500), (0, 64), (936, 1000))
    """
    if n <= WINDOW_THRESHOLD:
        return 0, n
    return window_around(list(around) or [0], n)


def key_window(window: tuple[int, int], n_queries: int, n_keys: int) -> tuple[int, int]:
    """The keys shown beside a window of queries: the same positions when queries and keys are the same tokens
    (self-attention), else the same share of the keys (cross-attention: target left, source right).

    Examples
    --------
    >>> key_window((64, 128), 1000, 1000), key_window((0, 10), 10, 40), key_window((500, 564), 1000, 100)
    ((64, 128), (0, 40), (50, 57))
    """
    start, stop = window
    if n_queries == n_keys:
        return start, stop
    if n_keys <= WINDOW_THRESHOLD and start == 0 and stop == n_queries:
        return 0, n_keys
    k0 = min(n_keys - 1, start * n_keys // max(n_queries, 1))
    k1 = max(k0 + 1, min(n_keys, -(-stop * n_keys // max(n_queries, 1))))
    return k0, min(k1, k0 + MAX_WINDOW)


def far_keys(rows: np.ndarray, keys: tuple[int, int], count: int = FAR_KEYS, floor: float = 0.0) -> list[int]:
    """The ``count`` key positions outside ``keys`` that the rows (…, key) give the most weight (their largest over
    every other axis), ascending; only those whose weight is at least ``floor``.

    Examples
    --------
    >>> r = np.zeros((2, 3, 10), np.float32); r[0, 1, 0] = 0.5; r[1, 2, 9] = 0.3; r[0, 0, 8] = 0.01; r[:, :, 4] = 0.9
    >>> far_keys(r, (3, 6)), far_keys(r, (3, 6), floor=0.02), far_keys(r, (3, 6), count=1)
    ([0, 8, 9], [0, 9], [0])
    """
    rows = np.asarray(rows, dtype=np.float32)
    n = rows.shape[-1]
    k0, k1 = keys
    if count <= 0 or rows.size == 0 or (k0 == 0 and k1 == n):
        return []
    peak = np.nan_to_num(rows.reshape(-1, n)).max(0)
    peak[k0:k1] = -np.inf
    order = np.argsort(-peak, kind="stable")[:count]
    return sorted(int(k) for k in order if np.isfinite(peak[k]) and peak[k] >= floor and peak[k] > 0)


def window_columns(rows: np.ndarray, keys: tuple[int, int], far: Sequence[int]) -> np.ndarray:
    """The columns a window shows, in order: keys ``start..stop-1``, then the far keys.

    Examples
    --------
    >>> window_columns(np.arange(10.0)[None], (2, 4), [0, 9]).tolist()
    [[2.0, 3.0, 0.0, 9.0]]
    """
    cols = np.concatenate([np.arange(keys[0], keys[1]), np.asarray(far, dtype=np.int64)]).astype(np.int64)
    return np.asarray(rows)[..., cols]


def qk_window(capture: QKCapture, head: int, query: int, window: tuple[int, int], far: int = FAR_KEYS
              ) -> dict[str, np.ndarray]:
    """One query's step-through restricted to a window of keys, plus the ``far`` keys outside it with the largest
    softmax weight: q and output (1, d); k and v (m', d); logits, scaled, weights and mask (1, m'); ``keys`` (m',),
    the key positions of the rows; ``outside`` (1,): the total weight on keys outside the window (far ones included);
    ``bias`` (and ``bucket``) (1, m') when the capture has a position bias; a rotary capture's ``q_pre`` (1, d),
    ``k_pre`` (m', d), ``logits_pre`` (1, m'), ``angle`` (m', r/2) and ``q_angle`` (1, r/2).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> c = QKCapture.from_vectors(*(rng.normal(size=(2, 400, 4)) for _ in range(3)), [str(i) for i in range(400)])
    >>> a = qk_window(c, 1, 200, (180, 220))
    >>> a["k"].shape, a["keys"][:2].tolist(), bool(np.allclose(a["weights"][0, :40], c.weights[1, 200, 180:220]))
    ((43, 4), [180, 181], True)
    """
    arr = capture.head(head)
    start, stop = window
    weights = arr["weights"][query]
    allowed = capture.mask[query]
    picked = far_keys(np.where(allowed, weights, 0.0)[None], window, far, floor=0.0)
    cols = np.concatenate([np.arange(start, stop), np.asarray(picked, dtype=np.int64)]).astype(np.int64)
    outside = float(weights.sum() - weights[start:stop].sum())
    out = {"q": arr["q"][query][None], "output": arr["output"][query][None], "k": arr["k"][cols],
           "v": arr["v"][cols], "logits": arr["logits"][query, cols][None], "scaled": arr["scaled"][query, cols][None],
           "weights": weights[cols][None], "mask": allowed[cols][None].astype(np.float32),
           "keys": cols, "outside": np.array([max(0.0, outside)], np.float32)}
    for name in ("bias", "bucket"):  # a position bias (T5, ALiBi) and T5's buckets, when the capture has them
        if name in arr:
            out[name] = arr[name][query, cols][None]
    if "angle" in arr:  # a rotary model's step: q and k before the rotation, their angles, q·k before it
        out.update(q_pre=arr["q_pre"][query][None], k_pre=arr["k_pre"][cols],
                   logits_pre=arr["logits_pre"][query, cols][None], angle=arr["angle"][cols],
                   q_angle=arr["angle"][query][None])
    return out
