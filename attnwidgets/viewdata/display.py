"""Turning attention into what a view draws: causal masks as NaN, block-max overviews, thumbnails, regions.

Pure numpy, shared by AttentionHeatmap (zoom and pan over long inputs), ModelView (thumbnails) and their static
twins (:func:`attnwidgets.plots.plot_model_view` draws the same causal mask).
A masked cell (a decoder query looking at a future key) is NaN, which ``js/src/shared/draw.ts`` paints light grey,
so a causal mask looks different from a weight that happens to be 0.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..result import AttentionResult

__all__ = ["block_reduce", "is_causal", "mask_future", "overview", "region", "thumbnails"]

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


#: Above this many tokens on either side a head is sent as a block-max overview, with detail fetched by region.
OVERVIEW_ABOVE = 1024
#: Longest side of that overview (about the grid's width in device pixels).
OVERVIEW_SIDE = 512


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
