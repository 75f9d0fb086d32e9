"""GenerationView's span-share panel in JupyterLab (issue 27 §3 and the generation view's part of §1): a drag over
prompt tokens selects them (Python's ``selection`` follows, and a heatmap linked by ``link_span`` selects the same
tokens), the panel draws a line per layer at Python's numbers, a click on the panel moves the scrubber to that step,
and a click in the heatmap selects in the generation view."""

from __future__ import annotations

import json

from helpers import dataset, eventually, page_point, wait_dataset

TEXT = "[data-testid=gen-text]"


def setup(path: str) -> str:
    return f"""
import attnwidgets as aw
g = aw.generate("The cat sat on the mat because", {path!r}, max_new_tokens=8, min_new_tokens=8)
w = aw.GenerationView(g, step=0, layer=1, head=-1)
h = aw.AttentionHeatmap(g.result, layer=1, head=-1)
link = aw.widgets.link_span(h, w)
"""


# Is there, within `r` CSS pixels of each point, a pixel of colour `rgb` (give or take 40 per channel)?
HAS_COLOUR = """(c, [points, rgb, r]) => {
    const s = c.width / c.clientWidth;
    const ctx = c.getContext('2d');
    return points.map(([x, y]) => {
        const d = ctx.getImageData(Math.round((x - r) * s), Math.round((y - r) * s), Math.round(2 * r * s),
                                   Math.round(2 * r * s)).data;
        for (let i = 0; i < d.length; i += 4)
            if (Math.abs(d[i] - rgb[0]) < 40 && Math.abs(d[i+1] - rgb[1]) < 40 && Math.abs(d[i+2] - rgb[2]) < 40)
                return true;
        return false;
    });
}"""


def token(where, pos: int):
    return where.locator(f"{TEXT} .aw-tok[data-pos='{pos}']")


def centre(loc) -> tuple[float, float]:
    loc.scroll_into_view_if_needed()
    b = loc.bounding_box()
    return b["x"] + b["width"] / 2, b["y"] + b["height"] / 2


def line_points(d: dict, values: list[float]) -> list[list[float]]:
    x0, y0, w, h, n, ymax = (float(d[k]) for k in ("x0", "y0", "w", "h", "steps", "ymax"))
    return [[x0 + (s / (n - 1)) * w, y0 + h - min(v, ymax) / ymax * h] for s, v in enumerate(values)]


def test_drag_selects_the_panel_draws_the_share_and_a_click_scrubs(lab, tiny_gpt2):
    nb = lab.open([setup(tiny_gpt2), "w", "h"], viewport=(1280, 900))
    gv, hm = nb.widget(0), nb.widget(1)
    wait_dataset(gv, TEXT, "step", "0")
    assert not gv.locator("[data-testid=share-panel]").is_visible()  # nothing selected: no panel

    # A drag over prompt tokens 1..3 selects them, in Python and in the linked heatmap.
    nb.page.mouse.move(*centre(token(gv, 1)))
    nb.page.mouse.down()
    nb.page.mouse.move(*centre(token(gv, 2)), steps=3)
    nb.page.mouse.move(*centre(token(gv, 3)), steps=3)
    nb.page.mouse.up()
    eventually(nb, "print(w.selection, h.selection)", "[1, 2, 3] [1, 2, 3]")
    wait_dataset(hm, "heatmap-canvas", "selection", "1,2,3")
    wait_dataset(gv, TEXT, "selection", "1,2,3")
    assert gv.locator(f"{TEXT} .aw-tok.aw-sel").count() == 3  # the span marked on the text

    # The panel: one line per layer at Python's shares (the link made combine the heatmap's "mean": per token).
    d = wait_dataset(gv, "share-canvas", "key", "1:4/mean/layer")
    nb.python("w.combine = 'sum'")
    d = wait_dataset(gv, "share-canvas", "key", "1:4/sum/layer")
    assert d["lines"] == "2" and d["steps"] == "8" and float(d["ymax"]) == 1.0
    lines = json.loads(nb.python("import json; print(json.dumps(w.share()[0].T.tolist()))"))
    want = json.loads(nb.python(
        "import json; print(json.dumps(g.span_share((1, 4)).mean(-1).T.tolist()))"))
    assert max(abs(a - b) for la, lb in zip(lines, want) for a, b in zip(la, lb)) < 1e-6
    canvas = gv.locator("[data-testid=share-canvas]")
    nb.screenshot("span-share-panel", gv)
    # The last layer's line (drawn on top) passes through Python's numbers at every step, in its colour, and is
    # nowhere near where the numbers are not.
    rgb = [int(d["colours"].split(",")[-1][i:i + 2], 16) for i in (1, 3, 5)]
    hits = canvas.evaluate(HAS_COLOUR, [line_points(d, lines[-1]), rgb, 3])
    assert all(hits), hits
    off = [[x, float(d["y0"]) + float(d["h"]) * v] for (x, _), v in zip(line_points(d, lines[-1]), lines[-1])
           if abs(v - 0.5) > 0.2]  # at 1 - v: well away from the line at these steps
    assert not off or not any(canvas.evaluate(HAS_COLOUR, [off, rgb, 1]))

    # A click on the panel at step 5 moves the scrubber there (Python's step, the text, the slider).
    x0, y0, w, h = (float(d[k]) for k in ("x0", "y0", "w", "h"))
    nb.page.mouse.click(*page_point(gv, "share-canvas", x0 + 5 / 7 * w, y0 + h / 2))
    eventually(nb, "print(w.step)", "5")
    wait_dataset(gv, TEXT, "step", "5")
    wait_dataset(gv, "share-canvas", "step", "5")
    assert gv.locator("[data-testid=step-slider]").input_value() == "5"

    # Lines per head of the layer, from the menu.
    gv.locator("[data-testid=share-by]").select_option("head")
    d = wait_dataset(gv, "share-canvas", "key", "1:4/sum/head/1")
    assert d["lines"] == "4"
    eventually(nb, "print(w.share_by)", "head")

    # A click in the heatmap selects in the generation view; Escape there clears both.
    hd = dataset(hm, "heatmap-canvas")
    cell = float(hd["cell"])
    nb.page.mouse.click(*page_point(hm, "heatmap-canvas", float(hd["x0"]) + 0.5 * cell,
                                    float(hd["y0"]) + 2.5 * cell))
    eventually(nb, "print(w.selection)", "[2]")
    wait_dataset(gv, TEXT, "selection", "2")
    wait_dataset(gv, "share-canvas", "key", "2:3/sum/head/1")
    token(gv, 2).click()  # a click on the only selected token clears it, as in the heatmap
    eventually(nb, "print(w.selection, h.selection)", "[] []")
    assert not gv.locator("[data-testid=share-panel]").is_visible()
    assert not nb.errors(), nb.errors()



TOY = """
import numpy as np
import attnwidgets as aw
from attnwidgets.teaching import train
from attnwidgets.teaching.tasks import reverse_task
aw.set_theme("lecture")
run = train(reverse_task(3, 4), architecture="decoder", seed=0, steps=250, n_held_out=30, lr=5e-3, warmup=30)
gen = run.generate("3 1 4 2")
P = gen.prompt_length
best = (0, 2)
digits = (1, P - 1)
w = aw.GenerationView(gen, layer=best[0], head=best[1], step=0, selection=list(range(*digits)), share_by="head")
w
"""


def test_notebook_06_section_3b_in_the_lecture_theme(lab):
    """Notebook 06 §3b's view (the toy decoder, its input digits selected, a line per head of layer 0) at 1280 x 720
    in the lecture theme: the panel is drawn with one line per head at Python's numbers, on screen."""
    nb = lab.open([TOY], viewport=(1280, 720), timeout=240)
    root = nb.widget()
    d = wait_dataset(root, "share-canvas", "key", "1:5/sum/head/0")
    assert root.get_attribute("data-theme") == "lecture"
    assert d["lines"] == "4" and d["steps"] == "5"
    lines = json.loads(nb.python("import json; print(json.dumps(w.share()[0].T.tolist()))"))
    rgb = [int(d["colours"].split(",")[-1][i:i + 2], 16) for i in (1, 3, 5)]
    hits = root.locator("[data-testid=share-canvas]").evaluate(HAS_COLOUR, [line_points(d, lines[-1]), rgb, 4])
    assert all(hits), hits
    root.locator("[data-testid=share-panel]").scroll_into_view_if_needed()
    nb.screenshot("span-share-toy-lecture-1280x720", nb.page)
    nb.screenshot("span-share-toy-lecture", root)
    nb.python("aw.set_theme('light')")
    assert not nb.errors(), nb.errors()
