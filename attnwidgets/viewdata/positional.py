"""Positional encodings, in numpy: sinusoidal, learned, RoPE, ALiBi and T5-style relative buckets.

numpy only (no torch), so these functions work in pure analysis code and in widgets that take plain arrays. They
sit below the widgets and the teaching kit alike: PositionalExplorer draws them, the teaching Transformer takes its
sinusoidal table from here, and :mod:`attnwidgets.teaching.positional` re-exports them under the teaching kit's name.

Notation: positions are ``m`` (query) and ``n`` (key); ``d`` is the model (or head) width; ``i`` indexes the
``d / 2`` frequency pairs. Every function returns arrays shaped for a heatmap: ``[position, dim]`` for the
encodings themselves, ``[query_pos, key_pos]`` (or ``[head, query_pos, key_pos]``) for scores and biases.

Why relative distance emerges
-----------------------------
Sinusoidal encodings put ``sin(m ω_i)`` and ``cos(m ω_i)`` in the pair ``i``, with ``ω_i = 1 / 10000^(2i/d)``.
The dot product of two positions is then, pair by pair,
``sin(m ω) sin(n ω) + cos(m ω) cos(n ω) = cos((m − n) ω)``, so

    PE(m) · PE(n) = Σ_i cos((m − n) ω_i),

which depends on the offset ``m − n`` only and peaks (at ``d / 2``) when ``m = n``. RoPE builds the same fact
into attention itself: it rotates each pair of q and k by ``m θ_i``; the dot product of two rotated vectors only
sees the difference of the angles, ``(m − n) θ_i``. ALiBi and T5 skip the vectors and add a bias that is a
function of ``j − i`` straight to the attention logits.

Examples
--------
>>> import numpy as np
>>> pe = sinusoidal(16, 8)
>>> sim = position_similarity(pe)
>>> bool(np.allclose(sim[3, 5], sim[10, 12]))      # same offset, same similarity
True
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = [
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "learned",
    "position_similarity",
    "relative_positions",
    "rope_angles",
    "rope_frequencies",
    "rope_relative_scores",
    "rope_scores",
    "sinusoidal",
    "sinusoidal_dot_product",
    "sinusoidal_frequencies",
    "t5_bias",
    "t5_relative_position_bucket",
]

RopePairing = Literal["interleaved", "half"]


# -- sinusoidal (Vaswani et al. 2017) ---------------------------------------------------------------------------


def sinusoidal_frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Angular frequencies ``ω_i = 1 / base^(2i/d)`` of the ``d / 2`` sin/cos pairs, (d/2,) float64.

    Examples
    --------
    >>> sinusoidal_frequencies(4).round(4).tolist()
    [1.0, 0.01]
    """
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be an even number >= 2, got {d_model}")
    i = np.arange(d_model // 2, dtype=np.float64)
    return 1.0 / base ** (2 * i / d_model)


def sinusoidal(n_positions: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """Sinusoidal position encodings ``[position, dim]``, (n_positions, d_model) float32.

    ``PE(m, 2i) = sin(m / base^(2i/d))`` and ``PE(m, 2i+1) = cos(m / base^(2i/d))`` (Vaswani et al. 2017, §3.5):
    even columns hold sines, odd columns cosines, frequencies fall from 1 to ~1/base along the width.

    Examples
    --------
    >>> pe = sinusoidal(3, 4)
    >>> [round(float(v), 3) for v in pe[1]]              # [sin 1, cos 1, sin 0.01, cos 0.01]
    [0.841, 0.54, 0.01, 1.0]
    """
    omega = sinusoidal_frequencies(d_model, base)  # (d/2,)
    angles = np.arange(n_positions, dtype=np.float64)[:, None] * omega[None, :]  # (n, d/2)
    pe = np.empty((n_positions, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe.astype(np.float32)


def sinusoidal_dot_product(offset: int | np.ndarray, d_model: int, base: float = 10000.0) -> np.ndarray:
    """``PE(m) · PE(n)`` in closed form as a function of the offset ``m − n``: ``Σ_i cos((m − n) ω_i)``.

    This is the whole reason sinusoidal encodings carry relative position: the absolute ``m`` cancels.

    Examples
    --------
    >>> float(sinusoidal_dot_product(0, 8))             # peak: d / 2
    4.0
    >>> bool(sinusoidal_dot_product(3, 8) == sinusoidal_dot_product(-3, 8))
    True
    """
    omega = sinusoidal_frequencies(d_model, base)
    off = np.asarray(offset, dtype=np.float64)
    return np.cos(off[..., None] * omega).sum(-1)


# -- learned (BERT, GPT-2) ----------------------------------------------------------------------------------------


def learned(
    n_positions: int, d_model: int, *, table: np.ndarray | None = None, seed: int = 0, std: float = 0.02
) -> np.ndarray:
    """Learned absolute position embeddings ``[position, dim]``, (n_positions, d_model) float32.

    A learned table is just a parameter matrix, one row per position, trained with the model (BERT, GPT-2). Pass a
    real ``table`` (e.g. a model's position-embedding weight, loaded through the runner) to look at it; without one
    this returns the *initial* state, ``N(0, std²)`` as BERT and GPT-2 initialise it: no structure at all until
    training puts some in, which is the point of comparing it with :func:`sinusoidal`.

    Examples
    --------
    >>> learned(4, 8).shape
    (4, 8)
    >>> learned(2, 3, table=np.ones((5, 3))).tolist()   # the first n_positions rows of a given table
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    if table is not None:
        table = np.asarray(table, dtype=np.float32)
        if table.ndim != 2 or table.shape[0] < n_positions or table.shape[1] != d_model:
            raise ValueError(
                f"table must be [position, dim] with at least {n_positions} rows and {d_model} columns, "
                f"got shape {table.shape}"
            )
        return table[:n_positions].copy()
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n_positions, d_model)) * std).astype(np.float32)


def position_similarity(pe: np.ndarray, *, normalize: bool = False) -> np.ndarray:
    """Position-to-position similarity ``[query_pos, key_pos]``: ``PE PEᵀ``, or cosine similarity if ``normalize``.

    For :func:`sinusoidal` encodings every diagonal of this matrix is constant (a Toeplitz matrix): the similarity
    depends on ``m − n`` only. For a learned table it shows whatever structure training put there.

    Examples
    --------
    >>> s = position_similarity(sinusoidal(5, 16), normalize=True)
    >>> s.shape, bool(np.allclose(np.diag(s), 1.0))
    ((5, 5), True)
    """
    pe = np.asarray(pe, dtype=np.float64)  # (n, d)
    if normalize:
        pe = pe / np.maximum(np.linalg.norm(pe, axis=-1, keepdims=True), 1e-12)
    return (pe @ pe.T).astype(np.float32)  # (n, n)


def relative_positions(n_queries: int, n_keys: int | None = None) -> np.ndarray:
    """Offsets ``j − i`` (key minus query) ``[query_pos, key_pos]``, (n_queries, n_keys) int64.

    Examples
    --------
    >>> relative_positions(2, 3).tolist()
    [[0, 1, 2], [-1, 0, 1]]
    """
    n_keys = n_queries if n_keys is None else n_keys
    return np.arange(n_keys, dtype=np.int64)[None, :] - np.arange(n_queries, dtype=np.int64)[:, None]


# -- RoPE (Su et al. 2021) -----------------------------------------------------------------------------------------


def rope_frequencies(head_dim: int, base: float = 10000.0) -> np.ndarray:
    """Rotation speeds ``θ_i = base^(-2i/d)`` of the ``head_dim / 2`` pairs, (head_dim/2,) float64."""
    return sinusoidal_frequencies(head_dim, base)


def rope_angles(n_positions: int, head_dim: int, base: float = 10000.0) -> np.ndarray:
    """Rotation angles ``m θ_i`` ``[position, pair]``, (n_positions, head_dim/2) float64."""
    return np.arange(n_positions, dtype=np.float64)[:, None] * rope_frequencies(head_dim, base)[None, :]


def apply_rope(
    x: np.ndarray,
    positions: np.ndarray | None = None,
    *,
    base: float = 10000.0,
    pairing: RopePairing = "interleaved",
) -> np.ndarray:
    """Rotate each 2-D pair of ``x`` (..., T, head_dim) by the angle ``m θ_i`` of its position ``m``.

    Parameters
    ----------
    x : np.ndarray
        Queries or keys, (..., T, head_dim); head_dim even.
    positions : np.ndarray, optional
        (T,) positions ``m``; default ``0 .. T-1``.
    base : float
        ``θ_i = base^(-2i/d)``.
    pairing : {"interleaved", "half"}
        Which dimensions form a pair. ``"interleaved"`` rotates ``(x[2i], x[2i+1])`` as the RoFormer paper writes
        it; ``"half"`` rotates ``(x[i], x[i + d/2])``, the ``rotate_half`` layout of GPT-NeoX and Llama in
        transformers. Same maths, dimensions permuted.

    Returns
    -------
    np.ndarray
        Rotated ``x``, same shape, float64.

    Examples
    --------
    >>> q = np.array([[1.0, 0.0]] * 3)                    # three positions, one pair
    >>> apply_rope(q).round(4).tolist()                  # rotated by 0, 1 and 2 radians
    [[1.0, 0.0], [0.5403, 0.8415], [-0.4161, 0.9093]]
    """
    x = np.asarray(x, dtype=np.float64)
    t, d = x.shape[-2], x.shape[-1]
    pos = np.arange(t, dtype=np.float64) if positions is None else np.asarray(positions, dtype=np.float64)
    if pos.shape != (t,):
        raise ValueError(f"positions must have shape ({t},), got {pos.shape}")
    angles = pos[:, None] * rope_frequencies(d, base)[None, :]  # (T, d/2)
    cos, sin = np.cos(angles), np.sin(angles)
    if pairing == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2)
    elif pairing == "half":
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    else:
        raise ValueError(f"pairing must be 'interleaved' or 'half', got {pairing!r}")
    r1 = x1 * cos - x2 * sin  # a 2-D rotation of every pair
    r2 = x1 * sin + x2 * cos
    out = np.empty_like(x)
    if pairing == "interleaved":
        out[..., 0::2], out[..., 1::2] = r1, r2
    else:
        out[..., : d // 2], out[..., d // 2 :] = r1, r2
    return out


def rope_scores(
    q: np.ndarray, k: np.ndarray, *, base: float = 10000.0, pairing: RopePairing = "interleaved"
) -> np.ndarray:
    """Attention logits ``q_mᵀ k_n`` after RoPE, ``[query_pos, key_pos]`` (T, S) (not scaled by √d).

    ``q`` is (T, head_dim) at positions ``0 .. T-1``, ``k`` is (S, head_dim) at ``0 .. S-1``.
    """
    return apply_rope(q, base=base, pairing=pairing) @ apply_rope(k, base=base, pairing=pairing).T


def rope_relative_scores(
    q: np.ndarray, k: np.ndarray, n_positions: int, *, base: float = 10000.0, pairing: RopePairing = "interleaved"
) -> np.ndarray:
    """The same query vector ``q`` and key vector ``k`` (head_dim,) placed at every position: ``[m, n]`` logits.

    Rotations compose, ``R(mθ)ᵀ R(nθ) = R((n − m)θ)``, so ``q_mᵀ k_n = qᵀ R((n − m)θ) k`` and the matrix is
    constant along each diagonal: the score depends on ``m − n`` only, wherever the pair sits in the sequence.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> s = rope_relative_scores(rng.normal(size=8), rng.normal(size=8), 6)
    >>> bool(np.isclose(s[1, 3], s[2, 4]))
    True
    """
    q = np.broadcast_to(np.asarray(q, dtype=np.float64), (n_positions, len(q)))
    k = np.broadcast_to(np.asarray(k, dtype=np.float64), (n_positions, len(k)))
    return rope_scores(q, k, base=base, pairing=pairing)


# -- ALiBi (Press et al. 2022) ------------------------------------------------------------------------------------


def alibi_slopes(n_heads: int) -> np.ndarray:
    """Per-head ALiBi slopes, (n_heads,) float64: the geometric sequence ``2^(-8h/H)``, h = 1..H.

    For H = 8: 1/2, 1/4, ..., 1/256. When H is not a power of two, the paper's code takes the slopes of the
    nearest smaller power of two and fills in every other slope of the next power of two.

    Examples
    --------
    >>> (1 / alibi_slopes(8)).tolist()
    [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
    """
    if n_heads < 1:
        raise ValueError(f"n_heads must be >= 1, got {n_heads}")

    def power_of_two(n: int) -> np.ndarray:
        return 2.0 ** (-8.0 * np.arange(1, n + 1) / n)

    closest = 2 ** int(np.floor(np.log2(n_heads)))
    if closest == n_heads:
        return power_of_two(n_heads)
    extra = power_of_two(2 * closest)[0::2][: n_heads - closest]
    return np.concatenate([power_of_two(closest), extra])


def alibi_bias(n_queries: int, n_keys: int | None = None, *, n_heads: int = 8, causal: bool = True) -> np.ndarray:
    """ALiBi bias ``[head, query_pos, key_pos]``, (n_heads, T, S) float32: ``−slope_h · |i − j|``.

    Added to the attention logits before the softmax; there are no position embeddings at all. ALiBi was made for
    causal decoders: with ``causal=True`` keys after the query get ``−inf`` (the causal mask folded in), so only
    ``−slope · (i − j)`` for ``j ≤ i`` matters. ``causal=False`` gives the symmetric penalty some encoders use
    (e.g. MosaicBERT); the original paper does not define one.

    Examples
    --------
    >>> alibi_bias(3, n_heads=1, causal=False)[0].tolist()
    [[0.0, -0.00390625, -0.0078125], [-0.00390625, 0.0, -0.00390625], [-0.0078125, -0.00390625, 0.0]]
    >>> bool(np.isinf(alibi_bias(3, n_heads=2)[:, 0, 1]).all())
    True
    """
    dist = np.abs(relative_positions(n_queries, n_keys)).astype(np.float64)  # (T, S)
    bias = -alibi_slopes(n_heads)[:, None, None] * dist[None] + 0.0  # (H, T, S); + 0.0 turns -0.0 into 0.0
    if causal:
        bias = np.where(relative_positions(n_queries, n_keys)[None] > 0, -np.inf, bias)
    return bias.astype(np.float32)


# -- T5 relative position buckets (Raffel et al. 2020) ------------------------------------------------------------


def t5_relative_position_bucket(
    relative_position: np.ndarray | int,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> np.ndarray:
    """Bucket of each offset ``key − query``, as T5 computes it (a numpy port of ``_relative_position_bucket``).

    Half the buckets are exact distances (0, 1, 2, ...); the other half grow logarithmically up to
    ``max_distance``, beyond which everything shares the last bucket. Bidirectional (encoder) bucketing splits the
    buckets between keys before and after the query: offsets > 0 (key to the right) use the upper half.

    Examples
    --------
    >>> t5_relative_position_bucket(np.array([-3, -1, 0, 1, 3, 200])).tolist()
    [3, 1, 0, 17, 19, 31]
    >>> t5_relative_position_bucket(np.array([-3, 0, 2]), bidirectional=False).tolist()   # future keys: 0
    [3, 0, 0]
    """
    rel = np.asarray(relative_position, dtype=np.int64)
    bucket = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        bucket += (rel > 0).astype(np.int64) * num_buckets
        rel = np.abs(rel)
    else:
        rel = -np.minimum(rel, 0)
    # now rel >= 0 is a distance; the first half of the buckets are exact distances
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    with np.errstate(divide="ignore"):  # log(0) where rel == 0, masked by is_small below
        large = max_exact + (
            np.log(rel.astype(np.float64) / max_exact) / np.log(max_distance / max_exact) * (num_buckets - max_exact)
        )
    large = np.minimum(np.where(is_small, 0, large).astype(np.int64), num_buckets - 1)
    return bucket + np.where(is_small, rel, large)


def t5_bias(
    n_queries: int,
    n_keys: int | None = None,
    *,
    n_heads: int = 8,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
    table: np.ndarray | None = None,
    seed: int = 0,
) -> np.ndarray:
    """T5 relative-position bias ``[head, query_pos, key_pos]``, (n_heads, T, S) float32: ``table[bucket(j − i), h]``.

    T5 learns one scalar per (bucket, head) and adds it to the logits. Pass a trained ``table``
    (num_buckets, n_heads); without one, a seeded ``N(0, 1)`` stand-in shows the *structure* (which offsets share a
    value), not what T5 learned.

    Examples
    --------
    >>> b = t5_bias(6, n_heads=2)
    >>> b.shape, bool(b[0, 0, 1] == b[0, 4, 5])          # same offset, same bucket, same bias
    ((2, 6, 6), True)
    """
    buckets = t5_relative_position_bucket(
        relative_positions(n_queries, n_keys),
        bidirectional=bidirectional,
        num_buckets=num_buckets,
        max_distance=max_distance,
    )  # (T, S)
    if table is None:
        table = np.random.default_rng(seed).standard_normal((num_buckets, n_heads))
    table = np.asarray(table, dtype=np.float32)
    if table.shape != (num_buckets, n_heads):
        raise ValueError(f"table must be (num_buckets, n_heads) = {(num_buckets, n_heads)}, got {table.shape}")
    return np.moveaxis(table[buckets], -1, 0)  # (T, S, H) -> (H, T, S)
