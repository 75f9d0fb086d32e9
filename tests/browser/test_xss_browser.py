"""Hostile token text stays text in every view: in JupyterLab and in save_html pages opened offline.

The same tokens go through AttentionHeatmap, ModelView, HeadView, QKStepThrough, EntropyBars, HeadStatsGrid,
HeadClusterMap, AblationWidget, RouterView, GenerationView (prompt, generated tokens and their candidates) and
FillMask (its sentence, cut into pieces by the bundled model's tokenizer, checked as text like the ablation's): no
dialog opens, no element is made from them (img, script, b), nothing runs, and the tokens are drawn (canvas
``fillText``, recorded by a hook) or shown (titles, menus, tooltips) character for character. ``&lt;i&gt;`` checks
the other direction: text is never decoded as HTML either.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import hover_cell, unisolate, wait_dataset

EVIL = ["[CLS]", "<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>", "<b>x</b>", "&lt;i&gt;",
        "[SEP]"]
NAME = "<svg onload=alert(3)>"  # the model's name and the text go into titles
TEXT = "<img src=y onerror=alert(4)> said </script>"
ABLATE = "<img src=z onerror=alert(5)> and </script><b>y</b>"
FILL = "<img src=w onerror=alert(6)> took the [MASK] </script><b>home</b>"

SETUP = f"""
import numpy as np
import attnwidgets as aw
from attnwidgets.qk_result import QKCapture
from attnwidgets.generation_result import GenerationResult
from attnwidgets.router_result import RouterResult
EVIL = {EVIL!r}
rng = np.random.default_rng(0)
a = rng.random((2, 3, 6, 6)).astype(np.float32)
r = aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), EVIL, name={NAME!r}, text={TEXT!r})
cap = QKCapture.from_vectors(rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 6, 4)), EVIL)
ex = np.stack([[rng.permutation(4)[:2] for _ in EVIL] for _ in range(2)])  # a MoE routing: 2 layers, top 2 of 4
routes = RouterResult(EVIL, [0, 1], rng.normal(size=(2, 6, 4)).astype(np.float32), ex,
                      np.full(ex.shape, 0.5, np.float32), model=r.model)
# a generation: the first three hostile tokens as the prompt, then 7 steps whose tokens and candidates are hostile
g = np.tril(rng.random((2, 3, 9, 9))).astype(np.float32) + np.eye(9, dtype=np.float32)
gt = EVIL + [EVIL[1], EVIL[2], EVIL[3]]
rg = aw.AttentionResult.from_arrays(g / g.sum(-1, keepdims=True), gt, kind="decoder", name={NAME!r})
probs = np.sort(rng.dirichlet(np.ones(4), size=7).astype(np.float32), 1)[:, ::-1].copy()
gen = GenerationResult(rg, {TEXT!r}, gt[:3], np.arange(3), gt[3:] + [EVIL[1]], np.arange(3, 10),
                       np.arange(28).reshape(7, 4), probs, [[t, *EVIL[1:4]] for t in gt[3:] + [EVIL[1]]],
                       text="".join(gt[3:]))
views = {{
    "heatmap": aw.AttentionHeatmap(r, layer=1, head=2),
    "model-view": aw.ModelView(r, layer=1, head=2),
    "head-view": aw.HeadView(r),
    "qk": aw.QKStepThrough(cap, query=2),
    "entropy-bars": aw.EntropyBars(r),
    "head-stats-grid": aw.HeadStatsGrid(r),
    "head-cluster-map": aw.HeadClusterMap(r),
    "ablation": aw.AblationWidget([{ABLATE!r}]),
    "routers": aw.RouterView(routes),
    "generation": aw.GenerationView(gen, step=2),
    "fill-mask": aw.FillMask({FILL!r}),
}}
"""
VIEWS = ["heatmap", "model-view", "head-view", "qk", "entropy-bars", "head-stats-grid", "head-cluster-map", "ablation",
         "routers", "generation", "fill-mask"]
# Views that draw the tokens on a canvas (the stat views show heads, not tokens; the ablation's map shows the pieces
# its tokenizer made of ABLATE, checked through its menu text instead).
DRAWS_TOKENS = {"heatmap", "model-view", "head-view", "qk", "routers", "generation"}
TITLED = {"heatmap", "model-view", "head-view", "entropy-bars", "head-stats-grid", "head-cluster-map", "routers",
          "generation"}

# Record every string drawn on a canvas, and trip a flag if anything ever runs.
HOOK = """() => {
  window.__drawn = [];
  const fill = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
    window.__drawn.push(String(text));
    return fill.call(this, text, ...rest);
  };
  window.alert = (m) => { window.__pwned = String(m); };
}"""
INIT_HOOK = f"({HOOK})();"

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def check_root(root, name: str, drawn: list[str]) -> None:
    """No element made from token text; the tokens drawn or shown as the characters they are."""
    for tag in ("img", "script", "b", "svg[onload]", "i"):
        assert root.locator(tag).count() == 0, f"{name}: a <{tag}> was made from token text"
    text = unisolate(root.evaluate("(e) => e.textContent"))
    if name in DRAWS_TOKENS:
        for token in EVIL[1:5]:
            # Long labels are cut with an ellipsis to fit their room: a prefix of the token, character for character.
            cut = [unisolate(d).removeprefix("q · ").removesuffix("…") for d in drawn]
            assert any(len(c) >= min(6, len(token)) and token.startswith(c) for c in cut), \
                f"{name}: {token!r} is not drawn as text ({drawn[:40]})"
    if name in TITLED:
        assert NAME in text, f"{name}: the model name is shown as text"
    if name == "ablation":
        assert ABLATE[:40] in text, "the watched text is shown as text in the menu"
    if name == "generation":
        for token in EVIL[1:4]:  # the candidates' list and the generated text show them as text
            assert token in text, f"generation: {token!r} is not shown as text"
    if name == "fill-mask":
        assert root.locator("[data-testid=fill-text]").input_value() == FILL, "the sentence box holds it as text"
    assert "&lt;" not in text.replace("&lt;i&gt;", ""), f"{name}: text was escaped twice"


def hostile_tooltips(where, name: str) -> None:
    """Tooltips name the tokens in full, as text."""
    if name in ("heatmap", "model-view"):
        tip = hover_cell(where, "heatmap-canvas", 1, 2)
        assert f"{EVIL[1]} → {EVIL[2]}" in tip, tip
    if name == "routers":
        tip = hover_cell(where, "routers-canvas", 1, 0)
        assert f"token 1 {EVIL[1]}" in tip and "layer 0" in tip, tip
    if name == "qk":
        options = [unisolate(o) for o in where.locator("[data-testid=query-select] option").all_inner_texts()]
        assert any(EVIL[1] in o for o in options) and any(EVIL[4] in o for o in options), options


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open([SETUP, *[f"views[{v!r}]" for v in VIEWS]], viewport=(1400, 6000), timeout=300)
    for i in range(len(VIEWS)):
        nb.widget(i)
    return nb


def test_hostile_tokens_are_text_in_every_view_in_jupyterlab(nb):
    nb.page.evaluate(HOOK)
    # Repaint every view with the hook in place: a new theme redraws all of them.
    nb.python("for v in views.values(): v.theme = 'lecture'")
    lecture = f"() => document.querySelectorAll('.aw-root[data-theme=lecture]').length === {len(VIEWS)}"
    nb.page.wait_for_function(lecture, timeout=30_000)
    nb.page.wait_for_timeout(500)
    drawn = nb.page.evaluate("() => window.__drawn")
    for i, name in enumerate(VIEWS):
        root = nb.widget(i)
        root.scroll_into_view_if_needed()
        hostile_tooltips(root, name)
        check_root(root, name, drawn)  # after hovering: the tooltips made no element either
        nb.screenshot(f"xss-{name}", root)
    assert nb.page.evaluate("() => window.__pwned === undefined"), "a token ran as code"
    assert not nb.errors(), nb.errors()  # dialogs are recorded there too


@pytest.mark.parametrize("name", VIEWS)
def test_hostile_tokens_are_text_in_saved_pages(nb, browser, tmp_path, name):
    path = tmp_path / f"xss-{name}.html"
    nb.python(f"aw.save_html(views[{name!r}], {str(path)!r})")
    page_text = path.read_text(encoding="utf-8")
    assert page_text.lower().count("</script") == 3, "only the page's own three script blocks end"
    context = browser.new_context(viewport={"width": 1300, "height": 1400})
    context.add_init_script(INIT_HOOK)
    page = context.new_page()
    errors: list[str] = []
    blocked: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else (
        blocked.append(route.request.url), route.abort()))
    try:
        page.goto(path.resolve().as_uri())
        root = page.locator("#aw-widget .aw-root")
        root.wait_for(state="visible", timeout=20_000)
        canvas = {"heatmap": "heatmap-canvas", "model-view": "heatmap-canvas", "head-view": "lines-canvas",
                  "qk": "qk-softmax"}.get(name)
        if canvas:
            page.wait_for_function("(s) => document.querySelector(`[data-testid=${s}]`)?.dataset.view", arg=canvas,
                                   timeout=20_000)
        page.wait_for_timeout(300)
        assert page.locator("script").count() == 3, "no script element was added"
        hostile_tooltips(page, name)
        check_root(root, name, page.evaluate("() => window.__drawn"))
        if name == "head-view":
            assert wait_dataset(page, "lines-canvas", "nq", str(len(EVIL)))
        root.screenshot(path=str(ARTIFACTS / f"xss-offline-{name}.png"))
        assert page.evaluate("() => window.__pwned === undefined"), "a token ran as code"
        assert not errors, errors
        assert not blocked, f"the page asked the network for {blocked}"
    finally:
        context.close()


def test_saved_state_keeps_the_tokens_exactly(nb, tmp_path):
    path = tmp_path / "heatmap.html"
    nb.python(f"aw.save_html(views['heatmap'], {str(path)!r})")
    page = path.read_text(encoding="utf-8")
    block = page.split('<script type="application/json" id="aw-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(block)["state"]["_meta"]["tokens"]["self"][0] == EVIL
