"""AttentionHeatmap in JupyterLab: it draws, hover shows the exact weight, the page and Python stay in sync."""

from __future__ import annotations

import json

from helpers import canvas_stats, eventually, hover_cell, wait_dataset

SETUP = """
import attnwidgets as aw
r = aw.run("The cat sat on the mat because it was tired.")
w = aw.AttentionHeatmap(r, layer=2, head=3)
w
"""


def test_heatmap_draws_hovers_and_syncs(lab):
    nb = lab.open([SETUP])
    nb.widget()
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/2/3/t")
    stats = canvas_stats(nb.page, "heatmap-canvas")
    n = len(json.loads(nb.python("import json; print(json.dumps(r.tokens))")))
    assert int(stats["nq"]) == n and int(stats["nk"]) == n
    assert stats["ink"] > 2000, "the canvas is blank"
    assert stats["colours"] > 20, "a heatmap of real attention has many shades"
    nb.screenshot("heatmap-layer2-head3", nb.widget())

    # Hover a known cell: the tooltip names the query and key tokens and shows the exact weight.
    text = hover_cell(nb.page, "heatmap-canvas", 2, 5)
    expected = json.loads(nb.python(
        "import json; print(json.dumps([r.tokens[2], r.tokens[5], float(r.attention[2, 3, 2, 5])]))"))
    assert expected[0] in text and expected[1] in text
    assert f"{expected[2]:.4f}" in text

    # Choose another head in the page: the Python trait follows and the picture changes.
    before = canvas_stats(nb.page, "heatmap-canvas")["sum"]
    nb.page.locator("[data-testid=head-select]").first.select_option("7")
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/2/7/t")
    eventually(nb, "print(w.head)", "7")
    assert not nb.page.locator("[data-testid=tooltip]").first.is_visible(), "the tooltip still shows head 3's weight"
    assert canvas_stats(nb.page, "heatmap-canvas")["sum"] != before

    # The mean of heads is an option too.
    nb.page.locator("[data-testid=head-select]").first.select_option("-1")
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/2/-1/t")
    eventually(nb, "print(w.head)", "-1")
    text = hover_cell(nb.page, "heatmap-canvas", 1, 1)
    mean = float(nb.python("print(float(r.attention[2, :, 1, 1].mean()))"))
    assert f"{mean:.4f}" in text

    # Set the trait from Python: the page redraws that view.
    nb.python("w.layer = 4; w.head = 0")
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/4/0/t")
    text = hover_cell(nb.page, "heatmap-canvas", 3, 0)
    value = float(nb.python("print(float(r.attention[4, 0, 3, 0]))"))
    assert f"{value:.4f}" in text
    assert "layer 4" in nb.widget().inner_text()

    # Keyboard: arrow right moves to the next head.
    nb.widget().focus()
    nb.page.keyboard.press("ArrowRight")
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/4/1/t")
    eventually(nb, "print(w.head)", "1")
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
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/0/0/t")
    text = hover_cell(nb.page, "heatmap-canvas", 1, 2)
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
