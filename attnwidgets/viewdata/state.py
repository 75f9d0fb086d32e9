"""A view's state as data: the frozen dataclasses a state function returns, and the one converter to the wire.

Each view has a pure state function in :mod:`attnwidgets.viewdata.views` (``views.heatmap.heatmap_state``...):
(result, view options) → a frozen dataclass of what the page draws, with a ``payload`` (the ``_payload`` trait) and,
for most views, a ``meta`` (the ``_meta`` trait). The requests a page makes (another head, a tile, labels) are pure
functions too, returning dataclasses. Numbers stay numpy arrays in the dataclasses; :func:`to_wire` turns a state
into the JSON-able dicts the traits hold (arrays through :func:`~attnwidgets.viewdata.wire.pack`), and
:func:`to_reply` turns a request's answer into a reply message and its binary buffers.

``js/scripts/wire_types.py`` writes ``js/src/generated/wire.ts`` from the same dataclasses (:func:`ts_type`), one
interface per dataclass, so a field renamed here and not in the page is a ``tsc`` error.

Examples
--------
>>> import dataclasses, numpy as np
>>> @dataclasses.dataclass(frozen=True)
... class Tile:
...     matrix: np.ndarray
...     q0: int
...     note: str | None = dataclasses.field(default=None, metadata=OPTIONAL)
>>> wire = to_wire(Tile(np.eye(2), 3))
>>> sorted(wire), wire["matrix"]["shape"], wire["q0"]
(['matrix', 'q0'], [2, 2], 3)
>>> content, buffers = to_reply(Tile(np.eye(2), 3, note="x"))
>>> content, len(buffers)
({'shape': [2, 2], 'dtype': 'float32', 'q0': 3, 'note': 'x'}, 1)
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections import abc
from collections.abc import Mapping
from typing import Any

import numpy as np

from .wire import pack

__all__ = ["OPTIONAL", "packed_as", "to_reply", "to_wire", "ts_type", "typed_as"]


#: Field metadata of a field that may be absent: ``field(default=None, metadata=OPTIONAL)`` is left out of the wire
#: dict when None (``name?:`` in TypeScript).
OPTIONAL = types.MappingProxyType({"optional": True})


def typed_as(ts: str, module: str) -> types.MappingProxyType[str, str]:
    """Field metadata of a value that is already in its wire form and typed by hand in TypeScript: ``ts`` is the
    type's name, exported by ``module`` (relative to js/src/generated/). HeadView's line sets are one
    (:mod:`attnwidgets.viewdata.lines` packs them; js/src/shared/lines.ts ``LinePayload`` reads them)."""
    return types.MappingProxyType({"ts": ts, "ts_module": module})


def packed_as(dtype: str) -> types.MappingProxyType[str, str]:
    """Field metadata of an array packed as ``dtype`` ("float32" by default, "float16" or "uint8", see
    :func:`~attnwidgets.viewdata.wire.pack`): ``field(metadata=packed_as("uint8"))``."""
    return types.MappingProxyType({"dtype": dtype})


def _value(value: Any, dtype: str = "float32") -> Any:
    if isinstance(value, np.ndarray):
        return pack(value, dtype)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_wire(value)
    if isinstance(value, Mapping):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN; a field that can be NaN is typed float | None
    return value


def to_wire(state: Any) -> dict[str, Any]:
    """A state dataclass as the dict a trait holds: fields by name, arrays packed, nested dataclasses as dicts,
    tuples as lists, optional fields left out when None, NaN and infinities as None."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        if value is None and f.metadata.get("optional"):
            continue
        out[f.name] = _value(value, f.metadata.get("dtype", "float32"))
    return out


def to_reply(answer: Any) -> tuple[dict[str, Any], list[memoryview]]:
    """A request's answer as a reply message: its one array's spec (shape, dtype...) at the top, its bytes as the
    reply's buffer, the other fields beside the spec (what ``shared/buffers.ts`` ``replyPacked`` reads)."""
    arrays = [f for f in dataclasses.fields(answer) if isinstance(getattr(answer, f.name), np.ndarray)]
    if len(arrays) > 1:
        raise TypeError(f"{type(answer).__name__}: a reply carries at most one array, got {[f.name for f in arrays]}")
    wire = to_wire(answer)
    if not arrays:
        return wire, []
    packed = wire.pop(arrays[0].name)
    buffer = packed.pop("buffer")
    return {**packed, **wire}, [buffer]


# -- TypeScript ------------------------------------------------------------------------------------------------------

#: What a packed array is called in js/src/shared/buffers.ts.
PACKED = "Packed"


def ts_type(hint: Any, seen: dict[str, type]) -> str:
    """The TypeScript type of a field's type hint; dataclasses met on the way are added to ``seen`` (by name).

    Examples
    --------
    >>> ts_type(dict[str, list[tuple[int, int]]], {}), ts_type(float | None, {}), ts_type(np.ndarray, {})
    ('Record<string, [number, number][]>', 'number | null', 'Packed')
    >>> ts_type(typing.Literal["max", "mean"], {}), ts_type(tuple[str, ...], {})
    ('"max" | "mean"', 'string[]')
    """
    if hint is type(None) or hint is None:
        return "null"
    if hint is np.ndarray:
        return PACKED
    if hint is bool:
        return "boolean"
    if hint in (int, float):
        return "number"
    if hint is str:
        return "string"
    if hint is Any:
        return "unknown"
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        seen.setdefault(hint.__name__, hint)
        return hint.__name__
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(ts_type(a, seen) for a in args)
    if origin is typing.Literal:
        return " | ".join(f'"{a}"' if isinstance(a, str) else str(a).lower() for a in args)
    if origin in (list, abc.Sequence):
        return f"{_wrap(ts_type(args[0], seen))}[]"
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"{_wrap(ts_type(args[0], seen))}[]"
        return "[" + ", ".join(ts_type(a, seen) for a in args) + "]"
    if origin in (dict, abc.Mapping):
        return f"Record<{ts_type(args[0], seen)}, {ts_type(args[1], seen)}>"
    raise TypeError(f"no TypeScript type for {hint!r}: use str, int, float, bool, None, np.ndarray, a dataclass, or "
                    "list / tuple / dict / Literal / | of those")


def _wrap(t: str) -> str:
    return f"({t})" if " " in t and not t.startswith(("Record<", "[")) else t
