"""Notebook 05's demos 4 and 5 as a lecture shows them: JupyterLab, lecture theme, 1280 x 720.

Demo 4 (``--query its``) must open the QK step-through on "its", the room's question; demo 5 (``--pair``) must show
the two sentences as the two segments of a pair, not a garbled mix (issue 15 §5). Screenshots: test-artifacts/.
"""

from __future__ import annotations

SETUP = 'import attnwidgets as aw\naw.set_theme("lecture")\n%load_ext attnwidgets'
DEMO4 = ("%attention The Law will never be perfect, but its application should be just. --view qk --layer 3 --head 1 "
         "--query its")
DEMO5 = "%attention The chef cooked the meal. --pair It was delicious. --view head --layer 4"


def test_demo4_opens_on_its(lab):
    nb = lab.open([SETUP, DEMO4, "w = _"], viewport=(1280, 720))
    root = nb.widget(0)
    query = root.locator("[data-testid='query-select']")
    query.wait_for(state="visible", timeout=30_000)
    chosen = query.evaluate("s => s.options[s.selectedIndex].text")
    nb.screenshot("nb05_demo4_query_its", root)
    assert "its" in chosen.lower(), chosen
    tokens = nb.python("print(w._meta['tokens'][w.query])").strip()
    assert tokens == "its", tokens


def test_demo5_shows_the_pair(lab):
    nb = lab.open([SETUP, DEMO5, "w = _"], viewport=(1280, 720))
    root = nb.widget(0)
    root.locator("canvas").first.wait_for(state="visible", timeout=30_000)
    nb.screenshot("nb05_demo5_pair", root)
    tokens = nb.python("print(' '.join(w._result.tokens))").strip()
    assert tokens == "[CLS] the chef cooked the meal . [SEP] it was delicious . [SEP]", tokens
    segs = nb.python("print(w._result.segment_ids.tolist())").strip()
    assert segs == str([0] * 8 + [1] * 5), segs


def test_scales_are_labelled_on_screen(lab):
    """The fixed heatmap scale and the position panels' clipped / per-head scales, as drawn and as labelled."""
    nb = lab.open([SETUP, "import numpy as np\n"
                   "u = np.full((1, 1, 7, 7), 1 / 7, dtype=np.float32)\n"
                   "r = aw.AttentionResult.from_arrays(u, list('abcdefg'))\n"
                   "heat = aw.AttentionHeatmap(r, vmax=1.0); heat",
                   "pos = aw.PositionalExplorer.from_model(length=64); pos",
                   "alibi = aw.PositionalExplorer('alibi', length=64, per_head_scale=True); alibi"],
                  viewport=(1280, 720))
    heat = nb.widget(0)
    legend = heat.locator(".aw-legend span[data-scale]")
    legend.wait_for(state="attached", timeout=30_000)
    assert legend.get_attribute("data-scale") == "fixed"
    assert "fixed scale" in legend.inner_text()
    nb.screenshot("scales_heatmap_fixed", heat)
    # the page draws the uniform map pale: 1/7 of the way up a 0..1 scale
    assert float(heat.locator("canvas[data-vmax]").first.get_attribute("data-vmax")) == 1.0
    nb.python("heat.vmax = None")
    heat.locator(".aw-legend span[data-scale='per-map']").wait_for(state="attached", timeout=20_000)
    pos = nb.widget(1)
    note = pos.locator("[data-testid='scale-note-0']")
    note.wait_for(state="attached", timeout=30_000)
    assert "clipped at the 99th percentile" in note.inner_text() and "1.87" in note.inner_text()
    pos.scroll_into_view_if_needed()
    nb.screenshot("scales_learned_clipped", pos)
    alibi = nb.widget(2)
    note = alibi.locator("[data-testid='scale-note-0']")
    note.wait_for(state="attached", timeout=30_000)
    assert "one scale per head" in note.inner_text()
    alibi.scroll_into_view_if_needed()
    nb.screenshot("scales_alibi_per_head", alibi)
