"""RouterView in JupyterLab (issue 34 §5) on a tiny random Mixtral: the strip's cells are drawn in each token's top
expert's colour at its gate weight's strength; hovering a cell names the token, the layer and the experts with
their gate weights; clicking a layer's number redraws the bars with that layer's load; selecting a span in a
heatmap of the same text (link_span) redraws the bars with the span's load; Escape clears; and a save_html page of
the view, with no kernel, answers a click the same way. Numbers are RouterResult.load's, read in the kernel.
Screenshots: test-artifacts/routers-*.png.
"""

from __future__ import annotations

import json

import pytest
from helpers import ARTIFACTS, canvas_stats, dataset, eventually, hover_cell, page_point, unisolate, wait_dataset

TEXT = "The cat sat on the mat because it was tired."

# The RGB of CSS pixel (x, y) of a canvas.
PIXEL = """(c, [x, y]) => {
    const s = c.width / c.clientWidth;
    return Array.from(c.getContext('2d').getImageData(Math.round(x * s), Math.round(y * s), 1, 1).data.slice(0, 3));
}"""
# Ink and a colour-weighted sum of a rectangle (CSS px) of a canvas: the bars' area.
AREA = """(c, [x, y, w, h]) => {
    const s = c.width / c.clientWidth;
    const d = c.getContext('2d').getImageData(Math.round(x * s), Math.round(y * s), Math.round(w * s),
                                              Math.round(h * s)).data;
    let ink = 0, sum = 0;
    for (let i = 0; i < d.length; i += 4) {
        if (d[i] < 250 || d[i+1] < 250 || d[i+2] < 250) ink++;
        sum += d[i] + 3 * d[i+1] + 7 * d[i+2];
    }
    return { ink, sum };
}"""


def setup(path: str) -> str:
    return f"""
import json
import numpy as np
import attnwidgets as aw
from attnwidgets.viewdata.views.routers import expert_rgb
text = {TEXT!r}
routes = aw.runner.route(text, model={path!r})
heat = aw.AttentionHeatmap(aw.run(text, model={path!r}), layer=1, head=-1)
view = aw.RouterView(routes, layer=0)
link = aw.widgets.link_span(heat, view)
"""


def bars(where, canvas: str = "routers-canvas") -> dict:
    d = dataset(where, canvas)
    box = [float(d["barsX"]), float(d["barsY"]), float(d["barsW"]), float(d["barsH"])]
    return where.locator(f"[data-testid={canvas}]").first.evaluate(AREA, box)


def shown_load(where) -> list[float]:
    return [float(v) for v in dataset(where, "routers-canvas")["load"].split(",")]


def python_load(nb, layer_row: int, positions: str = "None", weighted: bool = False) -> list[float]:
    code = f"print(json.dumps(routes.load(positions={positions}, weighted={weighted})[{layer_row}].tolist()))"
    return json.loads(nb.python(code))


def close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) < 1e-5


def heat_row(hm, q: int) -> tuple[float, float]:
    d = dataset(hm, "heatmap-canvas")
    cell = float(d["cell"])
    return page_point(hm, "heatmap-canvas", float(d["x0"]) + 1.5 * cell, float(d["y0"]) + (q + 0.5) * cell)


@pytest.fixture(scope="module")
def nb(lab, tiny_mixtral):
    nb = lab.open([setup(tiny_mixtral), "view", "heat"], viewport=(1400, 1400), timeout=300)
    nb.widget(0)
    nb.widget(1)
    return nb


def test_cells_hover_layer_click_and_linked_span(nb):
    rv = nb.widget(0)
    d = wait_dataset(rv, "routers-canvas", "layer", "0")
    # Pixels: the top-left corner of each cell of token 0 is its top expert's colour at its gate's strength.
    x0, y0, cw, ch = (float(d[k]) for k in ("x0", "y0", "cw", "ch"))
    want = json.loads(nb.python(
        "print(json.dumps([[round(255 * c) for c in expert_rgb(view._meta['palette'], view._meta['fade_floor'], "
        "routes.experts[li, 0, 0], routes.weights[li, 0, 0])] for li in range(len(routes.layers))]))"))
    canvas = rv.locator("[data-testid=routers-canvas]")
    for li, rgb in enumerate(want):
        got = canvas.evaluate(PIXEL, [x0 + li * cw + 3, y0 + 2])
        assert max(abs(a - b) for a, b in zip(got, rgb)) <= 2, (li, got, rgb)
    assert close(shown_load(rv), python_load(nb, 0)), "the bars are layer 0's load over every token"

    # Hover: the tooltip names the token, the layer and each chosen expert with its gate weight.
    tip = hover_cell(rv, "routers-canvas", 2, 1)
    facts = json.loads(nb.python("print(json.dumps([routes.tokens[2], routes.experts[1, 2].tolist(), "
                                 "routes.weights[1, 2].tolist()]))"))
    assert tip.startswith(f"token 2 {unisolate(facts[0])}") and "layer 1" in tip, tip
    for e, w in zip(facts[1], facts[2]):
        assert f"expert {e}: gate {w:.3f}" in tip, tip
    nb.screenshot("routers-hover", rv)

    # Click layer 1's number: the bars redraw with layer 1's load, and Python's layer follows.
    before = bars(rv)
    nb.page.mouse.click(*page_point(rv, "routers-canvas", x0 + 1.5 * cw, y0 - ch * 0.6))
    wait_dataset(rv, "routers-canvas", "layer", "1")
    eventually(nb, "print(view.layer)", "1")
    after = bars(rv)
    assert after["sum"] != before["sum"], "the bars' pixels did not change"
    assert close(shown_load(rv), python_load(nb, 1))

    # Select "cat sat on" in the heatmap (click, shift-click): the router view's bars count those tokens only.
    hm = nb.widget(1)
    wait_dataset(hm, "heatmap-canvas", "view", "self/1/-1/t")
    nb.page.mouse.click(*heat_row(hm, 1))
    nb.page.keyboard.down("Shift")
    nb.page.mouse.click(*heat_row(hm, 3))
    nb.page.keyboard.up("Shift")
    wait_dataset(rv, "routers-canvas", "selection", "1,2,3")
    eventually(nb, "print(view.selection)", "[1, 2, 3]")
    span = bars(rv)
    assert span["sum"] != after["sum"], "the span's bars look like the whole text's"
    assert close(shown_load(rv), python_load(nb, 1, "[1, 2, 3]"))
    nb.screenshot("routers-span", rv)

    # The weighted box: the bars count gate weight.
    rv.locator("[data-testid=weighted]").check()
    eventually(nb, "print(view.weighted)", "True")
    assert close(shown_load(rv), python_load(nb, 1, "[1, 2, 3]", True))

    # A click on a cell selects its token here (and in the heatmap); Escape clears both.
    nb.page.mouse.click(*page_point(rv, "routers-canvas", x0 + 0.5 * cw, y0 + 4.5 * ch))
    wait_dataset(rv, "routers-canvas", "layer", "0")
    wait_dataset(rv, "routers-canvas", "selection", "4")
    eventually(nb, "print(heat.selection)", "[4]")
    rv.focus()
    nb.page.keyboard.press("Escape")
    wait_dataset(rv, "routers-canvas", "selection", "")
    eventually(nb, "print(heat.selection)", "[]")
    assert not nb.errors(), nb.errors()


def test_lecture_theme_redraws_large(nb):
    rv = nb.widget(0)
    light = float(dataset(rv, "routers-canvas")["cw"])
    nb.python("view.theme = 'lecture'")
    nb.page.wait_for_function("() => document.querySelector('.aw-routers')?.dataset.theme === 'lecture'",
                              timeout=20_000)
    nb.page.wait_for_timeout(300)
    stats = canvas_stats(rv, "routers-canvas")
    assert stats["colours"] > 8 and int(stats["ink"]) > 2000
    assert float(stats["cw"]) > light, "the lecture theme's cells are wider (its text is larger)"
    nb.screenshot("routers-lecture", rv)
    nb.python("view.theme = 'light'")


def test_saved_page_answers_a_click_without_a_kernel(nb, browser, tmp_path):
    path = tmp_path / "routers.html"
    nb.python(f"view.selection = []; view.layer = 0; view.weighted = False; aw.save_html(view, {str(path)!r})")
    want = python_load(nb, 1)
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.resolve().as_uri())
        root = page.locator("#aw-widget .aw-root")
        root.wait_for(state="visible", timeout=20_000)
        d = wait_dataset(page, "routers-canvas", "layer", "0")
        before = bars(page)
        x0, y0, cw, ch = (float(d[k]) for k in ("x0", "y0", "cw", "ch"))
        page.mouse.click(*page_point(page, "routers-canvas", x0 + 1.5 * cw, y0 - ch * 0.6))
        wait_dataset(page, "routers-canvas", "layer", "1")
        assert bars(page)["sum"] != before["sum"]
        got = [float(v) for v in dataset(page, "routers-canvas")["load"].split(",")]
        assert max(abs(a - b) for a, b in zip(got, want)) < 2e-3, (got, want)  # a saved page's gates are float16
        root.screenshot(path=str(ARTIFACTS / "routers-saved-page.png"))
        assert not errors, errors
    finally:
        context.close()
