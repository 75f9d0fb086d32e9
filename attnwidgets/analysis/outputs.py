"""What a user watches change under ablation, from a result's outputs. numpy (and pandas) only.

- masked-LM top-k at each [MASK] (``outputs["mask_logits"]`` (n_masks, vocab));
- class probabilities of a classifier (``outputs["probs"]``);
- cosine similarity of pooled embeddings (``outputs["embedding"]``) between sentence pairs, or a ranking of
  candidates against a query;
- any callable ``result -> float | dict``.

Each watcher turns results into a flat ``{name: float}``; :func:`compare_values` lines "before" and "after" up in
a tidy table.

Examples
--------
>>> import numpy as np
>>> cosine(np.array([1.0, 0.0]), np.array([1.0, 1.0])).round(3)
np.float64(0.707)
>>> order, scores = rank_candidates(np.array([1.0, 0]), np.array([[0, 1.0], [1, 0.1], [1, 1]]))
>>> order.tolist()
[1, 2, 0]
>>> compare_values({"a": 0.5}, {"a": 0.25}).to_dict("records")
[{'name': 'a', 'before': 0.5, 'after': 0.25, 'delta': -0.25}]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pandas loads when a table is made: importing the views stays light
    import pandas as pd

__all__ = ["as_values", "compare_values", "cosine", "cosine_matrix", "pair_similarities", "rank_candidates",
           "softmax", "top_k"]


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def top_k(logits: np.ndarray, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Top-k ids and probabilities of each row of logits (N, V) -> ((N, k) int64, (N, k) float64), best first."""
    p = softmax(np.atleast_2d(logits))
    k = min(k, p.shape[-1])
    ids = np.argsort(-p, axis=-1, kind="stable")[:, :k]
    return ids.astype(np.int64), np.take_along_axis(p, ids, -1)


def cosine(a: np.ndarray, b: np.ndarray) -> np.float64:
    """Cosine similarity of two vectors (0 when either is zero)."""
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return np.float64(0.0)
    return np.float64(np.dot(a, b) / (na * nb))


def cosine_matrix(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(N, M) cosine similarities between rows of A (N, d) and B (M, d)."""
    A = np.asarray(A, np.float64)
    B = np.asarray(B, np.float64)
    An = A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-12)
    Bn = B / np.maximum(np.linalg.norm(B, axis=1, keepdims=True), 1e-12)
    return An @ Bn.T


def pair_similarities(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(N,) cosine similarity of each row of A (N, d) with the same row of B."""
    A = np.asarray(A, np.float64)
    B = np.asarray(B, np.float64)
    if A.shape != B.shape:
        raise ValueError(f"pairs need two arrays of the same shape, got {A.shape} and {B.shape}")
    num = (A * B).sum(1)
    return num / np.maximum(np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1), 1e-12)


def rank_candidates(query: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidates (M, d) ordered by cosine similarity to the query (d,): (order (M,), scores (M,) by candidate)."""
    scores = cosine_matrix(np.atleast_2d(query), candidates)[0]
    return np.argsort(-scores, kind="stable"), scores


def as_values(value: Any, name: str = "value") -> dict[str, float]:
    """Flatten what a user callable returned (a number, a mapping of numbers, or an array) to ``{name: float}``."""
    if isinstance(value, Mapping):
        return {str(k): float(v) for k, v in value.items()}
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        return {name: float(arr)}
    return {f"{name}[{i}]": float(v) for i, v in enumerate(arr.ravel())}


def compare_values(before: Mapping[str, float], after: Mapping[str, float],
                   item: str | None = None) -> pd.DataFrame:
    """Tidy table of named values before and after: columns ``name, before, after, delta`` (and ``item``).

    Names present on one side only get NaN on the other.
    """
    names = list(before) + [k for k in after if k not in before]
    rows = []
    for n in names:
        b = float(before.get(n, np.nan))
        a = float(after.get(n, np.nan))
        row: dict[str, Any] = {"item": item} if item is not None else {}
        row.update(name=n, before=b, after=a, delta=a - b)
        rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows, columns=(["item"] if item is not None else []) + ["name", "before", "after", "delta"])


def mask_values(mask_logits: np.ndarray, decode: Callable[[int], str], k: int = 5,
                ids: Sequence[int] | None = None) -> list[dict[str, float]]:
    """Per [MASK]: ``{token: probability}`` of its top-k (or of the given vocabulary ``ids``)."""
    p = softmax(np.atleast_2d(mask_logits))
    out = []
    for row in p:
        chosen = list(ids) if ids is not None else np.argsort(-row, kind="stable")[:k].tolist()
        out.append({decode(int(i)): float(row[int(i)]) for i in chosen})
    return out
