"""What a user watches change under ablation, from a result's outputs. numpy (and pandas) only.

- masked-LM top-k at each [MASK] (``outputs["mask_logits"]`` (n_masks, vocab));
- class probabilities of a classifier (``outputs["probs"]``);
- cosine similarity of pooled embeddings (``outputs["embedding"]``) between sentence pairs, or a ranking of
  candidates against a query;
- any callable ``result -> float | dict``.

Each watcher turns results into a flat ``{name: float}``; :func:`value_changes` lines "before" and "after" up as
columns of arrays (:class:`ValueChanges`, what the ablation widget draws), :func:`compare_values` as a tidy
DataFrame (for reading in a notebook).

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pandas loads when a table is made: importing the views stays light
    import pandas as pd

__all__ = [
    "ValueChanges",
    "as_values",
    "compare_values",
    "cosine",
    "cosine_matrix",
    "pair_similarities",
    "rank_candidates",
    "softmax",
    "top_k",
    "value_changes",
]

COLUMNS = ("item", "name", "before", "after", "delta")


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


@dataclass(frozen=True)
class ValueChanges:
    """Named values before and after, as columns: what :func:`compare_values` tabulates, kept as arrays so that a
    caller drawing them (the ablation widget) reads them without building and re-reading a DataFrame.

    Attributes
    ----------
    item : tuple of str, or None
        Which text, mask or pair each value belongs to (None: no ``item`` column).
    name : tuple of str
        What each value is ("cosine", a token, a class...).
    before, after, delta : numpy.ndarray
        (n,) float64, ``delta = after - before``; NaN where a name is on one side only.

    ``changes["before"]`` reads a column, as from a DataFrame.

    Examples
    --------
    >>> c = value_changes({"a": 0.5, "b": 1.0}, {"a": 0.25}, item="t")
    >>> c.name, c["after"].tolist(), c.delta.tolist()
    (('a', 'b'), [0.25, nan], [-0.25, nan])
    >>> c.records()[1]
    {'item': 't', 'name': 'b', 'before': 1.0, 'after': None, 'delta': None}
    """

    item: tuple[str, ...] | None
    name: tuple[str, ...]
    before: np.ndarray  # (n,) float64
    after: np.ndarray  # (n,) float64
    delta: np.ndarray  # (n,) float64

    def __len__(self) -> int:
        return len(self.name)

    def __getitem__(self, column: str) -> Any:
        if column not in self.columns:
            raise KeyError(f"no column {column!r}: the columns are {', '.join(self.columns)}")
        return getattr(self, column)

    @property
    def columns(self) -> tuple[str, ...]:
        return COLUMNS if self.item is not None else COLUMNS[1:]

    @classmethod
    def concat(cls, parts: Sequence[ValueChanges]) -> ValueChanges:
        """The rows of ``parts`` one after another (each part with an item, or none with one)."""
        if not parts:
            raise ValueError("nothing to put together: give at least one ValueChanges")
        items = [p.item for p in parts]
        if any(i is None for i in items) and not all(i is None for i in items):
            raise ValueError("some parts have an item column and some do not: give every part an item or none")
        return cls(
            None if items[0] is None else tuple(i for p in items for i in p or ()),
            tuple(n for p in parts for n in p.name),
            *(np.concatenate([getattr(p, c) for p in parts]) for c in ("before", "after", "delta")),
        )

    def to_frame(self) -> pd.DataFrame:
        """The tidy DataFrame: columns ``item`` (when there is one), ``name``, ``before``, ``after``, ``delta``."""
        import pandas as pd

        if not len(self):  # as a DataFrame of no rows is made: object columns
            return pd.DataFrame([], columns=list(self.columns))
        return pd.DataFrame({c: list(self[c]) if c in ("item", "name") else self[c] for c in self.columns})

    def records(self) -> list[dict[str, Any]]:
        """One JSON-able dict per row (NaN → None: JSON has no NaN)."""
        columns = [self[c] for c in self.columns]
        return [
            {c: _json_value(v) for c, v in zip(self.columns, row, strict=True)} for row in zip(*columns, strict=True)
        ]


def _json_value(v: Any) -> Any:
    if isinstance(v, str):
        return v
    f = float(v)
    return None if np.isnan(f) else f


def value_changes(before: Mapping[str, float], after: Mapping[str, float], item: str | None = None) -> ValueChanges:
    """Named values before and after as columns of arrays (names present on one side only get NaN on the other).

    >>> value_changes({"a": 1.0}, {"a": 0.5, "b": 2.0}).after.tolist()
    [0.5, 2.0]
    """
    names = list(before) + [k for k in after if k not in before]
    b = np.array([float(before.get(n, np.nan)) for n in names], dtype=np.float64)
    a = np.array([float(after.get(n, np.nan)) for n in names], dtype=np.float64)
    return ValueChanges(None if item is None else (item,) * len(names), tuple(names), b, a, a - b)


def compare_values(before: Mapping[str, float], after: Mapping[str, float], item: str | None = None) -> pd.DataFrame:
    """Tidy table of named values before and after: columns ``name, before, after, delta`` (and ``item``).

    Names present on one side only get NaN on the other. The same numbers as :func:`value_changes`, as a DataFrame.
    """
    return value_changes(before, after, item).to_frame()


def mask_values(
    mask_logits: np.ndarray, decode: Callable[[int], str], k: int = 5, ids: Sequence[int] | None = None
) -> list[dict[str, float]]:
    """Per [MASK]: ``{token: probability}`` of its top-k (or of the given vocabulary ``ids``)."""
    p = softmax(np.atleast_2d(mask_logits))
    out = []
    for row in p:
        chosen = list(ids) if ids is not None else np.argsort(-row, kind="stable")[:k].tolist()
        out.append({decode(int(i)): float(row[int(i)]) for i in chosen})
    return out
