"""Lazy names for a package's ``__init__``: ``import attnwidgets`` (or ``.studies``, ``.teaching``) stays light, and
each name's module (torch, the widgets) loads when the name is first used."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Any


def attach(package: str, names: dict[str, str], extra: Iterable[str] = ()) -> tuple[Callable[[str], Any],
                                                                                      Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``names`` maps a public name to the module that defines it;
    ``extra`` lists more names ``dir()`` shows (eagerly imported ones, submodules).

    Examples
    --------
    >>> getattr_, dir_ = attach("attnwidgets", {"AttentionResult": "attnwidgets.result"})
    >>> getattr_("AttentionResult").__name__, dir_()
    ('AttentionResult', ['AttentionResult'])
    """
    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # resolved once
        return value

    def __dir__() -> list[str]:
        return sorted({*names, *extra})

    return __getattr__, __dir__
