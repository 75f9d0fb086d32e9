"""Views side by side in one row that holds on a projector (issue 33 §1).

``ipywidgets.HBox([AttentionHeatmap(...), HeadView(...)])`` gives each view what flexbox leaves it: in the lecture
theme, where views fit the screen, the heatmap got ~260 px of a 1100 px row, fitted itself to that and drew an 88 px
map under a six-line title; a wrapping box instead stacked a clicked grid above the heatmap it updates, below the
fold. :class:`SideBySide` gives each view a share of the row while the views fit the screen (their ``fit`` trait;
"auto" fits in the lecture theme), so a click and what it changes are on one screen, and lets the row wrap as the
page's width allows when they do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets

__all__ = ["SideBySide"]


class SideBySide(ipywidgets.HBox):
    """``views`` in one row, each with its share of the width (``shares``, percentages; equal by default) while the
    first view fits the screen; otherwise a row that wraps.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> result = aw.AttentionResult.from_arrays(__import__("numpy").full((1, 2, 3, 3), 1 / 3, "float32"), list("abc"))
    >>> row = aw.widgets.SideBySide([aw.AttentionHeatmap(result), aw.HeadView(result)], shares=(40, 60),
    ...                             theme="lecture")
    >>> row.layout.flex_flow, [v.layout.flex for v in row.children]
    ('row nowrap', ['1 1 40%', '1 1 60%'])
    >>> row.children[0].theme = "light"; row.layout.flex_flow   # not fitting: the row wraps
    'row wrap'
    """

    def __init__(self, views: Sequence[ipywidgets.Widget], *, shares: Sequence[float] | None = None,
                 theme: str | None = None, **kwargs: Any) -> None:
        views = list(views)
        if not views:
            raise ValueError("SideBySide needs at least one view")
        shares = [100 / len(views)] * len(views) if shares is None else [float(s) for s in shares]
        if len(shares) != len(views) or any(not s > 0 for s in shares):
            raise ValueError(f"shares must be {len(views)} positive numbers, one a view; got {list(shares)}")
        if theme is not None:
            for view in views:
                if view.has_trait("theme"):
                    view.theme = theme
        self.shares = [100 * s / sum(shares) for s in shares]
        super().__init__(views, layout=ipywidgets.Layout(align_items="flex-start"), **kwargs)
        self._arrange()
        for view in views:
            if view.has_trait("theme"):
                view.observe(lambda _change: self._arrange(), names=[n for n in ("theme", "fit")
                                                                     if view.has_trait(n)])

    def fitting(self) -> bool:
        """Whether the views fit the screen (the first view's ``fit`` trait: "auto" fits in the lecture theme)."""
        view = self.children[0]
        theme = getattr(view, "theme", "light")
        fit = getattr(view, "fit", "auto")
        return bool(theme == "lecture") if fit == "auto" else fit is not False

    def _arrange(self) -> None:
        """Fitting: one row, each view fitted to its share (min width 0, so none pushes the others out). Not
        fitting: the row wraps, each view at its own size."""
        fitting = self.fitting()
        self.layout.flex_flow = "row nowrap" if fitting else "row wrap"
        for view, share in zip(self.children, self.shares):
            view.layout = (ipywidgets.Layout(flex=f"1 1 {share:g}%", min_width="0") if fitting
                           else ipywidgets.Layout())
