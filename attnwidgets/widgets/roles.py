"""The head-roles view: a layers x heads grid of previous-token, duplicate-token and induction scores (the role picked
in its menu), linked to a heatmap of the selected head on the repeated random sequence. Built from two existing views
(:class:`HeadStatsGrid`, :class:`AttentionHeatmap`) linked in the page; its static twin is
:func:`attnwidgets.plots.plot_head_roles`.
"""

from __future__ import annotations

from typing import Any

import ipywidgets

from ..analysis.roles import ROLES
from ..viewdata.checks import check_head, check_layer
from ..viewdata.roles import check_roles, role_stats
from .head_stats_grid import HeadStatsGrid
from .heatmap import AttentionHeatmap
from .linking import link_selection

__all__ = ["HeadRolesView"]


class HeadRolesView(ipywidgets.HBox):
    """Role grid (left) and the selected head's attention on ``[BOS] r r`` (right); clicking a cell opens that head.

    Attributes
    ----------
    roles : HeadRoles
        What it shows.
    grid : HeadStatsGrid
        The grid; its menu switches between the three roles (``grid.statistic``), its ``layer``/``head`` are the
        selection.
    heatmap : AttentionHeatmap
        The selected head's map: on an induction head, a stripe ``seq_len - 1`` below the diagonal in the second
        copy's rows.
    link : SelectionLink
        The in-page link between the two (``link.unlink()`` to separate them).
    span_widget : AttentionHeatmap
        The heatmap again: the view's query-token selection is its ``selection``. Select rows of the example there
        (click, shift-click; or :func:`attnwidgets.widgets.link_span`, which links the view through it) and the grid
        shows the role scores of those rows of the example sequence alone
        (:func:`attnwidgets.viewdata.roles.role_stats`' ``rows``; NaN for a role none of whose queries is
        selected: the duplicate-token and induction scores have queries only in the second copy); nothing selected,
        the mean over every sequence. The grid's numbers are Python's, so this needs a running kernel.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> from attnwidgets.analysis.roles import HeadRoles, ROLES
    >>> a = np.tril(np.ones((7, 7), np.float32)); a /= a.sum(1, keepdims=True)
    >>> ex = aw.AttentionResult.from_arrays(np.stack([a, a])[None], list("^abcabc"), kind="decoder")
    >>> view = aw.HeadRolesView(HeadRoles({k: np.array([[0.1, 0.7]]) for k in ROLES}, ex, 3, 1, 1, 0, "toy"))
    >>> (view.grid.statistic, view.grid.head, view.heatmap.head)
    ('induction', 1, 1)
    >>> view.heatmap.selection = [4, 5, 6]      # the second copy: the scores of those rows, (1/5 + 1/6 + 1/7) / 3
    >>> view.grid.values("induction").round(2).tolist()
    [[0.17, 0.17]]
    """

    def __init__(self, roles: Any, role: str = "induction", *, layer: int | None = None, head: int | None = None,
                 **kwargs: Any) -> None:
        roles = check_roles(roles, "HeadRolesView")
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; choose one of {list(ROLES)}")
        n_layers, n_heads = roles.shape
        best = roles.top(role, 1)[0]
        layer = best[0] if layer is None else check_layer(layer, n_layers)
        head = best[1] if head is None else check_head(head, n_heads)
        self.roles = roles
        self.grid = HeadStatsGrid(role_stats(roles, "HeadRolesView"), statistic=role, layer=layer, head=head,
                                  **kwargs)
        self.heatmap = AttentionHeatmap(roles.example, layer=layer, head=head,
                                        **{k: v for k, v in kwargs.items() if k == "theme"})
        self.link = link_selection(self.grid, self.heatmap)
        self.span_widget = self.heatmap
        self.heatmap.observe(self._on_rows, names="selection")
        super().__init__([self.grid, self.heatmap],
                         layout=ipywidgets.Layout(flex_flow="row wrap", align_items="flex-start"))
        self._arrange()
        for view in (self.grid, self.heatmap):
            view.observe(lambda _change: self._arrange(), names=["theme", "fit"])

    def _on_rows(self, change: dict[str, Any]) -> None:
        """The grid shows the role scores of the selected rows of the example (all sequences' with none)."""
        self.grid.show_stats(role_stats(self.roles, "HeadRolesView", rows=list(change["new"]) or None))

    def fitting(self) -> bool:
        """Whether the two views fit the screen (their ``fit`` trait: "auto" fits in the lecture theme)."""
        fit, theme = self.grid.fit, self.grid.theme
        return bool(theme == "lecture") if fit == "auto" else fit is not False

    def _arrange(self) -> None:
        """Fitting: grid and map side by side in one row, sharing its width (42 % / 58 %), each fitted to its share
        and the visible height, so the pair lies on one screen (at 1280 x 720 they used to wrap into a column twice
        the screen's height). Not fitting: the row wraps as the page's width allows."""
        if self.fitting():
            self.layout.flex_flow = "row nowrap"
            self.grid.layout = ipywidgets.Layout(flex="0 1 42%", min_width="0")
            self.heatmap.layout = ipywidgets.Layout(flex="1 1 58%", min_width="0")
        else:
            self.layout.flex_flow = "row wrap"
            self.grid.layout = ipywidgets.Layout()
            self.heatmap.layout = ipywidgets.Layout()
