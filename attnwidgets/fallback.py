"""What a view shows where no widget can run: a picture (its static twin as a small PNG) and a description, next to
the widget itself in the view's display bundle.

A notebook exported to HTML, opened on GitHub or nbviewer, or reopened without a kernel has no widget front end: each
widget cell was blank, and a widget whose front end was gone printed ``<...AttentionHeatmap object at 0x7f…>``.
:class:`~attnwidgets.widgets.AttnWidget` now adds ``image/png`` (the matplotlib twin, :data:`DPI` dots per inch,
a few tens of kB) and ``text/plain`` (view, model, tokens, layer and head, "re-run the cell to interact") to its
bundle. Front ends that run widgets (JupyterLab, Notebook 7, VS Code, Colab) still show the live widget: they rank
the widget mimetype first.

Drawing the twin costs time and bytes on every display (``benchmarks/bench_fallback.py`` measures them); switch it
off with :func:`set_static_fallback` or ``ATTNWIDGETS_STATIC_FALLBACK=0`` in the environment. The text stays.

This module sits above both ``widgets/`` and ``plots/`` (like :mod:`attnwidgets.export`): widgets never import plots.

>>> import numpy as np, attnwidgets as aw
>>> r = aw.AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["hi", "there"])
>>> describe(aw.AttentionHeatmap(r)).split(" (")[0]
'AttentionHeatmap · arrays · 2 tokens: hi there · self attention · layer 0 · head 0'
>>> static_bundle(aw.AttentionHeatmap(r))["image/png"][:8]   # base64 of the PNG signature
'iVBORw0K'
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DPI", "MAX_PIXELS", "box_picture", "describe", "set_static_fallback", "static_bundle", "static_fallback",
           "twin_figure", "twin_png"]

#: Dots per inch of the picture (a figure's inches times this, capped by :data:`MAX_PIXELS`).
DPI = 72

#: The longest side of the picture in pixels: a bigger figure is drawn at a lower dpi.
MAX_PIXELS = 800

_enabled = os.environ.get("ATTNWIDGETS_STATIC_FALLBACK", "1").strip().lower() not in ("0", "false", "no", "off")


def set_static_fallback(enabled: bool = True) -> None:
    """Switch the picture in every view's display bundle on (the default) or off (only the text stays).

    ``ATTNWIDGETS_STATIC_FALLBACK=0`` in the environment starts with it off. A view displayed while it is off keeps
    no picture when the notebook is saved: switch it on and re-run the cell for one.

    >>> set_static_fallback(False); static_fallback()
    False
    >>> set_static_fallback(True); static_fallback()
    True
    """
    global _enabled
    _enabled = bool(enabled)


def static_fallback() -> bool:
    """Whether views add their picture to their display bundle (see :func:`set_static_fallback`)."""
    return _enabled


# -- the description -------------------------------------------------------------------------------------------------

def _tokens(tokens: Any, limit: int = 12) -> str:
    words = [str(t) for t in tokens]
    shown = " ".join(words[:limit]) + (" …" if len(words) > limit else "")
    return f"{len(words)} tokens: {shown}"


def _source(widget: Any) -> list[str]:
    """Model and tokens of what the view shows, as far as it tells."""
    from .result import AttentionResult

    space = getattr(widget, "space", None)
    if space is not None and hasattr(space, "n_sentences"):  # QKSpaceView
        return [space.model or "arrays", f"{space.n_sentences} sentences", f"layer {space.layer} head {space.head}"]
    routes = getattr(widget, "routes", None)
    if routes is not None and hasattr(routes, "n_experts"):  # RouterView
        return [routes.model.name if routes.model is not None else "arrays", _tokens(routes.tokens),
                f"top-{routes.top_k} of {routes.n_experts} experts"]
    if hasattr(widget, "captures"):  # QKStepThrough
        cap = widget.captures[0]
        return [cap.model.name if cap.model is not None else "arrays", _tokens(cap.tokens)]
    try:
        source = widget.result
    except Exception:  # a view without one (MaskExplorer, PositionalExplorer)
        return []
    if isinstance(source, AttentionResult):
        return [source.model.name, _tokens(source.tokens)]
    if isinstance(source, (list, tuple)) and source and all(isinstance(r, AttentionResult) for r in source):
        return [source[0].model.name, f"{len(source)} inputs"]
    stats = getattr(widget, "stats", None)
    title = getattr(stats, "title", None)
    return [str(title)] if title else []


def _where(widget: Any) -> list[str]:
    parts = []
    kind = getattr(widget, "kind", None)
    if isinstance(kind, str) and kind:
        parts.append(f"{kind} attention")
    for name in ("statistic", "color", "rows"):
        value = getattr(widget, name, None)
        if isinstance(value, str) and value and widget.has_trait(name):
            parts.append(f"{name} {value}")
    if widget.has_trait("layer"):
        parts.append(f"layer {widget.layer}")
    if widget.has_trait("head"):
        parts.append("mean of heads" if widget.head == -1 else f"head {widget.head}")
    if widget.has_trait("query"):
        parts.append(f"query {widget.query}")
    return parts


def describe(widget: Any) -> str:
    """One line saying what ``widget`` shows: view, model, tokens, layer and head; it never raises (it is the repr).
    """
    try:
        parts = [type(widget).__name__, *_source(widget), *_where(widget)]
    except Exception:  # a repr must not fail, even for a half-built widget
        parts = [type(widget).__name__]
    return " · ".join(parts) + " (interactive view: re-run the cell to interact)"


# -- the picture -----------------------------------------------------------------------------------------------------


#: How a view's picture in the bundle looks unlike its painter's default (never what it shows): no numbers in the
#: heatmap's cells (at 72 dpi they are unreadable, and drawing them is most of a short input's cost).
_PICTURE_LOOK: dict[str, dict[str, Any]] = {"heatmap": {"annotate": False}}


def twin_figure(widget: Any) -> Figure | None:
    """The static twin of what ``widget`` shows now (its layer, head, theme...), or None for a view without one.

    The view is the widget's front end (``_bundle``), looked up in the one registry of views
    (:data:`attnwidgets.viewdata.views.BY_NAME`), which names its twin in :mod:`attnwidgets.plots`; a view with a
    painter is drawn from the state its page shows (:func:`attnwidgets.plots.paint`)."""
    from . import plots
    from .viewdata.views import BY_NAME

    spec = BY_NAME.get(getattr(type(widget), "_bundle", ""))
    if spec is None or spec.twin is None:
        return None
    return plots.paint(widget, **_PICTURE_LOOK.get(spec.name, {}))


#: Inches of white around the picture's tight box (matplotlib's default ``pad_inches``).
_PAD = 0.1


def twin_png(widget: Any, dpi: float = DPI) -> bytes | None:
    """``widget``'s twin as PNG bytes (longest side at most :data:`MAX_PIXELS`), or None without a twin."""
    from .plots.style import missing_glyphs_quiet

    with missing_glyphs_quiet():  # a CJK or emoji token draws as a box where no font has it: no warning per glyph
        fig = twin_figure(widget)
    if fig is None:
        return None
    width, height = fig.get_size_inches()
    # the tight box is the drawing plus PAD on each side: a figure drawn to its edges (constrained layout) is that
    # much wider than its inches
    dpi = min(float(dpi), MAX_PIXELS / (max(width, height) + 2 * _PAD))
    # Under the figure (the tight box takes it in), so that the picture says it stands for an interactive view:
    # front ends without widgets show the picture alone, not the text/plain beside it.
    fig.text(0.0, -0.01, f"Static picture of an interactive {type(widget).__name__}: re-run the cell to interact",
             fontsize=9, color="#57606a", ha="left", va="top")
    buffer = io.BytesIO()
    with missing_glyphs_quiet():
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight", pad_inches=_PAD, facecolor="white")
    return buffer.getvalue()


def static_bundle(widget: Any) -> dict[str, Any]:
    """``text/plain`` (:func:`describe`) and, while :func:`static_fallback` is on and the view has a twin that can
    draw its current state, ``image/png`` (base64), to sit beside the widget mimetype in the display bundle."""
    bundle: dict[str, Any] = {"text/plain": describe(widget)}
    if _enabled:
        try:
            png = twin_png(widget)
        except Exception:  # the live widget still shows; a picture that cannot be drawn is left out
            png = None
        if png is not None:
            bundle["image/png"] = base64.b64encode(png).decode("ascii")
    return bundle


#: Pixels between the pictures of a box's children.
BOX_GAP = 8

#: The longest side of a box's picture: its children's pictures side by side or stacked, scaled down to it.
MAX_BOX_PIXELS = 1600


def _child_picture(widget: Any, depth: int, direction: Callable[[Any], str]) -> Any:
    """A PIL image of what ``widget`` shows where no widget runs, or None (a label, a slider: nothing to draw)."""
    import ipywidgets
    from PIL import Image

    if isinstance(widget, ipywidgets.Box):
        return _box_image(widget, depth + 1, direction) if depth < 8 else None
    if isinstance(widget, ipywidgets.Image):
        if widget.format not in ("png", "jpeg", "gif"):
            return None
        try:
            return Image.open(io.BytesIO(bytes(widget.value))).convert("RGB")
        except Exception:  # not a picture PIL reads: left out, as a label is
            return None
    png = twin_png(widget)  # None for a widget without a twin
    return None if png is None else Image.open(io.BytesIO(png)).convert("RGB")


def _box_image(box: Any, depth: int, direction: Callable[[Any], str]) -> Any:
    from PIL import Image

    parts = [p for p in (_child_picture(c, depth, direction) for c in box.children) if p is not None]
    if not parts:
        return None
    row = direction(box) == "row"
    gaps = BOX_GAP * (len(parts) - 1)
    width = sum(p.width for p in parts) + gaps if row else max(p.width for p in parts)
    height = max(p.height for p in parts) if row else sum(p.height for p in parts) + gaps
    out = Image.new("RGB", (width, height), "white")
    at = 0
    for p in parts:
        out.paste(p, (at, 0) if row else (0, at))
        at += (p.width if row else p.height) + BOX_GAP
    return out


def box_picture(box: Any, direction: Callable[[Any], str]) -> bytes | None:
    """The pictures of the views (and images) inside an ``ipywidgets`` box, side by side where ``direction(box)`` is
    "row" and stacked otherwise, nested boxes likewise, as one PNG (longest side at most :data:`MAX_BOX_PIXELS`); None
    when nothing in it has a picture or :func:`static_fallback` is off. What GitHub, nbviewer and a page without the
    extension show for a box of views (they showed ipywidgets' text, ``HBox(children=(...))``). ``direction`` is
    :func:`attnwidgets.widgets.boxes.box_direction`, passed in: this module never imports the widgets."""
    if not _enabled:
        return None
    image = _box_image(box, 0, direction)
    if image is None:
        return None
    scale = MAX_BOX_PIXELS / max(image.width, image.height)
    if scale < 1:
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()
