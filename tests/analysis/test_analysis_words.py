"""Word-level attention: to a word = sum over its pieces, from a word = mean over its pieces; rows still sum to 1."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.analysis import AttentionBatch, surface_stats, word_groups, word_level
from attnwidgets.result import AttentionResult

TOKENS = ["[CLS]", "play", "##ing", "cats", "un", "##fold", "##ed", "[SEP]"]
WORDS = np.array([-1, 0, 0, 1, 2, 2, 2, -1])
UNITS = [[0], [1, 2], [3], [4, 5, 6], [7]]


def _result(seed: int = 0) -> AttentionResult:
    a = np.random.default_rng(seed).random((2, 2, 8, 8))
    a /= a.sum(-1, keepdims=True)
    return AttentionResult.from_arrays(a, TOKENS, word_ids=WORDS)


def test_word_groups_specials_are_units():
    special = np.array([t.startswith("[") for t in TOKENS])
    assert word_groups(WORDS, special).tolist() == [0, 1, 1, 2, 3, 3, 3, 4]


def test_word_level_against_loops():
    r = _result()
    w = word_level(r)
    assert w.tokens == ["[CLS]", "playing", "cats", "unfolded", "[SEP]"]
    assert w.word_ids.tolist() == [-1, 0, 1, 2, -1]
    assert w.special_mask.tolist() == [True, False, False, False, True]
    a = r.attention.astype(np.float64)
    for layer in range(2):
        for head in range(2):
            for i, rows in enumerate(UNITS):
                for j, cols in enumerate(UNITS):
                    expected = np.mean([sum(a[layer, head, p, q] for q in cols) for p in rows])
                    assert w.attention[layer, head, i, j] == pytest.approx(expected, rel=1e-5)
    assert np.allclose(w.attention.sum(-1), 1.0, atol=1e-5)


def test_word_level_first_piece_rows():
    r = _result(1)
    w = word_level(r, rows="first")
    a = r.attention
    # "unfolded" (unit 3) takes the row of "un" (piece 4); the column of "playing" sums pieces 1 and 2
    assert w.attention[1, 0, 3, 1] == pytest.approx(a[1, 0, 4, 1] + a[1, 0, 4, 2], rel=1e-5)
    assert np.allclose(w.attention.sum(-1), 1.0, atol=1e-5)


def test_words_switch_on_statistics():
    r = _result(2)
    piece = surface_stats(r)
    word = surface_stats(r, words=True)
    # [SEP] is its own unit either way, and column sums are kept, so attention to [SEP] from the mean rows is
    # the mean over words of the mean over their pieces
    a = r.attention.astype(np.float64)
    expected = np.mean([np.mean([a[..., p, 7] for p in rows], axis=0) for rows in UNITS], axis=0)
    assert np.allclose(word["sep"], expected, atol=1e-6)
    assert not np.allclose(word["sep"], piece["sep"])
    assert np.allclose(word["entropy_uniform"], np.log(5))


def test_batched_words_match_word_level():
    r = _result(3)
    short = AttentionResult.from_arrays(np.full((3, 3), 1 / 3, np.float32)[None, None].repeat(2, 0).repeat(2, 1),
                                        ["[CLS]", "hi", "[SEP]"])
    via_results = AttentionBatch.from_results([r, short], words=True)
    padded = AttentionBatch.from_results([r, short])
    via_batch = padded.to_words([r.word_ids, short.word_ids])
    assert np.allclose(via_results.attention, via_batch.attention, atol=1e-6)
    assert (via_results.valid == via_batch.valid).all()
    for k in via_results.kinds:
        assert (via_results.kinds[k] == via_batch.kinds[k]).all(), k
