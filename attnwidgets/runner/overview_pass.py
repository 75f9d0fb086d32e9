"""The statistics pass's overview of a long input's heads (:mod:`attnwidgets.runner.headstats`): block max and block
mean of ``f`` x ``f`` cells for every head (:class:`Overview`), the heads' mean of each block of rows
(:class:`HeadsMean`), and the row- and column-group reductions they are made of, each read while the block of
weights is still in cache. Split from ``headstats.py`` so that the pass reads as its plan and its per-row sums."""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["HeadsMean", "Overview", "by_columns", "by_rows", "overview_counts"]


def overview_counts(n_q: int, n_k: int, factor: int, causal: bool) -> np.ndarray:
    """(ceil(T / f), ceil(S / f)) visible cells per block, by the rule the views use (the causal rule only): row ``i``
    sees ``clip(i + 1 - c0, 0, width)`` keys of the block of keys from ``c0``, summed over a block's rows in closed
    form (a (T, S / f) table of them cost a quarter of a one-head pass at 8k)."""
    c2, r2 = math.ceil(n_k / factor), math.ceil(n_q / factor)
    first = np.arange(c2, dtype=np.int64) * factor
    width = np.minimum(factor, n_k - first)[None, :]
    a = np.arange(r2, dtype=np.int64)[:, None] * factor
    e = np.minimum(a + factor, n_q)  # rows a..e
    if not causal:
        return (e - a) * width

    def below(n: np.ndarray) -> np.ndarray:  # sum of clip(t, 0, width) for t in 0..n-1
        n = np.maximum(n, 0)
        low = np.minimum(n, width + 1)
        return low * (low - 1) // 2 + np.maximum(n - width - 1, 0) * width

    return below(e + 1 - first[None, :]) - below(a + 1 - first[None, :])


def by_rows(p: torch.Tensor, span: int, out_max: torch.Tensor, out_sum: torch.Tensor | None = None) -> None:
    """Max (and sum, with ``out_sum``) of ``p`` (..., r, w) over groups of ``span`` rows (the last group may be
    shorter), into ``out_max`` / ``out_sum`` (..., g, w): one reduction each, read while ``p`` is still in cache."""
    r = p.shape[-2]
    full = (r // span) * span
    if full:
        grouped = p[..., :full, :].unflatten(-2, (full // span, span))
        torch.amax(grouped, -2, out=out_max[..., : full // span, :])
        if out_sum is not None:
            torch.sum(grouped, -2, out=out_sum[..., : full // span, :])
    if full < r:
        torch.amax(p[..., full:, :], -2, keepdim=True, out=out_max[..., full // span :, :])
        if out_sum is not None:
            torch.sum(p[..., full:, :], -2, keepdim=True, out=out_sum[..., full // span :, :])


def by_columns(x: torch.Tensor, factor: int, how: str) -> torch.Tensor:
    """Max or sum of ``x`` (..., w) over groups of ``factor`` columns (the last may be shorter).

    Not a reduction over the last axis of a (..., w / f, f) view: torch reduces such short rows a few times slower
    than its pooling kernel takes a max (``max_pool1d``, the partial group by ``ceil_mode``), or than a GEMV against
    ``f`` ones (f > 4) or ``f - 1`` adds of strided views (f <= 4) take a sum (one CPU core: max 5x faster at f = 4,
    2.4x at f = 16; sum 1.7x at f = 4, 1.8x at f = 16)."""
    *lead, w = x.shape
    if how == "max":
        pooled = torch.nn.functional.max_pool1d(x.reshape(-1, 1, w), factor, factor, ceil_mode=True)
        return pooled.view(*lead, -(-w // factor))
    main = (w // factor) * factor
    if factor <= 4:
        cells = x[..., :main].unflatten(-1, (main // factor, factor))
        out = cells[..., 0].clone()
        for j in range(1, factor):
            out += cells[..., j]
    else:
        out = (x[..., :main].reshape(-1, factor) @ x.new_ones(factor)).view(*lead, main // factor)
    if main < w:
        out = torch.cat([out, x[..., main:].sum(-1, keepdim=True)], -1)
    return out


class Overview:
    """One layer's overview, accumulated block by block on the device (float32), kept as float16 numpy."""

    def __init__(self, n_heads: int, r2: int, c2: int, dev: torch.device) -> None:
        self.max = torch.zeros((n_heads, r2, c2), device=dev)
        self.sum = torch.zeros((n_heads, r2, c2), device=dev)
        self.head = torch.zeros((r2, c2), device=dev)
        self.rest_max = torch.zeros((n_heads, r2), device=dev)
        self.rest_sum = torch.zeros((n_heads, r2), device=dev)

    def add(
        self, h0: int, h1: int, b0: int, c0: int, f: int, rmax: torch.Tensor, rsum: torch.Tensor, first: bool
    ) -> None:
        """Row-grouped max and sum (heads, groups, w) of keys from block column ``c0`` on, rows from group ``b0``."""
        mx, sm = by_columns(rmax, f, "max"), by_columns(rsum, f, "sum")
        b1, c1 = b0 + mx.shape[-2], c0 + mx.shape[-1]
        cell = self.max[h0:h1, b0:b1, c0:c1]
        torch.maximum(cell, mx, out=cell)
        self.sum[h0:h1, b0:b1, c0:c1] += sm
        if first:  # the first column of blocks without key 0 (a heatmap that discounts the sink)
            part = slice(1, min(f, rmax.shape[-1]))
            rest = self.rest_max[h0:h1, b0:b1]
            torch.maximum(rest, rmax[..., part].amax(-1) if part.stop > 1 else torch.zeros_like(rest), out=rest)
            if part.stop > 1:
                self.rest_sum[h0:h1, b0:b1] += rsum[..., part].sum(-1)

    def finish(self, hidden: torch.Tensor, inv_count: torch.Tensor, keep: torch.dtype) -> tuple[np.ndarray, ...]:
        """The layer's max, mean, heads' max, and the first column's max and mean without key 0, as ``keep``
        numpy arrays, NaN where ``hidden`` (no visible key): masked, divided and cast in torch (numpy's float16 cast
        is slow). Key 0 counts as a visible cell holding 0, as the views' discount does it."""
        nan = float("nan")
        return (
            self.max.masked_fill_(hidden, nan).to(keep).cpu().numpy(),
            self.sum.mul_(inv_count).masked_fill_(hidden, nan).to(keep).cpu().numpy(),
            self.head.masked_fill_(hidden, nan).to(keep).cpu().numpy(),
            self.rest_max.masked_fill_(hidden[:, 0], nan).to(keep).cpu().numpy(),
            self.rest_sum.mul_(inv_count[:, 0]).masked_fill_(hidden[:, 0], nan).to(keep).cpu().numpy(),
        )

    def add_heads(self, b0: int, c0: int, f: int, span: int, mean: torch.Tensor) -> None:
        r, w = mean.shape
        hmax = torch.empty((-(-r // span), w), device=mean.device)
        by_rows(mean, span, hmax)
        mx = by_columns(hmax, f, "max")
        cell = self.head[b0 : b0 + mx.shape[-2], c0 : c0 + mx.shape[-1]]
        torch.maximum(cell, mx, out=cell)


class HeadsMean:
    """The heads' mean of a block of rows' weights (r, w), made by GEMVs over the heads' weights as their blocks come:
    ``(1/H, ..., 1/H) @ (k, r * w)``, with ``k`` a block's heads, or two one-head blocks at once (the weights'
    buffers are adjacent, so a pair is one matrix). Each head's weights are read once and the mean is written once
    per pair, where an add per head read and wrote the sum again for every head (~15 % less time for 12 heads on a
    CPU core)."""

    def __init__(self, n_heads: int, heads_per: int, cells: int, dev: torch.device) -> None:
        self.n_heads, self.paired = n_heads, heads_per == 1
        self.sum = torch.empty(cells if n_heads > 1 else 0, device=dev)
        self.scale = torch.full((1, max(2, heads_per)), 1.0 / n_heads, device=dev)
        self.one: torch.Tensor | None = None
        self.first = True

    def add(self, b: int, weights: torch.Tensor, buffers: torch.Tensor, last: bool) -> None:
        """Block ``b``'s weights (k, r, w), in ``buffers[b % 2]``; ``last``: the row block's last head block."""
        hb, r, w = weights.shape
        if self.n_heads == 1:
            self.one = weights[0]
            return
        if self.paired and b % 2 == 0 and not last:  # wait for its pair
            return
        heads = buffers[:, : r * w] if self.paired and b % 2 == 1 else weights.view(hb, r * w)
        flat = self.sum[: r * w].view(1, r * w)
        if self.first:
            torch.mm(self.scale[:, : heads.shape[0]], heads, out=flat)
            self.first = False
        else:
            flat.addmm_(self.scale[:, : heads.shape[0]], heads)

    def take(self, r: int, w: int) -> torch.Tensor:
        """The row block's mean (r, w) (a view of the buffers); the next row block starts a new one."""
        self.first = True
        return self.one if self.one is not None else self.sum[: r * w].view(r, w)
