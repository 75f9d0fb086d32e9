"""The corpus runner: same numbers as one result at a time, tidy output, and memory that does not grow."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

from attnwidgets.analysis import STATISTICS, CorpusStats, surface_stats
from attnwidgets.studies.corpus import corpus_stats

TEXTS = [
    "The cat sat on the mat because it was tired.",
    "A dog barked, and the children laughed.",
    "She gave him the book.",
    "Rain.",
    "Birds that migrate at night navigate partly by the stars, or so they say.",
]
PAIRS = [("The kettle clicked off.", "Mara poured the tea."), ("It rained.", "We stayed in, and read.")]


def _mean_of_results(runner, texts, pairs=None, **kwargs):
    results = runner.run_batch(texts, pairs)
    stats = [surface_stats(r, **kwargs) for r in results]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # sep_sep is NaN everywhere for a decoder
        return {k: np.nanmean([s[k] for s in stats], axis=0) for k in stats[0]}


@pytest.mark.parametrize("words", [False, True])
def test_corpus_equals_mean_of_single_results(tiny_bert, words):
    import attnwidgets as aw

    runner = aw.runner.get_runner(tiny_bert)
    stats = corpus_stats(TEXTS, model=runner, batch_size=2, progress=False, words=words)
    expected = _mean_of_results(runner, TEXTS, words=words)
    mean = stats.mean()
    assert stats.n_docs == len(TEXTS)
    for k in STATISTICS:
        assert np.allclose(mean[k], expected[k], atol=1e-5, equal_nan=True), k


def test_corpus_pairs_and_tidy_frame(tiny_bert):
    import attnwidgets as aw

    runner = aw.runner.get_runner(tiny_bert)
    stats = corpus_stats(PAIRS, model=runner, batch_size=4, progress=False)
    expected = _mean_of_results(runner, [a for a, _ in PAIRS], [b for _, b in PAIRS])
    for k in ("sep", "sep_sep", "rest_sep", "cls", "punct", "entropy"):
        assert np.allclose(stats.mean()[k], expected[k], atol=1e-5), k
    df = stats.frame()
    assert list(df.columns) == ["layer", "head", "statistic", "value"]
    assert sorted(df["layer"].unique()) == [0, 1] and sorted(df["head"].unique()) == [0, 1, 2, 3]
    assert set(STATISTICS) <= set(df["statistic"])
    assert not df.duplicated(["layer", "head", "statistic"]).any()
    shares = df[df.statistic.isin(["cls", "sep", "punct", "self", "prev", "next"])]["value"]
    assert ((shares >= 0) & (shares <= 1)).all()
    pattern_shares = df[df.statistic.str.startswith("pattern_share_")].groupby(["layer", "head"])["value"].sum()
    assert np.allclose(pattern_shares, 1.0)
    assert stats.majority_pattern().shape == (2, 4)


def test_decoder_corpus_matches_results(tiny_llama):
    import attnwidgets as aw

    runner = aw.runner.get_runner(tiny_llama)
    stats = corpus_stats(TEXTS, model=runner, batch_size=3, progress=False)
    expected = _mean_of_results(runner, TEXTS)
    for k in ("first", "self", "prev", "entropy", "entropy_last", "entropy_uniform"):
        assert np.allclose(stats.mean()[k], expected[k], atol=1e-5), k


def test_corpus_runner_keeps_one_batch_alive(tiny_bert, monkeypatch):
    import attnwidgets as aw
    import attnwidgets.runner.batches as batches

    runner = aw.runner.get_runner(tiny_bert)
    cached_before = len(runner.cache)
    refs: list[weakref.ref] = []
    most_alive = 0
    original = batches.iter_padded

    def watched(*args, **kwargs):
        nonlocal most_alive
        for padded in original(*args, **kwargs):
            gc.collect()
            most_alive = max(most_alive, sum(r() is not None for r in refs))
            refs.append(weakref.ref(padded.attention))
            yield padded

    monkeypatch.setattr(batches, "iter_padded", watched)
    texts = TEXTS * 4
    corpus_stats(texts, model=runner, batch_size=2, progress=False, distances=True)
    assert len(refs) == len(texts) // 2  # it did go through the watched path, batch by batch
    assert most_alive == 0  # when a batch arrives, no earlier batch's maps are still held
    assert len(runner.cache) == cached_before  # nothing was put in the result cache


def test_update_from_a_generator_keeps_memory_bounded():
    from attnwidgets.result import AttentionResult

    refs: list[weakref.ref] = []
    most_alive = 0

    def generate():
        nonlocal most_alive
        rng = np.random.default_rng(0)
        for _ in range(12):
            gc.collect()
            most_alive = max(most_alive, sum(r() is not None for r in refs))
            a = rng.random((1, 2, 6, 6))
            r = AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), ["[CLS]", "a", "b", ".", "c", "[SEP]"])
            refs.append(weakref.ref(r))
            yield r

    acc = CorpusStats().update(generate(), batch_size=3)
    assert acc.n_docs == 12
    assert most_alive <= 3
    assert (acc.pattern_counts.sum(-1) == 12).all()  # every map of every head was classified once


def test_splitting_a_batch_changes_nothing():
    from attnwidgets.analysis import AttentionBatch
    from attnwidgets.result import AttentionResult

    rng = np.random.default_rng(1)
    results = []
    for n in (5, 9, 7, 4):
        a = rng.random((2, 3, n, n))
        tokens = ["[CLS]", *[f"w{i}" if i != 1 else "," for i in range(n - 2)], "[SEP]"]
        results.append(AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), tokens))
    batch = AttentionBatch.from_results(results)
    parts = batch.split(max_elements=2 * 3 * 9 * 9 * 2)  # two inputs per part
    assert [p.attention.shape[0] for p in parts] == [2, 2]
    whole, split = CorpusStats(), CorpusStats()
    whole._add(batch)
    for p in parts:
        split._add(p)
    for k, v in whole.mean().items():
        assert np.allclose(v, split.mean()[k], equal_nan=True), k


def test_texts_too_long_to_pad_are_counted_in_one_tokenizer_call_per_kind(tiny_bert, monkeypatch):
    """Which texts go one at a time as results (their padded share above the dense budget): each text's tokens,
    truncated to the model, counted by hand here; the runner's tokenizer is called once for the single texts and once
    for the pairs (it was called once per text)."""
    from attnwidgets.attention_stack import set_dense_budget
    from attnwidgets.runner import get_runner
    from attnwidgets.studies.corpus import _too_long_to_pad

    runner = get_runner(tiny_bert)
    tok = runner.tokenizer
    firsts = ["Rain.", " ".join(["word"] * 40), "A dog barked.", " ".join(["long"] * 600)]
    seconds = [None, "and a pair of words", None, None]
    lengths = [len(tok(a, truncation=True, max_length=runner.info.max_length)["input_ids"]) if b is None else
               len(tok(a, b, truncation=True, max_length=runner.info.max_length)["input_ids"])
               for a, b in zip(firsts, seconds, strict=True)]
    assert lengths[0] < 10 < lengths[1] and lengths[3] == runner.info.max_length
    per_token2 = 2 * runner.info.n_heads * 4 * 3  # 2 layers, batches of 3
    calls = []
    real = type(tok).__call__
    monkeypatch.setattr(type(tok), "__call__", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    old = set_dense_budget(per_token2 * 20 * 20)
    try:
        long = _too_long_to_pad(runner, firsts, seconds, 3, layers=2)
    finally:
        set_dense_budget(old)
    assert long.tolist() == [n > 20 for n in lengths]
    assert len(calls) == 2
