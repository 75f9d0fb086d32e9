"""Capture mode: keep each layer's queries and keys, compute its output with a fused kernel, never build n × n weights.

Inside :func:`capturing`, the attention function (``control.attnwidgets_attention``) hands every labelled call to
:func:`captured_attention` instead of eager attention. That stores what rebuilds the weights exactly
(:class:`CapturedCall`: queries after RoPE, keys with their own key/value heads, the scaling, one
:class:`~attnwidgets.attention_stack.KeyMask` per input, T5's position bias, Gemma's soft-cap, gpt-oss's sinks) and
computes the layer's output with PyTorch's ``scaled_dot_product_attention``. A layer with a bias, a soft-cap or sinks,
which SDPA cannot apply, is computed in blocks of queries instead (the same float32 math as eager attention, at most
``_BLOCK_BYTES`` of weights alive at once). The masks come from transformers' SDPA mask builder while capturing
(``None`` for a plain causal or unpadded input, so nothing n × n is built at all; a bool mask otherwise).

:meth:`Capture.stack` turns the calls of one attention stack into a :class:`~attnwidgets.attention_stack.LazyStack`
for one input of the batch, with padding removed. Calls made one after another at one site (``model.generate``: the
prompt, then one token per step) are joined: queries in order, keys as the positions they belong to.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from ..attention_stack import KeyMask, LayerQK, LazyStack, RelativeBias

Stack = Literal["self", "encoder", "decoder", "cross"]


@dataclass(frozen=True)
class AttentionSite:
    """Where an attention call happens: which stack and which layer (0-based)."""

    stack: Stack
    layer: int


__all__ = ["AttentionSite", "Capture", "CapturedCall", "captured_attention", "capturing", "current"]

_BLOCK_BYTES = 64 << 20


@dataclass
class CapturedCall:
    """One attention call, batch B, query heads H, key heads H_kv, queries T, keys S, head size D (numpy, float32).

    ``masks[b]`` says which of this call's S keys each of input b's T queries may see. ``bias`` is the additive
    (1 or B, H, T, S) position bias the model passed (T5), if any. ``new_keys`` is how many of the S keys this call
    added at the end (T for self-attention, 0 for cross-attention, whose keys are the encoder's every time).
    ``n_keys`` is S. ``key`` holds all S keys for a site's first call and only the ``new_keys`` last ones for the
    calls after it (a generation step's cache holds the earlier ones already), so a long generation stores each key
    once.
    """

    query: np.ndarray
    key: np.ndarray
    scaling: float
    masks: list[KeyMask]
    bias: np.ndarray | None = None
    softcap: float | None = None
    sinks: np.ndarray | None = None
    new_keys: int = 0
    n_keys: int = 0
    value: np.ndarray | None = None


@dataclass
class Capture:
    """The calls captured per site, in order. ``values_at``: the sites whose values are kept too (the QK
    step-through of a long input, :func:`attnwidgets.runner.qk.capture_qk_layers`); none by default."""

    calls: dict[AttentionSite, list[CapturedCall]] = field(default_factory=dict)
    values_at: frozenset[AttentionSite] = frozenset()
    _masks: dict[int, tuple[Any, list[KeyMask]]] = field(default_factory=dict, repr=False)
    biases: dict[int, tuple[Any, np.ndarray]] = field(default_factory=dict, repr=False)

    def add(self, site: AttentionSite, call: CapturedCall) -> None:
        self.calls.setdefault(site, []).append(call)

    def sites(self, stack: str) -> list[AttentionSite]:
        return sorted((s for s in self.calls if s.stack == stack), key=lambda s: s.layer)

    def stack(self, stack: str, row: int, queries: np.ndarray | None = None,
              keys: np.ndarray | None = None) -> LazyStack | None:
        """One input's attention of one stack ("self", "encoder", "decoder", "cross") as a LazyStack, or None.

        ``queries`` and ``keys`` are the positions to keep (ascending; padding left out); default all.
        """
        sites = self.sites(stack)
        if not sites:
            return None
        layers = []
        for site in sites:
            layer = _join(self.calls[site], row, cross=stack == "cross")
            if queries is not None or keys is not None:
                q = np.arange(layer.n_queries) if queries is None else queries
                k = np.arange(layer.n_keys) if keys is None else keys
                layer = layer.select(q, k)
            layers.append(layer)
        return LazyStack(tuple(layers))

    def mask_of(self, attention_mask: torch.Tensor | None, batch: int, n_q: int, n_k: int,
                causal: bool) -> list[KeyMask]:
        """Per-input :class:`KeyMask` of a mask tensor (computed once per tensor: every layer shares one)."""
        if attention_mask is None:
            one = KeyMask.causal(n_q, n_k) if causal and n_q > 1 else KeyMask.full(n_q, n_k)
            return [one] * batch
        held = self._masks.get(id(attention_mask))
        if held is not None and held[0] is attention_mask:
            return held[1]
        m = attention_mask
        keep = m if m.dtype == torch.bool else m > torch.finfo(m.dtype).min / 2
        allowed = keep[:, 0, :, :n_k].expand(batch, n_q, n_k).cpu().numpy()
        masks = [KeyMask.from_allowed(allowed[b]) for b in range(batch)]
        self._masks[id(attention_mask)] = (attention_mask, masks)
        return masks


def _join(calls: list[CapturedCall], row: int, cross: bool) -> LayerQK:
    """One site's calls for one input as one layer: queries in order, keys at the positions they belong to."""
    first = calls[0]
    sinks = None if first.sinks is None else first.sinks.astype(np.float32)
    if len(calls) == 1:
        bias = None
        if first.bias is not None:
            bias = RelativeBias.from_dense(first.bias[min(row, first.bias.shape[0] - 1)])
        return LayerQK(first.query[row], first.key[row], first.scaling, first.masks[row], bias, first.softcap, sinks)
    query = np.concatenate([c.query[row] for c in calls], axis=1)
    if cross:
        key = first.key[row]
        offsets = [0] * len(calls)
    else:  # each call appended its own keys at the end of the cache (which may have been cropped at the front)
        key = np.concatenate([c.key[row][:, c.key.shape[2] - c.new_keys:] for c in calls], axis=1)  # new keys
        seen, offsets = 0, []
        for c in calls:
            seen += c.new_keys
            offsets.append(seen - c.n_keys)  # absolute position of this call's key 0
    lo = np.concatenate([c.masks[row].lo + off for c, off in zip(calls, offsets, strict=True)])
    hi = np.concatenate([c.masks[row].hi + off for c, off in zip(calls, offsets, strict=True)])
    n_k = key.shape[1]
    mask = KeyMask(lo, hi)
    if any(c.masks[row].allowed is not None for c in calls):
        allowed = np.zeros((lo.size, n_k), bool)
        r = 0
        for c, off in zip(calls, offsets, strict=True):
            t, s = c.query.shape[2], c.n_keys
            allowed[r:r + t, off:off + s] = c.masks[row].rows(0, t, s)
            r += t
        mask = KeyMask.from_allowed(allowed)
    bias = None
    if first.bias is not None:
        dense = np.zeros((query.shape[0], lo.size, n_k), np.float32)
        r = 0
        for c, off in zip(calls, offsets, strict=True):
            t, s = c.query.shape[2], c.n_keys
            assert c.bias is not None
            dense[:, r:r + t, off:off + s] = c.bias[min(row, c.bias.shape[0] - 1)]
            r += t
        bias = RelativeBias.from_dense(dense) if not cross else RelativeBias(np.zeros((dense.shape[0], 0),
                                                                                      np.float32), 0, dense)
    return LayerQK(np.ascontiguousarray(query), np.ascontiguousarray(key), first.scaling, mask, bias,
                   first.softcap, sinks)


_current: contextvars.ContextVar[Capture | None] = contextvars.ContextVar("attnwidgets_capture", default=None)


def current() -> Capture | None:
    """The capture active on this thread/task, if any."""
    return _current.get()


@contextlib.contextmanager
def capturing(capture: Capture | None = None) -> Iterator[Capture]:
    """Inside the block, attention calls are captured (queries and keys kept, outputs by a fused kernel)."""
    capture = Capture() if capture is None else capture
    token = _current.set(capture)
    try:
        yield capture
    finally:
        _current.reset(token)


def _numpy(t: torch.Tensor) -> np.ndarray:
    """A contiguous float32 copy on the CPU (never a view: the model's buffers, such as GPT-2's fused q/k/v, are
    freed as usual, and what a result holds is what it counts)."""
    x = t.detach()
    if x.device.type != "cpu":
        # Laid out on the device, then one copy to the host (was: a strided copy, then a second one in numpy).
        return x.to(dtype=torch.float32).contiguous().cpu().numpy()
    return np.ascontiguousarray(x.to(dtype=torch.float32).numpy())


def captured_attention(capture: Capture, site: AttentionSite, module: nn.Module, query: torch.Tensor,
                       key: torch.Tensor, value: torch.Tensor, attention_mask: torch.Tensor | None,
                       scaling: float | None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """Store the call's queries and keys in ``capture``; return (head outputs (B, T, H, D), None)."""
    b, _h, t, d = query.shape
    s = key.shape[2]
    scaling = d ** -0.5 if scaling is None else float(scaling)
    # with no mask tensor, whether keys ahead are hidden: as the call says, else as the module says (T5 calls it
    # is_decoder); cross-attention never is
    is_causal = kwargs.get("is_causal")
    if is_causal is None:
        is_causal = getattr(module, "is_causal", None)
    if is_causal is None:
        is_causal = getattr(module, "is_decoder", False)
    causal = bool(is_causal) and site.stack != "cross"
    masks = capture.mask_of(attention_mask, b, t, s, causal)
    bias = kwargs.get("position_bias")
    softcap = kwargs.get("softcap")
    sinks = kwargs.get("s_aux")
    if sinks is None and isinstance(getattr(module, "sinks", None), torch.Tensor):
        sinks = module.sinks
    bias_np = None
    if isinstance(bias, torch.Tensor):  # one bias tensor serves every layer (T5): converted once
        known = capture.biases.get(id(bias))
        if known is not None and known[0] is bias:
            bias_np = known[1]
        else:
            bias_np = _numpy(bias[..., :t, :s])
            capture.biases[id(bias)] = (bias, bias_np)
    new = 0 if site.stack == "cross" else t
    first_call = site not in capture.calls
    kept = key if first_call or new >= s else key[:, :, s - new:]  # later calls: only the keys they added
    capture.add(site, CapturedCall(
        query=_numpy(query), key=_numpy(kept), scaling=scaling, masks=masks, bias=bias_np,
        softcap=None if softcap is None else float(softcap),  # type: ignore[arg-type]
        sinks=None if sinks is None else _numpy(sinks), new_keys=new, n_keys=s,
        value=_numpy(value) if site in capture.values_at else None,
    ))
    if bias is None and softcap is None and sinks is None:
        out = _sdpa(query, key, value, attention_mask, scaling, causal and attention_mask is None and t == s and t > 1)
    else:
        out = _blockwise(query, key, value, attention_mask, scaling, bias, softcap, sinks,  # type: ignore[arg-type]
                         causal and attention_mask is None and t > 1)
    return out.transpose(1, 2).contiguous(), None


def _sdpa(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attention_mask: torch.Tensor | None,
          scaling: float, is_causal: bool) -> torch.Tensor:
    """PyTorch's fused attention, key/value heads shared by their query groups without repeating them."""
    mask = attention_mask
    if mask is not None:
        mask = mask[..., : key.shape[2]]
    gqa = query.shape[1] != key.shape[1]
    return nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, is_causal=is_causal,
                                                      scale=scaling, enable_gqa=gqa)


def _blockwise(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attention_mask: torch.Tensor | None,
               scaling: float, bias: torch.Tensor | None, softcap: float | None,
               sinks: torch.Tensor | None, causal: bool = False) -> torch.Tensor:
    """Eager attention a block of queries at a time (for what SDPA cannot do: biases, soft-caps, sinks).

    ``causal`` (with no mask tensor): query i sees keys up to its own position, the last query being the last key.
    """
    b, h, t, _d = query.shape
    s = key.shape[2]
    group = h // key.shape[1]
    k = key.repeat_interleave(group, dim=1) if group > 1 else key
    v = value.repeat_interleave(group, dim=1) if group > 1 else value
    rows = max(1, _BLOCK_BYTES // max(1, b * h * s * 4))
    out = torch.empty((b, h, t, value.shape[-1]), dtype=query.dtype, device=query.device)
    for start in range(0, t, rows):
        stop = min(t, start + rows)
        logits = torch.matmul(query[:, :, start:stop], k.transpose(2, 3)) * scaling
        if bias is not None:
            logits = logits + bias[..., start:stop, :s]
        if softcap is not None:
            logits = torch.tanh(logits / softcap) * softcap
        if attention_mask is not None:
            m = attention_mask[..., start:stop, :s]
            logits = logits.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else logits + m
        elif causal:
            q_pos = torch.arange(start, stop, device=query.device)[:, None] + (s - t)
            logits = logits.masked_fill(torch.arange(s, device=query.device)[None, :] > q_pos, float("-inf"))
        if sinks is not None:
            sink = sinks.reshape(1, -1, 1, 1).expand(b, -1, stop - start, 1).to(logits.dtype)
            combined = torch.cat([logits, sink], dim=-1)
            combined = combined - combined.max(dim=-1, keepdim=True).values
            weights = torch.softmax(combined.float(), dim=-1)[..., :-1]
        else:
            weights = torch.softmax(logits.float(), dim=-1)
        out[:, :, start:stop] = torch.matmul(weights.to(v.dtype), v)
    return out
