"""What value zeroing needs from a model: each layer's output again, with one token's value vectors set to zero.

Mohebbi, Zuidema, Chrupała and Alishahi (2023), *Quantifying Context Mixing in Transformers* (EACL), measure how much
token i's representation in layer ℓ uses token j by running layer ℓ again from its own (unchanged) input with token
j's value vector v_j set to zero in every head, the attention weights left as they are, and comparing the layer's
output for i with the original. Their reference code (hmohebbi/ValueZeroing) calls the whole layer module (BERT's
``BertLayer``: self-attention, output projection, residual and layer norm, then the feed-forward with its residual and
layer norm) on the previous layer's original output and compares with the next hidden state; this module does the
same for any model whose attention goes through attnwidgets' attention function:

- one forward pass records every layer module's call (its input and keyword arguments: masks, rotary tables) and
  its output, with no key/value cache;
- each layer module is then called again on the same input, the input repeated once per zeroed token (a batch of
  rows, token j's value zeroed in row j only, through :func:`control.editing_values`); the first row of the first
  batch zeroes nothing and must give back the recorded output (a check that calling the layer alone is the layer);
- the raw score is the cosine distance between the original and the altered output of every token i.

Under grouped-query attention zeroing the key/value head's v_j zeroes it for every query head that reads it, so
"every head" holds. Which (i, j) can be affected at all is read from the weights of that first row: where every
head's weight α^h_ij is exactly 0 (a causal or sliding-window mask, padding), zeroing v_j cannot change x_i, and the
score is set to exactly 0 rather than to float rounding. The row normalisation is
:func:`attnwidgets.analysis.value_zeroing.context_mixing`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from . import control
from .cache import ByteLRU
from .encoding import Truncation, check_text
from .partial import layer_modules

__all__ = ["ValueZeroingUnavailableError", "value_zeroing_distances"]

_CHUNK_BYTES = 256 << 20  # per batch of zeroed copies of one layer: its weights (rows x H x n x n) and activations


class ValueZeroingUnavailableError(NotImplementedError):
    """The model's layers or value vectors cannot be reached the way value zeroing needs."""


def _refuse(info: Any, why: str) -> ValueZeroingUnavailableError:
    what = info.model_type or info.name
    return ValueZeroingUnavailableError(
        f"value zeroing needs to run each attention layer of the model again with one token's value vectors set to "
        f"zero, and attnwidgets cannot do that for {what!r} ({info.name}): {why}. It works for encoders and decoders "
        "whose attention layers attnwidgets can label (BERT, RoBERTa, GPT-2, Llama, Mistral, Qwen...)")


def _first(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, (tuple, list)) else out


def _without_cache(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The recorded arguments with any key/value cache taken out (calling the layer again must not grow it; GPT-2
    passes its cache positionally)."""
    from transformers.cache_utils import Cache

    out = {k: (None if isinstance(v, Cache) else v) for k, v in kwargs.items()}
    if "use_cache" in out:
        out["use_cache"] = False
    return tuple(None if isinstance(a, Cache) else a for a in args), out


class _Recorder:
    """Forward hooks on the layer modules: each layer's first call (input, other arguments) and its output."""

    def __init__(self, layers: list[nn.Module]) -> None:
        self.calls: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self.outputs: dict[int, torch.Tensor] = {}
        self.handles = []
        for i, layer in enumerate(layers):
            self.handles.append(layer.register_forward_pre_hook(
                lambda _m, a, kw, i=i: self.calls.setdefault(i, (a, dict(kw))), with_kwargs=True))
            self.handles.append(layer.register_forward_hook(
                lambda _m, _a, out, i=i: self.outputs.setdefault(i, _first(out))))

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def _hidden_arg(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[torch.Tensor, bool]:
    """The layer's input hidden states, and whether they came as the first positional argument."""
    if args and isinstance(args[0], torch.Tensor):
        return args[0], True
    hidden = kwargs.get("hidden_states")
    if not isinstance(hidden, torch.Tensor):
        raise KeyError("hidden_states")
    return hidden, False


def _layer_again(runner: Any, layer: nn.Module, lay: int, call: tuple[tuple[Any, ...], dict[str, Any]],
                 original: torch.Tensor, positions: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Cosine distances [i, j] of layer ``lay``'s output when v_j is zeroed (j over ``positions``, i over all
    positions), and which (i, j) any head of the layer can attend to at all, [i, j] over ``positions``."""
    info = runner.info
    args, kwargs = _without_cache(*call)
    hidden, positional = _hidden_arg(args, kwargs)
    B, T, d = hidden.shape
    if B != 1:
        raise ValueError("value zeroing runs one input at a time")
    H = info.n_heads if isinstance(info.n_heads, int) else max(info.n_heads)
    per_row = 4 * (3 * H * T * T + 16 * T * d)
    rows = max(1, min(len(positions) + 1, _CHUNK_BYTES // max(1, per_row)))
    target = control.AttentionSite("self", lay)
    orig = original[0].double()  # (T, d)
    dist = np.zeros((T, len(positions)), dtype=np.float64)
    visible: np.ndarray | None = None
    todo: list[int | None] = [None, *positions]  # None: the check row, nothing zeroed
    done = 0
    while done < len(todo):
        chunk = todo[done:done + rows]
        zero = torch.zeros(len(chunk), T, dtype=torch.bool, device=hidden.device)
        for b, j in enumerate(chunk):
            if j is not None:
                zero[b, j] = True
        seen: list[int] = []

        def edit(site: control.AttentionSite, _module: nn.Module, value: torch.Tensor,
                 zero: torch.Tensor = zero, seen: list[int] = seen) -> torch.Tensor | None:
            if site != target:
                return None
            if value.shape[0] != zero.shape[0] or value.shape[2] != T:
                raise _refuse(info, f"layer {lay}'s attention got values of shape {tuple(value.shape)}, not "
                                    f"({zero.shape[0]}, heads, {T}, head size)")
            seen.append(1)
            return value.masked_fill(zero[:, None, :, None], 0.0)

        weights: list[torch.Tensor] = []

        def keep(call_: control.AttentionCall, w: torch.Tensor, weights: list[torch.Tensor] = weights) -> None:
            if call_.site == target and not weights:
                weights.append(w[0].detach())

        x = hidden.expand(len(chunk), T, d)
        again = (x, *args[1:]) if positional else args
        kw = kwargs if positional else {**kwargs, "hidden_states": x}
        with torch.inference_mode(), control.editing_values(edit), control.attention_hooks([keep]):
            out = _first(layer(*again, **kw))
        if len(seen) != 1:
            raise _refuse(info, f"calling layer {lay} ({type(layer).__name__}) again went through attnwidgets' "
                                f"attention function {len(seen)} times, not once, so its value vectors were not "
                                "reached")
        out = out.double()
        if done == 0:
            rtol = 1e-4 if original.dtype in (torch.float32, torch.float64) else 3e-2  # half precision: its eps
            tol = rtol * float(orig.abs().max()) + 1e-6
            if out.shape[1:] != orig.shape or not torch.allclose(out[0], orig, rtol=rtol, atol=tol):
                raise _refuse(info, f"calling layer {lay} ({type(layer).__name__}) again on its recorded input "
                                    "does not give back its output")
            if not weights:
                raise _refuse(info, f"layer {lay}'s attention weights were not seen")
            w = weights[0].float().amax(0).cpu().numpy()  # (T, T): the largest weight over heads
            visible = w[np.ix_(positions, positions)] > 0
        num = (out * orig[None]).sum(-1)
        den = out.norm(dim=-1) * orig.norm(dim=-1)[None]
        cos = torch.where(den > 0, num / torch.where(den > 0, den, 1.0), 1.0)
        for b, j in enumerate(chunk):
            if j is not None:
                dist[:, positions.index(j)] = (1.0 - cos[b]).clamp_min(0.0).cpu().numpy()
        done += len(chunk)
    assert visible is not None
    return dist[positions], visible


_cache: ByteLRU[tuple[np.ndarray, np.ndarray]] = ByteLRU(128 << 20)


def value_zeroing_distances(runner: Any, text: str, text_pair: str | None = None, *,
                            truncation: Truncation = "warn") -> tuple[np.ndarray, np.ndarray]:
    """Per layer, the cosine distance between token i's layer output and its output with v_j zeroed in every head.

    Returns ``(distances, visible)``, both [L, n, n] (float64 and bool; L layers, n tokens, padding removed, the
    same positions as ``runner.run(...)``'s result): ``distances[l, i, j]`` = 1 − cos(x̃_i^{¬j}, x_i) for layer l,
    and ``visible[l, i, j]`` whether any head of layer l gives token j a weight above 0 in row i (where it does not,
    the distance is exactly 0). One forward pass plus one call of each layer module per block of zeroed tokens;
    cached per runner and input. Raises :class:`ValueZeroingUnavailableError` (a NotImplementedError) naming the
    model type when the layers or their value vectors cannot be reached.
    """
    check_text(text, "text")
    info = runner.info
    if info.kind == "encoder-decoder":
        raise _refuse(info, "it is an encoder-decoder (the encoder's self-attention would be the natural first step)")
    key = (id(runner), runner.cache_key(text, text_pair, None, None, truncation))
    hit = _cache.get(key)
    if hit is not None:
        return hit
    layers = (layer_modules(runner) or {}).get("self")
    if not layers or len(layers) != info.n_layers:
        raise _refuse(info, f"its {info.n_layers} layer modules were not found")
    enc = runner.encode([text], [text_pair], None, truncation)
    rec = _Recorder(layers)
    try:
        runner.forward(enc)
    finally:
        rec.remove()
    if sorted(rec.calls) != list(range(len(layers))) or sorted(rec.outputs) != list(range(len(layers))):
        raise _refuse(info, "not every layer module was called in the forward pass")
    positions = torch.nonzero(runner.token_fields(enc, 0)["valid"]).flatten().tolist()
    dists, visible = [], []
    for lay, layer in enumerate(layers):
        try:
            d, v = _layer_again(runner, layer, lay, rec.calls[lay], rec.outputs[lay], positions)
        except (KeyError, TypeError, RuntimeError) as exc:
            raise _refuse(info, f"calling layer {lay} ({type(layer).__name__}) again failed: "
                                f"{type(exc).__name__}: {exc}") from exc
        dists.append(d)
        visible.append(v)
    found = (np.stack(dists), np.stack(visible))
    for a in found:
        a.setflags(write=False)
    _cache.put(key, found, sum(a.nbytes for a in found))
    return found
