"""One way to the picture of any view: :func:`paint` finds the view's painter in the one registry of views
(:data:`attnwidgets.viewdata.views.VIEWS`, its ``paint``) and draws the view's own state with it, so the picture is
what the page shows (issue 33 §4)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..viewdata.views import ViewSpec

__all__ = ["WIDGET_CMAPS", "paint", "painter_of"]

#: The widgets' colour map names (their ``colormap`` trait) -> matplotlib's ("" is the theme's: None); the diverging
#: ones are QKStepThrough's.
WIDGET_CMAPS = {"blues": "Blues", "viridis": "viridis", "cividis": "cividis", "greys": "Greys", "reds": "Reds",
                "rdbu": "RdBu_r", "puor": "PuOr_r"}


def painter_of(state: Any) -> tuple[ViewSpec, Any]:
    """The view whose state ``state`` is (by its dataclass, in the registry) and its painter; ValueError for a state
    no registered view has, or one whose view has no painter yet."""
    import importlib

    from ..viewdata.views import VIEWS

    spec = next((v for v in VIEWS if type(state) is v.state), None)
    if spec is None:
        raise ValueError(f"{type(state).__name__} is no view's state: pass a view or the state one made")
    if spec.paint is None:
        raise ValueError(f"the {spec.name} view has no painter yet: draw it with attnwidgets.plots.{spec.twin}")
    return spec, getattr(importlib.import_module(__package__ or "attnwidgets.plots"), spec.paint)


def _page_options(view: Any, painter: Any) -> dict[str, Any]:
    """What the page reads besides the state: the view's traits named as the painter's keyword arguments (its
    ``colormap`` as ``cmap``), and as ``span`` the combined row of its selection, which the page asks for by a "span"
    request (the widget's ``span_weights()``, :func:`attnwidgets.viewdata.selection.span_row`)."""
    options: dict[str, Any] = {}
    for name, param in inspect.signature(painter).parameters.items():
        if param.kind is not param.KEYWORD_ONLY:
            continue
        if name == "cmap" and view.has_trait("colormap"):
            options[name] = WIDGET_CMAPS.get(view.colormap)
        elif name == "span" and hasattr(view, "span_weights"):
            options[name] = view.span_weights() if view.selection else None
        elif view.has_trait(name):
            value = getattr(view, name)
            options[name] = list(value) if isinstance(value, tuple) else value
    return options


def paint(view: Any, ax: Any = None, **options: Any) -> Figure:
    """The static picture of ``view`` (a widget, drawn from the state its page shows now and the traits the page
    reads) or of a view's state (a dataclass from :mod:`attnwidgets.viewdata.views`), by the view's painter
    ``attnwidgets.plots.paint_<view>``; ``options`` go to the painter (``theme``, ``rows``, ``color``...).

    Parameters
    ----------
    view : a view (``aw.AttentionHeatmap``, ``aw.EntropyBars``...) or its state
    ax : matplotlib Axes, optional
        Draw into it (a view of several panels splits it) instead of a new figure.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> r = aw.AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["hi", "there"])
    >>> paint(aw.AttentionHeatmap(r, head=-1)).axes[0].get_title()          # the page's title
    'arrays · self attention · layer 0 · mean of heads'
    >>> from attnwidgets.viewdata.views.profile import ProfileOptions, profile_state
    >>> paint(profile_state(r, ProfileOptions(selection=(1,)))).axes[0].get_title()
    'arrays · self attention · layer 0 · mean of heads · 2 tokens'
    """
    page_state = getattr(view, "page_state", None)
    state = page_state() if callable(page_state) else view
    if state is None:
        raise ValueError(f"{type(view).__name__} has shown no state yet")
    _spec, painter = painter_of(state)
    page = _page_options(view, painter) if state is not view else {}
    figure: Figure = painter(state, ax=ax, **{**page, **options})
    return figure
