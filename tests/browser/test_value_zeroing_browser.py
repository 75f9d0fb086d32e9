"""The third choice of the measure switch in JupyterLab (lecture theme, 1280 x 720): a click on "value zeroing" sets
``measure`` in Python, and the heatmap, the model view and the entropy bars draw Mohebbi et al. 2023's value-zeroing
map (one per layer, the same in each head) instead of the weights or the norms."""

from __future__ import annotations

import json

from helpers import canvas_stats, eventually, hover_cell, pressed, redrawn, wait_dataset

SETUP = """
import json
import attnwidgets as aw
from attnwidgets.studies import value_zeroing
aw.set_theme("lecture")
r = aw.run("The cat sat on the mat, because it was tired.")
vz = value_zeroing(r)
share = aw.studies.norm_attention(r, share=True)
w = aw.AttentionHeatmap(r, layer=2, head=3)
w
"""


def test_value_zeroing_switch_redraws_the_views(lab):
    nb = lab.open([SETUP, "mv = aw.ModelView(r, layer=2, head=3); mv", "eb = aw.EntropyBars(r); eb"],
                  viewport=(1280, 720))
    heat = nb.widget(0)
    wait_dataset(heat, "heatmap-canvas", "view", "self/2/3/t")
    assert pressed(heat, "measure-value_zeroing") == "false" and pressed(heat, "measure-weights") == "true"
    # the cell (query "on", key [CLS]) in the three measures, all as the page prints them (4 decimals)
    weight, norm, zeroed, other = json.loads(nb.python(
        "print(json.dumps([float(r.attention[2, 3, 4, 0]), float(share[2, 3, 4, 0]), float(vz[2, 4, 0]), "
        "float(vz[2, 4, 2])]))"))
    assert len({f"{weight:.4f}", f"{norm:.4f}", f"{zeroed:.4f}"}) == 3  # the three tell apart in the hover text
    before = canvas_stats(heat, "heatmap-canvas")

    heat.locator("[data-testid=measure-value_zeroing]").click()
    eventually(nb, "print(w.measure)", "value_zeroing")
    nb.page.wait_for_function(
        "() => document.querySelector('.aw-heatmap [data-testid=measure-value_zeroing]')"
        "?.getAttribute('aria-pressed') === 'true'", timeout=20_000)
    redrawn(heat, "heatmap-canvas", before["sum"])
    text = hover_cell(heat, "heatmap-canvas", 4, 0)
    assert f"{zeroed:.4f}" in text, text  # the drawn cell holds the value-zeroing share
    assert f"{other:.4f}" in hover_cell(heat, "heatmap-canvas", 4, 2)
    assert "value zeroing" in heat.inner_text()
    assert pressed(heat, "measure-weights") == "false"
    nb.screenshot("value-zeroing-heatmap-lecture", heat)

    # another head of the same layer shows the same (per-layer) map
    nb.python("w.head = 7")
    wait_dataset(heat, "heatmap-canvas", "view", "self/2/7/t")
    assert f"{zeroed:.4f}" in hover_cell(heat, "heatmap-canvas", 4, 0)

    # norms, then back: the switch moves between all three
    heat.locator("[data-testid=measure-norms]").click()
    eventually(nb, "print(w.measure)", "norms")
    nb.page.wait_for_function(
        "() => document.querySelector('.aw-heatmap [data-testid=measure-norms]')"
        "?.getAttribute('aria-pressed') === 'true'", timeout=20_000)
    nb.python("w.head = 3")
    wait_dataset(heat, "heatmap-canvas", "view", "self/2/3/t")
    assert f"{norm:.4f}" in hover_cell(heat, "heatmap-canvas", 4, 0)

    # the model view: its thumbnails are redrawn from the value-zeroing maps
    mv = nb.widget(1)
    mv.scroll_into_view_if_needed()
    grid_before = canvas_stats(mv, "thumb-grid")["sum"]
    mv.locator("[data-testid=measure-value_zeroing]").click()
    eventually(nb, "print(mv.measure)", "value_zeroing")
    nb.page.wait_for_function(
        "() => document.querySelectorAll('.aw-root')[1].innerText.includes('value zeroing')", timeout=20_000)
    redrawn(mv, "thumb-grid", grid_before)
    nb.screenshot("value-zeroing-model-view-lecture", mv)

    # the entropy bars: the entropy of each layer's value-zeroing rows (a layer's bars are equal)
    eb = nb.widget(2)
    eb.scroll_into_view_if_needed()
    nb.page.wait_for_timeout(300)
    bars_before = canvas_stats(eb, "bars-canvas")["sum"]
    eb.locator("[data-testid=measure-value_zeroing]").click()
    eventually(nb, "print(eb.measure)", "value_zeroing")
    redrawn(eb, "bars-canvas", bars_before)
    assert "value zeroing" in eb.inner_text()
    equal = "import numpy as np; print(bool(np.ptp(eb.values('entropy'), axis=1).max() < 1e-6))"
    assert nb.python(equal).strip() == "True"
    nb.screenshot("value-zeroing-entropy-bars-lecture", eb)
    nb.screenshot("value-zeroing-page-lecture")
    assert not nb.errors()
