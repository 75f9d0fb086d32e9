"""A long lazy result (3,000 tokens held as queries and keys, dense attention refused) in AttentionHeatmap and
ModelView: the first paint is drawn from blockwise overviews, a head switch, the sink discount and a zoomed tile
show Python's numbers, GQA groups are named; screenshots in the lecture theme at 1280 x 720 and light at 1920 x 1080.
"""

from __future__ import annotations

from helpers import canvas_stats, dataset, eventually, unisolate

SETUP = """
import numpy as np, attnwidgets as aw
from attnwidgets.attention_stack import KeyMask, LayerQK, LazyStack
from attnwidgets.result import ModelInfo
THEME
n, H, KV, D = 3000, 4, 2, 16
rng = np.random.default_rng(0)
layers = []
for _ in range(2):
    q = rng.normal(size=(H, n, D)).astype(np.float32); q[..., 0] = np.abs(q[..., 0]) + 1.0
    k = rng.normal(size=(KV, n, D)).astype(np.float32); k[:, 0, 0] = 6.0          # key 0: an attention sink
    k[:, 1:, 1] += 2.0 * np.sin(np.arange(1, n) / 40.0); q[..., 1] += 2.0 * np.sin(np.arange(n) / 40.0)
    layers.append(LayerQK(q, k, D ** -0.5, KeyMask.causal(n, n)))
tokens = ["<s>"] + [f"w{i}" for i in range(1, n)]
info = ModelInfo(name="lazy GQA decoder", kind="decoder", n_layers=2, n_heads=H, max_length=n, n_kv_heads=KV,
                    head_dim=D)
r = aw.AttentionResult(tokens=tokens, token_ids=np.arange(n), word_ids=np.arange(n) - 1,
                       segment_ids=np.zeros(n, np.int64), special_mask=np.arange(n) == 0,
                       attention=LazyStack(tuple(layers)), model=info, text=" ".join(tokens))
aw.runner.set_dense_budget(0)   # result.attention raises: everything below must read rows
w = aw.AttentionHeatmap(r, head=1)
m = aw.ModelView(r, layer=1, head=2)
"""


def wait(nb, cond: str, target: str = "heatmap-canvas", index: int = 0) -> None:
    """Wait until the ``index``-th element with data-testid ``target`` publishes data that meets ``cond``."""
    nb.page.wait_for_function(
        f"() => {{ const d = document.querySelectorAll('[data-testid={target}]')[{index}]?.dataset; "
        f"return d && ({cond}); }}",
        timeout=30_000,
    )


def test_long_lazy_heatmap_head_switch_sinks_and_tiles(lab):
    nb = lab.open([SETUP.replace("THEME", "aw.set_theme('lecture')"), "w", "m"], viewport=(1280, 720))
    heat = nb.widget(0)
    wait(nb, "d.view === 'self/0/1/t'")
    stats = canvas_stats(heat, "heatmap-canvas")
    assert stats["factor"] == "6" and stats["ink"] > 10_000 and stats["colours"] > 20, "the overview is drawn"
    title = unisolate(heat.locator(".aw-title").first.inner_text())
    assert "head 1 · KV head 0" in title and "overview (max of 6×6 blocks" in title
    nb.screenshot("long-lazy-heatmap-lecture-1280", heat)

    # A head switch in the page: the vmax it draws with is Python's for that head, the caption names its KV head.
    heat.locator("[data-testid=head-select]").first.select_option("3")
    wait(nb, "d.view === 'self/0/3/t'")
    want = float(nb.python("print(w.overview(head=3).vmax)"))
    assert abs(float(dataset(heat, "heatmap-canvas")["vmax"]) - want) < 1e-6
    assert "head 3 · KV head 1" in unisolate(heat.locator(".aw-title").first.inner_text())
    eventually(nb, "print(w.head)", "3")

    # Discount the sink: the colour scale's top drops to the largest weight on other keys, and the legend says so.
    before = canvas_stats(heat, "heatmap-canvas")["sum"]
    heat.locator("[data-testid=discount-sinks]").first.check()
    want = float(nb.python("print(w.overview(head=3).vmax)"))
    wait(nb, f"Math.abs(Number(d.vmax) - {want}) < 1e-6")
    assert want < 0.9 * float(nb.python("print(w.overview(head=3).matrix[:, 0].max())")), "the sink column tops it"
    assert "sink key 0 discounted" in heat.locator(".aw-legend").first.inner_text()
    assert canvas_stats(heat, "heatmap-canvas")["sum"] != before, "the picture changed with the scale"
    nb.screenshot("long-lazy-heatmap-sink-discounted", heat)

    # Zoom until full-detail tiles arrive; hovering shows the exact weight Python computes for that cell.
    for _ in range(8):
        heat.locator("[data-testid=zoom-in]").first.click()
    wait(nb, "d.detail === 'tiles' && Number(d.cell) > 4")
    d = dataset(heat, "heatmap-canvas")
    (q0, q1), (k0, k1) = (tuple(map(int, part.split(":"))) for part in d["visible"].split(","))
    q, k = (q0 + q1) // 2, (k0 + k1) // 2 - 2
    # the control bar wraps at 1280 px and pushes the canvas's middle below the fold: bring it on screen first
    heat.locator("[data-testid=heatmap-canvas]").first.evaluate("el => el.scrollIntoView({block: 'center'})")
    box = heat.locator("[data-testid=heatmap-canvas]").first.bounding_box()
    nb.page.mouse.move(box["x"] + float(d["x0"]) + (k + 0.5) * float(d["cell"]),
                       box["y"] + float(d["y0"]) + (q + 0.5) * float(d["cell"]))
    tip = heat.locator("[data-testid=tooltip]").first
    tip.wait_for(state="visible", timeout=5000)
    assert tip.get_attribute("data-exact") == "true" and tip.get_attribute("data-q") == str(q)
    value = float(nb.python(f"print(float(r.rows(0, {q}, {q + 1}, head=3)[0, {k}]))"))
    if k > q:
        assert tip.inner_text().strip().endswith("masked")
    else:
        assert f"{value:.4f}" in tip.inner_text()

    # The model view beside it: thumbnails drawn, KV groups shaded, a click opens the head with its KV head named.
    mv = nb.widget(1)
    mv.scroll_into_view_if_needed()
    wait(nb, "d.kvGroups === '0-1,2-3'", "thumb-grid")
    assert canvas_stats(mv, "thumb-grid")["ink"] > 5_000
    assert "heads sharing a KV head" in unisolate(mv.locator(".aw-title").first.inner_text())
    g = dataset(mv, "thumb-grid")
    slot, gap, x0, y0 = (float(g[key]) for key in ("slot", "gap", "x0", "y0"))
    mv.locator("[data-testid=thumb-grid]").first.click(position={"x": x0 + 1 * (slot + gap) + slot / 2,
                                                                 "y": y0 + slot / 2})  # layer 0, head 1
    wait(nb, "d.view === 'self/0/1'", "heatmap-canvas", 1)  # the model view's detail (the heatmap's is 0)
    assert "head 1 · KV head 0" in unisolate(mv.locator("[data-testid=detail-title]").first.inner_text())
    eventually(nb, "print(m.layer, m.head)", "0 1")
    nb.screenshot("long-lazy-model-view-lecture-1280", mv)
    assert not nb.errors(), nb.errors()


def test_long_lazy_views_light_1920(lab):
    nb = lab.open([SETUP.replace("THEME", "aw.set_theme('light')"), "w", "m"], viewport=(1920, 1080))
    wait(nb, "d.view === 'self/0/1/t'")
    assert canvas_stats(nb.widget(0), "heatmap-canvas")["ink"] > 10_000
    nb.screenshot("long-lazy-heatmap-light-1920", nb.page)
    nb.widget(1).scroll_into_view_if_needed()
    wait(nb, "d.kvGroups === '0-1,2-3'", "thumb-grid")
    wait(nb, "d.view === 'self/1/2'", "heatmap-canvas", 1)
    nb.screenshot("long-lazy-model-view-light-1920", nb.page)
    assert not nb.errors(), nb.errors()
