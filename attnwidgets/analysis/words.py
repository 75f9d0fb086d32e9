"""Word-level attention (Clark et al. 2019, section 4.1): from word pieces to whole words.

Attention *to* a word is the sum of the attention to its pieces (columns add); attention *from* a word is the mean
of its pieces' rows (the paper's choice; their released code takes the first piece's row instead, offered here as
``rows="first"``). Both keep every row summing to 1. Special tokens ([CLS], [SEP], <s>) stay units of their own.

In matrix form, with R the (words x pieces) row-averaging matrix and C the (pieces x words) membership matrix,
``W = R A C``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..result import AttentionResult
from ..token_text import merge_partials

__all__ = ["word_groups", "word_level", "word_matrices"]

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
        attention of encoder-decoders are dropped (they have their own tokens).

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
    attention = np.matmul(np.matmul(r, result.attention), c).astype(np.float32)  # (L, H, u, u)
    u = c.shape[1]
    first = np.full(u, result.n_tokens, dtype=np.int64)
    np.minimum.at(first, units, np.arange(result.n_tokens))
    special = result.special_mask[first]
    tokens = [_join([result.tokens[k] for k in np.flatnonzero(units == i)]) or result.tokens[first[i]]
              for i in range(u)]
    new_words = np.where(special, -1, np.cumsum(~special) - 1)
    return AttentionResult(
        tokens=tokens,
        token_ids=result.token_ids[first],
        word_ids=new_words.astype(np.int64),
        segment_ids=result.segment_ids[first],
        special_mask=special,
        attention=attention,
        model=result.model,
        text=result.text,
        text_pair=result.text_pair,
        outputs=dict(result.outputs),
        ablation=result.ablation,
        truncated=result.truncated,
    )
