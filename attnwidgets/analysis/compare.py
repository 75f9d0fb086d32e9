"""Compare the attention of two results over the same tokens (e.g. before and after fine-tuning). numpy only.

Kovaleva et al. 2019 measured how much fine-tuning changed each head by the cosine similarity between the flattened
attention maps of the pre-trained and the fine-tuned model on the same input, averaged over inputs.

Examples
--------
>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> a = AttentionResult.from_arrays(np.eye(3, dtype=np.float32)[None, None], ["[CLS]", "hi", "[SEP]"])
>>> b = a.with_attention(np.full((1, 1, 3, 3), 1 / 3, np.float32))
>>> round(head_similarity(a, a).item(), 3), round(head_similarity(a, b).item(), 3)
(1.0, 0.577)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..result import AttentionKind, AttentionResult

__all__ = ["head_similarity", "mean_head_similarity", "similarity_by_layer"]


def head_similarity(a: AttentionResult, b: AttentionResult, kind: AttentionKind = "self",
                    measure: str = "cosine") -> np.ndarray:
    """Per-head similarity of two results' maps over the same tokens, (L, H) float64.

    Parameters
    ----------
    a, b : AttentionResult
        Same tokens and the same number of layers and heads.
    kind : {"self", "encoder", "decoder", "cross"}
    measure : {"cosine", "l1"}
        ``"cosine"``: cosine similarity of the flattened (n × n) maps, as Kovaleva et al.; ``"l1"``: 1 − half the
        mean over rows of the L1 distance between rows (1 = identical, 0 = disjoint rows).
    """
    if a.tokens != b.tokens:
        raise ValueError("the two results have different tokens; compare results of the same text (and tokenizer)")
    A, _, _ = a.attention_of(kind)
    B, _, _ = b.attention_of(kind)
    if A.shape != B.shape:
        raise ValueError(f"attention shapes differ: {A.shape} vs {B.shape}; compare models of the same shape")
    A = A.astype(np.float64)
    B = B.astype(np.float64)
    if measure == "cosine":
        fa, fb = A.reshape(*A.shape[:2], -1), B.reshape(*B.shape[:2], -1)
        num = (fa * fb).sum(-1)
        den = np.linalg.norm(fa, axis=-1) * np.linalg.norm(fb, axis=-1)
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    if measure == "l1":
        return 1.0 - 0.5 * np.abs(A - B).sum(-1).mean(-1)
    raise ValueError(f"measure must be 'cosine' or 'l1', got {measure!r}")


def mean_head_similarity(before: Sequence[AttentionResult], after: Sequence[AttentionResult],
                         kind: AttentionKind = "self", measure: str = "cosine") -> np.ndarray:
    """(L, H) head similarity averaged over pairs of results (``before[i]`` with ``after[i]``)."""
    if len(before) != len(after) or not before:
        raise ValueError(f"need two equally long, non-empty lists of results, got {len(before)} and {len(after)}")
    return np.mean([head_similarity(a, b, kind, measure) for a, b in zip(before, after)], axis=0)


def similarity_by_layer(similarity: np.ndarray) -> pd.DataFrame:
    """Per-layer summary of an (L, H) similarity: ``layer, mean, min, max, least_similar_head``."""
    s = np.asarray(similarity, dtype=np.float64)
    return pd.DataFrame({
        "layer": np.arange(s.shape[0]),
        "mean": s.mean(1),
        "min": s.min(1),
        "max": s.max(1),
        "least_similar_head": s.argmin(1),
    })
