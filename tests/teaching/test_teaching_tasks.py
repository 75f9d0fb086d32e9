"""Synthetic tasks: targets, vocabularies, held-out splits and batch encoding."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.teaching.tasks import (
    Vocab,
    encode_batch,
    get_task,
    held_out_sources,
    number_to_words,
    reverse_task,
    sample_pairs,
)


@pytest.mark.parametrize(
    ("n", "words"),
    [(0, "zero"), (7, "seven"), (14, "fourteen"), (40, "forty"), (345, "three hundred forty five"),
     (1000, "one thousand"), (2007, "two thousand seven"), (9018, "nine thousand eighteen"),
     (9999, "nine thousand nine hundred ninety nine")],
)
def test_number_words(n, words):
    assert " ".join(number_to_words(n)) == words


def test_tasks_targets_and_vocabularies():
    rev = get_task("reverse")
    assert rev.target(["1", "2", "3"]) == ["3", "2", "1"]
    assert len(rev.vocab) == 14 and rev.vocab.pad_id == 0
    words = get_task("number_words")
    assert words.target(list("120")) == ["one", "hundred", "twenty"]
    assert len(words.vocab) == 4 + 10 + 20 + 8 + 2
    assert rev.parse("3 1 4") == rev.parse("314") == rev.parse(["3", "1", "4"]) == ["3", "1", "4"]
    with pytest.raises(ValueError, match=r"1\.\.8 tokens"):
        rev.parse("123456789")
    with pytest.raises(ValueError, match="unknown task"):
        get_task("sort")
    with pytest.raises(ValueError, match="special tokens"):
        Vocab(("a", "b"))


def test_held_out_is_deterministic_and_kept_out_of_training():
    task = get_task("reverse")
    held = held_out_sources(task, 200, seed=0)
    assert held == held_out_sources(task, 200, seed=0) and len(set(held)) == 200
    assert held != held_out_sources(task, 200, seed=1)
    rng = np.random.default_rng(0)
    small = get_task("number_words")
    excluded = set(held_out_sources(small, 5000, seed=0))  # half of the 10000 numbers held out
    pairs = sample_pairs(small, rng, 300, excluded)
    assert all(tuple(src) not in excluded for src, _ in pairs)
    assert all(tgt == small.target(src) for src, tgt in pairs)
    one_digit = reverse_task(min_len=1, max_len=1)  # only 10 sources exist
    assert sorted(held_out_sources(one_digit, 10)) == [(d,) for d in "0123456789"]
    with pytest.raises(ValueError, match="fewer than 11"):
        held_out_sources(one_digit, 11)


def test_encode_batch_pads_and_shifts_by_one():
    v = get_task("reverse").vocab
    src, tgt_in, tgt_out = encode_batch(v, [(["1", "2", "3"], ["3", "2", "1"]), (["7"], ["7"])])
    assert src.shape == (2, 4) and tgt_in.shape == tgt_out.shape == (2, 4)
    assert v.decode(src[0]) == ["1", "2", "3"] and src[1].tolist() == [v.index["7"], v.eos_id, 0, 0]
    assert tgt_in[1].tolist() == [v.bos_id, v.index["7"], 0, 0]
    assert tgt_out[1].tolist() == [v.index["7"], v.eos_id, 0, 0]
    np.testing.assert_array_equal(tgt_in[0, 1:], tgt_out[0, :-1])  # teacher forcing: one step ahead
