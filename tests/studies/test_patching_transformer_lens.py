"""Our head patching and direct logit attribution give TransformerLens's numbers on the same tiny random GPT-2.

TransformerLens 4.3 (``TransformerBridge.boot_transformers(folder)``) wraps the saved Hugging Face model and exposes
its hook points; its own way of patching a head is ``run_with_hooks`` with a hook on ``blocks.{l}.attn.hook_z``
([batch, pos, head_index, d_head]: the head's output before the output projection, the same thing
:mod:`attnwidgets.runner.patching` swaps) or ``blocks.{l}.attn.hook_pattern`` ([batch, head_index, query_pos,
key_pos]) for the pattern alone; its direct logit attribution is ``cache.stack_head_results`` →
``cache.apply_ln_to_stack`` (the final norm's scale frozen at the run) → the dot product with
``tokens_to_residual_directions``, on the bridge's raw Hugging Face weights (its default). There
``apply_ln_to_stack`` centres and divides by the frozen scale but does not apply the final norm's weight, and
``tokens_to_residual_directions`` is the raw unembedding column, so the direction is multiplied by ``ln_final``'s
weight here (what ``enable_compatibility_mode()`` would fold into ``W_U``). Compatibility mode is not used for the
heads: it also folds each head's value bias into the output projection's bias (``fold_value_biases``), which moves a
constant from every head's share to the layer's bias share; our heads keep their value bias, as the model computes
them. The totals per layer (``decompose_resid``) are the same either way.

Under all of it, our attention itself is its ``hook_pattern`` (GPT-2, Llama, BERT; dense and rebuilt from queries and
keys): what ``benchmarks/bench_long_context.py``'s TransformerLens row relies on.

Skipped, with the reason, when ``transformer_lens`` is not importable: it is an optional
peer, in the ``bench`` extra; install it beside the project (``pip install --no-deps --target DIR
transformer-lens==4.3.0`` plus its missing dependencies, then ``PYTHONPATH=DIR``) so it cannot move torch or
transformers.

The tiny GPT-2 of ``tests/conftest.py`` is randomly initialised: its final norm is the identity (weight 1, bias 0)
and its logit differences are about 1e-2, so the numbers are compared to 1e-6 (float32 rounding is 1e-8 here), and
the attribution is checked again on a copy whose norms are random (a test that the norm's weight and offset are
handled, which the identity norm cannot tell).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

tl_bridge = pytest.importorskip(
    "transformer_lens.model_bridge",
    reason="TransformerLens (>= 4, TransformerBridge) is not importable: the comparison with its patching and "
           "attribution needs it (pip install 'attnwidgets[bench]', or beside the project with --target)")
import torch  # noqa: E402

from attnwidgets.attention_stack import set_dense_budget  # noqa: E402
from attnwidgets.runner import get_runner  # noqa: E402
from attnwidgets.studies import logit_attribution, patch_heads  # noqa: E402

CLEAN, CORRUPTED = "the cat sat on the mat", "the dog sat on the mat"
ANSWER = ("a", "b")
#: float32 rounding between two runs of the same weights is ~1e-8 on this model; its effects are ~1e-3
ATOL = 1e-6


def _bridge(folder: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tl_bridge.TransformerBridge.boot_transformers(folder, device="cpu")


def _ids(folder: str, text: str) -> torch.Tensor:
    """The token ids our runner runs (TransformerLens gets the same tensor, so neither side's BOS rule matters)."""
    return get_runner(folder).encode([text]).inputs["input_ids"]


def _answer_ids(folder: str) -> tuple[int, int]:
    tok = get_runner(folder).tokenizer
    right, wrong = (tok.encode(w, add_special_tokens=False) for w in ANSWER)
    assert len(right) == len(wrong) == 1
    return right[0], wrong[0]


def _tl_patching(folder: str, *, denoise: bool = False, hook: str = "hook_z") -> tuple[np.ndarray, float, float]:
    """TransformerLens's own activation patching: for every layer and head, run the target tokens with
    ``blocks.{l}.attn.{hook}`` of that head replaced by the source run's (from ``run_with_cache``), and score the
    logit difference at the last position. Returns ([layer, head], clean, corrupted)."""
    bridge = _bridge(folder)
    right, wrong = _answer_ids(folder)
    clean, corrupted = _ids(folder, CLEAN), _ids(folder, CORRUPTED)
    target, source = (corrupted, clean) if denoise else (clean, corrupted)

    def logit_diff(logits: torch.Tensor) -> float:
        return float(logits[0, -1, right] - logits[0, -1, wrong])

    with torch.no_grad():
        _, cache = bridge.run_with_cache(source)
        base = {"clean": logit_diff(bridge(clean)), "corrupted": logit_diff(bridge(corrupted))}
        layers, heads = bridge.cfg.n_layers, bridge.cfg.n_heads
        values = np.zeros((layers, heads))
        for layer in range(layers):
            name = f"blocks.{layer}.attn.{hook}"
            for head in range(heads):
                # hook_z is [batch, pos, head_index, d_head]; hook_pattern [batch, head_index, query_pos, key_pos]
                index = (slice(None), slice(None), head) if hook == "hook_z" else (slice(None), head)

                def swap(act: torch.Tensor, hook: Any, name: str = name, index: tuple = index) -> torch.Tensor:
                    act = act.clone()
                    act[index] = cache[name][index]
                    return act

                values[layer, head] = logit_diff(bridge.run_with_hooks(target, fwd_hooks=[(name, swap)]))
    return values, base["clean"], base["corrupted"]


@pytest.mark.parametrize("model", ["tiny_gpt2", "tiny_llama", "tiny_bert_mlm"])
@pytest.mark.parametrize("lazy", [False, True], ids=["dense", "queries-and-keys"])
def test_attention_matches_transformer_lens_pattern(model, lazy, request):
    """Our attention (dense, or rebuilt from queries and keys) is TransformerLens's ``hook_pattern`` on the same ids:
    what benchmarks/bench_long_context.py's TL row relies on to be a like-for-like comparison (causal GPT-2, Llama's
    RoPE with grouped-query heads, BERT's bidirectional attention)."""
    folder = request.getfixturevalue(model)
    ids = _ids(folder, CLEAN)
    old = set_dense_budget(0 if lazy else 1 << 30)
    try:
        get_runner(folder).cache.clear()
        ours = get_runner(folder).run(CLEAN)
    finally:
        set_dense_budget(old)
    assert ours.is_lazy == lazy
    bridge = _bridge(folder)
    with torch.no_grad():
        _, cache = bridge.run_with_cache(ids, names_filter=lambda name: name.endswith("attn.hook_pattern"))
    n_layers, _, n_tokens, _ = ours.attention_shape()
    assert n_tokens == ids.shape[1] and len(cache) == n_layers == bridge.cfg.n_layers
    for layer in range(n_layers):
        theirs = cache[f"blocks.{layer}.attn.hook_pattern"][0].numpy()  # [head_index, query_pos, key_pos]
        mine = ours.rows(layer, 0, n_tokens)  # (head, query, key)
        np.testing.assert_allclose(mine, theirs, atol=ATOL)
        # the check can fail: the weights are far from uniform over the keys a query sees, head by head differently
        assert np.ptp(mine[:, -1]) > 100 * ATOL and np.abs(mine[0] - mine[-1]).max() > 100 * ATOL


@pytest.mark.parametrize("direction", ["noising", "denoising"])
def test_head_patching_matches_transformer_lens(tiny_gpt2, direction):
    ours = patch_heads(CLEAN, CORRUPTED, answer=ANSWER, model=tiny_gpt2, direction=direction)
    theirs, clean, corrupted = _tl_patching(tiny_gpt2, denoise=direction == "denoising")
    assert ours.values.shape == theirs.shape == (2, 4)
    np.testing.assert_allclose([ours.clean, ours.corrupted], [clean, corrupted], atol=ATOL)
    np.testing.assert_allclose(ours.values, theirs, atol=ATOL)
    # the check can fail: patching moves the metric far more than the tolerance, head by head differently
    assert np.abs(ours.effect).max() > 100 * ATOL
    assert np.ptp(ours.effect) > 100 * ATOL


def test_pattern_patching_matches_transformer_lens(tiny_gpt2):
    ours = patch_heads(CLEAN, CORRUPTED, answer=ANSWER, model=tiny_gpt2, what="pattern")
    theirs, _, _ = _tl_patching(tiny_gpt2, hook="hook_pattern")
    # a random model's weights are near uniform, so a pattern moves the metric by only ~1e-4: a tighter tolerance
    np.testing.assert_allclose(ours.values, theirs, atol=ATOL / 10)
    assert np.abs(ours.effect).max() > 100 * ATOL / 10


def _tl_attribution(folder: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """TransformerLens's direct logit attribution of (right − wrong) at the last position: per head ([layer, head]),
    per attention output and MLP ([layer] each, from ``decompose_resid``), and the embeddings."""
    bridge = _bridge(folder)
    right, wrong = _answer_ids(folder)
    gamma = dict(bridge.ln_final.named_parameters())["_original_component.weight"]
    with torch.no_grad():
        _, cache = bridge.run_with_cache(_ids(folder, CLEAN))
        directions = bridge.tokens_to_residual_directions(torch.tensor([right, wrong]))
        direction = (directions[0] - directions[1]) * gamma  # raw weights: the final norm's weight is not folded
        heads = cache.apply_ln_to_stack(cache.stack_head_results(layer=-1, pos_slice=-1), layer=-1, pos_slice=-1)
        parts, labels = cache.decompose_resid(layer=-1, pos_slice=-1, return_labels=True)
        parts = cache.apply_ln_to_stack(parts, layer=-1, pos_slice=-1)
        per_head = (heads[:, 0] @ direction).reshape(bridge.cfg.n_layers, bridge.cfg.n_heads).numpy()
        share = dict(zip(labels, (parts[:, 0] @ direction).tolist(), strict=True))
    layers = range(bridge.cfg.n_layers)
    attn = np.array([share[f"{layer}_attn_out"] for layer in layers])
    mlp = np.array([share[f"{layer}_mlp_out"] for layer in layers])
    return per_head, attn, mlp, share["embed"] + share["pos_embed"]


def _check_attribution(folder: str) -> None:
    ours = logit_attribution(CLEAN, token=ANSWER, model=folder)
    heads, attn, mlp, embeddings = _tl_attribution(folder)
    np.testing.assert_allclose(ours.heads, heads, atol=ATOL)
    # an attention output is its heads plus the output projection's bias
    np.testing.assert_allclose(ours.heads.sum(1) + ours.attention_bias, attn, atol=ATOL)
    np.testing.assert_allclose(ours.mlp, mlp, atol=ATOL)
    np.testing.assert_allclose(ours.embeddings, embeddings, atol=ATOL)
    assert np.abs(ours.heads).max() > 100 * ATOL and np.ptp(ours.heads) > 100 * ATOL


def test_logit_attribution_matches_transformer_lens(tiny_gpt2):
    _check_attribution(tiny_gpt2)


@pytest.fixture(scope="module")
def gpt2_random_norms(tiny_gpt2, tmp_path_factory) -> str:
    """The tiny GPT-2 with random norm weights and biases (its own are 1 and 0, which hide how a norm is handled)."""
    from transformers import AutoTokenizer, GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(tiny_gpt2)
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.copy_(1 + 0.5 * torch.randn(module.weight.shape, generator=generator))
                module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=generator))
    folder = Path(tmp_path_factory.mktemp("gpt2_random_norms"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(folder)
        AutoTokenizer.from_pretrained(tiny_gpt2).save_pretrained(folder)
    return str(folder)


def test_logit_attribution_matches_transformer_lens_with_random_norms(gpt2_random_norms):
    _check_attribution(gpt2_random_norms)
