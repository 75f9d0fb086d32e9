"""AttentionCompare in JupyterLab: the signed difference is drawn in both colours of the diverging scale, a click in
the per-head grid opens that head (in Python and in the maps), unaligned tokens are grey, and the whole view fits a
1280 x 720 screen in the lecture theme."""

from __future__ import annotations

import json

from helpers import canvas_stats, eventually, page_point, wait_dataset

SETUP = """
import attnwidgets as aw
a = aw.run("The cat sat on the mat.")
b = aw.run("The cats sat on the mat.")
w = aw.AttentionCompare(a, b, layer=2, head=3, show="diff")
"""

#: Pixels of the maps canvas that are clearly red, clearly blue, and exactly the unaligned-label grey.
SIGNED = """(c) => {
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let red = 0, blue = 0, grey = 0, orange = 0, purple = 0;
    for (let i = 0; i < d.length; i += 4) {
        const [r, g, b] = [d[i], d[i + 1], d[i + 2]];
        if (r > 150 && r - b > 60 && r - g > 40) red++;
        if (b > 150 && b - r > 60 && b - g > 20) blue++;
        if (r === 168 && g === 168 && b === 168) grey++;
        if (r > 180 && r - b > 80 && g < r) orange++;
        if (b - g > 25 && r - g > 5) purple++;
    }
    return { red, blue, grey, orange, purple };
}"""


def signed(nb) -> dict:
    return nb.widget(0).locator("[data-testid=compare-maps]").evaluate(SIGNED)


def test_compare_view_diff_colours_click_and_fit(lab):
    nb = lab.open([SETUP, "w"], viewport=(1280, 720))
    root = nb.widget(0)
    maps = wait_dataset(nb.page, "compare-maps", "show", "diff")
    assert maps["shown"] == "2/3/t"
    px = signed(nb)
    # B − A at the aligned tokens has both signs: red cells (B attends more) and blue cells (A attends more).
    assert px["red"] > 200 and px["blue"] > 200, px
    dmax = float(nb.python("print(w.shown().dmax)"))
    assert float(maps["dmax"]) == dmax > 0

    # A click on grid cell (layer 4, head 7) opens that head: Python's traits and the maps follow.
    grid = canvas_stats(nb.page, "compare-grid")
    assert grid["summary"] == "js" and grid["colours"] > 20, grid
    cell = float(grid["cell"])
    x, y = float(grid["x0"]) + 7.5 * cell, float(grid["y0"]) + 4.5 * cell
    nb.page.mouse.click(*page_point(nb.page, "compare-grid", x, y))
    eventually(nb, "print(w.layer, w.head)", "4 7")
    wait_dataset(nb.page, "compare-maps", "shown", "4/7/t")
    assert canvas_stats(nb.page, "compare-grid")["selected"] == "4/7"
    nb.screenshot("compare-diff-light", root)

    # The words box recomputes the comparison at word level in the kernel; the page redraws from it.
    root.locator("[data-testid=words]").check()
    eventually(nb, "print(w.words)", "True")
    wait_dataset(nb.page, "compare-maps", "shown", "4/7/w")
    root.locator("[data-testid=words]").uncheck()
    wait_dataset(nb.page, "compare-maps", "shown", "4/7/t")

    # Side by side: two panels, the unaligned "cat"/"cats" labels in grey.
    root.locator("[data-testid=show-select]").select_option("side")
    eventually(nb, "print(w.show)", "side")
    maps = wait_dataset(nb.page, "compare-maps", "show", "side")
    assert len(json.loads(maps["panels"])) == 2
    assert signed(nb)["grey"] > 10

    # Lecture theme at 1280 x 720: the whole view fits the screen (no horizontal scroll, within the height).
    nb.python("aw.set_theme('lecture'); w.show = 'diff'")
    wait_dataset(nb.page, "compare-maps", "show", "diff")
    nb.page.wait_for_timeout(300)
    nb.page.evaluate("() => document.querySelector('.aw-compare').scrollIntoView({block: 'start'})")
    nb.screenshot("compare-diff-lecture-1280x720")
    box = root.bounding_box()
    assert box["width"] <= 1280 and box["height"] <= 720, box
    scroll = root.locator(".aw-scroll").first.evaluate("(e) => e.scrollWidth <= e.clientWidth + 1")
    assert scroll, "the maps scroll sideways at 1280 px"
    px = signed(nb)  # PuOr: orange above 0, purple below
    assert px["orange"] > 200 and px["purple"] > 200, px
    nb.python("w.show = 'side'")
    wait_dataset(nb.page, "compare-maps", "show", "side")
    nb.page.evaluate("() => document.querySelector('.aw-compare').scrollIntoView({block: 'start'})")
    nb.screenshot("compare-side-lecture-1280x720")

    # A large screen: the same view, larger.
    nb.page.set_viewport_size({"width": 1920, "height": 1200})
    nb.page.wait_for_timeout(500)
    nb.python("w.head = 0")
    wait_dataset(nb.page, "compare-maps", "shown", "4/0/t")
    nb.screenshot("compare-side-lecture-1920x1200", root)
    nb.python("aw.set_theme('light')")
    assert not nb.errors(), nb.errors()
