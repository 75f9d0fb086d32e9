"""Linking the head selection of several widgets: click a bar, a cell or a point and the heatmap shows that head."""

from __future__ import annotations

from typing import Any

import ipywidgets

__all__ = ["SelectionLink", "link_selection", "link_span"]

TRAITS = ("layer", "head")
"""The selection traits every head-selecting widget has (AttentionHeatmap, EntropyBars, HeadStatsGrid,
HeadClusterMap)."""


def _shape(widget: Any) -> tuple[int, int] | None:
    """(layers, heads) a widget selects among, when it can tell."""
    shape = getattr(widget, "selection_shape", None)
    if shape is not None:
        return tuple(shape)  # type: ignore[return-value]
    result = getattr(widget, "result", None)
    kind = getattr(widget, "kind", None)
    if result is not None and kind is not None and hasattr(result, "attention_of"):
        attention, _, _ = result.attention_of(kind)
        return int(attention.shape[0]), int(attention.shape[1])
    return None


class SelectionLink:
    """The links :func:`link_selection` made; ``unlink()`` undoes them.

    Attributes
    ----------
    widgets : tuple
        The linked widgets, the first being the one whose selection the others took at first.
    links : list
        The ``ipywidgets.jslink`` (``Link`` widgets) or ``ipywidgets.link`` objects, two per linked pair.
    """

    def __init__(self, widgets: tuple[Any, ...], links: list[Any], js: bool) -> None:
        self.widgets = widgets
        self.links = links
        self.js = js

    def unlink(self) -> None:
        """Remove every link (the widgets keep their current selection)."""
        for link in self.links:
            link.unlink()
        self.links = []

    def __repr__(self) -> str:
        names = ", ".join(type(w).__name__ for w in self.widgets)
        return f"SelectionLink({names}; {'in the page' if self.js else 'through Python'}, {len(self.links)} links)"


def link_selection(*widgets: Any, js: bool = True) -> SelectionLink:
    """Keep the selected head (the ``layer`` and ``head`` traits) of several widgets the same.

    Clicking a bar of :class:`EntropyBars`, a cell of :class:`HeadStatsGrid` or a point of
    :class:`HeadClusterMap` then shows that head in every linked :class:`AttentionHeatmap`, and choosing a head in
    the heatmap moves the others' highlight. The first widget's selection is copied to the others when linking.

    Parameters
    ----------
    *widgets
        Two or more widgets with ``layer`` and ``head`` traits over the same number of layers and heads.
    js : bool
        True (default): ``ipywidgets.jslink``. The page updates the linked widgets itself, with no round trip to the
        kernel, so the link works while the kernel is busy and in saved notebooks with widget state; the Python
        traits still follow, because each widget saves its changes. False: ``ipywidgets.link`` in the kernel, for
        code that sets ``w.layer`` from Python without a page (scripts, tests) — slower in the page, since every
        click goes to the kernel and back.

    Returns
    -------
    SelectionLink
        Holds the links; ``.unlink()`` removes them.

    Raises
    ------
    TypeError
        Fewer than two widgets, or one without ``layer``/``head`` traits.
    ValueError
        Widgets over different numbers of layers or heads.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> result = aw.run("The cat sat on the mat because it was tired.")
    >>> bars, heat = aw.EntropyBars(result), aw.AttentionHeatmap(result)
    >>> link = aw.widgets.link_selection(bars, heat, js=False)   # the default js=True links in the page
    >>> bars.layer, bars.head = 4, 7                      # what a click on bar 4-7 does
    >>> heat.layer, heat.head
    (4, 7)
    >>> link.unlink()

    In a notebook, display them side by side and click::

        aw.widgets.link_selection(bars, heat)
        ipywidgets.HBox([bars, heat])
    """
    if len(widgets) < 2:
        raise TypeError(f"link_selection needs two or more widgets to link, got {len(widgets)}")
    for w in widgets:
        if not isinstance(w, ipywidgets.Widget) or not all(w.has_trait(t) for t in TRAITS):
            raise TypeError(f"link_selection links widgets with 'layer' and 'head' traits (AttentionHeatmap, "
                            f"EntropyBars, HeadStatsGrid, HeadClusterMap); got {type(w).__name__}")
    shapes = {type(w).__name__ + f"#{i}": s for i, w in enumerate(widgets) if (s := _shape(w)) is not None}
    if len(set(shapes.values())) > 1:
        detail = ", ".join(f"{k}: {v[0]} layers x {v[1]} heads" for k, v in shapes.items())
        raise ValueError(f"these widgets show different models ({detail}); link widgets of one model")
    source = widgets[0]
    links: list[Any] = []
    for target in widgets[1:]:
        # Take the first widget's selection now, the layer and head together (the heatmap checks the pair).
        with target.hold_trait_notifications():
            target.layer, target.head = source.layer, source.head
        for trait in TRAITS:
            make = ipywidgets.jslink if js else ipywidgets.link
            links.append(make((source, trait), (target, trait)))
    return SelectionLink(tuple(widgets), links, js)


#: The views :func:`link_span` links, by class name (PatchingView is an AttentionCompare).
SPAN_VIEWS = ("AttentionHeatmap", "ModelView", "AttentionProfile", "HeadView", "GenerationView", "AttentionCompare",
              "PatchingView", "HeadStatsGrid", "EntropyBars", "HeadClusterMap", "QKStepThrough", "FillMask",
              "AblationWidget", "QKSpaceView", "HeadRolesView", "RouterView")

#: Views that show no text, so have no query tokens to select, and why :func:`link_span` leaves them out.
NO_TEXT = {
    "PositionalExplorer": "it draws positional encodings of positions, not the tokens of a text",
    "MaskExplorer": "it draws attention masks over positions, not the tokens of a text",
}


def _selection_trait(widget: Any) -> str:
    """The trait that holds a widget's selected query tokens: ``selection``, or the head view's ``selected``."""
    if isinstance(widget, ipywidgets.Widget) and widget.has_trait("selection"):
        return "selection"
    name = type(widget).__name__
    if name == "HeadView":
        return "selected"
    views = ", ".join(SPAN_VIEWS)
    if name in NO_TEXT:
        raise TypeError(f"link_span cannot link {name}: it is exempt because it shows no text ({NO_TEXT[name]}), so "
                        f"there are no query tokens to select. link_span links {views}")
    raise TypeError(f"link_span links widgets that select query tokens ({views}); got {name}, which has no "
                    "'selection' of query tokens")


def _n_queries(widget: Any) -> int | None:
    """How many query tokens a widget's selection indexes, when it can tell."""
    for name in ("_n_selectable", "_n_queries"):
        count = getattr(widget, name, None)
        if callable(count):
            return int(count())
    return None


def link_span(*widgets: Any, js: bool = True) -> SelectionLink:
    """Keep the selected query tokens of several views the same: select "New York" in one heatmap and every linked
    view shows that span (``selection``; the head view's ``selected``), with the same ``combine`` ("mean" or
    "sum") where both views have one. The first widget's selection is copied to the others when linking.

    What each view does with the selected rows:

    - :class:`AttentionHeatmap`, :class:`ModelView`, :class:`AttentionProfile`, :class:`HeadView`: outline them and
      draw their combined row; :class:`AttentionCompare` (and ``PatchingView``) selects A's query tokens.
    - :class:`GenerationView` of a generation ``g`` selects among ``g.result.tokens`` (its span-share panel then
      shows how much each step attends to the span): link it with views of ``g.result``.
    - :class:`HeadStatsGrid`, :class:`EntropyBars`, :class:`HeadClusterMap`, given one result: the statistics of
      the selected rows.
    - :class:`QKStepThrough`: its panels are one query's arithmetic (a softmax of combined rows is not the
      combined softmaxes), so they step through one selected token (the query, if selected, else the first) and mark
      the others.
    - :class:`FillMask`: its attention panel shows the combined selected rows (by default the [MASK]'s own row).
    - :class:`AblationWidget`: its before/after maps outline the rows and draw their combined row before and after,
      and it prints how much of their attention the ablation moved; the watched numbers stay whole-input measures.
    - :class:`QKSpaceView`: the tokens of the sentence it shows (set ``sentence`` first): their query points are
      ringed, and a click on a query point selects its token.
    - :class:`RouterView` of the same text: the load per expert over the selected tokens.
    - :class:`HeadRolesView`, through its heatmap: the grid shows the role scores of the selected rows of its example
      sequence alone (nothing selected: the mean over every sequence).

    :class:`PositionalExplorer` and :class:`MaskExplorer` are exempt: they draw positions, not a text, so there are
    no tokens to select; link_span refuses them with a TypeError that says so.

    Parameters
    ----------
    *widgets
        Two or more of the views above, over the same query tokens.
    js : bool
        True (default): linked in the page (``ipywidgets.jslink``), as :func:`link_selection`; False: in the kernel.

    Returns
    -------
    SelectionLink
        Holds the links; ``.unlink()`` removes them.

    Raises
    ------
    TypeError
        Fewer than two widgets, or one that does not select query tokens (the explorers that show no text among
        them).
    ValueError
        Widgets over different numbers of query tokens (word level in one view, token level in another, another
        text or sentence, say).

    Notes
    -----
    A profile always has a query, so an empty selection linked into it becomes its default query (the last
    token that is not a special token), and that goes back to the others. FillMask shows its [MASK]'s row while
    nothing is selected, the step-through keeps its query.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> r = aw.run("I flew from New York to Paris.")
    >>> heat, model = aw.AttentionHeatmap(r, layer=2), aw.ModelView(r, layer=2)
    >>> link = aw.widgets.link_span(heat, model, js=False)
    >>> heat.selection = [4, 5]; heat.combine = "sum"
    >>> model.selection, model.combine
    ([4, 5], 'sum')
    >>> link.unlink()
    >>> aw.widgets.link_span(heat, aw.MaskExplorer("causal", length=8))
    Traceback (most recent call last):
    ...
    TypeError: link_span cannot link MaskExplorer: it is exempt because it shows no text (it draws attention masks \
over positions, not the tokens of a text), so there are no query tokens to select. link_span links \
AttentionHeatmap, ModelView, AttentionProfile, HeadView, GenerationView, AttentionCompare, PatchingView, \
HeadStatsGrid, EntropyBars, HeadClusterMap, QKStepThrough, FillMask, AblationWidget, QKSpaceView, HeadRolesView, \
RouterView
    """
    if len(widgets) < 2:
        raise TypeError(f"link_span needs two or more widgets to link, got {len(widgets)}")
    # A view made of views (HeadRolesView) names the one whose selection stands for it.
    widgets = tuple(getattr(w, "span_widget", w) for w in widgets)
    traits = [_selection_trait(w) for w in widgets]
    counts = {f"{type(w).__name__}#{i}": n for i, w in enumerate(widgets) if (n := _n_queries(w)) is not None}
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{k}: {v} query tokens" for k, v in counts.items())
        raise ValueError(f"these widgets select among different query tokens ({detail}); link views of one input "
                         "at one level (tokens or words)")
    source, trait = widgets[0], traits[0]
    make = ipywidgets.jslink if js else ipywidgets.link
    links: list[Any] = []
    for target, their in zip(widgets[1:], traits[1:]):
        setattr(target, their, list(getattr(source, trait)))
        links.append(make((source, trait), (target, their)))
        if source.has_trait("combine") and target.has_trait("combine"):
            target.combine = source.combine
            links.append(make((source, "combine"), (target, "combine")))
    return SelectionLink(tuple(widgets), links, js)
