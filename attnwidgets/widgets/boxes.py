"""Views inside ipywidgets boxes keep their saved state: a box's display bundle carries its children's.

A view shown on its own puts its saved state in its display bundle (:mod:`attnwidgets.view_mime`). Shown inside an
``ipywidgets.HBox`` or ``VBox`` (``HBox([grid, heat])``, a helper that lays figures beside views, the
:class:`~attnwidgets.widgets.HeadRolesView`), the display bundle is the box's, which ipywidgets makes and which held
no saved state: a saved notebook reopened with no kernel, or a page written by ``attnwidgets export``, showed such
views dead. So, once attnwidgets' widgets are imported in IPython, every ``ipywidgets.Box`` that holds a view
(directly or in a nested box) gets one more entry under :data:`~attnwidgets.view_mime.VIEW_MIME`, of its own kind::

    {"version": 1, "attnwidgets": "<package version>", "widget": "Box", "layout": "row" | "column",
     "style": {css property: value}, "children": [child, ...]}

Each child is a view's own entry (:func:`~attnwidgets.view_mime.view_state`, within the same per-view budget as a
view shown on its own), a nested box (same form), an ``ipywidgets.Image`` (``{"widget": "Image", "format": "png",
"data": base64}``, within one view budget), a ``Label`` (``{"widget": "Label", "text": ...}``) or any other widget
(``{"widget": "<class>", "needs": "a running kernel"}``, drawn as that line). Each child may carry ``"slot"``: its
own layout (flex, width, ...). Only a few layout properties are kept, and only values made of letters, digits,
spaces, ``.``, ``%`` and ``-`` (no ``url(...)``): the renderer sets them as CSS. A box holding no view gets nothing:
its bundle stays the one ipywidgets makes.

Why one entry on the box, under the same MIME type, rather than a reference to each child's own output: the children
of a box are never displayed on their own, so their states exist nowhere else; and under the same MIME type the
extension's ranking against the live widget (js/src/lab/index.ts: the live box wins in a running kernel) and the
export's page placeholders work unchanged. ``js/src/shared/saved_box.ts`` draws it as a flex row or column, each
view with the same saved-view code as a view shown on its own.

How: IPython's mime-bundle formatter for ``ipywidgets.Box`` (:func:`install_box_formatter`, done when this package
is imported in IPython), which asks the box for its own bundle first and only adds to it.

>>> import numpy as np, ipywidgets, attnwidgets as aw
>>> r = aw.AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["hi", "there"])
>>> entry = box_state(ipywidgets.HBox([aw.AttentionHeatmap(r), ipywidgets.VBox([aw.EntropyBars(r)])]))
>>> entry["widget"], entry["layout"], [c["widget"] for c in entry["children"]]
('Box', 'row', ['AttentionHeatmap', 'Box'])
>>> box_state(ipywidgets.HBox([ipywidgets.Label("no view here")])) is None
True
"""

from __future__ import annotations

import base64
import re
from typing import Any

import ipywidgets

from .._version import __version__
from ..view_mime import VERSION, VIEW_MIME, view_budget, view_state
from ._base import AttnWidget

__all__ = ["box_bundle", "box_direction", "box_state", "install_box_formatter"]

#: Layout properties a saved box or slot keeps (ipywidgets' names; the renderer writes them as CSS with dashes).
STYLE_KEYS = ("flex", "flex_flow", "align_items", "justify_content", "width", "min_width", "max_width")

#: What a kept layout value may be made of: no brackets, quotes, colons or semicolons, so never ``url(...)``.
_SAFE_VALUE = re.compile(r"[A-Za-z0-9 .%-]{1,40}")

#: Boxes nested deeper than this are saved as "needs a running kernel" (the renderer refuses deeper ones too).
MAX_DEPTH = 8

_IMAGE_FORMATS = ("png", "jpeg", "gif")


def _style(widget: Any) -> dict[str, str]:
    layout = getattr(widget, "layout", None)
    out: dict[str, str] = {}
    for key in STYLE_KEYS:
        value = getattr(layout, key, None)
        if isinstance(value, str) and _SAFE_VALUE.fullmatch(value):
            out[key] = value
    return out


def _holds_view(box: ipywidgets.Box, depth: int = 0) -> bool:
    return depth < MAX_DEPTH and any(
        isinstance(c, AttnWidget) or (isinstance(c, ipywidgets.Box) and _holds_view(c, depth + 1))
        for c in box.children)


def box_direction(box: ipywidgets.Box) -> str:
    """"row" for an HBox, a GridBox or a box whose flex flow is a row; "column" otherwise."""
    if isinstance(box, ipywidgets.HBox):
        return "row"
    flow = getattr(box.layout, "flex_flow", None) or ""
    return "row" if isinstance(box, ipywidgets.GridBox) or flow.startswith("row") else "column"


def _child(widget: Any, depth: int, budget: int | None) -> dict[str, Any]:
    name = type(widget).__name__
    if isinstance(widget, AttnWidget):
        entry = view_state(widget, budget=budget)
    elif isinstance(widget, ipywidgets.Box) and depth + 1 < MAX_DEPTH:
        entry = _box(widget, depth + 1, budget)
    elif isinstance(widget, ipywidgets.Image) and widget.format in _IMAGE_FORMATS:
        data = base64.b64encode(bytes(widget.value)).decode("ascii")
        limit = view_budget() if budget is None else budget
        entry = ({"widget": "Image", "format": widget.format, "data": data} if len(data) <= limit else
                 {"widget": "Image", "needs": "a running kernel (the picture is over the budget per view)"})
    elif isinstance(widget, ipywidgets.Label):
        entry = {"widget": "Label", "text": str(widget.value)}
    else:
        entry = {"widget": name, "needs": "a running kernel"}
    slot = _style(widget)
    return {**entry, "slot": slot} if slot else entry


def _box(box: ipywidgets.Box, depth: int, budget: int | None) -> dict[str, Any]:
    return {"version": VERSION, "attnwidgets": __version__, "widget": "Box", "layout": box_direction(box),
            "style": _style(box), "children": [_child(c, depth, budget) for c in box.children]}


def box_state(box: ipywidgets.Box, *, budget: int | None = None) -> dict[str, Any] | None:
    """``box``'s entry under :data:`~attnwidgets.view_mime.VIEW_MIME` (see the module docstring), or None when no
    view sits in it (nested boxes included). ``budget``: bytes per view (default
    :func:`~attnwidgets.view_mime.view_budget`). It never raises: a child that cannot be saved says why in its
    entry."""
    if not _holds_view(box):
        return None
    return _box(box, 0, budget)


def box_bundle(box: ipywidgets.Box) -> Any:
    """The box's own display bundle (ipywidgets') with its saved state added when a view sits in it: what IPython
    shows for a box once :func:`install_box_formatter` ran."""
    method = getattr(box, "_repr_mimebundle_", None)  # ipywidgets sets it to None when the box is closed
    shown = method() if callable(method) else None
    if shown is None:  # closed: IPython shows its text, as it would without this formatter
        return None
    data, metadata = shown if isinstance(shown, tuple) else (shown, {})
    try:
        entry = box_state(box)
    except Exception:  # the live box still shows; a notebook reopened without a kernel shows it as before
        entry = None
    if entry is not None:
        data = {**data, VIEW_MIME: entry}
        if "image/png" not in data:  # hosts without the extension (GitHub, nbviewer): the views' pictures
            from ..fallback import box_picture

            try:
                png = box_picture(box, box_direction)
            except Exception:  # the live box and its saved state still show
                png = None
            if png is not None:
                data["image/png"] = base64.b64encode(png).decode("ascii")
    return data, metadata


def install_box_formatter(shell: Any = None) -> bool:
    """Have IPython (``shell``, default the running one) show every ``ipywidgets.Box`` through :func:`box_bundle`;
    False when there is no IPython. Idempotent; a formatter someone else registered for boxes is left in place.

    >>> install_box_formatter(None)  # outside IPython: nothing to do
    False
    """
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    formatter = getattr(getattr(shell, "display_formatter", None), "mimebundle_formatter", None)
    if formatter is None:
        return False
    current = formatter.type_printers.get(ipywidgets.Box)
    if current is None:
        formatter.for_type(ipywidgets.Box, box_bundle)
    return current is None or current is box_bundle
