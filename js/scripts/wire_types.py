"""Write js/src/generated/wire.ts from the views' state dataclasses (the registry
attnwidgets.viewdata.views.VIEWS), so the page reads what Python sends by type.

Run from the repository root after changing a view's state (attnwidgets/viewdata/views/): ``python
js/scripts/wire_types.py``. Each frozen dataclass a view's state or request answer holds becomes one interface
(np.ndarray → ``Packed``, the array js/src/shared/buffers.ts decodes; str → string; int and float → number; bool →
boolean; None → null; list and tuple → arrays or tuples; dict → Record; a field that may be absent → ``name?:``), and
``Views`` maps each view's name to ``{payload, meta?}``, what its ``_payload`` and ``_meta`` traits hold.
tests/viewdata/test_wire_types.py checks the committed file against this script, so a Python change without regenerating
fails CI, and ``tsc`` fails where a view reads a field Python no longer sends.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "js" / "src" / "generated" / "wire.ts"
LINE_WIDTH = 110  # biome.json's


def _load() -> tuple[tuple[typing.Any, ...], typing.Any]:
    """The registry of views (attnwidgets.viewdata.views.VIEWS) and the state module, from this checkout."""
    sys.path.insert(0, str(ROOT))
    try:
        from attnwidgets.viewdata import state, views
    finally:
        sys.path.remove(str(ROOT))
    return views.VIEWS, state


def _doc(cls: type) -> str:
    doc = (cls.__doc__ or "").strip()
    if not doc or doc.startswith(f"{cls.__name__}("):  # dataclass's generated signature: no docstring of ours
        return ""
    first = " ".join(doc.split("\n\n")[0].split())
    return f"/** {first} */\n"


#: hand-typed TypeScript types a field names (``typed_as``): module -> names
IMPORTS: dict[str, set[str]] = {}


def interface(cls: type, seen: dict[str, type], state: typing.Any, reply: bool = False) -> str:
    """One dataclass as an interface. A request's answer (``reply``) arrives as its array's spec at the top and the
    bytes as the reply's buffer (``to_reply``), so its array field becomes ``extends Omit<Packed, "buffer">``."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    arrays = [f for f in fields if hints[f.name] is np.ndarray] if reply else []
    extends = ' extends Omit<Packed, "buffer">' if arrays else ""
    lines = [f"{_doc(cls)}export interface {cls.__name__}{extends} {{"]
    for f in fields:
        if f in arrays:
            continue
        absent = "?" if f.metadata.get("optional") else ""
        hint = hints[f.name]
        if absent:  # an optional field is absent when None, never null
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            hint = args[0] if len(args) == 1 else typing.Union[tuple(args)]  # noqa: UP007
        if "ts" in f.metadata:
            IMPORTS.setdefault(f.metadata["ts_module"], set()).add(f.metadata["ts"])
            lines.append(f"  {f.name}{absent}: {f.metadata['ts']};")
            continue
        lines.append(f"  {f.name}{absent}: {state.ts_type(hint, seen)};")
    if arrays and len(lines) == 1:  # nothing beside the array: the array's spec itself
        return f'{_doc(cls)}export type {cls.__name__} = Omit<Packed, "buffer">;'
    lines.append("}")
    return "\n".join(lines)


def render() -> str:
    registry, state = _load()
    IMPORTS.clear()
    seen: dict[str, type] = {}
    done: dict[str, type] = {}
    blocks: list[str] = []

    def emit(cls: type, reply: bool = False) -> None:
        if cls.__name__ in done:
            if done[cls.__name__] is not cls:
                raise TypeError(f"two state dataclasses are called {cls.__name__}: rename one (TypeScript has one "
                                "namespace)")
            return
        done[cls.__name__] = cls
        before = set(seen)
        text = interface(cls, seen, state, reply)
        for name in [n for n in seen if n not in before]:  # nested dataclasses first
            emit(seen[name])
        blocks.append(text)

    views = []
    for spec in registry:
        view, cls = spec.name, spec.state
        for f in dataclasses.fields(cls):
            if f.name not in ("payload", "meta"):
                raise TypeError(f"{cls.__name__}: a view state has fields payload and meta only, got {f.name}")
        hints = typing.get_type_hints(cls)
        parts = "; ".join(f"{f.name}: {state.ts_type(hints[f.name], seen)}" for f in dataclasses.fields(cls))
        for f in dataclasses.fields(cls):
            emit(hints[f.name])
        for reply in spec.replies:
            emit(reply, reply=True)
        for other in spec.traits:
            emit(other)
        views.append(f"  {view}: {{ {parts} }};")
    IMPORTS.setdefault("../shared/buffers", set()).add("Packed")
    imports = [f"import type {{ {', '.join(sorted(names))} }} from \"{module}\";"
               for module, names in sorted(IMPORTS.items())]
    head = ["// Generated by js/scripts/wire_types.py from attnwidgets/viewdata/views: do not edit by hand.",
            "// Run `python js/scripts/wire_types.py` from the repository root after changing a view's state.",
            "", *imports, ""]
    tail = ["/** Every view's wire state: `Views[name].payload` is its `_payload` trait, `.meta` its `_meta`. */",
            "export interface Views {", *views, "}", ""]
    return "\n".join(head) + "\n" + "\n\n".join(blocks) + "\n\n" + "\n".join(tail)


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT}")
