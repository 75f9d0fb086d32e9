"""Treebank details the dependency scores must honour: multiword tokens, the sentence's own text, relation subtypes
for every kind of input, ties between best heads, and a repr that summarises."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.analysis import read_conllu, score_dependencies
from attnwidgets.analysis.dependency import DependencyScores, piece_word_matrix
from attnwidgets.result import AttentionResult

MWT = """# sent_id = own-text
# text = He didn't go.
1\tHe\the\tPRON\t_\t_\t4\tnsubj\t_\t_
2-3\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\t_\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\t_\t_\t4\tadvmod\t_\t_
4\tgo\tgo\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
5\t.\t.\tPUNCT\t_\t_\t4\tpunct\t_\t_

# sent_id = built-text
1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2-3\tcompany's\t_\t_\t_\t_\t_\t_\t_\t_
2\tcompany\tcompany\tNOUN\t_\t_\t4\tnmod:poss\t_\t_
3\t's\t's\tPART\t_\t_\t2\tcase\t_\t_
4\tplan\tplan\tNOUN\t_\t_\t6\tnsubj:pass\t_\t_
5\twas\tbe\tAUX\t_\t_\t6\taux:pass\t_\t_
6\tdropped\tdrop\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
7\t.\t.\tPUNCT\t_\t_\t6\tpunct\t_\t_

# sent_id = range-without-space
1-2\tgonna\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
1\tgon\tgo\tVERB\t_\t_\t0\troot\t_\t_
2\tna\tto\tPART\t_\t_\t1\tmark\t_\t_
3\t!\t!\tPUNCT\t_\t_\t1\tpunct\t_\t_
"""


def test_the_model_reads_the_sentences_own_text_not_the_words():
    own, built, nospace = read_conllu(MWT)
    assert own.words == ["He", "do", "n't", "go", "."]
    assert own.text == "He didn't go."  # the "# text" line: not "He do n't go."
    assert built.text == "The company's plan was dropped."  # the range's form: not "company 's"
    assert nospace.text == "gonna!"  # SpaceAfter=No on the range line
    assert own.surface == [("He", (0,)), ("didn't", (1, 2)), ("go", (3,)), (".", (4,))]


def test_a_multiword_tokens_words_share_its_pieces():
    own, built, _ = read_conllu(MWT)
    pieces = ["[CLS]", "he", "didn", "'", "t", "go", ".", "[SEP]"]
    special = np.array([p.startswith("[") for p in pieces])
    c = piece_word_matrix(own, pieces, special)
    assert c.astype(int).tolist() == [[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 1, 1, 0, 0], [0, 1, 1, 0, 0],
                                      [0, 1, 1, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]]
    # words that spell their token ("company" + "'s") are still split by characters
    pieces = ["[CLS]", "the", "company", "'", "s", "plan", "was", "dropped", ".", "[SEP]"]
    c = piece_word_matrix(built, pieces, np.array([p.startswith("[") for p in pieces]))
    assert c.argmax(1)[1:9].tolist() == [0, 1, 2, 2, 3, 4, 5, 6] and c.sum(1).tolist() == [0] + [1] * 8 + [0]
    # a token that spells its words but is one piece: both words share it rather than one losing every piece
    c = piece_word_matrix(read_conllu(MWT)[2], ["[CLS]", "gonna", "!", "[SEP]"], np.array([1, 0, 0, 1], bool))
    assert c.astype(int).tolist() == [[0, 0, 0], [1, 1, 0], [0, 0, 1], [0, 0, 0]]


def test_every_word_of_a_multiword_treebank_is_scored_through_a_model(tiny_bert):
    from attnwidgets.studies import dependency_scores

    sents = read_conllu(MWT)
    scores = dependency_scores(sents, model=tiny_bert, progress=False)
    assert scores.counts.sum() == sum(len(s.words) - 1 for s in sents)  # no word lost to a misalignment


def test_subtypes_false_pools_relations_for_a_list_of_sentences_too(tiny_bert):
    from attnwidgets.studies import dependency_scores

    sents = read_conllu(MWT)  # read with subtypes
    pooled = dependency_scores(sents, model=tiny_bert, progress=False, subtypes=False)
    assert not [r for r in pooled.relations if ":" in r]
    assert {"nmod", "aux", "nsubj"} <= set(pooled.relations)
    kept = dependency_scores(sents, model=tiny_bert, progress=False)
    assert {"nmod:poss", "aux:pass", "nsubj:pass"} <= set(kept.relations)
    assert pooled.counts.sum() == kept.counts.sum()


def test_score_dependencies_takes_subtypes():
    (s,) = read_conllu(MWT.split("\n\n")[1])
    tokens = ["[CLS]", "the", "company", "'", "s", "plan", "was", "dropped", ".", "[SEP]"]
    n = len(tokens)
    result = AttentionResult.from_arrays(np.full((1, 1, n, n), 1 / n, np.float32), tokens)
    scores = score_dependencies([result], [s], subtypes=False)
    assert scores.relations == ["aux", "case", "det", "nmod", "nsubj", "punct"]


def _scores(correct: np.ndarray, counts=(4,)) -> DependencyScores:
    r = len(counts)
    return DependencyScores([f"rel{i}" for i in range(r)], np.array(counts), correct, np.zeros((6, r)), 1, "toy")


def test_ties_between_best_heads_are_reported():
    correct = np.zeros((2, 2, 3, 1))
    correct[0, 0, 1, 0] = correct[1, 1, 2, 0] = 3  # two heads, in different directions, get 3 of 4 right
    correct[0, 1, 0, 0] = 2
    row = _scores(correct).table().iloc[0]
    assert (row["layer"], row["head"], row["direction"]) == (0, 1, "dependent->head")
    assert row["tied"] == [(0, 1, "dependent->head"), (1, 2, "head->dependent")]
    correct[1, 1, 2, 0] = 1
    table = _scores(correct).table()
    assert table.iloc[0]["tied"] == [(0, 1, "dependent->head")]
    assert table.iloc[-1]["relation"] == "all" and table.iloc[-1]["tied"] == [(0, 1, "dependent->head")]


def test_repr_is_a_summary_not_the_arrays(tiny_bert):
    from attnwidgets.studies import corpus_stats, dependency_scores

    scores = dependency_scores(read_conllu(MWT), model=tiny_bert, progress=False)
    text = repr(scores)
    assert text.startswith(f"DependencyScores({scores.model!r}, 3 sentences, ")
    assert "2 layers x 4 heads" in text and "best head overall" in text and "relations" in text
    assert "array" not in text and "\n" not in text and len(text) < 250
    stats = corpus_stats(["The cat sat.", "A dog ran."], model=tiny_bert, progress=False)
    assert "array" not in repr(stats) and "2 inputs" in repr(stats) and len(repr(stats)) < 200


@pytest.mark.parametrize("n_sentences", [0])
def test_repr_of_empty_scores(n_sentences):
    scores = DependencyScores([], np.zeros(0, np.int64), np.zeros((2, 1, 1, 0)), np.zeros((6, 0)), n_sentences)
    assert repr(scores) == "DependencyScores(0 sentences, 0 dependents, 0 relations, 1 layers x 1 heads)"


# Spanish "del perro": the multiword token "del" is the words "de" (case) and "el" (det), which do not spell it
DEL = """# text = del perro
1-2\tdel\t_\t_\t_\t_\t_\t_\t_\t_
1\tde\tde\tADP\t_\t_\t3\tcase\t_\t_
2\tel\tel\tDET\t_\t_\t3\tdet\t_\t_
3\tperro\tperro\tNOUN\t_\t_\t0\troot\t_\t_
"""


def _pointing(tokens: list[str], targets: dict[int, int]) -> AttentionResult:
    """One head: piece q puts 0.9 on piece targets[q], the rest spread evenly; [CLS] and [SEP] special."""
    n = len(tokens)
    a = np.full((1, 1, n, n), 0.1 / (n - 1))
    for q in range(n):
        t = targets.get(q, q)
        a[0, 0, q, t] = 0.9 if t != q else a[0, 0, q, t]
    a /= a.sum(-1, keepdims=True)
    special = np.zeros(n, bool)
    special[[0, -1]] = True
    return AttentionResult.from_arrays(a, tokens, special_mask=special)


def test_text_reading_is_a_choice_checked_by_hand():
    surface, = read_conllu(DEL)
    words, = read_conllu(DEL, text="words")
    assert (surface.text, words.text) == ("del perro", "de el perro") and words.surface == []
    # surface: pieces [CLS] del perro [SEP]; "de" and "el" share the piece "del", which points at "perro", and
    # "perro" points at "del" (a tie between de and el: the first, de)
    s = score_dependencies([_pointing(["[CLS]", "del", "perro", "[SEP]"], {1: 2, 2: 1})], [surface], progress=False)
    # words: pieces [CLS] de el perro [SEP]; de -> el, el -> perro, perro -> el
    w = score_dependencies([_pointing(["[CLS]", "de", "el", "perro", "[SEP]"], {1: 2, 2: 3, 3: 2})], [words],
                           progress=False)
    assert s.relations == w.relations == ["case", "det"]
    # dependent->head: surface de->perro (case right), el->perro (det right); words: de->el (wrong), el->perro (right)
    assert s.correct[0, 0, 0].tolist() == [1, 1] and w.correct[0, 0, 0].tolist() == [0, 1]
    # head->dependent: perro's row: surface -> de (case right, det wrong); words -> el (case wrong, det right)
    assert s.correct[1, 0, 0].tolist() == [1, 0] and w.correct[1, 0, 0].tolist() == [0, 1]
    with pytest.raises(ValueError, match="text must be 'surface' or 'words'"):
        read_conllu(DEL, text="own")  # type: ignore[arg-type]


def test_dependency_scores_reads_the_words_when_asked(tiny_bert):
    from attnwidgets.runner import get_runner
    from attnwidgets.studies import dependency_scores

    runner = get_runner(tiny_bert)
    for text, expected in (("surface", "del perro"), ("words", "de el perro")):
        scores = dependency_scores(DEL, model=runner, text=text, progress=False)  # type: ignore[arg-type]
        (sentence,) = read_conllu(DEL, text=text)  # type: ignore[arg-type]
        assert sentence.text == expected
        by_hand = score_dependencies([runner.run(expected)], [sentence], progress=False)
        assert np.array_equal(scores.correct, by_hand.correct) and np.array_equal(scores.counts, by_hand.counts)
    words = dependency_scores(read_conllu(DEL), model=runner, text="words", progress=False)  # given sentences too
    assert np.array_equal(words.correct, scores.correct)
