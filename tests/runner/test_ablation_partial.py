"""Partial recomputation (replaying layers below the first edited one) equals a full recomputation."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.runner import get_runner
from attnwidgets.runner.ablation import Ablation

TEXTS = ["The cat sat on the mat because it was tired.", "Dogs bark.", "She gave him the [MASK] he wanted."]


def _fields(res):
    arrays = {"attention": res.attention, **{f"out:{k}": v for k, v in res.outputs.items()}}
    if res.cross_attention is not None:
        arrays["decoder_attention"] = res.decoder_attention
        arrays["cross_attention"] = res.cross_attention
    return arrays


def _count_calls(runner, layer_index, stacks=None):
    """Count forward calls of the attention modules of one layer (in ``stacks``; all when None). A replayed layer's
    forward returns its stored output without calling them, while hooks on the layer module itself still fire."""
    from attnwidgets.runner import control

    calls = []
    handles = [m.register_forward_hook(lambda *a: calls.append(1)) for m in runner.model.modules()
               if (s := control._sites.get(id(m))) is not None and s.layer == layer_index
               and (stacks is None or s.stack in stacks)]
    assert handles, f"no attention module of layer {layer_index} in {stacks}"
    return calls, handles


def _partial_vs_full(runner, ablation, targets=None, layer_skipped=0, stacks=None):
    """Compare a partial with a full recomputation; return the calls of layer ``layer_skipped`` in each."""
    calls, handles = _count_calls(runner, layer_skipped, stacks)
    try:
        partial = list(runner.iter_results(TEXTS, targets=targets, ablation=ablation, cache=False))
    finally:
        for h in handles:
            h.remove()
    full_calls, handles = _count_calls(runner, layer_skipped, stacks)
    runner.partial_recompute = False
    try:
        full = list(runner.iter_results(TEXTS, targets=targets, ablation=ablation, cache=False))
    finally:
        runner.partial_recompute = True
        for h in handles:
            h.remove()
    assert full_calls, "the counter sees the layer run in a full recomputation"
    for p, f in zip(partial, full):
        pa, fa = _fields(p), _fields(f)
        assert pa.keys() == fa.keys()
        for k in pa:
            np.testing.assert_allclose(pa[k], fa[k], rtol=1e-5, atol=1e-6, err_msg=k)
    return calls


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_bert_mlm", "tiny_gpt2", "tiny_llama"])
@pytest.mark.parametrize("mode", ["zero", "uniform", 0.3])
def test_partial_equals_full_on_tiny_models(fixture, mode, request):
    runner = get_runner(request.getfixturevalue(fixture))
    runner.run_batch(TEXTS, ablation=Ablation.heads([(1, 0)]))  # leaves the clean states
    calls = _partial_vs_full(runner, Ablation.heads([(1, 1), (1, 3)], mode))
    assert calls == []  # layer 0 was replayed, not recomputed


def test_partial_equals_full_on_the_bundled_model(bundled):
    bundled.run_batch(TEXTS, ablation=Ablation.heads([(5, 0)]))
    for ablation in (Ablation.heads([(3, 4)], "uniform"), Ablation.heads({(2, 0): 0.5, (5, 11): "zero"}),
                     Ablation.layers([4])):
        calls = _partial_vs_full(bundled, ablation, layer_skipped=1)
        assert calls == []


@pytest.mark.parametrize("stack", ["encoder", "decoder", "cross"])
def test_partial_equals_full_on_bart(tiny_bart, stack):
    runner = get_runner(tiny_bart)
    targets = ["Le chat", "Les chiens aboient.", "Elle"]
    runner.run_batch(TEXTS, targets=targets, ablation=Ablation.heads([(1, 0)], stack=stack))  # leaves clean states
    ablation = Ablation.heads([(1, 2)], "uniform", stack=stack)
    # an encoder edit replays encoder layer 0 (and recomputes the decoder); a decoder-side edit replays the whole
    # encoder and decoder layer 0 (self and cross)
    replayed = ["encoder"] if stack == "encoder" else ["encoder", "decoder", "cross"]
    assert _partial_vs_full(runner, ablation, targets=targets, stacks=replayed) == [], "fell back to a full run"
    if stack != "encoder":
        assert _partial_vs_full(runner, ablation, targets=targets, layer_skipped=1, stacks=["encoder"]) == []


def test_clean_run_is_made_once_and_reused(tiny_bert):
    runner = get_runner(tiny_bert)
    text = "A fresh sentence for counting forward passes."
    n0 = runner.n_forward
    runner.run(text, ablation=Ablation.heads([(1, 0)]))
    assert runner.n_forward == n0 + 2  # clean (states) + partial
    runner.run(text, ablation=Ablation.heads([(1, 1)]))
    assert runner.n_forward == n0 + 3
    runner.run(text)  # the clean result was cached by the ablated run
    assert runner.n_forward == n0 + 3
