"""Statistics that are sums over query rows, computed a block of rows at a time: how analysis works at any length.

A long input's attention is kept as queries and keys (``result.is_lazy``); ``result.attention`` would build a
``[layer, head, query, key]`` array that may not fit in memory. Every per-head statistic of this package that is a sum
or mean over rows (surface statistics, entropies, pattern features, word-level rows, dependency predictions, rollout of
chosen rows) has an accumulator with ``add(layer, start, stop, block)`` (``block`` is (head, rows, key), the rows
``start..stop`` of ``layer``) and ``finish()``; :func:`run_blocks` feeds several of them from one pass over
``result.iter_blocks()``, so the attention is rebuilt once for all of them and at most one block (32 MB) is alive.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np

from ..attention_stack import LazyStack
from ..result import AttentionResult

_said: list[bool] = []

__all__ = ["BlockAccumulator", "is_causal", "kept_summary", "run_blocks", "visible_keys"]


class BlockAccumulator(Protocol):
    def add(self, layer: int, start: int, stop: int, block: np.ndarray) -> None: ...

    def finish(self) -> Any: ...


def is_causal(result: AttentionResult) -> bool:
    """Whether row i may see keys j <= i only: the rule :class:`~attnwidgets.analysis.batch.AttentionBatch` uses."""
    return result.model.kind == "decoder"


def visible_keys(causal: bool, start: int, stop: int, n_keys: int) -> np.ndarray | None:
    """(stop - start, n_keys) bool, the keys rows ``start..stop`` may see when ``causal``; None (all) otherwise.

    >>> visible_keys(True, 1, 3, 3).astype(int).tolist()
    [[1, 1, 0], [1, 1, 1]]
    """
    if not causal:
        return None
    return np.arange(n_keys)[None, :] <= np.arange(start, stop)[:, None]


def run_blocks(result: AttentionResult, accumulators: Iterable[BlockAccumulator], rows: int | None = None) -> None:
    """Feed every block of ``result``'s self-attention to each accumulator, one pass (one rebuild) for all."""
    accs = list(accumulators)
    for layer, start, stop, block in result.iter_blocks(rows=rows):
        for acc in accs:
            acc.add(layer, start, stop, block)


def kept_summary(result: AttentionResult) -> dict[str, np.ndarray] | None:
    """The per-head sums the runner made with a long input's weights (``attnwidgets.runner.headstats``), or None.

    None for a dense result (numpy is fast there) and for a long one without them (loaded from disk, built from
    arrays, or by generate): its statistics are computed here in numpy, a block of rows at a time, which is said
    once per session (``attnwidgets.runner.headstats.attach_summary(result)`` makes the sums for such a result).
    """
    stack = result.stack("self")
    if not isinstance(stack, LazyStack):
        return None
    summary = stack.summary
    if summary and bool(summary["causal"]) == is_causal(result):
        return summary
    if not _said:
        _said.append(True)
        import warnings

        warnings.warn("this long input's result holds no statistics made with its weights (it was loaded from "
                      "disk, built from arrays or by generate), so they are rebuilt in numpy from its queries "
                      "and keys, a block of rows at a time: slower. "
                      "attnwidgets.runner.headstats.attach_summary(result) makes them once, in torch (said once per "
                      "session)", stacklevel=3)
    return None
