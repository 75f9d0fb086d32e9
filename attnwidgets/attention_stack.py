"""Attention kept as queries and keys: ``[layer, head, query, key]`` weights rebuilt on demand, a block of rows at once.

A dense float32 attention array costs ``layers · heads · n² · 4`` bytes: 75 MB for BERT at 512 tokens, 37 GB for a
12 × 12 model at 8,000. What a layer needs to rebuild its weights exactly is much smaller, ``heads · n · d``:

- the queries and keys *after* position encoding (RoPE applied), key heads as the model has them (grouped-query
  attention keeps fewer key heads than query heads; query head ``h`` reads key head ``h // (H / H_kv)``);
- the scaling of the logits;
- which keys each query may see (:class:`KeyMask`: padding, causal and sliding-window masks are one interval of keys
  per query, so two integers per row);
- an additive position bias (:class:`RelativeBias`: T5's relative-position buckets and ALiBi depend only on
  ``key - query``, so one value per head and offset);
- logit soft-capping (Gemma 2: ``c · tanh(s / c)``) and learned sinks (gpt-oss: an extra logit per head that takes part
  of every row's softmax and is then dropped, so rows sum to less than 1).

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

__all__ = ["HEAD_SUMMARIES_KEPT", "OVERVIEW_ABOVE", "OVERVIEW_SIDE", "AttentionTooLargeError", "KeyMask", "LayerQK",
           "LazyStack", "RelativeBias", "block_rows", "dense_budget", "format_bytes", "overview_factor",
           "set_dense_budget", "stack_rows", "stack_shape"]

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


@dataclass(frozen=True, eq=False)
class KeyMask:
    """Which keys each query may attend to.

    Most masks are one interval per query: ``lo[q] <= key < hi[q]`` (padding removed, causal, sliding window). A mask
    that is not (a prefix-LM, packed documents) keeps ``allowed`` as a (query, key) bool array instead.

    Examples
    --------
    >>> m = KeyMask.causal(3, 3)
    >>> m.rows(0, 3, 3).astype(int).tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    >>> KeyMask.causal(4, 4, window=2).rows(3, 4, 4).astype(int).tolist()
    [[0, 0, 1, 1]]
    """

    lo: np.ndarray
    hi: np.ndarray
    allowed: np.ndarray | None = None

    @classmethod
    def full(cls, n_queries: int, n_keys: int) -> KeyMask:
        return cls(np.zeros(n_queries, np.int64), np.full(n_queries, n_keys, np.int64))

    @classmethod
    def causal(cls, n_queries: int, n_keys: int, window: int | None = None) -> KeyMask:
        """Query ``i`` (the last query is the last key) sees keys up to its own position, the last ``window`` only."""
        hi = np.arange(n_keys - n_queries + 1, n_keys + 1, dtype=np.int64)
        lo = np.zeros(n_queries, np.int64) if window is None else np.maximum(hi - int(window), 0)
        return cls(lo, hi)

    @classmethod
    def from_allowed(cls, allowed: np.ndarray) -> KeyMask:
        """The compact form of a (query, key) bool array: intervals when every row's allowed keys are contiguous."""
        allowed = np.asarray(allowed, bool)
        n_k = allowed.shape[1]
        any_ = allowed.any(1)
        lo = np.where(any_, allowed.argmax(1), 0).astype(np.int64)
        hi = np.where(any_, n_k - allowed[:, ::-1].argmax(1), 0).astype(np.int64)
        if np.array_equal(allowed.sum(1), hi - lo):
            return cls(lo, hi)
        return cls(lo, hi, allowed.copy())

    @property
    def n_queries(self) -> int:
        return int(self.lo.shape[0])

    @property
    def nbytes(self) -> int:
        return self.lo.nbytes + self.hi.nbytes + (0 if self.allowed is None else self.allowed.nbytes)

    def rows(self, start: int, stop: int, n_keys: int) -> np.ndarray:
        """(stop - start, n_keys) bool: the keys rows ``start..stop`` may see."""
        if self.allowed is not None:
            return self.allowed[start:stop, :n_keys]
        k = np.arange(n_keys)
        return (k >= self.lo[start:stop, None]) & (k < self.hi[start:stop, None])

    def select(self, queries: np.ndarray, keys: np.ndarray) -> KeyMask:
        """The mask restricted to some queries and keys (index arrays, keys ascending): padding removed."""
        if self.allowed is not None:
            return KeyMask.from_allowed(self.allowed[np.ix_(queries, keys)])
        lo = np.searchsorted(keys, self.lo[queries], "left").astype(np.int64)
        hi = np.searchsorted(keys, self.hi[queries], "left").astype(np.int64)
        return KeyMask(lo, np.maximum(hi, lo))

    def prefix(self, n_queries: int, n_keys: int) -> KeyMask:
        allowed = None if self.allowed is None else self.allowed[:n_queries, :n_keys]
        return KeyMask(self.lo[:n_queries], np.minimum(self.hi[:n_queries], n_keys), allowed)


@dataclass(frozen=True, eq=False)
class RelativeBias:
    """An additive logit bias per head that depends only on ``key - query`` (T5's buckets, ALiBi).

    ``values[h, k - q + offset]`` is the bias head ``h`` adds to query ``q``'s logit for key ``k``; ``offset`` is the
    index of ``key - query == 0``. A bias that depends on more than the distance keeps ``dense`` (head, query, key).
    """

    values: np.ndarray
    offset: int
    dense: np.ndarray | None = None
    query_start: int = 0  # where query 0 sits among the keys' positions (a generation step's query comes late)

    @classmethod
    def from_dense(cls, bias: np.ndarray) -> RelativeBias:
        """Compact form of a (head, query, key) bias: its diagonals when it is the same along each one.

        Examples
        --------
        >>> d = np.arange(3)[None, None, :] - np.arange(2)[None, :, None]   # key - query
        >>> b = RelativeBias.from_dense(np.float32(0.5) * d)
        >>> b.dense is None, b.rows(0, 2, 3).tolist()
        (True, [[[0.0, 0.5, 1.0], [-0.5, 0.0, 0.5]]])
        """
        bias = np.asarray(bias, np.float32)
        h, n_q, _n_k = bias.shape
        if np.array_equal(bias[:, 1:, 1:], bias[:, :-1, :-1]):
            # diagonal d = k - q runs from -(n_q - 1) to n_k - 1: first column (bottom up) then first row
            values = np.concatenate([bias[:, :0:-1, 0], bias[:, 0, :]], axis=1)
            return cls(np.ascontiguousarray(values), n_q - 1)
        return cls(np.zeros((h, 0), np.float32), 0, bias.copy())

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + (0 if self.dense is None else self.dense.nbytes)

    def rows(self, start: int, stop: int, n_keys: int) -> np.ndarray:
        """(head, stop - start, n_keys) float32."""
        if self.dense is not None:
            return self.dense[:, start:stop, :n_keys]
        q = np.arange(start, stop)[:, None] + self.query_start
        idx = np.arange(n_keys)[None, :] - q + self.offset
        return self.values[:, idx]

    def select(self, queries: np.ndarray, keys: np.ndarray) -> RelativeBias:
        if self.dense is not None:
            return RelativeBias(self.values, self.offset, self.dense[:, queries][:, :, keys])
        if np.array_equal(queries, np.arange(queries.size) + queries[:1].sum()) and \
                np.array_equal(keys, np.arange(keys.size) + keys[:1].sum()):  # contiguous: shift the offset
            q0, k0 = (int(queries[0]) if queries.size else 0), (int(keys[0]) if keys.size else 0)
            return RelativeBias(self.values, self.offset + k0 - q0, None, self.query_start)
        n_k = int(keys.max()) + 1 if keys.size else 0
        dense = self.rows(0, int(queries.max()) + 1 if queries.size else 0, n_k)[:, queries][:, :, keys]
        return RelativeBias(self.values, self.offset, np.ascontiguousarray(dense))


@dataclass(frozen=True, eq=False)
class LayerQK:
    """One layer's queries and keys and what rebuilds its weights.

    Attributes
    ----------
    query : np.ndarray
        (H, T, D) float32, after position encoding.
    key : np.ndarray
        (H_kv, S, D) float32; H_kv divides H (grouped-query attention shares each key head among H / H_kv queries).
    scaling : float
        Logits are ``q · k * scaling``.
    mask : KeyMask
    bias : RelativeBias | None
    softcap : float | None
        Logits become ``softcap * tanh(logits / softcap)`` (before the mask).
    sinks : np.ndarray | None
        (H,) learned sink logits.
    """

    query: np.ndarray
    key: np.ndarray
    scaling: float
    mask: KeyMask
    bias: RelativeBias | None = None
    softcap: float | None = None
    sinks: np.ndarray | None = None

    def __post_init__(self) -> None:
        h, t, d = self.query.shape
        h_kv, _s, d_k = self.key.shape
        if d != d_k or h % h_kv:
            raise ValueError(f"queries {self.query.shape} and keys {self.key.shape} do not fit: the head sizes must "
                             "match and the key heads must divide the query heads")
        if self.mask.n_queries != t:
            raise ValueError(f"the mask has {self.mask.n_queries} rows for {t} queries")

    @property
    def n_heads(self) -> int:
        return int(self.query.shape[0])

    @property
    def n_kv_heads(self) -> int:
        return int(self.key.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.query.shape[1])

    @property
    def n_keys(self) -> int:
        return int(self.key.shape[1])

    def arrays(self) -> list[np.ndarray]:
        out = [self.query, self.key, self.mask.lo, self.mask.hi]
        out += [a for a in (self.mask.allowed, self.sinks) if a is not None]
        if self.bias is not None:
            out += [a for a in (self.bias.values, self.bias.dense) if a is not None]
        return out

    def rows(self, start: int, stop: int, heads: np.ndarray | None = None) -> np.ndarray:
        """(len(heads), stop - start, S) float32 weights of rows ``start..stop`` (all heads when ``heads`` is None).

        Only the keys some row of the block may see are computed (a causal block stops at its last row, a sliding
        window spans its width), in place, in float32, as the model's eager attention does: logits = q·k * scaling
        (+ bias; soft-capped), masked, softmax (with the sink's logit in the denominator). A row whose queries or keys
        hold NaN stays NaN, so the checks downstream see it.
        """
        n_keys, r = self.n_keys, stop - start
        group = self.n_heads // self.n_kv_heads
        if self.mask.allowed is not None or r == 0:
            k0, k1 = 0, n_keys
        else:
            k0, k1 = int(self.mask.lo[start:stop].min()), int(self.mask.hi[start:stop].max())
            k1 = max(k1, k0)
        keys_t = self.key[:, k0:k1].transpose(0, 2, 1)  # (H_kv, D, w): a view
        if heads is None:
            heads = np.arange(self.n_heads)
            q = self.query[:, start:stop].reshape(self.n_kv_heads, group * r, -1)  # query heads grouped by key head
            logits = np.matmul(q, keys_t).reshape(self.n_heads, r, k1 - k0)
        else:
            heads = np.asarray(heads, np.int64)
            if heads.size == 1:  # one head: slices (views), no copy of its keys
                h = int(heads[0])
                logits = np.matmul(self.query[h:h + 1, start:stop], keys_t[h // group:h // group + 1])
            else:
                logits = np.matmul(self.query[heads, start:stop], keys_t[heads // group])
        logits *= np.float32(self.scaling)
        if self.bias is not None:
            logits += self.bias.rows(start, stop, n_keys)[heads][..., k0:k1]
        if self.softcap is not None:
            c = np.float32(self.softcap)
            logits /= c
            np.tanh(logits, out=logits)
            logits *= c
        if self.mask.allowed is not None:
            allowed = self.mask.allowed[start:stop, :n_keys]
        else:
            k = np.arange(k0, k1)
            allowed = (k >= self.mask.lo[start:stop, None]) & (k < self.mask.hi[start:stop, None])
        if not allowed.all():  # one (rows, keys) additive mask for every head: an add, not a masked copy
            logits += np.where(allowed, np.float32(0), np.float32(-np.inf))[None]
        top = logits.max(-1, keepdims=True) if k1 > k0 else np.full((len(heads), r, 1), -np.inf, np.float32)
        if self.sinks is not None:
            sink = self.sinks[heads].astype(np.float32)[:, None, None]
            top = np.maximum(top, sink)
        top[top == -np.inf] = 0  # a row that sees no key: weights 0, not NaN
        logits -= top
        np.exp(logits, out=logits)
        total = logits.sum(-1, keepdims=True)
        if self.sinks is not None:
            total += np.exp(sink - top)
        total[total == 0] = 1
        logits /= total
        if (k0, k1) == (0, n_keys):
            return logits
        out = np.zeros((len(heads), r, n_keys), np.float32)
        out[:, :, k0:k1] = logits
        return out

    def head(self, head: int) -> LayerQK:
        """This layer's query head ``head`` alone, with the key head it reads (views: nothing copied)."""
        if not 0 <= head < self.n_heads:
            raise IndexError(f"head {head} is out of range: this layer has {self.n_heads} heads")
        one = slice(head, head + 1)
        j = head // (self.n_heads // self.n_kv_heads)
        bias = None
        if self.bias is not None:
            b = self.bias
            bias = RelativeBias(b.values[one], b.offset, None if b.dense is None else b.dense[one], b.query_start)
        return LayerQK(self.query[one], self.key[j:j + 1], self.scaling, self.mask, bias, self.softcap,
                       None if self.sinks is None else self.sinks[one])

    def select(self, queries: np.ndarray, keys: np.ndarray) -> LayerQK:
        """This layer over some queries and keys only (index arrays, ascending): how padding is removed.

        Selecting everything (an input without padding) returns this layer itself: nothing is copied, so a long input's
        queries and keys exist once, not twice, while its result is built."""
        if np.array_equal(queries, np.arange(self.n_queries)) and np.array_equal(keys, np.arange(self.n_keys)):
            return self
        bias = None if self.bias is None else self.bias.select(queries, keys)
        return LayerQK(np.ascontiguousarray(self.query[:, queries]), np.ascontiguousarray(self.key[:, keys]),
                       self.scaling, self.mask.select(queries, keys), bias, self.softcap, self.sinks)

    def prefix(self, n_queries: int, n_keys: int) -> LayerQK:
        """The first ``n_queries`` queries over the first ``n_keys`` keys (a generation's state at an earlier step)."""
        return LayerQK(self.query[:, :n_queries], self.key[:, :n_keys], self.scaling,
                       self.mask.prefix(n_queries, n_keys), self.bias, self.softcap, self.sinks)


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
