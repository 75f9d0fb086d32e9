"""Word-level attention (Clark et al. 2019, section 4.1): from word pieces to whole words.

Attention *to* a word is the sum of the attention to its pieces (columns add); attention *from* a word is the mean
of its pieces' rows (the paper's choice; their released code takes the first piece's row instead, offered here as
``rows="first"``). Both keep every row summing to 1. Special tokens ([CLS], [SEP], <s>) stay units of their own.

In matrix form, with R the (words x pieces) row-averaging matrix and C the (pieces x words) membership matrix,
``W = R A C``.

At any length: R and C are sparse (one entry per piece), so :class:`WordMap` computes W in ``O(n²)`` per head, a block
of rows at a time. For a result that holds its attention as queries and keys (a long input, ``result.is_lazy``),
:func:`word_level` returns a word-level result that is lazy too: its attention is a :class:`WordStack`, whose rows are
made on demand from the pieces' rows, so ``result.head``, ``result.rows`` and ``result.iter_blocks`` work at any
length and ``result.attention`` builds the dense word-level array only within
:func:`~attnwidgets.attention_stack.dense_budget`. A dense result gives a dense word-level result, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..attention_stack import LazyStack, block_rows, stack_rows, stack_shape
from ..result import AttentionResult

if TYPE_CHECKING:  # scipy.sparse loads with the first WordMap: importing the views stays light
    from scipy import sparse
from ..token_text import merge_partials

__all__ = ["WordMap", "WordStack", "word_groups", "word_level", "word_matrices"]

RowMode = Literal["mean", "first"]


def word_groups(word_ids: np.ndarray, special_mask: np.ndarray | None = None) -> np.ndarray:
    """(n,) int unit index of each piece: pieces of one word share a unit, each special token is its own unit.

    Units are numbered in order of their first piece. Non-special pieces with word id -1 (pieces a tokenizer did not
    assign to a word) are units of their own too.

    Examples
    --------
    >>> word_groups(np.array([-1, 0, 0, 1, -1]), np.array([1, 0, 0, 0, 1], bool)).tolist()
    [0, 1, 1, 2, 3]
    """
    word_ids = np.asarray(word_ids, dtype=np.int64)
    special = np.zeros(word_ids.shape, bool) if special_mask is None else np.asarray(special_mask, dtype=bool)
    units = np.empty(word_ids.shape, dtype=np.int64)
    seen: dict[int, int] = {}
    next_unit = 0
    for k, (w, s) in enumerate(zip(word_ids.tolist(), special.tolist())):
        if s or w < 0:
            units[k] = next_unit
            next_unit += 1
        elif w in seen:
            units[k] = seen[w]
        else:
            seen[w] = units[k] = next_unit
            next_unit += 1
    return units


def word_matrices(units: np.ndarray, rows: RowMode = "mean") -> tuple[np.ndarray, np.ndarray]:
    """The (u, n) row matrix R and the (n, u) column matrix C with word-level attention ``W = R @ A @ C``.

    Parameters
    ----------
    units : np.ndarray
        (n,) unit index of each piece, 0..u-1 (from :func:`word_groups`).
    rows : {"mean", "first"}
        A word's row is the mean of its pieces' rows (paper) or its first piece's row (Clark et al.'s code).

    Examples
    --------
    >>> r, c = word_matrices(np.array([0, 1, 1]))
    >>> r.tolist(), c.sum(0).tolist()
    ([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]], [1.0, 2.0])
    """
    units = np.asarray(units, dtype=np.int64)
    n = units.shape[0]
    u = int(units.max()) + 1 if n else 0
    c = np.zeros((n, u), dtype=np.float32)
    c[np.arange(n), units] = 1.0
    if rows == "mean":
        r = c.T / c.sum(0)[:, None]
    elif rows == "first":
        r = np.zeros((u, n), dtype=np.float32)
        first = np.full(u, n, dtype=np.int64)
        np.minimum.at(first, units, np.arange(n))
        r[np.arange(u), first] = 1.0
    else:
        raise ValueError(f"rows must be 'mean' or 'first', got {rows!r}")
    return r.astype(np.float32), c


class WordMap:
    """``W = R A C`` with sparse R (u, n) and C (n, m): word-level attention of a dense array or of blocks of rows.

    C may put a piece in several words (a multiword token's words share its pieces, see
    :func:`~attnwidgets.analysis.dependency.piece_word_matrix`); R says how each word's row is made from its pieces'
    rows. Both are float32, as the dense ``R @ A @ C`` was; sums run in float32 in another order, so results agree
    with the dense product to float32 rounding (about 1e-7 per weight).

    Examples
    --------
    >>> r, c = word_matrices(np.array([0, 1, 1]))
    >>> a = np.array([[1, 0, 0], [.2, .3, .5], [0, .4, .6]], np.float32)
    >>> WordMap(r, c).dense(a).astype(float).round(2).tolist()    # from a word: mean of rows 1, 2; to: columns 1 + 2
    [[1.0, 0.0], [0.1, 0.9]]
    """

    def __init__(self, rows: Any, columns: Any) -> None:
        from scipy import sparse

        self.r = sparse.csr_matrix(rows, dtype=np.float32)  # (u, n)
        self.c_t = sparse.csr_matrix(sparse.csr_matrix(columns, dtype=np.float32).T)  # (m, n)
        if self.r.shape[1] != self.c_t.shape[1]:
            raise ValueError(f"row matrix {self.r.shape} and column matrix {self.c_t.T.shape} do not fit")

    @property
    def n_pieces(self) -> int:
        return int(self.r.shape[1])

    @property
    def n_rows(self) -> int:
        return int(self.r.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self.c_t.shape[0])

    def columns(self, a: np.ndarray) -> np.ndarray:
        """(..., n) -> (..., m) float32: attention to each word (the sum over its pieces)."""
        lead = a.shape[:-1]
        flat = np.ascontiguousarray(a.reshape(-1, a.shape[-1]).T)  # (n, rows)
        out = self.c_t @ flat  # (m, rows)
        return np.ascontiguousarray(np.asarray(out, dtype=np.float32).T).reshape(*lead, self.n_columns)

    def _rows_of(self, r: sparse.csr_matrix, x: np.ndarray) -> np.ndarray:
        """``r @ x`` over the second-to-last axis of x (..., p, m) -> (..., q, m)."""
        moved = np.moveaxis(x, -2, 0)  # (p, ..., m)
        out = np.asarray(r @ moved.reshape(moved.shape[0], -1), dtype=np.float32)
        return np.moveaxis(out.reshape(r.shape[0], *moved.shape[1:]), 0, -2)

    def dense(self, a: np.ndarray) -> np.ndarray:
        """(..., n, n) -> (..., u, m) float32 word-level attention."""
        return np.ascontiguousarray(self._rows_of(self.r, self.columns(a)))

    def rows(self, fetch: Callable[[int, int], np.ndarray], start: int, stop: int, step: int) -> np.ndarray:
        """Word rows ``start..stop`` (..., stop - start, m) from piece rows: ``fetch(a, b)`` gives pieces ``a..b``'s
        rows (..., b - a, n); at most ``step`` piece rows are asked for at a time."""
        sub = self.r[start:stop]
        if not sub.nnz:
            lead = fetch(0, 0).shape[:-2]
            return np.zeros((*lead, stop - start, self.n_columns), np.float32)
        lo, hi = int(sub.indices.min()), int(sub.indices.max()) + 1
        out: np.ndarray | None = None
        for a in range(lo, hi, max(1, step)):
            b = min(hi, a + max(1, step))
            part = sub[:, a:b]
            used = np.unique(part.indices)  # pieces whose rows make these words' rows ("first" skips the others)
            if not used.size:
                continue
            piece_rows = fetch(a, b)
            if used.size < b - a:
                piece_rows, part = piece_rows[..., used, :], part[:, used]
            add = self._rows_of(part, self.columns(piece_rows))
            out = add if out is None else out + add
        assert out is not None
        return out


@dataclass(frozen=True, eq=False)
class WordStack(LazyStack):
    """Word-level ``[layer, head, word, word]`` attention of a piece-level stack, each block of rows made on demand.

    A :class:`~attnwidgets.attention_stack.LazyStack` to :class:`~attnwidgets.result.AttentionResult`, so its rows,
    heads and blocks are read as any long input's are, and ``result.attention`` is built within the dense budget.
    (It subclasses LazyStack because the result dispatches on that type; it holds no queries and keys itself.)

    Attributes
    ----------
    source : np.ndarray | LazyStack
        The piece-level [layer, head, query, key] attention.
    word_map : WordMap
    """

    source: Any = None
    word_map: Any = None

    def __post_init__(self) -> None:
        if self.source is None or not isinstance(self.word_map, WordMap):
            raise ValueError("a WordStack needs a piece-level stack and a WordMap")
        _l, _h, t, s = stack_shape(self.source)
        if t != s or self.word_map.n_pieces != t:
            raise ValueError(f"a word map over {self.word_map.n_pieces} pieces does not fit attention over {t} x {s}")

    @property
    def shape(self) -> tuple[int, int, int, int]:
        n_layers, n_heads, _t, _s = stack_shape(self.source)
        return (n_layers, n_heads, self.word_map.n_rows, self.word_map.n_columns)

    @property
    def nbytes(self) -> int:
        own = self.word_map.r.data.nbytes + self.word_map.c_t.data.nbytes + sum(a.nbytes for a in self._dense)
        return int(self.source.nbytes) + own

    def rows(self, layer: int, start: int, stop: int, head: int | None = None) -> np.ndarray:
        if self._dense:
            return stack_rows(self._dense[0], layer, start, stop, head)
        _l, n_heads, _t, n = stack_shape(self.source)
        step = block_rows(n_heads if head is None else 1, n)

        def fetch(a: int, b: int) -> np.ndarray:
            return stack_rows(self.source, layer, a, b, head)

        return self.word_map.rows(fetch, start, stop, step)

    def select(self, queries: np.ndarray, keys: np.ndarray) -> LazyStack:
        raise NotImplementedError("word-level attention cannot be re-indexed; make it from the piece-level result")

    def prefix(self, n_queries: int, n_keys: int) -> LazyStack:
        raise NotImplementedError("word-level attention cannot be cut; make it from the piece-level result")

    def freeze(self) -> None:
        if isinstance(self.source, LazyStack):
            self.source.freeze()


def _join(pieces: list[str]) -> str:
    """A word's text from its pieces: "##" dropped, a character split across byte-level pieces whole again."""
    text = "".join(p[2:] if k and p.startswith("##") else p for k, p in enumerate(pieces))
    return merge_partials(text).strip()


def word_level(result: AttentionResult, *, rows: RowMode = "mean", word_ids: np.ndarray | None = None
               ) -> AttentionResult:
    """A new result whose tokens are words: attention to a word sums its pieces, from a word averages them.

    Parameters
    ----------
    result : AttentionResult
        Piece-level result (its self-attention is converted).
    rows : {"mean", "first"}
        How a word's row is made from its pieces' rows; see :func:`word_matrices`.
    word_ids : np.ndarray, optional
        (n,) word of each piece (-1 for specials) to use instead of ``result.word_ids``, e.g. an alignment to the words
        of a treebank.

    Returns
    -------
    AttentionResult
        Tokens are the words' text (pieces joined, "##" dropped, a character split across byte-level pieces
        whole: :func:`attnwidgets.token_text.merge_partials`) and the special tokens; ``word_ids`` number the words
        0.. (-1 for specials); ``token_ids``/``segment_ids`` are those of each word's first piece. Decoder and cross
        attention of encoder-decoders are dropped (they have their own tokens). A dense result gives a dense
        word-level array; a lazy one (a long input) a lazy :class:`WordStack`, whose rows are made from the pieces'
        rows when they are read, at any length.

    Examples
    --------
    >>> toks = ["[CLS]", "play", "##ing", "[SEP]"]
    >>> a = np.array([[1, 0, 0, 0], [0, .2, .3, .5], [0, .4, .4, .2], [.5, 0, 0, .5]], np.float32)
    >>> w = word_level(AttentionResult.from_arrays(a, toks, word_ids=np.array([-1, 0, 0, -1])))
    >>> w.tokens, [round(float(x), 2) for x in w.attention[0, 0, 1]]
    (['[CLS]', 'playing', '[SEP]'], [0.0, 0.65, 0.35])
    """
    wid = result.word_ids if word_ids is None else np.asarray(word_ids, dtype=np.int64)
    if wid.shape != (result.n_tokens,):
        raise ValueError(f"word_ids must have shape ({result.n_tokens},), got {wid.shape}")
    units = word_groups(wid, result.special_mask)
    r, c = word_matrices(units, rows)
    word_map = WordMap(r, c)
    held = result.stack("self")
    attention: np.ndarray | LazyStack
    if isinstance(held, LazyStack):
        attention = WordStack(layers=(), source=held, word_map=word_map)
    else:
        attention = word_map.dense(held)  # (L, H, u, u)
    u = c.shape[1]
    first = np.full(u, result.n_tokens, dtype=np.int64)
    np.minimum.at(first, units, np.arange(result.n_tokens))
    special = result.special_mask[first]
    order = np.argsort(units, kind="stable")  # pieces grouped by unit, in order within each
    bounds = np.searchsorted(units[order], np.arange(u + 1))
    tokens = [_join([result.tokens[k] for k in order[bounds[i]:bounds[i + 1]]]) or result.tokens[first[i]]
              for i in range(u)]
    new_words = np.where(special, -1, np.cumsum(~special) - 1)
    return AttentionResult(
        tokens=tokens,
        token_ids=result.token_ids[first],
        word_ids=new_words.astype(np.int64),
        segment_ids=result.segment_ids[first],
        special_mask=special,
        attention=attention,  # type: ignore[arg-type]  # a LazyStack is what long inputs hold (see result.stack)
        model=result.model,
        text=result.text,
        text_pair=result.text_pair,
        outputs=dict(result.outputs),
        ablation=result.ablation,
        truncated=result.truncated,
    )
