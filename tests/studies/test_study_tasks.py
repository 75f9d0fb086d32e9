"""The sentence-similarity tasks of attnwidgets.studies.tasks: over any frame of pairs (sts_task), and notebook 04's
sample of pairs spread over the score range with the rest held out (sts_sample). Numbers checked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from attnwidgets.data.labelled import load_sts_pairs
from attnwidgets.studies.tasks import MIN_PAIRS, sentiment_task, sts_sample, sts_task


def frame(scores, a=None, b=None):
    n = len(scores)
    return pd.DataFrame({"sentence_a": a or [f"Sentence a{i}." for i in range(n)],
                         "sentence_b": b or [f"Sentence b{i}." for i in range(n)], "score": scores})


def pairs_of(cosines):
    """Pooled embeddings a0, b0, a1, b1, ... whose pairs have the given cosines (unit vectors in 2-d)."""
    rows = []
    for c in cosines:
        rows += [[1.0, 0.0], [c, np.sqrt(1 - c * c)]]
    return np.array(rows)


def test_a_frame_gives_texts_groups_gold_and_a_name():
    task = sts_task(frame([4.5, 1.0, 4.0], a=["A", "B", "C"], b=["a", "b", "c"]))
    assert task.texts == ["A", "a", "B", "b", "C", "c"]
    assert task.groups.tolist() == [0, 0, 1, 1, 2, 2]
    assert task.gold.tolist() == [4.5, 1.0, 4.0]
    assert task.name == "sentence similarity (3 pairs)" and task.metric == "spearman"
    assert sts_task(frame([1, 2, 3]), "mine").name == "mine"
    assert sts_task().name == "sentence similarity" and len(sts_task().texts) == 2 * len(load_sts_pairs())


@pytest.mark.parametrize("cosines, rho", [
    ([0.1, 0.5, 0.9], 1.0),     # the same order as the scores 1, 2, 3
    ([0.9, 0.5, 0.1], -1.0),    # reversed
    ([0.5, 0.1, 0.9], 0.5),     # ranks (2, 1, 3) against (1, 2, 3): 1 - 6 * (1 + 1 + 0) / (3 * 8) = 0.5
])
def test_the_metric_is_spearman_of_the_cosines_against_the_scores(cosines, rho):
    task = sts_task(frame([1.0, 2.0, 3.0]))
    assert task.score_embeddings(pairs_of(cosines)) == pytest.approx(rho)


def test_the_loss_is_the_squared_error_of_the_cosine_against_score_over_5():
    task = sts_task(frame([5.0, 2.5, 0.0]))
    pooled = torch.tensor(pairs_of([1.0, 0.0, 0.6]), dtype=torch.float32)
    # (1 - 1)² + (0 - 0.5)² + (0.6 - 0)² = 0 + 0.25 + 0.36
    assert float(task.loss(pooled, np.arange(6))) == pytest.approx(0.61, abs=1e-6)
    assert float(task.loss(pooled[2:4], np.array([2, 3]))) == pytest.approx(0.25, abs=1e-6)
    with pytest.raises(ValueError, match="whole pairs"):
        task.loss(pooled[1:3], np.array([1, 2]))


@pytest.mark.parametrize("bad, error, message", [
    (frame([1, 2, 3]).drop(columns="score"), ValueError, r"no column 'score': it needs sentence_a, sentence_b, score"),
    (frame([1, 2]), ValueError, r"at least 3 pairs .* got 2"),
    (frame([1, 2, 3], a=["A", " ", "C"]), ValueError, r"the pair at row 1 has no text in 'sentence_a'"),
    (frame([1, 2, 3], b=["a", "b", 7]), ValueError, r"the pair at row 2 has no text in 'sentence_b'"),
    (frame([1, 7, 3]), ValueError, r"the pair at row 1 has the score 7, not a number from 0 to 5"),
    (frame([1, float("nan"), 3]), ValueError, r"row 1 has the score nan"),
    (frame(["1", "x", "3"]), ValueError, r"scores must be numbers from 0 to 5"),
    ([("A", "a", 1.0)] * 3, TypeError, r"pairs must be a pandas DataFrame"),
])
def test_a_bad_frame_is_refused_clearly(bad, error, message):
    with pytest.raises(error, match=message):
        sts_task(bad)


def test_a_sample_is_spread_over_the_scores_and_the_rest_is_held_out():
    everything = load_sts_pairs()
    task, held_out = sts_sample(40)
    assert task.name == "sentence similarity (40 pairs)" and held_out.name == "similarity (112 other pairs)"
    assert len(task.texts) == 80 and len(held_out.texts) == 224
    # every pair exactly once, on one side or the other
    key = lambda t: list(zip(t.texts[0::2], t.texts[1::2], t.gold.tolist()))  # noqa: E731
    assert sorted(key(task) + key(held_out)) == sorted(zip(everything.sentence_a, everything.sentence_b,
                                                           everything.score.tolist()))
    # sorted by score, from the lowest to the highest, and spread: every 151/39 ≈ 3.9th of the sorted pairs
    scores = np.sort(everything.score.to_numpy())
    assert (np.diff(task.gold) >= 0).all() and task.gold[0] == scores[0] and task.gold[-1] == scores[-1]
    picked = np.linspace(0, 151, 40).round().astype(int)
    assert task.gold.tolist() == scores[picked].tolist()
    every, none = sts_sample(None)
    assert none is None and every.texts == sts_task().texts


def test_every_sample_size_takes_distinct_pairs():
    n = len(load_sts_pairs())
    for k in range(MIN_PAIRS, n - MIN_PAIRS + 1):
        task, held_out = sts_sample(k)
        assert len(task.texts) == 2 * k and len(held_out.texts) == 2 * (n - k), k


@pytest.mark.parametrize("n", [2, 150, 0, -5, 40.0, True, "40"])
def test_a_bad_sample_size_is_refused(n):
    with pytest.raises(ValueError, match=r"n_pairs must be a whole number from 3 to 149 .*152 pairs"):
        sts_sample(n)


def test_the_sentiment_task_keeps_its_labels_as_gold(tiny_bert):
    from attnwidgets.runner import get_runner

    task = sentiment_task(get_runner(tiny_bert))
    assert len(task.gold) == len(task.texts) and set(task.gold) == {"neg", "pos"}
