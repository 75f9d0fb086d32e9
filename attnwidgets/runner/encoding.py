"""Tokenising for the runner: text in, a padded :class:`Encoded` batch out, and a batch row's tokens back out.

Kept apart from :mod:`.runner` (running, caching, building results) because it is most of the runner's rules about
input: what counts as a text, how pairs and single texts share a batch, what truncation drops and how it is reported,
and how pieces map to words and segments.
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar, cast

import numpy as np
import torch

from ..result import ModelInfo
from ..token_text import byte_level_bytes, display_tokens, fallback_byte
from .cache import ByteLRU
from .checks import check_encode_inputs, require_tokens
from .checks import check_text as check_text  # importable from here, where it was first

Truncation = Literal["warn", "error"]
T = TypeVar("T")


@dataclass
class Encoded:
    """A tokenised batch, ready for :meth:`Runner.forward`.

    Attributes
    ----------
    inputs : dict[str, torch.Tensor]
        Model inputs, each (B, T) (``decoder_input_ids`` (B, T_target) for encoder-decoders).
    texts, pairs, targets : list
        What was tokenised, one entry per batch row.
    truncated : list[int]
        Tokens dropped from each row to fit the model (source and target together for encoder-decoders).
    """

    inputs: dict[str, torch.Tensor]
    texts: list[str]
    pairs: list[str | None]
    targets: list[str | None]
    truncated: list[int] = field(default_factory=list)
    encodings: Any = None
    # What is worked out from ``inputs`` once per batch (numpy arrays, each row's token fields, lengths), by name:
    # (the tensors it was made from, the value). Shared by the copies :meth:`Tokenising.encode` hands out of one
    # tokenisation; an entry made from other tensors (``inputs`` given new ones) is made again.
    _memo: dict[str, tuple[tuple[Any, ...], Any]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def memo(self, name: str, tensors: tuple[Any, ...], make: Callable[[], T]) -> T:
        """``make()``, kept under ``name`` while ``inputs`` holds the same ``tensors`` (compared by identity)."""
        held = self._memo.get(name)
        if held is None or len(held[0]) != len(tensors) or any(a is not b for a, b in zip(held[0], tensors)):
            held = self._memo[name] = (tensors, make())
        return cast(T, held[1])

    def copy(self) -> Encoded:
        """Another ``Encoded`` of the same tokenisation: its own ``inputs`` dict and lists over the same tensors, the
        same memo (what :meth:`Tokenising.encode` hands out when it tokenised these texts before)."""
        fresh = Encoded(
            dict(self.inputs),
            list(self.texts),
            list(self.pairs),
            list(self.targets),
            list(self.truncated),
            encodings=self.encodings,
        )
        fresh._memo = self._memo
        return fresh

    def _source(self) -> tuple[Any, ...]:
        return (self.inputs["input_ids"], self.inputs.get("attention_mask"), self.inputs.get("token_type_ids"))

    def arrays(self) -> dict[str, Any]:
        """The source side as numpy, made once per batch for :meth:`Tokenising.token_fields`' rows: ``ids``,
        ``valid`` (B, T) and ``token_type_ids`` (or None), with ``valid_t`` the (B, T) bool tensor. Made again if
        ``inputs`` is given other tensors."""
        return self.memo("arrays", self._source(), self._make_arrays)

    def _make_arrays(self) -> dict[str, Any]:
        ids_t, mask, types = self._source()
        valid = mask.bool() if mask is not None else torch.ones_like(ids_t, dtype=torch.bool)
        return {
            "ids": ids_t.cpu().numpy(),
            "valid": valid.cpu().numpy(),
            "valid_t": valid,
            "token_type_ids": None if types is None else types.cpu().numpy(),
        }

    @property
    def batch_size(self) -> int:
        return len(self.texts)


@dataclass(frozen=True)
class _Length:
    """Untruncated size of one row: every token (special ones too), and the non-special tokens of each segment."""

    total: int
    a: int  # the text (segment A)
    b: int | None  # text_pair (segment B): None without one, -1 when the tokenizer cannot tell A from B


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _warn_user(message: str) -> None:
    """Warn at the first caller outside attnwidgets (the notebook cell or script), however deep inside it we are.

    A fixed ``stacklevel`` points into our own code from every entry point but one (run, run_batch, widgets,
    analysis). Python 3.12's ``skip_file_prefixes`` does this; we still support 3.10.
    """
    frame = sys._getframe(1)
    level = 2  # 1 is this function, 2 its caller
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _dropped(n: int, error: bool, noun: str = "token") -> str:
    """'1 token was dropped', '3 tokens were dropped', '3 tokens would be dropped'."""
    verb = "would be dropped" if error else "was dropped" if n == 1 else "were dropped"
    return f"{n} {noun}{'' if n == 1 else 's'} {verb}"


def _segment_sizes(enc: Any, row: int, words: int) -> tuple[int, int]:
    """Non-special tokens of segment A and B in one row of a pair encoding; ``(words, -1)`` without segment ids."""
    encodings = getattr(enc, "encodings", None)
    if not encodings:
        return words, -1
    seq = encodings[row].sequence_ids
    return seq.count(0), seq.count(1)


def _spelling(tok: Any) -> tuple[bool, bool]:
    """(byte-level BPE, SentencePiece byte fallback) for a tokenizer: ByteLevel anywhere in its decoder,
    pre-tokenizer or normalizer (nested in a Sequence too), and its model's ``byte_fallback``."""
    if getattr(tok, "byte_decoder", None) is not None:  # a slow GPT-2 / RoBERTa tokenizer
        return True, False
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:
        return False, getattr(tok, "sp_model", None) is not None
    parts = (backend.decoder, backend.pre_tokenizer, backend.normalizer)
    byte_level = any(b'"ByteLevel"' in part.__getstate__() for part in parts if part is not None)
    return byte_level, bool(getattr(backend.model, "byte_fallback", False))


def token_texts(tok: Any, ids: Sequence[int], special: Sequence[bool]) -> list[str]:
    """Display text of a row of token ids: the text each token stands for (see :mod:`attnwidgets.token_text`).

    Byte-level BPE tokens (``ĠcafÃ©``) are mapped back to their bytes, SentencePiece byte-fallback tokens (``<0xE6>``)
    to their byte and other pieces (``▁the``, ``##ing``) to their UTF-8 with "▁" as a space; the row's bytes are then
    decoded, a character shown on the token that completes it and the bytes of an unfinished one as ``⟨E6 9D⟩``.
    Special and added tokens are their own text.
    """
    known = _Pieces.of(tok)
    keys = [(int(i), bool(s)) for i, s in zip(ids, special, strict=True)]
    texts = [known.alone.get(k) for k in keys]
    if None not in texts:  # every piece its own text: what display_tokens makes of the row (see _Pieces)
        return cast(list[str], texts)
    pieces = known.pieces(tok, keys)
    return display_tokens([pieces[k] for k in keys])


class _Pieces:
    """What each (token id, special) of one tokenizer stands for, worked out once: its piece (the token's own text
    for special and added tokens, else its bytes) and, when the piece reads the same wherever it stands, its text.

    A piece is read alone when it is text (special and added tokens) or its bytes are whole UTF-8: then no character
    of the row crosses into or out of it, and :func:`display_tokens` shows it as its bytes decoded. A row of such
    pieces needs no byte decoding (most rows; every row of a WordPiece or SentencePiece tokenizer without byte
    fallback); a row with one piece that is not (a byte-level token holding part of a character) is read whole.
    Kept per tokenizer, and made anew when its vocabulary grows (added tokens).
    """

    _known: ClassVar[weakref.WeakKeyDictionary[Any, _Pieces]] = weakref.WeakKeyDictionary()

    def __init__(self, tok: Any) -> None:
        self.size = len(tok)
        self.byte_level, self.fallback = _spelling(tok)
        self.added = set(getattr(tok, "added_tokens_decoder", {}) or {})
        self.piece: dict[tuple[int, bool], str | bytes] = {}
        self.alone: dict[tuple[int, bool], str] = {}

    @classmethod
    def of(cls, tok: Any) -> _Pieces:
        try:
            known = cls._known.get(tok)
        except TypeError:  # a tokenizer that cannot be weakly referenced: worked out per call
            return cls(tok)
        if known is None or known.size != len(tok):
            known = cls._known[tok] = cls(tok)
        return known

    def pieces(self, tok: Any, keys: Sequence[tuple[int, bool]]) -> dict[tuple[int, bool], str | bytes]:
        """The piece of each key (those not yet known are made, with one ``convert_ids_to_tokens`` call)."""
        new = list(dict.fromkeys(k for k in keys if k not in self.piece))
        for (i, s), t in zip(new, tok.convert_ids_to_tokens([i for i, _ in new]), strict=True):
            data: bytes | None = None
            if not s and i not in self.added:
                byte = fallback_byte(t) if self.fallback else None
                data = bytes([byte]) if byte is not None else byte_level_bytes(t) if self.byte_level else None
                if data is None:
                    data = t.replace("▁", " ").encode("utf-8")
            piece: str | bytes = t if data is None else data
            self.piece[(i, s)] = piece
            try:
                self.alone[(i, s)] = piece if isinstance(piece, str) else piece.decode("utf-8")
            except UnicodeDecodeError:  # part of a character: read with its row
                pass
        return self.piece


#: Budget of each runner's kept tokenisations (:class:`_Tokenised`), and what one batch is counted as: its input
#: tensors' bytes times this (the tokenizer's encodings and the rows' token fields kept with it).
TOKENISED_BYTES = 64 << 20
TOKENISED_OVERHEAD = 16


@dataclass(frozen=True)
class _Tokenised:
    """One batch as :meth:`Tokenising.encode` tokenised it, kept so that the same texts are not tokenised again (a
    batch run clean, then ablated click after click): the tokenizer it came from (and its size, which grows with
    added tokens), the batch, and each row's untruncated lengths (to say again what truncation drops)."""

    tokenizer: Any
    size: int
    encoded: Encoded
    full: list[_Length]
    full_targets: list[_Length]


def _tokenisations(owner: Any) -> ByteLRU[_Tokenised]:
    """The tokenisations ``owner`` (a runner) keeps, within :data:`TOKENISED_BYTES`."""
    held = owner.__dict__.get("_tokenisations")
    if held is None:
        held = owner.__dict__["_tokenisations"] = ByteLRU(TOKENISED_BYTES)
    return cast(ByteLRU[_Tokenised], held)


class Tokenising:
    """The tokenising half of :class:`~attnwidgets.runner.runner.Runner` (a mixin: it needs these attributes)."""

    info: ModelInfo
    tokenizer: Any

    @property
    def model(self) -> torch.nn.Module:
        raise NotImplementedError

    def encode(
        self,
        texts: Sequence[str],
        pairs: Sequence[str | None] | None = None,
        targets: Sequence[str | None] | None = None,
        truncation: Truncation = "warn",
        *,
        keep: bool = True,
    ) -> Encoded:
        """Tokenise a batch (padding on the right), truncating to the model's maximum with a warning or an error.

        The tokenisation is kept (``keep=False``: not, for a corpus read once), so the same batch again (run clean,
        then ablated) is not tokenised again; each call gets its own :class:`Encoded` over the kept tensors.
        """
        kind = self.info.kind
        texts, pairs_l, targets_l = check_encode_inputs(texts, pairs, targets, truncation, kind, self.info.name)
        tok = self.tokenizer
        known = _tokenisations(self)
        key = (tuple(texts), tuple(pairs_l), tuple(targets_l))
        seen = known.get(key)
        if seen is not None and seen.tokenizer is tok and seen.size == len(tok):
            if any(seen.encoded.truncated):  # say again what was dropped (or raise), as the first call did
                self._too_long(seen.full, seen.full_targets, seen.encoded.encodings, truncation)
            return seen.encoded.copy()
        max_len = self.info.max_length
        firsts = list(texts)
        once = None if kind == "encoder-decoder" else self._tokenise_once(firsts, pairs_l)
        full = self._count(firsts, pairs_l) if once is None else once[1]
        # The decoder has the same limit (the tokenizer truncates the target to it below), so count targets too.
        full_targets = self._count(targets_l, [None] * len(texts), target=True) if kind == "encoder-decoder" else []
        for i, n in enumerate(full):
            require_tokens(texts[i], n.a, "text")
            require_tokens(pairs_l[i], n.b, "text_pair")
        for t, n in zip(targets_l, full_targets, strict=False):
            require_tokens(t, n.a, "target")
        kwargs: dict[str, Any] = dict(padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        if kind == "encoder-decoder":
            enc = tok(firsts, text_target=targets_l, **kwargs)
            labels = enc.pop("labels")
            labels_mask = labels != tok.pad_token_id
            enc["decoder_input_ids"] = self._shift_right(labels)
            enc["decoder_attention_mask"] = torch.cat(
                [torch.ones_like(labels_mask[:, :1]), labels_mask[:, :-1]], dim=1
            ).long()
        elif once is not None and once[0] is not None:
            enc = once[0]  # nothing to truncate: the one tokenisation is the batch
        else:
            enc = self._tokenise(firsts, pairs_l, min(max_len, max(n.total for n in full)))
        truncated = [max(0, n.total - max_len) for n in full]
        for i, length in enumerate(full_targets):
            truncated[i] += max(0, length.total - max_len)
        if any(truncated):
            self._too_long(full, full_targets, enc, truncation)
        inputs = {k: v for k, v in enc.items() if isinstance(v, torch.Tensor)}
        encoded = Encoded(
            inputs,
            texts,
            pairs_l,
            targets_l if kind == "encoder-decoder" else [None] * len(texts),
            truncated,
            encodings=enc,
        )
        nbytes = TOKENISED_OVERHEAD * sum(v.numel() * v.element_size() for v in inputs.values())
        if keep:
            known.put(key, _Tokenised(tok, len(tok), encoded, full, full_targets), nbytes)
        return encoded.copy()

    def _tokenise_once(self, texts: list[str], pairs: list[str | None]) -> tuple[Any, list[_Length]] | None:
        """Tokenise and pad a batch of encoder or decoder inputs once, untruncated, and count each row from it.

        Returns (the padded batch, or None when some row is longer than the model accepts and must be tokenised
        again with truncation; each row's :class:`_Length`). None for a batch that mixes single texts and pairs
        (those are counted and tokenised apart, :meth:`_count` and :meth:`_tokenise`). Counting and the batch come
        from the same call, so a text is tokenised once; the tensors are those of the truncating call, which cuts
        nothing here (``padding=True`` pads to the longest row either way).
        """
        tok = self.tokenizer
        paired = sum(p is not None for p in pairs)
        if 0 < paired < len(texts):
            return None
        # verbose=False: a long text is first seen here, and transformers' own "Token indices sequence length is
        # longer than ..." line would only repeat (less clearly) the warning we give. The attention mask is asked
        # for to count each row; it goes again when the tokenizer would not give it to the model.
        args = (texts,) if not paired else (texts, pairs)
        enc = tok(
            *args,
            padding=True,
            return_tensors="pt",
            return_special_tokens_mask=True,
            return_attention_mask=True,
            verbose=False,
        )
        special = enc.pop("special_tokens_mask")
        real = enc["attention_mask"].bool()
        if "attention_mask" not in getattr(tok, "model_input_names", ("attention_mask",)):
            del enc["attention_mask"]
        totals = real.sum(1).tolist()
        words = (real & (special == 0)).sum(1).tolist()
        lengths = [
            _Length(n, w, None) if p is None else _Length(n, *_segment_sizes(enc, row, w))
            for row, (n, w, p) in enumerate(zip(totals, words, pairs, strict=True))
        ]
        fits = max(totals) <= self.info.max_length
        return (enc if fits else None), lengths

    def _count(self, texts: Sequence[str | None], pairs: list[str | None], target: bool = False) -> list[_Length]:
        """Untruncated length of each row (a pair row as a pair, a single row alone) and of each of its segments.

        ``target=True`` counts decoder targets (tokenised as ``text_target``).
        """
        tok = self.tokenizer
        lengths: list[_Length] = [_Length(0, 0, None)] * len(texts)
        paired = [i for i, p in enumerate(pairs) if p is not None]
        single = [i for i, p in enumerate(pairs) if p is None]
        # verbose=False: counting is where a long text is first seen, and transformers' own "Token indices sequence
        # length is longer than ..." line would only repeat (less clearly) the warning we give.
        kwargs: dict[str, Any] = dict(return_special_tokens_mask=True, return_attention_mask=False, verbose=False)
        for rows, out in (
            (
                single,
                tok(**{"text_target" if target else "text": [texts[i] for i in single]}, **kwargs) if single else None,
            ),
            (paired, tok([texts[i] for i in paired], [pairs[i] for i in paired], **kwargs) if paired else None),
        ):
            if out is None:
                continue
            for k, (i, mask) in enumerate(zip(rows, out["special_tokens_mask"], strict=True)):
                words = len(mask) - sum(mask)
                if pairs[i] is None:
                    lengths[i] = _Length(len(mask), words, None)
                else:
                    a, b = _segment_sizes(out, k, words)
                    lengths[i] = _Length(len(mask), a, b)
        return lengths

    def _too_long(self, full: list[_Length], targets: list[_Length], enc: Any, truncation: Truncation) -> None:
        """Say (warn, or raise for ``truncation='error'``) what truncation drops: per text of a pair, and targets."""
        max_len = self.info.max_length
        error = truncation == "error"
        end = "start" if getattr(self.tokenizer, "truncation_side", "right") == "left" else "end"
        last = "first" if end == "start" else "last"
        parts = []
        cut = [i for i, n in enumerate(full) if n.total > max_len]
        if cut:
            worst = max(cut, key=lambda i: full[i].total)
            n = full[worst]
            if n.b is None:  # a single text
                detail = f"the {last} {_dropped(n.total - max_len, error)}"
            else:
                a, b = _segment_sizes(enc, worst, -1)
                if n.b < 0 or b < 0:  # the tokenizer cannot tell the segments apart
                    detail = f"{_dropped(n.total - max_len, error)}, from the longer of the two texts first"
                else:
                    detail = (
                        f"{_dropped(n.total - max_len, error)}: {n.a - a} from the {end} of the text and "
                        f"{n.b - b} from the {end} of text_pair (the tokenizer shortens the longer one first)"
                    )
            parts.append(f"input is {n.total} tokens, more than {self.info.name!r} accepts ({max_len}); {detail}")
        tcut = [i for i, t in enumerate(targets) if t.total > max_len]
        if tcut:
            t = max((targets[i] for i in tcut), key=lambda t: t.total)
            parts.append(
                f"target is {t.total} tokens, more than the decoder of {self.info.name!r} accepts "
                f"({max_len}); the {last} {_dropped(t.total - max_len, error, 'target token')}"
            )
        msg = "; ".join(parts)
        n_cut = len(set(cut) | set(tcut))
        if n_cut > 1:
            msg += f" ({n_cut} of the {len(full)} inputs in this batch are too long; this is the longest)"
        if truncation == "error":
            raise ValueError(msg + " (truncation='error')")
        _warn_user(msg + ". Pass truncation='error' to raise instead.")

    def _tokenise(self, texts: list[str], pairs: list[str | None], longest: int) -> Any:
        """Tokenise, truncate and pad a batch whose rows may mix single texts and pairs.

        A single text must not be encoded as a pair with an empty second text (that adds a separator and changes
        every attention map), so single rows and pair rows are tokenised apart, both padded to ``longest`` (the
        longest row after truncation) and put back in their order.
        """
        tok = self.tokenizer
        kwargs: dict[str, Any] = dict(truncation=True, return_tensors="pt")
        paired = [i for i, p in enumerate(pairs) if p is not None]
        if not paired:
            return tok(texts, padding=True, max_length=self.info.max_length, **kwargs)
        if len(paired) == len(texts):
            return tok(texts, pairs, padding=True, max_length=self.info.max_length, **kwargs)
        single = [i for i, p in enumerate(pairs) if p is None]
        kwargs.update(padding="max_length", max_length=longest)
        one = tok([texts[i] for i in single], **kwargs)
        two = tok([texts[i] for i in paired], [pairs[i] for i in paired], **kwargs)
        order = torch.argsort(torch.tensor(single + paired))  # batch row i is row order[i] of one + two
        data = {k: torch.cat([one[k], two[k]])[order] for k in one.keys() if k in two}
        encodings = None
        if one.encodings and two.encodings:
            both = one.encodings + two.encodings
            encodings = [both[j] for j in order.tolist()]
        from transformers import BatchEncoding

        return BatchEncoding(data, encoding=encodings)

    def _shift_right(self, labels: torch.Tensor) -> torch.Tensor:
        model: Any = self.model
        if hasattr(model, "prepare_decoder_input_ids_from_labels"):
            return model.prepare_decoder_input_ids_from_labels(labels=labels)
        cfg = model.config
        start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else cfg.bos_token_id
        shifted = labels.new_full(labels.shape, self.tokenizer.pad_token_id)
        shifted[:, 1:] = labels[:, :-1]
        shifted[:, 0] = start if start is not None else self.tokenizer.pad_token_id
        return shifted

    def token_fields(self, enc: Encoded, row: int, side: str = "source") -> dict[str, Any]:
        """Tokens, ids, word ids, segment ids and special mask of one batch row, padding removed.

        Worked out once per row of a tokenisation and kept with it (:meth:`Encoded.memo`): a batch run clean and then
        ablated, or ablated again, reads its tokens from ids once. The arrays are read-only (shared by every result of
        the row); ``tokens`` and ``valid`` (the row's (T,) bool mask over the batch's positions) are the caller's own.
        """
        if side == "target":
            tensors: tuple[Any, ...] = (enc.inputs["decoder_input_ids"], enc.inputs["decoder_attention_mask"])
            kept = enc.memo(f"fields/target/{row}", tensors, lambda: self._target_fields(enc, row))
            valid = enc.inputs["decoder_attention_mask"][row].bool()
        else:
            kept = enc.memo(f"fields/source/{row}", enc._source(), lambda: self._source_fields(enc, row))
            valid = enc.arrays()["valid_t"][row].clone()
        return {**kept, "tokens": list(kept["tokens"]), "valid": valid}

    def _target_fields(self, enc: Encoded, row: int) -> dict[str, Any]:
        tok = self.tokenizer
        ids_t = enc.inputs["decoder_input_ids"][row]
        valid = enc.inputs["decoder_attention_mask"][row].bool()
        ids = ids_t[valid].tolist()
        special_ids = set(tok.all_special_ids)
        special = np.array([i in special_ids for i in ids], dtype=bool)
        tokens = token_texts(tok, ids, special.tolist())
        word = np.where(special, -1, np.cumsum(~special) - 1)
        return _read_only(dict(tokens=tokens, token_ids=np.array(ids, dtype=np.int64), word_ids=word))

    def _source_fields(self, enc: Encoded, row: int) -> dict[str, Any]:
        tok = self.tokenizer
        arrays = enc.arrays()  # the batch's tensors as numpy once, not a few small tensor operations per row
        where = np.flatnonzero(arrays["valid"][row])
        positions = where.tolist()
        ids = arrays["ids"][row][where].tolist()
        encoding = enc.encodings.encodings[row] if getattr(enc.encodings, "encodings", None) else None
        n = len(ids)
        if encoding is not None:  # each of these properties builds its whole list: read each once
            word_row, seq_row, special_row = encoding.word_ids, encoding.sequence_ids, encoding.special_tokens_mask
            words = [word_row[p] for p in positions]
            seqs = [seq_row[p] for p in positions]
            special = np.array([bool(special_row[p]) for p in positions], dtype=bool)
        else:  # slow tokenizer: every non-special piece is its own word
            special_ids = set(tok.all_special_ids)
            special = np.array([i in special_ids for i in ids], dtype=bool)
            words = [None if s else k for k, s in enumerate(special)]
            seqs = [0] * n
        if arrays["token_type_ids"] is not None and enc.pairs[row] is not None:
            segment = arrays["token_type_ids"][row][where].astype(np.int64)
        else:
            segment = np.zeros(n, dtype=np.int64)
            current = 0
            for k, s in enumerate(seqs):
                current = s if s is not None else current
                segment[k] = current
        word_ids = np.full(n, -1, dtype=np.int64)
        offset = 0
        first_segment_words = [w for w, s in zip(words, segment, strict=True) if w is not None and s == 0]
        if enc.pairs[row] is not None and first_segment_words:
            offset = max(first_segment_words) + 1
        for k, (w, s) in enumerate(zip(words, segment, strict=True)):
            if w is not None and not special[k]:
                word_ids[k] = w + (offset if s == 1 else 0)
        tokens = token_texts(tok, ids, special.tolist())
        return _read_only(
            dict(
                tokens=tokens,
                token_ids=np.array(ids, dtype=np.int64),
                word_ids=word_ids,
                segment_ids=segment,
                special_mask=special,
            )
        )


def _read_only(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with its arrays made read-only: kept with the tokenisation, they are shared by every reader."""
    for value in fields.values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return fields
