"""MoE routing: each token's experts and gate weights per layer, from tiny random Mixtral, Qwen2-MoE and OLMoE
decoders.

Checked against the router worked out again here from the MoE block's input (hooked on transformers' own eager
model): logits = W h, softmax, top-k, renormalised over the k as the model's config says; the load per expert against
counts by hand; a dense model is refused.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnwidgets as aw
from attnwidgets.router_result import RouterResult

TEXT = "The cat sat on the mat because it was tired."


def _by_hand(path: str, runner) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each MoE layer's (logits, experts, weights) worked out from the block's input in transformers' eager model."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    cfg = model.config
    k = cfg.num_experts_per_tok
    renorm = getattr(cfg, "norm_topk_prob", True)  # Mixtral always renormalises
    inputs: dict[int, torch.Tensor] = {}
    handles = []
    for i, layer in enumerate(model.model.layers):
        if hasattr(layer.mlp, "gate") and hasattr(layer.mlp, "experts"):
            handles.append(layer.mlp.register_forward_pre_hook(
                lambda mod, args, i=i: inputs.__setitem__(i, args[0][0].detach())))
    with torch.no_grad():
        model(**runner.encode([TEXT], [None], [None]).inputs)
    for h in handles:
        h.remove()
    out = {}
    for i, h in inputs.items():
        w = model.model.layers[i].mlp.gate.weight.detach()
        logits = (h @ w.T).numpy().astype(np.float64)
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        experts = np.argsort(-probs, axis=-1, kind="stable")[:, :k]
        top = np.take_along_axis(probs, experts, -1)
        if renorm:
            top = top / top.sum(-1, keepdims=True)
        out[i] = (logits, experts, top)
    return out


@pytest.mark.parametrize("family", ["tiny_mixtral", "tiny_qwen2_moe", "tiny_olmoe"])
def test_routing_is_the_models_own(family, request):
    path = request.getfixturevalue(family)
    runner = aw.runner.get_runner(path)
    r = aw.runner.route(TEXT, model=runner)
    want = _by_hand(path, runner)
    assert r.layers == sorted(want)
    if family == "tiny_qwen2_moe":
        assert r.layers == [1, 2] and r.n_experts == 6, "layer 0 is dense"
    if family == "tiny_olmoe":  # every layer sparse; a router left at its zeros would tie all 8 experts
        assert r.layers == [0, 1] and r.n_experts == 8 and np.ptp(r.logits) > 0.1
    n = len(r.tokens)
    assert r.experts.shape == (len(r.layers), n, 2)
    for row, layer in enumerate(r.layers):
        logits, experts, weights = want[layer]
        np.testing.assert_allclose(r.logits[row], logits, atol=1e-5)
        np.testing.assert_array_equal(r.experts[row], experts)
        np.testing.assert_allclose(r.weights[row], weights, atol=1e-6)
    renormalised = family == "tiny_mixtral"
    assert np.allclose(r.weights.sum(-1), 1.0, atol=1e-6) == renormalised
    if not renormalised:  # Qwen2-MoE as configured: the gate weights are the top-k router probabilities themselves
        np.testing.assert_allclose(np.take_along_axis(r.probs(), r.experts, -1), r.weights, atol=1e-6)


def test_load_counts_by_hand(tiny_mixtral):
    r = aw.runner.route(TEXT, model=tiny_mixtral)
    load = r.load()
    for row in range(len(r.layers)):
        counts = np.bincount(r.experts[row].ravel(), minlength=r.n_experts)
        np.testing.assert_allclose(load[row], counts / counts.sum(), atol=1e-7)
    part = r.load(span=(2, 5), weighted=True)
    sums = np.zeros(r.n_experts)
    np.add.at(sums, r.experts[0, 2:5].ravel(), r.weights[0, 2:5].ravel())
    np.testing.assert_allclose(part[0], sums / sums.sum(), atol=1e-6)
    with pytest.raises(ValueError, match="not a non-empty range"):
        r.load(span=(5, 5))


def test_a_dense_model_is_refused(tiny_llama):
    with pytest.raises(ValueError, match=r"no mixture-of-experts layers.*Mixtral"):
        aw.runner.route(TEXT, model=tiny_llama)


def test_result_checks_its_arrays():
    with pytest.raises(ValueError, match="expert indices"):
        RouterResult(["a"], [0], np.zeros((1, 1, 2), np.float32), np.array([[[3]]]), np.ones((1, 1, 1), np.float32))
