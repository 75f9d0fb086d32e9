"""The theme every view and static twin starts with, read by both (widgets set it through
:func:`attnwidgets.set_theme`, the one public switch; plots read it when not given ``theme=``).

It lives here, below ``widgets/`` and ``plots/``, so that a plot follows ``aw.set_theme("lecture")`` without importing
any widget code.

>>> from attnwidgets.viewdata.theme import current_theme, resolve_theme
>>> current_theme() in ("light", "lecture"), resolve_theme("lecture")
(True, 'lecture')
"""

from __future__ import annotations

from typing import Any

from .checks import check_theme

__all__ = ["current_theme", "resolve_theme", "use_theme"]

def _from_environment() -> str:
    """``ATTNWIDGETS_THEME`` (set by ``attnwidgets lab --lecture``), or "light"; a value that is not a theme is
    ignored with a warning rather than breaking the import."""
    import os
    import warnings

    name = os.environ.get("ATTNWIDGETS_THEME", "").strip().lower()
    if not name:
        return "light"
    try:
        return check_theme(name)
    except (ValueError, TypeError):
        warnings.warn(f"ATTNWIDGETS_THEME={name!r} is not a theme (light or lecture); starting with light",
                      stacklevel=2)
        return "light"


_current = _from_environment()


def current_theme() -> str:
    """The theme new views and plots start with: "light" (or ``ATTNWIDGETS_THEME`` from the environment) until
    :func:`attnwidgets.set_theme` chose another."""
    return _current


def use_theme(name: Any) -> str:
    """Make ``name`` (checked: one of :data:`~attnwidgets.viewdata.THEMES`) the current theme and return it.

    Only :func:`attnwidgets.set_theme` should call this: it also restyles the widgets already on screen."""
    global _current
    _current = check_theme(name)
    return _current


def resolve_theme(theme: Any = None) -> str:
    """``theme`` checked, or the current theme when it is None (what every plot's ``theme=None`` means).

    >>> resolve_theme("dark")
    Traceback (most recent call last):
    ...
    ValueError: unknown theme 'dark'; choose one of ('light', 'lecture')
    """
    return current_theme() if theme is None else check_theme(theme)
