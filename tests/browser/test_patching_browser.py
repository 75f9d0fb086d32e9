"""PatchingView in JupyterLab: the patching grid is drawn on the diverging scale (both colours where the effects
have both signs, white-ish at 0), a click on a cell opens that head in Python and in the two maps, and the menu
switches the grid to the attention summaries."""

from __future__ import annotations

from helpers import canvas_stats, eventually, page_point, wait_dataset

SETUP = """
import attnwidgets as aw
from attnwidgets.studies import patch_heads
p = patch_heads("The cat sat on the mat.", "The dog sat on the mat.", direction="denoising")
w = aw.widgets.PatchingView(p)
"""

#: The colour at the centre of grid cell (layer, head), in canvas pixels.
CELL = """(c, [layer, head]) => {
    const s = c.width / c.getBoundingClientRect().width;
    const cell = Number(c.dataset.cell);
    const x = (Number(c.dataset.x0) + (head + 0.5) * cell) * s, y = (Number(c.dataset.y0) + (layer + 0.5) * cell) * s;
    return Array.from(c.getContext("2d").getImageData(Math.round(x), Math.round(y), 1, 1).data.slice(0, 3));
}"""


def test_patching_grid_colours_click_and_menu(lab):
    nb = lab.open([SETUP, "w"], viewport=(1280, 720))
    root = nb.widget(0)
    grid = canvas_stats(nb.page, "compare-grid")
    assert grid["summary"] == "patching" and grid.get("signed") == "1", grid
    first = nb.python("print(w.layer, w.head)").strip()
    top = nb.python("print(*p.top(1)[0][:2])").strip()
    assert first == top  # the head whose patch mattered most opens first
    canvas = root.locator("[data-testid=compare-grid]")
    # The head whose patch raised the metric most is the warm end of the scale (red in the light theme); the head
    # with the smallest |effect| is close to white; a lowered one would be blue.
    picks = nb.python("import numpy as np; e = p.effect; i = np.unravel_index(np.abs(e).argmin(), e.shape); "
                      "j = np.unravel_index(e.argmax(), e.shape); print(*i, *j, e[j] > 0)").split()
    small, big, positive = (int(picks[0]), int(picks[1])), (int(picks[2]), int(picks[3])), picks[4] == "True"
    r, g, b = canvas.evaluate(CELL, list(big))
    assert positive and r - b > 60, (r, g, b)
    r, g, b = canvas.evaluate(CELL, list(small))
    assert min(r, g, b) > 215, (r, g, b)
    nb.screenshot("patching-grid-light", root)

    # A click on cell (layer 1, head 2) opens that head: Python and the maps follow.
    cell = float(grid["cell"])
    x, y = float(grid["x0"]) + 2.5 * cell, float(grid["y0"]) + 1.5 * cell
    nb.page.mouse.click(*page_point(nb.page, "compare-grid", x, y))
    eventually(nb, "print(w.layer, w.head)", "1 2")
    wait_dataset(nb.page, "compare-maps", "shown", "1/2/t")

    # The menu shows the two inputs' attention summary instead: a sequential scale, no signed flag.
    root.locator("[data-testid=summary-select]").select_option("js")
    eventually(nb, "print(w.summary)", "js")
    nb.page.wait_for_timeout(200)
    after = canvas_stats(nb.page, "compare-grid")
    assert after["summary"] == "js" and "signed" not in after, after

    nb.python("aw.set_theme('lecture'); w.summary = 'patching'")
    nb.page.wait_for_timeout(400)
    nb.screenshot("patching-grid-lecture-1280x720", root)


ATTRIBUTION = """
import attnwidgets as aw
from attnwidgets.studies import logit_attribution
from attnwidgets.studies.induction_model import copy_text, induction_decoder
folder = induction_decoder()
words = copy_text(8, seed=1).split()
a = logit_attribution(" ".join(words[:-1]), words[8], model=folder)
g = aw.HeadStatsGrid.from_logit_attribution(a)
"""


def test_logit_attribution_grid_signed_and_clickable(lab):
    nb = lab.open([ATTRIBUTION, "g"], viewport=(1280, 720))
    root = nb.widget(0)
    info = canvas_stats(nb.page, "grid-canvas")
    assert info["statistic"] == "logit_share" and info["signed"] == "1", info
    assert float(info["vmin"]) == -float(info["vmax"])  # centred on 0
    big = nb.python("import numpy as np; i = np.unravel_index(np.abs(a.heads).argmax(), a.heads.shape); "
                    "print(*i, a.heads[i] > 0)").split()
    layer, head, positive = int(big[0]), int(big[1]), big[2] == "True"
    r, _g, b = root.locator("[data-testid=grid-canvas]").evaluate(CELL, [layer, head])
    assert (r - b > 60) if positive else (b - r > 60), (r, b, positive)
    cell = float(info["cell"])
    other = (1 - layer, 3 - head)
    x, y = float(info["x0"]) + (other[1] + 0.5) * cell, float(info["y0"]) + (other[0] + 0.5) * cell
    nb.page.mouse.click(*page_point(nb.page, "grid-canvas", x, y))
    eventually(nb, "print(g.layer, g.head)", f"{other[0]} {other[1]}")
    nb.screenshot("logit-attribution-grid", root)
