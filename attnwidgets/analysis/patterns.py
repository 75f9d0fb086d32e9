"""Kovaleva et al. (2019) pattern classes of attention maps, from measurable statistics instead of a CNN.

Kovaleva et al. labelled ~400 maps by hand into five classes and trained a classifier on them. Here each map (one
head, one input) gets three numbers and fixed thresholds:

- ``vertical``: the mean over rows of the mass on special tokens ([CLS], [SEP], <s>, </s>; for decoders also the
  first token, the attention sink). Their "vertical" maps are stripes down these columns.
- ``diagonal``: the mean over rows of ``A[i, i-1] + A[i, i+1]``, the mass on the two neighbours (band offsets ±1),
  counting non-special keys only so that a [SEP] next to the last word does not make a map "diagonal".
- ``block``: for a sentence pair only, the mean over non-special rows of the share of their non-special mass that
  stays in their own segment (NaN for single segments, where "own sentence" is everything).

Thresholds (module constants, all tested on synthetic maps of each class):

1. **vertical+diagonal** if ``vertical >= 0.25`` and ``diagonal >= 0.25`` and ``vertical + diagonal >= 0.6``;
2. else **vertical** if ``vertical >= 0.5``;
3. else **diagonal** if ``diagonal >= 0.5``;
4. else **block** if the input is a pair, ``block >= 0.8`` and the non-special mass is at least 0.5;
5. else **heterogeneous**.

Uniform attention over n tokens gives vertical = n_special / n and diagonal ≈ 2 / n, so with n >= 8 tokens it lands
in "heterogeneous"; its within-segment share is the segment's share of the words, about 0.5, so it is not "block".

At any length: every feature is a sum over rows, so a long input (``result.is_lazy``) is measured a block of rows at a
time (:class:`PatternBlocks`) on the full-resolution map, never building the ``[layer, head, query, key]`` array, nor
a downsampled one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..result import AttentionResult
from .batch import AttentionBatch
from .blocks import is_causal, kept_summary, run_blocks
from .surface import key_share
from .tokens import token_kinds

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PATTERNS",
    "PatternBlocks",
    "classify_patterns",
    "pattern_features",
    "pattern_features_batch",
    "pattern_frame",
    "patterns_from_features",
]

PATTERNS = ("vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous")
"""The five classes, in Kovaleva et al.'s order."""

VERTICAL = 0.5
"""Least mass on special tokens for a "vertical" map."""
DIAGONAL = 0.5
"""Least mass on the neighbouring tokens for a "diagonal" map."""
MIXED_EACH, MIXED_TOTAL = 0.25, 0.6
"""A "vertical+diagonal" map has at least MIXED_EACH of each and MIXED_TOTAL together."""
BLOCK = 0.8
"""Least within-segment share of the non-special mass for a "block" map (pairs only)."""
BLOCK_MASS = 0.5
"""Least non-special mass for a "block" map."""


def pattern_features_batch(batch: AttentionBatch) -> dict[str, np.ndarray]:
    """``vertical``, ``diagonal``, ``block`` and ``content`` (non-special mass) for each map, each (B, L, H)."""
    a = batch.attention  # (B, L, H, T, T)
    kinds = batch.kinds
    rows = batch.valid[:, None, None, :]  # (B, 1, 1, T)
    sink = kinds["special"] | (kinds["first"] if batch.causal else np.zeros_like(kinds["first"]))
    vertical = key_share(a, sink[:, None, None, :], rows)
    words = batch.valid & ~sink  # (B, T)
    wk = words[:, None, None, :].astype(np.float32)
    n = batch.lengths.astype(np.float64)[:, None, None]
    # A[i, i-1] has key i-1 (keys 0..T-2), A[i, i+1] has key i+1 (keys 1..T-1): count non-special keys only
    prev = (np.diagonal(a, offset=-1, axis1=-2, axis2=-1) * wk[..., :-1]).sum(-1, dtype=np.float64)
    nxt = (np.diagonal(a, offset=1, axis1=-2, axis2=-1) * wk[..., 1:]).sum(-1, dtype=np.float64)
    diagonal = (prev + nxt) / n
    seg = batch.segment_ids
    word_rows = words[:, None, None, :]
    content = key_share(a, wk, rows)
    same = (seg[:, :, None] == seg[:, None, :]) & words[:, :, None] & words[:, None, :]  # (B, T, T)
    in_segment = (a * same[:, None, None]).sum(-1, dtype=np.float64)  # (B, L, H, T)
    word_mass = np.matmul(a, wk[..., None])[..., 0].astype(np.float64)  # (B, L, H, T)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(word_mass > 0, in_segment / word_mass, np.nan)
        count = word_rows.sum(-1)
        block = np.nansum(np.where(word_rows, share, np.nan), -1) / np.maximum(count, 1)
    is_pair = ((seg == 1) & batch.valid).any(-1)[:, None, None]
    block = np.where(is_pair, block, np.nan)
    return {"vertical": vertical, "diagonal": diagonal, "block": block, "content": content}


def patterns_from_features(features: dict[str, np.ndarray]) -> np.ndarray:
    """Class names (same shape as the features) from :func:`pattern_features`, by the module's thresholds.

    Examples
    --------
    >>> f = {"vertical": np.array([0.9, 0.3, 0.1]), "diagonal": np.array([0.0, 0.4, 0.1]),
    ...      "block": np.full(3, np.nan), "content": np.array([0.1, 0.7, 0.9])}
    >>> patterns_from_features(f).tolist()
    ['vertical', 'vertical+diagonal', 'heterogeneous']
    """
    v, d = np.asarray(features["vertical"]), np.asarray(features["diagonal"])
    b, c = np.asarray(features["block"]), np.asarray(features["content"])
    out = np.full(v.shape, "heterogeneous", dtype=object)
    with np.errstate(invalid="ignore"):
        block = (b >= BLOCK) & (c >= BLOCK_MASS)
    out[block] = "block"
    out[d >= DIAGONAL] = "diagonal"
    out[v >= VERTICAL] = "vertical"
    out[(v >= MIXED_EACH) & (d >= MIXED_EACH) & (v + d >= MIXED_TOTAL)] = "vertical+diagonal"
    return out


def pattern_features(result: AttentionResult, *, words: bool = False) -> dict[str, np.ndarray]:
    """The statistics the classes are read from, each (L, H); see the module docstring."""
    if words:
        from .words import word_level

        result = word_level(result)
    if result.is_lazy:  # a long input: a block of rows at a time
        acc = PatternBlocks(result)
        run_blocks(result, [acc])
        return acc.finish()
    batch = AttentionBatch.from_results([result])
    return {k: v[0] for k, v in pattern_features_batch(batch).items()}


class PatternBlocks:
    """:func:`pattern_features` of one result, accumulated over blocks of rows (as :func:`pattern_features_batch`).

    Examples
    --------
    >>> toks = ["[CLS]", "a", "b", "[SEP]"]
    >>> r = AttentionResult.from_arrays(np.tile([0.0, 0.0, 0.0, 1.0], (4, 1)), toks)
    >>> acc = PatternBlocks(r)
    >>> for block in r.iter_blocks(rows=3): acc.add(*block)
    >>> float(acc.finish()["vertical"][0, 0])
    1.0
    """

    def __init__(self, result: AttentionResult) -> None:
        n_layers, n_heads, n, _ = result.attention_shape()
        kinds = token_kinds(result.tokens, result.special_mask)
        sink = kinds["special"] | (kinds["first"] if is_causal(result) else np.zeros_like(kinds["first"]))
        self.n = n
        self.words = ~sink  # (n,) non-special tokens
        seg = np.asarray(result.segment_ids)
        self.segment = seg
        self.is_pair = bool((seg == 1).any())
        # keys: special, non-special, non-special of segment 0, of segment 1
        self.keys = np.stack([sink, self.words, self.words & (seg == 0), self.words & (seg == 1)],
                             axis=-1).astype(np.float32)  # (n, 4)
        shape = (n_layers, n_heads)
        self.vertical = np.zeros(shape)
        self.content = np.zeros(shape)
        self.diagonal = np.zeros(shape)
        self.block = np.zeros(shape)

    def add(self, layer: int, start: int, stop: int, block: np.ndarray) -> None:
        """Add rows ``start..stop`` of ``layer``: ``block`` (head, rows, key)."""
        per_row = np.matmul(block, self.keys)  # (H, r, 4)
        self.vertical[layer] += per_row[..., 0].sum(-1, dtype=np.float64)
        self.content[layer] += per_row[..., 1].sum(-1, dtype=np.float64)
        rows = np.arange(start, stop)
        for offset in (-1, 1):  # A[i, i - 1] and A[i, i + 1], non-special keys only
            keys = rows + offset
            ok = (keys >= 0) & (keys < block.shape[-1])
            ok[ok] &= self.words[keys[ok]]
            self.diagonal[layer] += block[:, np.flatnonzero(ok), keys[ok]].sum(-1, dtype=np.float64)
        if self.is_pair:
            word_rows = self.words[start:stop]
            own = np.where(self.segment[start:stop] == 1, per_row[..., 3], per_row[..., 2])  # (H, r)
            mass = per_row[..., 1].astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                share = np.where(mass > 0, own / mass, np.nan)
            self.block[layer] += np.nansum(share[:, word_rows], -1)

    @classmethod
    def from_summary(cls, result: AttentionResult) -> dict[str, np.ndarray] | None:
        """What :meth:`finish` gives, from the sums the runner made with a long input's weights (``stack.summary``);
        None without them, or for a sentence pair (its within-segment share needs each row's mass per segment)."""
        summary = kept_summary(result)
        if summary is None:
            return None
        acc = cls(result)
        if acc.is_pair:
            return None
        colsum = summary["colsum"]  # (L, H, S)
        vertical = (colsum * acc.keys[:, 0]).sum(-1)  # mass on special keys, summed over rows
        content = (colsum * acc.keys[:, 1]).sum(-1)
        diag = summary["diag"].astype(np.float64)  # (L, H, 3, T): A[i, i - 1], A[i, i], A[i, i + 1]
        n = acc.n
        rows = np.arange(n)
        diagonal = np.zeros(vertical.shape)
        for j, offset in ((0, -1), (2, 1)):  # non-special neighbours only
            keys = rows + offset
            ok = (keys >= 0) & (keys < n)
            ok[ok] &= acc.words[keys[ok]]
            diagonal += diag[:, :, j, ok].sum(-1)
        acc.vertical, acc.content, acc.diagonal = vertical, content, diagonal
        return acc.finish()

    def finish(self) -> dict[str, np.ndarray]:
        """``vertical``, ``diagonal``, ``block``, ``content``, each (L, H)."""
        n = max(self.n, 1)
        count = max(int(self.words.sum()), 1)
        block = self.block / count if self.is_pair else np.full(self.block.shape, np.nan)
        return {"vertical": self.vertical / n, "diagonal": self.diagonal / n, "block": block,
                "content": self.content / n}


def classify_patterns(result: AttentionResult, *, words: bool = False) -> np.ndarray:
    """(L, H) array of class names, one of :data:`PATTERNS` per head, for one input.

    Examples
    --------
    >>> toks = ["[CLS]", "a", "b", "c", "d", "e", "[SEP]"]
    >>> a = np.zeros((7, 7)); a[:, -1] = 1.0                  # everything on [SEP]
    >>> classify_patterns(AttentionResult.from_arrays(a, toks)).tolist()
    [['vertical']]
    """
    return patterns_from_features(pattern_features(result, words=words))


def pattern_frame(counts: np.ndarray) -> pd.DataFrame:
    """Tidy DataFrame (layer, head, pattern, share) from (L, H, 5) class counts over a corpus."""
    import pandas as pd

    counts = np.asarray(counts, dtype=np.float64)
    share = counts / np.maximum(counts.sum(-1, keepdims=True), 1)
    layer, head, p = np.meshgrid(*(np.arange(s) for s in counts.shape), indexing="ij")
    return pd.DataFrame({"layer": layer.ravel(), "head": head.ravel(),
                         "pattern": np.asarray(PATTERNS, dtype=object)[p.ravel()], "share": share.ravel()})
