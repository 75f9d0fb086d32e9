"""The attention function every model runs through, and the hooks that watch or edit it.

transformers 5.x dropped ``head_mask`` and its default SDPA backend returns no weights. We register one attention
function, ``"attnwidgets"``, with :class:`transformers.AttentionInterface`. It calls the model's own eager attention
(so a run with no hooks is bit-identical to ``attn_implementation="eager"``) and then offers the weights to the hooks
active on this thread. A hook may return new weights; the head outputs are then recomputed as ``weights @ value``.
Everything that edits attention goes through here: ablation (zero, uniform, mean, scale), Michel et al. head gates,
gradients w.r.t. attention, and capturing q/k/v for the QK step-through.

A head's output is ``A_h V_h``, so scaling its weights by ``s`` scales its output by ``s``; a zero ablation is
``s = 0``; a gate ``ξ_h`` is a scale that carries a gradient.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from . import capture
from .capture import AttentionSite, Stack

ATTN_IMPLEMENTATION = "attnwidgets"


@dataclass
class AttentionCall:
    """Everything a hook sees of one attention call (batch B, heads H, queries T, keys S, head size D).

    Attributes
    ----------
    site : AttentionSite
    module : nn.Module
        The attention module.
    query : torch.Tensor
        (B, H, T, D) after any rotary embedding.
    key, value : torch.Tensor
        (B, H_kv, S, D): fewer heads than ``query`` under grouped-query attention.
    attention_mask : torch.Tensor | None
        Additive mask broadcastable to (B, H, T, S): 0 where allowed, a large negative number where masked.
    scaling : float | None
        The factor the logits were multiplied by (usually 1/sqrt(D)).
    """

    site: AttentionSite
    module: nn.Module
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    attention_mask: torch.Tensor | None
    scaling: float | None

    def valid_keys(self, weights: torch.Tensor) -> torch.Tensor:
        """Boolean (B, 1|H, T, S) mask of the keys each query may attend to (not padding, not in the future)."""
        if self.attention_mask is None:
            return torch.ones_like(weights, dtype=torch.bool)
        mask = self.attention_mask
        if mask.dtype == torch.bool:
            allowed = mask
        else:
            allowed = mask > torch.finfo(mask.dtype).min / 2
        return allowed[..., : weights.shape[-1]].expand_as(weights)


# A hook gets the call and the current weights (B, H, T, S) and returns new weights, or None to leave them.
AttentionHook = Callable[[AttentionCall, torch.Tensor], "torch.Tensor | None"]

_active_hooks: contextvars.ContextVar[tuple[AttentionHook, ...]] = contextvars.ContextVar(
    "attnwidgets_hooks", default=()
)
_sites: dict[int, AttentionSite] = {}

# Partial recomputation (runner.partial) can hand over what a site computed in the clean run, when the site's input is
# known to be unchanged: the clean weights (B, H, T, S) and head outputs (B, T, H, D). The eager math is then skipped
# and only the heads a hook edits are recomputed. A recorder, when set, receives every site's head outputs.
Substitutes = dict[AttentionSite, tuple[torch.Tensor, torch.Tensor]]
_substitutes: contextvars.ContextVar[Substitutes | None] = contextvars.ContextVar("attnwidgets_substitutes",
                                                                                  default=None)
_recorder: contextvars.ContextVar[Callable[[AttentionSite, torch.Tensor], None] | None] = contextvars.ContextVar(
    "attnwidgets_recorder", default=None)
# A value watcher (runner.norms) receives every labelled site's module, values (B, H_kv, S, D) and head outputs
# (B, T, H, D) in float32: what norm-based attention needs, with no n x n tensor.
ValueWatcher = Callable[[AttentionSite, nn.Module, torch.Tensor, torch.Tensor], None]
_value_watcher: contextvars.ContextVar[ValueWatcher | None] = contextvars.ContextVar("attnwidgets_value_watcher",
                                                                                    default=None)
# A value edit (runner.value_zeroing) may replace a labelled site's values (B, H_kv, S, D) before the attention is
# computed: the weights stay as they are (they do not read the values), the head outputs use the edited values.
ValueEdit = Callable[[AttentionSite, nn.Module, torch.Tensor], "torch.Tensor | None"]
_value_edit: contextvars.ContextVar[ValueEdit | None] = contextvars.ContextVar("attnwidgets_value_edit", default=None)
# A head edit (runner.patching) may replace a labelled site's head outputs (B, T, H, D), each head's contribution
# before the output projection, after every weight hook: activation patching swaps one head's output for another
# run's.
HeadEdit = Callable[[AttentionSite, torch.Tensor], "torch.Tensor | None"]
_head_edit: contextvars.ContextVar[HeadEdit | None] = contextvars.ContextVar("attnwidgets_head_edit", default=None)


@contextlib.contextmanager
def attention_hooks(hooks: Sequence[AttentionHook]) -> Iterator[None]:
    """Run the hooks on every attention call made inside the ``with`` block (this thread/task only)."""
    token = _active_hooks.set(_active_hooks.get() + tuple(hooks))
    try:
        yield
    finally:
        _active_hooks.reset(token)


@contextlib.contextmanager
def substituted(substitutes: Substitutes) -> Iterator[None]:
    """Inside the block, the given sites return their clean weights and outputs instead of recomputing them."""
    token = _substitutes.set(substitutes)
    try:
        yield
    finally:
        _substitutes.reset(token)


@contextlib.contextmanager
def watching_values(watch: ValueWatcher) -> Iterator[None]:
    """Inside the block, ``watch(site, module, value, out)`` gets every labelled site's values and head outputs."""
    token = _value_watcher.set(watch)
    try:
        yield
    finally:
        _value_watcher.reset(token)


@contextlib.contextmanager
def editing_values(edit: ValueEdit) -> Iterator[None]:
    """Inside the block, ``edit(site, module, value)`` may return new values for a labelled site (None: unchanged)."""
    token = _value_edit.set(edit)
    try:
        yield
    finally:
        _value_edit.reset(token)


@contextlib.contextmanager
def editing_heads(edit: HeadEdit) -> Iterator[None]:
    """Inside the block, ``edit(site, out)`` may return new head outputs (B, T, H, D) for a labelled site (None:
    unchanged); it sees them after the weight hooks and the recorder."""
    token = _head_edit.set(edit)
    try:
        yield
    finally:
        _head_edit.reset(token)


@contextlib.contextmanager
def recording(record: Callable[[AttentionSite, torch.Tensor], None]) -> Iterator[None]:
    """Inside the block, ``record(site, out)`` gets every labelled site's head outputs (B, T, H, D)."""
    token = _recorder.set(record)
    try:
        yield
    finally:
        _recorder.reset(token)


def register_sites(model: nn.Module, kind: str) -> dict[str, AttentionSite]:
    """Label every attention module of ``model`` with its stack and layer, from its dotted name.

    "encoder.layer.3.attention.self" -> (encoder|self, 3); "decoder.layers.2.encoder_attn" -> (cross, 2).
    Returns the labels by module name (useful for tests and error messages).
    """
    named: dict[str, AttentionSite] = {}
    for name, module in model.named_modules():
        if "attention" not in type(module).__name__.lower() and not name.endswith(("attn", "attention")):
            continue
        numbers = re.findall(r"\.(\d+)(?:\.|$)", "." + name)
        if not numbers:
            continue
        layer = int(numbers[0])
        lowered = name.lower()
        cross = bool(getattr(module, "is_cross_attention", False)) or any(
            part in lowered for part in ("encoder_attn", "crossattention", "cross_attn", "encdecattention")
        )
        if cross:
            stack: Stack = "cross"
        elif kind == "encoder-decoder":
            stack = "decoder" if "decoder" in lowered else "encoder"
        else:
            stack = "self"
        site = AttentionSite(stack, layer)
        _sites[id(module)] = site
        named[name] = site
    return named


def site_of(module: nn.Module) -> AttentionSite | None:
    """The site :func:`register_sites` labelled ``module`` with, or None if it is not a labelled attention module."""
    return _sites.get(id(module))


class _StopForward(Exception):
    """Raised by the first attention module past the last one a pass needs (:func:`stop_after`)."""


@contextlib.contextmanager
def stop_after(model: nn.Module, stack: str, layer: int) -> Iterator[None]:
    """While inside, a forward pass of ``model`` ends (quietly, at the end of the ``with``) when it reaches an
    attention module of another stack or of a layer above ``layer``: nothing it would compute there is looked at
    (:meth:`attnwidgets.runner.Runner.forward`'s ``stop_after``)."""
    def stop(*_args: Any) -> None:
        raise _StopForward

    handles = [module.register_forward_pre_hook(stop) for module in model.modules()
               if (site := site_of(module)) is not None and (site.stack != stack or site.layer > layer)]
    try:
        with contextlib.suppress(_StopForward):
            yield
    finally:
        for handle in handles:
            handle.remove()


def _repeat_kv(value: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, H_kv, S, D) -> (B, H, S, D), each key/value head repeated for its group of query heads."""
    n_kv = value.shape[1]
    if n_kv == n_heads:
        return value
    return value.repeat_interleave(n_heads // n_kv, dim=1)


def _generic_eager(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: object,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q kᵀ · scaling + mask) v, with grouped-query key/value heads repeated."""
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    key = _repeat_kv(key, query.shape[1])
    value = _repeat_kv(value, query.shape[1])
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask[..., : key.shape[-2]]
    weights = nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = nn.functional.dropout(weights, p=dropout, training=module.training)
    out = torch.matmul(weights, value).transpose(1, 2).contiguous()
    return out, weights


def _model_eager(module: nn.Module) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """The eager attention function defined in the module's own modeling file, or a generic one."""
    fn = getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)
    return fn if callable(fn) else _generic_eager


def attnwidgets_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: object,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The function registered as ``attn_implementation="attnwidgets"``: eager attention plus hooks.

    Attention is computed in float32 whatever the model's dtype: for a float16 or bfloat16 model, query, key, value
    and mask are upcast, so q·kᵀ, the softmax and the weights hooks see and the model returns are float32 (a bfloat16
    softmax's rows sum to 1 only within about 1e-2); the head outputs go back to the model in its own dtype.
    """
    site = _sites.get(id(module))
    dtype = query.dtype
    if dtype in (torch.float16, torch.bfloat16):
        query, key, value = query.float(), key.float(), value.float()
        if attention_mask is not None and attention_mask.is_floating_point():
            attention_mask = attention_mask.float()  # finfo(bfloat16).min is a float32 number: still "masked"
        out, weights = attnwidgets_attention(module, query, key, value, attention_mask, scaling=scaling,
                                             dropout=dropout, **kwargs)
        return out.to(dtype), weights
    edit = _value_edit.get()
    if edit is not None and site is not None:
        edited = edit(site, module, value)
        value = value if edited is None else edited
    held = capture.current()
    watch = _value_watcher.get()
    if held is not None and site is not None:  # capture mode: queries and keys kept, no n x n weights built
        captured = capture.captured_attention(held, site, module, query, key, value, attention_mask, scaling,
                                              **kwargs)
        if watch is not None:
            watch(site, module, value, captured[0])
        return captured
    given = _substitutes.get()
    if given is not None and site is not None and site in given:
        weights, out = given[site]  # the clean run's, for an input known to be unchanged
        weights, out = weights.clone(), out.clone()  # hooks and callers must never reach the cached tensors
    else:
        out, weights = _model_eager(module)(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    record = _recorder.get()
    if record is not None and site is not None:
        record(site, out)
    if watch is not None and site is not None:
        watch(site, module, value, out)
    hooks = _active_hooks.get()
    if hooks and site is not None:
        call = AttentionCall(site, module, query, key, value, attention_mask, scaling)
        original = weights
        for hook in hooks:
            new = hook(call, weights)
            if new is not None:
                weights = new
        if weights is not original:
            out = _recompute_heads(out, original, weights, value)
    head_edit = _head_edit.get()
    if head_edit is not None and site is not None:
        edited = head_edit(site, out)
        out = out if edited is None else edited
    return out, weights


def _recompute_heads(out: torch.Tensor, before: torch.Tensor, after: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """Head outputs (B, T, H, D) after hooks changed the weights from ``before`` to ``after`` (both (B, H, T, S)).

    Only the heads whose weights changed are multiplied again with their values: an ablation edits one or a few heads,
    and the other heads' outputs are already in ``out``. With gradients flowing through the weights every head is
    recomputed, so the graph stays one plain matmul.
    """
    v = _repeat_kv(value, after.shape[1]).to(after.dtype)  # (B, H, S, D)
    if not after.requires_grad:
        changed = (after != before).flatten(2).any(-1).any(0)  # (H,)
        if not bool(changed.all()):
            idx = torch.nonzero(changed).flatten()
            out = out.clone()
            out[:, :, idx] = torch.matmul(after[:, idx], v[:, idx]).transpose(1, 2).to(out.dtype)
            return out
    return torch.matmul(after, v).transpose(1, 2).contiguous().to(out.dtype)


def register() -> None:
    """Register the attention function and its mask builder with transformers (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(ATTN_IMPLEMENTATION, attnwidgets_attention)
    AttentionMaskInterface.register(ATTN_IMPLEMENTATION, _mask)


def _mask(*args: Any, **kwargs: Any) -> torch.Tensor | None:
    """The mask builder of our attention: eager's float masks, or SDPA's while capturing (None for a plain causal or
    unpadded input, a bool mask otherwise), so capture mode never builds an n x n float mask it does not need."""
    from transformers.masking_utils import eager_mask, sdpa_mask

    if capture.current() is not None:
        kwargs.pop("dtype", None)
        return sdpa_mask(*args, **kwargs)
    return eager_mask(*args, **kwargs)
