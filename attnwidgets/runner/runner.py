"""The cached model runner: text in, :class:`~attnwidgets.result.AttentionResult` out."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import torch

from ..result import AttentionResult, ModelInfo
from . import control
from .cache import ByteLRU
from .loading import AttentionUnavailableError, LoadedModel, load, model_key

Truncation = Literal["warn", "error"]


class AblationLike(Protocol):
    """What the runner needs of an ablation: hashable, and able to make attention hooks for a model."""

    def __hash__(self) -> int: ...

    def hooks(self, info: ModelInfo) -> Sequence[control.AttentionHook]: ...


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

    @property
    def batch_size(self) -> int:
        return len(self.texts)


def _check_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        hint = "; use run_batch() for several texts" if what == "text" and isinstance(value, list | tuple) else ""
        raise TypeError(f"{what} must be a string, got {type(value).__name__}{hint}")
    if not value.strip():
        raise ValueError(f"{what} is empty or only whitespace: give at least one word")
    return value


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


def _require_tokens(text: str | None, n: int | None, what: str) -> None:
    """A text that tokenises to nothing but special tokens (say a zero-width space) has no attention to show."""
    if text is not None and n == 0:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ValueError(f"{what} {shown!r} has no tokens once tokenised (only characters the tokenizer drops, such "
                         "as zero-width or control characters): give at least one word")


def _segment_sizes(enc: Any, row: int, words: int) -> tuple[int, int]:
    """Non-special tokens of segment A and B in one row of a pair encoding; ``(words, -1)`` without segment ids."""
    encodings = getattr(enc, "encodings", None)
    if not encodings:
        return words, -1
    seq = encodings[row].sequence_ids
    return seq.count(0), seq.count(1)


def _display(token: str, special: bool) -> str:
    if special:
        return token
    return token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\n").replace("ĉ", "\t")


class Runner:
    """One loaded model, a result cache, and a count of forward passes.

    Get one with :func:`get_runner` (shared per model id and revision) rather than building it yourself.

    Parameters
    ----------
    loaded : LoadedModel
        From :func:`attnwidgets.runner.loading.load`.
    cache_bytes : int
        Budget of the result cache (default 1 GiB).

    Examples
    --------
    >>> import attnwidgets as aw
    >>> r = aw.get_runner()
    >>> res = r.run("The cat sat.")
    >>> res.attention.shape[:2]
    (6, 12)
    >>> before = r.n_forward; _ = r.run("The cat sat."); r.n_forward - before
    0
    """

    def __init__(self, loaded: LoadedModel, cache_bytes: int = 1 << 30) -> None:
        self._loaded = loaded
        self.info: ModelInfo = loaded.info
        self.tokenizer = loaded.tokenizer
        self.head = loaded.head
        self.cache: ByteLRU[AttentionResult] = ByteLRU(cache_bytes)
        self.n_forward = 0

    @property
    def model(self) -> torch.nn.Module:
        """The torch model. Analysis code should not need it; it is here for the runner's own modules."""
        return self._loaded.model

    def __repr__(self) -> str:
        i = self.info
        return f"Runner({i.name!r}, {i.kind}, {i.n_layers} layers x {i.n_heads} heads, forward passes={self.n_forward})"

    # -- tokenising ----------------------------------------------------------------------------------------------

    def encode(
        self,
        texts: Sequence[str],
        pairs: Sequence[str | None] | None = None,
        targets: Sequence[str | None] | None = None,
        truncation: Truncation = "warn",
    ) -> Encoded:
        """Tokenise a batch (padding on the right), truncating to the model's maximum with a warning or an error."""
        texts = [_check_text(t, "text") for t in texts]
        if not texts:
            raise ValueError("no texts given")
        pairs_l: list[str | None] = list(pairs) if pairs is not None else [None] * len(texts)
        targets_l: list[str | None] = list(targets) if targets is not None else [None] * len(texts)
        if len(pairs_l) != len(texts) or len(targets_l) != len(texts):
            raise ValueError(f"got {len(texts)} texts but {len(pairs_l)} pairs and {len(targets_l)} targets")
        for p in pairs_l:
            if p is not None:
                _check_text(p, "text_pair")
        if truncation not in ("warn", "error"):
            raise ValueError(f"truncation must be 'warn' or 'error', got {truncation!r}")
        kind = self.info.kind
        if kind == "encoder-decoder":
            if any(p is not None for p in pairs_l):
                raise ValueError("sentence pairs are for encoders; give an encoder-decoder a source and a target")
            targets_l = [t if t is not None else s for s, t in zip(texts, targets_l, strict=True)]
            for t in targets_l:
                _check_text(t, "target")
        elif any(t is not None for t in targets_l):
            raise ValueError(f"target text is only for encoder-decoder models; {self.info.name!r} is an {kind}")
        max_len = self.info.max_length
        tok = self.tokenizer
        firsts = list(texts)
        full = self._count(firsts, pairs_l)
        # The decoder has the same limit (the tokenizer truncates the target to it below), so count targets too.
        full_targets = self._count(targets_l, [None] * len(texts), target=True) if kind == "encoder-decoder" else []
        for i, n in enumerate(full):
            _require_tokens(texts[i], n.a, "text")
            _require_tokens(pairs_l[i], n.b, "text_pair")
        for t, n in zip(targets_l, full_targets, strict=False):
            _require_tokens(t, n.a, "target")
        kwargs: dict[str, Any] = dict(padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        if kind == "encoder-decoder":
            enc = tok(firsts, text_target=targets_l, **kwargs)
            labels = enc.pop("labels")
            labels_mask = labels != tok.pad_token_id
            enc["decoder_input_ids"] = self._shift_right(labels)
            enc["decoder_attention_mask"] = torch.cat(
                [torch.ones_like(labels_mask[:, :1]), labels_mask[:, :-1]], dim=1
            ).long()
        else:
            enc = self._tokenise(firsts, pairs_l, min(max_len, max(n.total for n in full)))
        truncated = [max(0, n.total - max_len) for n in full]
        for i, length in enumerate(full_targets):
            truncated[i] += max(0, length.total - max_len)
        if any(truncated):
            self._too_long(full, full_targets, enc, truncation)
        inputs = {k: v for k, v in enc.items() if isinstance(v, torch.Tensor)}
        return Encoded(inputs, texts, pairs_l, targets_l if kind == "encoder-decoder" else [None] * len(texts),
                       truncated, encodings=enc)

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
            (single, tok(**{"text_target" if target else "text": [texts[i] for i in single]}, **kwargs)
             if single else None),
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
        verb = "would be dropped" if truncation == "error" else "were dropped"
        end = "start" if getattr(self.tokenizer, "truncation_side", "right") == "left" else "end"
        last = "first" if end == "start" else "last"
        parts = []
        cut = [i for i, n in enumerate(full) if n.total > max_len]
        if cut:
            worst = max(cut, key=lambda i: full[i].total)
            n = full[worst]
            if n.b is None:  # a single text
                detail = f"the {last} {n.total - max_len} tokens {verb}"
            else:
                a, b = _segment_sizes(enc, worst, -1)
                if n.b < 0 or b < 0:  # the tokenizer cannot tell the segments apart
                    detail = f"{n.total - max_len} tokens {verb}, from the longer of the two texts first"
                else:
                    detail = (f"{n.total - max_len} tokens {verb}: {n.a - a} from the {end} of the text and "
                              f"{n.b - b} from the {end} of text_pair (the tokenizer shortens the longer one first)")
            parts.append(f"input is {n.total} tokens, more than {self.info.name!r} accepts ({max_len}); {detail}")
        tcut = [i for i, t in enumerate(targets) if t.total > max_len]
        if tcut:
            t = max((targets[i] for i in tcut), key=lambda t: t.total)
            parts.append(f"target is {t.total} tokens, more than the decoder of {self.info.name!r} accepts "
                         f"({max_len}); the {last} {t.total - max_len} target tokens {verb}")
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

    # -- running -------------------------------------------------------------------------------------------------

    def forward(
        self,
        enc: Encoded,
        hooks: Sequence[control.AttentionHook] = (),
        grad: bool = False,
        **kwargs: Any,
    ) -> Any:
        """One forward pass with attention weights (and hidden states) returned; counted in ``n_forward``."""
        self.n_forward += 1
        context = torch.enable_grad() if grad else torch.inference_mode()
        with context, control.attention_hooks(hooks):
            return self.model(
                **enc.inputs, output_attentions=True, output_hidden_states=True, return_dict=True, **kwargs
            )

    def run(
        self,
        text: str,
        text_pair: str | None = None,
        *,
        target: str | None = None,
        ablation: AblationLike | None = None,
        truncation: Truncation = "warn",
    ) -> AttentionResult:
        """Run one text (or sentence pair, or source + target) and return its attention; cached.

        Parameters
        ----------
        text : str
            The input (segment A; the source of an encoder-decoder).
        text_pair : str, optional
            Segment B of a sentence pair (encoders).
        target : str, optional
            Target text of an encoder-decoder (default: the source text itself).
        ablation : optional
            Heads to disable or scale; see :mod:`attnwidgets.runner.ablation`. Part of the cache key.
        truncation : {"warn", "error"}
            What to do when the text is longer than the model accepts.
        """
        _check_text(text, "text")  # before the cache key: a list would fail there as 'unhashable'
        if text_pair is not None:
            _check_text(text_pair, "text_pair")
        if target is not None:
            _check_text(target, "target")
        key = self._key(text, text_pair, target, ablation, truncation)
        hit = self.cache.get(key)
        if hit is not None:
            if hit.truncated:  # say again what was dropped (or raise): tokenising costs little, no forward pass
                self.encode([text], [text_pair], [target], truncation)
            return hit
        return self.run_batch([text], [text_pair], targets=[target], ablation=ablation, truncation=truncation)[0]

    def _key(self, text: str, pair: str | None, target: str | None, ablation: Hashable | None,
             truncation: str) -> Hashable:
        return (self.info.name, self.info.revision, text, pair, target, ablation, truncation)

    def run_batch(
        self,
        texts: Sequence[str],
        text_pairs: Sequence[str | None] | None = None,
        *,
        targets: Sequence[str | None] | None = None,
        ablation: AblationLike | None = None,
        batch_size: int = 16,
        truncation: Truncation = "warn",
        progress: bool = False,
    ) -> list[AttentionResult]:
        """Run many texts in padded batches (padding masked out of every result); each result is cached."""
        return list(self.iter_results(texts, text_pairs, targets=targets, ablation=ablation, batch_size=batch_size,
                                      truncation=truncation, progress=progress))

    def iter_results(
        self,
        texts: Sequence[str],
        text_pairs: Sequence[str | None] | None = None,
        *,
        targets: Sequence[str | None] | None = None,
        ablation: AblationLike | None = None,
        batch_size: int = 16,
        truncation: Truncation = "warn",
        progress: bool = False,
        cache: bool = True,
    ) -> Iterator[AttentionResult]:
        """Yield one result per text, in order, running the model ``batch_size`` texts at a time.

        With ``cache=False`` results are neither looked up nor stored (corpus statistics use this to keep memory
        bounded).
        """
        if isinstance(texts, str):
            raise TypeError("run_batch takes a list of texts; use run() for a single text")
        n = len(texts)
        pairs = list(text_pairs) if text_pairs is not None else [None] * n
        tgts = list(targets) if targets is not None else [None] * n
        if len(pairs) != n or len(tgts) != n:
            raise ValueError(f"got {n} texts but {len(pairs)} pairs and {len(tgts)} targets")
        for i in range(n):  # before the cache keys: a list would fail there as 'unhashable'
            _check_text(texts[i], f"texts[{i}]")
            if pairs[i] is not None:
                _check_text(pairs[i], f"text_pairs[{i}]")
            if tgts[i] is not None:
                _check_text(tgts[i], f"targets[{i}]")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        hooks = list(ablation.hooks(self.info)) if ablation is not None else []
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=n, desc=f"running {self.info.name}", unit="text")
        try:
            for start in range(0, n, batch_size):
                idx = range(start, min(n, start + batch_size))
                keys = [self._key(texts[i], pairs[i], tgts[i], ablation, truncation) for i in idx]
                found = [self.cache.get(k) if cache else None for k in keys]
                todo = [i for i, f in zip(idx, found, strict=True) if f is None]
                stale = [i for i, f in zip(idx, found, strict=True) if f is not None and f.truncated]
                if stale:  # cached but cut: say so again (or raise), as the first run did
                    self.encode([texts[i] for i in stale], [pairs[i] for i in stale], [tgts[i] for i in stale],
                                truncation)
                fresh: dict[int, AttentionResult] = {}
                if todo:
                    enc = self.encode([texts[i] for i in todo], [pairs[i] for i in todo],
                                      [tgts[i] for i in todo], truncation)
                    if hooks:  # ablated: replay the layers below the first edited one from the clean run
                        from .partial import forward_ablated

                        clean = [self._key(texts[i], pairs[i], tgts[i], None, truncation) for i in todo]
                        out = forward_ablated(self, enc, hooks, ablation, clean)
                    else:
                        out = self.forward(enc, hooks)
                    for row, i in enumerate(todo):
                        res = self._to_result(enc, out, row, ablation)
                        fresh[i] = res
                        if cache:
                            self.cache.put(keys[i - start], res, res.nbytes)
                for i, f in zip(idx, found, strict=True):
                    yield f if f is not None else fresh[i]
                if bar is not None:
                    bar.update(len(idx))
        finally:
            if bar is not None:
                bar.close()

    # -- converting ----------------------------------------------------------------------------------------------

    def token_fields(self, enc: Encoded, row: int, side: str = "source") -> dict[str, Any]:
        """Tokens, ids, word ids, segment ids and special mask of one batch row, padding removed."""
        tok = self.tokenizer
        if side == "target":
            ids_t = enc.inputs["decoder_input_ids"][row]
            valid = enc.inputs["decoder_attention_mask"][row].bool()
            ids = ids_t[valid].tolist()
            special_ids = set(tok.all_special_ids)
            special = np.array([i in special_ids for i in ids], dtype=bool)
            raw = tok.convert_ids_to_tokens(ids)
            tokens = [_display(t, s) for t, s in zip(raw, special, strict=True)]
            word = np.where(special, -1, np.cumsum(~special) - 1)
            return dict(tokens=tokens, token_ids=np.array(ids, dtype=np.int64), valid=valid, word_ids=word)
        ids_t = enc.inputs["input_ids"][row]
        valid = enc.inputs["attention_mask"][row].bool() if "attention_mask" in enc.inputs else \
            torch.ones_like(ids_t, dtype=torch.bool)
        positions = torch.nonzero(valid).flatten().tolist()
        ids = ids_t[valid].tolist()
        raw = tok.convert_ids_to_tokens(ids)
        encoding = enc.encodings.encodings[row] if getattr(enc.encodings, "encodings", None) else None
        n = len(ids)
        if encoding is not None:
            words = [encoding.word_ids[p] for p in positions]
            seqs = [encoding.sequence_ids[p] for p in positions]
            special = np.array([bool(encoding.special_tokens_mask[p]) for p in positions], dtype=bool)
        else:  # slow tokenizer: every non-special piece is its own word
            special_ids = set(tok.all_special_ids)
            special = np.array([i in special_ids for i in ids], dtype=bool)
            words = [None if s else k for k, s in enumerate(special)]
            seqs = [0] * n
        if "token_type_ids" in enc.inputs and enc.pairs[row] is not None:
            segment = enc.inputs["token_type_ids"][row][valid].numpy().astype(np.int64)
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
        tokens = [_display(t, bool(s)) for t, s in zip(raw, special, strict=True)]
        return dict(tokens=tokens, token_ids=np.array(ids, dtype=np.int64), valid=valid, word_ids=word_ids,
                    segment_ids=segment, special_mask=special)

    def _to_result(self, enc: Encoded, out: Any, row: int, ablation: Any) -> AttentionResult:
        src = self.token_fields(enc, row)
        valid = src.pop("valid")
        kind = self.info.kind
        self_att = getattr(out, "encoder_attentions" if kind == "encoder-decoder" else "attentions", None)
        if not self_att or any(a is None for a in self_att):
            raise AttentionUnavailableError(
                f"{self.info.name!r} returned no attention weights. attnwidgets needs a model whose attention layers "
                "go through transformers' attention interface (most models since transformers 5); this one computes "
                "attention its own way. Try another checkpoint of a supported architecture (BERT, GPT-2, BART, Llama)."
            )
        rows = ablation is None  # an ablation may zero or scale heads on purpose
        attention = self._attention(self_att, row, valid, valid, "self-attention" if kind != "encoder-decoder"
                                    else "encoder self-attention", rows)
        fields: dict[str, Any] = {}
        if kind == "encoder-decoder":
            tgt = self.token_fields(enc, row, side="target")
            tvalid = tgt["valid"]
            fields.update(
                target_text=enc.targets[row],
                target_tokens=tgt["tokens"],
                target_token_ids=tgt["token_ids"],
                decoder_attention=self._attention(out.decoder_attentions, row, tvalid, tvalid,
                                                  "decoder self-attention", rows),
                cross_attention=self._attention(out.cross_attentions, row, tvalid, valid, "cross-attention", rows),
            )
        return AttentionResult(
            attention=attention,
            model=self.info,
            text=enc.texts[row],
            text_pair=enc.pairs[row],
            outputs=self._outputs(enc, out, row, valid),
            ablation=ablation,
            truncated=enc.truncated[row] if enc.truncated else 0,
            **src,
            **fields,
        ).freeze()  # cached and shared by every later run of this input: nobody may write into it

    def _attention(self, layers: Sequence[torch.Tensor], row: int, qvalid: torch.Tensor, kvalid: torch.Tensor,
                   what: str, rows: bool = True) -> np.ndarray:
        """One row's [layer, head, query, key] array, checked to be attention we can show.

        Every layer must be (batch, head, query, key) over the batch's positions, and (with ``rows``) every query's
        weights must sum to 1 over the valid keys; otherwise :class:`AttentionUnavailableError` says so, rather
        than a numpy broadcast error or silently wrong maps. The check is one sum over the last axis.
        """
        name = self.info.name
        shapes = [tuple(a.shape) for a in layers]
        n_q, n_k = qvalid.shape[0], kvalid.shape[0]
        odd = next((k for k, sh in enumerate(shapes) if len(sh) != 4 or sh != shapes[0] or sh[2] != n_q
                    or sh[3] > n_k), None)
        if odd is not None:
            raise AttentionUnavailableError(
                f"{name!r} returned {what} that is not one (batch, head, query, key) map per layer over its {n_q} "
                f"positions: layer 0 is {shapes[0]}, layer {odd} is {shapes[odd]}. Models that pool or shorten the "
                "sequence between layers (such as Funnel Transformer) have no token-by-token map in every layer, so "
                "attnwidgets cannot show them; use a model of a supported architecture (BERT, GPT-2, BART, Llama)."
            )
        a = _stack(layers, row, qvalid, kvalid)
        if rows:
            dtype = layers[0].dtype
            tol = max(1e-3, torch.finfo(dtype).eps) if dtype.is_floating_point else 1e-3  # bfloat16: 8e-3
            sums = a.sum(-1)  # (L, H, n_q)
            bad = ~(np.abs(sums - 1.0) <= tol)  # NaN counts as bad
            if bad.any():
                layer, head, q = (int(x) for x in np.argwhere(bad)[0])
                raise AttentionUnavailableError(
                    f"{name!r} returned {what} weights that are not probabilities: in layer {layer}, head {head}, "
                    f"query {q}'s weights sum to {sums[layer, head, q]:.4g} over the keys, and {int(bad.sum())} of "
                    f"{bad.size} rows do not sum to 1. Its attention layers hand back something other than softmax "
                    "weights (scores, or another normalisation), so maps, entropies and rollouts would be wrong; use "
                    "a model of a supported architecture (BERT, GPT-2, BART, Llama)."
                )
        return a

    def _outputs(self, enc: Encoded, out: Any, row: int, valid: torch.Tensor) -> dict[str, np.ndarray]:
        outputs: dict[str, np.ndarray] = {}
        hidden = getattr(out, "encoder_last_hidden_state", None)
        if hidden is None:
            hidden = getattr(out, "last_hidden_state", None)
        if hidden is None and getattr(out, "hidden_states", None):
            hidden = out.hidden_states[-1]
        if hidden is not None:
            h = hidden[row][valid].float()
            outputs["embedding"] = h.mean(0).detach().numpy().astype(np.float32)
            outputs["cls_embedding"] = h[0].detach().numpy().astype(np.float32)
        pooled = getattr(out, "pooler_output", None)
        if pooled is not None:
            outputs["pooler_output"] = pooled[row].float().detach().numpy()
        logits = getattr(out, "logits", None)
        if logits is not None:
            logits = logits[row].float().detach()
            if self.head == "classification":
                outputs["logits"] = logits.numpy()
                outputs["probs"] = torch.softmax(logits, -1).numpy()
            elif self.head == "masked-lm":
                ids = enc.inputs["input_ids"][row][valid]
                positions = torch.nonzero(ids == self.tokenizer.mask_token_id).flatten()
                outputs["mask_positions"] = positions.numpy().astype(np.int64)
                outputs["mask_logits"] = logits[valid][positions].numpy()
            elif self.head == "causal-lm":
                outputs["next_token_logits"] = logits[valid][-1].numpy()
        return outputs


def _stack(layers: Sequence[torch.Tensor], row: int, qvalid: torch.Tensor, kvalid: torch.Tensor) -> np.ndarray:
    """Per-layer (B, H, T, S) tensors -> one [layer, head, query, key] float32 array for one row, padding removed.

    Each layer is copied once, straight into the output: ``torch.stack`` and a contiguous copy after it cost two to
    three times as much, and this is on the path of every run (a 512-token result of 6 x 12 heads is 75 MB).
    """
    first = layers[0][row]
    kvalid = kvalid[: first.shape[-1]]
    nq, nk = int(qvalid.sum()), int(kvalid.sum())
    prefix = bool(qvalid[:nq].all()) and bool(kvalid[:nk].all())  # right padding: slice views, no index copies
    out = np.empty((len(layers), first.shape[0], nq, nk), dtype=np.float32)  # (L, H, T, S)
    for i, layer in enumerate(layers):
        a = layer[row].detach()
        a = a[:, :nq, :nk] if prefix else a[:, qvalid][:, :, kvalid]
        out[i] = a.float().numpy()
    return out


_runners: dict[tuple[str, str | None], Runner] = {}


def get_runner(model: str | os.PathLike[str] | Runner | None = None, revision: str | None = None) -> Runner:
    """The shared runner for a model id or local folder (the bundled model when None); loaded once.

    Runners are shared by what they load, not by how it was named: ``None`` and the bundled model's folder, or a
    folder given as a relative and as an absolute path, get the same runner.
    """
    if isinstance(model, Runner):
        return model
    key = (model_key(model), revision)
    runner = _runners.get(key)
    if runner is None:
        runner = Runner(load(None if model is None else str(model), revision))
        _runners[key] = runner
    return runner


def run(
    text: str,
    text_pair: str | None = None,
    *,
    model: str | Runner | None = None,
    revision: str | None = None,
    target: str | None = None,
    ablation: AblationLike | None = None,
    truncation: Truncation = "warn",
) -> AttentionResult:
    """Run ``text`` through ``model`` (the bundled all-MiniLM-L6-v2 by default) and return its attention.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> res = aw.run("The cat sat on the mat.")
    >>> res.tokens[:3], res.attention.shape[:2]
    (['[CLS]', 'the', 'cat'], (6, 12))
    """
    return get_runner(model, revision).run(text, text_pair, target=target, ablation=ablation, truncation=truncation)


def run_batch(
    texts: Sequence[str],
    text_pairs: Sequence[str | None] | None = None,
    *,
    model: str | Runner | None = None,
    revision: str | None = None,
    batch_size: int = 16,
    progress: bool = False,
    **kwargs: Any,
) -> list[AttentionResult]:
    """Run many texts in batches with the shared runner; see :meth:`Runner.run_batch`."""
    return get_runner(model, revision).run_batch(texts, text_pairs, batch_size=batch_size, progress=progress,
                                                 **kwargs)
