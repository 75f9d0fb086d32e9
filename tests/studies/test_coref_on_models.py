"""The tests of tests/analysis/test_coref.py that need a model (or the studies layer): the coreference study end to end
on a tiny BERT and the bundled model, and the study's check of its options."""

from __future__ import annotations

import numpy as np
import pytest

import attnwidgets as aw
from attnwidgets.analysis.coref import coref_segments, read_coref, score_coref
from attnwidgets.analysis.dependency import piece_word_matrix
from attnwidgets.data import coref_sample_path
from tests.analysis.test_coref import ANN_DOG, word_result


def dense_check(scores, segments, model) -> None:
    """Recompute every scored mention's choice from each segment's dense attention, independently."""
    runner = aw.runner.get_runner(model)
    k = 0
    for seg in segments:
        r = runner.run(seg.text)
        c = piece_word_matrix(seg.sentence, r.tokens, r.special_mask)
        w = (c / np.maximum(c.sum(0), 1)).T @ r.attention @ c  # (L, H, m, m)
        for i, m in enumerate(seg.mentions):
            ante = {a.head for a in seg.mentions[:i] if a.entity == m.entity and a.head != m.head}
            if not ante:
                continue
            row = w[:, :, m.head].copy()
            row[..., m.head] = -np.inf
            row[..., c.sum(0) == 0] = -np.inf
            assert (np.isin(row.argmax(-1), list(ante)) == scores.correct[..., k]).all()
            k += 1
    assert k == scores.n_mentions


def test_study_on_tiny_bert(tiny_bert):
    scores = aw.studies.coref_scores(coref_sample_path(), tiny_bert, progress=False, max_tokens=24)
    runner = aw.runner.get_runner(tiny_bert)

    def count(text: str) -> int:
        return len(runner.tokenizer(text, add_special_tokens=False)["input_ids"])

    segs = coref_segments(read_coref(coref_sample_path()), count, 24)
    assert scores.n_segments == len(segs) > 6  # 24 pieces split the documents
    assert scores.correct.shape[:2] == (runner.model.config.num_hidden_layers, runner.model.config.num_attention_heads)
    dense_check(scores, segs, tiny_bert)
    table = scores.table()
    assert len(table) == scores.correct.shape[0] * scores.correct.shape[1]
    assert table["accuracy"].between(0, 1).all()


def test_study_on_the_bundled_model():
    scores = aw.studies.coref_scores(coref_sample_path(), progress=False)
    segs = coref_segments(read_coref(coref_sample_path()), max_tokens=10_000)
    assert scores.n_segments == 6 and scores.n_documents == 6  # each document fits in 128 pieces
    dense_check(scores, segs, None)
    base = scores.baseline_accuracy()
    assert base["nearest"] < base["same_head"] <= base["rules"]
    best = scores.best_heads(3)
    assert best["accuracy"].is_monotonic_decreasing and best["accuracy"].iloc[0] > base["nearest"]
    assert f"{scores.n_mentions} mentions" in repr(scores)
    assert f"{scores.n_mentions} coreferent mentions · baselines: nearest" in scores.caption()


def test_mention_order_is_a_choice():
    seg = coref_segments(read_coref(ANN_DOG), singletons=True)[0]  # "Ann 's dog" is a candidate though mentioned once
    # words: Ann 0 's 1 dog 2 barked 3 . 4 She 5 smiled 6 . 7; scored: She (antecedent Ann, head word 0)
    inner = score_coref([word_result(seg, {5: 2})], [seg])  # (start, end): Ann, then Ann 's dog, then She
    outer = score_coref([word_result(seg, {5: 2})], [seg], order="outer_first")  # (start, -end): Ann 's dog first
    assert [m["mention"] for m in inner.mentions] == [m["mention"] for m in outer.mentions] == ["She"]
    # the nearest mention before She: "Ann 's dog" (head dog, wrong) in (start, end) order, "Ann" (right) otherwise
    assert inner.baselines["nearest"].tolist() == [False] and outer.baselines["nearest"].tolist() == [True]
    # no earlier head word is "she": the same-head baseline falls back to the nearest mention, or counts it wrong
    assert inner.baselines["same_head"].tolist() == [False] and outer.baselines["same_head"].tolist() == [True]
    strict = score_coref([word_result(seg, {5: 2})], [seg], order="outer_first", no_same_head="wrong")
    assert strict.baselines["same_head"].tolist() == [False] and strict.baselines["nearest"].tolist() == [True]
    # sieve 3: Ann (fem, sing) and dog (sing, gender unknown) both agree with She; the nearest in each order wins
    assert inner.baselines["rules"].tolist() == [False] and outer.baselines["rules"].tolist() == [True]
    assert inner.correct[0, 0].tolist() == outer.correct[0, 0].tolist() == [False]  # the head chose "dog"
    assert (inner.order, outer.order, strict.no_same_head) == ("inner_first", "outer_first", "wrong")
    with pytest.raises(ValueError, match="order must be 'inner_first'"):
        score_coref([word_result(seg)], [seg], order="start")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no_same_head must be"):
        aw.studies.coref_scores(ANN_DOG, model="no-such-model", no_same_head="skip")  # type: ignore[arg-type]


def test_study_reads_the_words_when_asked(tiny_bert):
    """text="words": the model reads "did n't", from a file's text or from documents already read, and each mention's
    choice is the one the dense attention of that reading gives; a bad choice is refused before a model loads."""
    from tests.analysis.test_coref import CONTRACTED

    words = read_coref(CONTRACTED, text="words")
    from_text = aw.studies.coref_scores(CONTRACTED, tiny_bert, progress=False, text="words")
    from_docs = aw.studies.coref_scores(read_coref(CONTRACTED), tiny_bert, progress=False, text="words")
    assert from_text.n_mentions == from_docs.n_mentions == 2
    assert np.array_equal(from_text.correct, from_docs.correct)
    dense_check(from_text, coref_segments(words), tiny_bert)
    surface = aw.studies.coref_scores(CONTRACTED, tiny_bert, progress=False)
    dense_check(surface, coref_segments(read_coref(CONTRACTED)), tiny_bert)
    with pytest.raises(ValueError, match="text must be"):
        aw.studies.coref_scores(CONTRACTED, "no/such/model", text="tokens")
