"""A view's state in its own display bundle, so that a saved notebook keeps it live without a kernel.

Every view puts, beside the widget itself and its picture (:mod:`attnwidgets.fallback`), an entry under
:data:`VIEW_MIME`: what :func:`attnwidgets.save_html` embeds in a page (the synced state and the precomputed replies
to the requests the view would send its kernel), as JSON. The JupyterLab / Notebook 7 extension (``js/src/lab/``)
draws it with the same view code when no kernel holds the widget: a notebook reopened later, or by a student who
received it, stays hoverable and switchable, as Plotly's figures do. Hosts without the extension (GitHub, nbviewer,
VS Code) show the picture and the text, as before.

The format (version 1), which ``js/src/shared/saved_view.ts`` reads and ``attnwidgets export`` reuses::

    {"version": 1, "attnwidgets": "<package version>", "widget": "AttentionHeatmap", "bundle": "heatmap",
     "scope": "all" | "view", "state": {... the encoded synced state, buffers as {"$b64": ...}},
     "replies": {request_key: {"content": {...}, "buffers": [base64, ...]}}}

or, when even the view on screen passes the budget::

    {"version": 1, "attnwidgets": ..., "widget": ..., "bundle": ..., "omitted": "<why, and how to raise the budget>"}

Size (the budget): each view keeps to :func:`view_budget` bytes of JSON (default :data:`VIEW_BUDGET`, 2 MB; set it
with :func:`set_view_budget` or ``ATTNWIDGETS_VIEW_BUDGET`` in the environment, in bytes; 0 switches the state off).
"all" (every layer and head the view can switch to) when it fits (and its replies take at most
:data:`ALL_SECONDS` to compute, so that a display never waits long for them), else "view" (the view on screen: for
long inputs its overview tiles and the shown head), else none, with a line saying why. 2 MB because a notebook of a
dozen views then stays under the size GitHub still previews and JupyterLab opens in a second; a 512-token
heatmap's every head is 30 MB or more, its view on screen 1.4 MB. Arrays are stored as float16 (what ``save_html``
stores by default).

>>> import numpy as np, attnwidgets as aw
>>> r = aw.AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["hi", "there"])
>>> entry = view_state(aw.AttentionHeatmap(r))
>>> entry["version"], entry["widget"], entry["bundle"], entry["scope"]
(1, 'AttentionHeatmap', 'heatmap', 'all')
>>> "omitted" in view_state(aw.AttentionHeatmap(r), budget=10)
True
"""

from __future__ import annotations

import os
import time
from typing import Any

from ._version import __version__
from .export import SavableView, format_size, request_key, saved_parts

__all__ = ["ALL_SECONDS", "VERSION", "VIEW_BUDGET", "VIEW_MIME", "set_view_budget", "view_budget", "view_state"]

#: The MIME type of a view's saved state (the extension renders it).
VIEW_MIME = "application/vnd.attnwidgets.view+json"

#: The format's version; the renderer refuses a newer one with a message rather than drawing half a view.
VERSION = 1

#: Bytes of JSON a view may add to a notebook unless told otherwise (2 MB; see the module docstring).
VIEW_BUDGET = 2_000_000

#: Seconds the replies of every view ("all") may take to compute before a display settles for the view on screen:
#: a 512-token HeadView's every layer took 3 s, which each display of it would otherwise add. A busy machine may save
#: less than a quiet one; ``ATTNWIDGETS_VIEW_SECONDS`` in the environment sets it (the browser tests pin it high).
ALL_SECONDS = 1.0


def _seconds_from_env() -> float:
    """``ATTNWIDGETS_VIEW_SECONDS`` (seconds), else :data:`ALL_SECONDS`: ``attnwidgets export`` runs its kernel with
    a longer wait, since nobody waits on a display there and a page should not lose its views to a busy machine."""
    try:
        return max(0.0, float(os.environ.get("ATTNWIDGETS_VIEW_SECONDS", "").strip() or ALL_SECONDS))
    except ValueError:
        return ALL_SECONDS


class _OverTime(Exception):
    pass


class _Timed:
    """``widget`` for :func:`~attnwidgets.export.saved_parts`: its replies stop (``_OverTime``) past ``deadline``,
    the view on screen's requests come first, and every reply is kept, so that settling for the view on screen
    computes nothing twice."""

    def __init__(self, widget: SavableView, deadline: float) -> None:
        self._widget = widget
        self._esm = widget._esm
        self.deadline = deadline
        self._answers: dict[str, tuple[dict[str, Any], list[Any]]] = {}

    def get_state(self) -> dict[str, Any]:
        return self._widget.get_state()

    def answer(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        key = request_key(request)
        if key not in self._answers:
            if time.perf_counter() > self.deadline:
                raise _OverTime
            self._answers[key] = self._widget.answer(request)
        return self._answers[key]

    def _export_requests(self, scope: str) -> list[dict[str, Any]]:
        shown = self._widget._export_requests("view")
        if scope == "view":
            return shown
        first = {request_key(r) for r in shown}
        rest = [r for r in self._widget._export_requests(scope) if request_key(r) not in first]
        return [*shown, *rest]


def _budget_from_env() -> int:
    raw = os.environ.get("ATTNWIDGETS_VIEW_BUDGET", "").strip()
    if not raw:
        return VIEW_BUDGET
    try:
        return max(0, int(float(raw)))
    except ValueError:
        return VIEW_BUDGET


_budget = _budget_from_env()


def set_view_budget(nbytes: int | None = VIEW_BUDGET) -> None:
    """Set how many bytes of saved state each view may add to its display bundle (``None``: the default, 2 MB;
    0: no saved state, only the picture and the text). Views displayed afterwards keep to it.

    >>> set_view_budget(5_000_000); view_budget()
    5000000
    >>> set_view_budget(None); view_budget()
    2000000
    """
    global _budget
    if nbytes is None:
        nbytes = VIEW_BUDGET
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"the view budget is a number of bytes (an int >= 0), got {nbytes!r}")
    _budget = nbytes


def view_budget() -> int:
    """The bytes each view's saved state may take (see :func:`set_view_budget`)."""
    return _budget


def _head(widget: SavableView) -> dict[str, Any]:
    return {"version": VERSION, "attnwidgets": __version__, "widget": type(widget).__name__,
            "bundle": str(getattr(type(widget), "_bundle", ""))}


def view_state(widget: SavableView, *, budget: int | None = None) -> dict[str, Any]:
    """``widget``'s entry under :data:`VIEW_MIME`: every view ("all") if it fits ``budget`` bytes (default
    :func:`view_budget`), else the view on screen ("view"), else an ``"omitted"`` line saying why and how to raise
    the budget. It never raises: a view whose state cannot be saved says so in ``"omitted"``.
    """
    limit = view_budget() if budget is None else budget
    head = _head(widget)
    if limit <= 0:
        return {**head, "omitted": "saved state is switched off (attnwidgets.view_mime.set_view_budget(0) or "
                                   "ATTNWIDGETS_VIEW_BUDGET=0): re-run the cell to interact"}
    size = 0
    try:
        timed = _Timed(widget, time.perf_counter() + _seconds_from_env())
        try:
            data, replies, size = saved_parts(timed, "float16", "all", limit)
            if size <= limit:
                return {**head, "scope": "all", "state": data["state"], "replies": replies}
        except _OverTime:
            pass
        timed.deadline = float("inf")
        data, replies, size = saved_parts(timed, "float16", "view", limit)
        if size <= limit:
            return {**head, "scope": "view", "state": data["state"], "replies": replies}
    except Exception as exc:  # the live widget and its picture still show; the saved state says why it is missing
        return {**head, "omitted": f"this view's state could not be saved ({type(exc).__name__}: {exc}): re-run "
                                   "the cell to interact"}
    return {**head, "omitted": (
        f"the view on screen would add about {format_size(size)} to the notebook, over the {format_size(limit)} "
        "budget per view: re-run the cell to interact, or raise the budget before displaying it "
        "(attnwidgets.view_mime.set_view_budget(nbytes) or ATTNWIDGETS_VIEW_BUDGET=nbytes in the environment)")}
