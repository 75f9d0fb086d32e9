"""What every attnwidgets widget shares: the request protocol and themes (bundles and binary packing: viewdata.wire)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import anywidget
import traitlets

from ..viewdata.wire import bundle_text

_DEFAULT_THEME = "light"
THEMES = ("light", "lecture")


#: Widgets alive in this kernel (weakly held: a widget nobody refers to any more is not kept alive by this).
_LIVE: weakref.WeakSet[AttnWidget] = weakref.WeakSet()


def set_theme(name: str, *, existing: bool = True) -> None:
    """Set the theme of every view: "light" (notebooks) or "lecture" (projector: large, high contrast).

    New widgets start with it, and (``existing=True``, the default) widgets already shown restyle at once, except
    those given a theme of their own (``theme=`` when created, or ``w.theme = ...`` later). ``existing=False`` only
    changes what new widgets start with.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> r = aw.AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"])
    >>> shown, own = aw.AttentionHeatmap(r), aw.AttentionHeatmap(r, theme="light")
    >>> aw.set_theme("lecture"); shown.theme, own.theme
    ('lecture', 'light')
    >>> aw.set_theme("light"); shown.theme
    'light'
    """
    global _DEFAULT_THEME
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r}; choose one of {THEMES}")
    _DEFAULT_THEME = name
    if existing:
        for widget in list(_LIVE):
            if not widget._own_theme:
                widget._follow_theme(name)


class AttnWidget(anywidget.AnyWidget):
    """Base of every attnwidgets widget.

    Subclasses set ``_bundle`` (the name of their ``js/src/<name>.ts``) and may register request handlers in
    ``_handlers``: the front end sends ``{"type": "request", "id": n, "what": name, ...}`` and gets back
    ``{"type": "reply", "id": n, ...}`` with binary buffers, or ``{"type": "reply", "id": n, "error": text}``.
    """

    _bundle: ClassVar[str] = ""

    theme = traitlets.Unicode(_DEFAULT_THEME).tag(sync=True)
    """str, default "light" (or what :func:`set_theme` chose): "light" or "lecture" (large fonts, high contrast,
    colour-blind-safe colour map). The front end restyles at once when it changes. Follows later
    :func:`set_theme` calls unless given here or set on the widget."""

    _own_theme = False  # the widget was given a theme: set_theme leaves it alone
    _following = False  # set_theme is setting the theme right now

    _error = traitlets.Unicode("").tag(sync=True)
    """str: a message the front end shows in a red box (empty: none). Set when an update fails."""

    def __init__(self, **kwargs: Any) -> None:
        unknown = [k for k in kwargs if not self.has_trait(k) or k.startswith("_")]
        if unknown:
            allowed = sorted(k for k in self.trait_names(sync=True) if not k.startswith("_") and k not in
                             {"comm", "keys", "log", "layout", "tabbable", "tooltip"})
            raise TypeError(f"{type(self).__name__} got unexpected keyword argument(s) {unknown}; "
                            f"it takes {allowed}")
        own_theme = "theme" in kwargs
        kwargs.setdefault("theme", _DEFAULT_THEME)
        if type(self)._bundle:
            kwargs.setdefault("_esm", bundle_text(type(self)._bundle))
        super().__init__(**kwargs)
        self._own_theme = own_theme
        _LIVE.add(self)
        self.on_msg(self._on_msg)

    def _follow_theme(self, name: str) -> None:
        self._following = True
        try:
            self.theme = name
        finally:
            self._following = False

    @traitlets.observe("theme")
    def _theme_set(self, _change: dict[str, Any]) -> None:
        if not self._following:
            self._own_theme = True  # set by hand: a later set_theme must not undo it

    def close(self) -> None:
        _LIVE.discard(self)
        super().close()

    @traitlets.validate("theme")
    def _check_theme(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in THEMES:
            raise traitlets.TraitError(f"unknown theme {proposal['value']!r}; choose one of {THEMES}")
        return str(proposal["value"])

    # -- requests from the page ----------------------------------------------------------------------------------

    def _handlers(self) -> dict[str, Callable[[dict[str, Any]], tuple[dict[str, Any], list[memoryview]]]]:
        return {}

    def _on_msg(self, _widget: Any, content: dict[str, Any], _buffers: list[Any]) -> None:
        if not isinstance(content, dict) or content.get("type") != "request":
            return
        rid = content.get("id")
        handler = self._handlers().get(str(content.get("what")))
        try:
            if handler is None:
                raise ValueError(f"unknown request {content.get('what')!r}")
            reply, buffers = handler(content)
        except Exception as exc:  # the page shows it; the kernel log keeps the traceback
            self.send({"type": "reply", "id": rid, "error": f"{type(exc).__name__}: {exc}"})
            return
        self.send({"type": "reply", "id": rid, **reply}, buffers=buffers)

    def answer(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        """Answer a front-end request directly (tests and the static export use this)."""
        handler = self._handlers().get(str(request.get("what")))
        if handler is None:
            raise ValueError(f"unknown request {request.get('what')!r}")
        return handler(request)

    def save_html(self, path: str | Path, *, title: str | None = None, precision: str = "float16",
                  scope: str = "all") -> Path:
        """Write this view as one self-contained HTML file (JS and data inlined, no CDN, renders offline).

        ``precision`` ("float16", "uint8" or "float32") and ``scope`` ("all": every view precomputed, "view": only
        the one on screen) trade file size against exactness; see :mod:`attnwidgets.export`.
        """
        from ..export import save_html

        return save_html(self, path, title=title, precision=precision, scope=scope)  # type: ignore[arg-type]
