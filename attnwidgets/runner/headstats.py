"""Per-head sums of a long input's attention, made in torch on the model's device in one pass over its queries and keys.

A long input's result keeps queries and keys (:class:`~attnwidgets.attention_stack.LazyStack`); every statistic over it
used to rebuild the weights in numpy, a block of rows at a time, on one thread, once per statistic asked for. Here they
are rebuilt once, on the device the model runs on (CUDA, MPS or the CPU), a block of heads x rows at a time (nothing
n x n is kept), and only what the statistics and the views read back is kept. The runner leaves this pass as a maker
on the stack (:meth:`LazyStack.defer_summary`): a run costs its forward, and the first statistic or view that asks
pays for the pass, once (:func:`attach_summary` pays now). What is kept:

- ``colsum`` (L, H, S) float64: the weight each key gets, summed over the query rows (the shares of attention to
  [CLS], [SEP], punctuation, the first token, special or content tokens, sinks: each a key set);
- ``diag`` (L, H, 3, T) float32: ``A[i, i - 1]``, ``A[i, i]``, ``A[i, i + 1]`` (previous / self / next, diagonal
  pattern features);
- ``entropy`` (L, H, T) float64: each row's entropy in nats, ``log Z · Σp − Σ p·s`` with ``s`` the row's shifted
  logits (no logarithm per weight);
- ``corner`` (L, H, 8, 8): the first rows over the first keys (sink shares under a causal mask);
- ``special_rows`` (k,) and ``special_weights`` (L, H, k, S): the whole rows of the special tokens ([SEP] rows);
- with ``factor`` > 1, the overview a heatmap and a model view draw, for every head: ``overview_max`` and
  ``overview_mean`` (L, H, ceil(T / f), ceil(S / f)) float16 (float32 for a one-head stack, a view's first map),
  block max / block mean of ``f`` x ``f`` cells (NaN where a causal mask hides every key of a block),
  ``overview_head_max`` (L, ...) the block max of the heads' mean, and ``overview_max_rest0`` /
  ``overview_mean_rest0`` (L, H, rows): the first column of blocks without key 0 (a heatmap that discounts the
  sink).

Weights are computed in float32 whatever the model's dtype (as :meth:`LayerQK.rows` does), with the same masks, bias,
soft-cap and sinks, each block in place in scratch buffers (the QK^T GEMM's logits against keys transposed once per
layer, and two adjacent buffers for the weights, used by turns). Each head block is then read as few times as torch's
separate kernels allow: torch's softmax, ``Σ p·s`` for the entropy (``log z`` is read off one weight per row, not from
the row's max logit and max weight), the overview's row-group max and sum (from which the column sums follow), and the
heads' mean, one GEMV per pair of head blocks; the entropies, column sums and overview cells of a block of rows are
then handed on once for every head (the overview's column groups by ``max_pool1d`` and a GEMV or strided adds). The
arrays are numpy (the result layer stays free of torch); they are handed to the stack only when the whole pass is
done, so an interrupted pass leaves nothing half-written. ``attnwidgets.analysis`` derives its
statistics from them (:mod:`attnwidgets.analysis.surface`), and computes them in numpy for a stack without them
(a result loaded from disk, or built from arrays).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np
import torch

from ..attention_stack import LayerQK, LazyStack, format_bytes, overview_factor
from .overview_pass import HeadsMean, Overview, by_rows, overview_counts

__all__ = ["BLOCK_BYTES", "CORNER", "MAX_SPECIAL_ROWS", "DeviceMemoryError", "attach_summary", "summarise"]

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


BLOCK_BYTES = 4 << 20
"""Weights computed at once (one group of heads x a block of rows x the keys they see), chosen by measurement on one
CPU core at 2k-8k tokens: 4-8 MiB blocks made the pass fastest; 1 MiB ones leave too few rows for the QK^T GEMM at
8k, and the old 32 MiB ones (every head at once) go out to memory on each pass over a block. A GPU takes bigger ones
(``block_bytes``)."""
_MIN_ROWS = 32  # fewer rows per block leave the QK^T GEMM memory-bound (its keys read again for every block)


def _plan(layer: LayerQK, width: int, factor: int, budget: int) -> tuple[int, int]:
    """``(rows, heads)`` per block: heads a group of query heads that shares key heads whole (a divisor of the
    key/value group size, or a multiple of it), rows a multiple or a divisor of ``factor`` (the overview's row
    blocks then never straddle two blocks of rows unevenly), the block within ``budget`` bytes where it can be."""
    h, group = layer.n_heads, layer.n_heads // layer.n_kv_heads
    cells = max(1, budget // 4)
    rows = max(1, min(max(_MIN_ROWS, cells // max(1, width)), layer.n_queries))
    heads = 1
    for d in range(1, h + 1):
        if h % d == 0 and (group % d == 0 or d % group == 0) and d * rows * width <= cells:
            heads = d
    if rows >= factor:
        rows = (rows // factor) * factor
    else:
        rows = max(d for d in range(1, rows + 1) if factor % d == 0)
    return rows, heads


def _span(a: int, b: int, hidden: np.ndarray, dev: torch.device) -> tuple[int, int, torch.Tensor, torch.Tensor]:
    """A span of hidden keys for :func:`_weights`: its columns, the hidden keys (bool), and -1e30 there (0 elsewhere),
    added to the logits on the fast path (exact: any logit under ~1e22 in size vanishes in -1e30's rounding)."""
    mask = _tensor(hidden, dev)
    return a, b, mask, torch.zeros(mask.shape, device=dev).masked_fill_(mask, _HIDDEN)


def _transposed(k: torch.Tensor, chunk: int = 512) -> torch.Tensor:
    """The keys (n_kv, S, d) transposed, (n_kv, d, S), contiguous: the QK^T GEMM reads them as its right-hand matrix
    as they are stored (~15 % faster on a CPU core than through a transposed view). Copied ``chunk`` keys at a time:
    one transposing copy of the whole tensor was 2.5x slower (30 against 12 ms for 12 x 8k x 64 on one core)."""
    out = torch.empty((k.shape[0], k.shape[2], k.shape[1]), dtype=k.dtype, device=k.device)
    for c0 in range(0, k.shape[1], chunk):
        out[:, :, c0 : c0 + chunk].copy_(k[:, c0 : c0 + chunk].transpose(1, 2))
    return out


def _hidden_spans(layer: LayerQK, start: int, stop: int, k0: int, k1: int) -> list[tuple[int, int, np.ndarray]]:
    """``(a, b, hidden)`` for the key spans ``a..b`` (of ``k0..k1``) where some row of ``start..stop`` hides a key:
    ``hidden`` (rows, b - a) bool. An interval mask hides keys only left of ``max(lo)`` and from ``min(hi)`` on
    (a causal block: its last few keys), so the rest of the block is never touched by a mask."""
    if layer.mask.allowed is not None:
        hidden = ~layer.mask.allowed[start:stop, k0:k1]
        return [(k0, k1, hidden)] if hidden.any() else []
    lo, hi = layer.mask.lo[start:stop, None], layer.mask.hi[start:stop, None]
    spans = []
    left, right = min(k1, int(lo.max())), max(k0, int(hi.min()))
    if left > k0:
        keys = np.arange(k0, left)
        spans.append((k0, left, (keys < lo) | (keys >= hi)))
        k0 = left
    if max(right, k0) < k1:
        keys = np.arange(max(right, k0), k1)
        spans.append((int(keys[0]), k1, (keys < lo) | (keys >= hi)))
    return spans


class _Block(NamedTuple):
    """A block of rows ``start..stop`` over keys ``k0..k1``: its rows of the position bias (all heads, or None) and
    its spans of hidden keys (:func:`_span`)."""

    start: int
    stop: int
    k0: int
    k1: int
    bias: torch.Tensor | None
    spans: list[tuple[int, int, torch.Tensor, torch.Tensor]]


def _weights(
    layer: LayerQK,
    q: torch.Tensor,
    k: torch.Tensor,
    h0: int,
    h1: int,
    block: _Block,
    sinks: torch.Tensor | None,
    logits: torch.Tensor,
    p: torch.Tensor,
    entropy: torch.Tensor,
    log_z: _LogZ | None = None,
) -> None:
    """The weights of heads ``h0..h1`` in ``block`` (:class:`_Block`: rows ``start..stop`` over keys ``k0..k1``), by
    the math of :meth:`LayerQK.rows` in torch, into ``p`` (h, r, w), and each row's entropy into ``entropy`` (h, r):
    ``log z · Σp − Σ p·s`` with ``s`` the shifted logits and ``z`` the softmax denominator (no log per weight).

    ``q`` holds the queries already multiplied by the scaling, ``k`` the keys transposed (n_kv, d, S); ``sinks``
    (H, 1, 1) the sink logits; ``logits`` is a flat scratch buffer; ``log_z`` where the fast path leaves each row's
    two weights that give its ``log z`` (None where some row of the block may see no key). Every step is in place.

    With no sinks and ``log_z`` (each row of the block sees a key), the softmax is torch's own (one fused kernel
    instead of max, subtract, exp, sum and scale) and ``entropy`` gets ``−Σ p·s`` in one product, to which
    :meth:`_LogZ.finish` adds ``log z`` read off one weight per row (no pass for the row's max logit or max weight):
    the same numbers to float rounding, in two reads of the block fewer. Hidden keys then hold a finite -1e30 rather
    than -inf: their weight is still exactly 0, and ``p·s`` there is 0, not NaN, with no second pass to clear them."""
    start, stop, k0, k1, bias, spans = block
    group, hb, r, w = layer.n_heads // layer.n_kv_heads, h1 - h0, stop - start, k1 - k0
    s = logits[: hb * r * w].view(hb, r, w)
    if hb <= group:  # the heads share one key head
        j = h0 // group
        torch.mm(q[h0:h1, start:stop].reshape(hb * r, -1), k[j, :, k0:k1], out=s.view(hb * r, w))
    else:  # whole groups of heads, one key head each
        j0, j1 = h0 // group, h1 // group
        torch.bmm(
            q[h0:h1, start:stop].reshape(j1 - j0, group * r, -1), k[j0:j1, :, k0:k1], out=s.view(j1 - j0, group * r, w)
        )
    if bias is not None:
        s += bias[h0:h1]
    if layer.softcap is not None:
        c = float(layer.softcap)
        s.div_(c).tanh_().mul_(c)
    fast = log_z if sinks is None else None
    for a, b, hidden, add in spans:  # adding -1e30 to a logit gives -1e30: an add is ~4x cheaper than a masked fill
        if fast is not None:
            s[..., a:b].add_(add)
        else:
            s[..., a:b].masked_fill_(hidden, float("-inf"))
    if fast is not None:
        e = torch.softmax(s, -1, out=p)
        torch.neg(torch.einsum("hrw,hrw->hr", e, s), out=entropy)  # −Σ p·s, 0 at hidden keys
        fast.read(h0, h1, e, s)
        return
    top = s.amax(-1, keepdim=True)
    sink = None
    if sinks is not None:
        sink = sinks[h0:h1]
        top = torch.maximum(top, sink)
    top.masked_fill_(top == float("-inf"), 0.0)
    s.sub_(top)
    e = torch.exp(s, out=p)
    for a, b, hidden, _add in spans:  # hidden keys: e = 0, and s·e must be 0, not NaN
        s[..., a:b].masked_fill_(hidden, 0.0)
    z = e.sum(-1, keepdim=True)
    mass = z[..., 0].clone()  # Σ e over the keys
    if sink is not None:
        z += torch.exp(sink - top)
    z.masked_fill_(z == 0, 1.0)
    es = s.mul_(e).sum(-1)  # Σ e·s (s is spent)
    zz = z[..., 0]
    torch.log(zz, out=entropy).mul_(mass / zz).sub_(es / zz)
    e.mul_(z.reciprocal_())


class _LogZ:
    """Each row's ``log z`` (its logits' log-sum-exp), read off one weight: ``p_j = exp(s_j) / z``, so
    ``log z = s_j - log p_j`` for any key ``j`` of the row whose weight is a normal float (``log p_j`` is then exact to
    float32 rounding). Two keys per row are read (the row's own key and the block's first: a causal row sees both,
    and a sink is the first) and the heavier used: two gathers per head block, the rest once per block of rows for
    every head. A head block where some row has both under 1e-30 is made again on the peak path (its max logit, two
    more reads of the block)."""

    def __init__(self, n_heads: int, rows: int, dev: torch.device) -> None:
        self.weight = torch.empty(n_heads * rows * 2, device=dev)
        self.logit = torch.empty(n_heads * rows * 2, device=dev)
        self.n_heads, self.dev = n_heads, dev
        self.cols = torch.zeros((1, 0, 2), dtype=torch.int64, device=dev)

    def start(self, start: int, stop: int, k0: int, k1: int) -> None:
        """A block of rows ``start..stop`` over keys ``k0..k1``: the columns of the rows' own keys (clipped to the
        block) and of its first key."""
        own = np.clip(np.arange(start, stop) - k0, 0, k1 - k0 - 1)
        self.cols = _tensor(np.stack([own, np.zeros_like(own)], -1)[None], self.dev)

    def _views(self) -> tuple[torch.Tensor, torch.Tensor]:
        r = self.cols.shape[1]
        n = self.n_heads * r * 2
        return self.weight[:n].view(self.n_heads, r, 2), self.logit[:n].view(self.n_heads, r, 2)

    def read(self, h0: int, h1: int, e: torch.Tensor, s: torch.Tensor) -> None:
        """The two weights and logits of every row of heads ``h0..h1`` (weights ``e``, logits ``s``: (h, r, w))."""
        both = self.cols.expand(h1 - h0, -1, -1)
        weight, logit = self._views()
        torch.gather(e, -1, both, out=weight[h0:h1])
        torch.gather(s, -1, both, out=logit[h0:h1])

    def finish(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``log z`` (H, r) of every head's rows, and which heads (H,) have a row whose two weights are under 1e-30
        (their ``log z`` is not to be used)."""
        weight, logit = self._views()
        top, which = weight.max(-1, keepdim=True)
        return logit.gather(-1, which).sub_(top.log())[..., 0], (top[..., 0] < _NORMAL).any(-1)


_NORMAL = 1e-30
"""The least weight :class:`_LogZ` reads ``log z`` from (float32's normal floats end at 1.2e-38)."""
_HIDDEN = -1e30
"""A hidden key's logit on the fast path: exp of it minus any row's peak is 0 in float32, as for -inf, and times a
weight of 0 it gives 0 where -inf gives NaN."""


def summarise(
    stack: LazyStack,
    *,
    causal: bool,
    special_rows: np.ndarray | None = None,
    factor: int | None = None,
    device: Any = None,
    block_bytes: int | None = None,
) -> dict[str, np.ndarray]:
    """The per-head sums and overviews of ``stack`` (see the module docstring), computed on ``device`` in torch.

    ``causal`` is the views' rule for the overview's visible cells (a decoder's self-attention); ``special_rows`` the
    rows kept whole (the special tokens'); ``factor`` the overview's cells per block (default
    :func:`~attnwidgets.attention_stack.overview_factor`; 1: no overview); ``block_bytes`` the weights computed at
    once (default :data:`BLOCK_BYTES`). Raises :class:`DeviceMemoryError` when a block does not fit the device.
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
    # kept as float16, made a layer at a time in float32 (one layer's scratch, not L of them); one head's overview
    # (a view's first map, LazyStack.head_summary) is small and stays float32, exact as the rows' block reduction
    keep = torch.float32 if L * H == 1 else torch.float16
    if with_overview:
        count = overview_counts(T, S, f, causal)
        hidden_t = _tensor(count == 0, dev)
        inv_count = _tensor((1.0 / np.maximum(count, 1)).astype(np.float32), dev)
        as_np = np.float32 if keep == torch.float32 else np.float16
        keep_max = np.empty((L, H, r2, c2), as_np)
        keep_mean = np.empty((L, H, r2, c2), as_np)
        keep_head = np.empty((L, r2, c2), as_np)
        keep_rest_max = np.empty((L, H, r2), as_np)
        keep_rest_mean = np.empty((L, H, r2), as_np)
    rows_per, heads_per = 1, H
    try:
        with torch.inference_mode():
            for li, layer in enumerate(stack.layers):
                rows_per, heads_per = _plan(layer, S, f, budget)
                q = _tensor(layer.query, dev) * layer.scaling  # scaled once, not every logit
                k = _transposed(_tensor(layer.key, dev))
                sinks = None if layer.sinks is None else _tensor(layer.sinks.astype(np.float32), dev)[:, None, None]
                logits = torch.empty(heads_per * rows_per * S, device=dev)
                # the weights' buffers, used by turns (adjacent: a pair of one-head blocks is one (2, r * w) matrix)
                p = torch.empty((2 if heads_per < H else 1, heads_per * rows_per * S), device=dev)
                ent_buf = torch.empty((H, rows_per), device=dev)
                log_z = _LogZ(H, rows_per, dev)
                diagonals = _Diagonals(H, rows_per, dev)
                ov = Overview(H, r2, c2, dev) if with_overview else None
                g_per = -(-rows_per // min(f, rows_per)) if with_overview else 1
                rmax_buf = torch.empty(H * g_per * S, device=dev)  # row groups' max and sum, every head
                rsum_buf = torch.empty(H * g_per * S, device=dev)
                heads_mean = HeadsMean(H, heads_per, rows_per * S, dev) if with_overview else None
                for start in range(0, T, rows_per):
                    stop = min(T, start + rows_per)
                    k0, k1 = _key_range(layer, start, stop, f, S)
                    if k1 <= k0:  # no key seen by any row: weights 0, entropies 0
                        continue
                    r, w = stop - start, k1 - k0
                    bias = None
                    if layer.bias is not None:
                        bias = _tensor(np.ascontiguousarray(layer.bias.rows(start, stop, S)[..., k0:k1]), dev)
                    spans = [_span(a - k0, b - k0, m, dev) for a, b, m in _hidden_spans(layer, start, stop, k0, k1)]
                    block = _Block(start, stop, k0, k1, bias, spans)
                    lz = log_z if _every_row_sees(layer, start, stop, k0, k1) and sinks is None else None
                    if lz is not None:
                        lz.start(start, stop, k0, k1)
                    diagonals.start(start, stop, k0, k1)
                    at = np.flatnonzero((special >= start) & (special < stop))  # the special rows in this block
                    inside = (at, _tensor(special[at] - start, dev)) if at.size else None
                    ent = ent_buf[:, :r]
                    span = f if rows_per >= f else rows_per
                    g = -(-r // span) if ov is not None else 1
                    rmax = rmax_buf[: H * g * w].view(H, g, w)
                    rsum = rsum_buf[: H * g * w].view(H, g, w)
                    for h0 in range(0, H, heads_per):
                        h1 = h0 + heads_per
                        # two buffers by turns: the block before is still there when the heads' mean reads a pair
                        weights = p[(h0 // heads_per) % 2][: (h1 - h0) * r * w].view(h1 - h0, r, w)
                        _weights(layer, q, k, h0, h1, block, sinks, logits, weights, ent[h0:h1], lz)
                        # what reads every weight, while this head's block is still in cache
                        diagonals.read(h0, h1, weights)
                        _add_rows(li, h0, h1, start, stop, k0, k1, weights, corner, inside, special_w)
                        if ov is None:
                            torch.sum(weights, -2, out=rsum[h0:h1, 0])
                            continue
                        by_rows(weights, span, rmax[h0:h1], rsum[h0:h1])
                        assert heads_mean is not None  # with the overview
                        heads_mean.add(h0 // heads_per, weights, p, h1 == H)
                    # the rest for every head at once: one call per statistic, not one per head
                    if ov is None:
                        colsum[li, :, k0:k1] += rsum[:, 0].cpu().numpy()
                    else:
                        colsum[li, :, k0:k1] += rsum.sum(-2).cpu().numpy()
                        ov.add(0, H, start // f, k0 // f, f, rmax, rsum, k0 == 0)
                        assert heads_mean is not None
                        ov.add_heads(start // f, k0 // f, f, span, heads_mean.take(r, w))
                    if lz is not None:  # the weights' buffers are free now (a head block made again goes there)
                        add, redo = lz.finish()
                        for b in np.unique(np.flatnonzero(redo.cpu().numpy()) // heads_per).tolist():
                            h0, h1 = b * heads_per, (b + 1) * heads_per
                            scratch = p[0][: heads_per * r * w].view(heads_per, r, w)
                            _weights(layer, q, k, h0, h1, block, None, logits, scratch, ent[h0:h1])
                            add[h0:h1] = 0.0  # the peak path made the whole entropy
                        ent.add_(add)
                    entropy[li, :, start:stop] = ent.cpu().numpy()
                    diag[li, :, :, start:stop] = diagonals.finish()
                del q, k, logits, p, rmax_buf, rsum_buf, heads_mean
                if ov is not None:
                    (keep_max[li], keep_mean[li], keep_head[li], keep_rest_max[li],
                     keep_rest_mean[li]) = ov.finish(hidden_t, inv_count, keep)
    except torch.OutOfMemoryError as err:
        raise DeviceMemoryError(_oom_message(dev, heads_per, rows_per, S, budget)) from err
    except RuntimeError as err:  # MPS and some backends say it in a RuntimeError
        if "out of memory" not in str(err).lower():
            raise
        raise DeviceMemoryError(_oom_message(dev, heads_per, rows_per, S, budget)) from err
    out: dict[str, np.ndarray] = {
        "colsum": colsum,
        "diag": diag,
        "entropy": entropy,
        "corner": corner,
        "special_rows": special,
        "special_weights": special_w,
        "causal": np.array(bool(causal)),
        "factor": np.array(f, np.int64),
    }
    if with_overview:
        out.update(
            overview_max=keep_max,
            overview_mean=keep_mean,
            overview_head_max=keep_head,
            overview_max_rest0=keep_rest_max,
            overview_mean_rest0=keep_rest_mean,
        )
    return out


def _key_range(layer: LayerQK, start: int, stop: int, f: int, n_keys: int) -> tuple[int, int]:
    """The keys rows ``start:stop`` can see, widened to whole overview cells of ``f`` (empty when none)."""
    if layer.mask.allowed is not None:
        return 0, n_keys
    k0, k1 = int(layer.mask.lo[start:stop].min()), int(layer.mask.hi[start:stop].max())
    k1 = max(k0, k1)
    return (k0 // f) * f, min(n_keys, -(-k1 // f) * f)


def _every_row_sees(layer: LayerQK, start: int, stop: int, k0: int, k1: int) -> bool:
    """Whether every row of ``start:stop`` sees a key in ``k0:k1`` (the one-weight log z needs a visible key)."""
    if layer.mask.allowed is not None:
        return bool(layer.mask.allowed[start:stop, k0:k1].any(1).all())
    return bool((layer.mask.hi[start:stop] > layer.mask.lo[start:stop]).all())


def _add_rows(
    li: int,
    h0: int,
    h1: int,
    start: int,
    stop: int,
    k0: int,
    k1: int,
    p: torch.Tensor,
    corner: np.ndarray,
    inside: tuple[np.ndarray, torch.Tensor] | None,
    special_w: np.ndarray,
) -> None:
    """The corner and the special rows of heads ``h0..h1``, rows ``start..stop`` (weights ``p`` over keys
    ``k0..k1``) into the arrays; ``inside``: which special rows fall in the block, and their rows in it."""
    if start < CORNER and k0 < CORNER:
        nr, nk = min(CORNER, stop) - start, min(CORNER, k1) - k0
        corner[li, h0:h1, start : start + nr, k0 : k0 + nk] = p[:, :nr, :nk].cpu().numpy()
    if inside is not None:
        special_w[li, h0:h1, inside[0], k0:k1] = p[:, inside[1]].cpu().numpy().transpose(1, 0, 2)


class _Diagonals:
    """A block of rows' weights on the previous, own and next key (``A[i, i - 1]``, ``A[i, i]``, ``A[i, i + 1]``) for
    every head: one gather per head block into a buffer (was three diagonal views, each copied to numpy, per head
    block), handed on once per block of rows. A key outside the block's keys is one no row of the block sees: 0."""

    def __init__(self, n_heads: int, rows: int, dev: torch.device) -> None:
        self.buf = torch.empty(n_heads * rows * 3, device=dev)
        self.n_heads, self.dev = n_heads, dev
        self.cols = torch.zeros((1, 0, 3), dtype=torch.int64, device=dev)
        self.seen = np.zeros((0, 3), bool)

    def start(self, start: int, stop: int, k0: int, k1: int) -> None:
        keys = np.arange(start, stop)[:, None] + np.array([-1, 0, 1]) - k0  # (r, 3) columns in the block
        self.seen = (keys >= 0) & (keys < k1 - k0)
        self.cols = _tensor(np.clip(keys, 0, k1 - k0 - 1)[None], self.dev)

    def _view(self) -> torch.Tensor:
        r = self.cols.shape[1]
        return self.buf[: self.n_heads * r * 3].view(self.n_heads, r, 3)

    def read(self, h0: int, h1: int, p: torch.Tensor) -> None:
        torch.gather(p, -1, self.cols.expand(h1 - h0, -1, -1), out=self._view()[h0:h1])

    def finish(self) -> np.ndarray:
        """(H, 3, r) the block's three diagonals."""
        return np.where(self.seen, self._view().cpu().numpy(), 0.0).transpose(0, 2, 1)


def _oom_message(dev: torch.device, n_heads: int, rows: int, n_keys: int, budget: int) -> str:
    need = n_heads * rows * n_keys * 4
    return (
        f"the statistics pass ran out of memory on {dev}: one block of {rows} rows x {n_keys} keys x {n_heads} "
        f"heads is {format_bytes(need)} of float32 weights (a few of them are alive at once). Try smaller blocks "
        f"(attach_summary(result, block_bytes={max(1 << 16, budget // 4)})), another device "
        "(device='cpu'), or a shorter input"
    )


def attach_summary(result: Any, device: Any = None, block_bytes: int | None = None) -> bool:
    """Compute :func:`summarise` for ``result``'s self-attention (a long input's, kept as queries and keys) now and
    hand it to its stack; False when there is nothing to do (dense attention, or a summary already made).

    The runner leaves a maker on every long input's stack, so the pass runs when a statistic or a view first asks;
    call this to pay for it now (on ``device``, in blocks of ``block_bytes``), or for a result built from arrays or
    loaded from disk to get the fast path for its statistics and views.
    """
    stack = result.stack("self")
    if not isinstance(stack, LazyStack) or (not stack.summary_pending and stack.summary):
        return False
    causal = result.model.kind == "decoder"
    arrays = summarise(
        stack, causal=causal, special_rows=np.flatnonzero(result.special_mask), device=device, block_bytes=block_bytes
    )
    stack.set_summary(arrays)
    return True
