"""A least-recently-used cache bounded by bytes, for results."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

V = TypeVar("V")


@dataclass(frozen=True)
class Entry(Generic[V]):  # a dataclass: a generic NamedTuple needs Python 3.11
    """A kept value, the bytes it was counted as, and what its owner noted about it when putting it."""

    value: V
    nbytes: int
    note: Any


class Kept(NamedTuple):
    """How a cached result's attention is kept, noted when the runner (or partial recomputation) puts it in its
    cache: the bytes it takes as dense float32 attention, and whether it is kept as queries and keys (lazy)."""

    need: int
    lazy: bool


class ByteLRU(Generic[V]):
    """Keep the most recently used values whose sizes add up to at most ``max_bytes``.

    Parameters
    ----------
    max_bytes : int
        Budget. A single value larger than the budget is not kept.

    Each value may carry a ``note`` (what its owner needs to know about it when it is found again, read without
    asking the value: the runner notes how a result's attention is kept).

    Examples
    --------
    >>> c = ByteLRU(10)
    >>> c.put("a", "x", 6); c.put("b", "y", 6, note="dense")
    >>> "a" in c, "b" in c
    (False, True)
    >>> c.entry("b")
    Entry(value='y', nbytes=6, note='dense')
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[Hashable, Entry[V]] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        item = self.entry(key)
        return None if item is None else item.value

    def entry(self, key: Hashable) -> Entry[V] | None:
        """The value kept under ``key`` with its size and note (a use: it becomes the most recent), or None."""
        item = self._items.get(key)
        if item is None:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return item

    def put(self, key: Hashable, value: V, nbytes: int, note: Any = None) -> None:
        if key in self._items:
            self.bytes -= self._items.pop(key).nbytes
        if nbytes > self.max_bytes:
            return
        self._items[key] = Entry(value, nbytes, note)
        self.bytes += nbytes
        while self.bytes > self.max_bytes:
            _, oldest = self._items.popitem(last=False)
            self.bytes -= oldest.nbytes

    def clear(self) -> None:
        self._items.clear()
        self.bytes = 0

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)
