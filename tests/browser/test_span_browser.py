"""Span selection in JupyterLab (bertviz #125, #129): in the heatmap, the model view and the profile, clicking and
shift-clicking rows selects "New York", the page draws the outlined rows and their combined row, Python's
``selection`` reads the span, and a selection set from Python redraws the page. Screenshots in the lecture theme at
1280 x 720 and at a large size."""

from __future__ import annotations

from helpers import canvas_stats, dataset, eventually, row_point, wait_dataset

SETUP = """
import numpy as np
import attnwidgets as aw
r = aw.run("I flew from New York to Paris.")
ny = [r.tokens.index("new"), r.tokens.index("york")]
h = aw.AttentionHeatmap(r, layer=2, head=-1)
m = aw.ModelView(r, layer=2, head=3)
p = aw.AttentionProfile(r, layer=2)
"""

# Ink of a horizontal band of a canvas (CSS pixels y .. y + h): is something drawn there?
BAND_INK = """(c, [y, h]) => {
    const s = c.width / c.clientWidth;
    const d = c.getContext('2d').getImageData(0, Math.round(y * s), c.width, Math.max(1, Math.round(h * s))).data;
    let ink = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] < 250 || d[i+1] < 250 || d[i+2] < 250) ink++;
    return ink;
}"""


def band_ink(where, target: str, y: float, h: float) -> int:
    return where.locator(f"[data-testid={target}]").first.evaluate(BAND_INK, [y, h])


def test_shift_click_selects_a_span_in_every_view(lab):
    nb = lab.open([SETUP, "h", "m", "p"])
    ny = [int(v) for v in nb.python("print(*ny)").split()]
    assert ny[1] == ny[0] + 1

    # Heatmap: click "new", shift-click "york".
    hm = nb.widget(0)
    wait_dataset(hm, "heatmap-canvas", "view", "self/2/-1/t")
    before = canvas_stats(hm, "heatmap-canvas")
    nb.page.mouse.click(*row_point(hm, "heatmap-canvas", ny[0]))
    wait_dataset(hm, "heatmap-canvas", "selection", str(ny[0]))
    nb.page.keyboard.down("Shift")
    nb.page.mouse.click(*row_point(hm, "heatmap-canvas", ny[1], 3))
    nb.page.keyboard.up("Shift")
    d = wait_dataset(hm, "heatmap-canvas", "span", f"span/self/2/-1/t/{ny[0]}:{ny[1] + 1}/mean")
    eventually(nb, "print(h.selection)", f"[{ny[0]}, {ny[1]}]")
    after = canvas_stats(hm, "heatmap-canvas")
    assert after["sum"] != before["sum"], "the selection changed nothing drawn"
    assert int(after["ink"]) > int(before["ink"])
    grid_bottom = float(d["gridY0"]) + float(d["gridH"])
    assert float(d["spanY"]) > grid_bottom
    assert band_ink(hm, "heatmap-canvas", float(d["spanY"]) + 3, 4) > 50, "no combined row under the map"
    # Python's numbers are the hand mean of the two rows of the mean of heads.
    check = "print(np.allclose(h.span_weights(), r.attention[2].mean(0)[ny].mean(0), atol=1e-6))"
    assert nb.python(check).strip() == "True"
    assert "mean of 2 rows: new york" in hm.inner_text().replace("\u2068", "").replace("\u2069", "")
    nb.screenshot("span-heatmap-new-york", hm)

    # Sum from the menu: the row is drawn on its own scale, Python reads "sum".
    hm.locator("[data-testid=span-combine]").select_option("sum")
    wait_dataset(hm, "heatmap-canvas", "span", f"span/self/2/-1/t/{ny[0]}:{ny[1] + 1}/sum")
    eventually(nb, "print(h.combine)", "sum")
    top = float(dataset(hm, "heatmap-canvas")["spanTop"])
    want = float(nb.python("print(float(r.attention[2].mean(0)[ny].sum(0).max()))"))
    assert abs(top - want) < 1e-5

    # Python -> page: another selection redraws; ctrl-click adds a token; Escape clears.
    nb.python("h.selection = [1]")
    wait_dataset(hm, "heatmap-canvas", "span", "span/self/2/-1/t/1:2/sum")
    nb.page.keyboard.down("Control")
    nb.page.mouse.click(*row_point(hm, "heatmap-canvas", 3))
    nb.page.keyboard.up("Control")
    wait_dataset(hm, "heatmap-canvas", "selection", "1,3")
    eventually(nb, "print(h.selection)", "[1, 3]")
    hm.click(position={"x": 5, "y": 5})  # focus the widget (keys go to the focused view)
    nb.page.keyboard.press("Escape")
    wait_dataset(hm, "heatmap-canvas", "selection", "")
    eventually(nb, "print(h.selection)", "[]")
    assert canvas_stats(hm, "heatmap-canvas")["span"] == ""
    # From the keyboard: Shift+ArrowDown selects the first row, then grows the span.
    nb.page.keyboard.press("Shift+ArrowDown")
    nb.page.keyboard.press("Shift+ArrowDown")
    wait_dataset(hm, "heatmap-canvas", "span", "span/self/2/-1/t/0:2/sum")
    eventually(nb, "print(h.selection, h.layer)", "[0, 1] 2")

    # Model view: the same clicks in the large head.
    mv = nb.widget(1)
    wait_dataset(mv, "heatmap-canvas", "view", "self/2/3")
    before = canvas_stats(mv, "heatmap-canvas")
    nb.page.mouse.click(*row_point(mv, "heatmap-canvas", ny[0]))
    nb.page.keyboard.down("Shift")
    nb.page.mouse.click(*row_point(mv, "heatmap-canvas", ny[1]))
    nb.page.keyboard.up("Shift")
    d = wait_dataset(mv, "heatmap-canvas", "span", f"span/self/2/3/{ny[0]}:{ny[1] + 1}/mean")
    eventually(nb, "print(m.selection)", f"[{ny[0]}, {ny[1]}]")
    assert canvas_stats(mv, "heatmap-canvas")["sum"] != before["sum"]
    assert band_ink(mv, "heatmap-canvas", float(d["spanY"]) + 3, 4) > 50
    assert nb.python("print(np.allclose(m.span_weights(), r.attention[2, 3][ny].mean(0), atol=1e-6))").strip() == "True"
    nb.screenshot("span-model-view-new-york", mv)
    nb.python("m.selection = [ny[1]]; m.head = 5")
    wait_dataset(mv, "heatmap-canvas", "span", f"span/self/2/5/{ny[1]}:{ny[1] + 1}/mean")

    # Profile: alt-click "new" (a plain click picks keys here), shift-click "york".
    pv = nb.widget(2)
    spans = pv.locator("[data-testid=profile-text] span")
    spans.nth(ny[0]).click(modifiers=["Alt"])
    eventually(nb, "print(p.selection)", f"[{ny[0]}]")
    spans.nth(ny[1]).click(modifiers=["Shift"])
    nb.page.wait_for_function(
        f"() => document.querySelectorAll('[data-testid=profile-text]')[0].dataset.view === "
        f"'self/2/-1/{ny[0]}:{ny[1] + 1}/mean'", timeout=20_000)
    eventually(nb, "print(p.selection, p.query)", f"[{ny[0]}, {ny[1]}] [{ny[0]}, {ny[1] + 1}]")
    assert spans.nth(ny[0]).evaluate("s => s.classList.contains('aw-q')")
    assert spans.nth(ny[1]).evaluate("s => s.classList.contains('aw-q')")
    assert "mean of 2 rows" in pv.locator("[data-testid=caption]").inner_text()
    nb.python("p.selection = [1, ny[1]]; p.combine = 'sum'")
    nb.page.wait_for_function(
        f"() => document.querySelectorAll('[data-testid=profile-text]')[0].dataset.view === "
        f"'self/2/-1/1:2,{ny[1]}:{ny[1] + 1}/sum'", timeout=20_000)
    assert not spans.nth(ny[0]).evaluate("s => s.classList.contains('aw-q')")
    nb.screenshot("span-profile", pv)
    assert not nb.errors(), nb.errors()


def test_span_screenshots_lecture_and_large(lab):
    cells = ["import attnwidgets as aw\naw.set_theme('lecture')\nr = aw.run('I flew from New York to Paris.')\n"
             "ny = [r.tokens.index('new'), r.tokens.index('york')]\n"
             "h = aw.AttentionHeatmap(r, layer=2, head=-1, selection=ny)\nh"]
    for size, name in (((1280, 720), "1280x720"), ((1920, 1200), "1920x1200")):
        nb = lab.open(cells, viewport=size)
        hm = nb.widget(0)
        d = wait_dataset(hm, "heatmap-canvas", "span", "span/self/2/-1/t/4:6/mean", timeout=40)
        assert hm.get_attribute("data-theme") == "lecture"
        assert band_ink(hm, "heatmap-canvas", float(d["spanY"]) + 3, 4) > 50
        hm.scroll_into_view_if_needed()
        nb.screenshot(f"span-heatmap-lecture-{name}")
        assert not nb.errors(), nb.errors()
