"""Attention masks and MQA/GQA key/value sharing, against arrays written out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.teaching import masks as M


def _ints(mask: np.ndarray) -> list:
    return mask.astype(int).tolist()


def test_full_and_causal_by_hand():
    assert _ints(M.full_mask(2, 3)) == [[1, 1, 1], [1, 1, 1]]
    assert _ints(M.causal_mask(4)) == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    # 2 new queries after 3 cached keys: they are positions 3 and 4 of 5
    assert _ints(M.causal_mask(2, 5)) == [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
    assert M.causal_mask(5, 7).shape == (5, 7) and M.causal_mask(3).dtype == bool


def test_sliding_window_causal_and_bidirectional():
    assert _ints(M.sliding_window_mask(5, 2)) == [
        [1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [0, 1, 1, 0, 0],
        [0, 0, 1, 1, 0],
        [0, 0, 0, 1, 1],
    ]
    assert _ints(M.sliding_window_mask(5, 3, causal=False)) == [
        [1, 1, 0, 0, 0],
        [1, 1, 1, 0, 0],
        [0, 1, 1, 1, 0],
        [0, 0, 1, 1, 1],
        [0, 0, 0, 1, 1],
    ]
    # a window as long as the sequence is plain causal attention
    np.testing.assert_array_equal(M.sliding_window_mask(6, 6), M.causal_mask(6))
    with pytest.raises(ValueError, match="window"):
        M.sliding_window_mask(4, 0)


def test_global_plus_local():
    mask = M.global_local_mask(6, 3, global_tokens=[0, 5])
    assert _ints(mask) == [
        [1, 1, 1, 1, 1, 1],
        [1, 1, 1, 0, 0, 1],
        [1, 1, 1, 1, 0, 1],
        [1, 0, 1, 1, 1, 1],
        [1, 0, 0, 1, 1, 1],
        [1, 1, 1, 1, 1, 1],
    ]
    causal = M.global_local_mask(5, 1, global_tokens=[0], causal=True)
    assert _ints(causal) == [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 0, 0, 1, 0], [1, 0, 0, 0, 1]]
    with pytest.raises(ValueError, match="global token"):
        M.global_local_mask(4, 1, global_tokens=[4])


def test_padding_mask_from_lengths_and_from_valid():
    mask = M.padding_mask(lengths=[3, 1], n=3)
    assert mask.shape == (2, 3, 3)
    assert _ints(mask[1]) == [[1, 0, 0], [1, 0, 0], [1, 0, 0]]
    assert _ints(mask[0]) == [[1, 1, 1]] * 3
    rows = M.padding_mask([[True, True, False]], mask_queries=True)
    assert _ints(rows[0]) == [[1, 1, 0], [1, 1, 0], [0, 0, 0]]
    with pytest.raises(TypeError, match="lengths"):
        M.padding_mask()


def test_combine_and_bias_and_masked_softmax():
    both = M.combine(M.causal_mask(3), M.padding_mask(lengths=[2], n=3))
    assert _ints(both[0]) == [[1, 0, 0], [1, 1, 0], [1, 1, 0]]
    assert M.mask_to_bias(M.causal_mask(2)).tolist() == [[0.0, -np.inf], [0.0, 0.0]]
    scores = np.log(np.array([[1.0, 3.0, 5.0], [2.0, 2.0, 4.0]]))
    p = M.masked_softmax(scores, np.array([[True, True, False], [False, False, False]]))
    np.testing.assert_allclose(p, [[0.25, 0.75, 0.0], [0.0, 0.0, 0.0]])  # all-masked row: zeros, not NaN
    np.testing.assert_allclose(M.masked_softmax(scores).sum(-1), 1.0)


def test_kv_head_mapping_for_mha_gqa_mqa():
    assert M.kv_head_for_query_head(4, 4).tolist() == [0, 1, 2, 3]
    assert M.kv_head_for_query_head(8, 2).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert M.kv_head_for_query_head(6, 3).tolist() == [0, 0, 1, 1, 2, 2]
    assert M.kv_head_for_query_head(4, 1).tolist() == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="divide"):
        M.kv_head_for_query_head(8, 3)
    assert [M.attention_variant(8, k) for k in (8, 2, 1)] == ["MHA", "GQA", "MQA"]


def test_kv_head_mapping_matches_transformers_repeat_kv():
    torch = pytest.importorskip("torch")
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    kv = torch.arange(3).float().view(1, 3, 1, 1).expand(1, 3, 2, 4)  # (B, n_kv, T, hs): kv head k holds k
    repeated = llama.repeat_kv(kv, 4)  # (B, 12, T, hs)
    np.testing.assert_array_equal(repeated[0, :, 0, 0].numpy(), M.kv_head_for_query_head(12, 3))


def test_kv_cache_sizes():
    # Llama-2-7B: 32 layers x 32 heads x 128, 4096 tokens, fp16 -> 2 GiB
    assert M.kv_cache_bytes(n_layers=32, n_kv_heads=32, head_dim=128, seq_len=4096) == 2 * 2**30
    assert M.kv_cache_bytes(n_layers=1, n_kv_heads=1, head_dim=1, seq_len=1, batch_size=3, bytes_per_value=4) == 24
    sizes = M.kv_cache_comparison(n_layers=2, n_heads=8, head_dim=4, seq_len=10, n_kv_heads=2)
    assert sizes == {"MHA": 2 * 2 * 8 * 4 * 10 * 2, "GQA": 2 * 2 * 2 * 4 * 10 * 2, "MQA": 2 * 2 * 1 * 4 * 10 * 2}
    assert sizes["MHA"] // sizes["GQA"] == 4 and sizes["MHA"] // sizes["MQA"] == 8
