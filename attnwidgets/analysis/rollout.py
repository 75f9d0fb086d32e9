"""Attention rollout (Abnar & Zuidema 2020): how much each input token reaches each position, through all layers.

Per layer the heads are fused (mean by default), the residual connection is added as the identity and the rows are
renormalised: ``Ã_l = rownorm(mean_h A_l + I)``, the same as ``0.5 A + 0.5 I`` when rows of A sum to 1. Then
``R_1 = Ã_1`` and ``R_l = Ã_l R_{l-1}``; ``R_L[i, j]`` is how much input token j reaches output position i.

Attention flow, the paper's other method, reads the same Ã_l as capacities of a layered graph (a node per token per
layer, an edge from key k in layer l-1 to query q in layer l of capacity Ã_l[q, k]) and takes the maximum flow from
each input token to each output position. It is polynomial but needs n² max-flow problems on (L+1)·n nodes, so it is
for short inputs (the paper used sentences of a few dozen tokens).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..result import AttentionResult

__all__ = ["attention_flow", "attention_rollout"]

HeadFusion = Literal["mean", "max", "min"]


def attention_rollout(
    attention: np.ndarray | AttentionResult,
    *,
    residual: bool = True,
    head_fusion: HeadFusion = "mean",
    start_layer: int = 0,
    all_layers: bool = False,
    words: bool = False,
) -> np.ndarray:
    """Roll attention out through the layers.

    Parameters
    ----------
    attention : np.ndarray or AttentionResult
        [layer, head, query, key] (L, H, n, n), or a result (its self-attention is used).
    residual : bool
        Add the identity for the residual stream and renormalise (the paper's method). Without it, plain products
        of head-fused attention.
    head_fusion : {"mean", "max", "min"}
        How heads are combined in a layer; the paper uses the mean.
    start_layer : int
        First layer to include (0-based).
    all_layers : bool
        Return every partial product, (L - start_layer, n, n), instead of the last one.
    words : bool
        Roll out word-level attention (:func:`~attnwidgets.analysis.words.word_level`) of a result instead.

    Returns
    -------
    np.ndarray
        (n, n) float64 rollout ``R[i, j]`` (rows sum to 1), or (layers, n, n) with ``all_layers``.

    Examples
    --------
    >>> a = np.zeros((2, 1, 2, 2)); a[:, 0, :, 0] = 1.0      # both layers: everything attends to token 0
    >>> attention_rollout(a).round(3).tolist()                # (0.5 A + 0.5 I) twice
    [[1.0, 0.0], [0.75, 0.25]]
    """
    steps = _layer_steps(attention, residual, head_fusion, start_layer, words)
    out = []
    rolled = np.eye(steps.shape[-1])
    for step in steps:
        rolled = step @ rolled
        out.append(rolled)
    return np.stack(out) if all_layers else rolled


def attention_flow(
    attention: np.ndarray | AttentionResult,
    *,
    residual: bool = True,
    head_fusion: HeadFusion = "mean",
    start_layer: int = 0,
    words: bool = False,
    normalize: bool = True,
    max_tokens: int = 64,
) -> np.ndarray:
    """Attention flow (Abnar & Zuidema 2020): the maximum flow from each input token to each output position.

    The layers' Ã (as in :func:`attention_rollout`) are the capacities of a layered graph: one node per token per
    layer, an edge from key k of layer l-1 to query q of layer l with capacity Ã_l[q, k]. ``F[i, j]`` is the value of
    the maximum flow from input token j to position i of the last layer. Unlike rollout, which multiplies weights
    along every path, flow is bounded by each path's narrowest edge, so it spreads credit more evenly.

    Parameters
    ----------
    attention, residual, head_fusion, start_layer, words
        As in :func:`attention_rollout`.
    normalize : bool
        Divide each row by its sum, as the paper's code does (rows then sum to 1, like rollout's). Without it, the
        raw flow values (each at most 1, the capacity into the output node).
    max_tokens : int
        Refuse longer inputs: the cost is n² max-flow problems on (layers + 1)·n nodes (about 5 s for 24 tokens
        through 6 layers on one CPU core, growing faster than n³). Raise it knowingly.

    Returns
    -------
    np.ndarray
        (n, n) float64 flow ``F[i, j]``.

    Examples
    --------
    >>> a = np.zeros((2, 1, 2, 2)); a[:, 0, :, 0] = 1.0      # both layers: everything attends to token 0
    >>> attention_flow(a, normalize=False).round(3).tolist()  # capacities Ã = [[1, 0], [.5, .5]] in both layers
    [[1.0, 0.0], [1.0, 0.5]]
    """
    steps = _layer_steps(attention, residual, head_fusion, start_layer, words)
    n = steps.shape[-1]
    if n > max_tokens:
        raise ValueError(
            f"attention flow on {n} tokens solves {n * n:,} max-flow problems; it is meant for short inputs "
            f"(max_tokens={max_tokens}). Pass max_tokens={n} to run it anyway, or use attention_rollout."
        )
    n_layers = steps.shape[0]
    size = (n_layers + 1) * n
    capacity = np.zeros((size, size))
    for layer, step in enumerate(steps):  # edge key k (layer) -> query q (layer + 1), capacity step[q, k]
        lo, hi = layer * n, (layer + 1) * n
        capacity[lo:hi, hi : hi + n] = step.T
    out = np.zeros((n, n))
    top = n_layers * n
    for i in range(n):
        for j in range(n):
            out[i, j] = max_flow(capacity, j, top + i)
    if normalize:
        sums = out.sum(-1, keepdims=True)
        out = np.divide(out, sums, out=np.zeros_like(out), where=sums > 0)
    return out


def max_flow(capacity: np.ndarray, source: int, sink: int, *, eps: float = 1e-12) -> float:
    """Value of the maximum flow from ``source`` to ``sink`` in a graph of dense non-negative ``capacity[u, v]``.

    Dinic's algorithm: breadth-first levels on the residual graph, then a blocking flow of shortest augmenting paths
    found depth first, until the sink is out of reach. Exact on real-valued capacities (residuals below ``eps`` count
    as saturated).

    >>> c = np.array([[0, 3, 2, 0], [0, 0, 1, 2], [0, 0, 0, 3], [0, 0, 0, 0]], float)
    >>> max_flow(c, 0, 3)
    5.0
    """
    residual = np.array(capacity, dtype=np.float64)
    if residual.ndim != 2 or residual.shape[0] != residual.shape[1]:
        raise ValueError(f"capacity must be a square matrix, got shape {residual.shape}")
    if (residual < 0).any():
        raise ValueError("capacities must be non-negative")
    size = residual.shape[0]
    if source == sink:
        raise ValueError("source and sink must differ")
    total = 0.0
    while True:
        level = np.full(size, -1)
        level[source] = 0
        front = np.array([source])
        while front.size and level[sink] < 0:
            reach = np.flatnonzero((residual[front] > eps).any(0) & (level < 0))
            level[reach] = level[front[0]] + 1
            front = reach
        if level[sink] < 0:
            return total
        # Admissible arcs per node (computed when first reached) and a pointer to the next one to try.
        arcs: dict[int, np.ndarray] = {}
        ptr = np.zeros(size, dtype=np.int64)
        path = [source]
        while path:
            u = path[-1]
            if u == sink:
                us, vs = np.array(path[:-1]), np.array(path[1:])
                push = residual[us, vs].min()
                residual[us, vs] -= push
                residual[vs, us] += push
                total += float(push)
                path = [source]
                continue
            if u not in arcs:
                arcs[u] = np.flatnonzero((level == level[u] + 1) & (residual[u] > eps))
            nxt = arcs[u]
            while ptr[u] < nxt.size and (residual[u, nxt[ptr[u]]] <= eps or level[nxt[ptr[u]]] < 0):
                ptr[u] += 1
            if ptr[u] < nxt.size:
                path.append(int(nxt[ptr[u]]))
            else:  # dead end: leave it out for the rest of this phase and try the parent's next arc
                level[u] = -1
                path.pop()
                if path:
                    ptr[path[-1]] += 1


def _layer_steps(
    attention: np.ndarray | AttentionResult, residual: bool, head_fusion: HeadFusion, start_layer: int, words: bool
) -> np.ndarray:
    """Each layer's head-fused attention from ``start_layer`` on, with the residual added and rows renormalised when
    ``residual``: (layers, n, n) float64."""
    if words:
        if not isinstance(attention, AttentionResult):
            raise TypeError("words=True needs an AttentionResult (it knows which pieces form a word)")
        from .words import word_level

        attention = word_level(attention)
    a = attention.attention if isinstance(attention, AttentionResult) else np.asarray(attention)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"rollout and flow need square self-attention [layer, head, query, key], got shape {a.shape}")
    if not 0 <= start_layer < a.shape[0]:
        raise ValueError(f"start_layer must be in 0..{a.shape[0] - 1}, got {start_layer}")
    if head_fusion == "mean":
        fused = a.mean(1, dtype=np.float64)
    elif head_fusion == "max":
        fused = a.max(1).astype(np.float64)
    elif head_fusion == "min":
        fused = a.min(1).astype(np.float64)
    else:
        raise ValueError(f"head_fusion must be 'mean', 'max' or 'min', got {head_fusion!r}")
    fused = fused[start_layer:]
    if residual:
        fused = fused + np.eye(fused.shape[-1])
        fused /= fused.sum(-1, keepdims=True)
    return fused
