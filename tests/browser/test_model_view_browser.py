"""ModelView in JupyterLab: the thumbnail grid draws, a click opens that head at full resolution and moves
``w.layer``/``w.head``, hover shows exact weights, and encoder-decoder kinds switch the grid."""

from __future__ import annotations

import json

SETUP = """
import attnwidgets as aw
r = aw.run("The cat sat on the mat because it was tired.")
w = aw.ModelView(r)
w
"""

STATS = """(sel) => {
    const c = document.querySelector(sel);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const colours = new Set(); let ink = 0;
    for (let i = 0; i < d.length; i += 4) {
        if (d[i] < 250 || d[i+1] < 250 || d[i+2] < 250) ink++;
        colours.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
    }
    return { colours: colours.size, ink, ...c.dataset };
}"""


def stats(nb, testid: str) -> dict:
    return nb.page.evaluate(STATS, f"[data-testid={testid}]")


def thumb_point(nb, layer: int, head: int) -> tuple[float, float]:
    grid = nb.page.locator("[data-testid=thumb-grid]").first
    box = grid.bounding_box()
    g = stats(nb, "thumb-grid")
    step = float(g["slot"]) + float(g["gap"])
    return (box["x"] + float(g["x0"]) + head * step + float(g["slot"]) / 2,
            box["y"] + float(g["y0"]) + layer * step + float(g["slot"]) / 2)


def wait_detail(nb, view: str) -> None:
    nb.page.wait_for_function(
        "(v) => document.querySelector('[data-testid=heatmap-canvas]')?.dataset.view === v", arg=view, timeout=20_000
    )


def hover_detail(nb, q: int, k: int) -> str:
    canvas = nb.page.locator("[data-testid=heatmap-canvas]").first
    box = canvas.bounding_box()
    d = stats(nb, "heatmap-canvas")
    nb.page.mouse.move(box["x"] + float(d["x0"]) + (k + 0.5) * float(d["cell"]),
                       box["y"] + float(d["y0"]) + (q + 0.5) * float(d["cell"]))
    tip = nb.page.locator("[data-testid=tooltip]").first
    tip.wait_for(state="visible", timeout=5000)
    return tip.inner_text()


def test_model_view_grid_click_opens_head(lab):
    nb = lab.open([SETUP])
    nb.widget()
    wait_detail(nb, "self/0/0")
    grid = stats(nb, "thumb-grid")
    assert (grid["layers"], grid["heads"]) == ("6", "12")
    assert grid["ink"] > 5000 and grid["colours"] > 30, "the thumbnail grid is blank"
    nb.screenshot("model-view-initial", nb.widget())

    x, y = thumb_point(nb, 3, 7)
    nb.page.mouse.click(x, y)
    wait_detail(nb, "self/3/7")
    assert nb.python("print(w.layer, w.head)").split() == ["3", "7"]
    assert stats(nb, "thumb-grid")["selected"] == "3/7"
    detail = stats(nb, "heatmap-canvas")
    n = int(nb.python("print(len(r.tokens))"))
    assert int(detail["nq"]) == n and int(detail["nk"]) == n and detail["factor"] == "1"
    assert detail["ink"] > 2000
    text = hover_detail(nb, 4, 2)
    expected = json.loads(nb.python(
        "import json; print(json.dumps([r.tokens[4], r.tokens[2], float(r.attention[3, 7, 4, 2])]))"))
    assert expected[0] in text and expected[1] in text and f"{expected[2]:.4f}" in text
    assert "layer 3" in nb.page.locator("[data-testid=detail-title]").inner_text()

    # Python -> page.
    nb.python("w.layer = 5; w.head = 1")
    wait_detail(nb, "self/5/1")
    assert stats(nb, "thumb-grid")["selected"] == "5/1"
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
    wait_detail(nb, "cross/0/0")
    d = stats(nb, "heatmap-canvas")
    m, n = json.loads(nb.python("import json; print(json.dumps([len(r.target_tokens), len(r.tokens)]))"))
    assert (int(d["nq"]), int(d["nk"])) == (m, n), "cross attention: target queries x source keys"
    nb.page.locator("[data-testid=kind-select]").first.select_option("decoder")
    nb.page.wait_for_function("() => document.querySelector('[data-testid=heatmap-canvas]').dataset.view"
                              " === 'decoder/0/0'", timeout=20_000)
    assert nb.python("print(w.kind)").strip() == "decoder"
    # A future key of the causal decoder reads "masked".
    assert "masked" in hover_detail(nb, 0, 3)
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
    wait_detail(nb, "self/0/0")
    assert "<img src=x onerror=alert(1)>" in hover_detail(nb, 1, 2)
    assert nb.page.locator(".aw-root img").count() == 0
    assert nb.page.locator(".aw-root script").count() == 0
    assert not nb.errors(), nb.errors()
