"""The coreference grid (aw.HeadStatsGrid.from_coref) in JupyterLab, lecture theme at 1280 x 720: it draws every
head's antecedent selection accuracy, names the baselines in its title, shows a head's value on hover, and a click
selects the head in Python and opens it in a linked heatmap."""

from __future__ import annotations

import pytest
from helpers import canvas_stats, eventually, page_point, tooltip_text, wait_dataset

SETUP = """
import attnwidgets as aw
from attnwidgets.data import coref_sample_path
aw.set_theme("lecture")
scores = aw.studies.coref_scores(coref_sample_path(), progress=False)
grid = aw.HeadStatsGrid.from_coref(scores)
r = aw.run("The committee approved the new law on Monday. Critics say its rules are too strict.")
heat = aw.AttentionHeatmap(r, words=True)
link = aw.widgets.link_selection(grid, heat)
"""
GRID, HEAT = 0, 1


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open([SETUP, "grid", "heat"], viewport=(1280, 720))
    for i in range(2):
        nb.widget(i)
    return nb


def cell_xy(info: dict, layer: int, head: int) -> tuple[float, float]:
    cell = float(info["cell"])
    return float(info["x0"]) + (head + 0.5) * cell, float(info["y0"]) + (layer + 0.5) * cell


def test_coref_grid_draws_hovers_and_opens_a_head(nb):
    info = canvas_stats(nb.page, "grid-canvas")
    assert info["statistic"] == "antecedent_selection"
    assert (info["nLayers"], info["nHeads"]) == ("6", "12")
    assert info["ink"] > 5000 and info["colours"] > 10, info
    best = nb.python("b = scores.best_heads(1).iloc[0]; print(int(b['layer']), int(b['head']))")
    assert info["selected"] == best.strip().replace(" ", "/"), "the best head starts selected"
    title = nb.widget(GRID).inner_text()
    base = nb.python("print(', '.join(f'{v:.2f}' for v in scores.baseline_accuracy().values()))").strip().split(", ")
    assert "coreferent mentions · baselines: nearest " + base[0] in title and "rules " + base[2] in title, title
    nb.screenshot("coref-grid-lecture-1280x720", nb.widget(GRID))

    # Hover head 2-4: the tooltip shows its accuracy.
    nb.page.mouse.move(*page_point(nb.page, "grid-canvas", *cell_xy(info, 2, 4)))
    text = tooltip_text(nb.widget(GRID))
    value = float(nb.python("print(float(scores.accuracy[2, 4]))"))
    assert "2-4" in text and f"{value:.3f}" in text, text

    # Click head 3-1: Python's selection follows, and the linked heatmap opens that head.
    nb.page.mouse.click(*page_point(nb.page, "grid-canvas", *cell_xy(info, 3, 1)))
    eventually(nb, "print(grid.layer, grid.head, heat.layer, heat.head)", "3 1 3 1")
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/3/1/w")
    assert canvas_stats(nb.page, "grid-canvas")["selected"] == "3/1"
    nb.screenshot("coref-grid-selected-3-1", nb.widget(GRID))
    nb.screenshot("coref-linked-heatmap-3-1", nb.widget(HEAT))
    nb.screenshot("coref-page-1280x720")

    # A large screen: repainted (a hover repaints), the grid grows with the room it has and keeps the selection.
    small = float(canvas_stats(nb.page, "grid-canvas")["cell"])
    nb.page.set_viewport_size({"width": 1920, "height": 1200})
    nb.page.mouse.move(*page_point(nb.page, "grid-canvas", *cell_xy(canvas_stats(nb.page, "grid-canvas"), 0, 0)))
    big = canvas_stats(nb.page, "grid-canvas")
    assert float(big["cell"]) >= small and big["selected"] == "3/1", (small, big)
    nb.screenshot("coref-grid-lecture-1920x1200", nb.widget(GRID))
    assert not nb.errors(), nb.errors()
