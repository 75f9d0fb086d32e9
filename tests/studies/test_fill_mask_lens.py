"""The logit lens at a [MASK] (``fill_mask_lens``), FillMask's lens panel state, the GenerationView's, and their
static twins: rows against an explicit torch computation (hidden_states[l] → the masked-LM head → softmax), the last
row against the fill-in itself, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnwidgets as aw
from attnwidgets.studies.masked_lm import NoMaskedLMHeadError, fill_mask, fill_mask_lens, load_head
from attnwidgets.viewdata.lens import lens_table
from attnwidgets.viewdata.state import to_wire

TEXT = "The [MASK] sat on the mat."


def _check_rows(lens: dict, want: torch.Tensor, k: int) -> None:
    """``want``: (layers + 1, V) probabilities of the one [MASK], computed by hand."""
    assert lens["probs"].shape == (1, want.shape[0], k)
    for row in range(want.shape[0]):
        np.testing.assert_allclose(lens["probs"][0, row], want[row].topk(k).values.numpy(), atol=1e-5)
        np.testing.assert_allclose(want[row][torch.tensor(lens["ids"][0, row])].numpy(), lens["probs"][0, row],
                                   atol=1e-5)


def test_mlm_lens_rows_equal_hidden_states_through_the_mlm_head(tiny_bert_mlm) -> None:
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model = AutoModelForMaskedLM.from_pretrained(tiny_bert_mlm, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(tiny_bert_mlm)
    enc = tok(TEXT, return_tensors="pt")
    pos = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
        want = torch.softmax(torch.stack([model.cls(h[0, pos]) for h in out.hidden_states]).double(), -1)
    assert torch.allclose(model.cls(out.hidden_states[-1][0, pos]), out.logits[0, pos], atol=1e-5)
    lens = fill_mask_lens(TEXT, k=4, model=tiny_bert_mlm)
    _check_rows(lens, want, 4)
    assert lens["rows"] == ["embeddings", "layer 1", "layer 2"]
    assert "own masked-LM head" in lens["reader"]
    table = fill_mask(TEXT, k=4, model=tiny_bert_mlm)                 # the last row is the fill-in itself
    np.testing.assert_allclose(lens["probs"][0, -1], table["probability"].to_numpy(), atol=1e-6)
    assert lens["tokens"][0][-1] == list(table["token"])


def test_bundled_lens_reads_every_layer_through_the_shipped_head(bundled) -> None:
    runner = aw.runner.get_runner(None)
    head = load_head(runner)
    enc = runner.tokenizer(TEXT, return_tensors="pt")
    pos = int((enc["input_ids"][0] == runner.tokenizer.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        out = runner.model(**enc, output_hidden_states=True)
        want = torch.softmax(torch.stack([head(h[0, pos].float()) for h in out.hidden_states]).double(), -1)
    lens = fill_mask_lens(TEXT, k=3)
    _check_rows(lens, want, 3)
    assert lens["probs"].shape[1] == runner.info.n_layers + 1
    assert f"layer-{head.layer}" in lens["reader"]
    np.testing.assert_allclose(lens["probs"][0, -1], fill_mask(TEXT, k=3)["probability"].to_numpy(), atol=1e-6)


def test_lens_bad_input_is_a_clear_error(tiny_bert) -> None:
    with pytest.raises(ValueError, match="k must be a positive whole number"):
        fill_mask_lens(TEXT, k=0)
    with pytest.raises(NoMaskedLMHeadError, match="has no masked-LM head"):
        fill_mask_lens(TEXT, k=3, model=tiny_bert)
    with pytest.raises(ValueError, match=r"no \[MASK\]"):
        fill_mask_lens("No mask here.", k=3)


def test_fill_mask_widget_lens_panel_state_and_twin(bundled) -> None:
    w = aw.FillMask(TEXT, k=3, layer=2)
    assert w.lens is False
    lens = to_wire(_state(w))["lens"]
    assert lens["rows"][0] == "embeddings" and lens["probs"]["shape"] == [1, 7, 3]
    assert "known bias" in lens["caption"] and "tuned lens" in lens["caption"]
    assert [t for t, _ in w.lens_rows()[-1]] == w.fills()[0]["tokens"]
    w.lens = True
    fig = aw.plots.plot_fill_mask_lens(w, layer=2)
    ax = fig.axes[0]
    outline = [p for p in ax.patches if not p.get_fill()]
    assert len(outline) == 1 and outline[0].get_y() == pytest.approx(3 - 0.5)  # layer 2's row is row 3
    texts = [t.get_text().split("\n")[0] for t in ax.texts]
    assert texts[-3:] == [aw.viewdata.labels.token_label(t) for t in w.fills()[0]["tokens"]]
    with pytest.raises(ValueError, match="layer 6 is out of range"):
        aw.plots.plot_fill_mask_lens(w, layer=6)
    with pytest.raises(TypeError, match="plot_fill_mask_lens takes"):
        aw.plots.plot_fill_mask_lens("x")


def _state(w):
    from attnwidgets.viewdata.views.fill_mask import fill_mask_state

    return fill_mask_state(w.view, w.text).payload


def test_lens_table_checks_its_shapes() -> None:
    with pytest.raises(ValueError, match=r"\(tables, rows, k\)"):
        lens_table([["a"]], np.ones((1, 1)), "x")
    with pytest.raises(ValueError, match="must be 1 x 2 rows of 1"):
        lens_table([[["a"]]], np.ones((1, 2, 1)), "x")
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        lens_table([[["a"]]], np.full((1, 1, 1), 2.0), "x")


def test_generation_view_lens_trait_state_and_twin(tiny_gpt2) -> None:
    import traitlets

    g = aw.generate("The cat sat on the mat because", tiny_gpt2, max_new_tokens=3, min_new_tokens=3, lens_k=2)
    w = aw.GenerationView(g, step=1, lens=True)
    lens = w._payload["lens"]
    assert lens["probs"]["shape"] == [3, 3, 2] and lens["tokens"] == g.lens_tokens
    assert w.step_lens() == g.step_lens(1)
    fig = aw.plots.plot_generation_lens(g, step=2)
    texts = [t.get_text().split("\n")[0] for t in fig.axes[0].texts]
    assert texts[-2:] == [aw.viewdata.labels.token_label(t) for t in g.lens_tokens[2][-1]]
    plain = aw.generate("The cat sat on the mat because", tiny_gpt2, max_new_tokens=2)
    assert "lens" not in aw.GenerationView(plain)._payload
    with pytest.raises(traitlets.TraitError, match="lens_k"):
        aw.GenerationView(plain, lens=True)
    with pytest.raises(ValueError, match="kept no logit lens"):
        aw.plots.plot_generation_lens(plain)
    with pytest.raises(ValueError, match="step 3 is out of range"):
        aw.plots.plot_generation_lens(g, step=3)
