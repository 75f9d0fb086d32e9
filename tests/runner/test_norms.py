"""Norm-based attention (Kobayashi et al. 2020) and the mixing ratio (2021), checked against the paper's formulas
computed by hand with torch from each model's own weights and hidden states."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from biased_models import with_random_biases

import attnwidgets as aw
from attnwidgets.analysis.norms import norm_share
from attnwidgets.runner.norms import NormInputsUnavailableError, output_projection

TEXT = "The cat sat on the mat, and the dog barked."


def _hand(model, inputs, layer_input, values, w_o, n_kv: int):
    """By hand, per layer: the explicit vectors α^h_ij f_h(x_j) (H, n, n, hidden), their norms, and r_i."""
    norms, ratios = [], []
    with torch.no_grad():
        out = model(**inputs, output_attentions=True, output_hidden_states=True)
        for lay, att in enumerate(out.attentions):
            a = att[0].double()  # (H, n, n)
            H = a.shape[0]
            x = layer_input(lay, out.hidden_states[lay][0])  # (n, hidden), what the layer's value projection reads
            v = values(lay, x).double()  # (n, H_kv * D)
            W = w_o(lay).double()  # (hidden, H * D): y = ctx @ W.T
            D = W.shape[1] // H
            f = torch.stack([v[:, (h // (H // n_kv)) * D:(h // (H // n_kv) + 1) * D] @ W[:, h * D:(h + 1) * D].T
                             for h in range(H)])  # (H, n, hidden): f_h(x_j), no output bias
            vec = a[..., None] * f[:, None, :, :]  # (H, i, j, hidden)
            norms.append(vec.norm(dim=-1))
            F = vec.sum(0)  # (i, j, hidden)
            eye = torch.eye(F.shape[0], dtype=torch.bool)
            preserving = F[eye].norm(dim=-1)
            mixing = (F.sum(1) - F[eye]).norm(dim=-1)
            ratios.append(mixing / (mixing + preserving))
    return torch.stack(norms).numpy(), torch.stack(ratios).numpy(), out


def _inputs(path: str, text: str):
    tok = aw.runner.get_runner(path).tokenizer
    return tok(text, return_tensors="pt")


def test_bert_matches_the_formula_by_hand(tiny_bert, tmp_path):
    from transformers import BertModel

    path = with_random_biases(tiny_bert, tmp_path, BertModel, 0)
    model = BertModel.from_pretrained(path, attn_implementation="eager").eval()
    layers = model.encoder.layer
    hand, ratio, _ = _hand(model, _inputs(path, TEXT), lambda lay, h: h,
                           lambda lay, x: layers[lay].attention.self.value(x),
                           lambda lay: layers[lay].attention.output.dense.weight, n_kv=4)
    res = aw.run(TEXT, model=path)
    got = aw.studies.norm_attention(res)
    assert got.shape == hand.shape == (2, 4, res.n_tokens, res.n_tokens)
    np.testing.assert_allclose(got, hand, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(aw.studies.mixing_ratio(res), ratio, atol=1e-5)
    # the per-head norm map is the weights scaled per key, not the weights: the biases make the norms unequal
    assert not np.allclose(got / got.sum(-1, keepdims=True), res.attention, atol=1e-3)


def test_gpt2_matches_the_formula_by_hand(tiny_gpt2, tmp_path):
    from transformers import GPT2LMHeadModel

    path = with_random_biases(tiny_gpt2, tmp_path, GPT2LMHeadModel, 1)
    lm = GPT2LMHeadModel.from_pretrained(path, attn_implementation="eager").eval()
    blocks, E = lm.transformer.h, lm.config.n_embd
    hand, ratio, _ = _hand(lm, _inputs(path, TEXT), lambda lay, h: blocks[lay].ln_1(h),
                           lambda lay, x: blocks[lay].attn.c_attn(x)[:, 2 * E:],
                           lambda lay: blocks[lay].attn.c_proj.weight.T, n_kv=4)  # Conv1D keeps (in, out)
    res = aw.run(TEXT, model=path)
    np.testing.assert_allclose(aw.studies.norm_attention(res), hand, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(aw.studies.mixing_ratio(res), ratio, atol=1e-5)


def test_llama_gqa_matches_the_formula_by_hand(tiny_llama, tmp_path):
    from transformers import LlamaForCausalLM

    lm = LlamaForCausalLM.from_pretrained(tiny_llama, attn_implementation="eager").eval()
    layers = lm.model.layers
    hand, ratio, _ = _hand(lm, _inputs(tiny_llama, TEXT), lambda lay, h: layers[lay].input_layernorm(h),
                           lambda lay, x: layers[lay].self_attn.v_proj(x),
                           lambda lay: layers[lay].self_attn.o_proj.weight, n_kv=2)
    res = aw.run(TEXT, model=tiny_llama)
    got = aw.studies.norm_attention(res)
    np.testing.assert_allclose(got, hand, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(aw.studies.mixing_ratio(res), ratio, atol=1e-5)
    # query heads 0 and 1 share value head 0, but each has its own slice of o_proj: different norms
    v = aw.studies.value_norms(res)
    assert v.shape == (2, 4, res.n_tokens) and not np.allclose(v[:, 0], v[:, 1])


def test_selections_share_and_layer_sum(tiny_bert):
    res = aw.run("A short one.", model=tiny_bert)
    full = aw.studies.norm_attention(res)
    v = aw.studies.value_norms(res)
    np.testing.assert_allclose(full, res.attention * v[:, :, None, :], rtol=1e-6)
    np.testing.assert_allclose(aw.studies.norm_attention(res, layer=1, head=2, rows=(1, 3)), full[1, 2, 1:3])
    share = aw.studies.norm_attention(res, layer=0, share=True)
    np.testing.assert_allclose(share.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(share, norm_share(full[0]), atol=1e-6)
    # ‖Σ_h α f_h‖ lies between 0 and Σ_h ‖α f_h‖ (triangle inequality), and is not the plain sum
    summed = aw.studies.norm_attention(res, layer=0, heads="sum")
    assert summed.shape == full.shape[2:]
    assert np.all(summed <= full[0].sum(0) + 1e-5) and not np.allclose(summed, full[0].sum(0))
    # the weight-based mixing ratio is 1 - the head-mean diagonal
    diag = np.einsum("lhii->lih", res.attention).mean(-1)
    np.testing.assert_allclose(aw.studies.mixing_ratio(res, measure="weights"), 1 - diag, atol=1e-6)
    nr = aw.studies.norm_result(res)
    np.testing.assert_allclose(nr.attention, norm_share(full), atol=1e-6)
    assert nr.tokens == res.tokens


def test_lazy_result_by_blocks(tiny_llama, no_dense):
    text = "Blocks of rows, one at a time, for a long input."
    res = aw.run(text, model=tiny_llama)
    assert res.is_lazy
    got = aw.studies.norm_attention(res, layer=1, rows=(0, res.n_tokens))
    with pytest.raises(aw.AttentionTooLargeError, match="layer="):
        aw.studies.norm_attention(res)
    with pytest.raises(aw.AttentionTooLargeError, match="norm_attention"):
        aw.studies.norm_result(res)
    ratio = aw.studies.mixing_ratio(res)
    twin = res.rows(1, 0, res.n_tokens) * aw.studies.value_norms(res)[1][:, None, :]
    np.testing.assert_allclose(got, twin, rtol=1e-6)
    assert ratio.shape == (2, res.n_tokens) and np.all((ratio >= 0) & (ratio <= 1))


def test_bad_input(tiny_bert, tiny_bart):
    res = aw.run("A short one.", model=tiny_bert)
    with pytest.raises(ValueError, match="layer="):
        aw.studies.norm_attention(res, head=1)
    with pytest.raises(ValueError, match="layer must be"):
        aw.studies.norm_attention(res, layer=7)
    with pytest.raises(IndexError):
        aw.studies.norm_attention(res, layer=0, rows=(0, 99))
    with pytest.raises(ValueError, match="from_arrays"):
        aw.studies.norm_attention(aw.AttentionResult.from_arrays(res.attention, res.tokens))
    with pytest.raises(ValueError, match="ablated"):
        aw.studies.norm_attention(aw.run("A short one.", model=tiny_bert, ablation=aw.runner.Ablation.heads([(0, 1)])))
    with pytest.raises(TypeError):
        aw.studies.norm_attention(3)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="encoder-decoder"):
        aw.studies.norm_attention(aw.run("A short one.", model=tiny_bart))
    with pytest.raises(ValueError, match="measure"):
        aw.studies.mixing_ratio(res, measure="norm")  # type: ignore[arg-type]


def test_unsliceable_output_projection_is_refused():
    """A module whose output projection does not read H·D inputs (fused, or missing): a clear error naming the type."""
    model = torch.nn.Module()
    model.attn = torch.nn.Module()
    model.attn.o_proj = torch.nn.Linear(24, 16)  # 24 inputs, but 4 heads x 8 = 32
    with pytest.raises(NormInputsUnavailableError, match=r"'phi-fused'.*fused"):
        output_projection(model, model.attn, 4, 8, "phi-fused")
    model.attn.o_proj = torch.nn.Linear(32, 16)
    assert output_projection(model, model.attn, 4, 8).shape == (32, 16)
    assert issubclass(NormInputsUnavailableError, NotImplementedError)


# -- the views' "weights" / "norms" switch and the static twins -------------------------------------------------------


def test_views_switch_to_norms(tiny_bert):
    from attnwidgets.fallback import twin_figure

    res = aw.run("The cat sat on the mat.", model=tiny_bert)
    share = norm_share(aw.studies.norm_attention(res))
    heat = aw.AttentionHeatmap(res, layer=1, head=2)
    np.testing.assert_allclose(heat.matrix(), res.attention[1, 2])
    heat.measure = "norms"
    np.testing.assert_allclose(heat.matrix(), share[1, 2], atol=1e-6)
    assert heat._meta["measure"] == "norms" and heat._meta["can_norms"] and "norms" in heat._meta["title"]
    assert heat.result is res and heat._error == ""
    assert "norms" in twin_figure(heat).axes[0].get_title()
    heat.measure = "weights"
    np.testing.assert_allclose(heat.matrix(), res.attention[1, 2])

    mv = aw.ModelView(res, measure="norms")
    np.testing.assert_allclose(mv.matrix(layer=0, head=1), share[0, 1], atol=1e-6)
    weights_thumbs = aw.ModelView(res).thumbnails()[0]
    assert not np.array_equal(mv.thumbnails()[0], weights_thumbs)
    mv.measure = "weights"  # the switch in the page: back to the weights given, redrawn
    assert mv.result is res and mv._error == "" and mv._meta["measure"] == "weights"
    np.testing.assert_array_equal(mv.thumbnails()[0], weights_thumbs)
    with pytest.raises(traitlets_error(), match=r"measure must be one of \['weights', 'norms', 'value_zeroing'\]"):
        mv.measure = "norm"

    bars = aw.EntropyBars(res)
    before = bars.values("entropy")
    bars.measure = "norms"
    rows = share[0, 0]
    by_hand = float(np.mean(-np.sum(np.where(rows > 0, rows * np.log(rows), 0.0), -1)))
    assert bars.values("entropy")[0, 0] == pytest.approx(by_hand, abs=1e-5)
    assert not np.allclose(bars.values("entropy"), before)
    with pytest.raises(traitlets_error()):
        bars.measure = "norm"


def test_views_refuse_norms_they_cannot_compute(tiny_bert):
    res = aw.run("The cat sat.", model=tiny_bert)
    arrays = aw.AttentionResult.from_arrays(res.attention, res.tokens)
    heat = aw.AttentionHeatmap(arrays)
    assert heat._meta["can_norms"] is False
    heat.measure = "norms"
    assert heat.measure == "weights" and "aw.run" in heat._error
    np.testing.assert_allclose(heat.matrix(), res.attention[0, 0])
    bars = aw.EntropyBars(aw.studies.corpus_stats(["The cat sat."], model=tiny_bert, progress=False))
    bars.measure = "norms"
    assert bars.measure == "weights" and "corpus statistics" in bars._error
    with pytest.raises(ValueError, match=r"aw\.run"):
        aw.ModelView(arrays, measure="norms")
    mv = aw.ModelView(arrays)
    mv.measure = "norms"
    assert mv.measure == "weights" and "aw.run" in mv._error and mv._meta["measure"] == "weights"


def test_static_twins_take_measure(tiny_bert):
    res = aw.run("The cat sat.", model=tiny_bert)
    share = norm_share(aw.studies.norm_attention(res))
    fig = aw.plots.plot_heatmap(res, 1, 0, measure="norms", annotate=False)
    drawn = fig.axes[0].collections[0].get_array().reshape(share.shape[2:])
    np.testing.assert_allclose(np.asarray(drawn), share[1, 0], atol=1e-6)
    assert "norms" in fig.axes[0].get_title()
    assert "norms" in aw.plots.plot_model_view(res, measure="norms")._suptitle.get_text()
    assert "norms" in aw.plots.plot_entropy_by_layer(res, measure="norms").get_suptitle()
    fig2 = aw.plots.plot_token_attention(res, ("cls",), measure="norms")
    cls = np.asarray(fig2.axes[0].get_lines()[0].get_ydata())  # the layer means of the [CLS] share of the norm
    np.testing.assert_allclose(cls, share[..., 0].mean(-1).mean(-1), atol=1e-5)
    assert "‖αf(x)‖" in fig2.axes[0].get_ylabel()
    with pytest.raises(ValueError, match="measure"):
        aw.plots.plot_heatmap(res, measure="norm")


def traitlets_error():
    import traitlets

    return traitlets.TraitError


def test_batched_extra_passes_match_one_at_a_time(tiny_gpt2, tiny_bert):
    """norm_results runs the extra forward passes in padded batches: the same numbers as one input at a time."""
    from attnwidgets.runner.norms import norm_inputs, norm_inputs_batch

    for path in (tiny_gpt2, tiny_bert):
        runner = aw.runner.get_runner(path)
        texts = ["A short one.", "A rather longer sentence, with a comma and more words in it.", "Hi"]
        batched = norm_inputs_batch(runner, [t + " (batched)" for t in texts])
        for text, got in zip(texts, batched, strict=True):
            alone = norm_inputs(runner, text + " (batched)", truncation="error")  # another cache key: computed again
            for name in ("gram", "dot", "out_sq", "value_norms"):
                np.testing.assert_allclose(got[name], alone[name], rtol=1e-4, atol=1e-5)
        results = runner.run_batch(texts, progress=False)
        # each result gets its own input's norms
        for r, nr in zip(results, aw.studies.norm_results(results), strict=True):
            np.testing.assert_allclose(nr.attention, norm_share(r.attention * aw.studies.value_norms(r)[:, :, None]),
                                       atol=1e-6)
