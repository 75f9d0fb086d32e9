"""Several results padded into one array, so statistics run as a few numpy calls per batch, not per input.

Corpus statistics spend most of their time in Python overhead when they loop over inputs one by one; stacking a
batch (the runner makes 16-64 inputs at a time anyway) keeps the analysis a small fraction of the forward passes.
Padding is zero in every row and column it touches, and every statistic divides by the valid counts, so padding
never counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..attention_stack import AttentionTooLargeError, dense_budget, format_bytes
from ..result import AttentionResult
from .tokens import token_kinds

__all__ = ["AttentionBatch"]


@dataclass
class AttentionBatch:
    """Padded attention of B inputs with the token masks the statistics need.

    Attributes
    ----------
    attention : np.ndarray
        (B, L, H, T, T) float32, [batch, layer, head, query, key]; zero on padded rows and keys.
    valid : np.ndarray
        (B, T) bool, True for real tokens.
    kinds : dict[str, np.ndarray]
        Each (B, T) bool: ``cls``, ``sep``, ``special``, ``punct``, ``first``, ``other`` (see
        :func:`~attnwidgets.analysis.tokens.token_kinds`); False on padding.
    segment_ids : np.ndarray
        (B, T) int64, 0 for segment A, 1 for segment B; -1 on padding.
    causal : bool
        True for decoder self-attention (row i may only see keys j <= i).
    """

    attention: np.ndarray
    valid: np.ndarray
    kinds: dict[str, np.ndarray]
    segment_ids: np.ndarray
    causal: bool = False

    @property
    def lengths(self) -> np.ndarray:
        """(B,) int64 number of real tokens of each input."""
        return self.valid.sum(-1).astype(np.int64)

    def split(self, max_elements: int = 1 << 24) -> list[AttentionBatch]:
        """Sub-batches of whole inputs, each with at most ``max_elements`` attention weights (at least one input).

        Statistics make a few temporaries the size of the attention array; splitting bounds them (2**24 float32
        weights are 64 MiB) whatever the batch size and input length.
        """
        per_input = int(np.prod(self.attention.shape[1:]))
        step = max(1, max_elements // max(per_input, 1))
        b = self.attention.shape[0]
        if step >= b:
            return [self]
        return [
            AttentionBatch(self.attention[s : s + step], self.valid[s : s + step],
                           {k: v[s : s + step] for k, v in self.kinds.items()}, self.segment_ids[s : s + step],
                           self.causal)
            for s in range(0, b, step)
        ]

    def key_mask(self) -> np.ndarray:
        """(B, 1, 1, T, T) bool: the keys each query may see (valid, and not in the future when causal)."""
        t = self.valid.shape[1]
        mask = self.valid[:, None, :] & self.valid[:, :, None]
        if self.causal:
            mask = mask & np.tril(np.ones((t, t), dtype=bool))[None]
        return mask[:, None, None]

    @classmethod
    def from_padded(
        cls,
        attention: np.ndarray,
        valid: np.ndarray,
        tokens: Sequence[Sequence[str]],
        special_mask: Sequence[np.ndarray],
        segment_ids: Sequence[np.ndarray] | None = None,
        *,
        causal: bool = False,
    ) -> AttentionBatch:
        """Wrap an already padded (B, L, H, T, T) array whose real tokens come first in each row.

        ``tokens[i]``, ``special_mask[i]`` and ``segment_ids[i]`` describe the ``valid[i].sum()`` real tokens of row i.
        """
        attention = np.asarray(attention, dtype=np.float32)
        valid = np.asarray(valid, dtype=bool)
        b, t = valid.shape
        if attention.ndim != 5 or attention.shape[0] != b or attention.shape[-2:] != (t, t):
            raise ValueError(f"attention must be (B, L, H, T, T) with B, T = {b}, {t}; got {attention.shape}")
        names = ("cls", "sep", "special", "punct", "first", "other")
        kinds = {k: np.zeros((b, t), dtype=bool) for k in names}
        segment = np.full((b, t), -1, dtype=np.int64)
        for i in range(b):
            n = int(valid[i].sum())
            if not valid[i, :n].all():
                raise ValueError("each row's real tokens must come first (right padding)")
            for k, mask in token_kinds(tokens[i], special_mask[i]).items():
                kinds[k][i, :n] = mask
            segment[i, :n] = 0 if segment_ids is None else segment_ids[i]
        return cls(attention, valid, kinds, segment, causal)

    def to_words(self, word_ids: Sequence[np.ndarray], rows: str = "mean") -> AttentionBatch:
        """Word-level batch (see :func:`~attnwidgets.analysis.words.word_level`), ``word_ids[i]`` for row i."""
        from .words import word_groups, word_matrices

        b, t = self.valid.shape
        groups = [word_groups(word_ids[i], self.kinds["special"][i, : self.lengths[i]]) for i in range(b)]
        u = max(int(g.max()) + 1 if g.size else 0 for g in groups)
        r_all = np.zeros((b, u, t), dtype=np.float32)
        c_all = np.zeros((b, t, u), dtype=np.float32)
        valid = np.zeros((b, u), dtype=bool)
        segment = np.full((b, u), -1, dtype=np.int64)
        kinds = {k: np.zeros((b, u), dtype=bool) for k in self.kinds}
        for i, g in enumerate(groups):
            n, m = g.size, (int(g.max()) + 1 if g.size else 0)
            r, c = word_matrices(g, rows)  # type: ignore[arg-type]
            r_all[i, :m, :n] = r
            c_all[i, :n, :m] = c
            valid[i, :m] = True
            first = np.full(m, n, dtype=np.int64)
            np.minimum.at(first, g, np.arange(n))
            segment[i, :m] = self.segment_ids[i, first]
            for k in ("cls", "sep", "special", "first"):
                kinds[k][i, :m] = self.kinds[k][i, first]
            # a word is punctuation when all its pieces are (BERT splits "." off, so this is the usual case)
            punct = np.zeros(m, dtype=np.int64)
            np.add.at(punct, g, self.kinds["punct"][i, :n].astype(np.int64))
            kinds["punct"][i, :m] = punct == np.bincount(g, minlength=m)
            kinds["other"][i, :m] = ~(kinds["cls"][i, :m] | kinds["sep"][i, :m] | kinds["punct"][i, :m])
        attention = np.matmul(np.matmul(r_all[:, None, None], self.attention), c_all[:, None, None])
        return AttentionBatch(attention.astype(np.float32), valid, kinds, segment, self.causal)

    @classmethod
    def from_results(cls, results: Sequence[AttentionResult], *, words: bool = False) -> AttentionBatch:
        """Pad the self-attention of ``results`` (all from one model) into a batch.

        Parameters
        ----------
        results : sequence of AttentionResult
        words : bool
            Convert each result to word level first (:func:`~attnwidgets.analysis.words.word_level`).

        Examples
        --------
        >>> import numpy as np
        >>> from attnwidgets.result import AttentionResult
        >>> a = AttentionResult.from_arrays(np.full((2, 2), 0.5), ["[CLS]", "[SEP]"])
        >>> b = AttentionResult.from_arrays(np.full((3, 3), 1 / 3), ["[CLS]", "hi", "[SEP]"])
        >>> AttentionBatch.from_results([a, b]).attention.shape
        (2, 1, 1, 3, 3)
        """
        if not results:
            raise ValueError("no results to batch")
        if words:
            from .words import word_level

            results = [word_level(r) for r in results]
        shapes = {r.attention_shape()[:2] for r in results}
        if len(shapes) > 1:
            raise ValueError(f"results come from models of different shapes {sorted(shapes)}: batch one model "
                             "at a time")
        n_layers, n_heads = shapes.pop()
        t = max(r.n_tokens for r in results)
        b = len(results)
        need = b * n_layers * n_heads * t * t * 4
        if any(r.is_lazy for r in results) and need > dense_budget():
            raise AttentionTooLargeError(
                f"a padded batch of {b} inputs of up to {t} tokens takes {format_bytes(need)}, more than the dense "
                f"budget of {format_bytes(dense_budget())}: measure long inputs one at a time with the blockwise "
                f"functions (surface_stats, pattern_features, CorpusStats.add, HeadDistances.add), or raise the "
                f"budget with attnwidgets.runner.set_dense_budget(nbytes)")
        # one dense input fills its batch: a view of its attention (read-only, as the result's), not a padded copy
        one = b == 1 and not results[0].is_lazy
        attention = np.asarray(results[0].attention, dtype=np.float32)[None] if one \
            else np.zeros((b, n_layers, n_heads, t, t), dtype=np.float32)
        valid = np.zeros((b, t), dtype=bool)
        segment = np.full((b, t), -1, dtype=np.int64)
        names = ("cls", "sep", "special", "punct", "first", "other")
        kinds = {k: np.zeros((b, t), dtype=bool) for k in names}
        for i, r in enumerate(results):
            n = r.n_tokens
            if r.is_lazy:  # copied block by block: result.attention would keep a dense copy inside the result
                for layer, start, stop, block in r.iter_blocks():
                    attention[i, layer, :, start:stop, :n] = block
            elif not one:
                attention[i, :, :, :n, :n] = r.attention
            valid[i, :n] = True
            segment[i, :n] = r.segment_ids
            for k, mask in token_kinds(r.tokens, r.special_mask).items():
                kinds[k][i, :n] = mask
        causal = results[0].model.kind == "decoder"
        return cls(attention, valid, kinds, segment, causal)
