"""Heads as dependency parsers: a three-sentence treebank with crafted attention whose scores are known."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.analysis import align_words, read_conllu, score_dependencies
from attnwidgets.analysis.dependency import DIRECTIONS, OFFSETS
from attnwidgets.data import ud_sample_path
from attnwidgets.result import AttentionResult

CONLLU = """# sent_id = 1
1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tsat\tsit\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

# sent_id = 2
1\tDogs\tdog\tNOUN\t_\t_\t2\tnsubj\t_\t_
2\tbark\tbark\tVERB\t_\t_\t0\troot\t_\t_
3\tloudly\tloudly\tADV\t_\t_\t2\tadvmod\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_

# sent_id = 3
1-2\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_
1\tdid\tdo\tAUX\t_\t_\t3\taux\t_\tSpaceAfter=No
2\tn't\tnot\tPART\t_\t_\t3\tadvmod\t_\t_
3\tgo\tgo\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_
"""

PIECES = [
    ["[CLS]", "the", "cat", "sat", ".", "[SEP]"],
    ["[CLS]", "dog", "##s", "bark", "loud", "##ly", ".", "[SEP]"],
    ["[CLS]", "didn", "'", "t", "go", ".", "[SEP]"],
]
PIECE_WORD = [[-1, 0, 1, 2, 3, -1], [-1, 0, 0, 1, 2, 2, 3, -1], [-1, 0, 1, 1, 2, 3, -1]]


def _crafted(sentence, pieces, piece_word) -> AttentionResult:
    """Head 0: each word looks at its gold head (the root at word 0, or 1 if it is word 0). Head 1: the next word."""
    m = len(sentence.words)
    n = len(pieces)
    gold = sentence.heads
    targets = [
        [int(gold[i]) if gold[i] >= 0 else (0 if i != 0 else 1) for i in range(m)],
        [i + 1 if i + 1 < m else i - 1 for i in range(m)],
    ]
    a = np.zeros((1, 2, n, n))
    pw = np.array(piece_word)
    for h, target in enumerate(targets):
        for p in range(n):
            a[0, h, p] = 0.4 / n
            if pw[p] >= 0:
                first_piece = int(np.flatnonzero(pw == target[pw[p]])[0])
                a[0, h, p, first_piece] += 0.6
            else:
                a[0, h, p, p] += 0.6
    return AttentionResult.from_arrays(a, pieces), targets


def test_read_conllu_skips_ranges_and_rebuilds_text():
    sents = read_conllu(CONLLU)
    assert [s.words for s in sents][2] == ["did", "n't", "go", "."]
    assert sents[0].text == "The cat sat."
    assert sents[2].text == "didn't go."
    assert sents[1].heads.tolist() == [1, -1, 1, 1]
    assert read_conllu(CONLLU, subtypes=False)[0].relations == ["det", "nsubj", "root", "punct"]


def test_align_words_by_characters():
    sents = read_conllu(CONLLU)
    for s, pieces, expected in zip(sents, PIECES, PIECE_WORD, strict=True):
        special = np.array([p.startswith("[") for p in pieces])
        assert align_words(s.words, pieces, special).tolist() == expected
    # accents and case are ignored; an [UNK] takes the current word and matching resumes at the next one
    assert align_words(["Café", "☃", "ok"], ["cafe", "[UNK]", "ok"]).tolist() == [0, 1, 2]


def test_crafted_scores_are_known():
    sents = read_conllu(CONLLU)
    results, all_targets = zip(*(_crafted(s, p, w) for s, p, w in zip(sents, PIECES, PIECE_WORD, strict=True)))
    scores = score_dependencies(list(results), sents)
    rel = {r: i for i, r in enumerate(scores.relations)}
    assert set(rel) == {"det", "nsubj", "punct", "advmod", "aux"}
    assert scores.counts[rel["nsubj"]] == 2 and scores.counts[rel["punct"]] == 3
    acc = scores.accuracy  # (2, L=1, H=2, R)
    # head 0, dependent -> head: perfect on every relation
    assert np.allclose(acc[0, 0, 0], 1.0)
    # head 1 (next word; the last word looks back), both directions, counted by hand from the targets
    for h in range(2):
        d2h, h2d = dict.fromkeys(rel, 0), dict.fromkeys(rel, 0)
        for s, targets in zip(sents, all_targets, strict=True):
            for d, (g, r) in enumerate(zip(s.heads, s.relations, strict=True)):
                if g >= 0:
                    d2h[r] += targets[h][d] == g  # the dependent's row points at its head
                    h2d[r] += targets[h][g] == d  # the head's row points at the dependent
        for r, i in rel.items():
            assert acc[0, 0, h, i] == pytest.approx(d2h[r] / scores.counts[i]), (h, r)
            assert acc[1, 0, h, i] == pytest.approx(h2d[r] / scores.counts[i]), (h, r)
    assert acc[0, 0, 1, rel["nsubj"]] == pytest.approx(scores.baseline[OFFSETS.index(1), rel["nsubj"]])
    # baseline by hand: the head of "." is one word to its left in sentences 1 and 3, two in sentence 2
    b = scores.baseline
    assert b[OFFSETS.index(-1), rel["punct"]] == pytest.approx(2 / 3)
    assert b[OFFSETS.index(-2), rel["punct"]] == pytest.approx(1 / 3)
    assert b[OFFSETS.index(1), rel["det"]] == pytest.approx(1.0)
    table = scores.table()
    assert table.iloc[-1]["relation"] == "all"
    assert (table["accuracy"] == 1.0).all()
    assert set(table["direction"]) <= set(DIRECTIONS)
    assert (table.loc[table.relation != "all", "label"] == "1-1").all()
    frame = scores.frame()
    assert len(frame) == 2 * 1 * 2 * len(rel)


def _self_and_specials_first(sentence, pieces, piece_word) -> AttentionResult:
    """Every row puts most on [CLS] (0.3), then [SEP] (0.25), then itself (0.2), and only then 0.15 on its word's gold
    head (the root: on word 0, or 1 if it is word 0); 0.1 spread evenly. Special rows look at themselves."""
    n = len(pieces)
    pw = np.array(piece_word)
    cls, sep = pieces.index("[CLS]"), pieces.index("[SEP]")
    a = np.full((1, 1, n, n), 0.1 / n)
    for p in range(n):
        if pw[p] < 0:
            a[0, 0, p, p] += 0.9
            continue
        g = int(sentence.heads[pw[p]])
        target = g if g >= 0 else (0 if pw[p] != 0 else 1)
        a[0, 0, p, cls] += 0.3
        a[0, 0, p, sep] += 0.25
        a[0, 0, p, p] += 0.2
        a[0, 0, p, int(np.flatnonzero(pw == target)[0])] += 0.15
    return AttentionResult.from_arrays(a, pieces)


@pytest.mark.parametrize("rows", ["mean", "first"])
def test_argmax_excludes_self_and_special_tokens(rows):
    sents = read_conllu(CONLLU)
    results = [_self_and_specials_first(s, p, w) for s, p, w in zip(sents, PIECES, PIECE_WORD, strict=True)]
    for r, w in zip(results, PIECE_WORD, strict=True):  # the crafted rows do peak where they should
        word_rows = [p for p in range(len(w)) if w[p] >= 0]
        top3 = np.argsort(-r.attention[0, 0, word_rows], axis=-1)[:, :3]
        assert {int(k) for k in top3[:, :2].ravel()} == {0, len(w) - 1}  # [CLS] and [SEP] first
        assert (top3[:, 2] == word_rows).all()  # then the piece itself
    scores = score_dependencies(results, sents, rows=rows)
    # dependent -> head: the gold head is every row's best word once itself and [CLS]/[SEP] are out
    assert np.allclose(scores.accuracy[0, 0, 0], 1.0)
    # head -> dependent: the head's row points at its own head, so only a dependent that is also its head's head
    # (a word and its head pointing at each other, as the root and word 0 do here) counts
    rel = {r: i for i, r in enumerate(scores.relations)}
    hits = dict.fromkeys(rel, 0)
    for s in sents:
        for d, (g, r) in enumerate(zip(s.heads, s.relations, strict=True)):
            if g >= 0:
                gg = int(s.heads[g])
                hits[r] += (gg if gg >= 0 else (0 if g != 0 else 1)) == d
    for r, i in rel.items():
        assert scores.accuracy[1, 0, 0, i] == pytest.approx(hits[r] / scores.counts[i]), r


def test_shipped_sample_is_a_valid_hand_annotated_treebank():
    path = ud_sample_path()
    assert "annotated by hand" in path.read_text(encoding="utf-8").split("\n\n")[0]
    sents = read_conllu(path)
    assert len(sents) >= 40
    for s in sents:
        assert (s.heads == -1).sum() == 1
        for i in range(len(s.words)):  # following heads from any word reaches the root without a cycle
            seen, j = set(), i
            while j != -1:
                assert j not in seen
                seen.add(j)
                j = int(s.heads[j])
