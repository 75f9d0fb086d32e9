"""Long inputs in AttentionHeatmap: a 2,048-token causal map arrives as a block-max overview, zoom (buttons, wheel)
and drag change the visible region, full-detail tiles replace the overview once zoomed in, and hover there shows
the exact weight; the causal mask is painted light grey."""

from __future__ import annotations

from helpers import dataset

SETUP = """
import numpy as np, attnwidgets as aw
n = 2048
rng = np.random.default_rng(0)
a = np.tril(0.1 * rng.random((1, 2, n, n), dtype=np.float32) ** 64)  # sparse noise, a diagonal, a previous-token band
a[..., np.arange(n), np.arange(n)] += 3.0
a[..., np.arange(1, n), np.arange(n - 1)] += 2.0
a[..., :, 0] += 1.0
a /= a.sum(-1, keepdims=True)
r = aw.AttentionResult.from_arrays(a, [f"t{i}" for i in range(n)], kind="decoder", name="synthetic decoder")
w = aw.AttentionHeatmap(r)
w
"""


def pixel(nb, x: float, y: float) -> list[int]:
    """RGB of the canvas at CSS pixel (x, y)."""
    return nb.page.evaluate(
        """([x, y]) => { const c = document.querySelector('[data-testid=heatmap-canvas]');
            const s = c.width / c.getBoundingClientRect().width;
            return Array.from(c.getContext('2d').getImageData(Math.round(x * s), Math.round(y * s), 1, 1).data); }""",
        [x, y],
    )[:3]


def wait(nb, cond: str) -> None:
    nb.page.wait_for_function(
        f"() => {{ const d = document.querySelector('[data-testid=heatmap-canvas]')?.dataset; return d && ({cond}); }}",
        timeout=20_000,
    )


def test_long_input_overview_zoom_tiles_and_exact_hover(lab):
    nb = lab.open([SETUP])
    nb.widget()
    wait(nb, "d.view === 'self/0/0/t'")
    d = dataset(nb.page, "heatmap-canvas")
    assert (d["nq"], d["nk"], d["factor"], d["detail"]) == ("2048", "2048", "4", "overview")
    sent = int(nb.python("print(len(bytes(w._payload['matrix']['buffer'])))"))
    assert sent == 512 * 512 * 4, "only a 512 x 512 overview crosses up front, not 2048 x 2048"
    # The causal mask (top right) is light grey; the diagonal is coloured.
    gx, gy, gw = float(d["gridX0"]), float(d["gridY0"]), float(d["gridW"])
    assert pixel(nb, gx + gw * 0.9, gy + gw * 0.1) == [235, 235, 235]
    assert pixel(nb, gx + gw * 0.5, gy + gw * 0.5) != [235, 235, 235]
    nb.screenshot("long-input-overview", nb.widget())

    # Zoom in with the buttons until the visible region is small enough for full-detail tiles.
    for _ in range(3):
        nb.page.locator("[data-testid=zoom-in]").first.click()
    wait(nb, "d.detail === 'tiles'")
    d = dataset(nb.page, "heatmap-canvas")
    assert float(d["zoom"]) > 4
    (q0, q1), (k0, k1) = (tuple(map(int, part.split(":"))) for part in d["visible"].split(","))
    assert q1 - q0 <= 512 and k1 - k0 <= 512
    nb.screenshot("long-input-zoomed", nb.widget())

    # Zoom on to the largest cells (about 40 px); tiles are still the source of what is drawn.
    for _ in range(8):
        nb.page.locator("[data-testid=zoom-in]").first.click()
    wait(nb, "d.detail === 'tiles' && Number(d.cell) > 30")
    d = dataset(nb.page, "heatmap-canvas")
    (q0, q1), (k0, k1) = (tuple(map(int, part.split(":"))) for part in d["visible"].split(","))
    nb.screenshot("long-input-full-zoom", nb.widget())

    # Hover a visible cell on the diagonal band: the exact float32 weight, not a block max.
    canvas = nb.page.locator("[data-testid=heatmap-canvas]").first
    box = canvas.bounding_box()
    q, k = (q0 + q1) // 2, (q0 + q1) // 2 - 1
    nb.page.mouse.move(box["x"] + float(d["x0"]) + (k + 0.5) * float(d["cell"]),
                       box["y"] + float(d["y0"]) + (q + 0.5) * float(d["cell"]))
    tip = nb.page.locator("[data-testid=tooltip]").first
    tip.wait_for(state="visible", timeout=5000)
    assert tip.get_attribute("data-exact") == "true"
    assert (tip.get_attribute("data-q"), tip.get_attribute("data-k")) == (str(q), str(k))
    value = float(nb.python(f"print(float(r.attention[0, 0, {q}, {k}]))"))
    assert f"{value:.4f}" in tip.inner_text()

    # Drag pans: the visible region moves; the wheel zooms about the cursor.
    before = dataset(nb.page, "heatmap-canvas")["visible"]
    cx, cy = box["x"] + gx + gw / 2, box["y"] + gy + gw / 2
    nb.page.mouse.move(cx, cy)
    nb.page.mouse.down()
    nb.page.mouse.move(cx - 120, cy - 80, steps=4)
    nb.page.mouse.up()
    wait(nb, f"d.visible !== '{before}'")
    zoom = float(dataset(nb.page, "heatmap-canvas")["zoom"])
    nb.page.mouse.wheel(0, 400)
    wait(nb, f"Number(d.zoom) < {zoom}")
    nb.page.locator("[data-testid=zoom-reset]").first.click()
    wait(nb, "d.zoom === '1' && d.visible === '0:2048,0:2048'")
    assert not nb.errors(), nb.errors()


def test_short_input_zoom_keeps_exact_values(lab):
    nb = lab.open(["""
import attnwidgets as aw
r = aw.run("The cat sat on the mat because it was tired, and the dog barked at the moon all night long.")
w = aw.AttentionHeatmap(r, layer=1, head=2)
w
"""])
    nb.widget()
    wait(nb, "d.view === 'self/1/2/t'")
    d = dataset(nb.page, "heatmap-canvas")
    assert d["factor"] == "1" and d["detail"] == "full"
    canvas = nb.page.locator("[data-testid=heatmap-canvas]").first
    box = canvas.bounding_box()
    gx, gy, gw = float(d["gridX0"]), float(d["gridY0"]), float(d["gridW"])
    nb.page.mouse.move(box["x"] + gx + gw * 0.25, box["y"] + gy + gw * 0.25)
    nb.page.mouse.wheel(0, -600)
    wait(nb, "Number(d.zoom) > 1.5")
    d = dataset(nb.page, "heatmap-canvas")
    (q0, q1), (k0, k1) = (tuple(map(int, part.split(":"))) for part in d["visible"].split(","))
    n = int(nb.python("print(len(r.tokens))"))
    assert q1 - q0 < n and k1 - k0 < n
    q, k = q0 + 1, k0 + 1
    nb.page.mouse.move(box["x"] + float(d["x0"]) + (k + 0.5) * float(d["cell"]),
                       box["y"] + float(d["y0"]) + (q + 0.5) * float(d["cell"]))
    tip = nb.page.locator("[data-testid=tooltip]").first
    tip.wait_for(state="visible", timeout=5000)
    value = float(nb.python(f"print(float(r.attention[1, 2, {q}, {k}]))"))
    assert f"{value:.4f}" in tip.inner_text()
    nb.screenshot("heatmap-zoomed-short", nb.widget())
    assert not nb.errors(), nb.errors()
