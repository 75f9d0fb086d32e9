"""The test of tests/analysis/test_analysis_words.py that needs a model: word level on a real tokenisation."""

from __future__ import annotations

import numpy as np

from attnwidgets.analysis import word_level


def test_word_level_on_a_real_tokenisation(tiny_bert):
    import attnwidgets as aw

    r = aw.run("Unbelievably, the kittens were playing.", model=tiny_bert)
    assert len(r.tokens) > 8  # "unbelievably" and "kittens" are split into pieces
    w = word_level(r)
    assert w.tokens[1:-1] == ["unbelievably", ",", "the", "kittens", "were", "playing", "."]
    assert np.allclose(w.attention.sum(-1), 1.0, atol=1e-5)
