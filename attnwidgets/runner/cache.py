"""A least-recently-used cache bounded by bytes, for results."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class ByteLRU(Generic[V]):
    """Keep the most recently used values whose sizes add up to at most ``max_bytes``.

    Parameters
    ----------
    max_bytes : int
        Budget. A single value larger than the budget is not kept.

    Examples
    --------
    >>> c = ByteLRU(10)
    >>> c.put("a", "x", 6); c.put("b", "y", 6)
    >>> "a" in c, "b" in c
    (False, True)
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        item = self._items.get(key)
        if item is None:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return item[0]

    def put(self, key: Hashable, value: V, nbytes: int) -> None:
        if key in self._items:
            self.bytes -= self._items.pop(key)[1]
        if nbytes > self.max_bytes:
            return
        self._items[key] = (value, nbytes)
        self.bytes += nbytes
        while self.bytes > self.max_bytes:
            _, (_, size) = self._items.popitem(last=False)
            self.bytes -= size

    def clear(self) -> None:
        self._items.clear()
        self.bytes = 0

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)
