"""The layout check of the notebooks tier (layout_check.py) catches what a room saw (issue 33 §1), on hand-made pages
in Chromium without JupyterLab: each fault below is reported, and the same page without it is clean.

The faults: text under 14 px (DOM and canvas), a faint text (25 % opacity, the head view's hidden swatches), two
overlapping texts (DOM and canvas), a view cut by a parent that hides its overflow, a canvas text past its canvas's
edge, a row that scrolls with no scroll bar in sight (02's model view after head 8) and a main map under 200 px
(03's 88 px heatmap).
"""

from __future__ import annotations

import pytest
from layout_check import CANVAS_TEXTS, check_output

# A view in an output area 600 px wide: a title, a canvas map with two labels, and a slot for the fault.
PAGE = """<div class="jp-Notebook" style="width: 800px; overflow: auto">
  <div class="jp-OutputArea-output" style="width: 600px; {clip}">
    <div class="aw-root" style="display: inline-block; font-size: 16px">
      <div class="aw-title">layer 0 · head 2</div>
      <canvas width="{map}" height="{height}" style="width: {map}px; height: {height}px" {data}></canvas>
      {extra}
    </div>
  </div>
</div>
<script>
  const c = document.querySelector("canvas"), ctx = c.getContext("2d");
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, c.width, c.height);
  ctx.fillStyle = "#000"; ctx.font = "{font}px sans-serif";
  ctx.fillText("[CLS]", 10, 30);
  ctx.fillText("{second}", {x}, 30);
  ctx.fillText("stale", 10, 120);
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 100, c.width, 40);  // painted over: "stale" is not shown any more
</script>"""
GOOD = {"clip": "", "map": 240, "height": 240, "data": "", "extra": "", "font": 16, "second": "kettle", "x": 120}

FAULTS = {
    "small": {"extra": '<span style="font-size: 10px">tiny caption</span>'},
    "faint": {"extra": '<button style="opacity: 0.25">7</button>'},
    "overlap": {"extra": '<div style="margin-top: -265px">over the title</div>'},  # climbs over the title
    "canvas overlap": {"x": 30},
    "cut": {"clip": "overflow: hidden", "extra": '<div style="width: 900px">a row wider than the output</div>'},
    "canvas edge": {"x": 215},
    # scrolls, with no bar to see (02's model view after head 8 with the file browser open)
    "hidden scroll bar": {"clip": "overflow-x: auto; scrollbar-width: none",
                          "extra": '<div style="width: 900px">a row wider than the output</div>'},
    "map": {"map": 120, "height": 120},
    # a layers x heads grid of 2 layers (square cells): short by nature, but its cells too small to read
    "small grid cells": {"map": 240, "height": 150, "data": 'data-cell="20" data-n-layers="2"'},
    "small canvas text": {"font": 10},
}
KIND = {"small": "small", "faint": "faint", "overlap": "overlap", "canvas overlap": "overlap", "cut": "cut",
        "canvas edge": "cut", "hidden scroll bar": "cut", "map": "map", "small canvas text": "small",
        "small grid cells": "map"}


@pytest.fixture(scope="module")
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_init_script(CANVAS_TEXTS)
    yield context.new_page()
    context.close()


def _check(page, **change) -> dict:
    page.goto("about:blank")  # a new document, which the init script (CANVAS_TEXTS) runs in first
    page.set_content(PAGE.format(**{**GOOD, **change}))
    return check_output(page.locator(".jp-OutputArea-output"))


def test_a_clean_view_passes(page):
    result = _check(page)
    assert result["problems"] == [], result
    assert result["maps"] == [{"view": "aw-root", "width": 240, "height": 240}]
    assert result["texts"] == 3  # the title, [CLS], kettle; "stale" was painted over


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_is_reported(page, fault):
    kinds = [p["kind"] for p in _check(page, **FAULTS[fault])["problems"]]
    assert KIND[fault] in kinds, (fault, kinds)


def test_a_short_grid_of_readable_cells_passes(page):
    """A 2-layer model's layers x heads grid is two rows (06's and 07's HeadRolesView, 182 px): its cells read."""
    got = _check(page, map=240, height=150, data='data-cell="60" data-n-layers="2"')
    assert not got["problems"], got["problems"]
    assert _check(page, map=240, height=150)["problems"], "the same canvas, not a grid, is a short map"


def test_a_title_its_own_box_cuts_does_not_overlap_its_neighbour(page):
    """A fitted QK panel's title keeps one line and ends in an ellipsis: what shows is inside its box, so it does not
    overlap the title beside it (the text node runs on under the next panel, hidden)."""
    title = ('<div style="display: flex; gap: 8px; font-size: 16px">'
             '<div style="width: 60px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis">'
             '① query q, keys k</div><div style="width: 60px">② q ⊙ k</div></div>')
    got = _check(page, extra=title)
    assert not [p for p in got["problems"] if p["kind"] == "overlap"], got["problems"]
    shown = title.replace("overflow: hidden; text-overflow: ellipsis", "overflow: visible")
    assert [p for p in _check(page, extra=shown)["problems"] if p["kind"] == "overlap"], "the same, not cut, overlaps"
