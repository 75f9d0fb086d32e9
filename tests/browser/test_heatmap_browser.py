"""AttentionHeatmap in JupyterLab: it draws, hover shows the exact weight, the page and Python stay in sync."""

from __future__ import annotations

import json

SETUP = """
import attnwidgets as aw
r = aw.run("The cat sat on the mat because it was tired.")
w = aw.AttentionHeatmap(r, layer=2, head=3)
w
"""


def canvas_stats(nb, selector: str = "[data-testid=heatmap-canvas]") -> dict:
    """Distinct colours and non-white pixels of the heatmap canvas, and its data attributes."""
    return nb.page.evaluate(
        """(sel) => {
            const c = document.querySelector(sel);
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            const colours = new Set(); let ink = 0;
            for (let i = 0; i < d.length; i += 4) {
                if (d[i] < 250 || d[i+1] < 250 || d[i+2] < 250) ink++;
                colours.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
            }
            return { colours: colours.size, ink, ...c.dataset, sum: Array.from(d).reduce((a, b) => a + b, 0) };
        }""",
        selector,
    )


def hover_cell(nb, q: int, k: int) -> str:
    canvas = nb.page.locator("[data-testid=heatmap-canvas]").first
    box = canvas.bounding_box()
    ds = canvas_stats(nb)
    x = box["x"] + float(ds["x0"]) + (k + 0.5) * float(ds["cell"])
    y = box["y"] + float(ds["y0"]) + (q + 0.5) * float(ds["cell"])
    nb.page.mouse.move(x, y)
    tip = nb.page.locator("[data-testid=tooltip]").first
    tip.wait_for(state="visible", timeout=5000)
    return tip.inner_text()


def wait_view(nb, view: str) -> None:
    nb.page.wait_for_function(
        "(v) => document.querySelector('[data-testid=heatmap-canvas]')?.dataset.view === v", arg=view, timeout=20_000
    )


def test_heatmap_draws_hovers_and_syncs(lab):
    nb = lab.open([SETUP])
    nb.widget()
    wait_view(nb, "self/2/3/t")
    stats = canvas_stats(nb)
    n = len(json.loads(nb.python("import json; print(json.dumps(r.tokens))")))
    assert int(stats["nq"]) == n and int(stats["nk"]) == n
    assert stats["ink"] > 2000, "the canvas is blank"
    assert stats["colours"] > 20, "a heatmap of real attention has many shades"
    nb.screenshot("heatmap-layer2-head3", nb.widget())

    # Hover a known cell: the tooltip names the query and key tokens and shows the exact weight.
    text = hover_cell(nb, 2, 5)
    expected = json.loads(nb.python(
        "import json; print(json.dumps([r.tokens[2], r.tokens[5], float(r.attention[2, 3, 2, 5])]))"))
    assert expected[0] in text and expected[1] in text
    assert f"{expected[2]:.4f}" in text

    # Choose another head in the page: the Python trait follows and the picture changes.
    before = canvas_stats(nb)["sum"]
    nb.page.locator("[data-testid=head-select]").first.select_option("7")
    wait_view(nb, "self/2/7/t")
    assert nb.python("print(w.head)").strip() == "7"
    assert canvas_stats(nb)["sum"] != before

    # The mean of heads is an option too.
    nb.page.locator("[data-testid=head-select]").first.select_option("-1")
    wait_view(nb, "self/2/-1/t")
    assert nb.python("print(w.head)").strip() == "-1"
    text = hover_cell(nb, 1, 1)
    mean = float(nb.python("print(float(r.attention[2, :, 1, 1].mean()))"))
    assert f"{mean:.4f}" in text

    # Set the trait from Python: the page redraws that view.
    nb.python("w.layer = 4; w.head = 0")
    wait_view(nb, "self/4/0/t")
    text = hover_cell(nb, 3, 0)
    value = float(nb.python("print(float(r.attention[4, 0, 3, 0]))"))
    assert f"{value:.4f}" in text
    assert "layer 4" in nb.widget().inner_text()

    # Keyboard: arrow right moves to the next head.
    nb.widget().focus()
    nb.page.keyboard.press("ArrowRight")
    wait_view(nb, "self/4/1/t")
    assert nb.python("print(w.head)").strip() == "1"
    nb.screenshot("heatmap-after-clicks", nb.widget())
    assert not nb.errors()


def test_token_text_never_runs_as_markup(lab):
    nb = lab.open(["""
import numpy as np, attnwidgets as aw
toks = ['[CLS]', '<img src=x onerror=alert(1)>', '</script><script>alert(2)</script>', '[SEP]']
a = np.full((1, 1, 4, 4), 0.25, np.float32)
w = aw.AttentionHeatmap(aw.AttentionResult.from_arrays(a, toks))
w
"""])
    nb.widget()
    wait_view(nb, "self/0/0/t")
    text = hover_cell(nb, 1, 2)
    assert "<img src=x onerror=alert(1)>" in text
    assert "</script><script>alert(2)</script>" in text
    assert nb.page.locator(".aw-root img").count() == 0
    assert nb.page.locator(".aw-root script").count() == 0
    assert not nb.errors(), nb.errors()


def test_bad_input_shows_clear_error(lab):
    nb = lab.open(["""
import attnwidgets as aw
try:
    aw.run("   ")
except ValueError as e:
    print("ERR", e)
"""])
    out = "\n".join(nb.page.locator(".jp-OutputArea-output").all_inner_texts())
    assert "ERR" in out and "empty" in out
