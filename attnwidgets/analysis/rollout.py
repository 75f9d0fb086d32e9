"""Attention rollout (Abnar & Zuidema 2020): how much each input token reaches each position, through all layers.

Per layer the heads are fused (mean by default), the residual connection is added as the identity and the rows are
renormalised: ``Ã_l = rownorm(mean_h A_l + I)``, the same as ``0.5 A + 0.5 I`` when rows of A sum to 1. Then
``R_1 = Ã_1`` and ``R_l = Ã_l R_{l-1}``; ``R_L[i, j]`` is how much input token j reaches output position i.

Attention flow, the paper's other method, reads the same Ã_l as capacities of a layered graph (a node per token per
layer, an edge from key k in layer l-1 to query q in layer l of capacity Ã_l[q, k]) and takes the maximum flow from
each input token to each output position. It is polynomial but needs n² max-flow problems on (L+1)·n nodes, so it is
for short inputs (the paper used sentences of a few dozen tokens).

At any length: the full rollout is an (n, n) product of (n, n) matrices, n³ work and n² float64 memory per layer.
``attention_rollout(result, rows=[i, ...])`` rolls out chosen query rows only: a row vector ``v`` (one-hot at ``i``)
goes through the layers from the last down, ``v <- v Ã_l``, each ``Ã_l`` read a block of rows at a time, so the cost is
O(L · H · n²) (that of reading the attention once) and the memory one block. Its rows equal those of the full
rollout. A long input's full rollout (``result.is_lazy``) is built from blocks too, but only while its (n, n) float64
matrices fit :func:`~attnwidgets.attention_stack.dense_budget`; above that it raises
:class:`~attnwidgets.attention_stack.AttentionTooLargeError` and points to ``rows=``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np

from ..attention_stack import AttentionTooLargeError, dense_budget, format_bytes
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
    rows: int | Sequence[int] | np.ndarray | None = None,
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
    rows : int or sequence of int, optional
        Roll out these query rows (output positions) only: ``R[rows]``, computed as row vectors through the layers in
        O(L · H · n²) with one block of attention in memory, at any length. Negative indices count from the end.
        Required for a long input whose full (n, n) rollout does not fit the dense budget.

    Returns
    -------
    np.ndarray
        (n, n) float64 rollout ``R[i, j]`` (rows sum to 1), or (layers, n, n) with ``all_layers``. With ``rows``:
        (k, n) for k rows ((n,) for one int), or (layers, k, n) with ``all_layers``.

    Examples
    --------
    >>> a = np.zeros((2, 1, 2, 2)); a[:, 0, :, 0] = 1.0      # both layers: everything attends to token 0
    >>> attention_rollout(a).round(3).tolist()                # (0.5 A + 0.5 I) twice
    [[1.0, 0.0], [0.75, 0.25]]
    >>> attention_rollout(a, rows=1).round(3).tolist()        # the last row only, as a vector through the layers
    [0.75, 0.25]
    """
    source = _source(attention, words)
    n_layers, n = _check(source, start_layer, head_fusion)
    if rows is not None:
        return _rollout_rows(source, _row_index(rows, n), residual, head_fusion, start_layer, all_layers)
    if isinstance(source, AttentionResult) and source.is_lazy:
        layers = n_layers - start_layer
        need = (2 + (layers if all_layers else 0)) * n * n * 8
        if need > dense_budget():
            raise AttentionTooLargeError(
                f"the full rollout of {n} tokens needs {format_bytes(need)} of (n, n) float64 matrices and n³ work per "
                f"layer, more than the dense budget of {format_bytes(dense_budget())}. Roll out the query rows you "
                f"will look at instead: attention_rollout(result, rows=[i, ...]) costs O(layers · n²) at any length "
                f"(or raise the budget with attnwidgets.runner.set_dense_budget(nbytes))"
            )
    out = []
    rolled: np.ndarray | None = None
    for step in _steps(source, residual, head_fusion, start_layer):
        rolled = step if rolled is None else step @ rolled
        out.append(rolled)
    assert rolled is not None
    return np.stack(out) if all_layers else rolled


def _row_index(rows: int | Sequence[int] | np.ndarray, n: int) -> np.ndarray | int:
    """Validated row indices (an int stays an int), negatives counted from the end."""
    scalar = isinstance(rows, (int, np.integer)) and not isinstance(rows, bool)
    idx = np.atleast_1d(np.asarray(rows))
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise ValueError(f"rows must be query positions (an int or a list of ints), got {rows!r}")
    bad = idx[(idx < -n) | (idx >= n)]
    if bad.size:
        raise IndexError(f"row {int(bad[0])} is out of range: the input has {n} positions (0..{n - 1})")
    idx = np.where(idx < 0, idx + n, idx).astype(np.int64)
    return int(idx[0]) if scalar else idx


def _rollout_rows(source: np.ndarray | AttentionResult, rows: np.ndarray | int, residual: bool,
                  head_fusion: HeadFusion, start_layer: int, all_layers: bool) -> np.ndarray:
    """Rows of the rollout as vectors through the layers, last layer first: ``v <- v Ã_l``.

    With ``all_layers`` every partial product's rows ride along in one pass: the vector for "rollout up to layer l"
    joins at layer l, so each layer's attention is still read once.
    """
    idx = np.atleast_1d(rows)
    n_layers, n = _check(source, start_layer, head_fusion)
    k = idx.size
    start_vec = np.zeros((1, k, n))
    start_vec[0, np.arange(k), idx] = 1.0
    vectors = np.zeros((0, k, n))  # (partial products alive, k, n); [0] ends at the layer being read
    for layer in range(n_layers - 1, start_layer - 1, -1):
        if all_layers or layer == n_layers - 1:
            vectors = np.concatenate([start_vec, vectors])
        out = np.zeros_like(vectors)
        for start, stop, step in _step_blocks(source, layer, residual, head_fusion):
            out += vectors[..., start:stop] @ step  # (m, k, r) @ (r, n)
        vectors = out
    scalar = isinstance(rows, int)
    if all_layers:
        return vectors[:, 0] if scalar else vectors  # (layers, n) or (layers, k, n)
    return vectors[0, 0] if scalar else vectors[0]  # (n,) or (k, n)


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
    source = _source(attention, words)
    _, n = _check(source, start_layer, head_fusion)
    if n > max_tokens:
        raise ValueError(
            f"attention flow on {n} tokens solves {n * n:,} max-flow problems; it is meant for short inputs "
            f"(max_tokens={max_tokens}). Pass max_tokens={n} to run it anyway, or use attention_rollout."
        )
    steps = np.stack(list(_steps(source, residual, head_fusion, start_layer)))
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


def _source(attention: np.ndarray | AttentionResult, words: bool) -> np.ndarray | AttentionResult:
    """The attention to roll out: a result (read in blocks, at any length) or a [layer, head, query, key] array."""
    if words:
        if not isinstance(attention, AttentionResult):
            raise TypeError("words=True needs an AttentionResult (it knows which pieces form a word)")
        from .words import word_level

        return word_level(attention)
    return attention if isinstance(attention, AttentionResult) else np.asarray(attention)


def _check(source: np.ndarray | AttentionResult, start_layer: int, head_fusion: HeadFusion) -> tuple[int, int]:
    """(layers, n) after checking the attention is square self-attention and the options make sense."""
    shape = source.attention_shape() if isinstance(source, AttentionResult) else source.shape
    if len(shape) != 4 or shape[-1] != shape[-2]:
        raise ValueError(f"rollout and flow need square self-attention [layer, head, query, key], got shape {shape}")
    if not 0 <= start_layer < shape[0]:
        raise ValueError(f"start_layer must be in 0..{shape[0] - 1}, got {start_layer}")
    if head_fusion not in ("mean", "max", "min"):
        raise ValueError(f"head_fusion must be 'mean', 'max' or 'min', got {head_fusion!r}")
    return int(shape[0]), int(shape[-1])


def _step_blocks(source: np.ndarray | AttentionResult, layer: int, residual: bool, head_fusion: HeadFusion
                 ) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(start, stop, rows)`` of layer ``layer``'s Ã (rows ``start..stop``, float64), a block at a time."""
    if isinstance(source, AttentionResult):
        blocks: Iterator[tuple[int, int, np.ndarray]] = (
            (start, stop, block) for _, start, stop, block in source.iter_blocks(layers=[layer]))
    else:
        blocks = iter([(0, source.shape[2], source[layer])])
    for start, stop, block in blocks:
        if head_fusion == "mean":
            fused = block.mean(0, dtype=np.float64)
        elif head_fusion == "max":
            fused = block.max(0).astype(np.float64)
        else:
            fused = block.min(0).astype(np.float64)
        if residual:
            fused[np.arange(stop - start), np.arange(start, stop)] += 1.0
            fused /= fused.sum(-1, keepdims=True)
        yield start, stop, fused


def _steps(source: np.ndarray | AttentionResult, residual: bool, head_fusion: HeadFusion, start_layer: int
           ) -> Iterator[np.ndarray]:
    """Each layer's (n, n) float64 Ã from ``start_layer`` on, one at a time."""
    n_layers, n = _check(source, start_layer, head_fusion)
    for layer in range(start_layer, n_layers):
        step = np.empty((n, n))
        for start, stop, rows in _step_blocks(source, layer, residual, head_fusion):
            step[start:stop] = rows
        yield step
