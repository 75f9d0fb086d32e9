"""BERT's input taken apart (issue 24 §4): token + segment + position, summed, then LayerNorm, is what the model's own
embedding module computes, for BERT (two segment rows), a RoBERTa-like model (one row, positions after the padding
row) and DistilBERT (no segment table); other families are refused with a clear error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidgets.teaching.embeddings import embedding_module, input_embeddings

A, B = "The kettle clicked off.", "Mara poured the water over the leaves."


def _tokenizer(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def bert(tiny_bert):
    from transformers import BertModel

    model = BertModel.from_pretrained(tiny_bert).eval()
    with torch.no_grad():  # a random segment table is N(0, 0.02²): make row 1 plainly different from row 0
        model.embeddings.token_type_embeddings.weight[1] += 0.5
    return model, _tokenizer(tiny_bert)


def test_bert_parts_add_up_to_the_model_s_own_embedding_output(bert):
    model, tok = bert
    parts = input_embeddings(model, A, B, tokenizer=tok)
    enc = tok(A, B, return_tensors="pt")
    with torch.no_grad():
        own = model.embeddings(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"])[0].numpy()
    np.testing.assert_allclose(parts.normed, own, atol=1e-5)
    # each part is the row of its table, chosen by hand here
    ids = enc["input_ids"][0].numpy()
    emb = model.embeddings
    np.testing.assert_array_equal(parts.token, emb.word_embeddings.weight.detach().numpy()[ids])
    n_a = len(tok(A)["input_ids"])                    # [CLS] A [SEP]
    assert parts.segment_ids.tolist() == [0] * n_a + [1] * (len(ids) - n_a) == parts.part.tolist()
    table = emb.token_type_embeddings.weight.detach().numpy()
    np.testing.assert_array_equal(parts.segment[:n_a], np.broadcast_to(table[0], (n_a, table.shape[1])))
    np.testing.assert_array_equal(parts.segment[n_a:], np.broadcast_to(table[1], (len(ids) - n_a, table.shape[1])))
    np.testing.assert_array_equal(parts.position, emb.position_embeddings.weight.detach().numpy()[: len(ids)])
    np.testing.assert_allclose(parts.total, parts.token + parts.segment + parts.position, atol=1e-6)
    # LayerNorm by hand: centre, scale to unit variance, then the learned gain and bias
    x = parts.total.astype(np.float64)
    z = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + emb.LayerNorm.eps)
    by_hand = z * emb.LayerNorm.weight.detach().numpy() + emb.LayerNorm.bias.detach().numpy()
    np.testing.assert_allclose(parts.normed, by_hand, atol=1e-5)
    assert parts.tokens[0] == "[CLS]" and parts.tokens[n_a - 1] == parts.tokens[-1] == "[SEP]"
    assert parts.has_segments and parts.segment_rows == 2 and "one row per sentence" in parts.note


def test_through_a_runner_and_one_sentence(tiny_bert):
    from attnwidgets.runner import get_runner

    runner = get_runner(tiny_bert)
    parts = input_embeddings(runner, A)
    assert parts.model == runner.info.name and set(parts.part.tolist()) == {0} and set(parts.segment_ids) == {0}
    table = parts.norms()
    assert list(table.columns[:2]) == ["token", "sentence"] and (table["sentence"] == "A").all()
    np.testing.assert_allclose(table["‖position‖"], np.linalg.norm(parts.position, axis=-1))


def test_a_roberta_like_model_has_one_segment_row_and_positions_after_padding(tiny_bert):
    from transformers import RobertaConfig, RobertaModel

    tok = _tokenizer(tiny_bert)
    torch.manual_seed(0)
    cfg = RobertaConfig(num_hidden_layers=1, num_attention_heads=2, hidden_size=16, intermediate_size=32,
                        vocab_size=tok.vocab_size, max_position_embeddings=70, type_vocab_size=1, pad_token_id=1)
    model = RobertaModel(cfg).eval()
    parts = input_embeddings(model, A, B, tokenizer=tok)
    ids = torch.tensor([tok(A, B)["input_ids"]])
    with torch.no_grad():
        own = model.embeddings(input_ids=ids)[0].numpy()  # what RoBERTa does on its own: no segment ids given
    np.testing.assert_allclose(parts.normed, own, atol=1e-5)
    assert parts.position_ids[0] == 2 and parts.position_ids.tolist() == list(range(2, 2 + ids.shape[1]))
    assert parts.segment_rows == 1 and not parts.has_segments and set(parts.segment_ids) == {0}
    assert parts.part.max() == 1  # which sentence a piece is in is still known, and drawn
    assert np.ptp(parts.segment, axis=0).max() == 0  # the same vector on every piece
    assert "cannot tell A from B" in parts.note


def test_distilbert_has_no_segment_table(tiny_bert):
    from transformers import DistilBertConfig, DistilBertModel

    tok = _tokenizer(tiny_bert)
    torch.manual_seed(0)
    cfg = DistilBertConfig(n_layers=1, n_heads=2, dim=16, hidden_dim=32, vocab_size=tok.vocab_size,
                           max_position_embeddings=64)
    model = DistilBertModel(cfg).eval()
    parts = input_embeddings(model, A, B, tokenizer=tok)
    with torch.no_grad():
        own = model.embeddings(torch.tensor([tok(A, B)["input_ids"]]))[0].numpy()
    np.testing.assert_allclose(parts.normed, own, atol=1e-5)
    assert parts.segment_rows == 0 and not parts.segment.any() and "no segment embeddings" in parts.note
    np.testing.assert_allclose(parts.total, parts.token + parts.position, atol=1e-6)


def test_other_families_and_bad_input_are_refused_clearly(tiny_gpt2, bert, tiny_bert):
    from transformers import GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel.from_pretrained(tiny_gpt2)
    with pytest.raises(ValueError, match=r"reads BERT's embedding module .* this model \(gpt2\) has none"):
        embedding_module(gpt2)
    with pytest.raises(ValueError, match="Pass a BERT-like encoder"):
        input_embeddings(gpt2, A, tokenizer=_tokenizer(tiny_gpt2))
    model, tok = bert
    with pytest.raises(TypeError,
                       match=r"needs a runner \(aw.runner.get_runner\(MODEL\)\) or a model with its tokenizer"):
        input_embeddings(model, A)
    with pytest.raises(TypeError, match="one or two sentences as strings"):
        input_embeddings(model, A, 3, tokenizer=tok)
    with pytest.raises(ValueError, match=r"more than the model's position table holds \(64 rows\)"):
        input_embeddings(model, " ".join(["word"] * 80), tokenizer=tok)


@pytest.mark.parametrize("theme", ["light", "lecture"])
def test_the_figure_reads_in_both_themes(bert, theme):
    from attnwidgets.plots import plot_input_embeddings
    from tests.plots.test_notebook_figures import figure_problems

    model, tok = bert
    parts = input_embeddings(model, A, B, tokenizer=tok)
    fig = plot_input_embeddings(parts, dims=12, theme=theme)
    assert figure_problems(fig, theme) == []
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[:2] == ["token", "segment"] and titles[-1] == "norm per token"
    heat = fig.axes[0].images[0].get_array()
    assert heat.shape == (len(parts.tokens), 12)
    np.testing.assert_allclose(heat, parts.token[:, :12], atol=1e-6)
    # sentence B's labels are drawn in B's colour, A's in A's
    colours = [t.get_color() for t in fig.axes[0].get_yticklabels()]
    assert colours[0] == colours[1] != colours[-1]
    with pytest.raises(ValueError, match="dims must be a positive integer"):
        plot_input_embeddings(parts, dims=0, theme=theme)
