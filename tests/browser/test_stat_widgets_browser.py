"""EntropyBars, HeadStatsGrid and HeadClusterMap in JupyterLab: each draws, hover shows the value, a click selects the
head in Python, and a heatmap linked with aw.widgets.link_selection (jslink, in the page) redraws that head.

One notebook (the bundled model, 6 layers x 12 heads) serves the module: the model loads once.
"""

from __future__ import annotations

import json

import pytest
from helpers import canvas_stats, eventually, page_point, tooltip_text, wait_dataset

SETUP = """
import attnwidgets as aw
r = aw.run("The cat sat on the mat because it was tired.")
bars = aw.EntropyBars(r)
grid = aw.HeadStatsGrid(r, statistic="sep")
cmap = aw.HeadClusterMap(r)
heat = aw.AttentionHeatmap(r, layer=0, head=0)
link = aw.widgets.link_selection(heat, bars, grid, cmap)
"""
BARS, GRID, CMAP, HEAT = 0, 1, 2, 3


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open([SETUP, "bars", "grid", "cmap", "heat"], viewport=(1400, 2600))
    for i in range(4):
        nb.widget(i)
    return nb


def bar_xy(info: dict, layer: int, head: int) -> tuple[float, float]:
    x = float(info["x0"]) + layer * float(info["groupW"]) + head * (float(info["barW"]) + float(info["barGap"]))
    return x + float(info["barW"]) / 2, float(info["y0"]) + float(info["plotH"]) - 2


def cell_xy(info: dict, layer: int, head: int) -> tuple[float, float]:
    cell = float(info["cell"])
    return float(info["x0"]) + (head + 0.5) * cell, float(info["y0"]) + (layer + 0.5) * cell


def test_entropy_bars_draw_hover_and_select(nb):
    info = canvas_stats(nb.page, "bars-canvas")
    assert (info["nLayers"], info["nHeads"]) == ("6", "12")
    assert info["ink"] > 3000, "the bars canvas is blank"
    assert info["colours"] > 6, "six layers of bars in their own colours"
    assert float(info["baseline"]) == pytest.approx(float(nb.python("import math; print(math.log(len(r.tokens)))")))
    nb.screenshot("entropy-bars", nb.widget(BARS))

    # Hover bar 2-5: the tooltip shows that head's entropy.
    nb.page.mouse.move(*page_point(nb.page, "bars-canvas", *bar_xy(info, 2, 5)))
    text = tooltip_text(nb.widget(BARS))
    value = float(nb.python("print(float(bars.values('entropy')[2, 5]))"))
    assert "2-5" in text and f"{value:.3f}" in text, text

    # Click bar 3-7: Python's selection follows, and the linked heatmap shows head 3-7.
    nb.page.mouse.click(*page_point(nb.page, "bars-canvas", *bar_xy(info, 3, 7)))
    eventually(nb, "print(bars.layer, bars.head)", "3 7")
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/3/7/t")
    eventually(nb, "print(heat.layer, heat.head, grid.layer, grid.head)", "3 7 3 7")
    assert canvas_stats(nb.page, "bars-canvas")["selected"] == "3/7"

    # The switch to the [CLS] row redraws from the page's data and sets the trait.
    nb.widget(BARS).locator("[data-testid=rows-select]").select_option("cls")
    eventually(nb, "print(bars.rows)", "cls")
    info = canvas_stats(nb.page, "bars-canvas")
    assert info["rows"] == "cls"
    nb.page.mouse.move(*page_point(nb.page, "bars-canvas", *bar_xy(info, 5, 0)))
    text = tooltip_text(nb.widget(BARS))
    value = float(nb.python("print(float(bars.values('entropy_cls')[5, 0]))"))
    assert "[CLS] row" in text and f"{value:.3f}" in text, text
    nb.screenshot("entropy-bars-cls-selected-3-7", nb.widget(BARS))
    assert not nb.errors(), nb.errors()


def test_head_stats_grid_draws_switches_and_selects(nb):
    info = canvas_stats(nb.page, "grid-canvas")
    assert info["statistic"] == "sep" and info["ink"] > 5000 and info["colours"] > 20
    nb.screenshot("head-stats-grid-sep", nb.widget(GRID))

    nb.widget(GRID).locator("[data-testid=statistic-select]").select_option("prev")
    eventually(nb, "print(grid.statistic)", "prev")
    info = canvas_stats(nb.page, "grid-canvas")
    assert info["statistic"] == "prev"
    nb.page.mouse.move(*page_point(nb.page, "grid-canvas", *cell_xy(info, 1, 4)))
    text = tooltip_text(nb.widget(GRID))
    value = float(nb.python("print(float(grid.values('prev')[1, 4]))"))
    assert "1-4" in text and "previous" in text and f"{value:.3f}" in text, text

    nb.page.mouse.click(*page_point(nb.page, "grid-canvas", *cell_xy(info, 4, 2)))
    eventually(nb, "print(grid.layer, grid.head)", "4 2")
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/4/2/t")
    nb.page.wait_for_function(
        "() => document.querySelector('[data-testid=bars-canvas]').dataset.selected === '4/2'", timeout=10_000)
    nb.screenshot("head-stats-grid-prev-selected-4-2", nb.widget(GRID))
    assert not nb.errors(), nb.errors()


def test_head_cluster_map_draws_colours_and_selects(nb):
    info = canvas_stats(nb.page, "cluster-canvas")
    points = json.loads(info["points"])
    assert len(points) == 2 * 72
    assert info["ink"] > 3000 and info["colours"] > 6
    nb.screenshot("head-cluster-map-layer", nb.widget(CMAP))

    k = 5 * 12 + 1  # head 5-1
    nb.page.mouse.move(*page_point(nb.page, "cluster-canvas", points[2 * k], points[2 * k + 1]))
    text = tooltip_text(nb.widget(CMAP))
    # Points may overlap: the tooltip names whichever head is nearest the pointer; its values must be that head's.
    tip = nb.widget(CMAP).locator("[data-testid=tooltip]")
    layer, head = int(tip.get_attribute("data-layer")), int(tip.get_attribute("data-head"))
    entropy = float(nb.python(f"print(float(cmap.values('entropy')[{layer}, {head}]))"))
    assert f"{layer}-{head}" in text and f"{entropy:.3f}" in text, text

    nb.page.mouse.click(*page_point(nb.page, "cluster-canvas", points[2 * k], points[2 * k + 1]))
    eventually(nb, "print(cmap.layer, cmap.head)", f"{layer} {head}")
    wait_dataset(nb.page, "heatmap-canvas", "view", f"self/{layer}/{head}/t")

    nb.widget(CMAP).locator("[data-testid=color-select]").select_option("entropy")
    eventually(nb, "print(cmap.color)", "entropy")
    assert canvas_stats(nb.page, "cluster-canvas")["color"] == "entropy"
    assert "entropy" in nb.widget(CMAP).locator("[data-testid=legend]").inner_text()
    nb.screenshot("head-cluster-map-entropy", nb.widget(CMAP))
    nb.screenshot("linked-heatmap", nb.widget(HEAT))
    assert not nb.errors(), nb.errors()


def test_heatmap_choice_moves_the_others_and_lecture_theme(nb):
    # The link runs both ways: choosing a head in the heatmap moves the grid's outline.
    nb.widget(HEAT).locator("[data-testid=head-select]").select_option("-1")
    eventually(nb, "print(grid.head, bars.head)", "-1 -1")
    nb.page.wait_for_function(
        "() => document.querySelector('[data-testid=grid-canvas]').dataset.selected.endsWith('/-1')", timeout=10_000)
    nb.python("bars.theme = 'lecture'; grid.theme = 'lecture'")
    nb.page.wait_for_function("() => document.querySelector('.aw-entropy-bars').dataset.theme === 'lecture'")
    nb.screenshot("entropy-bars-lecture", nb.widget(BARS))
    nb.screenshot("head-stats-grid-lecture", nb.widget(GRID))
    assert not nb.errors(), nb.errors()
