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
