"""Arrow keys in the focused widget move its head and layer (and Python sees it), arrow keys in one of its menus move
the menu instead, and every view with layers and heads draws in the lecture theme: ModelView, HeadView, EntropyBars,
HeadStatsGrid, HeadClusterMap, AttentionHeatmap and QKStepThrough (lecture screenshots: test-artifacts/lecture-*.png).

One notebook serves the module; the lecture-theme screenshots go to test-artifacts/lecture-*.png.
"""

from __future__ import annotations

import pytest
from helpers import dataset, eventually

SETUP = """
import attnwidgets as aw
r = aw.run("The cat sat on the mat.", "It was tired.")
aw.set_theme("lecture")
mv = aw.ModelView(r)
hv = aw.HeadView(r)
bars = aw.EntropyBars(r)
grid = aw.HeadStatsGrid(r, statistic="sep")
cmap = aw.HeadClusterMap(r)
hm = aw.AttentionHeatmap(r)
qk = aw.QKStepThrough(aw.runner.capture_qk_layers("The cat sat on the mat."))
aw.set_theme("light", existing=False)  # new widgets only: these stay in the lecture theme
"""
VIEWS = ["mv", "hv", "bars", "grid", "cmap", "hm", "qk"]
MV, HV, BARS, GRID, CMAP, HM, QK = range(7)


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open([SETUP, *VIEWS], viewport=(1400, 6000))
    for i in range(len(VIEWS)):
        nb.widget(i)
    return nb


def press(nb, widget: int, *keys: str) -> None:
    root = nb.widget(widget)
    root.scroll_into_view_if_needed()
    root.focus()
    for key in keys:
        nb.page.keyboard.press(key)


def test_arrow_keys_move_head_and_layer(nb):
    # ModelView: right, right, down -> layer 1, head 2; the grid outline and the full map follow.
    press(nb, MV, "ArrowRight", "ArrowRight", "ArrowDown")
    eventually(nb, "print(mv.layer, mv.head)", "1 2")
    nb.page.wait_for_function(
        "() => document.querySelector('[data-testid=heatmap-canvas]')?.dataset.view === 'self/1/2'", timeout=20_000)
    assert dataset(nb.page, "thumb-grid")["selected"] == "1/2"
    press(nb, MV, "ArrowUp", "ArrowLeft")
    eventually(nb, "print(mv.layer, mv.head)", "0 1")

    # HeadStatsGrid: down, down, right -> layer 2, head 1; the grid marks it.
    press(nb, GRID, "ArrowDown", "ArrowDown", "ArrowRight")
    eventually(nb, "print(grid.layer, grid.head)", "2 1")
    nb.page.wait_for_function(
        "() => document.querySelector('[data-testid=grid-canvas]')?.dataset.selected === '2/1'", timeout=10_000)
    # Keys in the statistic menu belong to the menu, not to the grid.
    nb.widget(GRID).locator("[data-testid=statistic-select]").focus()
    nb.page.keyboard.press("ArrowDown")
    nb.page.wait_for_timeout(300)
    eventually(nb, "print(grid.layer, grid.head)", "2 1")

    # HeadView: down is the next layer; right shows one head at a time.
    press(nb, HV, "ArrowDown", "ArrowRight", "ArrowRight")
    eventually(nb, "print(hv.layer, hv.heads)", "1 [1]")
    nb.page.wait_for_function(
        "() => { const d = document.querySelector('[data-testid=lines-canvas]')?.dataset;"
        " return d && d.view === 'self/1/t' && d.heads === '1'; }", timeout=20_000)

    # EntropyBars and HeadClusterMap move the same way.
    press(nb, BARS, "ArrowRight", "ArrowDown")
    eventually(nb, "print(bars.layer, bars.head)", "1 1")
    press(nb, CMAP, "ArrowDown", "ArrowDown", "ArrowDown", "ArrowRight")
    eventually(nb, "print(cmap.layer, cmap.head)", "3 1")
    assert dataset(nb.page, "cluster-canvas")["selected"] == "3/1"
    assert not nb.errors(), nb.errors()


def focused_testid(nb) -> str:
    return str(nb.page.evaluate("() => document.activeElement?.dataset?.testid ?? ''"))


def active_cell(nb) -> int:
    return int(nb.page.evaluate("() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"))


@pytest.mark.parametrize(("widget", "name"), [(HM, "hm"), (QK, "qk")])
def test_arrow_keys_in_a_menu_move_the_menu_not_the_view(nb, widget, name):
    # The view's keys: right, down -> layer 1, head 1.
    press(nb, widget, "ArrowRight", "ArrowDown")
    eventually(nb, f"print({name}.layer, {name}.head)", "1 1")
    # ArrowDown in the head menu picks the next head (the view's handler took the next layer instead, and JupyterLab
    # moved to the next cell); the rebuilt menu keeps the focus, so a second ArrowDown steps the menu again.
    nb.widget(widget).locator("[data-testid=head-select]").focus()
    cell = active_cell(nb)
    nb.page.keyboard.press("ArrowDown")
    eventually(nb, f"print({name}.layer, {name}.head)", "1 2")
    nb.page.wait_for_function("() => document.activeElement?.dataset?.testid === 'head-select'", timeout=5000)
    nb.page.keyboard.press("ArrowDown")
    eventually(nb, f"print({name}.layer, {name}.head)", "1 3")
    nb.widget(widget).locator("[data-testid=layer-select]").focus()
    nb.page.keyboard.press("ArrowUp")
    eventually(nb, f"print({name}.layer, {name}.head)", "0 3")
    assert active_cell(nb) == cell, "JupyterLab's command-mode arrows did not take the keys typed in the menu"
    assert focused_testid(nb) == "layer-select"
    assert not nb.errors(), nb.errors()


def test_lecture_theme_on_every_view(nb):
    names = ["model-view", "head-view", "entropy-bars", "head-stats-grid", "head-cluster-map", "heatmap", "qk"]
    assert len(names) == len(VIEWS)
    for i, name in enumerate(names):
        root = nb.widget(i)
        assert root.get_attribute("data-theme") == "lecture", name
        title_px = root.locator(".aw-title").evaluate("(e) => parseFloat(getComputedStyle(e).fontSize)")
        assert title_px >= 20, f"{name}: lecture fonts are large ({title_px}px)"
        root.scroll_into_view_if_needed()
        nb.screenshot(f"lecture-{name}", root)
    # The heatmap draws with the lecture theme's colour-blind-safe map and large labels.
    heat = nb.widget(HM)
    legend = heat.locator(".aw-legend canvas").evaluate(
        "(c) => Array.from(c.getContext('2d').getImageData(c.width - 2, c.height / 2, 1, 1).data.slice(0, 3))")
    assert legend[2] < 100 < legend[0], f"the legend ends in viridis yellow, not the light theme's blue ({legend})"
    font = heat.locator("[data-testid=heatmap-canvas]").evaluate("(c) => c.getContext('2d').font")
    assert int(font.split("px")[0]) >= 16, f"lecture labels are large ({font})"
    assert not nb.errors(), nb.errors()


def test_set_theme_restyles_widgets_already_shown(nb):
    # set_theme used to reach only widgets created afterwards; now every view on screen follows it.
    nb.python("aw.set_theme('light')")
    nb.page.wait_for_function(
        f"() => [...document.querySelectorAll('.aw-root')].filter(e => e.dataset.theme === 'light').length"
        f" === {len(VIEWS)}", timeout=20_000)
    title_px = nb.widget(HM).locator(".aw-title").evaluate("(e) => parseFloat(getComputedStyle(e).fontSize)")
    assert title_px < 16, f"light fonts again ({title_px}px)"
    # The heatmap's picture is drawn again in the light theme's blues: its strongest cell is dark blue, not yellow.
    q, k = (int(x) for x in nb.python("import numpy as np; m = hm.matrix(); "
                                      "print(*np.unravel_index(np.nanargmax(m), m.shape))").split())
    rgb = nb.widget(HM).locator("[data-testid=heatmap-canvas]").evaluate(
        """(c, [q, k]) => { const d = c.dataset, s = c.width / c.getBoundingClientRect().width;
            const x = (+d.x0 + (k + 0.5) * +d.cell) * s, y = (+d.y0 + (q + 0.5) * +d.cell) * s;
            const px = c.getContext('2d').getImageData(Math.round(x), Math.round(y), 1, 1).data;
            return [px[0], px[1], px[2]]; }""",
        [q, k])
    assert rgb[2] > rgb[0], f"the strongest weight is drawn in the light theme's blues, not viridis yellow ({rgb})"
    for i, name in enumerate(["model-view", "head-view", "entropy-bars", "head-stats-grid", "head-cluster-map",
                              "heatmap", "qk"]):
        nb.widget(i).scroll_into_view_if_needed()
        nb.screenshot(f"set-theme-light-{name}", nb.widget(i))
    assert not nb.errors(), nb.errors()
