"""The checks of a corpus's running sums (:meth:`attnwidgets.analysis.corpus.CorpusStats.check`): what adding
results can make, or a ValueError naming what a file or a shard changed by hand broke. Loading a saved file or a
resumed shard runs them; split from ``corpus.py`` so that it holds the sums and how they grow."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .patterns import PATTERNS

__all__ = ["check_sums", "numbers_of"]


def check_sums(sums: Mapping[str, np.ndarray], counts: Mapping[str, np.ndarray], n_docs: Any, n_tokens: Any, *,
               model: Any = None, pattern_counts: np.ndarray | None = None,
               distances: tuple[np.ndarray, int, tuple[int, int] | None] | None = None) -> None:
    """Raise ValueError unless ``sums`` / ``counts`` (statistic -> (layers, heads)) over ``n_docs`` inputs of
    ``n_tokens`` tokens are what adding results can make (:meth:`CorpusStats.check
    <attnwidgets.analysis.corpus.CorpusStats.check>` says which); ``distances`` is (total, inputs, (layers, heads))
    of the head distances, when kept.

    >>> check_sums({"sep": np.array([[2.0]])}, {"sep": np.array([[1]])}, 1, 3)
    Traceback (most recent call last):
    ...
    ValueError: its mean 'sep' goes from 2 to 2, outside 0..1
    """
    for name, value in (("n_docs", n_docs), ("n_tokens", n_tokens)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"its {name} is {value!r}, not a count")
    if sums.keys() != counts.keys():
        raise ValueError(f"its sums ({sorted(sums)}) and counts ({sorted(counts)}) are of different "
                         "statistics")
    shapes = {a.shape for a in (*sums.values(), *counts.values())}
    if model is not None:
        shapes.add((model.n_layers, model.n_heads))
    if len(shapes) > 1 or any(len(s) != 2 for s in shapes):
        raise ValueError(f"its arrays are shaped {sorted(shapes)}, not one (layers, heads) shape"
                         + ("" if model is None else f" of its model's {model.n_layers} x "
                            f"{model.n_heads}"))
    bound = np.log(max(n_tokens, 2)) + 1.0  # entropy of rows over at most n_tokens keys, rows summing to <= 1
    for name, total in sums.items():
        count = counts[name]
        if count.min(initial=0) < 0 or count.max(initial=0) > n_docs:
            raise ValueError(f"its count of {name!r} goes from {count.min()} to {count.max()}, outside 0..n_docs "
                             f"= {n_docs}")
        if not np.isfinite(total).all():
            raise ValueError(f"its sum of {name!r} is not finite")
        high = bound if name.startswith("entropy") else 1.0
        # rows may sum to 1 + 1e-3 (2**-7 in bfloat16): shares a little past 1 are rounding, not a broken file
        if (total < -1e-6 * count).any() or (total > (high + 1e-2) * count + 1e-9).any():
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(count > 0, total / np.maximum(count, 1), total)
            raise ValueError(f"its mean {name!r} goes from {float(mean.min()):.4g} to {float(mean.max()):.4g}, "
                             f"outside 0..{high:.4g}")
    if pattern_counts is not None:
        pc = pattern_counts
        want = (*next(iter(shapes), pc.shape[:2]), len(PATTERNS))
        if pc.shape != want or pc.min(initial=0) < 0 or not (pc.sum(-1) == n_docs).all():
            raise ValueError(f"its pattern counts (shape {pc.shape}) are not {want} counts of 0 or more, one class "
                             f"per input and head (n_docs = {n_docs})")
    if distances is not None:
        total, dist_docs, dist_shape = distances
        k = int(np.prod(next(iter(shapes), dist_shape or (0, 0))))
        if total.shape != (k, k) or not np.isfinite(total).all() or total.min(initial=0) < 0 \
                or not 0 <= dist_docs <= n_docs:
            raise ValueError(f"its head distances (shape {total.shape}, {dist_docs} inputs) are not a "
                             f"({k}, {k}) array of distances of 0 or more over at most n_docs inputs")


def numbers_of(value: Any, what: str, kinds: str) -> np.ndarray:
    """``value`` as float64 (kinds "f") or int64 (kinds "iu"), refusing arrays of other kinds (text, objects)."""
    arr = np.asarray(value)
    if arr.dtype.kind not in kinds and not (kinds == "f" and arr.dtype.kind in "iu"):
        raise ValueError(f"its {what} is an array of {arr.dtype}, not of {'floats' if kinds == 'f' else 'integers'}")
    return arr.astype(np.float64 if kinds == "f" else np.int64)
