"""ModelView in JupyterLab: the thumbnail grid draws, a click opens that head at full resolution and moves
``w.layer``/``w.head``, hover shows exact weights, and encoder-decoder kinds switch the grid."""

from __future__ import annotations

import json

from helpers import canvas_stats, dataset, eventually, hover_cell, page_point, wait_dataset

SETUP = """
import attnwidgets as aw
r = aw.run("The cat sat on the mat because it was tired.")
w = aw.ModelView(r)
w
"""

def thumb_point(nb, layer: int, head: int) -> tuple[float, float]:
    g = dataset(nb.page, "thumb-grid")
    step = float(g["slot"]) + float(g["gap"])
    return page_point(nb.page, "thumb-grid", float(g["x0"]) + head * step + float(g["slot"]) / 2,
                      float(g["y0"]) + layer * step + float(g["slot"]) / 2)


def test_model_view_grid_click_opens_head(lab):
    nb = lab.open([SETUP])
    nb.widget()
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/0/0")
    grid = canvas_stats(nb.page, "thumb-grid")
    assert (grid["layers"], grid["heads"]) == ("6", "12")
    assert grid["ink"] > 5000 and grid["colours"] > 30, "the thumbnail grid is blank"
    nb.screenshot("model-view-initial", nb.widget())

    x, y = thumb_point(nb, 3, 7)
    nb.page.mouse.click(x, y)
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/3/7")
    eventually(nb, "print(w.layer, w.head)", "3 7")
    assert canvas_stats(nb.page, "thumb-grid")["selected"] == "3/7"
    detail = canvas_stats(nb.page, "heatmap-canvas")
    n = int(nb.python("print(len(r.tokens))"))
    assert int(detail["nq"]) == n and int(detail["nk"]) == n and detail["factor"] == "1"
    assert detail["ink"] > 2000
    text = hover_cell(nb.page, "heatmap-canvas", 4, 2)
    expected = json.loads(nb.python(
        "import json; print(json.dumps([r.tokens[4], r.tokens[2], float(r.attention[3, 7, 4, 2])]))"))
    assert expected[0] in text and expected[1] in text and f"{expected[2]:.4f}" in text
    assert "layer 3" in nb.page.locator("[data-testid=detail-title]").inner_text()

    # Python -> page.
    nb.python("w.layer = 5; w.head = 1")
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/5/1")
    assert canvas_stats(nb.page, "thumb-grid")["selected"] == "5/1"
    nb.screenshot("model-view-layer5-head1", nb.widget())
    assert not nb.errors(), nb.errors()


def test_model_view_decoder_mask_and_cross(lab, tiny_bart, tiny_gpt2):
    nb = lab.open([f"""
import attnwidgets as aw
r = aw.run("The cat sat.", target="Le chat est assis sur le tapis.", model={tiny_bart!r})
w = aw.ModelView(r, kind="cross")
w
""", f"""
g = aw.run("The cat sat on the mat.", model={tiny_gpt2!r})
wg = aw.ModelView(g)
wg
"""])
    nb.widget(1)
    wait_dataset(nb.page, "heatmap-canvas", "view", "cross/0/0")
    d = canvas_stats(nb.page, "heatmap-canvas")
    m, n = json.loads(nb.python("import json; print(json.dumps([len(r.target_tokens), len(r.tokens)]))"))
    assert (int(d["nq"]), int(d["nk"])) == (m, n), "cross attention: target queries x source keys"
    nb.page.locator("[data-testid=kind-select]").first.select_option("decoder")
    nb.page.wait_for_function("() => document.querySelector('[data-testid=heatmap-canvas]').dataset.view"
                              " === 'decoder/0/0'", timeout=20_000)
    assert nb.python("print(w.kind)").strip() == "decoder"
    # A future key of the causal decoder reads "masked".
    assert "masked" in hover_cell(nb.page, "heatmap-canvas", 0, 3)
    nb.screenshot("model-view-bart-decoder", nb.widget(0))
    assert not nb.errors(), nb.errors()


def test_model_view_token_text_is_text(lab):
    nb = lab.open(["""
import numpy as np, attnwidgets as aw
toks = ['[CLS]', '<img src=x onerror=alert(1)>', '</script><script>alert(2)</script>', '[SEP]']
w = aw.ModelView(aw.AttentionResult.from_arrays(np.full((2, 2, 4, 4), 0.25, np.float32), toks))
w
"""])
    nb.widget()
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/0/0")
    assert "<img src=x onerror=alert(1)>" in hover_cell(nb.page, "heatmap-canvas", 1, 2)
    assert nb.page.locator(".aw-root img").count() == 0
    assert nb.page.locator(".aw-root script").count() == 0
    assert not nb.errors(), nb.errors()
