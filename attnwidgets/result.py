"""The plain result object that flows from the runner to analysis, widgets and plots.

No torch in here: every array is numpy, so a result can be pickled, cached, saved and analysed anywhere. What a
result checks its arrays with (:func:`check_attention`, :class:`InvalidAttentionError`, the token and id checks of
:meth:`AttentionResult.from_arrays`) lives in :mod:`attnwidgets.result_checks`; how a long input's attention is held
as queries and keys, in :mod:`attnwidgets.attention_stack`. Both are re-exported here where users import them from.

Notation used across the package: ``attention[layer, head, query, key]`` is the weight that query position ``query``
(a row) puts on key position ``key`` (a column). Rows sum to 1 over the valid keys.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .attention_stack import AttentionTooLargeError, LazyStack, block_rows, stack_rows, stack_shape
from .html_repr import repr_html
from .result_checks import (
    SPECIAL_TEXT,
    InvalidAttentionError,
    check_attention,
    check_layer_head,
    id_array,
    real_array,
    token_list,
)

ModelKind = Literal["encoder", "decoder", "encoder-decoder"]
AttentionKind = Literal["self", "encoder", "decoder", "cross"]

__all__ = ["BUNDLED_SOURCE", "AttentionKind", "AttentionResult", "AttentionTooLargeError", "InvalidAttentionError",
           "ModelInfo", "ModelKind", "check_attention", "head_matrix"]

#: :attr:`ModelInfo.source` of the bundled default model: it loads from wherever its package is installed, so a
#: result records which model it is rather than a folder of one machine. ``attnwidgets.runner.get_runner`` takes it.
BUNDLED_SOURCE = "bundled:all-MiniLM-L6-v2"

_STACKS = ("attention", "decoder_attention", "cross_attention")


@dataclass(frozen=True)
class ModelInfo:
    """What a result needs to know about the model that made it.

    Attributes
    ----------
    name : str
        The model's display name: the hub id or folder as it was given (an absolute folder by its own name),
        ``"all-MiniLM-L6-v2 (bundled)"`` for the bundled model, or a made-up name (``"... (fine-tuned)"``, a toy
        model). It says which model it is; it is not what loads it (see ``source``).
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
    dtype : str
        What the weights were loaded in ("float32", "float16", "bfloat16"); attention is computed in float32 anyway,
        but the layers between differ in precision.
    device : str
        Where the model ran ("cpu", "cuda:0", "mps").
    commit : str | None
        What exactly was loaded: the hub commit hash of the files, or ``"config-sha256:<hex>"`` (a hash of
        ``config.json``) for a local folder; None when unknown. Saved files are tagged with it
        (:mod:`attnwidgets.persist`).
    source : str | None
        What loads this model again, with ``revision``: ``attnwidgets.runner.get_runner(info.source, info.revision,
        device=info.device, dtype=info.dtype)``. The hub id, the local folder as an absolute path, or
        :data:`BUNDLED_SOURCE`; None for a model that cannot be loaded again by a name (fine-tuned in memory, a toy
        model, a result built from arrays, a file saved before this field existed).
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
    dtype: str = "float32"
    device: str = "cpu"
    commit: str | None = None
    source: str | None = None


@dataclass(frozen=True, eq=False)
class AttentionResult:
    """Tokens and attention of one input, as numpy arrays.

    For an encoder or decoder, ``tokens`` are the input tokens and ``attention`` is the self-attention. For an
    encoder-decoder, ``tokens``/``attention`` are the source side (encoder self-attention) and the ``target_*`` fields
    hold the decoder side: ``decoder_attention`` (causal, target × target) and ``cross_attention`` (target × source).

    Attributes
    ----------
    tokens : list[str]
        Display text of each token, (n,): the text it stands for (see :mod:`attnwidgets.token_text`; a byte-level
        BPE "ĠcafÃ©" is " café", a character cut between tokens is whole on the token that completes it).
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
        [layer, head, query, key] float32, (L, H, n, n). Padding is never included. A long input's attention is held
        as queries and keys (``is_lazy``; :mod:`attnwidgets.attention_stack`): this array is built on first access
        when it fits :func:`~attnwidgets.attention_stack.dense_budget`, else :class:`AttentionTooLargeError` is raised;
        :meth:`head`, :meth:`rows` and :meth:`iter_blocks` read any length.
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

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

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
        shape = tuple(self.stack("self").shape)
        if len(shape) != 4 or shape[2:] != (n, n):
            raise ValueError(
                f"attention must be [layer, head, query, key] with {n} queries and keys, "
                f"got shape {shape}"
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
        return stack_shape(self.stack("self"))[0]

    @property
    def n_heads(self) -> int:
        return stack_shape(self.stack("self"))[1]

    # -- attention at any length -----------------------------------------------------------------------------------

    def stack(self, kind: AttentionKind = "self") -> np.ndarray | LazyStack:
        """The attention of ``kind`` as it is held: a dense array, or a :class:`~attnwidgets.attention_stack.LazyStack`
        of queries and keys for a long input. Nothing is computed; use it to pass attention on without building it."""
        name = {"self": "attention", "encoder": "attention", "decoder": "decoder_attention",
                "cross": "cross_attention"}.get(kind)
        if name is None:
            raise ValueError(f"unknown attention kind {kind!r}; choose one of 'self', 'encoder', 'decoder', 'cross'")
        held = self.__dict__[name]
        if held is None:
            raise ValueError(f"this result has no {kind!r} attention: it came from a {self.model.kind} model")
        return held

    @property
    def is_lazy(self) -> bool:
        """Whether attention is kept as queries and keys (a long input) rather than as a dense array."""
        return isinstance(self.__dict__["attention"], LazyStack)

    def attention_shape(self, kind: AttentionKind = "self") -> tuple[int, int, int, int]:
        """(layers, heads, queries, keys) of one kind of attention, without building it."""
        return stack_shape(self.stack(kind))

    def dense_nbytes(self, kind: AttentionKind = "self") -> int:
        """Bytes the dense float32 ``[layer, head, query, key]`` array of ``kind`` takes (or would take)."""
        return int(np.prod(self.attention_shape(kind), dtype=np.int64)) * 4

    def head(self, layer: int, head: int, kind: AttentionKind = "self") -> np.ndarray:
        """One head's (query, key) weights, float32; ``head=-1`` is the mean over the layer's heads.

        Works at any length: a long input's head is rebuilt from its queries and keys.

        Examples
        --------
        >>> r = AttentionResult.from_arrays(np.full((1, 2, 2, 2), 0.5, np.float32), ["a", "b"])
        >>> r.head(0, 1).tolist(), r.head(0, -1).shape
        ([[0.5, 0.5], [0.5, 0.5]], (2, 2))
        """
        L, H, T, _S = self.attention_shape(kind)
        check_layer_head(layer, head, L, H)
        return self.rows(layer, 0, T, kind=kind, head=head)

    def rows(self, layer: int, start: int, stop: int, kind: AttentionKind = "self",
             head: int | None = None) -> np.ndarray:
        """Rows ``start..stop`` (queries) of a layer: (head, rows, key) for all heads, (rows, key) for one head, or
        their mean with ``head=-1``. The way to read a long input's attention a block at a time.

        Examples
        --------
        >>> r = AttentionResult.from_arrays(np.eye(3, dtype=np.float32)[None, None], ["a", "b", "c"])
        >>> r.rows(0, 1, 3).shape, r.rows(0, 2, 3, head=0).tolist()
        ((1, 2, 3), [[0.0, 0.0, 1.0]])
        """
        L, H, T, _S = self.attention_shape(kind)
        check_layer_head(layer, -1 if head is None else head, L, H)
        if not (isinstance(start, (int, np.integer)) and isinstance(stop, (int, np.integer))) \
                or not 0 <= start <= stop <= T:
            raise IndexError(f"rows {start!r}..{stop!r} are outside the {T} queries (0 <= start <= stop <= {T})")
        return stack_rows(self.stack(kind), layer, int(start), int(stop), head)

    def iter_blocks(self, kind: AttentionKind = "self", rows: int | None = None,
                    layers: Sequence[int] | None = None) -> Iterator[tuple[int, int, int, np.ndarray]]:
        """``(layer, start, stop, block)`` through every layer in blocks of rows; ``block`` is (head, rows, key).

        The block height defaults to what fits in 32 MB, so any statistic that is a sum or mean over rows can be
        computed at any length with bounded memory. A long input's next block is rebuilt in a second thread while the
        caller works on the current one (numpy releases the GIL), so rebuilding and measuring share two cores; at most
        two blocks are alive.

        Examples
        --------
        >>> r = AttentionResult.from_arrays(np.full((2, 1, 4, 4), 0.25, np.float32), list("abcd"))
        >>> [(l, a, b) for l, a, b, _ in r.iter_blocks(rows=3)]
        [(0, 0, 3), (0, 3, 4), (1, 0, 3), (1, 3, 4)]
        """
        L, H, T, S = self.attention_shape(kind)
        step = rows or block_rows(H, S)
        if step < 1:
            raise ValueError(f"rows must be at least 1, got {rows}")
        stack = self.stack(kind)
        spans = [(layer, start, min(T, start + step))
                 for layer in (range(L) if layers is None else layers) for start in range(0, T, step)]
        if not isinstance(stack, LazyStack) or len(spans) < 2:
            for layer, start, stop in spans:
                yield layer, start, stop, stack_rows(stack, layer, start, stop)
            return
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="attnwidgets-blocks")
        try:
            ahead = pool.submit(stack_rows, stack, *spans[0])
            for i, (layer, start, stop) in enumerate(spans):
                block = ahead.result()
                if i + 1 < len(spans):
                    ahead = pool.submit(stack_rows, stack, *spans[i + 1])
                yield layer, start, stop, block
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    @property
    def kinds(self) -> list[AttentionKind]:
        """Attention kinds this result holds: ``["self"]``, or ``["encoder", "decoder", "cross"]``."""
        if self.__dict__["cross_attention"] is None:
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
        if self.__dict__["cross_attention"] is None or self.__dict__["decoder_attention"] is None \
                or self.target_tokens is None:
            raise ValueError(f"this result has no {kind!r} attention: it came from a {self.model.kind} model")
        if kind == "decoder":
            return _dense(self.decoder_attention), self.target_tokens, self.target_tokens
        if kind == "cross":
            return _dense(self.cross_attention), self.target_tokens, self.tokens
        raise ValueError(f"unknown attention kind {kind!r}; choose one of 'self', 'encoder', 'decoder', 'cross'")

    def with_attention(self, attention: np.ndarray | LazyStack, **changes: Any) -> AttentionResult:
        """A copy with another attention array (e.g. a word-level or ablated one)."""
        return self.replace(attention=attention, **changes)

    def replace(self, **changes: Any) -> AttentionResult:
        """A copy with some fields changed (``dataclasses.replace``, but a long input's attention is passed on as
        queries and keys rather than built)."""
        fields_ = {f.name: self.__dict__[f.name] for f in self.__dataclass_fields__.values() if f.init}
        fields_.update(changes)
        return type(self)(**fields_)

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
        for v in self.__dict__.values():
            if isinstance(v, LazyStack):
                v.freeze()
        return self

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (what the result cache counts)."""
        total = 0
        for value in self.__dict__.values():
            if isinstance(value, (np.ndarray, LazyStack)):
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
        sinks: bool = False,
        tol: float = 1e-3,
        copy: bool = True,
        **fields: Any,
    ) -> AttentionResult:
        """Wrap a bare attention array ``[layer, head, query, key]`` (or ``[head, q, k]`` / ``[q, k]``) as a result.

        Handy for tests, for attention from other tools, and for the teaching kit's toy models. The arrays are
        checked as the runner checks a model's (:func:`check_attention`: finite, not negative, each row summing to
        1 over the keys), copied, and the result is frozen like the runner's (:meth:`freeze`): the caller's own
        arrays stay theirs to change.

        Parameters
        ----------
        attention : np.ndarray
            Real numbers, [layer, head, query, key], (head, query, key) or (query, key), over ``len(tokens)``
            queries and keys.
        tokens : list of str
            At least one token.
        word_ids, segment_ids, special_mask : np.ndarray, optional
            (n,) each: word index or -1, segment 0 (A) or 1 (B), True for tokens the tokenizer added. By default
            tokens such as "[CLS]" are special and every other token is a word of its own in segment A.
        name, kind
            The model's name and family (``kind="decoder"`` for causal self-attention).
        sinks : bool
            The model has learned attention sinks (gpt-oss): rows may sum to less than 1 (more than 0).
        tol : float
            How far from 1 a row may sum (the runner allows 2**-7 for a bfloat16 model).
        copy : bool
            Default True: the result keeps copies. False: it keeps float32 attention arrays and ndarray outputs as
            they are and makes them read-only in place, for arrays nobody else holds (the loader's, fresh from a
            file): a 512-token 12 x 12 result's copy was 0.5 s of opening its file.
        **fields
            Any other field of :class:`AttentionResult` (``text``, ``target_tokens``, ``cross_attention``,
            ``model``, ``outputs``...). With an ``ablation``, rows may sum to less than 1 (zeroed or scaled heads).

        Raises
        ------
        ValueError
            For attention that is not real numbers or not probabilities (:class:`InvalidAttentionError`, saying
            where), no tokens, tokens that are not strings, or ids outside their ranges.

        Examples
        --------
        >>> import numpy as np
        >>> r = AttentionResult.from_arrays(np.eye(3, dtype=np.float32), ["[CLS]", "hi", "[SEP]"])
        >>> r.attention.shape, int(r.special_mask.sum()), r.attention.flags.writeable
        ((1, 1, 3, 3), 2, False)
        >>> AttentionResult.from_arrays(np.full((2, 2), 0.6), ["a", "b"])
        Traceback (most recent call last):
        ...
        attnwidgets.result_checks.InvalidAttentionError: from_arrays got attention weights that are not \
probabilities: in layer 0, head 0, query 0's weights sum to 1.2 over the keys, and 2 of 2 rows do not sum to 1
        """
        a = real_array(attention, "attention", copy)
        while a.ndim < 4:
            a = a[None]
        tokens = token_list(tokens, "tokens")
        n = len(tokens)
        if special_mask is None:
            special_mask = np.array([t in SPECIAL_TEXT for t in tokens], dtype=bool)
        special = id_array(special_mask, "special_mask", n, bool)
        if word_ids is None:
            word_ids = np.where(special, -1, np.cumsum(~special) - 1)
        words = id_array(word_ids, "word_ids", n, np.int64)
        if words.size and words.min() < -1:
            raise ValueError(f"word_ids must be a word index (0, 1, ...) or -1 for special tokens; got {words.min()}")
        segments = id_array(np.zeros(n, np.int64) if segment_ids is None else segment_ids, "segment_ids", n, np.int64)
        odd = segments[(segments != 0) & (segments != 1)]
        if odd.size:
            raise ValueError(f"segment_ids must be 0 (segment A) or 1 (segment B) for every token; got {odd[0]}")
        token_ids = id_array(fields.pop("token_ids", np.arange(n, dtype=np.int64)), "token_ids", n, np.int64)
        for key in ("decoder_attention", "cross_attention"):
            if fields.get(key) is not None:
                fields[key] = real_array(fields[key], key, copy)
        if fields.get("target_tokens") is not None:
            fields["target_tokens"] = token_list(fields["target_tokens"], "target_tokens")
            m = len(fields["target_tokens"])
            fields["target_token_ids"] = id_array(fields.get("target_token_ids", np.arange(m, dtype=np.int64)),
                                              "target_token_ids", m, np.int64)
        fields["outputs"] = {k: (np.array(v) if copy else v) if isinstance(v, np.ndarray) else v
                             for k, v in fields.get("outputs", {}).items()}
        info = ModelInfo(name=name, kind=kind, n_layers=a.shape[0], n_heads=a.shape[1], max_length=max(n, 1))
        result = cls(
            tokens=tokens,
            token_ids=token_ids,
            word_ids=words,
            segment_ids=segments,
            special_mask=special,
            attention=a,
            model=fields.pop("model", info),
            **fields,
        )
        ablated = result.ablation is not None
        check_attention(result.attention, "from_arrays got attention", sinks=sinks, ablated=ablated, tol=tol)
        for key, what in (("decoder_attention", "decoder attention"), ("cross_attention", "cross-attention")):
            if getattr(result, key) is not None:
                check_attention(getattr(result, key), f"from_arrays got {what}", ablated=ablated, tol=tol)
        return result.freeze()

    def __repr__(self) -> str:
        text = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        extra = f", target={len(self.target_tokens)} tokens" if self.target_tokens is not None else ""
        abl = ", ablated" if self.ablation else ""
        return (
            f"AttentionResult({self.model.name!r}, {text!r}, {self.n_tokens} tokens, "
            f"{self.n_layers} layers x {self.n_heads} heads{extra}{abl})"
        )


def _stack_property(name: str, what: str) -> property:
    """``result.attention`` (and the decoder and cross stacks): the dense array, built from queries and keys when the
    result holds them and it fits :func:`~attnwidgets.attention_stack.dense_budget`, else a clear error."""

    def get(self: AttentionResult) -> Any:
        held = self.__dict__[name]
        if isinstance(held, LazyStack):
            return held.dense(what)
        return held

    def set_(self: AttentionResult, value: Any) -> None:  # the dataclass __init__ only; frozen otherwise
        self.__dict__[name] = value

    return property(get, set_, doc=f"{what}, dense [layer, head, query, key] float32 (see AttentionResult.stack)")


for _name, _what in zip(_STACKS, ("the attention", "the decoder attention", "the cross-attention"), strict=True):
    setattr(AttentionResult, _name, _stack_property(_name, _what))


def _dense(held: np.ndarray | None) -> np.ndarray:
    if held is None:
        raise ValueError("this result has no attention of that kind")
    return held


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
