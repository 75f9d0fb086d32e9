"""What each part of a model writes towards one token's logit, and what the residual stream predicts after each
layer: direct logit attribution and the logit lens, read by forward hooks on one run.

**Direct logit attribution** (Elhage et al. 2021, *A Mathematical Framework for Transformer Circuits*; as
TransformerLens computes it). In a pre-LN decoder the last position's residual stream before the final norm is a sum
of parts: the embeddings, and each layer's attention and MLP outputs; each attention output is a sum of its heads'
outputs through their slice of the output projection, plus the projection's bias. The final norm is not linear, so
its scale is frozen at the clean run (one number, the run's own), which makes it linear: for LayerNorm, part p adds

    ((p − mean(p)) / σ) · γ · u,        u = W_U[token] (or W_U[a] − W_U[b] for a difference),

to the logit, and the norm's offset β · u (and the unembedding's bias) is a part of its own; RMSNorm has no centring
and no offset. The parts then sum to the model's logit (to float rounding, checked on every call). A block of another
shape (norms after each sublayer as in Gemma 2, parallel attention and MLP) or a post-LN encoder (BERT, whose stream
is normalised after every sublayer) raises instead of giving numbers that do not add up.

**The logit lens** (nostalgebraist 2020): the residual stream after each layer, put through the final norm and the
unembedding (for a BERT-style masked LM, through its MLM head), read as a next-token (or masked-token) distribution.
The tuned lens (Belrose et al. 2023), a learned map per layer, would read early layers better; it is not here yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from . import control
from .capture import AttentionSite
from .partial import layer_modules

__all__ = ["LogitParts", "LogitsUnavailableError", "lens_logits", "lens_readout", "logit_parts", "stream_hooks",
           "unembedding_direction"]


class LogitsUnavailableError(NotImplementedError):
    """The model has no unembedding, or its blocks are not of a shape whose parts sum to the logit."""


_NORMS = ("ln_f", "norm", "final_layernorm", "final_layer_norm", "final_norm")


def _base(model: nn.Module) -> nn.Module:
    for name in ("transformer", "model", "gpt_neox", "bert", "roberta"):
        inner = getattr(model, name, None)
        if isinstance(inner, nn.Module):
            return inner
    return model


def final_norm(runner: Any) -> nn.Module:
    """The norm between the last layer and the unembedding of a decoder (``ln_f``, ``norm``, ...)."""
    base = _base(runner.model)
    for name in _NORMS:
        found = getattr(base, name, None)
        if isinstance(found, nn.Module):
            return found
    raise LogitsUnavailableError(f"{runner.info.name!r}: no final norm found (looked for {', '.join(_NORMS)})")


def _unembedding(runner: Any) -> nn.Module:
    if runner.head not in ("causal-lm", "masked-lm"):
        raise LogitsUnavailableError(
            f"{runner.info.name!r} was loaded with a {runner.head!r} head and has no unembedding: direct logit "
            "attribution and the logit lens need a causal LM or a masked LM (load one, e.g. a GPT-2 or a BERT with "
            "its MLM head)")
    head = runner.model.get_output_embeddings()
    if not isinstance(head, nn.Module) or not hasattr(head, "weight"):
        raise LogitsUnavailableError(f"{runner.info.name!r}: its output embedding could not be found")
    return head


def unembedding_direction(runner: Any, tokens: tuple[int, ...]) -> torch.Tensor:
    """u = W_U[a] (or W_U[a] − W_U[b]), float64 (d,)."""
    w = cast(torch.Tensor, _unembedding(runner).weight).detach().double()
    u = w[tokens[0]].clone()
    if len(tokens) == 2:
        u = u - w[tokens[1]]
    return u


def _attn(layer: nn.Module) -> nn.Module:
    found = getattr(layer, "attn", None) or getattr(layer, "self_attn", None)
    if not isinstance(found, nn.Module):
        raise LogitsUnavailableError(f"{type(layer).__name__}: no attn/self_attn module")
    return found


def _mlp(layer: nn.Module) -> nn.Module:
    found = getattr(layer, "mlp", None)
    if not isinstance(found, nn.Module):
        raise LogitsUnavailableError(f"{type(layer).__name__}: no mlp module")
    return found


def _o_proj(attn: nn.Module) -> nn.Module:
    for name in ("c_proj", "o_proj", "out_proj", "dense"):
        found = getattr(attn, name, None)
        if isinstance(found, nn.Module) and hasattr(found, "weight"):
            return found
    raise LogitsUnavailableError(f"{type(attn).__name__}: its output projection could not be found")


def _head_slices(proj: nn.Module, n_heads: int) -> list[torch.Tensor]:
    """Each head's (D, d) slice of the output projection, so that head_out (D,) @ slice is its write."""
    w = cast(torch.Tensor, proj.weight).detach().double()
    if type(proj).__name__ == "Conv1D":  # GPT-2: y = x @ W + b, W (in, out)
        full = w
    else:  # nn.Linear: y = x @ Wᵀ + b, W (out, in)
        full = w.T
    d_head = full.shape[0] // n_heads
    return [full[h * d_head:(h + 1) * d_head] for h in range(n_heads)]


@dataclass
class LogitParts:
    """Each part's share of one logit (or logit difference) at one position, float64."""

    heads: np.ndarray
    """[layer, head]: each head's output through its slice of the output projection."""
    attention_bias: np.ndarray
    """[layer]: the output projection's bias (zero where it has none)."""
    mlp: np.ndarray
    """[layer]: each MLP's output."""
    embeddings: float
    """The token (and position) embeddings."""
    offset: float
    """The final norm's offset β · u and the unembedding's bias."""
    logit: float
    """The model's own logit (or difference) at the position."""
    scale: float
    """The final norm's frozen 1/σ (or 1/rms) at the position."""

    def total(self) -> float:
        """The sum of every part: equal to :attr:`logit` to float rounding."""
        return float(self.heads.sum() + self.attention_bias.sum() + self.mlp.sum() + self.embeddings + self.offset)


def _check_pre_ln(runner: Any) -> list[nn.Module]:
    if runner.info.kind != "decoder":
        raise LogitsUnavailableError(
            f"{runner.info.name!r} is an {runner.info.kind}: direct logit attribution needs a pre-LN decoder, whose "
            "residual stream is a sum of its parts (a post-LN encoder such as BERT normalises the stream after every "
            "sublayer, so no part's share of the logit is defined without freezing every norm); the logit lens works "
            "for masked LMs too")
    layers = (layer_modules(runner) or {}).get("self")
    if not layers or len(layers) != runner.info.n_layers:
        raise LogitsUnavailableError(f"{runner.info.name!r}: could not find its {runner.info.n_layers} layer modules")
    for layer in layers:
        if not (isinstance(getattr(layer, "mlp", None), nn.Module) and any(
                isinstance(getattr(layer, n, None), nn.Module) for n in ("attn", "self_attn"))):
            raise LogitsUnavailableError(f"{runner.info.name!r} ({type(layer).__name__}): not a pre-LN block with "
                                         "attn/self_attn and mlp")
    return list(layers)


def logit_parts(runner: Any, text: str, tokens: tuple[int, ...], position: int = -1) -> LogitParts:
    """Direct logit attribution of ``tokens`` (one id, or (a, b) for a difference) at ``position`` of ``text``."""
    _unembedding(runner)
    layers = _check_pre_ln(runner)
    norm = final_norm(runner)
    n_heads = runner.info.n_heads
    heads_out: dict[AttentionSite, torch.Tensor] = {}
    attn_out: dict[int, torch.Tensor] = {}
    mlp_out: dict[int, torch.Tensor] = {}
    first_in: list[torch.Tensor] = []
    pre_norm: list[torch.Tensor] = []

    def record(site: AttentionSite, out: torch.Tensor) -> None:
        heads_out[site] = out[0].detach().double()

    def first(t: Any) -> torch.Tensor:
        return (t[0] if isinstance(t, (tuple, list)) else t)[0].detach().double()

    handles = [norm.register_forward_pre_hook(lambda _m, a: pre_norm.append(a[0][0].detach().double())),
               layers[0].register_forward_pre_hook(
                   lambda _m, a, kw: first_in.append((a[0] if a else kw["hidden_states"])[0].detach().double()),
                   with_kwargs=True)]
    for i, layer in enumerate(layers):
        handles.append(_attn(layer).register_forward_hook(
            lambda _m, _a, out, i=i: attn_out.__setitem__(i, first(out))))
        handles.append(_mlp(layer).register_forward_hook(lambda _m, _a, out, i=i: mlp_out.__setitem__(i, first(out))))
    try:
        enc = runner.encode([text], truncation="error")
        with control.recording(record):
            out = runner.forward(enc)
    finally:
        for handle in handles:
            handle.remove()
    T = int(enc.inputs["input_ids"].shape[1])
    pos = position % T if -T <= position < T else None
    if pos is None:
        raise ValueError(f"position {position} is out of range for {T} tokens")
    u = unembedding_direction(runner, tokens)
    x = pre_norm[-1][pos]
    centre = isinstance(norm, nn.LayerNorm) or (hasattr(norm, "bias") and getattr(norm, "bias", None) is not None)
    eps = float(getattr(norm, "eps", None) or getattr(norm, "variance_epsilon", None) or 1e-5)
    if centre:
        scale = 1.0 / float(torch.sqrt(x.var(unbiased=False) + eps))
    else:
        scale = 1.0 / float(torch.sqrt((x * x).mean() + eps))
    weight = getattr(norm, "weight", None)
    gamma = weight.detach().double() if isinstance(weight, torch.Tensor) else torch.ones_like(x)
    gu = gamma * u

    def share(p: torch.Tensor) -> float:
        return float(((p - p.mean()) if centre else p) @ gu) * scale

    L = len(layers)
    heads = np.zeros((L, n_heads))
    bias = np.zeros(L)
    mlp = np.zeros(L)
    total = first_in[0][pos].clone()
    for i, layer in enumerate(layers):
        slices = _head_slices(_o_proj(_attn(layer)), n_heads)
        h_out = heads_out[AttentionSite("self", i)][pos]  # (H, D)
        writes = [h_out[h] @ slices[h] for h in range(n_heads)]
        for h in range(n_heads):
            heads[i, h] = share(writes[h])
        rest = attn_out[i][pos] - torch.stack(writes).sum(0)
        bias[i] = share(rest)
        mlp[i] = share(mlp_out[i][pos])
        total = total + attn_out[i][pos] + mlp_out[i][pos]
    if not torch.allclose(total, x, rtol=1e-4, atol=1e-4 * float(x.abs().max())):
        raise LogitsUnavailableError(f"{runner.info.name!r} ({type(layers[0]).__name__}): the stream before the final "
                                     "norm is not embeddings + attention + MLP outputs, so its parts do not add up to "
                                     "the logit (norms after the sublayers, or parallel sublayers?)")
    offset = 0.0
    beta = getattr(norm, "bias", None)
    if beta is not None:
        offset += float(beta.detach().double() @ u)
    ub = getattr(_unembedding(runner), "bias", None)
    if ub is not None:
        offset += float(ub.detach().double()[tokens[0]]) - (float(ub.detach().double()[tokens[1]])
                                                            if len(tokens) == 2 else 0.0)
    logits = out.logits[0, pos].double()
    logit = float(logits[tokens[0]] - (logits[tokens[1]] if len(tokens) == 2 else 0.0))
    parts = LogitParts(heads=heads, attention_bias=bias, mlp=mlp, embeddings=share(first_in[0][pos]), offset=offset,
                       logit=logit, scale=scale)
    if abs(parts.total() - logit) > 1e-3 * max(1.0, abs(logit)):
        raise LogitsUnavailableError(f"{runner.info.name!r}: the parts sum to {parts.total():.6g}, not the model's "
                                     f"logit {logit:.6g}: its final norm is not a plain LayerNorm or RMSNorm (Gemma's "
                                     "1 + γ?), so no attribution is given")
    return parts


def lens_readout(runner: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    """How the logit lens reads a residual stream ``h`` (..., D) as logits (..., V): a decoder's final norm and
    unembedding, a BERT-style masked LM's MLM head. :class:`LogitsUnavailableError` for a model without an
    unembedding, or a decoder whose blocks are not pre-LN."""
    head = _unembedding(runner)
    if runner.head == "masked-lm":
        read = getattr(runner.model, "cls", None) or getattr(runner.model, "lm_head", None)
        if not isinstance(read, nn.Module):
            raise LogitsUnavailableError(f"{runner.info.name!r}: its masked-LM head could not be found")

        def readout(h: torch.Tensor) -> torch.Tensor:
            return cast(torch.Tensor, read(h))
        return readout
    _check_pre_ln(runner)
    norm = final_norm(runner)

    def read_decoder(h: torch.Tensor) -> torch.Tensor:
        return cast(torch.Tensor, head(norm(h)))
    return read_decoder


@contextmanager
def stream_hooks(runner: Any, sink: Callable[[torch.Tensor], None]) -> Iterator[None]:
    """Inside, every forward of ``runner``'s model hands ``sink`` its residual stream (B, T, D) before the first
    layer and after each layer, in that order (``n_layers + 1`` calls a forward; the last one before the final
    norm). ``model.generate`` makes one forward per step, so a generation's streams arrive step by step."""
    layers = (layer_modules(runner) or {}).get("self") or []
    if len(layers) != runner.info.n_layers:
        raise LogitsUnavailableError(f"{runner.info.name!r}: could not find its {runner.info.n_layers} layer modules")
    handles = [layers[0].register_forward_pre_hook(
        lambda _m, a, kw: sink((a[0] if a else kw["hidden_states"]).detach()), with_kwargs=True)]
    for layer in layers:
        handles.append(layer.register_forward_hook(
            lambda _m, _a, out: sink((out[0] if isinstance(out, (tuple, list)) else out).detach())))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def lens_logits(runner: Any, text: str) -> tuple[torch.Tensor, list[str]]:
    """The logit lens of ``text``: float32 [layer + 1, position, vocab] logits read from the stream after the
    embeddings and after each layer (:func:`lens_readout`), and the tokens."""
    readout = lens_readout(runner)
    streams: list[torch.Tensor] = []
    enc = runner.encode([text], truncation="error")
    with stream_hooks(runner, streams.append):
        runner.forward(enc)
    with torch.inference_mode():
        logits = torch.stack([readout(s)[0].float() for s in streams])
    ids = enc.inputs["input_ids"][0].tolist()
    return logits.cpu(), [str(t) for t in runner.tokenizer.convert_ids_to_tokens(ids)]
