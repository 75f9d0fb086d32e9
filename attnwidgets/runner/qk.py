"""Capturing queries, keys and values from the real model, for the QK step-through.

One forward pass runs with a control hook (see :mod:`attnwidgets.runner.control`) that copies, for the chosen
layers of one stack, the query/key/value tensors exactly as the model's attention function receives them: after
any rotary embedding, before key/value heads are repeated for grouped-query attention. Everything is turned into
numpy here, so the widget and the static plot never touch torch.

The softmax a capture carries is the model's own; ``recompute_error`` says how far
``softmax(q·kᵀ · scaling + bias + mask)`` recomputed from the captured vectors is from it (about 1e-7 for every model
whose attention is plain scaled dot-product attention, or adds a position bias we capture; larger for soft-capping).

An additive position bias (T5's relative-position bias: ``position_bias`` in the attention call) is taken from the
capture path (:mod:`attnwidgets.runner.capture`, which records it for lazy results): when the weights recomputed
without a bias differ from the model's, one more forward pass runs in capture mode and the layer's bias is read from
its :class:`~attnwidgets.attention_stack.RelativeBias`. For T5 the bucket of each (query, key) pair comes from the
model's own ``_relative_position_bucket`` and is checked against the bias table.

A rotary model (Llama, Mistral, GPT-NeoX with its partial ``rotary_pct``) hands each attention module its
``position_embeddings`` (cos, sin); a pre-hook reads them in the same forward pass. The angle of each pair of
dimensions at each position is ``atan2(sin, cos)``, and q and k before the rotation are the captured ones turned back
by it (a rotation is undone by its opposite): the capture's :class:`~attnwidgets.qk_result.Rotary` step.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from ..qk_result import QKCapture, Rotary, rotate_pairs
from . import control
from .capture import Capture
from .runner import Runner, get_runner

__all__ = ["QKCapture", "capture_qk", "capture_qk_layers"]


def _allowed(call: control.AttentionCall, n: int, m: int) -> np.ndarray:
    """(n, m) bool of the keys each query of batch row 0 may see, from the call's additive or boolean mask."""
    if call.attention_mask is None:
        return np.ones((n, m), dtype=bool)
    probe = torch.zeros((1, 1, n, m))
    return call.valid_keys(probe)[0, 0].detach().cpu().numpy().astype(bool)


def _captured_biases(runner: Runner, enc: object, stack: str, layers: Sequence[int], n: int, m: int
                     ) -> dict[int, np.ndarray]:
    """Each layer's (H, n, m) additive bias as the capture path records it (one forward pass in capture mode)."""
    held = Capture()
    runner.forward(enc, capture=held)  # type: ignore[arg-type]
    lazy = held.stack(stack, 0)
    if lazy is None:
        return {}
    sites = held.sites(stack)
    out = {}
    for site, layer_qk in zip(sites, lazy.layers, strict=True):
        if site.layer in layers and layer_qk.bias is not None:
            out[site.layer] = np.asarray(layer_qk.bias.rows(0, n, m), dtype=np.float32)
    return out


def _t5_buckets(runner: Runner, stack: str, bias: np.ndarray) -> np.ndarray | None:
    """(n, m) T5 bucket of each (query, key) pair, or None when the stack has no bucketed bias table matching ``bias``.

    The bucket is ``_relative_position_bucket(key - query)`` of the stack's attention module that owns the table
    (T5: layer 0's), with the module's direction (bidirectional in the encoder), bucket count and max distance.
    """
    _h, n, m = bias.shape
    for module in runner.model.modules():
        table = getattr(module, "relative_attention_bias", None)
        bucket_of = getattr(type(module), "_relative_position_bucket", None)
        site = control.site_of(module)
        if not isinstance(table, torch.nn.Embedding) or bucket_of is None or site is None or site.stack != stack:
            continue
        rel = torch.arange(m)[None, :] - torch.arange(n)[:, None]
        buckets = bucket_of(rel, bidirectional=not getattr(module, "is_decoder", False),
                            num_buckets=module.relative_attention_num_buckets,
                            max_distance=module.relative_attention_max_distance)
        bucket = buckets.cpu().numpy().astype(np.int64)
        weight = table.weight.detach().float().cpu().numpy()  # (buckets, H)
        if np.allclose(weight[bucket].transpose(2, 0, 1), bias, atol=1e-6):
            return bucket
    return None


@contextlib.contextmanager
def _watching_rotary(runner: Runner, stack: str, layers: Sequence[int]
                     ) -> Iterator[dict[int, tuple[torch.Tensor, torch.Tensor]]]:
    """Inside the block, each wanted layer's attention module hands over the (cos, sin) it is called with."""
    seen: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def pre_hook(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        site = control.site_of(module)
        given = kwargs.get("position_embeddings")
        if given is None:  # passed by position: (hidden_states, position_embeddings, ...) as Llama's signature has it
            given = next((a for a in args[1:] if isinstance(a, tuple) and len(a) == 2
                          and all(isinstance(t, torch.Tensor) for t in a)), None)
        if site is not None and isinstance(given, tuple) and len(given) == 2:
            seen[site.layer] = (given[0].detach(), given[1].detach())

    handles = [module.register_forward_pre_hook(pre_hook, with_kwargs=True)
               for module in runner.model.modules()
               if (site := control.site_of(module)) is not None and site.stack == stack and site.layer in layers]
    try:
        yield seen
    finally:
        for handle in handles:
            handle.remove()


def _rotary_step(q: np.ndarray, k: np.ndarray, cos_sin: tuple[torch.Tensor, torch.Tensor]) -> Rotary:
    """The rotary step of one layer from its rotated q (H, n, d), k (H_kv, m, d) and the model's (cos, sin)."""
    cos = cos_sin[0][0].double().cpu().numpy()  # (B, T, r) -> (T, r), batch row 0
    sin = cos_sin[1][0].double().cpu().numpy()
    r = cos.shape[-1]
    if r % 2 or r > q.shape[-1] or cos.shape[0] != k.shape[1]:
        raise RuntimeError(f"the model's rotary embedding has shape {cos.shape}, which does not fit keys of shape "
                           f"{k.shape}: the RoPE step cannot read its angles")
    # Which dimensions turn together: cos repeats its r/2 frequencies as [f, f] (halves) or [f0, f0, f1, f1, ...].
    halves = np.allclose(cos[:, : r // 2], cos[:, r // 2:], atol=1e-6)
    first = cos[:, : r // 2] if halves else cos[:, 0::2]
    second = sin[:, : r // 2] if halves else sin[:, 0::2]
    pairs = "halves" if halves else "interleaved"
    angle = np.arctan2(second, first)
    scale = float(np.hypot(first, second).mean())
    n = q.shape[1]
    q_pre = rotate_pairs(q, -angle[:n], pairs, 1.0 / scale)
    k_pre = rotate_pairs(k, -angle, pairs, 1.0 / scale)
    return Rotary.from_vectors(q_pre, k_pre, angle, pairs=pairs, scale=scale)


def capture_qk_layers(
    text: str,
    text_pair: str | None = None,
    *,
    model: str | Runner | None = None,
    revision: str | None = None,
    layers: Sequence[int] | None = None,
    stack: str = "self",
    target: str | None = None,
    rope: bool | None = None,
) -> list[QKCapture]:
    """Capture queries, keys and values of several layers (all when ``layers`` is None) in one forward pass.

    Parameters
    ----------
    text, text_pair : str
        The input (and segment B of a sentence pair).
    model : str | Runner, optional
        Hub id, local folder or runner; the bundled all-MiniLM-L6-v2 by default.
    layers : sequence of int, optional
        Which layers of the stack to capture (default: all).
    stack : str
        "self" for encoders and decoders; "encoder", "decoder" or "cross" for encoder-decoders.
    target : str, optional
        Target text of an encoder-decoder.
    rope : bool, optional
        Keep the rotary step (q and k before the rotation, the angle of each pair of dimensions at each position,
        q·k before it) of a rotary model: None (default) when the model has one, True to require it (a model
        without rotary embeddings is an error), False never.

    Returns
    -------
    list[QKCapture]
        One per layer, in the order asked.

    Examples
    --------
    >>> from attnwidgets.runner.qk import capture_qk_layers
    >>> caps = capture_qk_layers("The cat sat.")
    >>> len(caps), caps[0].q.shape[0]
    (6, 12)
    """
    runner = get_runner(model, revision)
    info = runner.info
    if info.kind == "encoder-decoder":
        if stack == "self":
            stack = "encoder"
        n_layers = info.n_decoder_layers if stack in ("decoder", "cross") else info.n_layers
    else:
        if stack != "self":
            raise ValueError(f"{info.name!r} is an {info.kind}: its only attention stack is 'self', not {stack!r}")
        n_layers = info.n_layers
    wanted = list(range(n_layers)) if layers is None else [int(x) for x in layers]
    for layer in wanted:
        if not 0 <= layer < n_layers:
            raise IndexError(f"layer {layer} is out of range: the {stack} stack has {n_layers} layers "
                             f"(0..{n_layers - 1})")
    enc = runner.encode([text], [text_pair], [target])
    if runner.keeps_lazy(enc):  # a long input: no dense eager forward, the capture path keeps what is asked for
        if rope:
            raise ValueError("the RoPE step is kept for inputs short enough for dense attention only; shorten the "
                             "text, or capture with rope=None")
        return _capture_long(runner, enc, text, text_pair, target, stack, wanted)
    seen: dict[int, tuple[control.AttentionCall, torch.Tensor]] = {}

    def hook(call: control.AttentionCall, weights: torch.Tensor) -> None:
        if call.site.stack == stack and call.site.layer in wanted:
            seen[call.site.layer] = (call, weights.detach())
        return None

    with _watching_rotary(runner, stack, wanted if rope is not False else []) as rotary:
        runner.forward(enc, [hook])
    if rope and not rotary:
        raise ValueError(f"{info.name!r} has no rotary position embeddings (its attention gets no cos/sin): the RoPE "
                         "step needs a rotary model such as Llama, Mistral or GPT-NeoX; capture with rope=None")
    res = runner.run(text, text_pair, target=target)  # cached: tokens of the same input
    queries = res.target_tokens if stack in ("decoder", "cross") else res.tokens
    keys = res.target_tokens if stack == "decoder" else res.tokens
    assert queries is not None and keys is not None
    biases: dict[int, np.ndarray] | None = None
    out = []
    for layer in wanted:
        if layer not in seen:
            raise RuntimeError(f"the model ran no {stack} attention at layer {layer} through attnwidgets' attention "
                               "function; QK capture needs a model loaded by attnwidgets (eager attention)")
        call, weights = seen[layer]
        t = lambda x: x[0].detach().float().cpu().numpy()  # noqa: E731  (B, H, T, D) -> (H, T, D), batch row 0
        q, k, v = t(call.query), t(call.key), t(call.value)
        n, m = q.shape[1], k.shape[1]
        step = _rotary_step(q, k, rotary[layer]) if layer in rotary else None
        build = functools.partial(QKCapture.from_vectors, q, k, v, queries, key_tokens=keys, scaling=call.scaling,
                                  mask=_allowed(call, n, m), layer=layer, stack=stack, model=info,
                                  weights=weights[0].float().cpu().numpy(), rope=step)
        cap = build()
        if cap.recompute_error > 1e-6:  # the model adds something: a position bias the capture path records?
            if biases is None:
                biases = _captured_biases(runner, enc, stack, wanted, n, m)
            bias = biases.get(layer)
            if bias is not None and np.any(bias):
                with_bias = build(bias=bias, bucket=_t5_buckets(runner, stack, bias))
                if with_bias.recompute_error < cap.recompute_error:
                    cap = with_bias
        if cap.recompute_error > 1e-4:
            warnings.warn(
                f"{info.name!r} layer {layer}: softmax(q·k · scaling{' + bias' if cap.bias is not None else ''} "
                f"+ mask) differs from the model's weights by {cap.recompute_error:.2g}; its attention adds "
                "something (soft-capping, a position bias it does not hand to the attention function). The "
                "softmax panel shows the model's own weights.", UserWarning, stacklevel=2)
        out.append(cap)
    return out


def _capture_long(runner: Runner, enc: Any, text: str, text_pair: str | None, target: str | None, stack: str,
                  wanted: list[int]) -> list[QKCapture]:
    """:func:`capture_qk_layers` of an input whose dense attention is past the budget: one forward in capture mode
    (fused attention, nothing n x n for the layers not asked for) keeps the asked layers' queries, keys, values and
    bias; each capture's weights are rebuilt from them (the capture path's weights equal eager attention to 1e-5)."""
    sites = frozenset(control.AttentionSite(stack, layer) for layer in wanted)  # type: ignore[arg-type]
    held = Capture(values_at=sites)
    runner.forward(enc, capture=held)
    res = runner.run(text, text_pair, target=target)  # cached: tokens of the same input
    queries = res.target_tokens if stack in ("decoder", "cross") else res.tokens
    keys = res.target_tokens if stack == "decoder" else res.tokens
    assert queries is not None and keys is not None
    lazy = held.stack(stack, 0)
    if lazy is None:
        raise RuntimeError(f"the model ran no {stack} attention through attnwidgets' attention function")
    by_layer = dict(zip((s.layer for s in held.sites(stack)), lazy.layers, strict=True))
    out = []
    for layer in wanted:
        qk = by_layer.get(layer)
        calls = held.calls.get(control.AttentionSite(stack, layer))  # type: ignore[arg-type]
        if qk is None or not calls or calls[0].value is None:
            raise RuntimeError(f"the model ran no {stack} attention at layer {layer} through attnwidgets' attention "
                               "function")
        n, m = qk.n_queries, qk.n_keys
        value = calls[0].value[0]
        mask = qk.mask.rows(0, n, m)
        bias = None if qk.bias is None else np.asarray(qk.bias.rows(0, n, m), np.float32)
        out.append(QKCapture.from_vectors(qk.query, qk.key, value, queries, key_tokens=keys, scaling=qk.scaling,
                                          mask=mask, layer=layer, stack=stack, model=runner.info,
                                          weights=qk.rows(0, n), bias=bias))
    return out


def capture_qk(
    text: str,
    text_pair: str | None = None,
    *,
    model: str | Runner | None = None,
    revision: str | None = None,
    layer: int = 0,
    stack: str = "self",
    target: str | None = None,
    rope: bool | None = None,
) -> QKCapture:
    """Capture one layer's queries, keys and values and every step from q·k to the weighted sum of values (for a
    rotary model, from q and k before the rotation: ``rope``, as :func:`capture_qk_layers` takes it).

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> c = aw.runner.capture_qk("The cat sat.", layer=2)
    >>> r = aw.run("The cat sat.")
    >>> bool(np.allclose(c.weights, r.attention[2], atol=1e-6)), round(c.scaling ** -2)
    (True, 32)
    """
    return capture_qk_layers(text, text_pair, model=model, revision=revision, layers=[layer], stack=stack,
                             target=target, rope=rope)[0]
