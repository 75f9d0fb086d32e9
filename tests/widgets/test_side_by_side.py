"""SideBySide (issue 33 §1): while its views fit the screen (the lecture theme), one row with each view its share of
the width, so neither is crushed (a plain HBox left an AttentionHeatmap ~260 px of a 1100 px row and an 88 px map);
otherwise a row that wraps. The page's side: tests/browser/test_notebooks_browser.py (03 §1's main map >= 200 px)."""

from __future__ import annotations

import numpy as np
import pytest

import attnwidgets as aw


def _result() -> aw.AttentionResult:
    a = np.full((1, 2, 4, 4), 0.25, np.float32)
    return aw.AttentionResult.from_arrays(a, list("abcd"))


def test_shares_follow_the_theme_and_fit():
    heat, head = aw.AttentionHeatmap(_result()), aw.HeadView(_result())
    row = aw.widgets.SideBySide([heat, head], shares=(1, 3), theme="lecture")
    assert (heat.theme, head.theme) == ("lecture", "lecture")
    assert row.layout.flex_flow == "row nowrap"
    assert [v.layout.flex for v in row.children] == ["1 1 25%", "1 1 75%"]  # 1:3 of 100 %
    assert [v.layout.min_width for v in row.children] == ["0", "0"]
    heat.fit = False  # the first view decides: not fitting, the row wraps and the views keep their own size
    assert row.layout.flex_flow == "row wrap" and heat.layout.flex is None
    heat.fit = "auto"
    assert row.layout.flex_flow == "row nowrap"
    heat.theme = "light"
    assert row.layout.flex_flow == "row wrap"


def test_equal_shares_by_default_and_bad_shares_refused():
    views = [aw.AttentionHeatmap(_result()) for _ in range(3)]
    row = aw.widgets.SideBySide(views, theme="lecture")
    assert [v.layout.flex for v in row.children] == ["1 1 33.3333%"] * 3
    with pytest.raises(ValueError, match="at least one view"):
        aw.widgets.SideBySide([])
    with pytest.raises(ValueError, match="2 positive numbers"):
        aw.widgets.SideBySide(views[:2], shares=(1, 0))
