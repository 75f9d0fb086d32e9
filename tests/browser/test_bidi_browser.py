"""Text that could mislead: a right-to-left override (U+202E) in a token and, unclosed, in the model name; a zero-width
space token; a Hebrew token. In JupyterLab, in a saved page and in the SVG export, every view shows the override as
⟨U+202E⟩ (never the raw character, which would reverse what follows it), gives the zero-width space a marker instead
of a blank label, and draws each token and the model name between FSI and PDI, so its direction stays its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import hover_cell

RLO, FSI, PDI = "\u202e", "\u2068", "\u2069"
TOKENS = ["[CLS]", f"{RLO}evil", "\u200b", "שלום", "cat", "[SEP]"]
NAME = f"gpt{RLO}-reversed"  # an unclosed override: without isolation it flips the rest of the header
SHOWN_NAME = f"{FSI}gpt⟨U+202E⟩-reversed{PDI}"

SETUP = f"""
import numpy as np
import attnwidgets as aw
from attnwidgets.qk_result import QKCapture
TOKENS = {TOKENS!r}
rng = np.random.default_rng(0)
a = rng.random((2, 3, 6, 6)).astype(np.float32)
r = aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), TOKENS, name={NAME!r})
cap = QKCapture.from_vectors(rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 6, 4)), TOKENS)
views = {{
    "heatmap": aw.AttentionHeatmap(r, layer=1, head=2),
    "model-view": aw.ModelView(r, layer=1, head=2),
    "head-view": aw.HeadView(r),
    "qk": aw.QKStepThrough(cap, query=1),
    "entropy-bars": aw.EntropyBars(r),
}}
"""
VIEWS = ["heatmap", "model-view", "head-view", "qk", "entropy-bars"]
DRAWS_TOKENS = {"heatmap", "model-view", "head-view", "qk"}
TITLED = {"heatmap", "model-view", "head-view", "entropy-bars"}
CANVAS = {"heatmap": "heatmap-canvas", "model-view": "heatmap-canvas", "head-view": "lines-canvas", "qk": "qk-softmax"}

HOOK = """() => {
  window.__drawn = [];
  const fill = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
    window.__drawn.push(String(text));
    return fill.call(this, text, ...rest);
  };
}"""

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def check_view(root, name: str, drawn: list[str]) -> None:
    text = root.evaluate("(e) => e.textContent")
    assert RLO not in text, f"{name}: a raw U+202E is in the page text"
    assert not any(RLO in d for d in drawn), f"{name}: a raw U+202E was drawn: {drawn}"
    if name in TITLED:
        title = root.locator(".aw-title").first.evaluate("(e) => e.textContent")
        assert title.startswith(SHOWN_NAME + " · "), f"{name}: the model name is shown marked and isolated: {title!r}"
        # The header reads left to right: the name's first letter, the "·" after the name and the word after that, in
        # that order on screen (an unclosed override would reverse everything after it).
        xs = root.locator(".aw-title").first.evaluate("""(e) => {
            const node = e.firstChild, range = document.createRange(), at = (i) => {
                range.setStart(node, i); range.setEnd(node, i + 1); return range.getBoundingClientRect().left; };
            const dot = node.textContent.indexOf(" · ") + 1;
            return [at(1), at(dot), at(dot + 2)];
        }""")
        assert xs == sorted(xs), f"{name}: the header is drawn out of order: {xs}"
    if name in DRAWS_TOKENS:
        assert f"{FSI}⟨U+202E⟩evil{PDI}" in drawn or any(
            d.startswith(f"{FSI}⟨U+202E⟩") for d in drawn), f"{name}: the override token is not drawn marked: {drawn}"
        assert any(f"{FSI}⟨U+200B⟩" in d for d in drawn), f"{name}: the zero-width space drew no marker: {drawn}"
        assert any(f"{FSI}שלום{PDI}" in d for d in drawn), f"{name}: the Hebrew token is drawn isolated: {drawn}"


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open([SETUP, *[f"views[{v!r}]" for v in VIEWS]], viewport=(1400, 5000), timeout=300)
    for i in range(len(VIEWS)):
        nb.widget(i)
    return nb


def test_override_and_invisible_characters_are_marked_and_isolated_in_jupyterlab(nb):
    nb.page.evaluate(HOOK)
    nb.python("for v in views.values(): v.theme = 'lecture'")  # a new theme repaints every view through the hook
    lecture = f"() => document.querySelectorAll('.aw-root[data-theme=lecture]').length === {len(VIEWS)}"
    nb.page.wait_for_function(lecture, timeout=30_000)
    nb.page.wait_for_timeout(500)
    drawn = nb.page.evaluate("() => window.__drawn")
    for i, name in enumerate(VIEWS):
        root = nb.widget(i)
        root.scroll_into_view_if_needed()
        check_view(root, name, drawn)
        nb.screenshot(f"bidi-{name}", root)
    tip = nb.widget(0).locator("[data-testid=tooltip]")
    hover_cell(nb.widget(0), "heatmap-canvas", 1, 2)
    assert tip.evaluate("(e) => e.textContent").startswith(f"{FSI}⟨U+202E⟩evil{PDI} → {FSI}⟨U+200B⟩{PDI}")
    assert not nb.errors(), nb.errors()


@pytest.mark.parametrize("name", ["heatmap", "head-view", "qk"])
def test_saved_page_and_its_svg_export_show_the_same(nb, browser, tmp_path, name):
    path = tmp_path / f"bidi-{name}.html"
    nb.python(f"aw.save_html(views[{name!r}], {str(path)!r}, title={NAME!r})")
    assert "<title>gpt⟨U+202E⟩-reversed</title>" in path.read_text(encoding="utf-8")
    context = browser.new_context(viewport={"width": 1300, "height": 1400}, accept_downloads=True)
    context.add_init_script(f"({HOOK})();")
    page = context.new_page()
    try:
        page.goto(path.resolve().as_uri())
        root = page.locator("#aw-widget .aw-root")
        root.wait_for(state="visible", timeout=20_000)
        page.wait_for_function("(s) => document.querySelector(`[data-testid=${s}]`)?.dataset.view", arg=CANVAS[name],
                               timeout=20_000)
        page.wait_for_timeout(300)
        check_view(root, name, page.evaluate("() => window.__drawn"))
        root.screenshot(path=str(ARTIFACTS / f"bidi-offline-{name}.png"))
        with page.expect_download() as download:
            page.locator("[data-testid=export-svg]").click()
        svg = Path(download.value.path()).read_text(encoding="utf-8")
        assert RLO not in svg, "the SVG carries no raw U+202E"
        if name in TITLED:
            assert f">{SHOWN_NAME} · " in svg, "the SVG's title text is marked and isolated"
    finally:
        context.close()
