"""What each sublayer of a Hugging Face model writes into the residual stream, read by forward hooks.

Two block shapes are recognised, by their modules:

- **post-LN, BERT-style** (BERT, RoBERTa, MiniLM, ELECTRA...): ``layer.attention.output`` and ``layer.output`` are
  called as ``(h, input_tensor)`` and return ``LayerNorm(dense(h) + input_tensor)``. The write is the ``dense``
  output, the stream is ``input_tensor``.
- **pre-LN decoders** (GPT-2, Llama, Mistral, Qwen...): a layer with ``attn``/``self_attn`` and ``mlp`` computing
  ``h = x + attn(norm(x))``, ``out = h + mlp(norm(h))``. The writes are the two modules' outputs; the streams are
  ``x`` and ``x + attn``. The layer's own output is checked against ``x + attn + mlp``, so a block of another shape
  (Gemma 2's norms after each sublayer, parallel attention and MLP) raises instead of giving wrong numbers.

Dropout is off in eval mode, which the runner's model is in.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import torch
from torch import nn

from .encoding import Truncation
from .partial import layer_modules

__all__ = ["ResidualUnavailableError", "residual_vectors"]

SUBLAYERS = ("attention", "feed-forward")


class ResidualUnavailableError(NotImplementedError):
    """The model's blocks are not of a shape whose sublayer outputs we know how to read."""


def _first(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, (tuple, list)) else out


def _arg(args: tuple, kwargs: dict, index: int, name: str) -> torch.Tensor:
    return args[index] if len(args) > index else kwargs[name]


def _child(module: nn.Module, *names: str) -> nn.Module | None:
    for name in names:
        found = getattr(module, name, None)
        if isinstance(found, nn.Module):
            return found
    return None


def residual_vectors(runner: Any, text: str, text_pair: str | None = None, *, truncation: Truncation = "warn"
                     ) -> tuple[dict[tuple[int, str], tuple[np.ndarray, np.ndarray]], list[str], bool]:
    """Run ``text`` once and return ``{(layer, sublayer): (write (n, d), stream (n, d))}``, the tokens, and whether
    the model is pre-LN. Padding is never present (one text); special tokens are kept."""
    info = runner.info
    if info.kind == "encoder-decoder":
        raise ResidualUnavailableError(f"{info.name!r} is an encoder-decoder; residual contributions are read for "
                                       "encoders and decoders only")
    layers = (layer_modules(runner) or {}).get("self")
    if not layers or len(layers) != info.n_layers:
        raise ResidualUnavailableError(f"{info.name!r}: could not find its {info.n_layers} layer modules")
    first = layers[0]
    bert_style = isinstance(_child(_child(first, "attention") or nn.Module(), "output"), nn.Module) \
        and isinstance(_child(first, "output"), nn.Module) and _child(first, "intermediate") is not None
    pre_ln = _child(first, "attn", "self_attn") is not None and _child(first, "mlp") is not None
    if not (bert_style or pre_ln):
        raise ResidualUnavailableError(
            f"{info.name!r} ({type(first).__name__}): neither a BERT-style post-LN layer (attention.output, "
            "intermediate, output) nor a pre-LN layer with attn/self_attn and mlp")
    seen: dict[tuple[int, str], list[torch.Tensor]] = {}
    ends: dict[int, torch.Tensor] = {}
    handles = []

    def keep(key: tuple[int, str], slot: int, value: torch.Tensor) -> None:
        seen.setdefault(key, [torch.empty(0), torch.empty(0)])[slot] = value.detach().float().cpu()

    for i, layer in enumerate(layers):
        if bert_style:
            attn_out = cast(nn.Module, layer.get_submodule("attention.output"))
            ff_out = cast(nn.Module, layer.get_submodule("output"))
            for name, wrapper in (("attention", attn_out), ("feed-forward", ff_out)):
                key = (i, name)
                handles.append(wrapper.register_forward_pre_hook(  # (hidden, input_tensor): the stream is the 2nd
                    lambda _m, a, kw, key=key: keep(key, 1, _arg(a, kw, 1, "input_tensor")), with_kwargs=True))
                handles.append(wrapper.get_submodule("dense").register_forward_hook(
                    lambda _m, _a, out, key=key: keep(key, 0, out)))
        else:
            attn, mlp = _child(layer, "attn", "self_attn"), _child(layer, "mlp")
            assert attn is not None and mlp is not None
            handles.append(layer.register_forward_pre_hook(
                lambda _m, a, kw, i=i: keep((i, "attention"), 1, _arg(a, kw, 0, "hidden_states")), with_kwargs=True))
            handles.append(attn.register_forward_hook(
                lambda _m, _a, out, i=i: keep((i, "attention"), 0, _first(out))))
            handles.append(mlp.register_forward_hook(
                lambda _m, _a, out, i=i: keep((i, "feed-forward"), 0, _first(out))))
            handles.append(layer.register_forward_hook(
                lambda _m, _a, out, i=i: ends.__setitem__(i, _first(out).detach().float().cpu())))
    try:
        enc = runner.encode([text], [text_pair], None, truncation)
        runner.forward(enc)
    finally:
        for h in handles:
            h.remove()
    fields = runner.token_fields(enc, 0)
    idx = torch.nonzero(fields["valid"]).flatten()
    out: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    for i in range(len(layers)):
        for name in SUBLAYERS:
            pair = seen.get((i, name))
            stream_read = bert_style or name == "attention"  # pre-LN: the MLP's stream is made just below
            if pair is None or pair[0].numel() == 0 or (stream_read and pair[1].numel() == 0):
                raise ResidualUnavailableError(f"{info.name!r}: layer {i}'s {name} was not seen in the forward pass")
        if not bert_style:
            x, a = seen[(i, "attention")][1], seen[(i, "attention")][0]
            seen[(i, "feed-forward")][1] = x + a  # pre-LN: the MLP reads (a norm of) and adds to x + attn
            m = seen[(i, "feed-forward")][0]
            tol = 1e-3 * float(ends[i].abs().max()) if i in ends else 0.0
            if i not in ends or not torch.allclose(ends[i], x + a + m, rtol=1e-3, atol=tol):
                raise ResidualUnavailableError(
                    f"{info.name!r} ({type(layers[i]).__name__}): layer {i}'s output is not input + attention + MLP, "
                    "so it is not a plain pre-LN block (norms after the sublayers, or parallel sublayers?)")
        for name in SUBLAYERS:
            write, stream = seen[(i, name)]
            out[(i, name)] = (write[0, idx].double().numpy(), stream[0, idx].double().numpy())
    return out, list(fields["tokens"]), not bert_style
