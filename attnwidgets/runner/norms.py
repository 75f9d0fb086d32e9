"""What norm-based attention needs from a forward pass: per token, the vectors each head moves, as small statistics.

Kobayashi et al. 2020 (*Attention is Not Only a Weight: Analyzing Transformers with Vector Norms*, EMNLP) write a
multi-head attention layer's output for token i as

    y_i = Σ_h Σ_j α^h_ij f_h(x_j) + b_O,        f_h(x) = (x W_V^h + b_V^h) W_O^h

with W_O^h the rows of the output projection that read head h. ``b_O`` does not depend on j (nor on h), so it is
left out of every f_h, as in the paper and its reference code (gorokoba560/norm-analysis-of-transformer, which
multiplies the value vectors by ``dense.weight`` only).

A forward pass inside :func:`watching_values` (``control.watching_values``) hands us, per layer, the values
v_j^h = x_j W_V^h + b_V^h (already projected, bias included) and the head outputs Σ_j α^h_ij v_j^h. From them, per
layer and token, without anything n x n:

- ``gram[i, h, g] = <f_h(x_i), f_g(x_i)>``: its diagonal is ‖f_h(x_i)‖², the per-key norms that turn a weight map into
  the norm map ‖α^h_ij f_h(x_j)‖ = α^h_ij ‖f_h(x_j)‖;
- ``dot[i, h] = <y_i - b_O, f_h(x_i)>`` and ``out_sq[i] = ‖y_i - b_O‖²``: with the attention diagonal α^h_ii these
  give the mixing ratio of the whole layer (see :mod:`attnwidgets.analysis.norms`).

Under grouped-query attention the value head of query head h is h // (H / H_kv).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from . import control
from .cache import ByteLRU
from .capture import Capture
from .encoding import Truncation, check_text

__all__ = ["NormInputsUnavailableError", "norm_inputs", "norm_inputs_batch", "output_projection"]

# Attribute of the attention module that holds its output projection, tried in order: Llama/Mistral/Qwen/Gemma
# (o_proj), BART/Marian/Whisper (out_proj), T5 (o), GPT-2 (c_proj, a Conv1D: weight is (in, out)), GPT-NeoX (dense).
_OWN = ("o_proj", "out_proj", "o", "c_proj", "dense")
# BERT-style encoders (BERT, RoBERTa, ELECTRA, MiniLM...): the projection is a sibling, parent.output.dense.
_SIBLING = ("output", "dense")

_BLOCK = 1024  # keys per block when making f_h(x_j): at most H x 1024 x hidden floats alive at once


class NormInputsUnavailableError(NotImplementedError):
    """This model's attention output projection cannot be split by head, so norm-based attention is not available."""


def _weight_in_out(proj: nn.Module) -> torch.Tensor | None:
    """The projection's matrix as (in, out) for ``x @ W``: Linear keeps (out, in), transformers' Conv1D (in, out)."""
    weight = getattr(proj, "weight", None)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        return None
    if isinstance(proj, nn.Linear):
        return weight.t()
    if type(proj).__name__ == "Conv1D":
        return weight
    return None


def output_projection(model: nn.Module, module: nn.Module, n_heads: int, head_dim: int,
                      model_type: str = "") -> torch.Tensor:
    """The output projection of attention ``module`` as an (H·D, hidden) matrix W_O, rows of head h at h·D:(h+1)·D.

    Raises :class:`NormInputsUnavailableError` naming the model type when none is found, or when the one found does
    not read H·D inputs (a fused or differently split projection we cannot slice by head).
    """
    candidates: list[nn.Module] = [getattr(module, name) for name in _OWN
                                   if isinstance(getattr(module, name, None), nn.Module)]
    parent = _parent(model, module)
    if parent is not None:
        sib: Any = parent
        for part in _SIBLING:
            sib = getattr(sib, part, None)
        if isinstance(sib, nn.Module):
            candidates.append(sib)
    for proj in candidates:
        w = _weight_in_out(proj)
        if w is not None and w.shape[0] == n_heads * head_dim:
            return w
    what = model_type or type(model).__name__
    raise NormInputsUnavailableError(
        f"norm-based attention needs each head's slice of the attention output projection, and attnwidgets found "
        f"none in {what!r} ({type(module).__name__}: no o_proj, out_proj, o, c_proj or dense of {n_heads} x {head_dim} "
        "inputs, nor a BERT-style output.dense beside it). Models with a fused or differently split output "
        "projection are not supported; use a BERT, GPT-2, BART, T5 or Llama-style model")


def _parent(model: nn.Module, module: nn.Module) -> nn.Module | None:
    for _name, candidate in model.named_modules():
        if any(child is module for child in candidate.children()):
            return candidate
    return None


class _Watcher:
    """Collects (gram, dot, out_sq) per site during one forward pass (first call of a site only)."""

    def __init__(self, model: nn.Module, model_type: str, stacks: tuple[str, ...]) -> None:
        self.model = model
        self.model_type = model_type
        self.stacks = stacks
        self.found: dict[control.AttentionSite, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.projections: dict[int, torch.Tensor] = {}

    def __call__(self, site: control.AttentionSite, module: nn.Module, value: torch.Tensor,
                 out: torch.Tensor) -> None:
        if site.stack not in self.stacks or site in self.found:
            return
        with torch.no_grad():
            B, T, H, D = out.shape
            n_kv, S = value.shape[1], value.shape[2]
            if T != S:
                raise NormInputsUnavailableError(f"{site.stack} layer {site.layer} has {T} queries and {S} keys: "
                                                 "norm-based attention here covers self-attention only")
            w = self.projections.get(id(module))
            if w is None:
                w = output_projection(self.model, module, H, D, self.model_type).detach().double()
                self.projections[id(module)] = w
            w_h = w.reshape(H, D, -1)  # (H, D, hidden)
            group = H // n_kv
            # float64: the mixing ratio subtracts these (‖y - F_ii‖² = ‖y‖² - 2 α·dot + αᵀGα), and a token that keeps
            # nearly everything (a causal model's first) would lose its small mixing part to float32 rounding
            v = value.detach().double()
            gram = torch.empty(B, S, H, H, dtype=torch.float64, device=v.device)
            dot = torch.empty(B, S, H, dtype=torch.float64, device=v.device)
            y = out.detach().double().reshape(B, T, H * D) @ w  # Σ_h Σ_j α f_h(x_j), without b_O
            for start in range(0, S, _BLOCK):
                stop = min(S, start + _BLOCK)
                vb = v[:, :, start:stop].repeat_interleave(group, dim=1)  # (B, H, s, D)
                fx = torch.einsum("bhsd,hde->bshe", vb, w_h)  # (B, s, H, hidden)
                gram[:, start:stop] = fx @ fx.transpose(-1, -2)
                dot[:, start:stop] = torch.einsum("bshe,bse->bsh", fx, y[:, start:stop])
            out_sq = (y * y).sum(-1)
            self.found[site] = (gram.cpu().numpy(), dot.cpu().numpy(), out_sq.cpu().numpy())


_cache: ByteLRU[dict[str, np.ndarray]] = ByteLRU(256 << 20)


def norm_inputs(runner: Any, text: str, text_pair: str | None = None, *, target: str | None = None,
                truncation: Truncation = "warn") -> dict[str, np.ndarray]:
    """One forward pass of ``runner`` on the input, and per layer and token what norm-based attention needs.

    Returns arrays (float64, ``value_norms`` float32; L layers of the self-attention stack, or the encoder's; H
    heads; n tokens, padding removed, the same positions as ``runner.run(...)``'s result):

    - ``"gram"`` [L, n, H, H]: ⟨f_h(x_i), f_g(x_i)⟩;
    - ``"value_norms"`` [L, H, n]: ‖f_h(x_j)‖ (the square root of the gram diagonal);
    - ``"dot"`` [L, n, H]: ⟨y_i, f_h(x_i)⟩ and ``"out_sq"`` [L, n]: ‖y_i‖², y_i the layer's attention output
      before the output bias.

    Cached per runner and input (the attention-weight result is cached separately by ``runner.run``).
    """
    return norm_inputs_batch(runner, [text], [text_pair], targets=[target], truncation=truncation)[0]


def norm_inputs_batch(runner: Any, texts: list[str], text_pairs: list[str | None] | None = None, *,
                      targets: list[str | None] | None = None, truncation: Truncation = "warn",
                      batch_size: int = 16) -> list[dict[str, np.ndarray]]:
    """:func:`norm_inputs` of many inputs, ``batch_size`` of them per forward pass (padding masked out)."""
    n = len(texts)
    pairs = list(text_pairs) if text_pairs is not None else [None] * n
    tgts = list(targets) if targets is not None else [None] * n
    for i, text in enumerate(texts):
        check_text(text, f"texts[{i}]")
    keys = [(id(runner), runner.cache_key(texts[i], pairs[i], tgts[i], None, truncation)) for i in range(n)]
    out: list[dict[str, np.ndarray] | None] = [_cache.get(k) for k in keys]
    todo = [i for i in range(n) if out[i] is None]
    for start in range(0, len(todo), batch_size):
        rows = todo[start:start + batch_size]
        found = _forward(runner, [texts[i] for i in rows], [pairs[i] for i in rows], [tgts[i] for i in rows],
                         truncation)
        for i, f in zip(rows, found, strict=True):
            out[i] = f
            _cache.put(keys[i], f, sum(a.nbytes for a in f.values()))
    return [f for f in out if f is not None]


def _forward(runner: Any, texts: list[str], pairs: list[str | None], targets: list[str | None],
             truncation: Truncation) -> list[dict[str, np.ndarray]]:
    info = runner.info
    stacks = ("encoder",) if info.kind == "encoder-decoder" else ("self",)
    enc = runner.encode(texts, pairs, targets, truncation)
    watcher = _Watcher(runner.model, info.model_type, stacks)
    held = Capture() if runner.keeps_lazy(enc) else None
    with control.watching_values(watcher):
        runner.forward(enc, capture=held)
    sites = sorted(watcher.found, key=lambda s: s.layer)
    if len(sites) != info.n_layers:
        raise NormInputsUnavailableError(
            f"{info.name!r}: {len(sites)} of its {info.n_layers} attention layers went through attnwidgets' attention "
            "function with values we could read; norm-based attention needs all of them")
    results = []
    for row in range(len(texts)):
        idx = torch.nonzero(runner.token_fields(enc, row)["valid"]).flatten().numpy()
        gram = np.stack([watcher.found[s][0][row, idx] for s in sites])
        dot = np.stack([watcher.found[s][1][row, idx] for s in sites])
        out_sq = np.stack([watcher.found[s][2][row, idx] for s in sites])
        diag = np.clip(np.diagonal(gram, axis1=-2, axis2=-1), 0.0, None)  # [L, n, H]
        found = {"gram": gram, "dot": dot, "out_sq": out_sq,
                 "value_norms": np.ascontiguousarray(np.sqrt(diag).transpose(0, 2, 1), dtype=np.float32)}
        for a in found.values():
            a.setflags(write=False)
        results.append(found)
    return results
