"""Attention kept as queries and keys: ``[layer, head, query, key]`` weights rebuilt on demand, a block of rows at once.

A dense float32 attention array costs ``layers · heads · n² · 4`` bytes: 75 MB for BERT at 512 tokens, 37 GB for a
12 × 12 model at 8,000. What a layer needs to rebuild its weights exactly is much smaller, ``heads · n · d``: its
queries and keys, mask, bias, soft-cap and sinks, held by :class:`~attnwidgets.layer_qk.LayerQK` (one layer's part,
in :mod:`attnwidgets.layer_qk`, re-exported here with :class:`KeyMask` and :class:`RelativeBias`).

This module is the stack of those layers and what it costs: :class:`LazyStack` (rows of any layer and head, the dense
array within the budget, the per-head summaries the runner's statistics pass leaves on it), and the helpers that read
a dense array and a lazy stack alike (:func:`stack_rows`, :func:`stack_shape`, :func:`block_rows`, :func:`iter_blocks`).

Rebuilt weights are float32 and equal the model's eager attention to float rounding (the runner's tests hold them to
1e-5 on every supported family). No torch in here: the runner captures the arrays, this module only does numpy.

The one budget: :func:`dense_budget` (512 MiB unless :func:`set_dense_budget` says otherwise) is the most a dense
attention array may take. Below it, ``result.attention`` is built (once) and every older function works on it; above
it, ``result.attention`` raises :class:`AttentionTooLargeError` and code works from ``result.head``, ``result.rows`` or
``result.iter_blocks``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from .layer_qk import KeyMask, LayerQK, RelativeBias

__all__ = ["HEAD_SUMMARIES_KEPT", "OVERVIEW_ABOVE", "OVERVIEW_SIDE", "AttentionTooLargeError", "KeyMask", "LayerQK",
           "LazyStack", "RelativeBias", "block_rows", "dense_budget", "format_bytes", "overview_factor",
           "set_dense_budget", "stack_rows", "stack_rows_at", "stack_shape"]

_DEFAULT_BUDGET = 512 << 20
_budget: list[int] = [int(os.environ.get("ATTNWIDGETS_DENSE_BUDGET", _DEFAULT_BUDGET))]
BLOCK_BYTES = 32 << 20  # how much one block of rows may take while it is computed
#: Above this many tokens on either side a head is drawn as a block-max (or mean) overview, detail fetched by region.
OVERVIEW_ABOVE = 1024
#: Longest side of that overview (about the grid's width in device pixels).
OVERVIEW_SIDE = 512


def overview_factor(n_queries: int, n_keys: int, above: int = OVERVIEW_ABOVE, side: int = OVERVIEW_SIDE) -> int:
    """Cells per overview cell along each side: 1 up to ``above`` tokens, else what brings the longer side to ``side``.

    >>> overview_factor(500, 500), overview_factor(2000, 1500), overview_factor(8192, 8192)
    (1, 4, 16)
    """
    if max(n_queries, n_keys) <= above:
        return 1
    return -(-max(n_queries, n_keys) // side)


def dense_budget() -> int:
    """The most bytes a dense ``[layer, head, query, key]`` attention array may take (default 512 MiB).

    The runner keeps a run's attention as queries and keys when its dense array would be bigger, and
    ``result.attention`` on such a result raises :class:`AttentionTooLargeError`. Set it with
    :func:`set_dense_budget` or the ``ATTNWIDGETS_DENSE_BUDGET`` environment variable (bytes).

    Examples
    --------
    >>> dense_budget() >= 0
    True
    """
    return _budget[0]


def set_dense_budget(nbytes: int) -> int:
    """Set the dense-attention budget in bytes and return the old one (0 keeps every run as queries and keys).

    It applies to inputs the runner has cached too: one cached dense and now past the budget (or cached as queries
    and keys and now within it) is run again the next time it is asked for (``Runner.cached``).

    Examples
    --------
    >>> old = set_dense_budget(1 << 20); _ = set_dense_budget(old); dense_budget() == old
    True
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
        raise ValueError(f"the dense budget is a number of bytes, 0 or more; got {nbytes!r}")
    old = _budget[0]
    _budget[0] = int(nbytes)
    return old


def format_bytes(n: float) -> str:
    """``1536`` -> "1.5 KB"; decimal units, as people read sizes.

    >>> format_bytes(37_000_000_000)
    '37.0 GB'
    """
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


class AttentionTooLargeError(MemoryError):
    """A dense attention array was asked for that is bigger than :func:`dense_budget`."""


HEAD_SUMMARIES_KEPT = 4
"""Heads' own summaries a pending stack keeps (:meth:`LazyStack.head_summary`)."""


@dataclass(frozen=True, eq=False)
class LazyStack:
    """``[layer, head, query, key]`` attention kept as each layer's :class:`LayerQK`; rows rebuilt on demand.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> q, k = rng.normal(size=(2, 4, 8)).astype(np.float32), rng.normal(size=(1, 4, 8)).astype(np.float32)
    >>> s = LazyStack((LayerQK(q, k, 8 ** -0.5, KeyMask.causal(4, 4)),))
    >>> s.shape, s.rows(0, 0, 4).shape, bool(np.allclose(s.rows(0, 0, 4).sum(-1), 1))
    ((1, 2, 4, 4), (2, 4, 4), True)
    >>> s.rows(0, 0, 1, head=1).round(3).tolist()
    [[1.0, 0.0, 0.0, 0.0]]
    """

    layers: tuple[LayerQK, ...]
    _dense: list[np.ndarray] = field(default_factory=list, repr=False)
    _summary: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _maker: list[Callable[[LazyStack], dict[str, np.ndarray]]] = field(default_factory=list, repr=False)
    _making: threading.Lock = field(default_factory=threading.Lock, repr=False)  # one pass at a time, never two
    _warming: list[threading.Thread] = field(default_factory=list, repr=False)
    _heads: dict[tuple[int, int], dict[str, np.ndarray]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError("a LazyStack needs at least one layer")
        shapes = {(x.n_heads, x.n_queries, x.n_keys) for x in self.layers}
        if len(shapes) != 1:
            raise ValueError(f"every layer must have the same heads, queries and keys; got {sorted(shapes)}")

    @property
    def shape(self) -> tuple[int, int, int, int]:
        x = self.layers[0]
        return (len(self.layers), x.n_heads, x.n_queries, x.n_keys)

    @property
    def dense_nbytes(self) -> int:
        """Bytes the dense float32 array would take."""
        return int(np.prod(self.shape, dtype=np.int64)) * 4

    @property
    def nbytes(self) -> int:
        """Bytes this stack holds (arrays shared between layers, such as one mask, counted once)."""
        seen: dict[int, int] = {}
        for layer in self.layers:
            for a in layer.arrays():
                seen[id(a)] = a.nbytes
        heads = sum(a.nbytes for one in list(self._heads.values()) for a in one.values())
        return sum(seen.values()) + sum(a.nbytes for a in self._dense) + \
            sum(a.nbytes for a in self._summary.values()) + heads

    @property
    def summary(self) -> dict[str, np.ndarray]:
        """Per-head sums and overviews made with the weights (``attnwidgets.runner.headstats``), or empty: plain
        arrays, read-only. The runner hands a long input's stack a maker (:meth:`defer_summary`) instead of the arrays,
        so a run costs its forward only; the first statistic or view that asks pays for the pass, once. A pass that
        fails or is interrupted leaves nothing behind (the maker is kept: the next ask tries again). A stack made
        another way (selected, loaded, built from arrays) starts without."""
        if not self._summary and self._maker:
            with self._making:  # a pass warming in the background (warm_summary) is waited for, not made twice
                if not self._summary and self._maker:
                    self.set_summary(self._maker[0](self))
        return self._summary

    @property
    def summary_made(self) -> dict[str, np.ndarray]:
        """:attr:`summary` when it is made, else empty: never runs the pass (what a view reads: opening one is fast)."""
        return self._summary

    def warm_summary(self) -> bool:
        """Start making :attr:`summary` in a background thread when a maker waits, and say whether one started.

        A view of a long input calls this when it opens: it draws its first map from sampled rows at once (it never
        asks for a pending summary), and its later maps are lookups once the pass is done, while the kernel waits for
        the user. A statistic asked meanwhile waits for that pass instead of making a second one. A pass that fails
        there (out of memory, say) stores nothing: the next ask makes it again in the asker's thread, and raises there.
        """
        if not self.summary_pending or any(t.is_alive() for t in self._warming):
            return False

        def make() -> None:
            try:
                self.summary  # noqa: B018 (the property makes it)
            except Exception:  # kept maker: the next ask retries and reports it
                pass

        thread = threading.Thread(target=make, name="attnwidgets-summary")
        self._warming[:] = [thread]
        thread.start()
        return True

    @property
    def summary_pending(self) -> bool:
        """Whether a maker waits to make :attr:`summary` (asking for it runs the pass)."""
        return bool(self._maker) and not self._summary

    def head_summary(self, layer: int, head: int) -> dict[str, np.ndarray]:
        """One head's summary while the whole one is pending: the maker run now, in the caller's thread, over that
        head's queries and keys alone (a one-layer, one-head stack, so its arrays have one layer and one head). What
        a view's first map reads while the whole pass runs in the background: one head costs about 1 / (L x H) of the
        pass. Empty when no maker waits (the whole summary is made, or none was deferred). The last
        :data:`HEAD_SUMMARIES_KEPT` are kept (a view asks for its head again as it redraws); the whole summary, once
        made, drops them."""
        maker = self._maker[:1]  # a copy: the background pass may clear the list meanwhile
        if self._summary or not maker:
            return {}
        got = self._heads.get((layer, head))
        if got is None:
            got = maker[0](LazyStack((self.layers[layer].head(head),)))
            for a in got.values():
                a.flags.writeable = False
            if self._summary:  # the whole pass finished meanwhile: keep nothing beside it
                return got
            while len(self._heads) >= HEAD_SUMMARIES_KEPT:
                self._heads.pop(next(iter(self._heads)))
            self._heads[layer, head] = got
        return got

    def defer_summary(self, maker: Callable[[LazyStack], dict[str, np.ndarray]]) -> None:
        """Make :attr:`summary` with ``maker(self)`` when it is first asked for (a function of the stack, so the stack
        holds no reference to itself)."""
        self._maker[:] = [maker]

    def set_summary(self, arrays: dict[str, np.ndarray]) -> None:
        """Hand this stack its summary, all at once and read-only (it describes these queries and keys only)."""
        for a in arrays.values():
            a.flags.writeable = False
        self._summary.clear()
        self._summary.update(arrays)
        self._maker.clear()
        self._heads.clear()

    def rows(self, layer: int, start: int, stop: int, head: int | None = None) -> np.ndarray:
        """Weights of rows ``start..stop``: (H, r, S) for every head, (r, S) for one, the heads' mean for ``-1``."""
        x = self.layers[layer]
        if self._dense:
            block = self._dense[0][layer, :, start:stop]
            return block if head is None else block.mean(0) if head == -1 else block[head]
        heads = None if head is None or head == -1 else np.array([head])
        n_heads = x.n_heads if heads is None else 1
        step = block_rows(n_heads, x.n_keys)
        if stop - start <= step:  # one block: as computed
            block = x.rows(start, stop, heads)
            return block if head is None else block.mean(0) if head == -1 else block[0]
        shape = (stop - start, x.n_keys) if head is not None else (n_heads, stop - start, x.n_keys)
        out = np.empty(shape, np.float32)  # many rows: computed a block at a time into the answer
        for a in range(start, stop, step):
            b = min(stop, a + step)
            block = x.rows(a, b, heads)
            if head is None:
                out[:, a - start:b - start] = block
            elif head == -1:
                block.mean(0, out=out[a - start:b - start])
            else:
                out[a - start:b - start] = block[0]
        return out

    def rows_at(self, layer: int, queries: np.ndarray, head: int | None = None) -> np.ndarray:
        """Weights of the rows ``queries`` (ascending indices): (H, r, S) for every head, (r, S) for one, the heads'
        mean for ``-1``. Computed a block of rows at a time like :meth:`rows`, but each block is a product over the
        rows asked for only (a sampled overview's rows, spread over the whole map)."""
        x = self.layers[layer]
        queries = np.asarray(queries, np.int64)
        if self._dense:
            block = self._dense[0][layer][:, queries]
            return block if head is None else block.mean(0) if head == -1 else block[head]
        heads = None if head is None or head == -1 else np.array([head])
        n_heads = x.n_heads if heads is None else 1
        step = block_rows(n_heads, x.n_keys)
        if queries.size <= step:  # one block: as computed
            block = x.rows_at(queries, heads)
            return block if head is None else block.mean(0) if head == -1 else block[0]
        shape = (queries.size, x.n_keys) if head is not None else (n_heads, queries.size, x.n_keys)
        out = np.empty(shape, np.float32)
        for a in range(0, queries.size, step):
            b = min(queries.size, a + step)
            block = x.rows_at(queries[a:b], heads)
            if head is None:
                out[:, a:b] = block
            elif head == -1:
                block.mean(0, out=out[a:b])
            else:
                out[a:b] = block[0]
        return out

    def dense(self, what: str = "attention") -> np.ndarray:
        """The whole ``[layer, head, query, key]`` array (built once, kept), or :class:`AttentionTooLargeError`."""
        if self._dense:
            return self._dense[0]
        need = self.dense_nbytes
        if need > dense_budget():
            L, H, T, S = self.shape
            raise AttentionTooLargeError(
                f"{what} of this result would take {format_bytes(need)} as a dense [layer, head, query, key] array "
                f"({L} layers x {H} heads x {T} x {S} float32), more than the dense budget of "
                f"{format_bytes(dense_budget())}. Ask for what you will look at instead: result.head(layer, head) "
                f"for one head's (query, key) map, result.rows(layer, start, stop) for a block of rows, or "
                f"result.iter_blocks() to go through all of them; or raise the budget with "
                f"attnwidgets.runner.set_dense_budget(nbytes)"
            )
        out = np.empty(self.shape, np.float32)
        for layer, start, stop, block in iter_blocks(self):
            out[layer, :, start:stop] = block
        out.flags.writeable = False
        self._dense.append(out)
        return out

    def select(self, queries: np.ndarray, keys: np.ndarray) -> LazyStack:
        return LazyStack(tuple(x.select(queries, keys) for x in self.layers))

    def prefix(self, n_queries: int, n_keys: int) -> LazyStack:
        return LazyStack(tuple(x.prefix(n_queries, n_keys) for x in self.layers))

    def freeze(self) -> None:
        for layer in self.layers:
            for a in layer.arrays():
                a.flags.writeable = False
        for a in self._summary.values():
            a.flags.writeable = False


Stack = "np.ndarray | LazyStack"


def stack_shape(stack: np.ndarray | LazyStack) -> tuple[int, int, int, int]:
    """(layers, heads, queries, keys) of a dense array or a lazy stack."""
    return tuple(int(x) for x in stack.shape)  # type: ignore[return-value]


def block_rows(n_heads: int, n_keys: int, budget: int | None = None) -> int:
    """How many rows of all heads fit in one block of ``budget`` bytes (default ``BLOCK_BYTES``, 32 MiB; at least 1).

    >>> block_rows(12, 8192)
    85
    """
    return max(1, (BLOCK_BYTES if budget is None else budget) // max(1, n_heads * n_keys * 4))


def stack_rows(stack: np.ndarray | LazyStack, layer: int, start: int, stop: int, head: int | None = None) -> np.ndarray:
    """Rows ``start..stop`` of ``layer``: (H, r, S), or one head's (r, S), or the heads' mean (``head=-1``)."""
    if isinstance(stack, LazyStack):
        return stack.rows(layer, start, stop, head)
    block = stack[layer, :, start:stop]
    if head is None:
        return block
    return block.mean(0) if head == -1 else block[head]


def stack_rows_at(stack: np.ndarray | LazyStack, layer: int, queries: np.ndarray,
                  head: int | None = None) -> np.ndarray:
    """Rows ``queries`` (ascending indices) of ``layer``: (H, r, S), or one head's (r, S), or the heads' mean
    (``head=-1``); of a dense array or a lazy stack (:meth:`LazyStack.rows_at`).

    >>> a = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> stack_rows_at(a, 0, np.array([1, 3]), head=0).tolist()
    [[4.0, 5.0, 6.0, 7.0], [12.0, 13.0, 14.0, 15.0]]
    """
    if isinstance(stack, LazyStack):
        return stack.rows_at(layer, queries, head)
    block = stack[layer][:, np.asarray(queries, np.int64)]
    if head is None:
        return block
    return block.mean(0) if head == -1 else block[head]


def iter_blocks(stack: np.ndarray | LazyStack, rows: int | None = None,
                layers: range | None = None) -> Iterator[tuple[int, int, int, np.ndarray]]:
    """``(layer, start, stop, block)`` over every layer and block of rows; ``block`` is (H, stop - start, S).

    ``rows`` is the block height (default: what fits in 32 MB). A dense array is sliced, never copied.
    """
    L, H, T, S = stack_shape(stack)
    step = rows or block_rows(H, S)
    for layer in layers if layers is not None else range(L):
        for start in range(0, T, step):
            stop = min(T, start + step)
            yield layer, start, stop, stack_rows(stack, layer, start, stop)
