"""A tiny BERT pre-trained with MLM + NSP (teaching/pretrain.py): pairs, masking, training, the saved folder."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from attnwidgets.data import split_documents
from attnwidgets.teaching.objectives import bert_mask
from attnwidgets.teaching.pretrain import (
    NSPPair,
    compact_tokenizer,
    make_example,
    nsp_pairs,
    nsp_probabilities,
    pretrain_bert,
    sentences,
)

DOCS = [
    "The cat sat on the mat. The dog slept by the door. The bird sang in the tree.",
    "A man rode a red bike. A woman drove a blue car. A child ran to the park.",
    "We ate soup for lunch. We ate bread for dinner.",
    "It rained all day.",
    "The sun is hot. The moon is cold. The stars are far away.",
]


@pytest.fixture(scope="module")
def tok():
    return compact_tokenizer(DOCS)


@pytest.fixture(scope="module")
def run(tmp_path_factory, tok):
    return pretrain_bert(tmp_path_factory.mktemp("tiny-bert"), docs=DOCS, tokenizer=tok, steps=40, batch_size=8,
                         layers=1, heads=2, hidden=32, max_len=32, lr=3e-3, warmup=5, progress=False)


def test_nsp_pairs_are_half_is_next_and_built_as_bert_builds_them():
    docs = split_documents()["train"]
    split = [sentences(d) for d in docs]
    pairs = nsp_pairs(docs, np.random.default_rng(3))
    n_consecutive = sum(max(len(s) - 1, 0) for s in split)
    assert len(pairs) == n_consecutive - n_consecutive % 2
    assert sum(p.is_next for p in pairs) == len(pairs) // 2 == sum(not p.is_next for p in pairs)
    for p in pairs:
        assert p.a == split[p.doc_a][p.index]
        if p.is_next:
            assert p.doc_b == p.doc_a and p.b == split[p.doc_a][p.index + 1]
        else:
            assert p.doc_b != p.doc_a and p.b in split[p.doc_b]
    odd = nsp_pairs(DOCS, np.random.default_rng(0), n=7)
    assert sum(p.is_next for p in odd) == 3 and len(odd) == 7
    assert {p.label for p in odd} == {"IsNext", "NotNext"}


def test_nsp_pairs_differ_by_seed_and_repeat_with_it():
    a = nsp_pairs(DOCS, np.random.default_rng(1))
    assert a == nsp_pairs(DOCS, np.random.default_rng(1))
    assert any(a != nsp_pairs(DOCS, np.random.default_rng(s)) for s in range(2, 6))


def test_compact_vocabulary_splits_shipped_text_as_the_bundled_model_does():
    from transformers import BertTokenizer

    from attnwidgets.teaching.pretrain import _bundled_path

    full = BertTokenizer.from_pretrained(_bundled_path())
    small = compact_tokenizer(DOCS[:2])
    for doc in DOCS[:2]:
        assert small.tokenize(doc) == full.tokenize(doc)
    assert len(small) < 2500 < len(full)  # ~2,000 single characters + the pieces of two documents
    assert small.tokenize("🦜") == ["[UNK]"]


def test_example_is_cls_a_sep_b_sep_masked_by_bert_mask(tok):
    pair = NSPPair("The cat sat on the mat.", "A child ran to the park.", False, 0, 1, 0)
    ex = make_example(pair, tok, np.random.default_rng(5))
    a, b = tok.tokenize(pair.a), tok.tokenize(pair.b)
    assert ex.tokens == ["[CLS]", *a, "[SEP]", *b, "[SEP]"]
    assert ex.segments.tolist() == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    special = np.isin(ex.ids, tok.all_special_ids)
    expected = bert_mask(ex.ids, special, np.random.default_rng(5), mask_id=tok.mask_token_id, vocab_size=len(tok))
    assert ex.masked.positions.tolist() == expected.positions.tolist()
    assert ex.masked.ids.tolist() == expected.ids.tolist() and ex.masked.actions == expected.actions
    assert not special[ex.masked.positions].any()
    assert len(ex.masked.positions) == round(0.15 * (len(a) + len(b)))
    for pos, orig, shown, action, _ in ex.table():
        assert orig == ex.tokens[pos]
        assert (shown == "[MASK]") == (action == "[MASK]")
        if action == "unchanged":
            assert shown == orig


def test_examples_over_many_pairs_follow_80_10_10_and_never_mask_specials(tok):
    rng = np.random.default_rng(0)
    actions = []
    for p in nsp_pairs(DOCS, rng, n=400):
        ex = make_example(p, tok, rng)
        assert all(ex.tokens[i] not in ("[CLS]", "[SEP]") for i in ex.masked.positions)
        actions += ex.masked.actions
    share = actions.count("[MASK]") / len(actions)
    assert 0.75 < share < 0.85, share


def test_long_pairs_are_cut_to_max_len(tok):
    pair = NSPPair(" ".join(["cat"] * 40), "dog sat.", True, 0, 0, 0)
    ex = make_example(pair, tok, np.random.default_rng(0), max_len=16)
    assert len(ex.ids) == 16 and ex.tokens[-3:] == ["sat", ".", "[SEP]"]


def test_a_few_steps_lower_both_losses_and_the_seed_repeats(run, tok):
    assert run.mlm_loss[:5].mean() > run.mlm_loss[-5:].mean() + 0.5
    assert run.mlm_loss[0] == pytest.approx(np.log(len(tok)), abs=1.0)  # random weights: about uniform
    assert np.isfinite(run.nsp_loss).all()
    again = pretrain_bert(docs=DOCS, tokenizer=tok, steps=3, batch_size=8, layers=1, heads=2, hidden=32, max_len=32,
                          lr=3e-3, warmup=5, progress=False)
    np.testing.assert_allclose(again.mlm_loss, run.mlm_loss[:3], rtol=1e-5)


def test_callback_gets_mean_losses_every_n_steps_and_threads_are_put_back(tok):
    import torch

    before = torch.get_num_threads()
    seen = []
    r = pretrain_bert(docs=DOCS, tokenizer=tok, steps=5, batch_size=4, layers=1, heads=2, hidden=32, max_len=32,
                      every=2, callback=lambda s, m, n: seen.append((s, m, n)), progress=False)
    assert [s for s, _, _ in seen] == [2, 4, 5]
    assert seen[0][1] == pytest.approx(r.mlm_loss[:2].mean())
    assert seen[2][2] == pytest.approx(r.nsp_loss[4])
    assert torch.get_num_threads() == before


def test_saved_folder_runs_in_the_runner_with_attention_of_the_right_shape(run, tok):
    import attnwidgets as aw

    assert (run.folder / "config.json").exists()
    result = aw.run("The cat sat on the mat.", model=str(run.folder))
    n = len(tok.tokenize("The cat sat on the mat.")) + 2
    assert result.attention.shape == (1, 2, n, n)
    assert result.tokens[0] == "[CLS]" and result.tokens[-1] == "[SEP]"
    np.testing.assert_allclose(result.attention.sum(-1), 1.0, atol=1e-5)


def test_the_saved_folder_fills_in_and_reads_sentence_order(run, tok):
    import attnwidgets as aw

    top = aw.studies.fill_mask("The cat sat on the [MASK].", k=3, model=str(run.folder))
    assert len(top) == 3 and top["probability"].is_monotonic_decreasing and top["probability"].sum() <= 1 + 1e-6
    acc = aw.studies.fill_mask_accuracy(str(run.folder), DOCS[:2])
    assert acc.n == 36  # the two documents' 36 words are all one piece, each masked once
    pairs = nsp_pairs(DOCS, np.random.default_rng(0))
    p = nsp_probabilities(run, pairs)
    assert p.shape == (len(pairs),) and ((p >= 0) & (p <= 1)).all()
    by_hand = run.model(**tok(pairs[0].a, pairs[0].b, return_tensors="pt")).seq_relationship_logits.softmax(-1)
    assert p[0] == pytest.approx(float(by_hand[0, 0]), abs=1e-5)  # column 0 is IsNext in transformers' BERT
    with pytest.raises(ValueError, match="pairs is empty"):
        nsp_probabilities(run, [])


@pytest.mark.parametrize(
    ("docs", "kwargs", "match"),
    [
        ([], {}, "docs is empty"),
        (["One sentence.", "Another one."], {}, "no document has two sentences"),
        (["Only one document. With two sentences."], {}, "second document"),
        (DOCS, {"steps": 0}, "steps must be a positive integer"),
        (DOCS, {"steps": -3}, "steps must be a positive integer"),
        (DOCS, {"hidden": 30, "heads": 4}, "multiple of heads"),
    ],
)
def test_bad_input_gets_a_clear_error(docs, kwargs, match, tok):
    with pytest.raises(ValueError, match=match):
        pretrain_bert(docs=docs, tokenizer=tok, progress=False, **kwargs)


def test_nsp_pairs_rejects_one_string_and_bad_n():
    with pytest.raises(TypeError, match="not one string"):
        nsp_pairs("The cat sat. It slept.", np.random.default_rng(0))
    with pytest.raises(ValueError, match="positive integer"):
        nsp_pairs(DOCS, np.random.default_rng(0), n=0)


def test_live_curve_draws_the_numbers_it_is_given():
    from attnwidgets.plots import LivePretrainCurve, plot_pretrain_curve

    live = LivePretrainCurve(total=50, vocab_size=1000, display=False)
    live.update(10, 6.5, 0.7)
    live.update(20, 5.0, 0.6)
    fig = live.figure()
    left, right = fig.axes
    assert left.lines[0].get_ydata().tolist() == [6.5, 5.0]
    assert right.lines[0].get_ydata().tolist() == [0.7, 0.6]
    assert left.lines[1].get_ydata()[0] == pytest.approx(np.log(1000))  # the guessing line
    assert left.get_xlim() == (0, 50)
    with pytest.raises(ValueError, match="one entry per point"):
        plot_pretrain_curve([1, 2], [3.0], [0.5, 0.4])
    with pytest.raises(ValueError, match="diverged"):
        plot_pretrain_curve([1], [float("nan")], [0.5])


def test_nsp_and_mlm_loss_on_a_model_without_the_head_say_what_it_has_and_what_to_load(tiny_bert, tiny_bert_mlm):
    # These used to be raw AttributeErrors ('BertModel' object has no attribute 'seq_relationship_logits' / 'cls').
    import transformers

    from attnwidgets.teaching.pretrain import NoPretrainingHeadError, masked_lm_loss

    tok = transformers.AutoTokenizer.from_pretrained(tiny_bert)
    pairs = nsp_pairs(DOCS, np.random.default_rng(0))
    encoder = transformers.BertModel.from_pretrained(tiny_bert)
    with pytest.raises(NoPretrainingHeadError, match=r"BertModel has no next-sentence \(NSP\) head: it has no "
                       r"pre-training head \(the encoder only\).*BertForPreTraining.from_pretrained"):
        nsp_probabilities(encoder, pairs, tokenizer=tok)
    with pytest.raises(NoPretrainingHeadError, match="BertModel has no masked-LM head"):
        masked_lm_loss(encoder, pairs, tokenizer=tok)
    mlm = transformers.BertForMaskedLM.from_pretrained(tiny_bert_mlm)
    with pytest.raises(NoPretrainingHeadError, match=r"BertForMaskedLM has no next-sentence .*it has the masked-LM "
                       "head only"):
        nsp_probabilities(mlm, pairs, tokenizer=tok)
    assert masked_lm_loss(mlm, pairs[:2], tokenizer=tok) > 0       # the masked-LM head is all this measure needs
    with pytest.raises(NoPretrainingHeadError, match="takes the torch model, got str"):
        nsp_probabilities(tiny_bert, pairs, tokenizer=tok)
    assert issubclass(NoPretrainingHeadError, ValueError)
