"""The test of tests/analysis/test_analysis_dependency.py that needs a model: the dependency study on a tiny BERT."""

from __future__ import annotations

import numpy as np

from attnwidgets.analysis import read_conllu
from attnwidgets.data import ud_sample_path


def test_dependency_scores_on_a_model(tiny_bert):
    from attnwidgets.studies.dependency import dependency_scores

    sents = read_conllu(ud_sample_path())
    scores = dependency_scores(sents, model=tiny_bert, progress=False)
    assert scores.correct.shape == (2, 2, 4, len(scores.relations))
    assert scores.counts.sum() == sum(len(s.words) - 1 for s in sents)  # every word aligned, none truncated
    assert np.all((scores.accuracy >= 0) & (scores.accuracy <= 1))
