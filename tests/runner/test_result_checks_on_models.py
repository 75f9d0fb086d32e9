"""The tests of tests/result/test_result_checks.py that need a model: attention from the runner and from corpus
batches is refused with the same rule and wording as from arrays."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import attnwidgets as aw
from attnwidgets.result import AttentionResult, InvalidAttentionError
from attnwidgets.runner import AttentionUnavailableError, get_runner
from attnwidgets.studies import corpus_stats
from tests.result.test_result_checks import TOKENS


@pytest.fixture(scope="module")
def nan_bert(tiny_bert, tmp_path_factory) -> str:
    """The tiny BERT with one NaN in layer 1's query weights, in the rows of head 1 (head size 8)."""
    import torch
    from transformers import AutoTokenizer, BertModel

    model = BertModel.from_pretrained(tiny_bert)
    with torch.no_grad():
        model.encoder.layer[1].attention.self.query.weight[9, 3] = float("nan")
    path = tmp_path_factory.mktemp("nan_bert")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(path)
        AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(path)
    return str(path)


def test_a_model_with_a_nan_weight_is_named_as_such_not_as_an_unsupported_architecture(nan_bert):
    with pytest.raises(AttentionUnavailableError, match=r"not finite \(NaN or inf\): layer 1, head 1 \(") as info:
        aw.run("The cat sat on the mat.", model=nan_bert)
    msg = str(info.value)
    assert "supported architecture" not in msg and "parameters" in msg and "float32" in msg


def test_corpus_stats_of_a_nan_model_raise_instead_of_reporting_a_focused_head(nan_bert):
    with pytest.raises(AttentionUnavailableError, match=r"input 0, layer 1, head 1|layer 1, head 1"):
        corpus_stats(["The cat sat.", "A dog ran."], model=nan_bert, progress=False)


def test_from_arrays_and_the_runner_word_a_bad_row_alike(tiny_bert, monkeypatch):
    runner = get_runner(tiny_bert)
    forward = runner.forward

    def halved(*args, **kwargs):
        out = forward(*args, **kwargs)
        out["attentions"] = tuple(a * 0.5 for a in out["attentions"])
        return out

    monkeypatch.setattr(runner, "forward", halved)
    with pytest.raises(AttentionUnavailableError) as from_model:
        runner.run("Worded alike.")
    with pytest.raises(InvalidAttentionError) as from_arrays:
        AttentionResult.from_arrays(np.full((2, 4, 4), 0.125, np.float32), TOKENS)
    common = "weights that are not probabilities: in layer 0, head 0, query 0's weights sum to 0.5 over the keys"
    assert common in str(from_model.value) and common in str(from_arrays.value)
