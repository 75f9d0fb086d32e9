"""QK capture: the captured vectors reproduce the model's attention and each head's output, for BERT, RoPE + GQA."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import traitlets

import attnwidgets as aw
from attnwidgets.qk_result import QKCapture
from attnwidgets.runner.qk import capture_qk, capture_qk_layers

TEXT = "The cat sat on the mat because it was tired."


def _head_outputs(runner, text: str, layer: int, suffix: str) -> np.ndarray:
    """The input of the module ``suffix`` (the output projection) at ``layer``: the concatenated head outputs."""
    got: dict[str, torch.Tensor] = {}
    name = next(n for n, _ in runner.model.named_modules() if f".{layer}." in f".{n}." and n.endswith(suffix))
    module = dict(runner.model.named_modules())[name]
    handle = module.register_forward_pre_hook(lambda _m, args: got.setdefault("x", args[0].detach()))
    try:
        runner.forward(runner.encode([text]))
    finally:
        handle.remove()
    return got["x"][0].float().numpy()  # (n, H * d)


@pytest.mark.parametrize("layer", [0, 1])
def test_tiny_bert_softmax_scaling_and_output(tiny_bert, layer):
    runner = aw.runner.get_runner(tiny_bert)
    cap = capture_qk(TEXT, model=runner, layer=layer)
    res = runner.run(TEXT)
    n = len(res.tokens)
    assert cap.q.shape == (4, n, 8) and cap.k.shape == (4, n, 8) and cap.v.shape == (4, n, 8)
    assert cap.scaling == pytest.approx(1 / np.sqrt(8))
    np.testing.assert_allclose(cap.weights, res.attention[layer], atol=1e-6)
    np.testing.assert_allclose(cap.scaled, cap.logits * cap.scaling, rtol=1e-6)
    assert cap.recompute_error < 1e-5
    h = 2
    ours = cap.head(h)
    np.testing.assert_allclose(ours["logits"], ours["q"] @ ours["k"].T, rtol=1e-5, atol=1e-6)
    concat = _head_outputs(runner, TEXT, layer, "attention.output.dense")
    np.testing.assert_allclose(cap.output[h], concat[:, h * 8:(h + 1) * 8], atol=1e-5)


def test_tiny_llama_rope_gqa(tiny_llama):
    runner = aw.runner.get_runner(tiny_llama)
    caps = capture_qk_layers(TEXT, model=runner)
    res = runner.run(TEXT)
    n = len(res.tokens)
    assert len(caps) == 2
    cap = caps[1]
    assert cap.q.shape == (4, n, 8) and cap.k.shape == (2, n, 8), "keys keep their 2 grouped heads"
    assert cap.kv_head.tolist() == [0, 0, 1, 1]
    np.testing.assert_allclose(cap.weights, res.attention[1], atol=1e-6)
    assert cap.recompute_error < 1e-5, "post-RoPE q and k reproduce the model's softmax"
    assert not cap.mask[0, 1:].any() and cap.mask[-1].all(), "the causal mask is captured"
    assert np.triu(cap.weights, 1).max() == 0.0
    concat = _head_outputs(runner, TEXT, 1, "self_attn.o_proj")
    for h in range(4):
        np.testing.assert_allclose(cap.output[h], concat[:, h * 8:(h + 1) * 8], atol=1e-5)
    np.testing.assert_allclose(cap.head(3)["k"], cap.k[1])


def test_bundled_model_all_layers(bundled):
    # A result cached by an earlier test may come from a padded batch (float rounding ~1e-6 away from a run alone).
    bundled.cache.clear()
    caps = capture_qk_layers(TEXT, model=bundled)
    res = bundled.run(TEXT)
    assert len(caps) == 6
    for cap in caps:
        assert cap.scaling == pytest.approx(1 / np.sqrt(32))
        np.testing.assert_allclose(cap.weights, res.attention[cap.layer], atol=1e-6)
        assert cap.recompute_error < 1e-5
    concat = _head_outputs(bundled, TEXT, 3, "attention.output.dense")
    np.testing.assert_allclose(caps[3].output.transpose(1, 0, 2).reshape(len(res.tokens), -1), concat, atol=1e-5)


def test_encoder_decoder_cross_stack(tiny_bart):
    runner = aw.runner.get_runner(tiny_bart)
    cap = capture_qk("The cat sat.", model=runner, stack="cross", layer=1, target="A cat.")
    res = runner.run("The cat sat.", target="A cat.")
    assert cap.tokens == res.target_tokens and cap.key_tokens == res.tokens
    np.testing.assert_allclose(cap.weights, res.cross_attention[1], atol=1e-6)


def test_bad_arguments(tiny_bert):
    with pytest.raises(IndexError, match="out of range"):
        capture_qk(TEXT, model=tiny_bert, layer=5)
    with pytest.raises(ValueError, match="only attention stack"):
        capture_qk(TEXT, model=tiny_bert, stack="cross")
    cap = capture_qk(TEXT, model=tiny_bert)
    with pytest.raises(IndexError, match="head 9"):
        cap.head(9)


def test_from_vectors_masks_and_grouped_heads():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(4, 5, 3)), rng.normal(size=(2, 7, 3)), rng.normal(size=(2, 7, 3))
    mask = np.ones((5, 7), bool)
    mask[:, 5:] = False
    cap = QKCapture.from_vectors(q, k, v, list("abcde"), key_tokens=list("ABCDEFG"), mask=mask)
    assert cap.weights.shape == (4, 5, 7)
    assert cap.weights[..., 5:].max() == 0.0
    np.testing.assert_allclose(cap.weights.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(cap.output[3], cap.weights[3] @ v[1], atol=1e-5)


def _cap(n_heads: int = 2, n: int = 5) -> QKCapture:
    rng = np.random.default_rng(2)
    return QKCapture.from_vectors(rng.normal(size=(n_heads, n, 3)), rng.normal(size=(n_heads, n, 3)),
                                  rng.normal(size=(n_heads, n, 3)), [f"t{i}" for i in range(n)])


def test_widget_initial_view_requests_and_validation():
    w = aw.QKStepThrough([_cap(), QKCapture.from_vectors(*(np.ones((2, 5, 3)),) * 3, [f"t{i}" for i in range(5)],
                                                         layer=4)], head=1)
    assert w.layer == 0 and w._meta["layers"] == [0, 4] and w.query == 1
    assert set(w._payload["arrays"]) == {"q", "k", "v", "logits", "scaled", "weights", "output", "mask"}
    content, buffers = w.answer({"what": "qk", "layer": 4, "head": 0})
    names = [a["name"] for a in content["arrays"]]
    assert names[:3] == ["q", "k", "v"] and len(buffers) == len(names)
    weights = np.frombuffer(bytes(buffers[names.index("weights")]), "<f4").reshape(5, 5)
    np.testing.assert_allclose(weights, 0.2, atol=1e-6)
    with pytest.raises(traitlets.TraitError, match="was not captured"):
        w.layer = 2
    with pytest.raises(traitlets.TraitError, match="head 5"):
        w.head = 5
    with pytest.raises(traitlets.TraitError, match="query 9"):
        w.query = 9
    with pytest.raises(TypeError, match="QKCapture"):
        aw.QKStepThrough("not a capture")
    with pytest.raises(TypeError, match="unexpected keyword"):
        aw.QKStepThrough(_cap(), colour="red")


def test_widget_theme_follows_set_theme():
    aw.set_theme("lecture")
    try:
        assert aw.QKStepThrough(_cap()).theme == "lecture"
    finally:
        aw.set_theme("light")
    assert aw.QKStepThrough(_cap(), theme="lecture").theme == "lecture"
    assert aw.QKStepThrough(_cap()).theme == "light"


def test_decoder_capture_starts_at_the_last_token(tiny_gpt2):
    cap = capture_qk(TEXT, model=tiny_gpt2, layer=1)
    w = aw.QKStepThrough(cap)
    assert w.query == len(cap.tokens) - 1, "the last token sees every key in a causal model"
    v = w.values()
    assert v["mask"].all() and v["weights"].sum() == pytest.approx(1.0, abs=1e-5)
