"""Capturing queries, keys and values from the real model, for the QK step-through.

One forward pass runs with a control hook (see :mod:`attnwidgets.runner.control`) that copies, for the chosen
layers of one stack, the query/key/value tensors exactly as the model's attention function receives them: after
any rotary embedding, before key/value heads are repeated for grouped-query attention. Everything is turned into
numpy here, so the widget and the static plot never touch torch.

The softmax a capture carries is the model's own; ``recompute_error`` says how far ``softmax(q·kᵀ · scaling + mask)``
recomputed from the captured vectors is from it (about 1e-7 for every model whose attention is plain scaled
dot-product attention; larger for models that add soft-capping or position biases inside attention).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..result import ModelInfo
from . import control
from .runner import Runner, get_runner

__all__ = ["QKCapture", "capture_qk", "capture_qk_layers"]


@dataclass(frozen=True, eq=False)
class QKCapture:
    """Queries, keys, values and each step of attention for one layer of one stack (H heads, n queries, m keys).

    Attributes
    ----------
    tokens : list[str]
        Query tokens (n,).
    key_tokens : list[str]
        Key tokens (m,); the same as ``tokens`` except for cross-attention.
    layer : int
        Layer index within the stack.
    stack : str
        "self", "encoder", "decoder" or "cross".
    q : np.ndarray
        (H, n, d) float32 query vectors, after rotary embeddings, as the model multiplies them.
    k, v : np.ndarray
        (H_kv, m, d) float32 key and value vectors (H_kv < H under grouped-query attention).
    kv_head : np.ndarray
        (H,) int64: the key/value head each query head reads (``h // (H // H_kv)``).
    scaling : float
        The factor the model multiplies q·k by (usually 1/√d).
    mask : np.ndarray
        (n, m) bool: True where the query may attend to the key (not padding, not in the future).
    logits : np.ndarray
        (H, n, m) float32 raw q·k.
    scaled : np.ndarray
        (H, n, m) float32 ``logits * scaling`` (masked keys keep their value; ``mask`` says which they are).
    weights : np.ndarray
        (H, n, m) float32 the model's softmax weights (0 at masked keys); rows sum to 1.
    output : np.ndarray
        (H, n, d) float32 ``weights @ v``: the head's slice of the attention output, before the output projection.
    recompute_error : float
        Largest absolute difference between ``weights`` and the softmax recomputed from ``scaled`` and ``mask``.
    model : ModelInfo | None
        Which model made it.
    """

    tokens: list[str]
    key_tokens: list[str]
    layer: int
    stack: str
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    kv_head: np.ndarray
    scaling: float
    mask: np.ndarray
    logits: np.ndarray
    scaled: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    recompute_error: float = 0.0
    model: ModelInfo | None = field(default=None)

    @property
    def n_heads(self) -> int:
        return int(self.q.shape[0])

    @property
    def head_dim(self) -> int:
        return int(self.q.shape[-1])

    def head(self, h: int) -> dict[str, np.ndarray]:
        """One head's arrays: q (n, d), k (m, d), v (m, d), logits/scaled/weights (n, m), output (n, d).

        Examples
        --------
        >>> import numpy as np
        >>> c = QKCapture.from_vectors(np.ones((2, 3, 4)), np.ones((1, 3, 4)), np.ones((1, 3, 4)), ["a", "b", "c"])
        >>> c.head(1)["k"].shape, c.kv_head.tolist()
        ((3, 4), [0, 0])
        """
        if not 0 <= h < self.n_heads:
            raise IndexError(f"head {h} is out of range: this layer has {self.n_heads} heads (0..{self.n_heads - 1})")
        g = int(self.kv_head[h])
        return {"q": self.q[h], "k": self.k[g], "v": self.v[g], "logits": self.logits[h], "scaled": self.scaled[h],
                "weights": self.weights[h], "output": self.output[h]}

    @classmethod
    def from_vectors(
        cls,
        q: np.ndarray,
        k: np.ndarray,
        v: np.ndarray,
        tokens: Sequence[str],
        *,
        key_tokens: Sequence[str] | None = None,
        scaling: float | None = None,
        mask: np.ndarray | None = None,
        layer: int = 0,
        stack: str = "self",
        model: ModelInfo | None = None,
        weights: np.ndarray | None = None,
    ) -> QKCapture:
        """Build a capture from q (H, n, d), k and v (H_kv, m, d), computing every step in numpy.

        ``weights`` (H, n, m), when given, are the model's own and are kept; ``recompute_error`` compares them with
        the softmax recomputed here.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> c = QKCapture.from_vectors(rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4)),
        ...                            rng.normal(size=(2, 3, 4)), ["a", "b", "c"])
        >>> c.scaling, np.allclose(c.weights.sum(-1), 1)
        (0.5, True)
        """
        q = np.asarray(q, dtype=np.float32)
        k = np.asarray(k, dtype=np.float32)
        v = np.asarray(v, dtype=np.float32)
        n_heads, n, d = q.shape
        n_kv, m = k.shape[0], k.shape[1]
        if n_heads % n_kv:
            raise ValueError(f"{n_heads} query heads cannot share {n_kv} key/value heads evenly")
        kv_head = np.arange(n_heads, dtype=np.int64) // (n_heads // n_kv)
        if scaling is None:
            scaling = float(d) ** -0.5
        allowed = np.ones((n, m), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        logits = np.einsum("hnd,hmd->hnm", q, k[kv_head]).astype(np.float32)
        scaled = (logits * np.float32(scaling)).astype(np.float32)
        recomputed = _masked_softmax(scaled, allowed)
        if weights is None:
            weights = recomputed
            error = 0.0
        else:
            weights = np.asarray(weights, dtype=np.float32)
            error = float(np.abs(weights - recomputed).max()) if weights.size else 0.0
        output = np.einsum("hnm,hmd->hnd", weights, v[kv_head]).astype(np.float32)
        return cls(tokens=list(tokens), key_tokens=list(key_tokens if key_tokens is not None else tokens),
                   layer=layer, stack=stack, q=q, k=k, v=v, kv_head=kv_head, scaling=float(scaling), mask=allowed,
                   logits=logits, scaled=scaled, weights=weights, output=output, recompute_error=error, model=model)

    def __repr__(self) -> str:
        return (f"QKCapture({self.stack} layer {self.layer}, {self.n_heads} heads x {len(self.tokens)} queries x "
                f"{len(self.key_tokens)} keys, d={self.head_dim}, scaling={self.scaling:.4g})")


def _masked_softmax(x: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Softmax over the last axis of (H, n, m), only over allowed keys (others get 0)."""
    z = np.where(allowed, x, -np.inf).astype(np.float64)
    top = z.max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(z - top)
    total = e.sum(-1, keepdims=True)
    return (e / np.where(total > 0, total, 1.0)).astype(np.float32)


def _allowed(call: control.AttentionCall, n: int, m: int) -> np.ndarray:
    """(n, m) bool of the keys each query of batch row 0 may see, from the call's additive or boolean mask."""
    if call.attention_mask is None:
        return np.ones((n, m), dtype=bool)
    probe = torch.zeros((1, 1, n, m))
    return call.valid_keys(probe)[0, 0].detach().cpu().numpy().astype(bool)


def capture_qk_layers(
    text: str,
    text_pair: str | None = None,
    *,
    model: str | Runner | None = None,
    revision: str | None = None,
    layers: Sequence[int] | None = None,
    stack: str = "self",
    target: str | None = None,
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
    seen: dict[int, tuple[control.AttentionCall, torch.Tensor]] = {}

    def hook(call: control.AttentionCall, weights: torch.Tensor) -> None:
        if call.site.stack == stack and call.site.layer in wanted:
            seen[call.site.layer] = (call, weights.detach())
        return None

    runner.forward(enc, [hook])
    res = runner.run(text, text_pair, target=target)  # cached: tokens of the same input
    queries = res.target_tokens if stack in ("decoder", "cross") else res.tokens
    keys = res.target_tokens if stack == "decoder" else res.tokens
    assert queries is not None and keys is not None
    out = []
    for layer in wanted:
        if layer not in seen:
            raise RuntimeError(f"the model ran no {stack} attention at layer {layer} through attnwidgets' attention "
                               "function; QK capture needs a model loaded by attnwidgets (eager attention)")
        call, weights = seen[layer]
        t = lambda x: x[0].detach().float().cpu().numpy()  # noqa: E731  (B, H, T, D) -> (H, T, D), batch row 0
        q, k, v = t(call.query), t(call.key), t(call.value)
        n, m = q.shape[1], k.shape[1]
        cap = QKCapture.from_vectors(
            q, k, v, queries, key_tokens=keys, scaling=call.scaling, mask=_allowed(call, n, m), layer=layer,
            stack=stack, model=info, weights=weights[0].float().cpu().numpy(),
        )
        if cap.recompute_error > 1e-4:
            warnings.warn(
                f"{info.name!r} layer {layer}: softmax(q·k · scaling + mask) differs from the model's weights by "
                f"{cap.recompute_error:.2g}; its attention adds something (soft-capping, position bias). The "
                "softmax panel shows the model's own weights.", UserWarning, stacklevel=2)
        out.append(cap)
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
) -> QKCapture:
    """Capture one layer's queries, keys and values and every step from q·k to the weighted sum of values.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> c = aw.capture_qk("The cat sat.", layer=2)
    >>> r = aw.run("The cat sat.")
    >>> bool(np.allclose(c.weights, r.attention[2], atol=1e-6)), round(c.scaling ** -2)
    (True, 32)
    """
    return capture_qk_layers(text, text_pair, model=model, revision=revision, layers=[layer], stack=stack,
                             target=target)[0]
