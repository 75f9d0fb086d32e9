"""The plain result object that flows from the runner to analysis, widgets and plots.

No torch in here: every array is numpy, so a result can be pickled, cached, saved and analysed anywhere.

Notation used across the package: ``attention[layer, head, query, key]`` is the weight that query position ``query``
(a row) puts on key position ``key`` (a column). Rows sum to 1 over the valid keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

ModelKind = Literal["encoder", "decoder", "encoder-decoder"]
AttentionKind = Literal["self", "encoder", "decoder", "cross"]

__all__ = ["AttentionKind", "AttentionResult", "ModelInfo", "ModelKind", "head_matrix"]


@dataclass(frozen=True)
class ModelInfo:
    """What a result needs to know about the model that made it.

    Attributes
    ----------
    name : str
        Hub id or local path the model was loaded from.
    kind : {"encoder", "decoder", "encoder-decoder"}
        Architecture family. Decoders have causal self-attention.
    n_layers, n_heads : int
        Layers and query heads of the self-attention stack (the encoder's for encoder-decoders).
    max_length : int
        Most tokens the model accepts (its position table, or the tokenizer's limit).
    revision : str | None
        Hub revision, if one was asked for.
    model_type : str
        ``config.model_type`` ("bert", "gpt2", "bart", ...).
    n_kv_heads : int
        Key/value heads (fewer than ``n_heads`` for grouped-query attention).
    head_dim : int
        Size of one head's query/key vectors.
    n_decoder_layers, n_decoder_heads : int
        For encoder-decoders: the decoder stack's shape (0 otherwise).
    """

    name: str
    kind: ModelKind
    n_layers: int
    n_heads: int
    max_length: int
    revision: str | None = None
    model_type: str = ""
    n_kv_heads: int = 0
    head_dim: int = 0
    n_decoder_layers: int = 0
    n_decoder_heads: int = 0


@dataclass(frozen=True, eq=False)
class AttentionResult:
    """Tokens and attention of one input, as numpy arrays.

    For an encoder or decoder, ``tokens`` are the input tokens and ``attention`` is the self-attention. For an
    encoder-decoder, ``tokens``/``attention`` are the source side (encoder self-attention) and the ``target_*`` fields
    hold the decoder side: ``decoder_attention`` (causal, target × target) and ``cross_attention`` (target × source).

    Attributes
    ----------
    tokens : list[str]
        Display text of each token, (n,). Byte-level BPE markers ("Ġ", "▁") become a leading space.
    token_ids : np.ndarray
        (n,) int64 vocabulary ids.
    word_ids : np.ndarray
        (n,) int64: index of the word each piece belongs to, -1 for special tokens ([CLS], [SEP], <s>, ...).
        Word indices restart at 0 in the second segment of a pair only if the tokenizer does so; use
        ``segment_ids`` together with ``word_ids`` to tell words apart.
    segment_ids : np.ndarray
        (n,) int64: 0 for segment A, 1 for segment B of a sentence pair.
    special_mask : np.ndarray
        (n,) bool: True for tokens the tokenizer added ([CLS], [SEP], BOS, EOS).
    attention : np.ndarray
        [layer, head, query, key] float32, (L, H, n, n). Padding is never included.
    model : ModelInfo
        Which model made this.
    text : str
        The input text (segment A, or the source for encoder-decoders).
    text_pair : str | None
        Segment B of a sentence pair.
    target_text : str | None
        Target text of an encoder-decoder run.
    target_tokens, target_token_ids : list[str], np.ndarray
        Decoder-side tokens (m,), encoder-decoders only.
    decoder_attention : np.ndarray | None
        [layer, head, target_query, target_key] float32, (Ld, Hd, m, m), causal.
    cross_attention : np.ndarray | None
        [layer, head, target_query, source_key] float32, (Ld, Hd, m, n).
    outputs : dict[str, np.ndarray]
        Cheap model outputs: ``"embedding"`` (hidden,) mean-pooled last hidden state over valid tokens;
        ``"cls_embedding"`` (hidden,); ``"logits"`` (classes,) for classifiers; ``"mask_logits"`` (n_masks, vocab)
        at [MASK] positions for masked-LM models; ``"next_token_logits"`` (vocab,) for causal LMs.
    ablation : Any
        The ablation that was applied (None for a plain run). Part of the cache key.
    truncated : int
        How many tokens were dropped to fit ``model.max_length`` (source and target together for encoder-decoders:
        the decoder has the same limit).
    """

    tokens: list[str]
    token_ids: np.ndarray
    word_ids: np.ndarray
    segment_ids: np.ndarray
    special_mask: np.ndarray
    attention: np.ndarray
    model: ModelInfo
    text: str = ""
    text_pair: str | None = None
    target_text: str | None = None
    target_tokens: list[str] | None = None
    target_token_ids: np.ndarray | None = None
    decoder_attention: np.ndarray | None = None
    cross_attention: np.ndarray | None = None
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    ablation: Any = None
    truncated: int = 0

    def __post_init__(self) -> None:
        n = len(self.tokens)
        if self.attention.ndim != 4 or self.attention.shape[2:] != (n, n):
            raise ValueError(
                f"attention must be [layer, head, query, key] with {n} queries and keys, "
                f"got shape {self.attention.shape}"
            )
        for name in ("token_ids", "word_ids", "segment_ids", "special_mask"):
            arr = getattr(self, name)
            if arr.shape != (n,):
                raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")

    # -- shape helpers -------------------------------------------------------------------------------------------

    @property
    def n_tokens(self) -> int:
        """Number of (source) tokens n."""
        return len(self.tokens)

    @property
    def n_layers(self) -> int:
        return int(self.attention.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.attention.shape[1])

    @property
    def kinds(self) -> list[AttentionKind]:
        """Attention kinds this result holds: ``["self"]``, or ``["encoder", "decoder", "cross"]``."""
        if self.cross_attention is None:
            return ["self"]
        return ["encoder", "decoder", "cross"]

    def attention_of(self, kind: AttentionKind = "self") -> tuple[np.ndarray, list[str], list[str]]:
        """Return ``(attention [layer, head, query, key], query_tokens, key_tokens)`` for one kind of attention.

        ``"self"`` and ``"encoder"`` are the same array (the model's first self-attention stack).

        Examples
        --------
        >>> import numpy as np
        >>> from attnwidgets.result import AttentionResult, ModelInfo
        >>> r = AttentionResult.from_arrays(np.full((1, 1, 2, 2), 0.5, np.float32), ["a", "b"])
        >>> r.attention_of("self")[0].shape
        (1, 1, 2, 2)
        """
        if kind in ("self", "encoder"):
            return self.attention, self.tokens, self.tokens
        if self.cross_attention is None or self.decoder_attention is None or self.target_tokens is None:
            raise ValueError(f"this result has no {kind!r} attention: it came from a {self.model.kind} model")
        if kind == "decoder":
            return self.decoder_attention, self.target_tokens, self.target_tokens
        if kind == "cross":
            return self.cross_attention, self.target_tokens, self.tokens
        raise ValueError(f"unknown attention kind {kind!r}; choose one of 'self', 'encoder', 'decoder', 'cross'")

    def with_attention(self, attention: np.ndarray, **changes: Any) -> AttentionResult:
        """A copy with another attention array (e.g. a word-level or ablated one)."""
        return replace(self, attention=attention, **changes)

    def freeze(self) -> AttentionResult:
        """Make every array of this result read-only, in place, and return it.

        The runner freezes each result it builds: cached results are shared by every later run of the same input,
        so a write such as ``r.attention[:] = 0`` would otherwise change what they all see. Copy an array
        (``r.attention.copy()``) to change it, or build a new result with :meth:`with_attention`.

        Examples
        --------
        >>> import numpy as np
        >>> r = AttentionResult.from_arrays(np.full((1, 1, 2, 2), 0.5, np.float32), ["a", "b"]).freeze()
        >>> r.attention.flags.writeable, r.word_ids.flags.writeable
        (False, False)
        """
        arrays = [v for v in self.__dict__.values() if isinstance(v, np.ndarray)]
        arrays += [v for v in self.outputs.values() if isinstance(v, np.ndarray)]
        for a in arrays:
            a.flags.writeable = False
        return self

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (what the result cache counts)."""
        total = 0
        for value in self.__dict__.values():
            if isinstance(value, np.ndarray):
                total += value.nbytes
        total += sum(v.nbytes for v in self.outputs.values() if isinstance(v, np.ndarray))
        return total

    @classmethod
    def from_arrays(
        cls,
        attention: np.ndarray,
        tokens: list[str],
        *,
        word_ids: np.ndarray | None = None,
        segment_ids: np.ndarray | None = None,
        special_mask: np.ndarray | None = None,
        name: str = "arrays",
        kind: ModelKind = "encoder",
        **fields: Any,
    ) -> AttentionResult:
        """Wrap a bare attention array ``[layer, head, query, key]`` (or ``[head, q, k]`` / ``[q, k]``) as a result.

        Handy for tests, for attention from other tools, and for the teaching kit's toy models.

        Examples
        --------
        >>> import numpy as np
        >>> r = AttentionResult.from_arrays(np.eye(3, dtype=np.float32), ["[CLS]", "hi", "[SEP]"])
        >>> r.attention.shape, int(r.special_mask.sum())
        ((1, 1, 3, 3), 2)
        """
        a = np.asarray(attention, dtype=np.float32)
        while a.ndim < 4:
            a = a[None]
        n = len(tokens)
        if special_mask is None:
            special_mask = np.array([t in _SPECIAL_TEXT for t in tokens], dtype=bool)
        if word_ids is None:
            word_ids = np.where(special_mask, -1, np.cumsum(~special_mask) - 1)
        if segment_ids is None:
            segment_ids = np.zeros(n, dtype=np.int64)
        info = ModelInfo(name=name, kind=kind, n_layers=a.shape[0], n_heads=a.shape[1], max_length=max(n, 1))
        return cls(
            tokens=list(tokens),
            token_ids=fields.pop("token_ids", np.arange(n, dtype=np.int64)),
            word_ids=np.asarray(word_ids, dtype=np.int64),
            segment_ids=np.asarray(segment_ids, dtype=np.int64),
            special_mask=np.asarray(special_mask, dtype=bool),
            attention=a,
            model=fields.pop("model", info),
            **fields,
        )

    def __repr__(self) -> str:
        text = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        extra = f", target={len(self.target_tokens)} tokens" if self.target_tokens is not None else ""
        abl = ", ablated" if self.ablation else ""
        return (
            f"AttentionResult({self.model.name!r}, {text!r}, {self.n_tokens} tokens, "
            f"{self.n_layers} layers x {self.n_heads} heads{extra}{abl})"
        )


_SPECIAL_TEXT = {"[CLS]", "[SEP]", "[PAD]", "[MASK]", "<s>", "</s>", "<pad>", "<|endoftext|>", "<bos>", "<eos>"}


def head_matrix(attention: np.ndarray, layer: int, head: int) -> np.ndarray:
    """The (query, key) map of one head, or the mean over the layer's heads when ``head == -1``.

    Parameters
    ----------
    attention : np.ndarray
        [layer, head, query, key].

    Examples
    --------
    >>> a = np.arange(16, dtype=np.float32).reshape(1, 2, 2, 4)
    >>> head_matrix(a, 0, -1).tolist()
    [[4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]
    """
    n_layers, n_heads = attention.shape[:2]
    if not 0 <= layer < n_layers:
        raise IndexError(f"layer {layer} is out of range: the model has {n_layers} layers (0..{n_layers - 1})")
    if head == -1:
        return attention[layer].mean(axis=0)
    if not 0 <= head < n_heads:
        raise IndexError(
            f"head {head} is out of range: layer {layer} has {n_heads} heads (0..{n_heads - 1}, -1 = mean)"
        )
    return attention[layer, head]
