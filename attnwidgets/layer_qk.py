"""One layer's attention kept as its queries and keys, and what rebuilds that layer's weights a block of rows at once.

What a layer needs to rebuild its ``[head, query, key]`` weights exactly is much smaller than the weights,
``heads · n · d``:

- the queries and keys *after* position encoding (RoPE applied), key heads as the model has them (grouped-query
  attention keeps fewer key heads than query heads; query head ``h`` reads key head ``h // (H / H_kv)``);
- the scaling of the logits;
- which keys each query may see (:class:`KeyMask`: padding, causal and sliding-window masks are one interval of keys
  per query, so two integers per row);
- an additive position bias (:class:`RelativeBias`: T5's relative-position buckets and ALiBi depend only on
  ``key - query``, so one value per head and offset);
- logit soft-capping (Gemma 2: ``c · tanh(s / c)``) and learned sinks (gpt-oss: an extra logit per head that takes part
  of every row's softmax and is then dropped, so rows sum to less than 1).

:class:`LayerQK` holds them and :meth:`LayerQK.rows` computes the weights of some rows, in float32, as the model's
eager attention does. The stack of layers, its memory budget and its per-head summaries are
:mod:`attnwidgets.attention_stack` (which re-exports these three classes). No torch in here: the runner captures the
arrays, this module only does numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["KeyMask", "LayerQK", "RelativeBias"]


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
        return self.rows_at(np.arange(start, stop), n_keys)

    def rows_at(self, queries: np.ndarray, n_keys: int) -> np.ndarray:
        """(head, len(queries), n_keys) float32: the bias of the rows ``queries`` (index array)."""
        if self.dense is not None:
            return self.dense[:, queries, :n_keys]
        q = np.asarray(queries)[:, None] + self.query_start
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
        return self._weights(slice(start, stop), stop - start, heads)

    def rows_at(self, queries: np.ndarray, heads: np.ndarray | None = None) -> np.ndarray:
        """(len(heads), len(queries), S) float32 weights of the rows ``queries`` (ascending indices), computed as
        :meth:`rows` computes a block: what a sampled overview reads, every sampled row in one product instead of
        one small product per run of rows.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> x = LayerQK(rng.normal(size=(2, 6, 4)).astype(np.float32), rng.normal(size=(1, 6, 4)).astype(np.float32),
        ...             0.5, KeyMask.causal(6, 6))
        >>> bool(np.allclose(x.rows_at(np.array([1, 4])), x.rows(0, 6)[:, [1, 4]], atol=1e-7))
        True
        """
        queries = np.asarray(queries, np.int64)
        return self._weights(queries, int(queries.size), heads)

    def _weights(self, rows: slice | np.ndarray, r: int, heads: np.ndarray | None) -> np.ndarray:
        """The weights of ``rows`` (a slice, or an index array), ``r`` of them: :meth:`rows` and :meth:`rows_at`."""
        n_keys = self.n_keys
        group = self.n_heads // self.n_kv_heads
        if self.mask.allowed is not None or r == 0:
            k0, k1 = 0, n_keys
        else:
            k0, k1 = int(self.mask.lo[rows].min()), int(self.mask.hi[rows].max())
            k1 = max(k1, k0)
        keys_t = self.key[:, k0:k1].transpose(0, 2, 1)  # (H_kv, D, w): a view
        if heads is None:
            heads = np.arange(self.n_heads)
            q = self.query[:, rows].reshape(self.n_kv_heads, group * r, -1)  # query heads grouped by key head
            logits = np.matmul(q, keys_t).reshape(self.n_heads, r, k1 - k0)
        else:
            heads = np.asarray(heads, np.int64)
            if heads.size == 1:  # one head: slices (views), no copy of its keys
                h = int(heads[0])
                logits = np.matmul(self.query[h:h + 1, rows], keys_t[h // group:h // group + 1])
            else:
                picked = self.query[heads, rows] if isinstance(rows, slice) else self.query[np.ix_(heads, rows)]
                logits = np.matmul(picked, keys_t[heads // group])
        logits *= np.float32(self.scaling)
        if self.bias is not None:
            if isinstance(rows, slice):
                bias = self.bias.rows(rows.start, rows.stop, n_keys)
            else:
                bias = self.bias.rows_at(rows, n_keys)
            logits += bias[heads][..., k0:k1]
        if self.softcap is not None:
            c = np.float32(self.softcap)
            logits /= c
            np.tanh(logits, out=logits)
            logits *= c
        if self.mask.allowed is not None:
            allowed = self.mask.allowed[rows, :n_keys]
        else:
            k = np.arange(k0, k1)
            allowed = (k >= self.mask.lo[rows, None]) & (k < self.mask.hi[rows, None])
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
