"""Span selection across views in JupyterLab (issue 27 §1): a heatmap, a HeadStatsGrid and an AttentionCompare
linked by ``link_span``. A drag over the grid's token strip selects "new york" in the heatmap and the compare view
(both draw it), the grid recolours with the statistics of those rows, and a click on a row of the compare view's A
map selects in the other two."""

from __future__ import annotations

from helpers import canvas_stats, dataset, eventually, page_point, wait_dataset

SETUP = """
import numpy as np
import attnwidgets as aw
a = aw.run("I flew from New York to Paris.")
b = aw.run("I flew from New York to Rome today.")
ny = [a.tokens.index("new"), a.tokens.index("york")]
h = aw.AttentionHeatmap(a, layer=2, head=-1)
g = aw.HeadStatsGrid(a, statistic="sep")
c = aw.AttentionCompare(a, b, layer=2, head=-1)
link = aw.widgets.link_span(h, g, c)
"""

BAND_INK = """(c, [y, h]) => {
    const s = c.width / c.clientWidth;
    const d = c.getContext('2d').getImageData(0, Math.round(y * s), c.width, Math.max(1, Math.round(h * s))).data;
    let ink = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] < 250 || d[i+1] < 250 || d[i+2] < 250) ink++;
    return ink;
}"""


def centre(loc) -> tuple[float, float]:
    loc.scroll_into_view_if_needed()
    b = loc.bounding_box()
    return b["x"] + b["width"] / 2, b["y"] + b["height"] / 2


def test_a_drag_in_one_view_selects_in_the_others(lab):
    nb = lab.open([SETUP, "h", "g", "c"], viewport=(1400, 1000))
    ny = [int(v) for v in nb.python("print(*ny)").split()]
    hm, grid, cmp = nb.widget(0), nb.widget(1), nb.widget(2)
    wait_dataset(hm, "heatmap-canvas", "view", "self/2/-1/t")
    before = canvas_stats(grid, "grid-canvas")
    chips = grid.locator("[data-testid=token-strip] [data-pos]")
    assert chips.count() == int(nb.python("print(a.n_tokens)"))

    # Drag over "new" .. "york" in the grid's token strip.
    nb.page.mouse.move(*centre(chips.nth(ny[0])))
    nb.page.mouse.down()
    nb.page.mouse.move(*centre(chips.nth(ny[1])), steps=4)
    nb.page.mouse.up()
    eventually(nb, "print(h.selection, g.selection, c.selection)", f"{ny} {ny} {ny}")
    sel = f"{ny[0]},{ny[1]}"
    wait_dataset(grid, "token-strip", "selection", sel)
    assert grid.locator("[data-testid=token-strip] .aw-sel").count() == 2

    # The heatmap draws the span's combined row; the compare view outlines it and draws its rows under A and B.
    d = wait_dataset(hm, "heatmap-canvas", "span", f"span/self/2/-1/t/{ny[0]}:{ny[1] + 1}/mean")
    assert hm.locator("[data-testid=heatmap-canvas]").evaluate(BAND_INK, [float(d["spanY"]) + 3, 4]) > 50
    d = wait_dataset(cmp, "compare-maps", "span", f"2/-1/{sel}/mean")
    assert cmp.locator("[data-testid=compare-maps]").evaluate(BAND_INK, [float(d["spanY"]) + 3, 4]) > 50
    # The grid shows the statistics of those two rows: Python's numbers, and a different picture.
    check = "print(np.allclose(g.values('sep'), a.attention[..., ny, -1].mean(-1), atol=1e-6))"
    assert nb.python(check).strip() == "True"
    eventually(nb, "print('selected' in g._meta['title'])", "True")
    nb.page.wait_for_function(
        "(s) => { const c = document.querySelectorAll('[data-testid=grid-canvas]')[0];"
        " const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let t = 0;"
        " for (let i = 0; i < d.length; i += 4) t += d[i] + 3 * d[i+1] + 7 * d[i+2]; return t !== s; }",
        arg=before["sum"], timeout=20_000)
    nb.screenshot("span-everywhere-grid", grid)
    nb.screenshot("span-everywhere-compare", cmp)

    # A click on a row of the compare view's A map selects that token everywhere.
    panels = __import__("json").loads(dataset(cmp, "compare-maps")["panels"])
    pa = panels[0]
    nb.page.mouse.click(*page_point(cmp, "compare-maps", pa["x0"] + pa["cell"] * 0.5, pa["y0"] + pa["cell"] * 1.5))
    eventually(nb, "print(h.selection, g.selection, c.selection)", "[1] [1] [1]")
    wait_dataset(hm, "heatmap-canvas", "selection", "1")
    wait_dataset(grid, "token-strip", "selection", "1")
    # Escape in the grid clears all three.
    grid.locator("[data-testid=grid-canvas]").click(position={"x": 2, "y": 2})
    nb.page.keyboard.press("Escape")
    eventually(nb, "print(h.selection, g.selection, c.selection)", "[] [] []")
    assert not nb.errors(), nb.errors()
