"""The plain result of a QK capture: queries, keys, values and every step of attention, as numpy (no torch).

Made by :func:`attnwidgets.runner.capture_qk` (runner/qk.py); shown by :class:`attnwidgets.QKStepThrough` and
:func:`attnwidgets.plots.plot_qk`. Kept apart from the runner so widgets and plots can use it without importing torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .html_repr import repr_html
from .result import ModelInfo

__all__ = ["QKCapture", "Rotary", "masked_softmax", "rotate_pairs"]


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
        Largest absolute difference between ``weights`` and the softmax recomputed from ``scaled + bias`` and
        ``mask``.
    model : ModelInfo | None
        Which model made it.
    bias : np.ndarray | None
        (H, n, m) float32 the additive position bias the model adds to the scaled logits before the softmax (T5's
        relative-position bias, ALiBi's linear bias), or None when it adds none. The softmax is over
        ``scaled + bias`` (masked keys excluded).
    bucket : np.ndarray | None
        (n, m) int64: T5's relative-position bucket of each (query, key) pair (the row of the bias table each
        head's bias is read from: ``bias[h, i, j] == table[bucket[i, j], h]``); None when the bias has no buckets.
    rope : Rotary | None
        A rotary model's step before q·k (Llama, Mistral, GPT-NeoX): q and k before the rotation, the angle of each
        pair of dimensions at each position, and q·k before it; None for a model without rotary embeddings.
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

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
    bias: np.ndarray | None = None
    bucket: np.ndarray | None = None
    rope: Rotary | None = None

    @property
    def biased(self) -> np.ndarray:
        """(H, n, m) float32 what the softmax is taken of: ``scaled + bias`` (``scaled`` when there is no bias)."""
        return self.scaled if self.bias is None else (self.scaled + self.bias).astype(np.float32)

    @property
    def n_heads(self) -> int:
        return int(self.q.shape[0])

    @property
    def head_dim(self) -> int:
        return int(self.q.shape[-1])

    def head(self, h: int) -> dict[str, np.ndarray]:
        """One head's arrays: q (n, d), k (m, d), v (m, d), logits/scaled/weights (n, m), output (n, d); with a
        bias also ``bias`` and ``biased`` (n, m), and ``bucket`` (n, m) when the bias has buckets.

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
        out = {"q": self.q[h], "k": self.k[g], "v": self.v[g], "logits": self.logits[h], "scaled": self.scaled[h],
               "weights": self.weights[h], "output": self.output[h]}
        if self.bias is not None:
            out["bias"] = self.bias[h]
            out["biased"] = (self.scaled[h] + self.bias[h]).astype(np.float32)
            if self.bucket is not None:
                out["bucket"] = self.bucket
        if self.rope is not None:
            out["q_pre"] = self.rope.q[h]
            out["k_pre"] = self.rope.k[g]
            out["logits_pre"] = self.rope.logits[h]
            out["angle"] = self.rope.angle
        return out

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
        bias: np.ndarray | None = None,
        bucket: np.ndarray | None = None,
        rope: Rotary | None = None,
    ) -> QKCapture:
        """Build a capture from q (H, n, d), k and v (H_kv, m, d), computing every step in numpy.

        ``weights`` (H, n, m), when given, are the model's own and are kept; ``recompute_error`` compares them with
        the softmax recomputed here. ``bias`` (H, n, m), when given, is added to the scaled logits before the softmax
        (as T5 and ALiBi models add it: after the scaling); ``bucket`` (n, m) is T5's bucket of each pair.
        ``rope`` is a rotary model's step before q·k (:class:`Rotary`); ``q`` and ``k`` are then its rotated vectors.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> c = QKCapture.from_vectors(rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4)),
        ...                            rng.normal(size=(2, 3, 4)), ["a", "b", "c"])
        >>> c.scaling, np.allclose(c.weights.sum(-1), 1)
        (0.5, True)

        An ALiBi-style bias, ``-slope · (i - j)`` per head, is added after the scaling:

        >>> dist = np.arange(3)[None, :] - np.arange(3)[:, None]
        >>> b = np.array([0.5, 0.25])[:, None, None] * dist
        >>> c = QKCapture.from_vectors(np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), np.ones((2, 3, 4)), ["a", "b", "c"],
        ...                            bias=b)
        >>> [round(float(x), 3) for x in c.weights[0, 0]]  # q·k is 0: the weights are softmax(bias)
        [0.186, 0.307, 0.506]
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
        if bias is not None:
            bias = np.ascontiguousarray(np.broadcast_to(np.asarray(bias, dtype=np.float32), (n_heads, n, m)))
            if bucket is not None:
                bucket = np.asarray(bucket, dtype=np.int64)
                if bucket.shape != (n, m):
                    raise ValueError(f"bucket has shape {bucket.shape}; expected (queries, keys) = {(n, m)}")
        elif bucket is not None:
            raise ValueError("bucket given without a bias: the buckets say which bias each pair gets")
        recomputed = masked_softmax(scaled if bias is None else scaled + bias, allowed)
        if weights is None:
            weights = recomputed
            error = 0.0
        else:
            weights = np.asarray(weights, dtype=np.float32)
            error = float(np.abs(weights - recomputed).max()) if weights.size else 0.0
        output = np.einsum("hnm,hmd->hnd", weights, v[kv_head]).astype(np.float32)
        return cls(tokens=list(tokens), key_tokens=list(key_tokens if key_tokens is not None else tokens),
                   layer=layer, stack=stack, q=q, k=k, v=v, kv_head=kv_head, scaling=float(scaling), mask=allowed,
                   logits=logits, scaled=scaled, weights=weights, output=output, recompute_error=error, model=model,
                   bias=bias, bucket=bucket, rope=rope)

    def __repr__(self) -> str:
        return (f"QKCapture({self.stack} layer {self.layer}, {self.n_heads} heads x {len(self.tokens)} queries x "
                f"{len(self.key_tokens)} keys, d={self.head_dim}, scaling={self.scaling:.4g}"
                f"{', + position bias' if self.bias is not None else ''}"
                f"{', + rotary step' if self.rope is not None else ''})")


def masked_softmax(x: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Softmax over the last axis of (H, n, m), only over allowed keys (others get 0)."""
    z = np.where(allowed, x, -np.inf).astype(np.float64)
    top = z.max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(z - top)
    total = e.sum(-1, keepdims=True)
    return (e / np.where(total > 0, total, 1.0)).astype(np.float32)


def rotate_pairs(x: np.ndarray, angle: np.ndarray, pairs: str = "halves", scale: float = 1.0) -> np.ndarray:
    """Rotate each pair of dimensions of ``x`` (..., T, d) by ``angle`` (T, r/2) radians, times ``scale``; the
    dimensions from r on pass through (partial rotary, GPT-NeoX's ``rotary_pct``).

    ``pairs`` says which dimensions turn together: "halves" pairs p with p + r/2 (Llama, Mistral, GPT-NeoX:
    transformers' ``rotate_half``), "interleaved" pairs 2p with 2p + 1 (GPT-J, Cohere). Pair (a, b) becomes
    ``(a cos θ - b sin θ, b cos θ + a sin θ)``: what ``q * cos + rotate_half(q) * sin`` computes.

    Examples
    --------
    >>> x = np.array([[1.0, 0.0, 0.0, 5.0]])  # one position, d = 4, a rotary part of r = 2
    >>> rotate_pairs(x, np.array([[np.pi / 2]])).round(6).tolist()  # (1, 0) turns a quarter: (0, 1); 0 and 5 stay
    [[0.0, 1.0, 0.0, 5.0]]
    """
    x = np.asarray(x, dtype=np.float64)
    angle = np.asarray(angle, dtype=np.float64)
    r = 2 * angle.shape[-1]
    if r > x.shape[-1] or angle.shape[0] != x.shape[-2]:
        raise ValueError(f"angles {angle.shape} do not fit vectors {x.shape}: expected (positions, ≤ d/2)")
    if pairs == "halves":
        a_idx, b_idx = np.arange(r // 2), np.arange(r // 2, r)
    elif pairs == "interleaved":
        a_idx, b_idx = np.arange(0, r, 2), np.arange(1, r, 2)
    else:
        raise ValueError(f"pairs is {pairs!r}: use 'halves' (Llama, GPT-NeoX) or 'interleaved' (GPT-J)")
    cos, sin = np.cos(angle) * scale, np.sin(angle) * scale
    out = x.copy()
    a, b = x[..., a_idx], x[..., b_idx]
    out[..., a_idx] = a * cos - b * sin
    out[..., b_idx] = b * cos + a * sin
    return out.astype(np.float32)


@dataclass(frozen=True, eq=False)
class Rotary:
    """A rotary model's step before q·k: q and k before the rotation and the angle each pair of dimensions turns
    at each position (RoPE, Su et al. 2021), taken from the model's own ``position_embeddings`` (cos, sin).

    Rotating both by their positions makes q·k depend on the distance between them: pair p of a query at i and a
    key at j meet at angle ``angle[i, p] - angle[j, p]``.

    Attributes
    ----------
    q : np.ndarray
        (H, n, d) float32 queries before the rotation (what the query projection gave).
    k : np.ndarray
        (H_kv, m, d) float32 keys before the rotation.
    angle : np.ndarray
        (m, r/2) float32 radians in (-π, π]: the angle pair p turns at each position (self-attention: the query at
        position i turns by ``angle[i]`` too). ``r = 2 * angle.shape[1]`` dimensions rotate; r < d is partial rotary.
    logits : np.ndarray
        (H, n, m) float32 q·k before the rotation (what q·k would be without position information).
    pairs : str
        "halves" (dimension p turns with p + r/2: Llama, Mistral, GPT-NeoX) or "interleaved" (2p with 2p + 1).
    scale : float
        The factor cos and sin carry (1 for plain RoPE; YaRN-style scaling folds its attention factor in here).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> q, k = rng.normal(size=(1, 3, 4)), rng.normal(size=(1, 3, 4))
    >>> angle = np.arange(3)[:, None] * np.array([[1.0, 0.01]])  # position × frequency of each pair
    >>> rot = Rotary.from_vectors(q, k, angle)
    >>> rq, rk = rot.rotated()
    >>> bool(np.isclose(rq[0, 2] @ rk[0, 1], rotate_pairs(q[0], angle - 1 * np.array([1.0, 0.01]))[2] @ k[0, 1],
    ...                 atol=1e-5))  # only the distance 2 - 1 counts
    True
    """

    q: np.ndarray
    k: np.ndarray
    angle: np.ndarray
    logits: np.ndarray
    pairs: str = "halves"
    scale: float = 1.0

    @property
    def rotary_dim(self) -> int:
        """How many dimensions rotate (r); the rest pass through."""
        return 2 * int(self.angle.shape[-1])

    def rotated(self) -> tuple[np.ndarray, np.ndarray]:
        """q (H, n, d) and k (H_kv, m, d) after the rotation (self-attention: queries at the keys' positions)."""
        n = self.q.shape[1]
        return (rotate_pairs(self.q, self.angle[:n], self.pairs, self.scale),
                rotate_pairs(self.k, self.angle, self.pairs, self.scale))

    @classmethod
    def from_vectors(cls, q: np.ndarray, k: np.ndarray, angle: np.ndarray, *, pairs: str = "halves",
                     scale: float = 1.0) -> Rotary:
        """Build the step from q (H, n, d) and k (H_kv, m, d) before the rotation and the angles (m, r/2)."""
        q = np.asarray(q, dtype=np.float32)
        k = np.asarray(k, dtype=np.float32)
        angle = np.asarray(angle, dtype=np.float32)
        if q.shape[1] > k.shape[1] or angle.shape[0] != k.shape[1] or 2 * angle.shape[1] > q.shape[-1]:
            raise ValueError(f"angles {angle.shape} do not fit queries {q.shape} and keys {k.shape}: expected "
                             "(keys, ≤ d/2) angles for self-attention")
        n_heads, n_kv = q.shape[0], k.shape[0]
        if n_heads % n_kv:
            raise ValueError(f"{n_heads} query heads cannot share {n_kv} key/value heads evenly")
        kv_head = np.arange(n_heads) // (n_heads // n_kv)
        logits = np.einsum("hnd,hmd->hnm", q, k[kv_head]).astype(np.float32)
        wrapped = np.angle(np.exp(1j * angle.astype(np.float64))).astype(np.float32)  # (-π, π]
        return cls(q=q, k=k, angle=wrapped, logits=logits, pairs=pairs, scale=float(scale))
