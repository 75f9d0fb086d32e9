"""HeadView in JupyterLab: lines draw; swatches toggle and isolate heads; hover shows one token's lines; the A/B
filter keeps exactly the right lines; several tokens can be selected; word level, cross-attention and 512 tokens."""

from __future__ import annotations

import json

from helpers import canvas_stats, dataset, eventually, page_point, wait_dataset

SETUP = """
import json, numpy as np
import attnwidgets as aw
r = aw.run("The cat sat on the mat.", "It was tired.")
w = aw.HeadView(r, layer=2)
w
"""

# Lines the page should draw, from the same float16 values it got: heads visible, rows, filter, threshold.
COUNT = """
def expected(rows=None, which=None, heads=None):
    a = w.layer_heads().astype(np.float16).astype(np.float64)
    keep = w.mask(which)
    if rows is not None:
        sel = np.zeros(a.shape[1], bool); sel[rows] = True; keep = keep & sel[:, None]
    hs = w.heads if heads is None else heads
    return int(((a[hs] >= w.min_weight) & keep[None]).sum())
"""


def token_point(nb, side: str, i: int) -> tuple[float, float]:
    s = dataset(nb.page, "lines-canvas")
    x = float(s["xl"]) - 10 if side == "q" else float(s["xr"]) + 10
    return page_point(nb.page, "lines-canvas", x, float(s["top"]) + (i + 0.5) * float(s["rowH"]))


def test_head_view_lines_swatches_hover_filter_select(lab):
    nb = lab.open([SETUP])
    nb.widget()
    wait_dataset(nb.page, "lines-canvas", "view", "self/2/t")
    nb.python(COUNT)
    s = canvas_stats(nb.page, "lines-canvas")
    assert s["ink"] > 3000, "no lines drawn"
    assert int(s["lines"]) == int(nb.python("print(expected())"))
    nb.screenshot("head-view-all", nb.widget())

    # Click a swatch: head 0 is hidden, in Python and on the canvas.
    before = s["sum"]
    nb.page.locator("[data-testid=head-swatch][data-head='0']").click()
    wait_dataset(nb.page, "lines-canvas", "heads", ",".join(str(h) for h in range(1, 12)))
    eventually(nb, "print(w.heads)", str(list(range(1, 12))))
    assert canvas_stats(nb.page, "lines-canvas")["sum"] != before
    assert int(canvas_stats(nb.page, "lines-canvas")["lines"]) == int(nb.python("print(expected())"))
    # Double-click isolates a head.
    nb.page.locator("[data-testid=head-swatch][data-head='5']").dblclick()
    wait_dataset(nb.page, "lines-canvas", "heads", "5")
    eventually(nb, "print(w.heads)", "[5]")
    assert nb.page.evaluate("window.getSelection().toString()") == "", "a double-click selected the swatch's text"
    assert int(canvas_stats(nb.page, "lines-canvas")["lines"]) == int(nb.python("print(expected())"))
    nb.python("w.heads = list(range(12))")
    wait_dataset(nb.page, "lines-canvas", "heads", ",".join(str(h) for h in range(12)))

    # Hover a left token: only its outgoing lines; a right token: only its incoming lines.
    nb.page.mouse.move(*token_point(nb, "q", 3))
    wait_dataset(nb.page, "lines-canvas", "hover", "q3")
    assert int(canvas_stats(nb.page, "lines-canvas")["lines"]) == int(nb.python("print(expected(rows=[3]))"))
    nb.screenshot("head-view-hover-query", nb.widget())
    nb.page.mouse.move(*token_point(nb, "k", 0))
    wait_dataset(nb.page, "lines-canvas", "hover", "k0")
    incoming = int(nb.python(
        "a = w.layer_heads().astype(np.float16).astype(np.float64); print(int((a[:, :, 0] >= w.min_weight).sum()))"))
    assert int(canvas_stats(nb.page, "lines-canvas")["lines"]) == incoming
    nb.page.mouse.move(5, 5)

    # The A/B filter, every option picked in the menu: exactly the lines Python counts for it.
    counts = {}
    for which in ("AA", "AB", "BA", "BB", "all"):
        nb.page.locator("[data-testid=filter-select]").first.select_option(which)
        wait_dataset(nb.page, "lines-canvas", "filter", which)
        eventually(nb, "print(w.sentence_filter)", which)
        s = canvas_stats(nb.page, "lines-canvas")
        counts[which] = int(nb.python(f"print(expected(which={which!r}))"))
        assert int(s["lines"]) == counts[which], f"filter {which}: drawn lines"
        if which != "all":
            assert int(s["lines" + which.capitalize()]) == counts[which]
        nb.screenshot(f"head-view-filter-{which}", nb.widget())
    assert counts["AA"] + counts["AB"] + counts["BA"] + counts["BB"] == counts["all"] == int(s["linesAll"])
    assert min(counts.values()) > 0 and len(set(counts.values())) == 5, f"each filter keeps other lines: {counts}"

    # Select several tokens: click one, ctrl-click another (shift-click would select the span 2..5).
    nb.page.mouse.click(*token_point(nb, "q", 2))
    nb.page.keyboard.down("Control")
    nb.page.mouse.click(*token_point(nb, "q", 5))
    nb.page.keyboard.up("Control")
    wait_dataset(nb.page, "lines-canvas", "selected", "2,5")
    eventually(nb, "print(w.selected)", "[2, 5]")
    nb.page.mouse.move(5, 5)
    wait_dataset(nb.page, "lines-canvas", "hover", "")
    assert int(canvas_stats(nb.page, "lines-canvas")["lines"]) == int(nb.python("print(expected(rows=[2, 5]))"))
    nb.screenshot("head-view-selected", nb.widget())

    # Layer from the page, words toggle.
    nb.page.locator("[data-testid=layer-select]").first.select_option("4")
    wait_dataset(nb.page, "lines-canvas", "view", "self/4/t")
    eventually(nb, "print(w.layer)", "4")
    nb.page.locator("[data-testid=words-toggle]").first.check()
    wait_dataset(nb.page, "lines-canvas", "view", "self/4/w")
    n_words = int(nb.python("print(len(w.labels()['tokens']['self'][0]))"))
    assert int(canvas_stats(nb.page, "lines-canvas")["nq"]) == n_words
    assert int(canvas_stats(nb.page, "lines-canvas")["lines"]) > 0
    assert not nb.errors(), nb.errors()


def test_head_view_cross_attention_and_xss(lab, tiny_bart):
    nb = lab.open([f"""
import numpy as np, attnwidgets as aw
r = aw.run("The cat sat.", target="Le chat est assis sur le tapis.", model={tiny_bart!r})
w = aw.HeadView(r, kind="cross")
w
""", """
toks = ['[CLS]', '<img src=x onerror=alert(1)>', '</script><script>alert(2)</script>', '[SEP]']
x = aw.HeadView(aw.AttentionResult.from_arrays(np.full((1, 2, 4, 4), 0.25, np.float32), toks))
x
"""])
    nb.widget(1)
    nb.page.wait_for_function("() => document.querySelectorAll('[data-testid=lines-canvas]').length === 2 && "
                              "document.querySelectorAll('[data-testid=lines-canvas]')[0].dataset.view === 'cross/0/t'")
    d = nb.page.evaluate("() => ({...document.querySelectorAll('[data-testid=lines-canvas]')[0].dataset})")
    m, n = json.loads(nb.python("import json; print(json.dumps([len(r.target_tokens), len(r.tokens)]))"))
    assert (int(d["nq"]), int(d["nk"])) == (m, n), "cross: target left, source right"
    assert int(d["lines"]) > 0
    nb.screenshot("head-view-cross", nb.widget(0))
    assert nb.page.locator(".aw-root img").count() == 0
    assert nb.page.locator(".aw-root script").count() == 0
    assert not nb.errors(), nb.errors()


def test_head_view_512_tokens(lab):
    nb = lab.open(["""
import warnings, attnwidgets as aw
text = " ".join(["the quick brown fox jumps over the lazy dog"] * 80)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # truncated to the model's 512 tokens, on purpose
    r = aw.run(text)
w = aw.HeadView(r)
w
"""])
    nb.widget()
    nb.page.wait_for_function("() => document.querySelector('[data-testid=lines-canvas]')?.dataset.view === 'self/0/t'",
                              timeout=30_000)
    n = int(nb.python("print(len(r.tokens))"))
    assert n == 512
    s = nb.page.evaluate("() => ({...document.querySelector('[data-testid=lines-canvas]').dataset})")
    assert 0 < int(s["lines"]) < 12 * 512 * 20, "with nothing in focus only strong lines are drawn"
    ms = nb.page.evaluate("""() => { const c = document.querySelector('[data-testid=lines-canvas]');
        const t = performance.now(); c.dispatchEvent(new MouseEvent('mousemove', {clientX: -99, clientY: -99}));
        c.dispatchEvent(new MouseEvent('mouseleave')); return performance.now() - t; }""")
    assert ms < 2000, f"a full redraw at 512 tokens took {ms:.0f} ms"
    nb.screenshot("head-view-512", nb.widget())
    assert not nb.errors(), nb.errors()
