"""Attention masks and key/value-head sharing, in numpy: full, causal, sliding window, global + local, padding; MQA/GQA.

numpy only (no torch), so a widget or an analysis can draw and combine masks from plain arrays. They sit below the
widgets and the teaching kit alike: MaskExplorer draws them, and :mod:`attnwidgets.teaching.masks` re-exports them
under the teaching kit's name.

Convention: a mask is a boolean array ``[query_pos, key_pos]`` (or ``[batch, query_pos, key_pos]``) where
``True`` means *may attend*. Turn it into an additive bias with :func:`mask_to_bias` (0 where allowed, −inf
elsewhere) or apply it to scores with :func:`masked_softmax`. Combine masks with ``&`` (or :func:`combine`).

Examples
--------
>>> causal_mask(3).astype(int).tolist()
[[1, 0, 0], [1, 1, 0], [1, 1, 1]]
>>> (causal_mask(4) & sliding_window_mask(4, 2)).astype(int).tolist()
[[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np

__all__ = [
    "attention_variant",
    "causal_mask",
    "combine",
    "full_mask",
    "global_local_mask",
    "kv_cache_bytes",
    "kv_cache_comparison",
    "kv_head_for_query_head",
    "mask_to_bias",
    "masked_softmax",
    "padding_mask",
    "sliding_window_mask",
]

AttentionVariant = Literal["MHA", "GQA", "MQA"]


def full_mask(n_queries: int, n_keys: int | None = None) -> np.ndarray:
    """Every query sees every key (encoder self-attention, cross-attention), (T, S) bool.

    Examples
    --------
    >>> full_mask(2, 3).tolist()
    [[True, True, True], [True, True, True]]
    """
    return np.ones((n_queries, n_queries if n_keys is None else n_keys), dtype=bool)


def causal_mask(n_queries: int, n_keys: int | None = None) -> np.ndarray:
    """Query ``i`` sees keys ``j ≤ i`` (decoder self-attention), (T, S) bool, lower-triangular.

    With more keys than queries (``S > T``, e.g. new tokens after a KV cache of ``S − T``), the queries are the
    *last* ``T`` positions, so query ``i`` sees keys ``j ≤ i + S − T``.

    Examples
    --------
    >>> causal_mask(2, 3).astype(int).tolist()
    [[1, 1, 0], [1, 1, 1]]
    """
    n_keys = n_queries if n_keys is None else n_keys
    return np.tril(np.ones((n_queries, n_keys), dtype=bool), k=n_keys - n_queries)


def sliding_window_mask(n: int, window: int, *, causal: bool = True) -> np.ndarray:
    """Local attention: each query sees only nearby keys, (n, n) bool.

    Parameters
    ----------
    n : int
        Sequence length.
    window : int
        Causal (Mistral-style): the query and the ``window − 1`` keys before it, ``0 ≤ i − j < window``.
        Bidirectional (Longformer-style): ``window // 2`` keys on each side, ``|i − j| ≤ window // 2``.
    causal : bool
        Which of the two.

    Examples
    --------
    >>> sliding_window_mask(4, 3, causal=False).astype(int).tolist()
    [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    offset = np.arange(n)[:, None] - np.arange(n)[None, :]  # i - j, (n, n)
    if causal:
        return (offset >= 0) & (offset < window)
    return np.abs(offset) <= window // 2


def global_local_mask(
    n: int, window: int, global_tokens: Iterable[int] = (0,), *, causal: bool = False
) -> np.ndarray:
    """Local window plus a few global tokens (Longformer, BigBird), (n, n) bool.

    Global tokens (e.g. [CLS] at 0) attend to every key and every query attends to them: their rows and columns are
    full. Everything else is :func:`sliding_window_mask`. With ``causal=True`` the result is also cut to ``j ≤ i``.

    Examples
    --------
    >>> global_local_mask(5, 1, global_tokens=[0]).astype(int).tolist()
    [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 0, 0, 1, 0], [1, 0, 0, 0, 1]]
    """
    mask = sliding_window_mask(n, window, causal=causal)
    g = np.asarray(list(global_tokens), dtype=np.int64)
    if g.size and (g.min() < -n or g.max() >= n):
        raise ValueError(f"global token positions must lie in [0, {n}), got {g.tolist()}")
    mask[g, :] = True  # global tokens see everything
    mask[:, g] = True  # and everything sees them
    if causal:
        mask &= causal_mask(n)
    return mask


def padding_mask(
    valid: Sequence[Sequence[bool]] | np.ndarray | None = None,
    *,
    lengths: Sequence[int] | np.ndarray | None = None,
    n: int | None = None,
    mask_queries: bool = False,
) -> np.ndarray:
    """Hide padding keys in a batch, (B, n, n) bool: ``mask[b, i, j] = valid[b, j]``.

    Give either ``valid`` (B, n) bool, True for real tokens, or ``lengths`` (B,) with ``n`` (right padding).
    Padded *queries* still get a row (their output is ignored anyway); ``mask_queries=True`` blanks those rows too,
    which is what the result type stores (padding never appears in ``AttentionResult``).

    Examples
    --------
    >>> padding_mask(lengths=[2], n=3)[0].astype(int).tolist()
    [[1, 1, 0], [1, 1, 0], [1, 1, 0]]
    """
    if valid is None:
        if lengths is None:
            raise TypeError("padding_mask needs either valid (B, n) or lengths (B,) with n")
        lengths = np.asarray(lengths, dtype=np.int64)
        n = int(lengths.max()) if n is None else n
        valid = np.arange(n)[None, :] < lengths[:, None]
    v = np.asarray(valid, dtype=bool)
    if v.ndim != 2:
        raise ValueError(f"valid must be (batch, n) bool, got shape {v.shape}")
    mask = np.broadcast_to(v[:, None, :], (v.shape[0], v.shape[1], v.shape[1])).copy()  # (B, n, n)
    if mask_queries:
        mask &= v[:, :, None]
    return mask


def combine(*masks: np.ndarray) -> np.ndarray:
    """Logical AND of masks (broadcasting), e.g. causal and padding together.

    Examples
    --------
    >>> combine(causal_mask(3), padding_mask(lengths=[2], n=3))[0].astype(int).tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 0]]
    """
    if not masks:
        raise TypeError("combine needs at least one mask")
    out = np.asarray(masks[0], dtype=bool)
    for m in masks[1:]:
        out = out & np.asarray(m, dtype=bool)
    return out


def mask_to_bias(mask: np.ndarray) -> np.ndarray:
    """Additive bias: 0 where the mask allows, −inf where it does not (float32, same shape).

    Examples
    --------
    >>> mask_to_bias(causal_mask(2)).tolist()
    [[0.0, -inf], [0.0, 0.0]]
    """
    return np.where(np.asarray(mask, dtype=bool), 0.0, -np.inf).astype(np.float32)


def masked_softmax(scores: np.ndarray, mask: np.ndarray | None = None, axis: int = -1) -> np.ndarray:
    """Softmax of ``scores`` over ``axis`` with masked entries set to exactly 0.

    A row whose keys are all masked comes out all zeros (rather than NaN), as a padded query would.

    Examples
    --------
    >>> masked_softmax(np.zeros((2, 2)), causal_mask(2)).tolist()
    [[1.0, 0.0], [0.5, 0.5]]
    """
    s = np.asarray(scores, dtype=np.float64)
    m = np.ones_like(s, dtype=bool) if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), s.shape)
    s = np.where(m, s, -np.inf)
    top = np.max(s, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(m, np.exp(s - top), 0.0)
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


# -- sharing key/value heads: MHA, GQA, MQA -------------------------------------------------------------------------


def kv_head_for_query_head(n_heads: int, n_kv_heads: int) -> np.ndarray:
    """Which key/value head each query head reads, (n_heads,) int64.

    Multi-head attention (MHA) has ``n_kv_heads == n_heads``: head h has its own K and V. Grouped-query attention
    (GQA, Ainslie et al. 2023) splits the query heads into ``n_kv_heads`` consecutive groups of
    ``n_heads / n_kv_heads``, one K/V head per group; multi-query attention (MQA, Shazeer 2019) is the extreme
    ``n_kv_heads == 1``. The layout matches ``repeat_kv`` in transformers' Llama: query head h reads kv head
    ``h // (n_heads // n_kv_heads)``.

    Examples
    --------
    >>> kv_head_for_query_head(8, 2).tolist()
    [0, 0, 0, 0, 1, 1, 1, 1]
    >>> kv_head_for_query_head(4, 1).tolist()
    [0, 0, 0, 0]
    """
    if n_heads < 1 or n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError(
            f"n_kv_heads ({n_kv_heads}) must be >= 1 and divide n_heads ({n_heads}); "
            f"try one of {[k for k in range(1, n_heads + 1) if n_heads % k == 0]}"
        )
    return np.arange(n_heads, dtype=np.int64) // (n_heads // n_kv_heads)


def attention_variant(n_heads: int, n_kv_heads: int) -> AttentionVariant:
    """Name the sharing scheme: ``"MHA"``, ``"GQA"`` or ``"MQA"``.

    Examples
    --------
    >>> attention_variant(32, 8), attention_variant(32, 1), attention_variant(12, 12)
    ('GQA', 'MQA', 'MHA')
    """
    kv_head_for_query_head(n_heads, n_kv_heads)  # validates
    if n_kv_heads == n_heads:
        return "MHA"
    return "MQA" if n_kv_heads == 1 else "GQA"


def kv_cache_bytes(
    *, n_layers: int, n_kv_heads: int, head_dim: int, seq_len: int, batch_size: int = 1, bytes_per_value: int = 2
) -> int:
    """Size of a decoder's key/value cache in bytes: ``2 · layers · kv_heads · head_dim · seq_len · batch · bytes``.

    The 2 is one K and one V per token; ``bytes_per_value`` is 2 for float16/bfloat16, 4 for float32.

    Examples
    --------
    >>> kv_cache_bytes(n_layers=32, n_kv_heads=32, head_dim=128, seq_len=4096) / 2**30   # Llama-2-7B, fp16
    2.0
    """
    return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch_size * bytes_per_value


def kv_cache_comparison(
    *,
    n_layers: int,
    n_heads: int,
    head_dim: int,
    seq_len: int,
    n_kv_heads: int | None = None,
    batch_size: int = 1,
    bytes_per_value: int = 2,
) -> dict[str, int]:
    """KV-cache bytes for the same model as MHA, GQA (``n_kv_heads`` groups; default ``n_heads // 4``) and MQA.

    Examples
    --------
    >>> sizes = kv_cache_comparison(n_layers=32, n_heads=32, head_dim=128, seq_len=4096, n_kv_heads=8)
    >>> {k: v / 2**30 for k, v in sizes.items()}
    {'MHA': 2.0, 'GQA': 0.5, 'MQA': 0.0625}
    """
    groups = max(n_heads // 4, 1) if n_kv_heads is None else n_kv_heads
    kv_head_for_query_head(n_heads, groups)  # validates
    common = dict(n_layers=n_layers, head_dim=head_dim, seq_len=seq_len, batch_size=batch_size,
                  bytes_per_value=bytes_per_value)
    return {
        "MHA": kv_cache_bytes(n_kv_heads=n_heads, **common),
        "GQA": kv_cache_bytes(n_kv_heads=groups, **common),
        "MQA": kv_cache_bytes(n_kv_heads=1, **common),
    }
