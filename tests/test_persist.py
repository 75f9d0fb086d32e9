"""Saving analyses and loading them back (issue 16.6): every object round-trips exactly, every file is tagged with its
model, and a file from another model, a newer format, another kind or a damaged file is refused with a clear message."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SENTENCES
from lazy_helpers import lazy_result
from pandas.testing import assert_frame_equal

import attnwidgets as aw
from attnwidgets.analysis.corpus import CorpusStats
from attnwidgets.persist import (
    FORMAT,
    ModelMismatchError,
    read_tags,
)


def assert_same_corpus_stats(a: CorpusStats, b: CorpusStats) -> None:
    assert (a.n_docs, a.n_tokens, a.words, a.smoothing) == (b.n_docs, b.n_tokens, b.words, b.smoothing)
    assert a.model == b.model
    ma, mb = a.mean(), b.mean()
    assert ma.keys() == mb.keys()
    for key in ma:
        np.testing.assert_array_equal(ma[key], mb[key])
    assert_frame_equal(a.frame(), b.frame())
    if a.pattern_counts is None:
        assert b.pattern_counts is None
    else:
        np.testing.assert_array_equal(a.pattern_counts, b.pattern_counts)
        assert_frame_equal(a.patterns(), b.patterns())
        np.testing.assert_array_equal(a.majority_pattern(), b.majority_pattern())
    try:
        da = a.distances()
    except ValueError:
        with pytest.raises(ValueError, match="distances=True"):
            b.distances()
    else:
        np.testing.assert_array_equal(da, b.distances())


# -- CorpusStats ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [dict(), dict(words=True, smoothing=1e-4, distances=True),
                                     dict(patterns=False)])
def test_corpus_stats_round_trip_on_a_tiny_model(tiny_bert, tmp_path, options) -> None:
    stats = aw.corpus_stats(SENTENCES, model=tiny_bert, progress=False, **options)
    path = stats.save(tmp_path / "stats.npz")
    back = CorpusStats.load(path, model=tiny_bert)
    assert_same_corpus_stats(stats, back)
    assert read_tags(path)["settings"] == {"words": options.get("words", False),
                                           "smoothing": options.get("smoothing", 0.0),
                                           "distances": options.get("distances", False),
                                           "patterns": options.get("patterns", True)}


def test_a_loaded_corpus_stats_keeps_adding(tiny_bert, tmp_path) -> None:
    """Sums, counts and distances come back as running sums: adding the rest of the corpus to the loaded half gives
    the statistics of the whole corpus."""
    whole = aw.corpus_stats(SENTENCES, model=tiny_bert, distances=True, progress=False, batch_size=1)
    half = aw.corpus_stats(SENTENCES[:1], model=tiny_bert, distances=True, progress=False)
    back = CorpusStats.load(half.save(tmp_path / "half.npz"))
    back.update(aw.run(t, model=tiny_bert) for t in SENTENCES[1:])
    for key, value in whole.mean().items():
        np.testing.assert_allclose(back.mean()[key], value, rtol=1e-6, atol=1e-9, err_msg=key)
    np.testing.assert_allclose(back.distances(), whole.distances(), rtol=1e-6)


def test_corpus_stats_of_a_long_input_round_trip(tmp_path) -> None:
    stats = aw.analysis.corpus_stats([lazy_result(40), lazy_result(30, seed=1)], distances=True)
    assert_same_corpus_stats(stats, CorpusStats.load(stats.save(tmp_path / "lazy.npz"), model=stats.model))


def test_corpus_stats_on_the_bundled_model_and_shipped_corpus(tmp_path) -> None:
    from attnwidgets.data import load_corpus

    stats = aw.corpus_stats(load_corpus()[:16], progress=False, distances=True)
    path = stats.save(tmp_path / "bundled.npz")
    runner = aw.get_runner()
    assert_same_corpus_stats(stats, CorpusStats.load(path, model=runner))
    tags = read_tags(path)
    assert tags["kind"] == "CorpusStats" and tags["attnwidgets_file"] == FORMAT
    assert tags["attnwidgets"] == aw.__version__
    assert tags["model"]["name"] == "all-MiniLM-L6-v2 (bundled)"
    assert tags["model"]["commit"] == runner.info.commit and runner.info.commit.startswith("config-sha256:")


def test_corpus_stats_from_another_model_are_refused(tiny_bert, tmp_path) -> None:
    stats = aw.corpus_stats(SENTENCES, model=tiny_bert, progress=False)
    path = stats.save(tmp_path / "stats.npz")
    for other in (aw.get_runner(), aw.get_runner().info, "bert-base-uncased"):
        with pytest.raises(ModelMismatchError) as caught:
            CorpusStats.load(path, model=other)
        message = str(caught.value)
        assert tiny_bert in message and "model=None" in message
        assert "bundled" in message or "bert-base-uncased" in message
    assert CorpusStats.load(path).n_docs == 3  # model=None: no check


def test_empty_corpus_stats_round_trip(tmp_path) -> None:
    back = CorpusStats.load(CorpusStats(words=True).save(tmp_path / "empty.npz"))
    assert (back.n_docs, back.words, back.model) == (0, True, None)
    with pytest.raises(ModelMismatchError, match="does not say which model"):
        CorpusStats.load(tmp_path / "empty.npz", model="bert-base-uncased")
