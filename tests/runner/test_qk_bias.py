"""The QK step-through's "+ bias" step: T5's relative-position bias (with its buckets) and an ALiBi-style bias.

The recomputed softmax(q·k · scaling + bias) must equal the model's eager attention to 1e-5; the bias shown must be
the model's own table read at T5's bucket of each (query, key) pair, checked against buckets worked out by hand from
T5's formula; models with no bias (BERT, GPT-2) must be unchanged.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import attnwidgets as aw
from attnwidgets.plots.qk import plot_qk
from attnwidgets.qk_result import QKCapture, masked_softmax
from attnwidgets.runner.qk import capture_qk, capture_qk_layers
from attnwidgets.viewdata.views.qk import ROPE_ARRAYS
from attnwidgets.widgets.qk import ARRAYS, QKStepThrough

TEXT = "The cat sat on the mat because it was tired."
TARGET = "Le chat était assis sur le tapis parce qu'il était fatigué."


def _eager_t5(path: str):
    """The same checkpoint loaded by transformers itself with eager attention: the reference weights."""
    from transformers import T5ForConditionalGeneration

    return T5ForConditionalGeneration.from_pretrained(path, attn_implementation="eager").eval()


def _eager_attentions(path: str, runner) -> dict[str, tuple[torch.Tensor, ...]]:
    enc = runner.encode([TEXT], [None], [TARGET])
    model = _eager_t5(path)
    with torch.no_grad():
        out = model(**enc.inputs, output_attentions=True, return_dict=True)
    return {"encoder": out.encoder_attentions, "decoder": out.decoder_attentions, "cross": out.cross_attentions}


@pytest.mark.parametrize("stack", ["encoder", "decoder"])
def test_t5_bias_step_reproduces_eager_attention(tiny_t5, stack):
    runner = aw.runner.get_runner(tiny_t5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "differs from the model's weights" warning any more
        caps = capture_qk_layers(TEXT, model=runner, stack=stack, target=TARGET)
    eager = _eager_attentions(tiny_t5, runner)[stack]
    for cap in caps:
        assert cap.bias is not None and cap.bucket is not None
        assert cap.bias.shape == cap.logits.shape and cap.bucket.shape == cap.mask.shape
        assert cap.scaling == 1.0, "T5 folds 1/√d into its weights: no scaling"
        recomputed = masked_softmax(cap.scaled + cap.bias, cap.mask)
        reference = eager[cap.layer][0].numpy()
        assert np.abs(recomputed - reference).max() <= 1e-5
        assert cap.recompute_error <= 1e-5
        # without the bias the steps are far off: the bias matters in this model
        assert np.abs(masked_softmax(cap.scaled, cap.mask) - reference).max() > 1e-2


def _table(runner, stack: str) -> np.ndarray:
    side = runner.model.encoder if stack == "encoder" else runner.model.decoder
    return side.block[0].layer[0].SelfAttention.relative_attention_bias.weight.detach().numpy()  # (buckets, H)


# T5's bucket of (key - query), worked out by hand for 8 buckets and max distance 16 (the fixture's config).
# Encoder (bidirectional): 4 buckets per side, exact below 2, then 2 + int(log(|r| / 2) / log(8) * 2), +4 if r > 0.
# Decoder (past only): exact below 4, then 4 + int(log(|r| / 4) / log(4) * 4), capped at 7; keys ahead: bucket 0.
HAND_BUCKETS = {
    "encoder": {0: 0, 1: 5, -1: 1, 2: 6, -2: 2, 5: 6, -5: 2, 8: 7, -8: 3},
    "decoder": {0: 0, 3: 0, -1: 1, -3: 3, -5: 4, -8: 6, -10: 6},
}


@pytest.mark.parametrize("stack", ["encoder", "decoder"])
def test_bias_panel_is_the_models_table_at_hand_checked_buckets(tiny_t5, stack):
    runner = aw.runner.get_runner(tiny_t5)
    cap = capture_qk(TEXT, model=runner, stack=stack, target=TARGET, layer=1)
    table = _table(runner, stack)
    n, m = cap.mask.shape
    seen = set()
    for rel, bucket in HAND_BUCKETS[stack].items():
        pairs = [(i, i + rel) for i in range(n) if 0 <= i + rel < m]
        assert pairs, f"the test input is too short for key - query = {rel}"
        for i, j in pairs:
            assert cap.bucket[i, j] == bucket, (rel, i, j)
            np.testing.assert_allclose(cap.bias[:, i, j], table[bucket], atol=1e-6)
        seen.add(bucket)
    assert len(seen) >= 4
    # the widget shows the same numbers for a query, and the buckets with them
    w = QKStepThrough(cap, head=2, query=min(9, n - 1))
    vals = w.values()
    np.testing.assert_allclose(vals["bias"], table[cap.bucket[w.query], 2], atol=1e-6)
    assert vals["bucket"].tolist() == cap.bucket[w.query].tolist()
    assert w._meta["bias"] is True and w._meta["buckets"] is True


def test_t5_widget_sends_bias_and_buckets_also_in_a_window(tiny_t5):
    cap = capture_qk(TEXT, model=tiny_t5, stack="encoder")
    w = QKStepThrough(cap, head=1, query=3)
    names = list(w._payload["arrays"])
    assert names == [*ARRAYS, "bias", "bucket"]
    w.window = [2, 6]
    content, buffers = w.answer({"what": "qk", "layer": w.layer, "head": 1, "query": 3, "window": [2, 6]})
    packed = {spec["name"]: {**spec, "buffer": buf} for spec, buf in zip(content["arrays"], buffers, strict=True)}
    got = np.frombuffer(packed["bias"]["buffer"], "<f4")
    keys = np.frombuffer(packed["keys"]["buffer"], "<f4").astype(int)
    np.testing.assert_allclose(got, cap.bias[1, 3, keys], atol=1e-7)
    assert np.frombuffer(packed["bucket"]["buffer"], "<f4").astype(int).tolist() == cap.bucket[3, keys].tolist()


def test_t5_static_twin_draws_the_bias_panel(tiny_t5):
    cap = capture_qk(TEXT, model=tiny_t5, stack="encoder")
    fig = plot_qk(cap, head=1, query=3)
    titles = [ax.get_title() for ax in fig.axes[:7]]
    assert titles[4] == "⑤ + bias" and titles[5] == "⑥ softmax"
    body = fig.axes[7 + 4]
    widths = [p.get_width() for p in body.patches]
    np.testing.assert_allclose(widths, np.where(cap.mask[3], cap.bias[1, 3], 0.0), atol=1e-6)
    texts = [t.get_text() for t in body.texts]
    assert texts[0] == f"{cap.bias[1, 3, 0]:.2f} b{cap.bucket[3, 0]}"


def test_cross_attention_has_no_bias(tiny_t5):
    cap = capture_qk(TEXT, model=tiny_t5, stack="cross", target=TARGET)
    assert cap.bias is None and cap.bucket is None and cap.recompute_error < 1e-5


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_gpt2"])
def test_no_bias_families_unchanged(request, fixture):
    cap = capture_qk(TEXT, model=request.getfixturevalue(fixture), layer=1)
    assert cap.bias is None and cap.bucket is None and cap.recompute_error < 1e-5
    assert "bias" not in cap.head(0)
    w = QKStepThrough(cap)
    assert list(w._payload["arrays"]) == list(ARRAYS) and w._meta["bias"] is False
    assert len(plot_qk(cap).axes) == 12, "six panels, as before"


def test_a_model_whose_extra_term_is_not_a_bias_keeps_the_warning(tmp_path, tiny_gemma2):
    """Gemma 2 soft-caps its logits: there is no additive bias to identify, so the steps stay q·k, scale, softmax and
    the recompute error is reported as before (weights initialised large so that the cap bites)."""
    from transformers import AutoTokenizer, Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(8)
    tok = AutoTokenizer.from_pretrained(tiny_gemma2)
    cfg = Gemma2Config(num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, head_dim=8, hidden_size=32,
                       intermediate_size=64, vocab_size=len(tok), max_position_embeddings=64,
                       attn_logit_softcapping=0.5, query_pre_attn_scalar=8, bos_token_id=0, eos_token_id=0,
                       pad_token_id=0, initializer_range=0.5)
    path = str(tmp_path / "capped")
    Gemma2ForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    with pytest.warns(UserWarning, match=r"softmax\(q·k · scaling \+ mask\) differs from the model's weights"):
        cap = capture_qk(TEXT, model=path, layer=0)
    assert cap.bias is None and cap.recompute_error > 1e-2
    # Gemma 2 is rotary: its RoPE step's arrays come after the plain ones, and no bias arrays anywhere.
    assert cap.rope is not None
    assert list(QKStepThrough(cap)._payload["arrays"]) == [*ARRAYS, *ROPE_ARRAYS]


def test_alibi_style_bias_from_a_real_bloom_model(tmp_path):
    """Bloom adds ALiBi inside its own attention (not through the attention interface attnwidgets registers, so
    capture_qk cannot capture it); its q, k, v and ALiBi tensor are taken here with hooks, and the bias step must
    reproduce Bloom's eager weights."""
    from transformers import BloomConfig, BloomForCausalLM

    torch.manual_seed(3)
    cfg = BloomConfig(vocab_size=100, hidden_size=32, n_layer=1, n_head=4)
    model = BloomForCausalLM(cfg).eval()
    attn = model.transformer.h[0].self_attention
    got: dict[str, torch.Tensor] = {}

    def grab(_module, args, kwargs):
        hidden = args[0] if args else kwargs["hidden_states"]
        got["qkv"] = attn.query_key_value(hidden)
        got["alibi"] = kwargs["alibi"] if "alibi" in kwargs else args[2]

    handle = attn.register_forward_pre_hook(grab, with_kwargs=True)
    ids = torch.tensor([[5, 17, 42, 8, 99, 23, 61, 7, 30, 12]])
    try:
        with torch.no_grad():
            out = model(input_ids=ids, output_attentions=True, return_dict=True)
    finally:
        handle.remove()
    q, k, v = (x[0].numpy() for x in attn._reshape(got["qkv"]))  # (H, n, d) each
    n, h = ids.shape[1], cfg.n_head
    alibi = got["alibi"].reshape(1, h, 1, n)[0].numpy()  # slope_h · key position
    bias = np.broadcast_to(alibi, (h, n, n))
    causal = np.tril(np.ones((n, n), bool))
    eager = out.attentions[0][0].numpy()
    cap = QKCapture.from_vectors(q, k, v, [str(i) for i in range(n)], scaling=attn.inv_norm_factor, mask=causal,
                                 weights=eager, bias=bias)
    assert cap.recompute_error <= 1e-5
    plain = QKCapture.from_vectors(q, k, v, [str(i) for i in range(n)], scaling=attn.inv_norm_factor, mask=causal,
                                   weights=eager)
    assert plain.recompute_error > 1e-3, "the ALiBi bias matters here"
    # the slopes are ALiBi's: 2^(-8/H · (h + 1)) for H a power of two
    slopes = alibi[:, 0, 1] - alibi[:, 0, 0]
    np.testing.assert_allclose(slopes, [2.0 ** (-8 / h * (i + 1)) for i in range(h)], rtol=1e-6)
    w = QKStepThrough(cap, head=3, query=n - 1)
    assert w._meta["bias"] is True and w._meta["buckets"] is False
    assert list(w._payload["arrays"]) == [*ARRAYS, "bias"]
    assert len(plot_qk(cap, head=3, query=n - 1).axes) == 14


def test_bias_of_the_wrong_shape_is_refused():
    z = np.zeros((2, 3, 4))
    with pytest.raises(ValueError, match="bucket"):
        QKCapture.from_vectors(z, z, z, ["a", "b", "c"], bias=np.zeros((2, 3, 3)), bucket=np.zeros((2, 2), int))
    with pytest.raises(ValueError, match="without a bias"):
        QKCapture.from_vectors(z, z, z, ["a", "b", "c"], bucket=np.zeros((3, 3), int))
