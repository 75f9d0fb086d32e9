"""The attention profile of a query span along the document: how much attention each key token (or sentence, or
paragraph) receives from the span, for one head, the mean of a layer's heads, or any list of heads.

What :class:`~attnwidgets.widgets.AttentionProfile` draws and :func:`~attnwidgets.plots.plot_profile` plots. Every
number is read through ``result.rows`` a block of query rows at a time, so a long input's result (attention held as
queries and keys) is never built as a dense ``[layer, head, query, key]`` array.

>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> a = np.array([[[[1, 0, 0], [.5, .5, 0], [.2, .3, .5]]]], np.float32)   # 1 layer, 1 head, 3 x 3
>>> r = AttentionResult.from_arrays(a, ["Hi", ".", " Yes"])
>>> [round(float(v), 2) for v in query_profile(r, 0, (1, 3), head=0)]     # mean of query rows 1 and 2
[0.35, 0.4, 0.25]
>>> unit_starts(r.tokens, "sentence").tolist(), unit_sums([0.35, 0.4, 0.25], [0, 2]).round(2).tolist()
([0, 2], [0.75, 0.25])
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..attention_stack import block_rows
from ..result import AttentionResult
from .checks import check_head, check_int, check_kind, check_layer

__all__ = [
    "UNITS",
    "check_heads",
    "check_span",
    "check_unit",
    "default_query",
    "document_pieces",
    "key_side",
    "query_profile",
    "query_tokens",
    "unit_of",
    "unit_starts",
    "unit_sums",
    "view_shape",
]

#: What a profile adds keys up into: single tokens, sentences (ended by ".", "!" or "?"), paragraphs (ended by a
#: blank line, "\n\n").
UNITS = ("token", "sentence", "paragraph")

_ENDS = ".!?。！？"
_CLOSERS = "\"'”’»)]"
_TIGHT = ".,;:!?)]}%…。，、！？"


def check_unit(unit: Any) -> str:
    """One of :data:`UNITS`.

    >>> check_unit("word")
    Traceback (most recent call last):
    ...
    ValueError: unknown unit 'word'; choose one of ('token', 'sentence', 'paragraph')
    """
    if not isinstance(unit, str) or unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; choose one of {UNITS}")
    return unit


def check_span(query: Any, n_queries: int) -> tuple[int, int]:
    """A query span ``(start, stop)`` (stop exclusive) within ``n_queries``; an int ``i`` is the span ``(i, i + 1)``.

    >>> check_span(3, 5), check_span([1, 4], 5)
    ((3, 4), (1, 4))
    >>> check_span((2, 2), 5)
    Traceback (most recent call last):
    ...
    ValueError: query span (2, 2) is empty: give (start, stop) with start < stop, e.g. (2, 3) for token 2
    >>> check_span(5, 5)
    Traceback (most recent call last):
    ...
    ValueError: query 5 is out of range: there are 5 query tokens (0..4)
    """
    if isinstance(query, numbers.Integral) and not isinstance(query, bool):
        start = int(query)
        if not 0 <= start < n_queries:
            raise ValueError(f"query {start} is out of range: there are {n_queries} query tokens "
                             f"(0..{n_queries - 1})")
        return start, start + 1
    if not isinstance(query, (tuple, list)) or len(query) != 2:
        raise TypeError(f"query must be a token index or a (start, stop) span, got {type(query).__name__} "
                        f"{query!r}")
    start, stop = check_int(query[0], "query start"), check_int(query[1], "query stop")
    if start >= stop:
        raise ValueError(f"query span ({start}, {stop}) is empty: give (start, stop) with start < stop, "
                         f"e.g. ({start}, {start + 1}) for token {start}")
    if start < 0 or stop > n_queries:
        raise ValueError(f"query span ({start}, {stop}) is out of range: there are {n_queries} query tokens "
                         f"(a span runs from 0 up to {n_queries})")
    return start, stop


def check_heads(head: Any, n_heads: int) -> int | tuple[int, ...]:
    """One head, -1 (the mean of every head), or a non-empty list of distinct heads (their mean).

    >>> check_heads(-1, 4), check_heads([2, 0], 4)
    (-1, (2, 0))
    >>> check_heads([], 4)
    Traceback (most recent call last):
    ...
    ValueError: heads [] is empty: give one head, -1 for the mean of all heads, or a list of heads
    """
    if isinstance(head, (list, tuple)):
        if not head:
            raise ValueError(f"heads {list(head)} is empty: give one head, -1 for the mean of all heads, "
                             "or a list of heads")
        heads = tuple(check_head(h, n_heads, allow_mean=False) for h in head)
        if len(set(heads)) != len(heads):
            raise ValueError(f"heads {list(heads)} repeat a head; list each head once")
        return heads
    return check_head(head, n_heads)


def view_shape(result: AttentionResult, kind: Any, layer: Any, head: Any) -> tuple[str, int, int | tuple[int, ...]]:
    """(kind, layer, head or heads) checked against the result's shapes without building its attention (unlike
    :func:`~attnwidgets.viewdata.checks.check_view`, which reads a dense array's shape), with the checks' messages.

    >>> r = AttentionResult.from_arrays(np.full((2, 3, 2, 2), .5, np.float32), ["a", "b"])
    >>> view_shape(r, "self", 1, [0, 2])
    ('self', 1, (0, 2))
    """
    if not isinstance(result, AttentionResult):
        raise TypeError(f"expected an AttentionResult (from attnwidgets.run), got {type(result).__name__}")
    kind = check_kind(result, kind)
    n_layers, n_heads, _, _ = result.attention_shape(kind)  # type: ignore[arg-type]
    return kind, check_layer(layer, n_layers), check_heads(head, n_heads)


def key_side(result: AttentionResult, kind: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(key tokens, special mask, word ids) of ``kind`` attention: the source for self/encoder/cross, the target for
    decoder (whose special tokens and words are not known: none marked, every token its own word)."""
    if kind in ("self", "encoder", "cross"):
        return list(result.tokens), np.asarray(result.special_mask, bool), np.asarray(result.word_ids)
    target = list(result.target_tokens or [])
    return target, np.zeros(len(target), bool), np.arange(len(target))


def query_tokens(result: AttentionResult, kind: str) -> list[str]:
    """The query tokens of ``kind`` attention (the target's for decoder and cross)."""
    return list(result.tokens) if kind in ("self", "encoder") else list(result.target_tokens or [])


def default_query(result: AttentionResult, kind: str = "self") -> tuple[int, int]:
    """The query span a profile starts from: the last token that is not a special token ([SEP], </s>), whose
    attention is "what the model looks at" at the end of the text.

    >>> r = AttentionResult.from_arrays(np.full((1, 1, 3, 3), 1 / 3, np.float32), ["[CLS]", "hi", "[SEP]"])
    >>> default_query(r)
    (1, 2)
    """
    tokens = query_tokens(result, kind)
    special = np.asarray(result.special_mask, bool) if kind in ("self", "encoder") else np.zeros(len(tokens), bool)
    plain = np.flatnonzero(~special)
    last = int(plain[-1]) if len(plain) else len(tokens) - 1
    return last, last + 1


def query_profile(result: AttentionResult, layer: int, query: Any, head: Any = -1, kind: str = "self",
                  rows: int | None = None) -> np.ndarray:
    """(key,) float32: the attention each key receives from the query span, averaged over the span's rows and over
    the heads asked for (``head=-1``: every head; a list: those heads).

    Reads ``rows`` query rows at a time through ``result.rows`` (default: what fits in 32 MB), so it works on a
    result of any length. Rows of a softmax sum to 1, so the profile does too.

    >>> b = np.zeros((1, 2, 3, 3), np.float32); b[0, 0, :, 0] = 1; b[0, 1, :, 2] = 1
    >>> r = AttentionResult.from_arrays(b, list("abc"))
    >>> query_profile(r, 0, 1, head=-1).tolist(), query_profile(r, 0, (0, 3), head=[1]).tolist()
    ([0.5, 0.0, 0.5], [0.0, 0.0, 1.0])
    """
    kind, layer, heads = view_shape(result, kind, layer, head)
    _, n_heads, n_queries, n_keys = result.attention_shape(kind)  # type: ignore[arg-type]
    start, stop = check_span(query, n_queries)
    # every head is computed for a list or the mean (-1): block by what all heads' rows take
    step = rows or block_rows(1 if isinstance(heads, int) and heads >= 0 else n_heads, n_keys)
    total = np.zeros(n_keys, np.float64)
    for a in range(start, stop, step):
        b = min(stop, a + step)
        if isinstance(heads, tuple):
            block = result.rows(layer, a, b, kind=kind, head=None)[list(heads)]  # type: ignore[arg-type]
            total += block.sum(axis=(0, 1), dtype=np.float64) / len(heads)
        else:
            total += result.rows(layer, a, b, kind=kind, head=heads).sum(axis=0, dtype=np.float64)  # type: ignore[arg-type]
    return (total / (stop - start)).astype(np.float32)


def _ends_sentence(token: str) -> bool:
    text = token.rstrip().rstrip(_CLOSERS)
    return bool(text) and text[-1] in _ENDS


def unit_starts(tokens: Sequence[str], unit: str,
                special_mask: Sequence[bool] | np.ndarray | None = None) -> np.ndarray:
    """(units,) int64: the first token of each unit; unit ``i`` is tokens ``starts[i]..starts[i + 1]``.

    A sentence ends after a token whose text ends in ".", "!" or "?" (closing quotes or brackets after it allowed) and
    at every paragraph end; a paragraph ends after a token that holds a blank line ("\\n\\n", also split over two
    tokens "\\n" + "\\n"). Special tokens ([CLS], [SEP], <s>) never start a unit of their own: they join the one
    before (the first one, the one after). Tokenizers that drop newlines (BERT's WordPiece) give one paragraph.

    >>> unit_starts(["[CLS]", "Hi", ".", " Yes", "!", "\\n\\n", "Ok", "[SEP]"], "sentence",
    ...             [True, False, False, False, False, False, False, True]).tolist()
    [0, 3, 6]
    >>> unit_starts(["A", ".", "\\n", "\\n", "B", ".", " C"], "paragraph").tolist()
    [0, 4]
    """
    unit = check_unit(unit)
    n = len(tokens)
    special = np.zeros(n, bool) if special_mask is None else np.asarray(special_mask, bool)
    if unit == "token":
        return np.arange(n, dtype=np.int64)
    starts = [0]
    pending = False  # a unit has ended; the next token that is neither blank nor special starts the next one
    for i, tok in enumerate(tokens):
        if pending and i > starts[-1] and not special[i] and tok.strip():
            starts.append(i)
            pending = False
        paragraph = "\n\n" in tok or (i > 0 and tok.startswith("\n") and tokens[i - 1].endswith("\n"))
        if paragraph or (unit == "sentence" and not special[i] and _ends_sentence(tok)):
            pending = True
    return np.asarray(starts, dtype=np.int64)


def unit_sums(weights: Sequence[float] | np.ndarray, starts: Sequence[int] | np.ndarray) -> np.ndarray:
    """(units,) the weight of each unit: the sum over its keys (float64)."""
    w = np.asarray(weights, dtype=np.float64)
    s = np.asarray(starts, dtype=np.int64)
    if len(w) == 0:
        return np.zeros(0)
    return np.add.reduceat(w, s)


def unit_of(starts: Sequence[int] | np.ndarray, key: int, n_keys: int) -> tuple[int, int]:
    """The key range ``(k0, k1)`` of the unit that holds key ``key``.

    >>> unit_of([0, 3, 6], 4, 8)
    (3, 6)
    """
    s = np.asarray(starts, dtype=np.int64)
    i = int(np.searchsorted(s, key, side="right")) - 1
    return int(s[i]), int(s[i + 1]) if i + 1 < len(s) else n_keys


def document_pieces(tokens: Sequence[str], word_ids: Sequence[int] | np.ndarray | None = None,
                    special_mask: Sequence[bool] | np.ndarray | None = None) -> list[str]:
    """Each token as it reads in running text, so the tokens joined give the document back.

    Tokens that carry their own spacing (byte-level BPE and SentencePiece, shown with a leading space) are kept as
    they are. WordPiece tokens (no leading spaces) get a space before each new word and lose their "##"; special
    tokens stand apart.

    >>> document_pieces(["[CLS]", "the", "play", "##ing", "cat", ".", "[SEP]"], [-1, 0, 1, 1, 2, 3, -1],
    ...                 [True, False, False, False, False, False, True])
    ['[CLS]', ' the', ' play', 'ing', ' cat', '.', ' [SEP]']
    >>> document_pieces(["The", " cat", "."])
    ['The', ' cat', '.']
    """
    toks = [str(t) for t in tokens]
    if any(t[:1].isspace() for t in toks) or word_ids is None:
        return toks
    words = np.asarray(word_ids)
    special = np.zeros(len(toks), bool) if special_mask is None else np.asarray(special_mask, bool)
    out = []
    for i, t in enumerate(toks):
        if t.startswith("##") and len(t) > 2 and not special[i]:
            out.append(t[2:])
        elif i == 0:
            out.append(t)
        elif not special[i] and not special[i - 1] and words[i] == words[i - 1] and words[i] >= 0:
            out.append(t)
        elif not special[i] and t and all(c in _TIGHT for c in t):  # "mat ." reads "mat."
            out.append(t)
        else:
            out.append(" " + t)
    return out
