"""The first recomputed layer takes its self-attention from the clean run, and only edited heads are recomputed.

These are speed paths: each test checks both that the shortcut is taken (the eager attention is not computed at the
substituted site; only the edited heads are multiplied again) and that the result is the full recomputation's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidgets.runner import control, get_runner
from attnwidgets.runner.ablation import Ablation

TEXTS = ["The cat sat on the mat because it was tired.", "Dogs bark."]


@pytest.fixture
def eager_sites(monkeypatch):
    """The sites whose eager attention was computed, in call order."""
    seen: list[control.AttentionSite] = []
    real = control._model_eager

    def counting(module):
        fn = real(module)

        def wrapped(*args, **kwargs):
            seen.append(control._sites[id(module)])
            return fn(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(control, "_model_eager", counting)
    return seen


def _full(runner, ablation, **kw):
    runner.partial_recompute = False
    try:
        return list(runner.iter_results(TEXTS, ablation=ablation, cache=False, **kw))
    finally:
        runner.partial_recompute = True


def _assert_same(partial, full):
    for p, f in zip(partial, full, strict=True):
        for name in ("attention", "decoder_attention", "cross_attention"):
            a, b = getattr(p, name), getattr(f, name)
            if a is None:
                assert b is None
                continue
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(p.outputs["embedding"], f.outputs["embedding"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_gpt2", "tiny_llama"])
@pytest.mark.parametrize("layer", [0, 1])
def test_first_edited_layer_is_not_recomputed_and_equals_full(fixture, layer, request, eager_sites):
    runner = get_runner(request.getfixturevalue(fixture))
    runner.run_batch(TEXTS, ablation=Ablation.heads([(1, 0)]))  # leaves the clean states
    ablation = Ablation.heads([(layer, 2)], "uniform")
    eager_sites.clear()
    partial = list(runner.iter_results(TEXTS, ablation=ablation, cache=False))
    # Layers below `layer` are replayed and `layer` itself is substituted: only the layers above compute attention.
    assert sorted({s.layer for s in eager_sites}) == list(range(layer + 1, runner.info.n_layers))
    _assert_same(partial, _full(runner, ablation))


def test_layer_zero_edit_without_clean_state_runs_once(tiny_bert, eager_sites):
    """With no clean run cached, a layer-0 edit is one plain forward (a clean run first would only cost more)."""
    runner = get_runner(tiny_bert)
    text = "A sentence no other test runs through this model."
    before = runner.n_forward
    eager_sites.clear()
    runner.run(text, ablation=Ablation.heads([(0, 1)]))
    assert runner.n_forward - before == 1
    assert [s.layer for s in eager_sites] == list(range(runner.info.n_layers))


def test_encoder_decoder_substitutes_encoder_and_decoder_self_attention(tiny_bart, eager_sites):
    runner = get_runner(tiny_bart)
    targets = ["Die Katze.", "Hunde bellen."]
    runner.run_batch(TEXTS, targets=targets, ablation=Ablation.heads([("encoder", 1, 0)]))
    ablation = Ablation.heads([("encoder", 1, 1)], 0.5)
    eager_sites.clear()
    partial = list(runner.iter_results(TEXTS, targets=targets, ablation=ablation, cache=False))
    computed = {(s.stack, s.layer) for s in eager_sites}
    assert ("encoder", 0) not in computed and ("encoder", 1) not in computed  # replayed, then substituted
    assert ("decoder", 0) not in computed  # the decoder's own embeddings did not change
    assert ("cross", 0) in computed  # but it reads the changed encoder output
    _assert_same(partial, _full(runner, ablation, targets=targets))


def test_only_edited_heads_are_recomputed():
    """_recompute_heads multiplies only the heads whose weights changed; the others keep their outputs."""
    torch.manual_seed(0)
    b, h, t, d = 2, 4, 5, 3
    before = torch.softmax(torch.randn(b, h, t, t), -1)
    value = torch.randn(b, h, t, d)
    out = torch.matmul(before, value).transpose(1, 2)  # (B, T, H, D)
    marker = out.clone()
    marker[:, :, 0] = 123.0  # head 0 unchanged: must keep this (wrong) value, proving it was not recomputed
    after = before.clone()
    after[:, 2] = 1.0 / t
    new = control._recompute_heads(marker, before, after, value)
    assert torch.all(new[:, :, 0] == 123.0)
    torch.testing.assert_close(new[:, :, 2], torch.matmul(after[:, 2], value[:, 2]))
    torch.testing.assert_close(new[:, :, 1], out[:, :, 1])
    assert torch.all(marker[:, :, 2] != new[:, :, 2])  # the caller's tensor was not written to
