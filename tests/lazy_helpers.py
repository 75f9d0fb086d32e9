"""Results that hold attention as queries and keys (a LazyStack), built from random numbers without a model.

Tests of code that must work at any length use these: ``lazy_result(n)`` behaves like a long input's result (its
``attention`` raises above the dense budget), and ``dense_twin(r)`` is the same attention as a plain dense result,
so a blockwise computation can be checked against the dense one it replaces.
"""

from __future__ import annotations

import numpy as np

from attnwidgets.attention_stack import KeyMask, LayerQK, LazyStack
from attnwidgets.result import AttentionResult, ModelInfo


def lazy_result(n: int = 64, *, layers: int = 2, heads: int = 4, kv_heads: int = 2, head_dim: int = 8,
                causal: bool = True, seed: int = 0, tokens: list[str] | None = None,
                sink: float = 0.0) -> AttentionResult:
    """A result over ``n`` tokens whose attention is a LazyStack of random queries and keys.

    ``sink`` > 0 makes key 0 an attention sink (its key gets a large component along every query).
    """
    rng = np.random.default_rng(seed)
    mask = KeyMask.causal(n, n) if causal else KeyMask.full(n, n)
    stack = []
    for _ in range(layers):
        q = rng.normal(size=(heads, n, head_dim)).astype(np.float32)
        k = rng.normal(size=(kv_heads, n, head_dim)).astype(np.float32)
        if sink:
            q[..., 0] = np.abs(q[..., 0]) + 1.0
            k[:, 0, 0] = sink
        stack.append(LayerQK(q, k, head_dim ** -0.5, mask))
    if tokens is None:
        words = ["the", " cat", " sat", " on", " a", " mat", ".", " It", " was", " tired", ","]
        tokens = ["<s>"] + [words[i % len(words)] for i in range(n - 1)]
    special = np.array([t == "<s>" for t in tokens])
    info = ModelInfo(name="lazy-random", kind="decoder" if causal else "encoder", n_layers=layers, n_heads=heads,
                     max_length=max(n, 1), model_type="llama", n_kv_heads=kv_heads, head_dim=head_dim)
    return AttentionResult(tokens=list(tokens), token_ids=np.arange(n, dtype=np.int64),
                           word_ids=np.where(special, -1, np.cumsum(~special) - 1).astype(np.int64),
                           segment_ids=np.zeros(n, np.int64), special_mask=special,
                           attention=LazyStack(tuple(stack)), model=info, text="".join(tokens)).freeze()


def dense_twin(result: AttentionResult) -> AttentionResult:
    """The same attention as a dense array (built block by block, whatever the budget)."""
    stack = result.stack("self")
    L, H, T, S = result.attention_shape()
    dense = np.empty((L, H, T, S), np.float32)
    for layer, start, stop, block in result.iter_blocks():
        dense[layer, :, start:stop] = block
    assert isinstance(stack, LazyStack)
    return result.replace(attention=dense).freeze()
