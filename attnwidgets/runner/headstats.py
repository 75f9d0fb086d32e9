"""Per-head sums of a long input's attention, made in torch on the model's device in one pass over its queries and keys.

A long input's result keeps queries and keys (:class:`~attnwidgets.attention_stack.LazyStack`); every statistic over it
used to rebuild the weights in numpy, a block of rows at a time, on one thread, once per statistic asked for. Here the
runner rebuilds them once, right after the capture forward, on the device the model runs on (CUDA, MPS or the CPU),
a block of rows at a time (nothing n x n is kept), and keeps only what the statistics and the views read back:

- ``colsum`` (L, H, S) float64: the weight each key gets, summed over the query rows (the shares of attention to
  [CLS], [SEP], punctuation, the first token, special or content tokens, sinks: each a key set);
- ``diag`` (L, H, 3, T) float32: ``A[i, i - 1]``, ``A[i, i]``, ``A[i, i + 1]`` (previous / self / next, diagonal
  pattern features);
- ``entropy`` (L, H, T) float64: each row's entropy in nats, ``log Z · Σp − Σ p·s`` with ``s`` the row's shifted
  logits (no logarithm per weight);
- ``corner`` (L, H, 8, 8): the first rows over the first keys (sink shares under a causal mask);
- ``special_rows`` (k,) and ``special_weights`` (L, H, k, S): the whole rows of the special tokens ([SEP] rows);
- with ``factor`` > 1, the overview a heatmap and a model view draw, for every head: ``overview_max`` and
  ``overview_mean`` (L, H, ceil(T / f), ceil(S / f)) float16, block max / block mean of ``f`` x ``f`` cells (NaN
  where a causal mask hides every key of a block), ``overview_head_max`` (L, ...) the block max of the heads' mean,
  and ``overview_max_rest0`` / ``overview_mean_rest0`` (L, H, rows): the first column of blocks without key 0 (a
  heatmap that discounts the sink).

Weights are computed in float32 whatever the model's dtype (as :meth:`LayerQK.rows` does), with the same masks, bias,
soft-cap and sinks. The arrays are numpy (the result layer stays free of torch); they are handed to the stack only
when the whole pass is done, so an interrupted pass leaves nothing half-written. ``attnwidgets.analysis`` derives its
statistics from them (:mod:`attnwidgets.analysis.surface`), and computes them in numpy for a stack without them
(a result loaded from disk, or built from arrays).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch

from ..attention_stack import BLOCK_BYTES, LayerQK, LazyStack, format_bytes, overview_factor

__all__ = ["CORNER", "MAX_SPECIAL_ROWS", "DeviceMemoryError", "attach_summary", "summarise"]

CORNER = 8
"""Rows and keys of the top-left corner kept (sink shares of key sets that start with up to 8 first keys)."""
MAX_SPECIAL_ROWS = 16
"""Most special-token rows kept whole; an input with more leaves ``sep_sep`` to the numpy path."""


class DeviceMemoryError(MemoryError):
    """The statistics pass ran out of memory on the device; the message names the block size and what to try."""


def _tensor(a: np.ndarray, dev: torch.device) -> torch.Tensor:
    """``a`` on ``dev`` without a copy on the CPU (read only here: torch's warning about read-only arrays is moot)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(a).to(dev)


def _device(device: Any) -> torch.device:
    return torch.device("cpu") if device is None else torch.device(device)


def _block_rows(n_heads: int, width: int, factor: int, block_bytes: int) -> int:
    rows = max(1, block_bytes // max(1, n_heads * width * 4))
    return max(factor, (rows // factor) * factor)


def _weights(layer: LayerQK, q: torch.Tensor, k: torch.Tensor, start: int, stop: int, k0: int, k1: int,
             dev: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(p, entropy)`` for rows ``start..stop`` over keys ``k0..k1``: the weights (H, r, w), by the math of
    :meth:`LayerQK.rows` in torch (in place, few passes over the block), and each row's entropy (H, r),
    ``log z · Σp − Σ p·s`` with ``s`` the shifted logits and ``z`` the softmax denominator."""
    h, h_kv = layer.n_heads, layer.n_kv_heads
    group, r = h // h_kv, stop - start
    logits = torch.matmul(q[:, start:stop].reshape(h_kv, group * r, -1), k[:, k0:k1].transpose(1, 2))
    logits = logits.reshape(h, r, k1 - k0)
    logits.mul_(layer.scaling)
    if layer.bias is not None:
        logits += _tensor(np.ascontiguousarray(layer.bias.rows(start, stop, layer.n_keys)[..., k0:k1]), dev)
    if layer.softcap is not None:
        c = float(layer.softcap)
        logits.div_(c).tanh_().mul_(c)
    if layer.mask.allowed is not None:
        hidden = ~_tensor(np.ascontiguousarray(layer.mask.allowed[start:stop, k0:k1]), dev)
    elif int(layer.mask.lo[start:stop].max()) <= k0 and int(layer.mask.hi[start:stop].min()) >= k1:
        hidden = None  # every row sees every key of the span: no mask pass at all
    else:
        keys = torch.arange(k0, k1, device=dev)
        lo = _tensor(layer.mask.lo[start:stop], dev)[:, None]
        hi = _tensor(layer.mask.hi[start:stop], dev)[:, None]
        hidden = (keys < lo) | (keys >= hi)
    if hidden is not None:
        logits.masked_fill_(hidden, float("-inf"))
    top = logits.amax(-1, keepdim=True)
    sink = None
    if layer.sinks is not None:
        sink = _tensor(layer.sinks.astype(np.float32), dev)[:, None, None]
        top = torch.maximum(top, sink)
    top.masked_fill_(top == float("-inf"), 0.0)
    logits.sub_(top)  # s
    p = torch.exp(logits)
    if hidden is not None:
        logits.masked_fill_(hidden, 0.0)  # hidden keys: e = 0, and s·e must be 0, not NaN
    z = p.sum(-1, keepdim=True)
    mass = z[..., 0].clone()  # Σ e over the keys
    if sink is not None:
        z = z + torch.exp(sink - top)
    z.masked_fill_(z == 0, 1.0)
    es = logits.mul_(p).sum(-1)  # Σ e·s (logits is spent)
    zz = z[..., 0]
    entropy = torch.log(zz) * (mass / zz) - es / zz
    p.div_(z)
    return p, entropy


def _overview_counts(n_q: int, n_k: int, factor: int, causal: bool) -> np.ndarray:
    """(ceil(T / f), ceil(S / f)) visible cells per block, by the rule the views use (the causal rule only)."""
    rows = np.arange(n_q)
    c2 = math.ceil(n_k / factor)
    first = np.arange(c2) * factor
    width = np.minimum(factor, n_k - first)
    visible = np.clip(rows[:, None] + 1 - first[None, :], 0, width[None, :]) if causal else \
        np.broadcast_to(width[None, :], (n_q, c2))
    r2 = math.ceil(n_q / factor)
    count = np.zeros((r2 * factor, c2), np.int64)
    count[:n_q] = visible
    return count.reshape(r2, factor, c2).sum(1)


def _reduce(p: torch.Tensor, factor: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Block max and block sum of ``p`` (..., r, w) over ``factor`` x ``factor`` cells (a partial block at the end of
    either side counts what it has): rows first (contiguous), then columns on the ``factor`` times smaller rest."""
    *lead, r, w = p.shape
    if r % factor:
        p = torch.nn.functional.pad(p, (0, 0, 0, factor - r % factor))
    r2 = p.shape[-2] // factor
    by_rows = p.reshape(*lead, r2, factor, w)
    rmax, rsum = by_rows.amax(-2), by_rows.sum(-2)  # (..., r2, w)
    main = (w // factor) * factor
    mx = rmax[..., :main].reshape(*lead, r2, main // factor, factor).amax(-1)
    sm = rsum[..., :main].reshape(*lead, r2, main // factor, factor).sum(-1)
    if main < w:
        mx = torch.cat([mx, rmax[..., main:].amax(-1, keepdim=True)], -1)
        sm = torch.cat([sm, rsum[..., main:].sum(-1, keepdim=True)], -1)
    return mx, sm


def summarise(stack: LazyStack, *, causal: bool, special_rows: np.ndarray | None = None, factor: int | None = None,
              device: Any = None, block_bytes: int | None = None) -> dict[str, np.ndarray]:
    """The per-head sums and overviews of ``stack`` (see the module docstring), computed on ``device`` in torch.

    ``causal`` is the views' rule for the overview's visible cells (a decoder's self-attention); ``special_rows`` the
    rows kept whole (the special tokens'); ``factor`` the overview's cells per block (default
    :func:`~attnwidgets.attention_stack.overview_factor`; 1: no overview). Raises :class:`DeviceMemoryError` when a
    block does not fit the device.
    """
    L, H, T, S = stack.shape
    dev = _device(device)
    f = overview_factor(T, S) if factor is None else int(factor)
    budget = BLOCK_BYTES if block_bytes is None else int(block_bytes)
    special = np.zeros(0, np.int64) if special_rows is None else np.asarray(special_rows, np.int64)
    special = special[(special >= 0) & (special < T)][:MAX_SPECIAL_ROWS]
    colsum = np.zeros((L, H, S), np.float64)
    diag = np.zeros((L, H, 3, T), np.float32)
    entropy = np.zeros((L, H, T), np.float64)
    corner = np.zeros((L, H, CORNER, CORNER), np.float32)
    special_w = np.zeros((L, H, special.size, S), np.float32)
    r2, c2 = -(-T // f), -(-S // f)
    with_overview = f > 1
    if with_overview:  # kept as float16, made a layer at a time in float32 (one layer's scratch, not L of them)
        count = _overview_counts(T, S, f, causal)
        seen = count > 0
        keep_max = np.empty((L, H, r2, c2), np.float16)
        keep_mean = np.empty((L, H, r2, c2), np.float16)
        keep_head = np.empty((L, r2, c2), np.float16)
        keep_rest_max = np.empty((L, H, r2), np.float16)
        keep_rest_mean = np.empty((L, H, r2), np.float16)
    rows_per = 1
    try:
        with torch.inference_mode():
            for li, layer in enumerate(stack.layers):
                q = _tensor(layer.query, dev)
                k = _tensor(layer.key, dev)
                rows_per = _block_rows(H, S, f, budget)
                if with_overview:
                    ov_max = np.zeros((H, r2, c2), np.float32)
                    ov_sum = np.zeros((H, r2, c2), np.float32)
                    ov_head = np.zeros((r2, c2), np.float32)
                    rest_max = np.zeros((H, r2), np.float32)
                    rest_sum = np.zeros((H, r2), np.float32)
                for start in range(0, T, rows_per):
                    stop = min(T, start + rows_per)
                    if layer.mask.allowed is not None:
                        k0, k1 = 0, S
                    else:
                        k0, k1 = int(layer.mask.lo[start:stop].min()), int(layer.mask.hi[start:stop].max())
                        k1 = max(k0, k1)
                        k0, k1 = (k0 // f) * f, min(S, -(-k1 // f) * f)
                    p = _add_block(li, layer, q, k, start, stop, k0, k1, dev, colsum, diag, entropy, corner,
                                   special, special_w)
                    if with_overview and p is not None:
                        mx, sm = _reduce(p, f)
                        b0, b1, c0 = start // f, start // f + mx.shape[-2], k0 // f
                        ov_max[:, b0:b1, c0:c0 + mx.shape[-1]] = mx.cpu().numpy()
                        ov_sum[:, b0:b1, c0:c0 + sm.shape[-1]] = sm.cpu().numpy()
                        hm, _ = _reduce(p.mean(0), f)
                        ov_head[b0:b1, c0:c0 + hm.shape[-1]] = hm.cpu().numpy()
                        if k0 == 0:  # the first column of blocks without key 0
                            part = p[..., 1:min(f, k1)]
                            pm, ps = _reduce(torch.nn.functional.pad(part, (0, f - 1 - part.shape[-1])), f)
                            rest_max[:, b0:b1] = pm[..., 0].cpu().numpy()
                            rest_sum[:, b0:b1] = ps[..., 0].cpu().numpy()
                    del p
                del q, k
                if with_overview:
                    nan = np.float32(np.nan)
                    with np.errstate(invalid="ignore", divide="ignore"):
                        keep_max[li] = np.where(seen, ov_max, nan)
                        keep_mean[li] = np.where(seen, ov_sum / np.maximum(count, 1), nan)
                        keep_head[li] = np.where(seen, ov_head, nan)
                        # key 0 counts as a visible cell holding 0, as the views' discount does it
                        keep_rest_max[li] = np.where(seen[:, 0], rest_max, nan)
                        keep_rest_mean[li] = np.where(seen[:, 0], rest_sum / np.maximum(count[:, 0], 1), nan)
    except torch.OutOfMemoryError as err:
        raise DeviceMemoryError(_oom_message(dev, H, rows_per, S, budget)) from err
    except RuntimeError as err:  # MPS and some backends say it in a RuntimeError
        if "out of memory" not in str(err).lower():
            raise
        raise DeviceMemoryError(_oom_message(dev, H, rows_per, S, budget)) from err
    out: dict[str, np.ndarray] = {
        "colsum": colsum, "diag": diag, "entropy": entropy, "corner": corner, "special_rows": special,
        "special_weights": special_w, "causal": np.array(bool(causal)), "factor": np.array(f, np.int64),
    }
    if with_overview:
        out.update(overview_max=keep_max, overview_mean=keep_mean, overview_head_max=keep_head,
                   overview_max_rest0=keep_rest_max, overview_mean_rest0=keep_rest_mean)
    return out


def _add_block(li: int, layer: LayerQK, q: torch.Tensor, k: torch.Tensor, start: int, stop: int, k0: int, k1: int,
               dev: torch.device, colsum: np.ndarray, diag: np.ndarray, entropy: np.ndarray, corner: np.ndarray,
               special: np.ndarray, special_w: np.ndarray) -> torch.Tensor | None:
    """Rows ``start..stop`` of layer ``li``: their sums added to the arrays; returns their weights (keys k0..k1)."""
    h, r = layer.n_heads, stop - start
    if k1 <= k0:  # no key seen by any row: weights 0, entropies 0
        return None
    p, ent = _weights(layer, q, k, start, stop, k0, k1, dev)
    entropy[li, :, start:stop] = ent.cpu().numpy()
    ones = torch.ones((1, 1, r), dtype=p.dtype, device=dev)
    colsum[li, :, k0:k1] += torch.matmul(ones, p)[:, 0].cpu().numpy()
    rows = torch.arange(r, device=dev)
    for j, offset in enumerate((-1, 0, 1)):
        key = rows + start + offset - k0
        ok = (key >= 0) & (key < k1 - k0)
        if bool(ok.any()):
            vals = torch.zeros((h, r), dtype=p.dtype, device=dev)
            vals[:, ok] = p[:, rows[ok], key[ok]]
            diag[li, :, j, start:stop] = vals.cpu().numpy()
    if start < CORNER and k0 < CORNER:
        nr, nk = min(CORNER, stop) - start, min(CORNER, k1) - k0
        corner[li, :, start:start + nr, k0:k0 + nk] = p[:, :nr, :nk].cpu().numpy()
    inside = np.flatnonzero((special >= start) & (special < stop))
    if inside.size:
        special_w[li, :, inside, k0:k1] = p[:, _tensor(special[inside] - start, dev)].cpu().numpy() \
            .transpose(1, 0, 2)
    return p


def _oom_message(dev: torch.device, n_heads: int, rows: int, n_keys: int, budget: int) -> str:
    need = n_heads * rows * n_keys * 4
    return (f"the statistics pass ran out of memory on {dev}: one block of {rows} rows x {n_keys} keys x {n_heads} "
            f"heads is {format_bytes(need)} of float32 weights (a few of them are alive at once). Try smaller blocks "
            f"(attach_summary(result, block_bytes={max(1 << 20, budget // 4)})), another device "
            "(device='cpu'), or a shorter input")


def attach_summary(result: Any, device: Any = None, block_bytes: int | None = None) -> bool:
    """Compute :func:`summarise` for ``result``'s self-attention (a long input's, kept as queries and keys) and hand
    it to its stack; False when there is nothing to do (dense attention, or a summary already there).

    The runner does this for every long input it runs; call it for a result built from arrays or loaded from disk to
    get the fast path (on ``device``) for its statistics and views.
    """
    stack = result.stack("self")
    if not isinstance(stack, LazyStack) or stack.summary:
        return False
    causal = result.model.kind == "decoder"
    arrays = summarise(stack, causal=causal, special_rows=np.flatnonzero(result.special_mask), device=device,
                       block_bytes=block_bytes)
    stack.set_summary(arrays)
    return True
