"""AttentionProfile in JupyterLab: the text is drawn as coloured token spans whose colours are Python's numbers on
the colour map, hover shows the exact weight, a click selects a sentence in Python and zooms a linked heatmap,
alt-click picks the query; a 3,000-token lazy result renders in the lecture theme at 1280 x 720."""

from __future__ import annotations

from pathlib import Path

from helpers import eventually
from matplotlib import colormaps

TESTS = Path(__file__).resolve().parents[1]

SHORT = """
import attnwidgets as aw
r = aw.run("The cat sat on the mat. It was tired! Then the dog barked at the moon all night.")
w = aw.AttentionProfile(r, layer=2, head=-1, unit="sentence")
h = aw.AttentionHeatmap(r, layer=2, head=-1)
link = w.link_heatmap(h)
import ipywidgets
ipywidgets.VBox([w, h])
"""

LONG = f"""
import sys; sys.path.insert(0, {str(TESTS)!r})
import attnwidgets as aw
from lazy_helpers import lazy_result
aw.set_theme("lecture")
aw.runner.set_dense_budget(0)  # nothing may build the dense attention
words = ["The", " model", " reads", " a", " long", " report", ",", " and", " it", " looks", " back", "."]
tokens = ["<s>"] + [("\\n\\n" if i % 97 == 96 else words[i % len(words)]) for i in range(2999)]
r = lazy_result(3000, layers=4, heads=4, kv_heads=2, tokens=tokens, seed=2)
w = aw.AttentionProfile(r, layer=3, head=-1, unit="token")
w
"""


def rgb(style: str) -> tuple[int, int, int]:
    r, g, b = (int(float(v)) for v in style[style.index("(") + 1:style.index(")")].split(",")[:3])
    return r, g, b


def expected_rgb(value: float, vmax: float, cmap: str = "Blues") -> tuple[int, int, int]:
    """What the page paints for value on [0, vmax]: the colour map at the nearest of 256 steps."""
    step = round(max(0.0, min(1.0, value / vmax)) * 255) / 255
    return tuple(round(c * 255) for c in colormaps[cmap](step)[:3])  # type: ignore[return-value]


def test_profile_colours_hover_click_and_link(lab):
    nb = lab.open([SHORT], viewport=(1280, 1400))
    root = nb.widget()
    text = nb.page.locator("[data-testid=profile-text]").first
    nb.page.wait_for_function(
        "() => document.querySelector('[data-testid=profile-text]')?.dataset.view === 'self/2/-1/' + "
        "document.querySelector('[data-testid=query-from]').value + ':' + "
        "document.querySelector('[data-testid=query-to]').value + '/mean'", timeout=30_000)
    n = int(nb.python("print(len(r.tokens))"))
    spans = text.locator("span")
    assert spans.count() == n
    # Colours are Python's sentence sums on the colour map (the tokens of one sentence share its colour).
    values = [float(v) for v in nb.python("print(*w.profile().tolist())").split()]
    starts = [int(v) for v in nb.python("print(*w.unit_starts().tolist())").split()]
    assert len(starts) == 3 and text.get_attribute("data-units") == "3"
    vmax = max(values)
    for unit, k in enumerate(starts):
        got = rgb(spans.nth(k + 1 if k == 0 else k).evaluate("s => getComputedStyle(s).backgroundColor"))
        want = expected_rgb(values[unit], vmax)
        assert all(abs(a - b) <= 3 for a, b in zip(got, want)), (unit, got, want)
    nb.screenshot("profile-short", root)

    # Hover a token: its exact weight.
    spans.nth(3).hover()
    tip = nb.page.locator("[data-testid=tooltip]").first
    tip.wait_for(state="visible", timeout=5000)
    weight = float(nb.python("print(float(w.weights()[3]))"))
    assert abs(float(tip.get_attribute("data-value")) - weight) < 1e-6
    assert f"{weight:.4f}" in tip.inner_text()

    # Click a token of the second sentence: Python's `selected` is that sentence, and the heatmap zooms there.
    spans.nth(starts[1] + 1).click()
    nb.page.wait_for_function("() => Number(document.querySelector('[data-testid=heatmap-canvas]')"
                              "?.dataset.zoom) > 1", timeout=20_000)
    eventually(nb, "print(w.selected)", f"[{starts[1]}, {starts[2]}]")
    eventually(nb, "print(h.zoom[2:])", f"[{starts[1]}, {starts[2]}]")
    assert spans.nth(starts[1]).evaluate("s => s.classList.contains('aw-sel')")

    # Alt-click makes a token the query (a plain click picks keys); the page fetches that profile and redraws.
    spans.nth(2).click(modifiers=["Alt"])
    nb.page.wait_for_function(
        "() => document.querySelector('[data-testid=profile-text]').dataset.view === 'self/2/-1/2:3/mean'",
        timeout=20_000)
    eventually(nb, "print(w.query)", "[2, 3]")
    assert spans.nth(2).evaluate("s => s.classList.contains('aw-q')")
    nb.screenshot("profile-short-selected", root)
    assert not nb.errors(), nb.errors()


def test_long_lazy_profile_in_the_lecture_theme(lab):
    nb = lab.open([LONG], viewport=(1280, 720))
    root = nb.widget()
    text = nb.page.locator("[data-testid=profile-text]").first
    nb.page.wait_for_function(
        "() => document.querySelector('[data-testid=profile-text]')?.dataset.view === 'self/3/-1/2999:3000/mean'",
        timeout=60_000)
    assert text.locator("span").count() == 3000
    box = text.bounding_box()
    assert box["height"] <= 460, "the text scrolls inside a box that fits the screen"
    assert root.get_attribute("data-theme") == "lecture"
    nb.page.evaluate("() => document.querySelector('.aw-profile').scrollIntoView()")
    nb.screenshot("profile-long-lecture-1280x720")
    print("paint ms", text.get_attribute("data-paint-ms"))
    # The sentence view of the same profile, and a click that selects a paragraph.
    nb.page.locator("[data-testid=unit-select]").first.select_option("paragraph")
    nb.page.wait_for_function(
        "() => document.querySelector('[data-testid=profile-text]').dataset.unit === 'paragraph'", timeout=20_000)
    text.locator("span").nth(10).click()
    eventually(nb, "print(w.selected)", "[0, 98]")
    nb.page.set_viewport_size({"width": 1920, "height": 1200})
    nb.screenshot("profile-long-lecture-1920x1200")
    assert not nb.errors(), nb.errors()
