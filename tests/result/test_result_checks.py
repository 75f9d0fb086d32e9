"""No silent wrong numbers: attention that is not probabilities is refused with one rule and one wording, whether it
comes from a model (the runner, corpus batches) or from arrays (AttentionResult.from_arrays)."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.analysis import CorpusStats, surface_stats
from attnwidgets.analysis.surface import row_entropy
from attnwidgets.result import AttentionResult, InvalidAttentionError, check_attention

TOKENS = ["[CLS]", "a", "b", "[SEP]"]


def test_corpus_stats_refuse_nan_results_they_are_handed():
    good = np.full((1, 2, 4, 4), 0.25, np.float32)
    bad = good.copy()
    bad[0, 1] = np.nan
    result = AttentionResult.from_arrays(good, TOKENS).with_attention(bad)  # with_attention does not check
    with pytest.raises(InvalidAttentionError, match=r"CorpusStats got attention weights that are not finite.*"
                                                    r"input 0, layer 0, head 1"):
        CorpusStats().add(result)


def test_entropy_of_a_nan_row_is_nan_never_zero():
    a = np.array([[np.nan, np.nan, np.nan], [0.5, 0.5, 0.0], [1.25, -0.25, 0.0]])
    h = row_entropy(a)
    assert np.isnan(h[0]) and h[1] == pytest.approx(np.log(2)) and np.isnan(h[2])
    result = AttentionResult.from_arrays(np.full((1, 2, 4, 4), 0.25, np.float32), TOKENS)
    nan = result.attention.copy()
    nan[0, 1, 2] = np.nan
    stats = surface_stats(result.with_attention(nan))
    assert np.isnan(stats["entropy"][0, 1]) and stats["entropy"][0, 0] == pytest.approx(np.log(4))


def _eye(n: int = 4) -> np.ndarray:
    return np.eye(n, dtype=np.float32)


@pytest.mark.parametrize("attention, tokens, kwargs, error, match", [
    (np.full((4, 4), 0.5), TOKENS, {}, InvalidAttentionError, r"not probabilities: in layer 0, head 0, query 0's "
                                                               r"weights sum to 2 over the keys"),
    (np.array([[1.25, -0.25], [0.5, 0.5]]), ["a", "b"], {}, InvalidAttentionError,
     r"weights below 0: in layer 0, head 0, query 0, key 1 has weight -0.25"),
    (np.where(_eye() > 0, np.nan, 0), TOKENS, {}, InvalidAttentionError, r"not finite \(NaN or inf\): layer 0, head 0"),
    (np.where(_eye() > 0, np.inf, 0), TOKENS, {}, InvalidAttentionError, "not finite"),
    (_eye().astype(complex), TOKENS, {}, ValueError, "real numbers .* complex"),
    (np.array([["0.5", "0.5"], ["1", "0"]]), ["a", "b"], {}, ValueError, "real numbers .* strings"),
    (np.zeros((1, 1, 0, 0)), [], {}, ValueError, "tokens is empty"),
    (_eye(2), ["a", 5], {}, TypeError, r"tokens\[1\] is int 5, not str"),
    (_eye(2), "ab", {}, TypeError, "not one string"),
    (_eye(), TOKENS, {"segment_ids": [0, 0, 7, 1]}, ValueError, "segment_ids must be 0 .* or 1 .*; got 7"),
    (_eye(), TOKENS, {"word_ids": [-1, 0, -5, -1]}, ValueError, "word_ids must be .* got -5"),
    (_eye(), TOKENS, {"word_ids": [-1, 0.5, 1, -1]}, ValueError, "word_ids must be whole numbers"),
    (_eye(), TOKENS, {"segment_ids": [0, 0]}, ValueError, r"segment_ids must have shape \(4,\)"),
])
def test_from_arrays_refuses_what_is_not_a_result(attention, tokens, kwargs, error, match):
    with pytest.raises(error, match=match):
        AttentionResult.from_arrays(attention, tokens, **kwargs)


def test_from_arrays_checks_the_target_side_of_an_encoder_decoder():
    dec = np.tril(np.ones((1, 1, 3, 3), np.float32))  # rows sum to 1, 2, 3
    with pytest.raises(InvalidAttentionError, match="from_arrays got decoder attention weights that are not prob"):
        AttentionResult.from_arrays(_eye(2), ["a", "b"], kind="encoder-decoder", target_tokens=["A", "B", "C"],
                                    decoder_attention=dec, cross_attention=np.full((1, 1, 3, 2), 0.5))
    with pytest.raises(TypeError, match=r"target_tokens\[0\] is int"):
        AttentionResult.from_arrays(_eye(2), ["a", "b"], kind="encoder-decoder", target_tokens=[1],
                                    decoder_attention=np.ones((1, 1, 1, 1)), cross_attention=np.full((1, 1, 1, 2), .5))


def test_what_the_runner_accepts_from_arrays_accepts():
    causal = np.tril(np.ones((4, 4), np.float32))
    AttentionResult.from_arrays(causal / causal.sum(-1, keepdims=True), list("abcd"), kind="decoder")
    # learned sinks (gpt-oss) keep part of each row: accepted when said, refused otherwise
    sunk = causal / causal.sum(-1, keepdims=True) * 0.7
    AttentionResult.from_arrays(sunk, list("abcd"), kind="decoder", sinks=True)
    with pytest.raises(InvalidAttentionError, match=r"sum to 0\.7"):
        AttentionResult.from_arrays(sunk, list("abcd"), kind="decoder")
    zeroed = np.full((2, 4, 4), 0.25, np.float32)
    zeroed[1] = 0
    with pytest.raises(InvalidAttentionError, match="head 1, query 0's weights sum to 0"):
        AttentionResult.from_arrays(zeroed, TOKENS)  # a fully masked row is not attention...
    AttentionResult.from_arrays(zeroed, TOKENS, ablation="head 1 zeroed")  # ...unless a head was ablated on purpose
    with pytest.raises(InvalidAttentionError, match="sum to 0"):
        AttentionResult.from_arrays(zeroed, TOKENS, sinks=True)  # a sink row still keeps something


def test_from_arrays_results_are_frozen_copies():
    mine = np.full((1, 1, 2, 2), 0.5, np.float32)
    ids = np.array([0, 1])
    r = AttentionResult.from_arrays(mine, ["a", "b"], word_ids=ids, outputs={"embedding": np.zeros(3)})
    with pytest.raises(ValueError, match="read-only"):
        r.attention[:] = 0
    with pytest.raises(ValueError, match="read-only"):
        r.outputs["embedding"][0] = 1
    assert not r.word_ids.flags.writeable and not r.token_ids.flags.writeable
    mine[:] = 0  # the caller's arrays stay theirs
    ids[0] = 5
    assert r.attention.sum() == 2.0 and r.word_ids.tolist() == [0, 1]


def test_check_attention_leaves_padding_rows_out():
    a = np.zeros((2, 1, 1, 3, 3), np.float32)
    a[0, ..., :2, :2] = 0.5  # input 0 has 2 tokens, input 1 has 3
    a[1] = 1 / 3
    valid = np.array([[True, True, False], [True, True, True]])
    check_attention(a, query_mask=valid[:, None, None])
    with pytest.raises(InvalidAttentionError, match="input 0, layer 0, head 0, query 2"):
        check_attention(a)
