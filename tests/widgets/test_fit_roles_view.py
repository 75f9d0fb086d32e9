"""The head-roles view fits a projector (issue 15 §3): fitting (the lecture theme, or fit=True), its grid and heatmap
share one row (42 % / 58 %) and each fits its share and the visible height; not fitting, the row wraps as before."""

from __future__ import annotations

import numpy as np

import attnwidgets as aw
from attnwidgets.analysis.roles import ROLES, HeadRoles


def _roles() -> HeadRoles:
    a = np.tril(np.ones((7, 7), np.float32))
    a /= a.sum(1, keepdims=True)
    ex = aw.AttentionResult.from_arrays(np.stack([a, a])[None], list("^abcabc"), kind="decoder")
    return HeadRoles({k: np.array([[0.1, 0.7]]) for k in ROLES}, ex, 3, 1, 1, 0, "toy")


def test_lecture_puts_both_views_in_one_row_sharing_its_width():
    view = aw.HeadRolesView(_roles(), theme="lecture")
    assert view.fitting()
    assert view.layout.flex_flow == "row nowrap"
    assert (view.grid.layout.flex, view.heatmap.layout.flex) == ("0 1 42%", "1 1 58%")
    assert view.grid.layout.min_width == view.heatmap.layout.min_width == "0"


def test_light_wraps_as_before_and_follows_fit_and_theme():
    view = aw.HeadRolesView(_roles(), theme="light")
    assert not view.fitting()
    assert view.layout.flex_flow == "row wrap" and view.grid.layout.flex is None
    view.grid.fit = True
    assert view.fitting() and view.layout.flex_flow == "row nowrap"
    view.grid.fit = False
    view.grid.theme = "lecture"
    assert not view.fitting() and view.layout.flex_flow == "row wrap"
    view.grid.fit = "auto"
    assert view.fitting() and view.heatmap.layout.flex == "1 1 58%"
