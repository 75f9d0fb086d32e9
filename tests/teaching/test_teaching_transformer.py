"""The toy Transformer's parts on untrained seeded models: attention maths, masks, GQA sharing, the result type."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from attnwidgets.result import AttentionResult  # noqa: E402
from attnwidgets.teaching.tasks import get_task  # noqa: E402
from attnwidgets.teaching.training import attention_result  # noqa: E402
from attnwidgets.teaching.transformer import (  # noqa: E402
    DecoderOnlyTransformer,
    EncoderDecoderTransformer,
    MultiHeadAttention,
    TransformerConfig,
    scaled_dot_product_attention,
)

TASK = get_task("reverse")


def _model(cls=EncoderDecoderTransformer, **kw) -> torch.nn.Module:
    torch.manual_seed(0)
    return cls(TransformerConfig(vocab_size=len(TASK.vocab), d_model=32, n_heads=4, **kw)).eval()


def test_sdpa_matches_torch_and_rows_sum_to_one():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)  # 5 queries x 7 keys
    mask = torch.rand(5, 7) > 0.3
    mask[:, 0] = True  # every row keeps a key
    out, w = scaled_dot_product_attention(q, k, v, mask)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, ref)
    assert w.shape == (2, 3, 5, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 5))
    assert (w[..., ~mask] == 0).all()


def test_sdpa_divides_by_sqrt_head_size():
    q = torch.tensor([[[[1.0, 1.0, 1.0, 1.0]]]])  # (1, 1, 1, 4)
    k = torch.tensor([[[[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]]])  # logits 4 / √4 = 2 and 0
    _, w = scaled_dot_product_attention(q, k, torch.zeros(1, 1, 2, 4))
    expected = torch.softmax(torch.tensor([2.0, 0.0]), -1)
    torch.testing.assert_close(w[0, 0, 0], expected)


def test_multi_head_attention_records_cross_shaped_weights():
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model=16, n_heads=4)
    y = mha(torch.randn(2, 5, 16), context=torch.randn(2, 7, 16))
    assert y.shape == (2, 5, 16)
    assert mha.weights.shape == (2, 4, 5, 7) and not mha.weights.requires_grad


def test_grouped_query_heads_share_keys():
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model=16, n_heads=4, n_kv_heads=2)  # heads (0, 1) share kv head 0, (2, 3) kv head 1
    assert mha.k_proj.out_features == 2 * 4
    with torch.no_grad():  # give heads 1 and 2 the same queries as head 0
        w, b = mha.q_proj.weight.view(4, 4, 16), mha.q_proj.bias.view(4, 4)
        w[1], w[2], b[1], b[2] = w[0], w[0], b[0], b[0]
    mha(torch.randn(1, 6, 16))
    att = mha.weights[0]
    torch.testing.assert_close(att[0], att[1])  # same queries, shared keys: same pattern
    assert not torch.allclose(att[0], att[2])  # same queries, other keys: another pattern
    with pytest.raises(ValueError, match="n_kv_heads"):
        TransformerConfig(vocab_size=10, n_heads=4, n_kv_heads=3)


@pytest.mark.parametrize("kw", [{}, {"norm_first": False}, {"norm": "rms"}, {"positional": "learned"},
                                {"n_kv_heads": 1}])
def test_encoder_decoder_attention_is_masked_right(kw):
    model = _model(**kw)
    src = torch.tensor([[5, 6, 7, 2, 0, 0], [5, 6, 7, 8, 9, 2]])  # row 0 padded after <eos>
    tgt = torch.tensor([[1, 7, 6, 5], [1, 9, 8, 7]])
    assert model(src, tgt).shape == (2, 4, len(TASK.vocab))
    att = model.attention()
    for enc in att["encoder"]:
        assert enc.shape == (2, 4, 6, 6)
        assert (enc[0, :, :, 4:] == 0).all() and (enc[1] > 0).all()  # padding keys get nothing
    for dec, cross in zip(att["decoder"], att["cross"]):
        assert dec.shape == (2, 4, 4, 4) and cross.shape == (2, 4, 4, 6)
        assert (torch.triu(dec, diagonal=1) == 0).all()  # causal: nothing above the diagonal
        assert (dec[..., torch.ones(4, 4, dtype=torch.bool).tril()] > 0).all()  # and something on and below it
        assert (cross[0, ..., 4:] == 0).all()
        torch.testing.assert_close(cross.sum(-1), torch.ones(2, 4, 4))


def test_decoder_only_is_causal_and_predicts_next_tokens():
    model = _model(DecoderOnlyTransformer)
    idx = torch.tensor([[1, 5, 6, 3, 6]])
    assert model(idx).shape == (1, 5, len(TASK.vocab))
    (w0, w1) = model.attention()["self"]
    assert w0.shape == (1, 4, 5, 5)
    assert (torch.triu(w1, 1) == 0).all() and (w1[..., torch.ones(5, 5, dtype=torch.bool).tril()] > 0).all()
    out = model.generate(idx, 3, eos_id=2)
    assert out.shape[1] in (6, 7, 8) and (out[:, :5] == idx).all()


def test_encoder_decoder_generate_starts_with_bos():
    model = _model()
    out = model.generate(torch.tensor([[5, 6, 2]]), 4, bos_id=1, eos_id=2)
    assert out[0, 0] == 1 and out.shape[1] <= 5


def test_positions_longer_than_max_len_are_refused():
    model = _model(max_len=4)
    with pytest.raises(ValueError, match="max_len"):
        model(torch.tensor([[5, 6, 7, 8, 2]]), torch.tensor([[1]]))


def test_attention_result_fills_every_encoder_decoder_field():
    model = _model()
    r = attention_result(model, TASK, "3 1 4 1 5", target="5 1")  # teacher-forced, shorter target: m != n
    assert isinstance(r, AttentionResult)
    assert r.tokens == ["3", "1", "4", "1", "5", "<eos>"] and r.target_tokens == ["<bos>", "5", "1"]
    assert r.model.kind == "encoder-decoder" and r.kinds == ["encoder", "decoder", "cross"]
    assert r.attention.shape == (2, 4, 6, 6) and r.attention.dtype == np.float32
    assert r.decoder_attention.shape == (2, 4, 3, 3)
    assert r.cross_attention.shape == (2, 4, 3, 6)  # target x source
    cross, queries, keys = r.attention_of("cross")
    assert cross is r.cross_attention and queries == r.target_tokens and keys == r.tokens
    for a in (r.attention, r.decoder_attention, r.cross_attention):
        np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-5)
    assert np.triu(r.decoder_attention, 1).max() == 0.0
    assert r.special_mask.tolist() == [False] * 5 + [True]
    assert r.token_ids.tolist() == TASK.vocab.encode(r.tokens).tolist()
    assert r.target_token_ids.tolist() == TASK.vocab.encode(r.target_tokens).tolist()
    assert r.outputs["decoder_logits"].shape == (3, len(TASK.vocab))
    assert (r.model.n_layers, r.model.n_heads, r.model.n_decoder_layers, r.model.head_dim) == (2, 4, 2, 8)


def test_attention_result_greedy_and_decoder_only():
    assert attention_result(_model(), TASK, "314", target="413").target_tokens == ["<bos>", "4", "1", "3"]
    greedy = attention_result(_model(), "reverse", "314")
    assert greedy.target_tokens[0] == "<bos>" and greedy.tokens == ["3", "1", "4", "<eos>"]
    r = attention_result(_model(DecoderOnlyTransformer), TASK, "3 1 4", target=["4", "1", "3"])
    assert r.model.kind == "decoder" and r.cross_attention is None
    assert r.tokens == ["<bos>", "3", "1", "4", "<sep>", "4", "1", "3"]
    assert r.special_mask.tolist() == [True, False, False, False, True, False, False, False]
    assert r.attention.shape == (2, 4, 8, 8) and np.triu(r.attention, 1).max() == 0.0
    with pytest.raises(KeyError, match="vocabulary"):
        attention_result(_model(), TASK, "3 x 4")


def test_attention_before_any_forward_pass_says_what_to_do():
    with pytest.raises(RuntimeError, match="run the model"):
        _model().attention()
