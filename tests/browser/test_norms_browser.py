"""The "weights | norms" switch in JupyterLab (lecture theme, 1280 x 720): a click sets ``measure`` in Python, and
the heatmap, model view and entropy bars draw the norm-based maps (Kobayashi et al. 2020) instead of the weights."""

from __future__ import annotations

import json

from helpers import canvas_stats, eventually, hover_cell, pressed, redrawn, wait_dataset

SETUP = """
import json
import attnwidgets as aw
aw.set_theme("lecture")
r = aw.run("The cat sat on the mat, because it was tired.")
share = aw.studies.norm_attention(r, share=True)
w = aw.AttentionHeatmap(r, layer=2, head=3)
w
"""


def test_norms_switch_redraws_the_views(lab):
    nb = lab.open([SETUP, "mv = aw.ModelView(r, layer=2, head=3); mv", "eb = aw.EntropyBars(r); eb"],
                  viewport=(1280, 720))
    heat = nb.widget(0)
    wait_dataset(heat, "heatmap-canvas", "view", "self/2/3/t")
    assert pressed(heat, "measure-weights") == "true" and pressed(heat, "measure-norms") == "false"
    before = canvas_stats(heat, "heatmap-canvas")
    # [CLS] (key 0) takes much of this head's weight; its share of the moved norm is far smaller
    weight, norm = json.loads(nb.python(
        "print(json.dumps([float(r.attention[2, 3, 4, 0]), float(share[2, 3, 4, 0])]))"))
    assert norm < weight / 4  # the test below tells the two apart
    assert f"{weight:.4f}" in hover_cell(heat, "heatmap-canvas", 4, 0)
    nb.screenshot("norms-heatmap-weights-lecture", heat)

    heat.locator("[data-testid=measure-norms]").click()
    eventually(nb, "print(w.measure)", "norms")
    nb.page.wait_for_function(
        "() => document.querySelector('.aw-heatmap [data-testid=measure-norms]')?.getAttribute('aria-pressed') "
        "=== 'true'", timeout=20_000)
    redrawn(heat, "heatmap-canvas", before["sum"])
    text = hover_cell(heat, "heatmap-canvas", 4, 0)
    assert f"{norm:.4f}" in text, text  # the drawn cell holds the norm share, not the weight
    assert "norms" in heat.inner_text()
    nb.screenshot("norms-heatmap-norms-lecture", heat)
    heat.locator(".aw-title").scroll_into_view_if_needed()
    nb.screenshot("norms-page-heatmap-lecture")  # the 1280 x 720 page: title, controls with the switch, the map

    # The model view: its thumbnails are redrawn from the norms
    mv = nb.widget(1)
    grid_before = canvas_stats(mv, "thumb-grid")["sum"]
    mv.locator("[data-testid=measure-norms]").click()
    eventually(nb, "print(mv.measure)", "norms")
    nb.page.wait_for_function(
        "() => document.querySelectorAll('.aw-root')[1].innerText.includes('norms')", timeout=20_000)
    redrawn(mv, "thumb-grid", grid_before)
    nb.screenshot("norms-model-view-lecture", mv)

    # The entropy bars: the bars follow the norm shares' entropy; clicking "weights" goes back
    eb = nb.widget(2)
    eb.scroll_into_view_if_needed()
    nb.page.wait_for_timeout(300)
    bars_before = canvas_stats(eb, "bars-canvas")["sum"]
    eb.locator("[data-testid=measure-norms]").click()
    eventually(nb, "print(eb.measure)", "norms")
    bars_norms = redrawn(eb, "bars-canvas", bars_before)["sum"]
    assert "norms" in eb.inner_text()
    nb.screenshot("norms-entropy-bars-lecture", eb)
    eb.locator("[data-testid=measure-weights]").click()
    eventually(nb, "print(eb.measure)", "weights")
    # (not pixel-equal to the first picture: a repaint of the bars takes the width the widget has by then)
    redrawn(eb, "bars-canvas", bars_norms)
    assert "norms" not in eb.locator(".aw-title").inner_text()
    assert pressed(eb, "measure-weights") == "true"
    nb.screenshot("norms-page-lecture")
    assert not nb.errors()
