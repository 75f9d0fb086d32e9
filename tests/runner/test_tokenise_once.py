"""``Runner.encode`` tokenises each text once, and what it gives is what two separate calls gave before (issue 26).

Before, ``encode`` tokenised every text twice: once untruncated to count it (truncation warnings, empty texts), once
truncated and padded for the model. Now one untruncated, padded call does both when no row is too long (a row too
long is tokenised again by the tokenizer's own truncation). The checks here count the texts handed to the tokenizer,
and compare the batch, the offsets and each row's token text with the two calls of before (made here by hand), on
BERT WordPiece and byte-level BPE (characters whole in one token, and cut across tokens), with hostile text.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch
from bpe_models import save_gpt2, split_tokenizer

import attnwidgets as aw
from attnwidgets.runner.encoding import _Pieces, token_texts
from attnwidgets.token_text import byte_level_bytes, display_tokens

HOSTILE = [
    "The cat sat on the mat.",
    "🙂 emoji 👩‍👩‍👧 and flags 🇫🇷, then a dot.",
    "a" + "b" * 300 + " supercalifragilisticexpialidocious" * 3,  # very long words
    "control\x00chars\x07 and\ttabs\r\nnew lines\x1b[0m, zero\u200bwidth.",
    " café 東京 🙂",
    "x",
]
PAIRS = ["Second segment, with 🙂.", "b", "East 東京.", "\x01\x02 y", "more", "Z z z."]


class Counting:
    """A tokenizer that counts the texts it is asked to tokenise (a pair counts once), passing everything on."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.texts = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else kwargs.get("text", kwargs.get("text_target"))
        self.texts += len(first) if isinstance(first, list | tuple) else 1
        return self.tok(*args, **kwargs)

    def __len__(self) -> int:
        return len(self.tok)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tok, name)


def _split_gpt2(tmp_path_factory) -> str:
    return save_gpt2(split_tokenizer(), tmp_path_factory.mktemp("split_gpt2"))


@pytest.fixture(scope="module")
def split_gpt2(tmp_path_factory) -> str:
    """GPT-2 whose byte-level BPE cuts every non-ASCII character across tokens (64 positions)."""
    return _split_gpt2(tmp_path_factory)


@pytest.fixture(params=["tiny_bert", "tiny_gpt2", "split_gpt2"])
def runner(request):
    return aw.runner.get_runner(request.getfixturevalue(request.param))


def _counting(runner, monkeypatch) -> Counting:
    counting = Counting(runner.tokenizer)
    monkeypatch.setattr(runner, "tokenizer", counting)
    return counting


def _fits(runner, texts, pairs=None) -> bool:
    tok, n = runner.tokenizer, runner.info.max_length
    args = (texts,) if pairs is None else (texts, pairs)
    return max(len(ids) for ids in tok(*args, verbose=False)["input_ids"]) <= n


@pytest.mark.parametrize("paired", [False, True])
def test_each_text_is_tokenised_once(runner, monkeypatch, paired):
    texts = [t for t in HOSTILE if len(t) < 100]
    pairs = PAIRS[: len(texts)] if paired and runner.info.kind == "encoder" else None
    assert _fits(runner, texts, pairs)
    counting = _counting(runner, monkeypatch)
    enc = runner.encode(texts, pairs)
    assert enc.batch_size == len(texts)
    assert counting.texts == len(texts)  # was 2 x len(texts): counted, then tokenised again


def test_a_text_too_long_is_tokenised_again_to_truncate_it(runner, monkeypatch):
    texts = ["short one.", " ".join(["word"] * 2000)]
    counting = _counting(runner, monkeypatch)
    with pytest.warns(UserWarning, match="tokens were dropped"):
        enc = runner.encode(texts)
    assert counting.texts == 2 * len(texts)
    assert enc.inputs["input_ids"].shape[1] == runner.info.max_length
    assert enc.truncated[0] == 0 and enc.truncated[1] > 0


def _before(runner, texts, pairs):
    """The batch and each row's token text as encode made them before: a truncating call, and token_texts read
    through display_tokens every time."""
    tok = runner.tokenizer
    args = (texts,) if pairs is None else (texts, pairs)
    batch = tok(*args, padding=True, truncation=True, max_length=runner.info.max_length, return_tensors="pt")
    added = set(tok.added_tokens_decoder)
    byte_level = "ByteLevel" in str(tok.backend_tokenizer.pre_tokenizer)
    rows = []
    for row, encoding in enumerate(batch.encodings):
        keep = [p for p, m in enumerate(encoding.attention_mask) if m]
        ids = [encoding.ids[p] for p in keep]
        special = [bool(encoding.special_tokens_mask[p]) for p in keep]
        pieces: list[str | bytes] = []
        for i, t, s in zip(ids, tok.convert_ids_to_tokens(ids), special, strict=True):
            if s or i in added:
                pieces.append(t)
            else:
                data = byte_level_bytes(t) if byte_level else None
                pieces.append(data if data is not None else t.replace("▁", " ").encode("utf-8"))
        rows.append((display_tokens(pieces), [encoding.offsets[p] for p in keep], batch["input_ids"][row]))
    return batch, rows


@pytest.mark.parametrize("paired", [False, True])
def test_the_one_tokenisation_gives_what_two_calls_gave(runner, paired):
    if paired and runner.info.kind != "encoder":
        pytest.skip("sentence pairs are for encoders")
    texts = HOSTILE
    pairs = PAIRS if paired else None
    for attempt in range(2):  # the second time every piece's text is known to the tokenizer's cache
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the long words are cut on the 64-position GPT-2s
            enc = runner.encode(texts, pairs)
        batch, rows = _before(runner, texts, pairs)
        assert set(enc.inputs) == {k for k, v in batch.items() if isinstance(v, torch.Tensor)}
        for key, value in enc.inputs.items():
            assert torch.equal(value, batch[key]), key
        for row, (tokens, offsets, _) in enumerate(rows):
            fields = runner.token_fields(enc, row)
            assert fields["tokens"] == tokens, (attempt, row)
            keep = enc.inputs["attention_mask"][row].bool().tolist()
            got = [o for o, m in zip(enc.encodings.encodings[row].offsets, keep, strict=True) if m]
            assert got == offsets, (attempt, row)


def test_cut_characters_read_with_their_row_whole_ones_alone(split_gpt2):
    """On the split tokenizer `` 東京`` is `` ⟨E6⟩``, ``東``, ``⟨E4⟩``, ``⟨BA⟩``, ``京`` (characters cut across
    tokens), a row read through display_tokens; ASCII rows read each piece alone, the same text."""
    r = aw.runner.get_runner(split_gpt2)
    enc = r.encode([" 東京", " cat"])
    assert r.token_fields(enc, 0)["tokens"] == ["<s>", " ⟨E6⟩", "東", "⟨E4⟩", "⟨BA⟩", "京", "</s>"]
    assert r.token_fields(enc, 1)["tokens"] == ["<s>", " ca", "t", "</s>"]
    known = _Pieces.of(r.tokenizer)
    cut = int(r.tokenizer.convert_tokens_to_ids("Ġæ"))
    assert (cut, False) in known.piece and (cut, False) not in known.alone  # E6 alone is no character
    whole = int(r.tokenizer.convert_tokens_to_ids("Ġca"))
    assert known.alone[(whole, False)] == " ca"


def test_added_tokens_make_the_pieces_anew(tiny_bert):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)  # not the runner's: this one gets a token added
    ids = tok("hello", add_special_tokens=False)["input_ids"]
    assert token_texts(tok, ids, [False] * len(ids)) == ["hello"]
    before = _Pieces.of(tok)
    assert _Pieces.of(tok) is before
    tok.add_tokens(["zzqq"])
    assert _Pieces.of(tok) is not before  # the vocabulary grew: an added token is its own text
    assert token_texts(tok, [tok.convert_tokens_to_ids("zzqq")], [False]) == ["zzqq"]


def test_empty_and_dropped_texts_still_refused_clearly(runner):
    with pytest.raises(ValueError, match="empty or only whitespace"):
        runner.encode(["fine", ""])
    if runner.info.kind == "encoder":  # WordPiece drops a zero-width space; byte-level BPE keeps its bytes
        with pytest.raises(ValueError, match="no tokens once tokenised"):
            runner.encode(["fine", "\u200b"])


def test_counts_of_pair_segments_are_unchanged(tiny_bert):
    """The truncation message names what each text of a pair loses: its counts come from the one call now."""
    r = aw.runner.get_runner(tiny_bert)
    long_a, long_b = " ".join(["alpha"] * 400), " ".join(["beta"] * 300)
    with pytest.warns(UserWarning) as seen:
        enc = r.encode([long_a], [long_b])
    n_a = len(r.tokenizer(long_a, add_special_tokens=False)["input_ids"])
    n_b = len(r.tokenizer(long_b, add_special_tokens=False)["input_ids"])
    total = n_a + n_b + 3
    message = str(seen[0].message)
    assert f"input is {total} tokens" in message
    kept = enc.encodings.encodings[0].sequence_ids
    assert f"{n_a - kept.count(0)} from the end of the text and {n_b - kept.count(1)} from the end" in message
    assert np.sum(enc.inputs["attention_mask"].numpy()) == r.info.max_length


def test_token_fields_follow_inputs_given_other_tensors(tiny_bert):
    """token_fields reads the batch's tensors as numpy made once per batch; other tensors put in ``inputs`` (a mask
    edited by a study) are read again, not the first ones."""
    r = aw.runner.get_runner(tiny_bert)
    enc = r.encode(["The cat sat.", "A dog barked loudly."])
    first = r.token_fields(enc, 1)
    assert first["tokens"] == ["[CLS]", "a", "dog", "barked", "loudly", ".", "[SEP]"]
    mask = enc.inputs["attention_mask"].clone()
    mask[1, 4:] = 0
    enc.inputs["attention_mask"] = mask
    fields = r.token_fields(enc, 1)
    assert fields["tokens"] == ["[CLS]", "a", "dog", "barked"]
    assert fields["valid"].tolist() == mask[1].bool().tolist()
    fields["valid"][:] = False  # a row's mask is its own: editing it changes no other call's
    assert r.token_fields(enc, 1)["tokens"] == ["[CLS]", "a", "dog", "barked"]
