"""Capture mode (queries and keys kept, weights rebuilt on demand) against the model's own eager attention.

Every family the runner supports: the lazy rows must equal ``attn_implementation="eager"`` weights to 1e-5.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnwidgets as aw
from attnwidgets.attention_stack import KeyMask, LayerQK, LazyStack, RelativeBias, set_dense_budget
from attnwidgets.runner import get_runner

TEXT = "The cat sat on the mat because it was tired, and the dog barked at it."
OTHER = "A dog barked."


def _eager(path: str, result: aw.AttentionResult):
    """The same token ids through the model loaded with transformers' own eager attention."""
    from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

    cfg = AutoConfig.from_pretrained(path)
    cls = AutoModelForSeq2SeqLM if cfg.is_encoder_decoder else AutoModel
    model = cls.from_pretrained(path, attn_implementation="eager").eval()
    ids = torch.tensor(result.token_ids)[None]
    kwargs = {}
    if result.target_token_ids is not None:
        kwargs["decoder_input_ids"] = torch.tensor(result.target_token_ids)[None]
    with torch.no_grad():
        return model(input_ids=ids, output_attentions=True, **kwargs)


def _dense(stack: LazyStack) -> np.ndarray:
    L, _H, T, _S = stack.shape
    return np.stack([stack.rows(layer, 0, T) for layer in range(L)])


def _eager_stack(layers) -> np.ndarray:
    return np.stack([a[0].float().numpy() for a in layers])


FAMILIES = ["tiny_bert", "tiny_gpt2", "tiny_llama", "tiny_mistral", "tiny_gemma2", "tiny_gpt_oss", "tiny_bart",
            "tiny_marian", "tiny_t5"]


@pytest.mark.parametrize("family", FAMILIES)
def test_lazy_rows_equal_eager_attention(family, request, no_dense) -> None:
    path = request.getfixturevalue(family)
    result = get_runner(path).run(TEXT, truncation="error")
    assert result.is_lazy
    eager = _eager(path, result)
    if result.target_tokens is not None:
        pairs = [("encoder", eager.encoder_attentions), ("decoder", eager.decoder_attentions),
                 ("cross", eager.cross_attentions)]
    else:
        pairs = [("self", eager.attentions)]
    for kind, layers in pairs:
        mine = _dense(result.stack(kind))
        want = _eager_stack(layers)
        assert mine.shape == want.shape, kind
        assert np.abs(mine - want).max() <= 1e-5, (family, kind, float(np.abs(mine - want).max()))


def test_sliding_window_and_gqa_are_kept_compact(tiny_mistral, no_dense) -> None:
    """Mistral's window of 4 keys is two integers per row, not a (query, key) array; keys keep their 2 heads."""
    result = get_runner(tiny_mistral).run(TEXT, truncation="error")
    layer = result.stack("self").layers[0]
    assert layer.mask.allowed is None
    assert layer.key.shape[0] == 2 and layer.query.shape[0] == 4
    assert ((layer.mask.hi - layer.mask.lo) <= 4).all() and (layer.mask.hi - layer.mask.lo).max() == 4


def test_t5_bias_is_kept_by_distance(tiny_t5, no_dense) -> None:
    result = get_runner(tiny_t5).run(TEXT, truncation="error")
    bias = result.stack("encoder").layers[1].bias
    n = result.n_tokens
    assert bias is not None and bias.dense is None and bias.values.shape == (4, 2 * n - 1)


def test_sinks_leave_rows_below_one(tiny_gpt_oss, no_dense) -> None:
    result = get_runner(tiny_gpt_oss).run(TEXT, truncation="error")
    sums = result.rows(0, 0, result.n_tokens).sum(-1)
    assert (sums < 0.999).all() and (sums > 0).all()


@pytest.mark.parametrize("family", ["tiny_gpt2", "tiny_llama", "tiny_bert", "tiny_bart"])
def test_padded_batches_give_each_input_its_own_attention(family, request, no_dense) -> None:
    path = request.getfixturevalue(family)
    runner = get_runner(path)
    short, long_ = runner.run_batch([OTHER, TEXT], progress=False, truncation="error")
    for result in (short, long_):
        assert result.is_lazy
        eager = _eager(path, result)
        layers = eager.encoder_attentions if result.target_tokens is not None else eager.attentions
        kind = "encoder" if result.target_tokens is not None else "self"
        assert np.abs(_dense(result.stack(kind)) - _eager_stack(layers)).max() <= 1e-5


def test_capture_changes_no_output(tiny_llama, no_dense) -> None:
    """The fused-kernel forward gives the model's outputs (next-token logits) to float rounding."""
    lazy = get_runner(tiny_llama).run(TEXT, truncation="error")
    set_dense_budget(1 << 40)
    dense = get_runner(tiny_llama).run(TEXT + " ", truncation="error")
    assert not dense.is_lazy
    again = get_runner(tiny_llama).run(TEXT, text_pair=None, truncation="warn")
    assert not again.is_lazy
    np.testing.assert_allclose(lazy.outputs["next_token_logits"], again.outputs["next_token_logits"], atol=1e-4)
    np.testing.assert_allclose(lazy.attention, again.attention, atol=1e-5)


def test_dense_access_past_the_budget_says_what_to_call(tiny_gpt2, no_dense) -> None:
    result = get_runner(tiny_gpt2).run(TEXT, truncation="error")
    with pytest.raises(aw.AttentionTooLargeError, match=r"result\.head\(layer, head\)"):
        _ = result.attention
    assert result.head(1, 2).shape == (result.n_tokens, result.n_tokens)
    with pytest.raises(IndexError, match="layer 5"):
        result.head(5, 0)
    with pytest.raises(IndexError, match="rows"):
        result.rows(0, 3, result.n_tokens + 1)


def test_ablation_past_the_budget_is_refused_clearly(tiny_gpt2, no_dense) -> None:
    with pytest.raises(ValueError, match="dense budget"):
        get_runner(tiny_gpt2).run(TEXT, ablation=aw.runner.Ablation.heads([(0, 1)]), truncation="error")


def test_an_interrupted_run_leaves_nothing_in_the_cache(tiny_gpt2, no_dense, monkeypatch) -> None:
    runner = get_runner(tiny_gpt2)
    text = TEXT + " interrupted"
    key = runner.cache_key(text, truncation="error")
    from attnwidgets.runner import capture as capture_module

    real = capture_module.captured_attention
    calls = []

    def boom(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(capture_module, "captured_attention", boom)
    with pytest.raises(KeyboardInterrupt):
        runner.run(text, truncation="error")
    assert runner.cache.get(key) is None
    assert capture_module.current() is None
    monkeypatch.setattr(capture_module, "captured_attention", real)
    assert runner.run(text, truncation="error").is_lazy


def test_nbytes_counts_queries_and_keys_not_the_dense_array(tiny_gpt2, no_dense) -> None:
    result = get_runner(tiny_gpt2).run(TEXT, truncation="error")
    L, H, T, S = result.attention_shape()
    qk = sum(x.query.nbytes + x.key.nbytes for x in result.stack().layers)
    qk += sum(a.nbytes for a in result.stack().summary.values())  # the per-head sums made with the weights
    assert qk <= result.nbytes < qk + 10_000
    assert result.dense_nbytes() == L * H * T * S * 4


# -- the numpy rebuild on hand-made cases -------------------------------------------------------------------------

def test_key_mask_intervals_and_fallback() -> None:
    allowed = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]], bool)
    m = KeyMask.from_allowed(allowed)
    assert m.allowed is not None and np.array_equal(m.rows(0, 3, 3), allowed)
    m2 = KeyMask.from_allowed(allowed[:2])
    assert m2.allowed is None and m2.lo.tolist() == [0, 1] and m2.hi.tolist() == [2, 3]
    sel = KeyMask.causal(4, 4).select(np.array([1, 3]), np.array([0, 1, 3]))
    assert sel.rows(0, 2, 3).astype(int).tolist() == [[1, 1, 0], [1, 1, 1]]


def test_rebuild_by_hand_softcap_bias_sinks() -> None:
    q = np.array([[[1.0, 0.0], [0.0, 2.0]]], np.float32)  # 1 head, 2 queries, d=2
    k = np.array([[[1.0, 1.0], [2.0, 0.0]]], np.float32)
    bias = RelativeBias.from_dense(np.array([[[0.0, 1.0], [-1.0, 0.0]]], np.float32))
    layer = LayerQK(q, k, 0.5, KeyMask.full(2, 2), bias, softcap=1.0, sinks=np.array([0.3], np.float32))
    logits = (q[0] @ k[0].T) * 0.5 + np.array([[0.0, 1.0], [-1.0, 0.0]])
    logits = np.tanh(logits)
    e = np.exp(logits)
    want = e / (e.sum(1, keepdims=True) + np.exp(0.3))
    np.testing.assert_allclose(layer.rows(0, 2)[0], want, rtol=1e-6)


def test_many_rows_are_built_a_block_at_a_time_and_equal_one_block(monkeypatch) -> None:
    """A request taller than one block is cut into blocks; every head form gives the numbers of a single block."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1]))
    from lazy_helpers import lazy_result

    import attnwidgets.attention_stack as stack_module

    r = lazy_result(200, layers=1, heads=4, kv_heads=2)
    whole = {h: r.rows(0, 0, 200, head=h) for h in (None, -1, 3)}
    monkeypatch.setattr(stack_module, "BLOCK_BYTES", 4 * 4 * 200 * 7)  # 7 rows of all heads per block
    for h, want in whole.items():
        got = r.rows(0, 0, 200, head=h)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=1e-7)
