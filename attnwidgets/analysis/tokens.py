"""Which tokens are [CLS], [SEP], punctuation or the first token: boolean masks every statistic shares.

A token's kind is read from its text and the result's ``special_mask``, so the same code serves WordPiece ([CLS],
[SEP]), RoBERTa/BART (<s>, </s>) and decoders (a BOS token, or none at all). For decoder-only models the first token
plays the part of [CLS] and [SEP] (the "attention sink"), so ``first`` is always position 0 whatever its text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["CLS_TOKENS", "KEY_KINDS", "PUNCT_TOKENS", "SEP_TOKENS", "key_kind_index", "token_kinds"]

CLS_TOKENS = frozenset({"[CLS]", "<s>", "<cls>", "<bos>", "<|begin_of_text|>", "<|startoftext|>"})
"""Texts of special tokens that open a sequence."""

SEP_TOKENS = frozenset({"[SEP]", "</s>", "<sep>", "<eos>", "<|end_of_text|>", "<|endoftext|>", "<|eot_id|>"})
"""Texts of special tokens that close a segment."""

PUNCT_TOKENS = frozenset({".", ","})
"""Clark et al. count periods and commas as "punctuation"."""

KEY_KINDS = ("cls", "sep", "punct", "other")
"""The four key kinds gradients and word statistics are split by, in this order."""


def token_kinds(tokens: Sequence[str], special_mask: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Boolean masks (n,) of the token kinds the surface statistics use.

    Parameters
    ----------
    tokens : sequence of str
        Display text of each token (a result's ``tokens``).
    special_mask : np.ndarray, optional
        (n,) bool, True for tokens the tokenizer added. When None, a token is special if its text is a known special
        token.

    Returns
    -------
    dict[str, np.ndarray]
        ``cls``, ``sep`` (special tokens with those texts), ``special`` (all added tokens), ``punct`` (non-special
        "." or "," once spaces are stripped), ``first`` (position 0 only) and ``other`` (none of cls, sep, punct).

    Examples
    --------
    >>> k = token_kinds(["[CLS]", "hi", ",", "there", "[SEP]"])
    >>> k["sep"].astype(int).tolist(), k["punct"].astype(int).tolist()
    ([0, 0, 0, 0, 1], [0, 0, 1, 0, 0])
    """
    n = len(tokens)
    texts = [t.strip() for t in tokens]
    if special_mask is None:
        special = np.array([t in CLS_TOKENS or t in SEP_TOKENS or t in ("[PAD]", "[MASK]") for t in texts], bool)
    else:
        special = np.asarray(special_mask, dtype=bool)
        if special.shape != (n,):
            raise ValueError(f"special_mask must have shape ({n},), got {special.shape}")
    cls = special & np.array([t in CLS_TOKENS for t in texts], dtype=bool)
    sep = special & np.array([t in SEP_TOKENS for t in texts], dtype=bool) & ~cls
    punct = ~special & np.array([t in PUNCT_TOKENS for t in texts], dtype=bool)
    first = np.zeros(n, dtype=bool)
    if n:
        first[0] = True
    return {"cls": cls, "sep": sep, "special": special, "punct": punct, "first": first, "other": ~(cls | sep | punct)}


def key_kind_index(kinds: dict[str, np.ndarray]) -> np.ndarray:
    """(n,) int: 0 for [CLS], 1 for [SEP], 2 for punctuation, 3 for other, the order of :data:`KEY_KINDS`.

    Examples
    --------
    >>> key_kind_index(token_kinds(["[CLS]", "a", ".", "[SEP]"])).tolist()
    [0, 3, 2, 1]
    """
    index = np.full(kinds["cls"].shape, 3, dtype=np.int64)
    index[kinds["punct"]] = 2
    index[kinds["sep"]] = 1
    index[kinds["cls"]] = 0
    return index
