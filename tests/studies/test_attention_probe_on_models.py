"""The tests of tests/analysis/test_attention_probe.py that need a model: the probe study and a probe sentence read
from a run."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.analysis import ParseError, read_conllu
from attnwidgets.analysis.attention_probe import (
    AttentionProbe,
    probe_sentence,
    split_sentences,
)
from attnwidgets.analysis.dependency import piece_word_matrix
from attnwidgets.data import ud_sample_path
from tests.analysis.test_attention_probe import ONE


def test_study_refuses_a_file_without_trees_and_a_single_sentence(tmp_path):
    from attnwidgets.studies import attention_probe

    empty = tmp_path / "empty.conllu"
    empty.write_text("# just a comment\n\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"empty\.conllu.*no sentences with dependency trees"):
        attention_probe(empty)
    flat = tmp_path / "flat.conllu"
    flat.write_text(ONE.replace("\t2\tnsubj", "\t_\tnsubj").replace("\t2\tpunct", "\t_\tpunct"), encoding="utf-8")
    with pytest.raises(ParseError, match=r"flat\.conllu.*no sentence has a dependency tree"):
        attention_probe(flat)
    one = tmp_path / "one.conllu"
    one.write_text(ONE, encoding="utf-8")
    with pytest.raises(ValueError, match="at least 2 sentences"):
        attention_probe(one)


def test_probe_sentence_reads_word_level_attention_from_a_result():
    import attnwidgets as aw

    sentence = read_conllu(ud_sample_path())[0]
    result = aw.run(sentence.text)
    table = np.arange(result.token_ids.max() + 1, dtype=np.float64)[:, None] * np.ones((1, 2))
    s = probe_sentence(result, sentence, vectors=table[result.token_ids])
    m = len(sentence.words)
    assert s.attention.shape == (result.n_layers, result.n_heads, m, m)
    # each word's row, over the words and the special tokens, still sums to 1
    np.testing.assert_allclose(s.attention.sum(-1) + s.special, 1.0, atol=1e-5)
    assert s.heads.tolist() == sentence.heads.tolist()
    assert s.punct.tolist() == [u == "PUNCT" for u in sentence.upos]
    # a word's vector is the mean of its pieces' rows: here the mean of its pieces' token ids
    c = piece_word_matrix(sentence, result.tokens, result.special_mask)
    want = (c * result.token_ids[:, None]).sum(0) / c.sum(0)
    assert s.vectors is not None
    np.testing.assert_allclose(s.vectors[:, 0], want)


def test_study_on_the_shipped_treebank():
    from attnwidgets.studies import attention_probe

    sentences = read_conllu(ud_sample_path())
    r = attention_probe(ud_sample_path(), max_iter=60)
    train, test = split_sentences(len(sentences), 0.25, seed=0)
    assert (r.n_train_sentences, r.n_test_sentences) == (len(train), len(test))
    # the baselines, counted here from the gold heads alone
    right = total = left = 0
    for i in test:
        s = sentences[i]
        for j, h in enumerate(s.heads):
            if s.upos[j] == "PUNCT":
                continue
            total += 1
            right += int(h == (j + 1 if j + 1 < len(s.words) else -1))
            left += int(h == j - 1)
    assert r.n_test == total
    assert r.right_branching == pytest.approx(right / total)
    assert r.left_branching == pytest.approx(left / total)
    assert r.weights.shape == (2, 6, 12)
    assert 0 <= r.uas <= 1 and r.uas > r.right_branching  # attention parses better than the next word
    frame = r.frame()
    assert frame["uas"].tolist()[0] == r.uas and frame["uas"].tolist()[2] == r.right_branching
    assert frame["uas"].tolist()[4] == r.best_head_uas and frame["head"].tolist()[4] == \
        f"{r.best_head[0] + 1}-{r.best_head[1] + 1}"
    assert r.weight_frame().iloc[0]["weight"] == r.weights.max()
    assert "held-out UAS" in repr(r)
    # the same call again is the same split and the same probe
    again = attention_probe(ud_sample_path(), max_iter=60)
    assert again.uas == r.uas and np.array_equal(again.weights, r.weights)
    words = attention_probe(ud_sample_path(), words=True, max_iter=30)
    assert words.words and words.settings["word_vectors"] == "model input embeddings"
    assert isinstance(words.probe, AttentionProbe) and 0 <= words.uas <= 1


def conllu_blocks(path) -> list[str]:
    """The sentences of a CoNLL-U file as its own text, one block each (a block of comments alone is no sentence)."""
    blocks = path.read_text(encoding="utf-8").strip().split("\n\n")
    return [b + "\n" for b in blocks if any(not line.startswith("#") for line in b.splitlines())]


def test_study_trains_on_one_file_and_scores_on_another(tmp_path):
    """A treebank's own split (issue 33 §6): train on one file, score on another; the comparison rows on the test
    file's words: right-branching counted here from the gold heads, the best single head chosen on the training file
    and re-counted here with Clark et al.'s per-head scoring (score_dependencies, both directions per relation: its
    dependent->head count summed over the relations is the head's parse of every word but the root)."""
    from attnwidgets.analysis import score_dependencies
    from attnwidgets.runner import get_runner
    from attnwidgets.studies import attention_probe

    blocks = conllu_blocks(ud_sample_path())
    (tmp_path / "train.conllu").write_text("\n".join(blocks[:30]), encoding="utf-8")
    test_sentences = read_conllu("\n".join(blocks[30:]))
    r = attention_probe(train=tmp_path / "train.conllu", test=test_sentences, max_iter=40, punct=True)
    assert (r.n_train_sentences, r.n_test_sentences) == (30, len(blocks) - 30)
    assert r.settings["train"] == str(tmp_path / "train.conllu") and "seed" not in r.settings
    right = total = 0
    for s in test_sentences:
        m = len(s.words)
        total += m
        right += sum(int(h == (j + 1 if j + 1 < m else -1)) for j, h in enumerate(s.heads))
    assert r.n_test == total and r.right_branching == pytest.approx(right / total)
    runner = get_runner(None)
    train_sentences = read_conllu(tmp_path / "train.conllu")
    per_head = {}
    for name, sentences in (("train", train_sentences), ("test", test_sentences)):
        results = runner.run_batch([s.text for s in sentences], progress=False)
        scores = score_dependencies(results, sentences, progress=False)
        per_head[name] = scores.correct[0].sum(-1)  # (L, H) dependent->head right, every relation but root
    n_train = sum(len(s.words) for s in train_sentences)
    best = np.unravel_index(per_head["train"].argmax(), per_head["train"].shape)
    assert r.best_head == (int(best[0]), int(best[1]))
    assert r.best_head_train_uas == pytest.approx(per_head["train"][best] / n_train)
    assert r.best_head_uas == pytest.approx(per_head["test"][best] / total)
    assert 0 < r.best_head_uas < 1 and "best single head" in repr(r)


def test_study_refuses_mismatched_sets(tmp_path):
    from attnwidgets.studies import attention_probe

    path = ud_sample_path()
    with pytest.raises(ValueError, match="both train= and test="):
        attention_probe(train=path)
    with pytest.raises(ValueError, match="either one source"):
        attention_probe(path, train=path, test=ONE)
    with pytest.raises(ValueError, match="nothing to split"):
        attention_probe(train=path, test=ONE, test_share=0.5)
    with pytest.raises(ValueError, match="same file"):
        attention_probe(train=path, test=str(path))
    with pytest.raises(ValueError, match="no sentences: give a treebank"):
        attention_probe()
    with pytest.raises(ValueError, match="text must be"):
        attention_probe(path, text="tokens")
    empty = tmp_path / "empty.conllu"
    empty.write_text("# nothing\n\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"empty\.conllu.*no sentences with dependency trees in the test set"):
        attention_probe(train=path, test=empty)
    with pytest.raises(ParseError, match="no sentences with dependency trees in the training set"):
        attention_probe(train=[], test=path)
