"""What an ablation click used to work out again on every run, now worked out once (issue 33 §4): a batch's
tokenisation and its rows' token fields (kept with the batch), how a cached result's attention is kept (noted in
the cache, not asked of the result), and a clean result's attention during a replay (read once per result, not once
per replayed layer)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import attnwidgets as aw
from attnwidgets.runner import encoding, partial
from attnwidgets.runner.ablation import Ablation
from attnwidgets.runner.cache import Kept


class Counting:
    """A tokenizer that counts the texts it is asked to tokenise and can claim a larger vocabulary."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.texts = 0
        self.grown = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else kwargs.get("text", kwargs.get("text_target"))
        self.texts += len(first) if isinstance(first, list | tuple) else 1
        return self.tok(*args, **kwargs)

    def __len__(self) -> int:
        return len(self.tok) + self.grown

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tok, name)


@pytest.fixture
def counted(tiny_bert, monkeypatch):
    runner = aw.runner.get_runner(tiny_bert)
    counting = Counting(runner.tokenizer)
    monkeypatch.setattr(runner, "tokenizer", counting)
    return runner, counting


def test_a_batch_is_tokenised_once_and_each_encode_gets_its_own_inputs(counted):
    runner, counting = counted
    texts = ["Kept once, the first.", "Kept once, the second one."]
    first = runner.encode(texts)
    second = runner.encode(texts)
    assert counting.texts == 2  # was 4: the second call tokenised both texts again
    assert second is not first and second.inputs is not first.inputs
    assert second.inputs.keys() == first.inputs.keys()
    assert all(second.inputs[k] is first.inputs[k] for k in first.inputs)
    counting.grown = 1  # the vocabulary grew (an added token): the texts may tokenise differently now
    runner.encode(texts)
    assert counting.texts == 4


def test_an_edited_batch_changes_no_later_encode(counted):
    """A study replaces an input tensor in its batch (gradients.py masks ids): the next encode of the same texts
    gives the tokenisation, and the edited batch's rows follow the edit."""
    runner, _ = counted
    texts = ["An edited batch stays its own.", "So does this one."]
    enc = runner.encode(texts)
    before = runner.token_fields(enc, 1)["tokens"]
    mask = enc.inputs["attention_mask"].clone()
    mask[1, 3:] = 0
    enc.inputs["attention_mask"] = mask
    assert len(runner.token_fields(enc, 1)["tokens"]) == 3
    again = runner.encode(texts)
    assert again.inputs["attention_mask"] is not mask
    assert runner.token_fields(again, 1)["tokens"] == before


def test_token_fields_are_read_once_per_row(counted, monkeypatch):
    runner, _ = counted
    seen = []
    real = encoding.token_texts
    monkeypatch.setattr(
        encoding, "token_texts", lambda tok, ids, special: seen.append(len(ids)) or real(tok, ids, special)
    )
    texts = ["Fields read once.", "Read once, then kept."]
    fields = [runner.token_fields(runner.encode(texts), row) for row in (0, 1)]
    later = [runner.token_fields(runner.encode(texts), row) for row in (0, 1)]
    assert len(seen) == 2  # one per row, not one per row per encode
    for a, b in zip(fields, later, strict=True):
        assert a["tokens"] == b["tokens"] and a["tokens"] is not b["tokens"]  # each caller's own list
        np.testing.assert_array_equal(a["word_ids"], b["word_ids"])
        assert not b["token_ids"].flags.writeable  # shared by every reader: nobody may write into it
        assert a["valid"] is not b["valid"]
    assert fields[0]["tokens"] == ["[CLS]", "fields", "read", "once", ".", "[SEP]"]


def test_a_kept_batch_says_again_what_truncation_drops(counted):
    runner, counting = counted
    texts = ["short.", " ".join(["word"] * 2000)]
    with pytest.warns(UserWarning, match="tokens were dropped"):
        runner.encode(texts)
    n = counting.texts
    with pytest.warns(UserWarning, match="tokens were dropped"):
        runner.encode(texts)
    with pytest.raises(ValueError, match="truncation='error'"):
        runner.encode(texts, truncation="error")
    assert counting.texts == n  # said (and raised) from the kept batch, not tokenised again


def test_the_cache_notes_how_a_result_is_kept(tiny_bert):
    """The note is the result's dense size, 4 bytes x layers x heads x n x n, and that it is dense."""
    runner = aw.runner.get_runner(tiny_bert)
    text = "The cache notes this result."
    res = runner.run(text)
    found = runner.cache.entry(runner.cache_key(text))
    assert found is not None and found.value is res and found.nbytes == res.nbytes
    L, H, n = runner.info.n_layers, runner.info.n_heads, len(res.tokens)
    assert found.note == Kept(4 * L * H * n * n, False)
    assert runner.cached(runner.cache_key(text), budget=4 * L * H * n * n) is res
    assert runner.cached(runner.cache_key(text), budget=4 * L * H * n * n - 1) is None  # now it would be lazy


def test_a_replay_reads_each_clean_result_once(tiny_bert, monkeypatch):
    """Ablating layer 1 of 2 replays layer 0 and hands layer 1's clean weights over: each clean result's attention
    is read once (it was read for every replayed layer and for the hand-over, each time all four stacks)."""
    runner = aw.runner.get_runner(tiny_bert)
    texts = ["A replay reads once.", "Each clean result, once per run."]
    runner.run_batch(texts, progress=False)
    reads = []
    real = partial._result_attention
    monkeypatch.setattr(partial, "_result_attention", lambda res, which: reads.append(which) or real(res, which))
    ablation = Ablation.heads([(1, 0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = runner.run_batch(texts, ablation=ablation, progress=False)
    assert reads == ["self", "self"]
    runner.partial_recompute = False
    try:
        full = list(runner.iter_results(texts, ablation=ablation, cache=False, progress=False))
    finally:
        runner.partial_recompute = True
    for a, b in zip(got, full, strict=True):
        np.testing.assert_allclose(a.attention, b.attention, atol=1e-6)


def test_a_corpus_read_once_keeps_no_tokenisation(counted):
    """``iter_results(cache=False)`` (corpus statistics, memory bounded) keeps neither results nor tokenisations."""
    runner, counting = counted
    texts = ["Read once, kept nowhere.", "Nor is this one kept."]
    for _ in range(2):
        list(runner.iter_results(texts, cache=False, progress=False))
    assert counting.texts == 4
    runner.encode(texts)
    runner.encode(texts)
    assert counting.texts == 6  # kept from here on: tokenised once more, not twice
