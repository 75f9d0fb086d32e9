"""Direct logit attribution and the logit lens, checked against the model's own logits and a hand computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidgets.runner import get_runner
from attnwidgets.runner.logits import LogitsUnavailableError
from attnwidgets.studies import logit_attribution, logit_lens


@pytest.mark.parametrize("fixture", ["tiny_gpt2", "tiny_llama", "tiny_mistral"])
def test_parts_sum_to_the_logit(fixture, request):
    path = request.getfixturevalue(fixture)
    got = logit_attribution("the cat sat on the mat", "a", model=path) if fixture == "tiny_gpt2" else \
        logit_attribution("the cat sat on the mat", model=path)
    assert got.heads.shape == (2, 4)
    assert abs(got.total() - got.logit) < 1e-4
    runner = get_runner(path)
    enc = runner.encode(["the cat sat on the mat"])
    logits = runner.forward(enc).logits[0, -1].double()
    tid = runner.tokenizer.convert_tokens_to_ids(got.answer[0])
    assert got.logit == pytest.approx(float(logits[tid]), abs=1e-5)


def test_difference_and_a_head_by_hand(tiny_gpt2):
    """Head (1, 2)'s share, computed here from the model's own modules: its output slice through c_proj, centred,
    over the frozen σ, times γ and the difference of two unembedding rows."""
    text = "the cat sat"
    got = logit_attribution(text, ("a", "b"), model=tiny_gpt2)
    assert abs(got.total() - got.logit) < 1e-4
    runner = get_runner(tiny_gpt2)
    model = runner.model
    tok = runner.tokenizer
    a, b = (tok.encode(w, add_special_tokens=False)[0] for w in ("a", "b"))
    kept = {}
    block = model.transformer.h[1]
    h1 = block.attn.c_proj.register_forward_pre_hook(lambda m, args: kept.__setitem__("z", args[0][0, -1].double()))
    h2 = model.transformer.ln_f.register_forward_pre_hook(
        lambda m, args: kept.__setitem__("x", args[0][0, -1].double()))
    enc = runner.encode([text])
    with torch.no_grad():
        out = model(**enc.inputs)
    h1.remove(), h2.remove()
    D = model.config.n_embd // model.config.n_head
    weights = {n: p.detach().double() for n, p in model.named_parameters()}
    z = kept["z"][2 * D:3 * D]
    write = z @ weights['transformer.h.1.attn.c_proj.weight'][2 * D:3 * D]
    x = kept["x"]
    ln = model.transformer.ln_f
    sigma = torch.sqrt(x.var(unbiased=False) + ln.eps)
    u = model.lm_head.weight.detach().double()[a] - model.lm_head.weight.detach().double()[b]
    expected = float(((write - write.mean()) / sigma * weights['transformer.ln_f.weight']) @ u)
    assert got.heads[1, 2] == pytest.approx(expected, abs=1e-6)
    assert got.logit == pytest.approx(float(out.logits[0, -1, a] - out.logits[0, -1, b]), abs=1e-5)


def test_lens_last_layer_is_the_prediction(tiny_gpt2, tiny_bert_mlm):
    lens = logit_lens("the cat sat on the", k=3, model=tiny_gpt2)
    runner = get_runner(tiny_gpt2)
    logits = runner.forward(runner.encode(["the cat sat on the"])).logits[0]
    top = [runner.tokenizer.convert_ids_to_tokens(int(i)) for i in logits.argmax(-1)]
    assert [row[0] for row in lens.top_tokens[-1]] == top
    assert lens.top_probs.shape == (3, len(lens.tokens), 3)
    assert len(lens.at(-1)) == 3
    mlm = logit_lens("the cat sat on the [MASK].", k=2, model=tiny_bert_mlm)
    r = get_runner(tiny_bert_mlm)
    ml = r.forward(r.encode(["the cat sat on the [MASK]."])).logits[0]
    assert [row[0] for row in mlm.top_tokens[-1]] == r.tokenizer.convert_ids_to_tokens(ml.argmax(-1).tolist())


def test_refusals(bundled, tiny_bert_mlm, tiny_gemma2, tiny_gpt2):
    with pytest.raises(LogitsUnavailableError, match="no unembedding"):
        logit_attribution("The cat sat.")
    with pytest.raises(LogitsUnavailableError, match="no unembedding"):
        logit_lens("The cat sat.")
    with pytest.raises(LogitsUnavailableError, match="post-LN"):
        logit_attribution("the cat sat on the [MASK].", "mat", model=tiny_bert_mlm)
    with pytest.raises(LogitsUnavailableError):
        logit_attribution("the cat sat", model=tiny_gemma2)
    with pytest.raises(ValueError, match="not one"):
        logit_attribution("the cat sat", "zzqqxxj", model=tiny_gpt2)
    with pytest.raises(ValueError, match="k must be"):
        logit_lens("the cat", k=0, model=tiny_gpt2)
    assert np.isfinite(logit_attribution("the cat sat", model=tiny_gpt2).heads).all()
