"""Turning attention into what a view draws: causal masks as NaN, block-max overviews, thumbnails, regions.

Pure numpy, shared by AttentionHeatmap (zoom and pan over long inputs), ModelView (thumbnails) and their static
twins (:func:`attnwidgets.plots.plot_model_view` draws the same causal mask).
A masked cell (a decoder query looking at a future key) is NaN, which ``js/src/draw/canvas.ts`` paints light grey,
so a causal mask looks different from a weight that happens to be 0.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..attention_stack import OVERVIEW_ABOVE, OVERVIEW_SIDE, LazyStack, overview_factor, stack_rows_at
from ..result import AttentionResult

__all__ = ["REDUCTIONS", "Reduced", "block_reduce", "block_reduce_rows", "check_reduce", "head_overview", "is_causal",
           "kv_group", "kv_group_size", "mask_future", "overview", "reduce_factor", "reduce_head", "region",
           "region_of", "result_thumbnails", "sink_keys", "thumbnails"]

#: Largest region (in cells) one "region" request may ask for: a 512 x 512 tile of float32 is 1 MiB.
MAX_REGION_CELLS = 512 * 512


def is_causal(result: AttentionResult, kind: str) -> bool:
    """True when ``kind`` attention of ``result`` is causal: a decoder's self-attention, or an encoder-decoder's
    decoder self-attention. Cross-attention and encoder attention see every key.

    Examples
    --------
    >>> import numpy as np
    >>> r = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"], kind="decoder")
    >>> is_causal(r, "self"), is_causal(AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"]), "self")
    (True, False)
    """
    if kind == "decoder":
        return True
    return kind == "self" and result.model.kind == "decoder"


def mask_future(matrix: np.ndarray, q0: int = 0, k0: int = 0) -> np.ndarray:
    """A float32 copy of a (query, key) block with NaN where key > query (the future a causal head cannot see).

    ``q0``/``k0`` are the block's offsets in the full matrix, so a region of a long input is masked in place.

    Examples
    --------
    >>> mask_future(np.ones((2, 3), np.float32)).tolist()
    [[1.0, nan, nan], [1.0, 1.0, nan]]
    """
    out = np.array(matrix, dtype=np.float32, copy=True)
    rows = np.arange(out.shape[-2])[:, None] + q0
    cols = np.arange(out.shape[-1])[None, :] + k0
    out[..., cols > rows] = np.nan
    return out


def block_reduce(matrix: np.ndarray, factor: int, how: str = "max") -> np.ndarray:
    """Shrink the last two axes by ``factor`` taking the max (or mean) of each block; NaN cells are ignored.

    Edge blocks may be partial: a (5, 7) matrix with factor 2 gives (3, 4). A block that is all NaN stays NaN.
    Block max keeps a single sharp weight visible (a diagonal stays a diagonal); mean shows mass.

    Examples
    --------
    >>> m = np.arange(35, dtype=np.float32).reshape(5, 7)
    >>> block_reduce(m, 2).tolist()
    [[8.0, 10.0, 12.0, 13.0], [22.0, 24.0, 26.0, 27.0], [29.0, 31.0, 33.0, 34.0]]
    """
    if factor < 1:
        raise ValueError(f"factor must be >= 1, got {factor}")
    a = np.asarray(matrix, dtype=np.float32)
    if factor == 1:
        return a.copy()
    *lead, rows, cols = a.shape
    r2, c2 = math.ceil(rows / factor), math.ceil(cols / factor)
    padded = np.full((*lead, r2 * factor, c2 * factor), np.nan, dtype=np.float32)
    padded[..., :rows, :cols] = a
    blocks = padded.reshape(*lead, r2, factor, c2, factor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks: NaN is the answer
        if how == "max":
            return np.nanmax(blocks, axis=(-3, -1))
        if how == "mean":
            return np.nanmean(blocks, axis=(-3, -1))
    raise ValueError(f"how must be 'max' or 'mean', got {how!r}")


def thumbnails(attention: np.ndarray, side: int = 32, how: str = "max") -> tuple[np.ndarray, int]:
    """Every head as a small uint8 picture: ``(thumbs [layer, head, tq, tk], factor)``.

    Each map is block-reduced so that neither side exceeds ``side``, then scaled so that its own maximum is 255
    (every thumbnail uses its full colour range, like the full heatmap does). NaN (masked) becomes 0.

    Examples
    --------
    >>> a = np.zeros((1, 1, 3, 5), np.float32); a[0, 0, 1, 4] = 0.5; a[0, 0, 0, 0] = 0.25
    >>> t, f = thumbnails(a, side=4)
    >>> f, t.shape, t[0, 0].tolist()
    (2, (1, 1, 2, 3), [[128, 0, 255], [0, 0, 0]])
    """
    a = np.asarray(attention, dtype=np.float32)
    factor = max(1, math.ceil(max(a.shape[-2:]) / side))
    small = np.nan_to_num(block_reduce(a, factor, how), nan=0.0)
    top = small.max(axis=(-2, -1), keepdims=True)
    scaled = np.where(top > 0, small / np.where(top > 0, top, 1.0), 0.0)
    return np.round(scaled * 255).astype(np.uint8), factor


def region(matrix: np.ndarray, q0: int, q1: int, k0: int, k1: int) -> np.ndarray:
    """The block ``matrix[q0:q1, k0:k1]`` of one head, clipped to the matrix, as float32.

    Raises ``ValueError`` for an empty or oversized request (more than ``MAX_REGION_CELLS`` cells), so that a bad
    message from the page cannot make the kernel copy a whole long-context matrix.

    Examples
    --------
    >>> region(np.arange(35).reshape(5, 7), 1, 3, 5, 99).tolist()
    [[12.0, 13.0], [19.0, 20.0]]
    """
    rows, cols = matrix.shape[-2:]
    q0, q1 = max(0, int(q0)), min(rows, int(q1))
    k0, k1 = max(0, int(k0)), min(cols, int(k1))
    if q1 <= q0 or k1 <= k0:
        raise ValueError(f"empty region: queries {q0}:{q1}, keys {k0}:{k1} of a {rows} x {cols} map")
    if (q1 - q0) * (k1 - k0) > MAX_REGION_CELLS:
        raise ValueError(
            f"region {q1 - q0} x {k1 - k0} is larger than {MAX_REGION_CELLS} cells; ask for smaller tiles"
        )
    return np.ascontiguousarray(matrix[..., q0:q1, k0:k1], dtype=np.float32)


# OVERVIEW_ABOVE (1024 tokens: past it a head is sent as a block-max overview, detail fetched by region) and
# OVERVIEW_SIDE (512: the overview's longest side) live with the stack, whose runner makes every head's overview.


def overview(matrix: np.ndarray, above: int = OVERVIEW_ABOVE, side: int = OVERVIEW_SIDE) -> tuple[np.ndarray, int]:
    """``(matrix, 1)`` for a short input; for a long one ``(block max, factor)`` with sides at most ``side``.

    Examples
    --------
    >>> m, f = overview(np.ones((2000, 1500), np.float32))
    >>> m.shape, f
    ((500, 375), 4)
    """
    rows, cols = matrix.shape[-2:]
    if max(rows, cols) <= above:
        return np.asarray(matrix, dtype=np.float32), 1
    factor = math.ceil(max(rows, cols) / side)
    return block_reduce(matrix, factor, "max"), factor


# -- the same pictures read blockwise from a result (any length, dense or lazy) ----------------------------------------

#: Work budget of one head's overview, in attention weights computed: past it (about a 4,096 x 4,096 head), each
#: overview row is reduced from a run of query rows in the middle of its block instead of all of them.
OVERVIEW_BUDGET = 1 << 24
#: Work budget of one head's own pass for a view's first map while the whole pass is pending
#: (:meth:`LazyStack.head_summary`), in weights computed: up to an 8,192 x 8,192 head (~0.2 s of one core), every row
#: read and the map exact; past it the first map samples rows as above, so its time stays bounded at any length.
FIRST_MAP_BUDGET = 1 << 26
#: Work budget of a model view's thumbnails (all layers and heads together), in weights computed.
THUMB_BUDGET = 1 << 25
#: Rows of one head read at a time (a multiple of the reduction factor is taken): 1,024 rows of 8k keys = 32 MB.
_ROW_CELLS = 1 << 23
#: Sampled rows read in one product by a sampled overview (a few hundred: big enough for an efficient matrix product,
#: small enough that a causal map's blocks do not compute many keys past their last row).
_SAMPLED_ROWS = 256

REDUCTIONS = ("max", "mean")


@dataclass(frozen=True)
class Reduced:
    """A map (or every head's maps) reduced by ``factor`` in both directions, read from a result in row blocks.

    Attributes
    ----------
    matrix : np.ndarray
        float32 ``(rows, cols)`` for one head or a mean, ``(head, rows, cols)`` for all heads; NaN where a causal
        mask hides every key of a block.
    factor : int
        Cells of the full map per reduced cell, along each side (1: the map itself).
    rows_used : int
        Query rows read in each block of ``factor`` rows: ``factor`` when every row was read (exact block max/mean);
        fewer when the work budget made it sample a run of rows in the middle of each block.
    vmax : float
        The largest value of ``matrix``, or the largest over keys other than ``discount`` when they were given.
    """

    matrix: np.ndarray
    factor: int
    rows_used: int
    vmax: float

    @property
    def exact(self) -> bool:
        return self.rows_used >= self.factor


def check_reduce(how: str) -> str:
    """``how`` when it is "max" or "mean", else a ValueError that says so."""
    if how not in REDUCTIONS:
        raise ValueError(f"reduce must be 'max' or 'mean', got {how!r}")
    return how


def reduce_factor(n_queries: int, n_keys: int, above: int = OVERVIEW_ABOVE, side: int = OVERVIEW_SIDE) -> int:
    """Cells per overview cell along each side: 1 up to ``above`` tokens, else what brings the longer side to ``side``.

    >>> reduce_factor(500, 500), reduce_factor(2000, 1500), reduce_factor(8192, 8192)
    (1, 4, 16)
    """
    return overview_factor(n_queries, n_keys, above, side)


def sink_keys(discount: Any, n_keys: int) -> tuple[int, ...]:
    """The key indices a ``discount_sinks`` option names: ``True`` is key 0, ``False``/``None``/``()`` none.

    >>> sink_keys(True, 5), sink_keys([3, 0, 3], 5), sink_keys(False, 5)
    ((0,), (0, 3), ())
    """
    if discount is None or discount is False:
        return ()
    if discount is True:
        return (0,) if n_keys else ()
    try:
        keys = sorted({int(k) for k in discount})
    except (TypeError, ValueError):
        raise TypeError(f"discount_sinks must be True/False or a list of key indices, got {discount!r}") from None
    bad = [k for k in keys if not 0 <= k < n_keys]
    if bad:
        raise ValueError(f"discount_sinks names keys {bad} outside the {n_keys} keys")
    return tuple(keys)


def reduce_head(result: AttentionResult, kind: str, layer: int, head: int | None, factor: int, how: str = "max", *,
                budget: int | None = None, discount: tuple[int, ...] = ()) -> Reduced:
    """One head's map (``head=-1``: the heads' mean; ``None``: every head) block-reduced by ``factor``, read from
    ``result`` a block of rows at a time, never as the dense ``[layer, head, query, key]`` array.

    A causal head's future weights are 0 (as softmax leaves them); they count as masked (NaN when a whole block is).
    Equal to ``block_reduce(mask_future(dense map), factor, how)`` when the work (queries x keys x heads) fits
    ``budget`` (default :data:`OVERVIEW_BUDGET`); past it each block of ``factor`` query rows is represented by a
    run of ``rows_used`` rows at its middle, so the time stays bounded at any length (tiles are still exact).

    Examples
    --------
    >>> m = np.array([[.1, .2, .3, .4], [.4, .3, .2, .1], [.25] * 4, [.7, .1, .1, .1]], np.float32)
    >>> r = AttentionResult.from_arrays(m, list("abcd"))
    >>> red = reduce_head(r, "self", 0, 0, 2)
    >>> red.matrix.astype(float).round(3).tolist(), red.factor, red.exact
    ([[0.4, 0.4], [0.7, 0.25]], 2, True)
    >>> reduce_head(r, "self", 0, 0, 2, "mean").matrix.astype(float).round(3).tolist()
    [[0.25, 0.25], [0.325, 0.175]]
    """
    check_reduce(how)
    _L, H, T, S = result.attention_shape(kind)  # type: ignore[arg-type]
    n_heads = H if head is None else 1
    budget = OVERVIEW_BUDGET if budget is None else int(budget)
    n_blocks = math.ceil(T / factor) if T else 0
    per_block = factor if T * S * n_heads <= budget else max(1, min(factor, budget // max(1, n_blocks * S * n_heads)))
    kept = _kept_overview(result, kind, layer, head, factor, how, discount,
                          one_head=per_block < factor and T * S <= FIRST_MAP_BUDGET)
    if kept is not None:
        return kept
    causal = is_causal(result, kind)
    cols = math.ceil(S / factor)
    lead = (H,) if head is None else ()
    out = np.full((*lead, n_blocks, cols), np.nan, np.float32)
    rest = np.full_like(out, np.nan) if discount else None

    def reduce_into(w: np.ndarray, rows: np.ndarray, first_block: int, span: int) -> None:
        w = np.asarray(w, np.float32)
        n = math.ceil(rows.size / span)
        out[..., first_block:first_block + n, :] = _reduce_rows(w, rows, span, factor, how, causal)
        if rest is not None:
            w = w.copy() if not w.flags.writeable else w
            w[..., list(discount)] = 0.0
            rest[..., first_block:first_block + n, :] = _reduce_rows(w, rows, span, factor, how, causal)

    if per_block >= factor:
        step = max(factor, (max(1, _ROW_CELLS // max(1, S * n_heads)) // factor) * factor)
        for start in range(0, T, step):
            stop = min(T, start + step)
            reduce_into(result.rows(layer, start, stop, kind=kind, head=head),  # type: ignore[arg-type]
                        np.arange(start, stop), start // factor, factor)
    else:
        # each block of ``factor`` rows is represented by the run of ``per_block`` rows at its middle; those runs are
        # read together, many blocks per product (a few hundred rows: one product per run was most of the time)
        stack = result.stack(kind)  # type: ignore[arg-type]
        starts = [b * factor + (min(T, (b + 1) * factor) - b * factor - per_block) // 2 for b in range(n_blocks)]
        whole = n_blocks if T - (n_blocks - 1) * factor >= per_block else n_blocks - 1  # blocks with per_block rows
        chunk = max(1, min(_ROW_CELLS // max(1, per_block * S * n_heads), _SAMPLED_ROWS // per_block))
        for b in range(0, whole, chunk):
            rows = (np.asarray(starts[b:min(whole, b + chunk)], np.int64)[:, None] + np.arange(per_block)).ravel()
            reduce_into(stack_rows_at(stack, layer, rows, head), rows, b, per_block)
        if whole < n_blocks:  # the last block is shorter than a run: all of its rows
            b0 = whole * factor
            reduce_into(result.rows(layer, b0, T, kind=kind, head=head),  # type: ignore[arg-type]
                        np.arange(b0, T), whole, T - b0)
    top = rest if rest is not None else out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        vmax = float(np.nanmax(top)) if top.size and np.isfinite(top).any() else 0.0
    return Reduced(out, factor, min(per_block, factor), vmax)


def _kept_overview(result: AttentionResult, kind: str, layer: int, head: int | None, factor: int, how: str,
                   discount: tuple[int, ...], *, one_head: bool = False) -> Reduced | None:
    """The overview the runner made with the weights (``stack.summary``, every head at once, all rows read), when it
    is made and is the one asked for: a lookup, not a rebuild. While that pass is pending (a view that opens starts
    it in the background, :meth:`LazyStack.warm_summary`; never waited for) and ``one_head`` says the rows would be
    sampled and the head fits :data:`FIRST_MAP_BUDGET`, one head's map comes from the same maker run over that head
    alone (:meth:`LazyStack.head_summary`, about 1 / (L x H) of the pass, every row read). None otherwise: the
    caller reads rows."""
    stack = result.stack(kind)  # type: ignore[arg-type]
    if not isinstance(stack, LazyStack):
        return None
    summary = stack.summary_made
    if not summary and one_head and head is not None and head >= 0 and discount in ((), (0,)):
        try:
            summary = stack.head_summary(layer, head)  # this head of this layer only: index 0 and 0 in its arrays
        except MemoryError:  # the device has no room for one head's block (DeviceMemoryError): read rows instead
            return None
        layer, head = 0, 0
    if not summary or "overview_max" not in summary or int(summary["factor"]) != factor \
            or bool(summary["causal"]) != is_causal(result, kind) or discount not in ((), (0,)):
        return None
    if head == -1 and how == "max":
        if discount:
            return None
        matrix = summary["overview_head_max"][layer].astype(np.float32)
        rest = None
    else:
        name = "overview_max" if how == "max" else "overview_mean"
        every = summary[name][layer].astype(np.float32)  # (H, rows, cols)
        matrix = every if head is None else every.mean(0) if head == -1 else every[head]
        rest = None
        if discount:
            first = summary[f"{name}_rest0"][layer].astype(np.float32)  # (H, rows)
            rest = matrix.copy()
            rest[..., 0] = first if head is None else first.mean(0) if head == -1 else first[head]
    top = rest if rest is not None else matrix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        vmax = float(np.nanmax(top)) if top.size and np.isfinite(top).any() else 0.0
    return Reduced(matrix, factor, factor, vmax)


def _reduce_rows(w: np.ndarray, rows: np.ndarray, span: int, factor: int, how: str, causal: bool) -> np.ndarray:
    """``block_reduce_rows(mask_future(w), span, factor, how)`` for rows ``rows`` of a map whose masked (future)
    weights are 0, without NaN-aware passes: max and sum run over contiguous axes, a block's visible cells are
    counted from the causal rule, and a block with none is NaN."""
    *lead, r, c = w.shape
    r2, c2 = math.ceil(r / span), math.ceil(c / factor)
    if r2 * span != r or c2 * factor != c:
        padded = np.zeros((*lead, r2 * span, c2 * factor), np.float32)
        padded[..., :r, :c] = w
        w = padded
    blocks = w.reshape(*lead, r2, span, c2, factor)
    first = np.arange(c2) * factor
    width = np.minimum(factor, c - first)
    if causal:
        visible = np.clip(rows[:, None] + 1 - first[None, :], 0, width[None, :])
    else:
        visible = np.broadcast_to(width[None, :], (r, c2))
    count = np.zeros((r2 * span, c2), np.int64)
    count[:r] = visible
    count = count.reshape(r2, span, c2).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if how == "max":
            out = _max_last(blocks.max(axis=-3))  # rows first (an elementwise max of whole rows), then the block's keys
        else:
            out = blocks.sum(axis=-1, dtype=np.float32).sum(axis=-2) / count.astype(np.float32)
    return np.where(count > 0, out, np.float32(np.nan)).astype(np.float32, copy=False)


def _max_last(x: np.ndarray) -> np.ndarray:
    """``x.max(-1)`` (NaN propagated the same way) for a short last axis, as elementwise maxima of its columns: numpy
    reduces a short contiguous axis several times slower than it compares whole arrays."""
    out = x[..., 0].copy()
    for i in range(1, x.shape[-1]):
        np.maximum(out, x[..., i], out=out)
    return out


def block_reduce_rows(rows: np.ndarray, row_span: int, col_factor: int, how: str) -> np.ndarray:
    """Reduce ``row_span`` rows to one and ``col_factor`` columns to one (NaN ignored): the row direction of a
    sampled block counts only the rows read.

    >>> block_reduce_rows(np.arange(12, dtype=np.float32).reshape(2, 6), 2, 3, "max").tolist()
    [[8.0, 11.0]]
    """
    a = np.asarray(rows, dtype=np.float32)
    *lead, r, c = a.shape
    r2, c2 = math.ceil(r / row_span), math.ceil(c / col_factor)
    if r2 * row_span != r or c2 * col_factor != c:
        padded = np.full((*lead, r2 * row_span, c2 * col_factor), np.nan, np.float32)
        padded[..., :r, :c] = a
        a = padded
    blocks = a.reshape(*lead, r2, row_span, c2, col_factor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks: NaN is the answer
        return np.nanmax(blocks, axis=(-3, -1)) if how == "max" else np.nanmean(blocks, axis=(-3, -1))


def head_overview(result: AttentionResult, kind: str, layer: int, head: int, how: str = "max", *,
                  above: int = OVERVIEW_ABOVE, side: int = OVERVIEW_SIDE, budget: int | None = None,
                  discount: tuple[int, ...] = ()) -> Reduced:
    """What a heatmap draws for one head at any length: the map itself up to ``above`` tokens, else its block max
    (or mean) with sides at most ``side``, read in row blocks (see :func:`reduce_head`).

    Examples
    --------
    >>> r = AttentionResult.from_arrays(np.full((1, 1, 2000, 2000), 1 / 2000, np.float32), ["t"] * 2000)
    >>> red = head_overview(r, "self", 0, 0)
    >>> red.matrix.shape, red.factor, red.exact
    ((500, 500), 4, True)
    """
    _L, _H, T, S = result.attention_shape(kind)  # type: ignore[arg-type]
    return reduce_head(result, kind, layer, head, reduce_factor(T, S, above, side), how, budget=budget,
                       discount=discount)


def region_of(result: AttentionResult, kind: str, layer: int, head: int, q0: int, q1: int, k0: int,
              k1: int) -> tuple[np.ndarray, int, int]:
    """A tile of one head at full detail, ``(block, q0, k0)``: only its rows are computed, NaN where causal.

    The tile is clipped to the map; a tile wholly outside it, or larger than ``MAX_REGION_CELLS``, is a
    ValueError that says which (the page shows it).

    Examples
    --------
    >>> r = AttentionResult.from_arrays(np.eye(6, dtype=np.float32), list("abcdef"))
    >>> region_of(r, "self", 0, 0, 1, 3, 2, 99)[0].tolist()
    [[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
    """
    _L, _H, T, S = result.attention_shape(kind)  # type: ignore[arg-type]
    q0, q1, k0, k1 = int(q0), int(q1), int(k0), int(k1)
    if q1 <= 0 or k1 <= 0 or q0 >= T or k0 >= S or q1 <= q0 or k1 <= k0:
        raise ValueError(f"tile queries {q0}:{q1}, keys {k0}:{k1} is outside the {T} x {S} map of layer {layer}")
    a0, a1, b0, b1 = max(0, q0), min(T, q1), max(0, k0), min(S, k1)
    if (a1 - a0) * (b1 - b0) > MAX_REGION_CELLS:
        raise ValueError(f"region {a1 - a0} x {b1 - b0} is larger than {MAX_REGION_CELLS} cells; ask for smaller tiles")
    block = np.ascontiguousarray(result.rows(layer, a0, a1, kind=kind, head=head)[:, b0:b1], np.float32)  # type: ignore[arg-type]
    if is_causal(result, kind):
        block = mask_future(block, a0, b0)
    return block, a0, b0


def result_thumbnails(result: AttentionResult, kind: str, side: int = 32, how: str = "max", *,
                      budget: int | None = None) -> tuple[np.ndarray, int, int]:
    """Every head as a small uint8 picture, read from ``result`` in row blocks: ``(thumbs, factor, rows_used)``.

    The same pictures as :func:`thumbnails` of the dense array (NaN, the causal future, becomes 0) when the work
    fits ``budget`` (default :data:`THUMB_BUDGET`); past it each block of rows is represented by a run of
    ``rows_used`` rows at its middle.

    Examples
    --------
    >>> a = np.zeros((5, 5), np.float32); a[0, 0] = a[1, 4] = a[2, 2] = a[3, 3] = 1; a[4, :2] = 0.5
    >>> t, f, used = result_thumbnails(AttentionResult.from_arrays(a, list("abcde")), "self", side=4)
    >>> f, t.shape, t[0, 0].tolist(), used
    (2, (1, 1, 3, 3), [[255, 0, 255], [0, 255, 0], [128, 0, 0]], 2)
    """
    L, _H, T, S = result.attention_shape(kind)  # type: ignore[arg-type]
    factor = max(1, math.ceil(max(T, S) / side))
    budget = THUMB_BUDGET if budget is None else int(budget)
    per_layer = max(1, budget // max(1, L))
    stack = result.stack(kind)  # type: ignore[arg-type]
    summary = stack.summary_made if isinstance(stack, LazyStack) else {}
    kept = int(summary["factor"]) if "overview_max" in summary else 0
    if how == "max" and kept > 1 and factor % kept == 0 and bool(summary["causal"]) == is_causal(result, kind):
        # the runner's every-head block max, reduced further: a max of maxes is the max
        small = block_reduce_rows(summary["overview_max"].astype(np.float32), factor // kept, factor // kept, "max")
        used = factor
    else:
        parts = [reduce_head(result, kind, layer, None, factor, how, budget=per_layer) for layer in range(L)]
        small = np.stack([p.matrix for p in parts])
        used = min(p.rows_used for p in parts)
    small = np.nan_to_num(small, nan=0.0)
    top = small.max(axis=(-2, -1), keepdims=True)
    scaled = np.where(top > 0, small / np.where(top > 0, top, 1.0), 0.0)
    return np.round(scaled * 255).astype(np.uint8), factor, used


def kv_group(result: AttentionResult, head: int, kind: str = "self") -> int | None:
    """The key/value head query head ``head`` reads (grouped-query attention), or None when every head has its own.

    >>> from attnwidgets.result import ModelInfo
    >>> r = AttentionResult.from_arrays(np.full((1, 4, 2, 2), 0.5, np.float32), ["a", "b"])
    >>> kv_group(r, 3), kv_group(r.replace(model=ModelInfo("m", "encoder", 1, 4, 2, n_kv_heads=2)), 3)
    (None, 1)
    """
    size = kv_group_size(result, kind)
    return None if size <= 1 or head < 0 else head // size


def kv_group_size(result: AttentionResult, kind: str = "self") -> int:
    """Query heads per key/value head: 1 without grouped-query attention (``model.n_kv_heads`` 0 or equal to heads).

    >>> from attnwidgets.result import ModelInfo
    >>> kv_group_size(AttentionResult.from_arrays(np.full((1, 4, 2, 2), 0.5, np.float32), ["a", "b"]))
    1
    """
    n_kv = int(getattr(result.model, "n_kv_heads", 0) or 0)
    n_heads = result.attention_shape(kind)[1]  # type: ignore[arg-type]
    if n_kv <= 0 or n_kv >= n_heads or n_heads % n_kv:
        return 1
    return n_heads // n_kv
