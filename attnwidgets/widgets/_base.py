"""What every attnwidgets widget shares: the request protocol, themes, and the contract of every view (one
payload trait, validation through :mod:`attnwidgets.viewdata.checks`, export requests). Bundles and binary packing
live in :mod:`attnwidgets.viewdata.wire`."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import anywidget
import traitlets

from ..viewdata.checks import COLORMAPS, THEMES, check_colormap, check_fit, check_int, check_theme
from ..viewdata.state import to_wire
from ..viewdata.theme import current_theme, use_theme
from ..viewdata.wire import bundle_text

__all__ = ["THEMES", "AttnWidget", "Colormap", "Index", "checked", "set_theme"]

_T = TypeVar("_T")

#: Widgets alive in this kernel (weakly held: a widget nobody refers to any more is not kept alive by this).
_LIVE: weakref.WeakSet[AttnWidget] = weakref.WeakSet()


def set_theme(name: str, *, existing: bool = True) -> None:
    """Set the theme of every view: "light" (notebooks) or "lecture" (projector: large, high contrast).

    New widgets and static figures (``aw.plots.plot_*`` called without ``theme=``) start with it, and
    (``existing=True``, the default) widgets already shown restyle at once, except those given a theme of their own
    (``theme=`` when created, or ``w.theme = ...`` later). ``existing=False`` only changes what new widgets start
    with.

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
    name = use_theme(name)  # plots read it too (viewdata.theme), so they follow without importing widgets
    if existing:
        for widget in list(_LIVE):
            if not widget._own_theme:
                widget._follow_theme(name)


def checked(check: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Run a :mod:`attnwidgets.viewdata.checks` validator; its TypeError or ValueError becomes a
    ``traitlets.TraitError`` with the same text (what a widget raises for a bad trait value).

    Examples
    --------
    >>> from attnwidgets.viewdata.checks import check_layer
    >>> checked(check_layer, 7, 2)
    Traceback (most recent call last):
    ...
    traitlets.traitlets.TraitError: layer 7 is out of range: there are 2 layers (0..1)
    """
    try:
        return check(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise traitlets.TraitError(str(exc)) from None


class Index(traitlets.Int):  # type: ignore[type-arg]
    """An int trait (``layer``, ``head``, ``query``) that refuses bools, floats and None with the checks' message
    ("layer must be an integer, got bool True"); ranges are checked by each view's ``@validate``."""

    def validate(self, obj: Any, value: Any) -> int:
        return checked(check_int, value, self.name)


class Colormap(traitlets.Unicode):  # type: ignore[type-arg]
    """The ``colormap`` trait: "" (the theme's) or one of ``allowed`` (:data:`~attnwidgets.viewdata.COLORMAPS` for
    views of non-negative values, :data:`~attnwidgets.viewdata.DIVERGING_COLORMAPS` for signed ones)."""

    def __init__(self, allowed: tuple[str, ...] = COLORMAPS, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.allowed = allowed

    def validate(self, obj: Any, value: Any) -> str:
        return checked(check_colormap, value, self.allowed)


class Fit(traitlets.TraitType):  # type: ignore[type-arg]
    """The ``fit`` trait: "auto", True, False or a (width, height) in CSS pixels (kept as a list, what the page
    gets); anything else, None included, raises with :func:`~attnwidgets.viewdata.checks.check_fit`'s text."""

    default_value = "auto"
    allow_none = False
    info_text = '"auto", True, False or a (width, height) in CSS pixels'

    def validate(self, obj: Any, value: Any) -> Any:
        return checked(check_fit, value)


class AttnWidget(anywidget.AnyWidget):
    """Base of every attnwidgets widget, and the contract every view keeps.

    - The first argument is what the view shows (``result`` for every attention view).
    - What the page draws travels in one trait, ``_payload`` (binary buffers inside); ``_meta`` holds labels and
      shapes, ``_error`` a message for the page's red box.
    - The same ideas have the same names, types and messages: ``layer``, ``head`` (:class:`Index`, checked by
      :mod:`attnwidgets.viewdata.checks`), ``kind`` (the attention stack), ``words``, ``colormap``
      (:class:`Colormap`) and ``theme``. A bad value raises ``traitlets.TraitError`` with the checks' text
      (:func:`checked`); an unknown keyword raises TypeError.
    - :meth:`_export_requests` lists the requests a saved page answers without a kernel.

    Subclasses set ``_bundle`` (the name of their ``js/src/<name>.ts``) and may register request handlers in
    ``_handlers``: the front end sends ``{"type": "request", "id": n, "what": name, ...}`` and gets back
    ``{"type": "reply", "id": n, ...}`` with binary buffers, or ``{"type": "reply", "id": n, "error": text}``.
    """

    _bundle: ClassVar[str] = ""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: what the page draws, binary buffers inside (each view documents its layout where it redeclares it)."""

    theme = traitlets.Unicode("light").tag(sync=True)
    """str, default "light" (or what :func:`set_theme` chose): "light" or "lecture" (large fonts, high contrast,
    colour-blind-safe colour map). The front end restyles at once when it changes. Follows later
    :func:`set_theme` calls unless given here or set on the widget."""

    fit = Fit().tag(sync=True)
    """"auto" (default), True, False or (width, height) in CSS pixels: size the view so all of it, legend included,
    is on screen at once. True fits the width of the output area and the height of the visible notebook area (less a
    margin), again whenever either changes; a (width, height) fits that box; False keeps the theme's full size (the
    page scrolls); "auto" fits in the lecture theme (a projector) and not in the light one."""

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
        kwargs.setdefault("theme", current_theme())
        if type(self)._bundle:
            kwargs.setdefault("_esm", bundle_text(type(self)._bundle))
        super().__init__(**kwargs)
        self._own_theme = own_theme
        _LIVE.add(self)
        self.on_msg(self._on_msg)

    # -- what shows where no front end runs (attnwidgets.fallback) ------------------------------------------------

    def __repr__(self) -> str:
        from ..fallback import describe

        return describe(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget view, plus ``text/plain`` (a description) and ``image/png`` (the static twin) for
        front ends without widgets (HTML exports, GitHub, nbviewer, a notebook reopened without its kernel), and the
        view's saved state under ``application/vnd.attnwidgets.view+json`` (:mod:`attnwidgets.view_mime`), which the
        JupyterLab / Notebook 7 extension draws live when no kernel holds the widget."""
        shown = super()._repr_mimebundle_(**kwargs)
        if shown is None:  # closed: no view to show
            return None
        from ..fallback import static_bundle
        from ..view_mime import VIEW_MIME, view_state

        data, metadata = shown if isinstance(shown, tuple) else (shown, {})
        return {**data, **static_bundle(self), VIEW_MIME: view_state(self)}, metadata

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
        return checked(check_theme, proposal["value"])

    def _show(self, state: Any) -> None:
        """Publish a view's state (a dataclass from :mod:`attnwidgets.viewdata.views`): its ``payload`` becomes
        ``_payload`` and its ``meta`` (when it has one) ``_meta``, in one sync."""
        wire = to_wire(state)
        self._page_state = state
        with self.hold_sync():
            self._payload = wire["payload"]
            if "meta" in wire:
                self._meta = wire["meta"]  # type: ignore[attr-defined]

    def page_state(self) -> Any:
        """The frozen state the page draws now (a dataclass from :mod:`attnwidgets.viewdata.views`, the one its
        ``_payload`` and ``_meta`` were made from), or None before the first one; :func:`attnwidgets.plots.paint`
        draws it as the static twin, with the page's own traits (layer, head, rows, colour...)."""
        return getattr(self, "_page_state", None)

    def _export_requests(self, scope: str) -> list[dict[str, Any]]:
        """The requests a saved page answers without a kernel (:func:`attnwidgets.export.save_html` precomputes their
        replies): every view the page can switch to (``scope="all"``) or only the one on screen (``"view"``).

        The default is none: the synced state (``_payload``, ``_meta``) is the whole page. A view whose page needs
        a kernel to show anything at all overrides this to raise TypeError ("this view cannot be saved")."""
        return []

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
