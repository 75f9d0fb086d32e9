"""QKStepThrough in JupyterLab: it draws, choosing a query token updates the softmax panel and the Python trait."""

from __future__ import annotations

import json

from helpers import canvas_stats, eventually, row_point, wait_dataset

SETUP = """
import attnwidgets as aw
text = "The cat sat on the mat because it was tired."
caps = aw.runner.capture_qk_layers(text)
w = aw.QKStepThrough(caps, layer=2, head=3)
w
"""

SOFTMAX = "[data-testid=qk-softmax]"


def python_weights(nb, layer: int, head: int, query: int) -> list[float]:
    code = f"import json; print(json.dumps(w.values({layer}, {head}, {query})['weights'].tolist()))"
    return json.loads(nb.python(code))



def assert_last_panel_on_screen(nb) -> None:
    """With the view scrolled to the top, its last panel lies inside the notebook's visible area (1280 x 720)."""
    nb.widget().evaluate("(e) => e.scrollIntoView({block: 'start'})")
    nb.page.wait_for_timeout(400)
    boxes = nb.page.evaluate("""() => {
        const r = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
        return {area: r(document.querySelector('.jp-WindowedPanel-outer')),
                last: r([...document.querySelectorAll('.aw-qk-panel')].at(-1))};
    }""")
    (al, at, ar, ab), (ll, lt, lr, lb) = boxes["area"], boxes["last"]
    assert ll >= al - 1 and lt >= at - 1 and lr <= ar + 1 and lb <= ab + 1, boxes

def test_qk_draws_selects_and_syncs(lab):
    nb = lab.open([SETUP])
    nb.widget()
    wait_dataset(nb.page, SOFTMAX, "view", "2/3/1")
    for name in ("qk", "prod", "dot", "scaled", "softmax", "sum"):
        assert canvas_stats(nb.page, f"[data-testid=qk-{name}]")["ink"] > 300, f"panel {name} is blank"
    shown = [float(x) for x in canvas_stats(nb.page, SOFTMAX)["weights"].split(",")]
    assert all(abs(a - b) < 1e-6 for a, b in zip(shown, python_weights(nb, 2, 3, 1))), "the model's weights"
    nb.screenshot("qk-layer2-head3", nb.widget())

    # Choose another query token in the menu: the softmax panel and the Python trait follow.
    nb.page.locator("[data-testid=query-select]").select_option("8")
    wait_dataset(nb.page, SOFTMAX, "view", "2/3/8")
    assert nb.python("print(w.query)").strip() == "8"
    shown = [float(x) for x in canvas_stats(nb.page, SOFTMAX)["weights"].split(",")]
    assert all(abs(a - b) < 1e-6 for a, b in zip(shown, python_weights(nb, 2, 3, 8)))
    best = nb.python("import numpy as np; print(int(np.argmax(w.values()['weights'])))")
    assert int(canvas_stats(nb.page, SOFTMAX)["argmax"]) == int(best)

    # Click a token in panel 1: it becomes the query.
    canvas = nb.page.locator("[data-testid=qk-qk]")
    box = canvas.bounding_box()
    ds = canvas_stats(nb.page, SOFTMAX)
    nb.page.mouse.click(box["x"] + 20, box["y"] + float(ds["top"]) + 2.5 * float(ds["rh"]))
    wait_dataset(nb.page, SOFTMAX, "view", "2/3/2")
    assert nb.python("print(w.query)").strip() == "2"

    # Hover shows the numbers of that key.
    soft = nb.page.locator(SOFTMAX)
    sb = soft.bounding_box()
    nb.page.mouse.move(sb["x"] + 30, sb["y"] + float(ds["top"]) + 5.5 * float(ds["rh"]))
    tip = nb.page.locator("[data-testid=tooltip]")
    tip.wait_for(state="visible", timeout=5000)
    weight = python_weights(nb, 2, 3, 2)[5]
    assert f"softmax = {weight:.4f}" in tip.inner_text()
    assert "q·k =" in tip.inner_text() and "×" in tip.inner_text()

    # Keyboard: arrow right is the next head, arrow down the next layer.
    nb.page.mouse.move(0, 0)
    nb.widget().focus()
    nb.page.keyboard.press("ArrowRight")
    wait_dataset(nb.page, SOFTMAX, "view", "2/4/2")
    nb.page.keyboard.press("ArrowDown")
    wait_dataset(nb.page, SOFTMAX, "view", "3/4/2")
    eventually(nb, "print(w.layer, w.head)", "3 4")

    # Python sets the query and the theme: the page follows.
    nb.python("w.query = 6; w.theme = 'lecture'")
    wait_dataset(nb.page, SOFTMAX, "view", "3/4/6")
    nb.page.wait_for_function("() => document.querySelector('.aw-qk').dataset.theme === 'lecture'", timeout=10_000)
    nb.screenshot("qk-lecture-theme", nb.widget())
    assert not nb.errors(), nb.errors()


T5_SETUP = """
import attnwidgets as aw
text = "The cat sat on the mat because it was tired."
cap = aw.runner.capture_qk(text, model={path!r}, stack="encoder", layer=1)
w = aw.QKStepThrough(cap, head=2, query=4, theme="lecture")
w
"""
BIAS = "[data-testid=qk-bias]"


def python_bias(nb, query: int) -> tuple[list[float], list[int]]:
    code = (f"import json; v = w.values(query={query}); "
            "print(json.dumps([v['bias'].tolist(), v['bucket'].tolist()]))")
    bias, bucket = json.loads(nb.python(code))
    return bias, bucket


def test_qk_t5_bias_panel_draws_and_follows_a_click(lab, tiny_t5):
    """T5: a '+ bias' panel between the scaling and the softmax, with the model's bias and each key's bucket."""
    nb = lab.open([T5_SETUP.format(path=tiny_t5)], viewport=(1280, 720))
    nb.widget()
    wait_dataset(nb.page, SOFTMAX, "view", "1/2/4")
    heads = nb.page.locator(".aw-qk-head").all_inner_texts()
    assert heads[3:6] == ["④ × 1", "⑤ + bias", "⑥ softmax"], heads  # T5 does not scale
    stats = canvas_stats(nb.page, BIAS)
    assert stats["ink"] > 300, "the bias panel is blank"
    bias, bucket = python_bias(nb, 4)
    assert [float(x) for x in stats["bias"].split(",")] == [round(b, 6) for b in bias]
    assert [int(x) for x in stats["buckets"].split(",")] == bucket
    # On a projector (1280 x 720, lecture theme) the seven panels fit the notebook's visible area.
    assert_last_panel_on_screen(nb)
    nb.screenshot("qk-t5-bias-lecture")

    # Click key token 7 in panel 1: it becomes the query, and the bias panel shows that query's bias and buckets.
    canvas = nb.page.locator("[data-testid=qk-qk]")
    box = canvas.bounding_box()
    ds = canvas_stats(nb.page, SOFTMAX)
    nb.page.mouse.click(box["x"] + 20, box["y"] + float(ds["top"]) + 7.5 * float(ds["rh"]))
    wait_dataset(nb.page, SOFTMAX, "view", "1/2/7")
    assert nb.python("print(w.query)").strip() == "7"
    bias7, bucket7 = python_bias(nb, 7)
    stats = canvas_stats(nb.page, BIAS)
    assert [int(x) for x in stats["buckets"].split(",")] == bucket7 and bucket7 != bucket
    assert [float(x) for x in stats["bias"].split(",")] == [round(b, 6) for b in bias7]

    # Hover a key in the bias panel: the tooltip adds the bias step with its bucket.
    bb = nb.page.locator(BIAS).bounding_box()
    nb.page.mouse.move(bb["x"] + 20, bb["y"] + float(ds["top"]) + 3.5 * float(ds["rh"]))
    tip = nb.page.locator("[data-testid=tooltip]")
    tip.wait_for(state="visible", timeout=5000)
    assert f"+ bias {bias7[3]:.4f} (bucket {bucket7[3]})" in tip.inner_text()
    assert not nb.errors(), nb.errors()
    # The key rows of every panel line up, even where a panel's title wraps.
    tops = nb.page.evaluate("() => [...document.querySelectorAll('.aw-qk-panel canvas')]"
                            ".map(c => Math.round(c.getBoundingClientRect().top))")
    assert len(tops) == 7 and len(set(tops)) == 1, tops


ROPE_SETUP = """
import attnwidgets as aw
text = "The cat sat on the mat because it was tired."
cap = aw.runner.capture_qk(text, model={path!r}, layer=1, rope=True)
w = aw.QKStepThrough(cap, head=1, query=6, theme="lecture")
w
"""


def test_qk_rope_step_draws_and_follows_a_click(lab, tiny_gpt_neox):
    """GPT-NeoX (partial rotary): q and k before RoPE, q·k before it and the angles come first, with the model's
    numbers; a click on a token in the first panel makes it the query; the nine panels fit a projector."""
    nb = lab.open([ROPE_SETUP.format(path=tiny_gpt_neox)], viewport=(1280, 720), reuse=True)
    nb.widget()
    wait_dataset(nb.page, SOFTMAX, "view", "1/1/6")
    heads = nb.page.locator(".aw-qk-head").all_inner_texts()
    assert heads[:4] == ["① q, k before RoPE", "② q · k before RoPE", "③ angle per pair", "④ q, k after RoPE"], heads
    for name in ("pre", "dotpre", "angle", "qk", "dot"):
        assert canvas_stats(nb.page, f"[data-testid=qk-{name}]")["ink"] > 200, f"panel {name} is blank"

    def python_rope(query: int) -> tuple[list[float], list[float], list[float]]:
        code = (f"import json; v = w.values(query={query}); print(json.dumps([v['logits_pre'].tolist(), "
                "v['logits'].tolist(), v['q_angle'].tolist()]))")
        return tuple(json.loads(nb.python(code)))  # type: ignore[return-value]

    def shown(selector: str, key: str) -> list[float]:
        return [float(x) for x in canvas_stats(nb.page, selector)[key].split(",")]

    before, after, angles = python_rope(6)
    assert shown("[data-testid=qk-dotpre]", "logits") == [round(x, 6) for x in before]
    assert shown("[data-testid=qk-dot]", "logits") == [round(x, 6) for x in after]
    assert shown("[data-testid=qk-angle]", "angles") == [round(x, 5) for x in angles]
    assert len(angles) == 2, "rotary_pct 0.5 of d = 8: two pairs turn"
    assert "RoPE on 4 of 8 dimensions" in nb.page.locator(".aw-qk-caption").inner_text()
    assert_last_panel_on_screen(nb)
    nb.screenshot("qk-rope-neox-lecture")

    # Click key token 3 in the first panel (the labelled one): it becomes the query; every RoPE panel follows.
    canvas = nb.page.locator("[data-testid=qk-pre]")
    box = canvas.bounding_box()
    ds = canvas_stats(nb.page, SOFTMAX)
    nb.page.mouse.click(box["x"] + 20, box["y"] + float(ds["top"]) + 3.5 * float(ds["rh"]))
    wait_dataset(nb.page, SOFTMAX, "view", "1/1/3")
    assert nb.python("print(w.query)").strip() == "3"
    before3, _, angles3 = python_rope(3)
    assert shown("[data-testid=qk-dotpre]", "logits") == [round(x, 6) for x in before3]
    assert shown("[data-testid=qk-angle]", "angles") == [round(x, 5) for x in angles3] and angles3 != angles

    # Hover key 1 in the angle panel: the tooltip says how far apart the query's and the key's pair 0 are.
    ab_ = nb.page.locator("[data-testid=qk-angle]").bounding_box()
    nb.page.mouse.move(ab_["x"] + 5, ab_["y"] + float(ds["top"]) + 1.5 * float(ds["rh"]))
    tip = nb.page.locator("[data-testid=tooltip]")
    tip.wait_for(state="visible", timeout=5000)
    assert "pair 0: the query turns" in tip.inner_text() and "q·k before RoPE" in tip.inner_text()
    assert not nb.errors(), nb.errors()
    tops = nb.page.evaluate("() => [...document.querySelectorAll('.aw-qk-panel canvas')]"
                            ".map(c => Math.round(c.getBoundingClientRect().top))")
    assert len(tops) == 9 and len(set(tops)) == 1, tops


LINKED_SETUP = """
import attnwidgets as aw
text = "The cat sat on the mat because it was tired."
caps = aw.runner.capture_qk_layers(text, layers=[2])
h = aw.AttentionHeatmap(aw.run(text), layer=2, head=3)
w = aw.QKStepThrough(caps, layer=2, head=3)
link = aw.widgets.link_span(h, w)
"""


def test_qk_follows_a_span_selected_in_a_linked_heatmap(lab):
    """A click and a shift-click on two rows of a linked heatmap select them in the step-through: it steps through
    the first (its softmax panel draws that row, at Python's numbers) and marks both in its first panel; a click in
    the step-through's first panel selects in the heatmap."""
    nb = lab.open([LINKED_SETUP, "h", "w"], viewport=(1400, 1000), reuse=True)
    hm, qk = nb.widget(0), nb.widget(1)
    wait_dataset(hm, "heatmap-canvas", "view", "self/2/3/t")
    wait_dataset(qk, SOFTMAX, "view", "2/3/1")
    panel1 = canvas_stats(qk, "[data-testid=qk-qk]")["sum"]
    nb.page.mouse.click(*row_point(hm, "heatmap-canvas", 4))
    wait_dataset(hm, "heatmap-canvas", "selection", "4")
    nb.page.keyboard.down("Shift")
    nb.page.mouse.click(*row_point(hm, "heatmap-canvas", 6))
    nb.page.keyboard.up("Shift")
    eventually(nb, "print(h.selection, w.selection, w.query)", "[4, 5, 6] [4, 5, 6] 4")
    d = wait_dataset(qk, SOFTMAX, "view", "2/3/4")
    assert d["selection"] == "4,5,6"
    shown = [float(x) for x in d["weights"].split(",")]
    assert all(abs(a - b) < 1e-6 for a, b in zip(shown, python_weights(nb, 2, 3, 4)))
    assert canvas_stats(qk, "[data-testid=qk-qk]")["sum"] != panel1, "panel 1 did not redraw"
    # the accent bar left of each selected token's label: ink in rows 4..6 of the first 3 px, none in row 3
    bar = """(c, [y, h]) => { const s = c.width / c.clientWidth;
        const d = c.getContext('2d').getImageData(0, Math.round(y * s), Math.round(2 * s), Math.round(h * s)).data;
        let ink = 0; for (let i = 0; i < d.length; i += 4) if (d[i] < 250 || d[i+1] < 250 || d[i+2] < 250) ink++;
        return ink; }"""
    top, rh = float(d["top"]), float(d["rh"])
    assert qk.locator("[data-testid=qk-qk]").evaluate(bar, [top + 4 * rh + 2, 3 * rh - 4]) > 0
    assert qk.locator("[data-testid=qk-qk]").evaluate(bar, [top + 3 * rh + 2, rh - 4]) == 0
    nb.screenshot("qk-linked-span", qk)

    # A click on token 2 in the step-through's first panel selects it in the heatmap too.
    canvas = qk.locator("[data-testid=qk-qk]")
    box = canvas.bounding_box()
    nb.page.mouse.click(box["x"] + 20, box["y"] + float(d["top"]) + 2.5 * float(d["rh"]))
    eventually(nb, "print(h.selection, w.query)", "[2] 2")
    wait_dataset(hm, "heatmap-canvas", "selection", "2")
    assert not nb.errors(), nb.errors()
