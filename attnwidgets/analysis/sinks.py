"""Attention sinks: how much of each head's attention lands on the first token (or on any tokens you mark).

Many models park most of a head's attention on the first token when the head has nothing better to do (Xiao et
al. 2023, "Efficient Streaming Language Models with Attention Sinks"; bertviz issue #131 "every token focuses on
the first token"). :func:`sink_shares` measures it per layer and head, a block of rows at a time, so it works at
any length; ``attnwidgets.HeadStatsGrid.from_sinks`` shows it as a layers x heads grid and the heatmap's
``discount_sinks`` takes the sink out of the colour scale so the rest of the pattern shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..result import AttentionResult
from .blocks import kept_summary

__all__ = ["sink_frame", "sink_shares"]


def _causal(result: AttentionResult, kind: str) -> bool:
    return kind == "decoder" or (kind == "self" and result.model.kind == "decoder")


def sink_shares(result: AttentionResult, keys: int | Iterable[int] = (0,), kind: str = "self") -> np.ndarray:
    """(layers, heads) mean share of attention on ``keys``: for each query, the summed weight on those keys;
    averaged over the queries that have a choice.

    A query "has a choice" when it can see at least one of ``keys`` and at least one other key. Under a causal
    mask that leaves out the queries before the first marked key (they cannot see it: their 0 would only dilute
    the share) and the first token itself when it is the sink (it sees nothing else: its 1.0 is no sink
    behaviour). Visibility follows the causal rule only (a sliding window or padding is not modelled: a query
    outside the window counts with its weight 0). A head with no query that has a choice is NaN.

    Rows are read a block at a time (``result.iter_blocks``): any length, dense or lazy.

    Parameters
    ----------
    result : AttentionResult
    keys : int or iterable of int
        Key indices of the sink (default the first token).
    kind : str
        "self", or "encoder" / "decoder" / "cross" for encoder-decoders.

    Examples
    --------
    >>> a = np.array([[1, 0, 0], [.8, .2, 0], [.5, .25, .25]], np.float32)
    >>> r = AttentionResult.from_arrays(a, ["<s>", "a", "b"], kind="decoder")
    >>> sink_shares(r).round(3).tolist()          # queries 1 and 2: (0.8 + 0.5) / 2
    [[0.65]]
    >>> sink_shares(r, keys=[0, 1]).round(3).tolist()   # only query 2 sees a key besides 0 and 1
    [[0.75]]
    """
    L, H, _T, S = result.attention_shape(kind)  # type: ignore[arg-type]
    marked = np.array(sorted({int(k) for k in ([keys] if isinstance(keys, (int, np.integer)) else keys)}), np.int64)
    if marked.size == 0:
        raise ValueError("sink_shares needs at least one key index")
    if marked[0] < 0 or marked[-1] >= S:
        raise ValueError(f"sink keys {marked.tolist()} are outside the {S} keys")
    causal = _causal(result, kind)
    if kind == "self" and result.is_lazy:
        kept = _from_summary(result, marked, causal)
        if kept is not None:
            return kept
    total = np.zeros((L, H), np.float64)
    count = np.zeros(L, np.int64)
    for layer, start, stop, block in result.iter_blocks(kind):  # type: ignore[arg-type]
        q = np.arange(start, stop)
        if causal:
            seen = np.searchsorted(marked, q, side="right")  # marked keys at or before each query
            choice = (seen > 0) & (q + 1 > seen)
        else:
            choice = np.full(q.shape, S > marked.size)
        if not choice.any():
            continue
        share = block[:, choice][:, :, marked].sum(-1, dtype=np.float64)  # (H, rows with a choice)
        total[layer] += share.sum(-1)
        count[layer] += int(choice.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count[:, None] > 0, total / np.maximum(count, 1)[:, None], np.nan)


def _from_summary(result: AttentionResult, marked: np.ndarray, causal: bool) -> np.ndarray | None:
    """:func:`sink_shares` from the sums the runner made with the weights: the marked keys' column sums, less the
    rows that have no choice (under a causal mask, the first rows when every key they see is marked: read from the
    kept top-left corner). None when there are no such sums or the corner is too small."""
    summary = kept_summary(result)
    if summary is None:
        return None
    T = result.attention_shape()[2]
    S = summary["colsum"].shape[-1]
    total = summary["colsum"][..., marked].sum(-1)  # (L, H)
    if causal:
        q = np.arange(T)
        seen = np.searchsorted(marked, q, side="right")
        choice = (seen > 0) & (q + 1 > seen)
        # rows before the first marked key put nothing on it; rows whose every key is marked are taken out
        none = np.flatnonzero((seen > 0) & ~choice)
        corner = summary["corner"]
        if none.size and none.max() >= corner.shape[-2]:
            return None
        for row in none:
            total = total - corner[:, :, row][..., marked[marked < corner.shape[-1]]].sum(-1)
        n = int(choice.sum())
    else:
        n = T if S > marked.size else 0
    if n == 0:
        return np.full(total.shape, np.nan)
    return total / n


def sink_frame(result: AttentionResult, keys: int | Iterable[int] = (0,), kind: str = "self") -> Any:
    """:func:`sink_shares` as a tidy DataFrame (layer, head, kv_head, statistic "sink", value).

    Examples
    --------
    >>> r = AttentionResult.from_arrays(np.full((2, 2, 3, 3), 1 / 3, np.float32), ["a", "b", "c"])
    >>> sink_frame(r).shape
    (4, 5)
    """
    import pandas as pd

    shares = sink_shares(result, keys, kind)
    L, H = shares.shape
    n_kv = int(result.model.n_kv_heads or 0)
    group = H // n_kv if 0 < n_kv < H and H % n_kv == 0 else 1
    layer, head = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
    return pd.DataFrame({"layer": layer.ravel(), "head": head.ravel(), "kv_head": head.ravel() // group,
                         "statistic": "sink", "value": shares.ravel()})
