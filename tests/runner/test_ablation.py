"""Ablation engine: each mode does what it says, on encoders, decoders (GPT-2, Llama GQA) and encoder-decoders."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidgets.runner import get_runner
from attnwidgets.runner.ablation import Ablation, HeadEdit, apply_edits, mean_pattern

TEXTS = ["The cat sat on the mat because it was tired.", "Dogs bark."]

# module name of the output projection whose *input* is the concatenation of head outputs (B, T, H*D)
_OUT_PROJ = {"bert": "encoder.layer.{layer}.attention.output.dense", "gpt2": "h.{layer}.attn.c_proj",
             "llama": "layers.{layer}.self_attn.o_proj", "bart:encoder": "encoder.layers.{layer}.self_attn.out_proj",
             "bart:decoder": "decoder.layers.{layer}.self_attn.out_proj",
             "bart:cross": "decoder.layers.{layer}.encoder_attn.out_proj"}


def _head_outputs(runner, texts, hooks, layer, stack="self"):
    """Input of the output projection of ``layer`` in ``stack``: the head outputs side by side, (B, T, H*D)."""
    model = runner.model
    key = runner.info.model_type + ("" if stack == "self" else f":{stack}")
    suffix = _OUT_PROJ[key].format(layer=layer)
    (name,) = [n for n, _ in model.named_modules() if n == suffix or n.endswith("." + suffix)]
    seen = {}
    handle = model.get_submodule(name).register_forward_pre_hook(lambda m, a: seen.setdefault("x", a[0].clone()))
    try:
        runner.forward(runner.encode(texts), hooks)
    finally:
        handle.remove()
    return seen["x"]


@pytest.mark.parametrize("fixture,stack", [("tiny_bert", "self"), ("tiny_gpt2", "self"), ("tiny_llama", "self"),
                                           ("tiny_bart", "encoder"), ("tiny_bart", "decoder"),
                                           ("tiny_bart", "cross")])
@pytest.mark.parametrize("mode,factor", [("zero", 0.0), (0.5, 0.5)])
def test_zero_and_scale_change_exactly_one_head_slice(fixture, stack, mode, factor, request):
    runner = get_runner(request.getfixturevalue(fixture))
    layer, head, d = 1, 2, runner.info.head_dim
    clean = _head_outputs(runner, TEXTS, [], layer, stack)
    hooks = Ablation.heads({(layer, head): mode}, stack=stack).hooks(runner.info)
    ablated = _head_outputs(runner, TEXTS, hooks, layer, stack)
    expected = clean.clone()
    expected[..., head * d:(head + 1) * d] *= factor
    torch.testing.assert_close(ablated, expected, rtol=1e-5, atol=1e-6)
    assert not torch.equal(ablated, clean)


def test_zero_in_result_shows_zero_map_and_changes_output(tiny_bert):
    runner = get_runner(tiny_bert)
    clean = runner.run(TEXTS[0])
    res = runner.run(TEXTS[0], ablation=Ablation.heads([(1, 3)]))
    assert np.all(res.attention[1, 3] == 0)
    np.testing.assert_array_equal(res.attention[1, :3], clean.attention[1, :3])
    assert not np.allclose(res.outputs["embedding"], clean.outputs["embedding"])
    assert res.ablation == Ablation.heads([(1, 3)])


def test_uniform_is_one_over_n_on_valid_keys_and_zero_on_padding(tiny_bert):
    runner = get_runner(tiny_bert)
    enc = runner.encode(TEXTS)
    out = runner.forward(enc, Ablation.heads([(0, 1)], "uniform").hooks(runner.info))
    w = out.attentions[0][:, 1]  # (B, T, S) padded
    for row in range(2):
        n = int(enc.inputs["attention_mask"][row].sum())
        torch.testing.assert_close(w[row, :n, :n], torch.full((n, n), 1.0 / n))
        assert torch.all(w[row, :, n:] == 0)
    assert int(enc.inputs["attention_mask"][1].sum()) < enc.inputs["input_ids"].shape[1]  # there was padding
    # the result shows the same
    res = runner.run_batch(TEXTS, ablation=Ablation.heads([(0, 1)], "uniform"))[1]
    np.testing.assert_allclose(res.attention[0, 1], 1.0 / res.n_tokens, rtol=1e-6)


@pytest.mark.parametrize("fixture", ["tiny_gpt2", "tiny_llama"])
def test_uniform_is_causal_in_decoders(fixture, request):
    runner = get_runner(request.getfixturevalue(fixture))
    for res in runner.run_batch(TEXTS, ablation=Ablation.layers([1], "uniform")):
        n = res.n_tokens
        expected = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
        for h in range(res.n_heads):
            np.testing.assert_allclose(res.attention[1, h], expected, rtol=1e-6, atol=1e-7)


def test_empty_ablation_is_bit_identical(tiny_bert_mlm):
    runner = get_runner(tiny_bert_mlm)
    text = "The [MASK] sat on the mat."
    clean = runner.run(text)
    before = runner.n_forward
    empty = runner.run(text, ablation=Ablation())
    assert runner.n_forward == before + 1  # really ran, not a cache hit of the clean result
    np.testing.assert_array_equal(empty.attention, clean.attention)
    for k in clean.outputs:
        np.testing.assert_array_equal(empty.outputs[k], clean.outputs[k])
    assert Ablation.heads({(0, 0): 1.0}) == Ablation()


def test_ablation_is_part_of_the_cache_key(tiny_bert):
    runner = get_runner(tiny_bert)
    text = "Caching keys include the ablation."
    runner.run(text)
    n0 = runner.n_forward
    a = runner.run(text, ablation=Ablation.heads([(1, 0)]))
    n1 = runner.n_forward
    assert n1 > n0
    assert runner.run(text, ablation=Ablation.heads([(1, 0)])) is a
    assert runner.n_forward == n1
    runner.run(text, ablation=Ablation.heads([(1, 1)]))
    assert runner.n_forward == n1 + 1
    runner.run(text, ablation=Ablation.heads([(1, 0)], "uniform"))
    assert runner.n_forward == n1 + 2


# per stack of the edit: (its attention field, its hidden-state field), and fields that must not change at all
_BELOW = {
    "self": (("attentions", "hidden_states"), ()),
    "encoder": (("encoder_attentions", "encoder_hidden_states"), ()),
    "decoder": (("decoder_attentions", "decoder_hidden_states"),
                ("encoder_attentions", "encoder_hidden_states", "encoder_last_hidden_state")),
    "cross": (("cross_attentions", "decoder_hidden_states"),
              ("encoder_attentions", "encoder_hidden_states", "encoder_last_hidden_state")),
}


@pytest.mark.parametrize("fixture,stack", [("tiny_bert", "self"), ("tiny_gpt2", "self"), ("tiny_bart", "encoder"),
                                           ("tiny_bart", "decoder"), ("tiny_bart", "cross")])
def test_layers_below_the_ablated_one_are_unchanged_in_a_full_run(fixture, stack, request):
    """A full forward (no replay) with layer 1 edited: attention *and* hidden states below it are bit-identical."""
    runner = get_runner(request.getfixturevalue(fixture))
    enc = runner.encode(TEXTS)
    clean = runner.forward(enc)
    out = runner.forward(enc, Ablation.heads([(1, 0)], "uniform", stack=stack).hooks(runner.info))
    (att, hid), untouched = _BELOW[stack]
    torch.testing.assert_close(getattr(out, att)[0], getattr(clean, att)[0], rtol=0, atol=0)
    # hidden_states[0] is the embedding and hidden_states[k] the output of layer k - 1: 0 and 1 are below layer 1
    for k in (0, 1):
        torch.testing.assert_close(getattr(out, hid)[k], getattr(clean, hid)[k], rtol=0, atol=0)
    assert not torch.allclose(getattr(out, att)[1][:, 0], getattr(clean, att)[1][:, 0])
    assert not torch.allclose(getattr(out, hid)[2], getattr(clean, hid)[2])
    for name in untouched:  # an edit in the decoder changes nothing in the encoder
        a, b = getattr(out, name), getattr(clean, name)
        for x, y in zip(a, b) if isinstance(a, tuple) else [(a, b)]:
            torch.testing.assert_close(x, y, rtol=0, atol=0)
    if stack == "cross":  # the decoder self-attention of the same layer runs before the cross-attention
        torch.testing.assert_close(out.decoder_attentions[1], clean.decoder_attentions[1], rtol=0, atol=0)


def test_mean_of_one_text_reproduces_its_pattern(tiny_bert):
    runner = get_runner(tiny_bert)
    ref = mean_pattern(runner, [TEXTS[0]])
    clean = runner.run(TEXTS[0])
    res = runner.run(TEXTS[0], ablation=Ablation.layers([0, 1], "mean", reference=ref))
    np.testing.assert_allclose(res.attention, clean.attention, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res.outputs["embedding"], clean.outputs["embedding"], rtol=1e-4, atol=1e-5)
    other = runner.run(TEXTS[1], ablation=Ablation.layers([0], "mean", reference=ref))
    np.testing.assert_allclose(other.attention[0].sum(-1), 1.0, rtol=1e-5)
    assert not np.allclose(other.attention[0], runner.run(TEXTS[1]).attention[0])


def test_mean_pattern_averages_by_position_over_texts_that_reach_it(tiny_bert):
    runner = get_runner(tiny_bert)
    a, b = runner.run_batch(TEXTS)
    ref = mean_pattern(runner, TEXTS).patterns["self"]
    short = b.n_tokens
    np.testing.assert_allclose(ref[:, :, :short, :short], (a.attention[:, :, :short, :short] + b.attention) / 2,
                               rtol=1e-5)
    np.testing.assert_allclose(ref[:, :, short:, :], a.attention[:, :, short:, :], rtol=1e-5)


def test_bart_stacks_are_addressed_separately(tiny_bart):
    runner = get_runner(tiny_bart)
    clean = runner.run("The cat sat.", target="Le chat")
    enc = runner.run("The cat sat.", target="Le chat", ablation=Ablation.heads([(1, 0)], "uniform", stack="encoder"))
    dec = runner.run("The cat sat.", target="Le chat", ablation=Ablation.heads([(1, 0)], "uniform", stack="decoder"))
    cross = runner.run("The cat sat.", target="Le chat", ablation=Ablation.heads([(1, 0)], "uniform", stack="cross"))
    n, m = clean.n_tokens, len(clean.target_tokens)
    np.testing.assert_allclose(enc.attention[1, 0], 1.0 / n)
    np.testing.assert_array_equal(enc.attention[0], clean.attention[0])
    np.testing.assert_array_equal(dec.attention, clean.attention)
    np.testing.assert_allclose(dec.decoder_attention[1, 0], np.tril(np.ones((m, m))) / np.arange(1, m + 1)[:, None],
                               rtol=1e-6)
    np.testing.assert_array_equal(dec.cross_attention[0], clean.cross_attention[0])
    np.testing.assert_allclose(cross.cross_attention[1, 0], 1.0 / n)
    np.testing.assert_array_equal(cross.decoder_attention[1], clean.decoder_attention[1])
    with pytest.raises(ValueError, match="encoder-decoder"):
        runner.run("The cat sat.", ablation=Ablation.heads([(0, 0)]))


def test_errors_say_what_to_do(tiny_bert):
    runner = get_runner(tiny_bert)
    with pytest.raises(ValueError, match="has 2 layers"):
        runner.run("x y", ablation=Ablation.heads([(5, 0)]))
    with pytest.raises(ValueError, match="has 4 heads"):
        runner.run("x y", ablation=Ablation.heads([(0, 9)]))
    with pytest.raises(ValueError, match="one attention stack"):
        runner.run("x y", ablation=Ablation.heads([(0, 0)], stack="cross"))
    with pytest.raises(ValueError, match="reference pattern"):
        Ablation.heads([(0, 0)], "mean")
    with pytest.raises(ValueError, match="between 0 and 1"):
        Ablation.heads({(0, 0): 1.5})
    with pytest.raises(ValueError, match="unknown ablation mode"):
        Ablation.heads([(0, 0)], "drop")


def test_spec_is_canonical_and_round_trips():
    a = Ablation.heads({(1, 2): "zero", (0, 1): 0.25})
    b = Ablation.heads({(0, 1): 0.25}) | Ablation.heads({(1, 2): "uniform"}) | Ablation.heads({(1, 2): 0})
    assert a == b and hash(a) == hash(b)
    assert a.edits[0] == HeadEdit("self", 0, 1, "scale", 0.25)
    assert Ablation.from_dict(a.to_dict()) == a
    assert a.with_head(3, None, "uniform").first_layer() == 0
    assert a.without_head(0, 1).first_layer() == 1
    assert repr(Ablation.layers([2])) == "Ablation(2=zero)"


def test_zero_edit_without_a_scale_zeroes_the_head(tiny_bert):
    """The mode sets the scale: a "zero" edit written without one (HeadEdit's default is 1.0) still removes the head."""
    runner = get_runner(tiny_bert)
    from_page = Ablation.from_dict({"edits": [{"stack": "self", "layer": 0, "head": 0, "mode": "zero"}]})
    direct = Ablation((HeadEdit("self", 0, 0, "zero"),))
    assert from_page == direct == Ablation.heads([(0, 0)]) and hash(from_page) == hash(Ablation.heads([(0, 0)]))
    assert direct.edits[0].scale == 0.0
    res = runner.run(TEXTS[0], ablation=from_page)
    assert np.all(res.attention[0, 0] == 0)
    assert not np.allclose(res.outputs["embedding"], runner.run(TEXTS[0]).outputs["embedding"])
    # the other modes: a stray scale means nothing, and a scale of 0 is a zero edit
    assert HeadEdit("self", 0, 0, "uniform", 0.3) == HeadEdit("self", 0, 0, "uniform")
    assert HeadEdit("self", 0, 0, "uniform").scale == 1.0
    assert HeadEdit("self", 0, 0, "scale", 0.0) == HeadEdit("self", 0, 0, "zero", 0.7)
    with pytest.raises(ValueError, match="needs its scale"):
        Ablation.from_dict({"edits": [{"stack": "self", "layer": 0, "head": 0, "mode": "scale"}]})


@pytest.mark.parametrize("scale", [1.5, 7, -0.1, float("nan"), float("inf")])
def test_scale_is_checked_however_the_edit_is_made(scale):
    with pytest.raises(ValueError, match="between 0 and 1"):
        HeadEdit("self", 0, 0, "scale", scale)
    with pytest.raises(ValueError, match="between 0 and 1"):
        Ablation.from_dict({"edits": [{"stack": "self", "layer": 0, "head": 0, "mode": "scale", "scale": scale}]})
    with pytest.raises(ValueError, match="between 0 and 1"):
        Ablation.heads({(0, 0): scale})


def test_scale_must_be_a_number():
    for bad in (True, "0.5", None):
        with pytest.raises(TypeError, match="scale must be a number"):
            HeadEdit("self", 0, 0, "scale", bad)  # type: ignore[arg-type]
    assert HeadEdit("self", 0, 0, "scale", np.float32(0.5)).scale == 0.5
    assert Ablation.from_dict({"edits": [{"stack": "self", "layer": 0, "head": None, "mode": "scale",
                                          "scale": 1}]}) == Ablation()


@pytest.mark.parametrize("head_mode", ["uniform", 0.5, "zero"])
@pytest.mark.parametrize("layer_mode", ["zero", "uniform"])
def test_a_disabled_layer_disables_every_head_whatever_the_head_edits(tiny_gpt2, layer_mode, head_mode):
    runner = get_runner(tiny_gpt2)
    layer_only = Ablation.layers([1], layer_mode)
    expected = runner.run_batch(TEXTS, ablation=layer_only)
    for ab in (layer_only | Ablation.heads({(1, 2): head_mode}), Ablation.heads({(1, 2): head_mode}) | layer_only,
               layer_only.with_head(1, 2, head_mode)):
        assert len(ab) == 2  # the head edit is kept for when the layer is enabled again ...
        for got, want in zip(runner.run_batch(TEXTS, ablation=ab), expected):  # ... but changes nothing meanwhile
            np.testing.assert_array_equal(got.attention, want.attention)
            np.testing.assert_array_equal(got.outputs["embedding"], want.outputs["embedding"])
        assert ab.without_head(1, None) == Ablation.heads({(1, 2): head_mode})
    # whatever order a site gets its edits in
    enc = runner.encode(TEXTS)
    head_edit = HeadEdit("self", 1, 2, "scale", head_mode) if isinstance(head_mode, float) else \
        HeadEdit("self", 1, 2, head_mode)
    both = [HeadEdit("self", 1, None, layer_mode), head_edit]  # as a site would get them, if nothing dropped one
    seen = {}

    def hook(call, weights):
        if call.site.layer != 1:
            return None
        seen["layer"] = apply_edits(call, weights, list(layer_only.edits), None)
        seen["both"] = apply_edits(call, weights, both, None)
        return None

    runner.forward(enc, [hook])
    torch.testing.assert_close(seen["both"], seen["layer"], rtol=0, atol=0)
    res = runner.run(TEXTS[0], ablation=Ablation.layers([1], layer_mode) | Ablation.heads({(1, 2): head_mode}))
    if layer_mode == "zero":
        assert not res.attention[1].any()
    else:
        n = res.n_tokens
        np.testing.assert_allclose(res.attention[1, 2], np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None],
                                   rtol=1e-6)


def test_a_scaled_layer_scales_on_top_of_its_head_edits(tiny_bert):
    runner = get_runner(tiny_bert)
    ab = Ablation.layers([1], 0.5) | Ablation.heads({(1, 2): 0.5, (1, 3): "uniform"})
    assert len(ab) == 3  # nothing dropped under a scaled layer
    assert ab == Ablation.heads({(1, 2): 0.5, (1, 3): "uniform"}) | Ablation.layers([1], 0.5)
    layer, d = 1, runner.info.head_dim
    clean = _head_outputs(runner, TEXTS, [], layer)
    got = _head_outputs(runner, TEXTS, ab.hooks(runner.info), layer)
    uniform = _head_outputs(runner, TEXTS, Ablation.heads({(1, 3): "uniform"}).hooks(runner.info), layer)
    expected = clean * 0.5
    expected[..., 2 * d:3 * d] *= 0.5
    expected[..., 3 * d:4 * d] = uniform[..., 3 * d:4 * d] * 0.5
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("build", [
    lambda: Ablation.heads([(1.7, 0)]),
    lambda: Ablation.heads({(0, 1.0): "zero"}),
    lambda: Ablation.heads([("self", 0, 2.5)]),
    lambda: Ablation.layers([1.5]),
    lambda: Ablation.layers([("self", 0.0)]),
    lambda: Ablation().with_head(1, 0.3),
    lambda: Ablation.from_dict({"edits": [{"stack": "self", "layer": 1.7, "head": 0, "mode": "zero"}]}),
    lambda: Ablation.from_dict({"edits": [{"stack": "self", "layer": 1, "head": "2", "mode": "zero"}]}),
    lambda: HeadEdit("self", True, 0, "zero"),
    lambda: HeadEdit("self", 0, np.float64(1.0), "zero"),
])
def test_non_integer_layers_and_heads_are_refused_not_truncated(build):
    with pytest.raises(TypeError, match="must be an integer"):
        build()


def test_numpy_integer_indices_are_plain_ints():
    ab = Ablation.heads([(np.int64(1), np.int32(2))]) | Ablation.layers([np.uint8(0)])
    assert ab == Ablation.heads([(1, 2)]) | Ablation.layers([0]) and hash(ab) == hash(Ablation.heads([(1, 2)])
                                                                                    | Ablation.layers([0]))
    assert all(type(e["layer"]) is int and type(e["head"]) in (int, type(None)) for e in ab.to_dict()["edits"])


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_mean_edit_builds_its_pattern_on_the_weights_device_and_dtype(dtype):
    """Weights on another device (the meta device stands in for a GPU) and dtype get a pattern on the same."""
    from attnwidgets.runner.ablation import MeanPattern
    from attnwidgets.runner.control import AttentionCall, AttentionSite

    ref = MeanPattern({"self": np.full((1, 2, 3, 3), 1 / 3, np.float32)})
    for device in ("cpu", "meta"):
        weights = torch.rand(1, 2, 4, 4, dtype=dtype, device=device)
        call = AttentionCall(AttentionSite("self", 0), torch.nn.Identity(), weights, weights, weights, None, None)
        out = apply_edits(call, weights, [HeadEdit("self", 0, 1, "mean")], ref)
        assert out.device == weights.device and out.dtype == dtype
        if device == "cpu":
            expected = torch.full((4, 4), 0.25, dtype=dtype)
            expected[:3, :3], expected[:3, 3] = 1 / 3, 0  # rows of the pattern renormalised; row 3 beyond it: uniform
            torch.testing.assert_close(out[0, 1], expected)
            torch.testing.assert_close(out[0, 0], weights[0, 0])
