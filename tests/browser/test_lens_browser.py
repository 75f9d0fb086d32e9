"""The logit-lens panel in JupyterLab: GenerationView (a generation with ``lens_k``) and FillMask. The panel is hidden
until its box is ticked (which sets Python's ``lens``); it then draws Python's table (each cell's token and
probability) for the step shown, and scrubbing a step (GenerationView) or choosing a layer (FillMask: the layer's row
is outlined) redraws it. Screenshots: test-artifacts/lens-*.png."""

from __future__ import annotations

import json

from helpers import dataset, wait_dataset

LENS = "[data-testid=lens]"


def drawn(nb) -> list[list[tuple[str, float]]]:
    """The table as drawn: per row, (cell text, data-prob)."""
    return [[(c[0], float(c[1])) for c in row] for row in nb.page.eval_on_selector_all(
        f"{LENS} tbody tr", "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => [c.textContent, "
        "c.dataset.prob]))")]


def wanted(nb, code: str) -> list[list[tuple[str, float]]]:
    """Python's table (``code`` gives [(token, p), ...] per row), labelled as the page labels tokens."""
    rows = json.loads(nb.python(
        "import json; from attnwidgets.viewdata.labels import token_label; "
        f"print(json.dumps([[[token_label(t, 10), p] for t, p in row] for row in {code}]))"))
    return [[(t, float(p)) for t, p in row] for row in rows]


def same(a, b) -> bool:
    def row(x, y) -> bool:
        return len(x) == len(y) and all(s == t and abs(p - q) < 1e-5 for (s, p), (t, q) in zip(x, y, strict=True))
    return len(a) == len(b) and all(row(x, y) for x, y in zip(a, b, strict=True))


def tick(nb) -> None:
    nb.page.locator("[data-testid=lens-toggle]").first.check()


GEN = """
import attnwidgets as aw
aw.set_theme("lecture")
g = aw.generate("The cat sat on the mat because", {path!r}, max_new_tokens=5, min_new_tokens=5, lens_k=4)
w = aw.GenerationView(g, step=1)
w
"""


def test_generation_lens_panel_follows_the_step(lab, tiny_gpt2):
    nb = lab.open([GEN.format(path=tiny_gpt2)], viewport=(1280, 720))
    root = nb.widget()
    wait_dataset(nb.page, "[data-testid=gen-text]", "step", "1")
    assert nb.page.locator(LENS).first.evaluate("e => getComputedStyle(e).display") == "none"
    tick(nb)
    wait_dataset(nb.page, LENS, "table", "1")
    assert nb.python("print(w.lens, end='')") == "True"
    step1 = drawn(nb)
    assert len(step1) == 3 and same(step1, wanted(nb, "w.step_lens(1)"))
    rows = nb.page.eval_on_selector_all(f"{LENS} tbody th", "els => els.map(e => e.textContent)")
    assert rows == ["embeddings", "layer 1", "layer 2"]
    caption = nb.page.locator("[data-testid=lens-caption]").first.text_content()
    assert "known bias" in caption and "Belrose" in caption
    nb.screenshot("lens-generation-step1", root)
    # Scrub: the arrow key moves a step, the table follows Python's.
    root.focus()
    nb.page.keyboard.press("ArrowRight")
    wait_dataset(nb.page, LENS, "table", "2")
    step2 = drawn(nb)
    assert same(step2, wanted(nb, "w.step_lens(2)")) and not same(step2, step1)
    # Python turns it off: hidden again.
    nb.python("w.lens = False")
    wait_dataset(nb.page, LENS, "table", "")
    assert not nb.errors(), nb.errors()


FILL = """
import attnwidgets as aw
aw.set_theme("lecture")
w = aw.FillMask("The [MASK] sat on the mat.", k=3, layer=1)
w
"""


def test_fill_mask_lens_panel_outlines_the_layer(lab):
    nb = lab.open([FILL], viewport=(1280, 720))
    root = nb.widget()
    nb.page.wait_for_function("() => document.querySelector('[data-testid=fills-canvas]')?.dataset.nBars === '3'",
                              timeout=30_000)
    tick(nb)
    d = wait_dataset(nb.page, LENS, "table", "0")
    assert d["highlight"] == "2"
    assert nb.python("print(w.lens, end='')") == "True"
    assert same(drawn(nb), wanted(nb, "w.lens_rows()"))
    on = nb.page.eval_on_selector_all(f"{LENS} tbody tr.aw-lens-on", "els => els.map(e => e.dataset.row)")
    assert on == ["2"]
    # The last row is the fill-in itself (the bars).
    last = [t for t, _ in drawn(nb)[-1]]
    assert last == [t for t, _ in wanted(nb, "w.lens_rows()")[-1]]
    nb.screenshot("lens-fill-mask-layer1", root)
    nb.page.locator("select[aria-label=layer]").select_option("4")
    wait_dataset(nb.page, LENS, "highlight", "5")
    assert nb.python("print(w.layer, end='')") == "4"
    on = nb.page.eval_on_selector_all(f"{LENS} tbody tr.aw-lens-on", "els => els.map(e => e.dataset.row)")
    assert on == ["5"]
    assert dataset(nb.page, LENS)["table"] == "0"
    assert not nb.errors(), nb.errors()


EVIL = ["<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>", "<b>x</b>", "&lt;i&gt;"]
HOSTILE = f"""
import numpy as np
import attnwidgets as aw
from attnwidgets.generation_result import GenerationResult
EVIL = {EVIL!r}
att = np.tril(np.ones((4, 4), np.float32)); att /= att.sum(1, keepdims=True)
r = aw.AttentionResult.from_arrays(att[None, None], ["a", "b", "c", "d"], kind="decoder")
lens = np.array([[[0.4, 0.3, 0.2, 0.1]] * 2] * 3, np.float32)     # 3 steps, 1 layer: 2 rows of 4
g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d", "e"], np.array([2, 3, 4]),
                     np.array([[2], [3], [4]]), np.ones((3, 1), np.float32), [["c"], ["d"], ["e"]],
                     lens_ids=np.zeros((3, 2, 4), np.int64), lens_probs=lens, lens_tokens=[[EVIL] * 2] * 3)
w = aw.GenerationView(g, lens=True)
w
"""


def test_hostile_lens_tokens_stay_text(lab):
    """Token text in the lens table is set as text: no element is made from it, nothing runs, it reads as written."""
    nb = lab.open([HOSTILE], viewport=(1280, 720))
    nb.page.evaluate("() => { window.alert = (m) => { window.__pwned = String(m); }; }")
    nb.widget()
    wait_dataset(nb.page, LENS, "table", "0")
    assert nb.page.locator(f"{LENS} img, {LENS} script, {LENS} b").count() == 0
    want = json.loads(nb.python("import json; from attnwidgets.viewdata.labels import token_label; "
                                "print(json.dumps([token_label(t, 10) for t in EVIL]))"))
    assert [t for t, _ in drawn(nb)[0]] == want
    assert nb.page.evaluate("() => window.__pwned ?? null") is None
    assert not nb.errors(), nb.errors()
