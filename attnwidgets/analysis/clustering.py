"""Distances between heads (Clark et al. 2019, section 6) and a 2-D map of them.

The distance between heads h1 and h2 on one input is the Jensen–Shannon divergence between their attention rows,
averaged over the query rows (``reduce="mean"``; the paper sums over tokens, ``reduce="sum"``), then averaged over
the inputs of a corpus. As in Clark et al.'s code, each row is smoothed first, A <- 0.999 A + 0.001 / m (m = keys
the row may see), so that no probability is zero. The heads are then embedded in 2-D with metric MDS on the
precomputed distances (their Figure 6).

JS is in nats here: ``JS(p, q) = H((p + q) / 2) - (H(p) + H(q)) / 2``, which equals
``scipy.spatial.distance.jensenshannon(p, q) ** 2``.

At any length: a long input's result (``result.is_lazy``) is compared a block of query rows at a time, the rows of
every layer's heads for the same queries together, so memory stays bounded; the work is still K² · n² per input.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

import numpy as np

from ..result import AttentionResult
from .batch import AttentionBatch
from .blocks import is_causal, visible_keys

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HeadDistances", "head_distances", "head_embedding", "js_divergence"]

Reduce = Literal["mean", "sum"]


def _plogp(x: np.ndarray) -> np.ndarray:
    safe = np.where(x > 0, x, 1.0)
    return x * np.log(safe)


def js_divergence(p: np.ndarray, q: np.ndarray, axis: int = -1) -> np.ndarray:
    """Jensen–Shannon divergence (nats) between distributions along ``axis``; inputs are normalised first.

    Examples
    --------
    >>> round(float(js_divergence(np.array([1.0, 0.0]), np.array([0.0, 1.0]))), 6) == round(float(np.log(2)), 6)
    True
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    p = p / p.sum(axis, keepdims=True)
    q = q / q.sum(axis, keepdims=True)
    m = 0.5 * (p + q)
    return np.maximum(-_plogp(m).sum(axis) + 0.5 * (_plogp(p).sum(axis) + _plogp(q).sum(axis)), 0.0)


class HeadDistances:
    """Accumulates mean Jensen–Shannon distances between all heads over a corpus, one batch at a time.

    Memory is one (K, K) matrix for K = layers x heads; nothing per input is kept.

    Parameters
    ----------
    smoothing : float
        ε in A <- (1 - ε) A + ε / m; Clark et al. use 0.001.
    reduce : {"mean", "sum"}
        Mean (default, independent of length) or sum over the query rows of an input.

    Examples
    --------
    >>> from attnwidgets.result import AttentionResult
    >>> a = np.stack([np.eye(3), np.full((3, 3), 1 / 3)])[None]       # 1 layer, 2 heads
    >>> acc = HeadDistances(); acc.add(AttentionResult.from_arrays(a, ["x", "y", "z"]))
    >>> acc.distances().shape
    (2, 2)
    """

    def __init__(self, smoothing: float = 0.001, reduce: Reduce = "mean") -> None:
        if reduce not in ("mean", "sum"):
            raise ValueError(f"reduce must be 'mean' or 'sum', got {reduce!r}")
        self.smoothing = float(smoothing)
        self.reduce = reduce
        self.total: np.ndarray | None = None
        self.n_docs = 0
        self.shape: tuple[int, int] | None = None

    def add(self, result: AttentionResult) -> None:
        """Add one result (a long input's, ``result.is_lazy``, a block of rows at a time)."""
        if result.is_lazy:
            self._add_blocks(result)
        else:
            self.add_batch(AttentionBatch.from_results([result]))

    def _start(self, n_layers: int, n_heads: int) -> np.ndarray:
        if self.total is None:
            self.total = np.zeros((n_layers * n_heads,) * 2, dtype=np.float64)
            self.shape = (n_layers, n_heads)
        elif self.shape != (n_layers, n_heads):
            raise ValueError(f"batch has {n_layers}x{n_heads} heads, earlier ones had {self.shape}")
        return self.total

    def _add_blocks(self, result: AttentionResult) -> None:
        """One result, the query rows of every head a block at a time (the same numbers as :meth:`add_batch`)."""
        n_layers, n_heads, n, _ = result.attention_shape()
        total = self._start(n_layers, n_heads)
        k = n_layers * n_heads
        causal = is_causal(result)
        step_rows = max(1, (1 << 22) // max(k * n, 1))  # about 4M numbers of rows at a time
        js_sum = np.zeros((k, k))
        for a in range(0, n, step_rows):
            b = min(n, a + step_rows)
            p = np.concatenate([result.rows(layer, a, b) for layer in range(n_layers)]).astype(np.float64)  # (K,r,n)
            mk = visible_keys(causal, a, b, n)
            if mk is None:
                mk = np.ones((b - a, n), bool)
            m = np.maximum(mk.sum(-1, keepdims=True), 1)  # (r, 1)
            p = np.where(mk, (1 - self.smoothing) * p + self.smoothing / m, 0.0)
            h = -_plogp(p).sum(-1)  # (K, r)
            step = max(1, (1 << 22) // max(k * (b - a) * n, 1))
            for h1 in range(0, k, step):
                mix = 0.5 * (p[h1 : h1 + step, None] + p[None])  # (chunk, K, r, n)
                js = -_plogp(mix).sum(-1) - 0.5 * (h[h1 : h1 + step, None] + h[None])
                js_sum[h1 : h1 + step] += np.maximum(js, 0.0).sum(-1)
        total += js_sum / n if self.reduce == "mean" else js_sum
        self.n_docs += 1

    def add_batch(self, batch: AttentionBatch) -> None:
        """Add every input of a padded batch."""
        b, n_layers, n_heads = batch.attention.shape[:3]
        k = n_layers * n_heads
        total = self._start(n_layers, n_heads)
        mask = batch.key_mask()[:, 0, 0]  # (B, T, T)
        rows = batch.valid.astype(np.float64)  # (B, T)
        m = np.maximum(mask.sum(-1, keepdims=True), 1)  # (B, T, 1)
        for i in range(b):
            n = int(batch.lengths[i])
            p = batch.attention[i, :, :, :n, :n].reshape(k, n, n).astype(np.float64)
            mk = mask[i, :n, :n]
            p = np.where(mk, (1 - self.smoothing) * p + self.smoothing / m[i, :n], 0.0)
            h = -_plogp(p).sum(-1)  # (K, n) entropy of each row
            js = np.empty((k, k, n))
            step = max(1, (1 << 22) // max(k * n * n, 1))  # heads per chunk: about 4M numbers at a time
            for h1 in range(0, k, step):
                mix = 0.5 * (p[h1 : h1 + step, None] + p[None])  # (chunk, K, n, n)
                js[h1 : h1 + step] = -_plogp(mix).sum(-1) - 0.5 * (h[h1 : h1 + step, None] + h[None])
            js = np.maximum(js, 0.0)
            if self.reduce == "mean":
                total += js.mean(-1)
            else:
                total += (js * rows[i, :n]).sum(-1)
            self.n_docs += 1

    def distances(self) -> np.ndarray:
        """(K, K) mean distance between heads, K = layers x heads in layer-major order (head k = layer * H + h)."""
        if self.total is None or self.n_docs == 0:
            raise ValueError("no inputs were added")
        d = self.total / self.n_docs
        return 0.5 * (d + d.T)


def head_distances(results: Iterable[AttentionResult], *, smoothing: float = 0.001, reduce: Reduce = "mean",
                   words: bool = False) -> np.ndarray:
    """(K, K) Jensen–Shannon distances between all K = layers x heads heads, averaged over ``results``.

    Examples
    --------
    >>> from attnwidgets.result import AttentionResult
    >>> a = np.stack([np.eye(2), np.eye(2), np.full((2, 2), 0.5)])[None]
    >>> d = head_distances([AttentionResult.from_arrays(a, ["x", "y"])])
    >>> bool(d[0, 1] < d[0, 2])
    True
    """
    acc = HeadDistances(smoothing, reduce)
    for result in results:
        if result.is_lazy:
            from .words import word_level

            acc.add(word_level(result) if words else result)
        else:
            acc.add_batch(AttentionBatch.from_results([result], words=words))
    return acc.distances()


def head_embedding(distances: np.ndarray, n_heads: int, *, seed: int = 0) -> pd.DataFrame:
    """2-D metric MDS of the heads from precomputed distances, as a DataFrame (layer, head, x, y).

    Parameters
    ----------
    distances : np.ndarray
        (K, K) from :func:`head_distances`, layer-major.
    n_heads : int
        Heads per layer, to label the rows.
    seed : int
        MDS random state.
    """
    import pandas as pd
    from sklearn.manifold import MDS

    d = np.asarray(distances, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] % n_heads:
        raise ValueError(f"distances must be (K, K) with K a multiple of n_heads={n_heads}, got {d.shape}")
    import inspect

    params = inspect.signature(MDS).parameters
    if "metric_mds" in params:  # scikit-learn >= 1.8 renamed the arguments
        mds = MDS(n_components=2, metric_mds=True, metric="precomputed", init="random", n_init=4,
                  random_state=seed, normalized_stress="auto")
    else:
        mds = MDS(n_components=2, metric=True, dissimilarity="precomputed", n_init=4, random_state=seed)
    xy = mds.fit_transform(d)
    k = np.arange(d.shape[0])
    return pd.DataFrame({"layer": k // n_heads, "head": k % n_heads, "x": xy[:, 0], "y": xy[:, 1]})
