"""The views in the other hosts people open them in: marimo, which draws each widget in a shadow root through
``mo.ui.anywidget`` (styles put in the document's head never reach it), and Jupyter Notebook 7. Each host's page
must draw (canvas ink), be styled (our CSS applied, read from the computed style) and answer a click with a state
that Python shares. One marimo app, on the tiny random BERT, serves the marimo tests.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ARTIFACTS, canvas_stats, dataset, eventually, free_port, page_point, serve, wait_dataset

TEXT = "The cat sat on the mat."

# The three views, each through mo.ui.anywidget, and a cell that shows what Python sees of the heatmap and the
# model view: marimo re-runs it when a view's traits change in the page.
MARIMO_APP = '''
import marimo

app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo
    import attnwidgets as aw
    r = aw.run({text!r}, model={model!r})
    return aw, mo, r


@app.cell
def _(aw, mo, r):
    heat = mo.ui.anywidget(aw.AttentionHeatmap(r, layer=1, head=2))
    heat
    return (heat,)


@app.cell
def _(aw, mo, r):
    mv = mo.ui.anywidget(aw.ModelView(r))
    mv
    return (mv,)


@app.cell
def _(heat, mo, mv):
    mo.Html(f'<p data-testid="py-state">heatmap {{heat.widget.layer}}/{{heat.widget.head}} '
            f'model view {{mv.widget.layer}}/{{mv.widget.head}}</p>')
    return


@app.cell
def _(aw, mo):
    abl = mo.ui.anywidget(aw.AblationWidget(["The cat sat.", "A dog ran."], model={model!r}))
    abl
    return (abl,)


@app.cell
def _(abl, mo):
    edits = [(e["layer"], e["head"], e["mode"]) for e in abl.value["ablation"]["edits"]]
    mo.Html(f'<p data-testid="py-ablation">ablation {{edits}}</p>')
    return


if __name__ == "__main__":
    app.run()
'''

# What shows that our CSS reached an element: the shared rules (bold titles, a flex control bar, bordered controls)
# and the ablation grid's toggles (a filled, sized button per head).
STYLE_PROBE = """(root) => {
    const s = (el) => el ? getComputedStyle(el) : null;
    const title = s(root.querySelector('.aw-title'));
    const bar = s(root.querySelector('.aw-bar'));
    const button = root.querySelector('.aw-bar button');
    const cell = root.querySelector('.aw-abl-cell');
    const box = cell ? cell.getBoundingClientRect() : null;
    return {
        inShadow: root.getRootNode() instanceof ShadowRoot,
        titleWeight: title && title.fontWeight,
        barDisplay: bar && bar.display,
        buttonBorder: button ? s(button).borderTopStyle : null,
        cell: cell ? { bg: s(cell).backgroundColor, w: box.width, h: box.height } : null,
    };
}"""


def assert_styled(root: Any, *, shadow: bool) -> dict:
    got = root.evaluate(STYLE_PROBE)
    assert got["inShadow"] is shadow, got
    assert got["titleWeight"] == "600", f"the title is not bold: our CSS did not reach the view ({got})"
    assert got["barDisplay"] == "flex", f"the control bar is not laid out: our CSS did not reach the view ({got})"
    assert got["buttonBorder"] == "solid", got
    return got


def thumb_point(where: Any, layer: int, head: int) -> tuple[float, float]:
    g = dataset(where, "thumb-grid")
    step = float(g["slot"]) + float(g["gap"])
    return page_point(where, "thumb-grid", float(g["x0"]) + head * step + float(g["slot"]) / 2,
                      float(g["y0"]) + layer * step + float(g["slot"]) / 2)


def shot(where: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    where.screenshot(path=str(path))
    return path


class MarimoPage:
    def __init__(self, page: Any, errors: list[str]) -> None:
        self.page = page
        self.errors = errors

    def view(self, cls: str) -> Any:
        """The rendered root of the view with class ``cls`` (Playwright's CSS locators reach into shadow roots)."""
        loc = self.page.locator(f".aw-root.{cls}").first
        loc.wait_for(state="visible", timeout=60_000)
        return loc

    def python_state(self) -> str:
        return str(self.page.locator("[data-testid=py-state]").first.inner_text()).strip()

    def wait_python_state(self, expected: str, timeout: float = 20) -> None:
        deadline = time.time() + timeout
        got = ""
        while time.time() < deadline:
            got = self.python_state()
            if got == expected:
                return
            self.page.wait_for_timeout(200)
        raise AssertionError(f"marimo's Python shows {got!r}, expected {expected!r}")


@pytest.fixture(scope="session")
def marimo_url(tmp_path_factory: pytest.TempPathFactory, tiny_bert: str) -> Iterator[str]:
    """``marimo run`` of the app above (the app mode: cells run on open, no editor), on a free loopback port."""
    folder = tmp_path_factory.mktemp("marimo")
    app = folder / "views.py"
    app.write_text(MARIMO_APP.format(text=TEXT, model=tiny_bert))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "marimo", "run", str(app), "--headless", "--host", "127.0.0.1", "--port", str(port),
           "--no-token", "--no-sandbox"]
    with serve(cmd, f"{url}/health", tmp_path_factory.mktemp("marimolog")):
        yield url


@pytest.fixture(scope="module")
def marimo(marimo_url: str, browser: Any) -> Iterator[MarimoPage]:
    """The app open in one page (a marimo session: its own kernel) for the module's tests."""
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    errors: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(marimo_url, wait_until="domcontentloaded")
    try:
        yield MarimoPage(page, errors)
    finally:
        context.close()


def test_marimo_views_draw_styled_in_shadow_roots(marimo):
    heat = marimo.view("aw-heatmap")
    wait_dataset(heat, "heatmap-canvas", "view", "self/1/2/t")
    stats = canvas_stats(heat, "heatmap-canvas")
    assert int(stats["nq"]) == int(stats["nk"]) == 9  # [CLS] the cat sat on the mat . [SEP]
    assert stats["ink"] > 2000 and stats["colours"] > 5, f"the heatmap canvas is blank: {stats}"
    assert_styled(heat, shadow=True)

    mv = marimo.view("aw-model-view")
    wait_dataset(mv, "heatmap-canvas", "view", "self/0/0")
    grid = canvas_stats(mv, "thumb-grid")
    assert (grid["layers"], grid["heads"]) == ("2", "4")
    assert grid["ink"] > 2000 and grid["colours"] > 5, f"the thumbnail grid is blank: {grid}"
    assert_styled(mv, shadow=True)

    abl = marimo.view("aw-ablation")
    got = assert_styled(abl, shadow=True)
    cell = got["cell"]
    assert cell and cell["w"] >= 10 and cell["h"] >= 10, f"the head toggles have no size: {got}"
    assert cell["bg"] not in ("rgba(0, 0, 0, 0)", "transparent"), f"the head toggles are not filled: {got}"
    marimo.page.screenshot(path=str(ARTIFACTS / "marimo-views.png"), full_page=True)
    shot(abl, "marimo-ablation")
    assert not marimo.errors, marimo.errors


def test_marimo_clicks_reach_python(marimo):
    marimo.wait_python_state("heatmap 1/2 model view 0/0", timeout=60)

    # The heatmap's head menu: the trait changes in Python (marimo re-runs the cell that reads it), the canvas too.
    heat = marimo.view("aw-heatmap")
    wait_dataset(heat, "heatmap-canvas", "view", "self/1/2/t")
    before = canvas_stats(heat, "heatmap-canvas")["sum"]
    heat.locator("[data-testid=head-select]").select_option("0")
    wait_dataset(heat, "heatmap-canvas", "view", "self/1/0/t")
    assert canvas_stats(heat, "heatmap-canvas")["sum"] != before
    marimo.wait_python_state("heatmap 1/0 model view 0/0")

    # A click on a model-view thumbnail opens that head, and Python's layer/head follow.
    mv = marimo.view("aw-model-view")
    x, y = thumb_point(mv, 1, 3)
    marimo.page.mouse.click(x, y)
    wait_dataset(mv, "heatmap-canvas", "view", "self/1/3")
    assert dataset(mv, "thumb-grid")["selected"] == "1/3"
    marimo.wait_python_state("heatmap 1/0 model view 1/3")

    # A head toggle in the ablation grid: the model re-runs in marimo's kernel and the reply names the edit.
    abl = marimo.view("aw-ablation")
    out = abl.locator("[data-testid=output]")
    status = abl.locator("[data-testid=status]")
    cell = abl.locator("[data-testid=cell-0-1]")
    cell.click(timeout=10_000)
    deadline = time.time() + 30
    shown: list = []
    while time.time() < deadline:
        shown = json.loads(out.get_attribute("data-ablation") or "{}").get("edits", [])
        if shown and status.get_attribute("data-state") == "idle":
            break
        marimo.page.wait_for_timeout(100)
    assert [(e["layer"], e["head"], e["mode"]) for e in shown] == [(0, 1, "zero")], shown
    assert cell.get_attribute("data-state") == "zero" and cell.get_attribute("aria-pressed") == "true"
    # marimo's own value of the widget, read by another cell in its Python, holds the edit: the page set the trait
    # (it stayed {'edits': []} while the edit travelled as a custom message, which marimo's value never sees).
    marimo.page.wait_for_function(
        "(want) => (document.querySelector('[data-testid=py-ablation]') || {}).textContent === want",
        arg="ablation [(0, 1, 'zero')]", timeout=30_000)
    shot(abl, "marimo-ablation-head-0-1-off")
    shot(mv, "marimo-model-view-layer1-head3")
    assert not marimo.errors, marimo.errors


NOTEBOOK7_SETUP = """
import attnwidgets as aw
r = aw.run({text!r}, model={model!r})
w = aw.AttentionHeatmap(r, layer=1, head=2)
w
"""


def test_notebook7_heatmap_and_model_view(notebook7, tiny_bert):
    nb = notebook7.open([NOTEBOOK7_SETUP.format(text=TEXT, model=tiny_bert), "mv = aw.ModelView(r)\nmv"])
    heat, mv = nb.widget(0), nb.widget(1)
    wait_dataset(heat, "heatmap-canvas", "view", "self/1/2/t")
    stats = canvas_stats(heat, "heatmap-canvas")
    assert stats["ink"] > 2000 and stats["colours"] > 5, f"the heatmap canvas is blank: {stats}"
    assert_styled(heat, shadow=False)
    wait_dataset(mv, "heatmap-canvas", "view", "self/0/0")
    grid = canvas_stats(mv, "thumb-grid")
    assert grid["ink"] > 2000 and grid["colours"] > 5, f"the thumbnail grid is blank: {grid}"
    assert_styled(mv, shadow=False)
    nb.screenshot("notebook7-views")

    heat.locator("[data-testid=head-select]").select_option("3")
    wait_dataset(heat, "heatmap-canvas", "view", "self/1/3/t")
    eventually(nb, "print(w.head)", "3")
    x, y = thumb_point(mv, 1, 2)
    nb.page.mouse.click(x, y)
    wait_dataset(mv, "heatmap-canvas", "view", "self/1/2")
    assert nb.python("print(mv.layer, mv.head)").split() == ["1", "2"]
    nb.screenshot("notebook7-model-view-layer1-head2", mv)
    # Notebook 7.6's own settings loader throws this on every page, a notebook without widgets too.
    ours = [e for e in nb.errors() if "reading 'schema'" not in e]
    assert not ours, ours


def test_saved_pages_keep_their_styles(browser, tmp_path):
    """A save_html page is a host too: the styles that travel in the widget's root style it, QK's own included."""
    import numpy as np

    import attnwidgets as aw
    from attnwidgets.qk_result import QKCapture

    toks = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    rng = np.random.default_rng(0)
    a = rng.dirichlet(np.ones(5), size=(1, 2, 5)).astype(np.float32)
    heat = aw.save_html(aw.AttentionHeatmap(aw.AttentionResult.from_arrays(a, toks)), tmp_path / "heat.html")
    cap = QKCapture.from_vectors(rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4)),
                                 toks)
    qk = aw.save_html(aw.QKStepThrough(cap, query=2), tmp_path / "qk.html")
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    try:
        for path, canvas in ((heat, "heatmap-canvas"), (qk, "qk-softmax")):
            page = context.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.resolve().as_uri())
            root = page.locator(".aw-root").first
            root.wait_for(state="visible", timeout=20_000)
            page.locator(f"[data-testid={canvas}]").first.wait_for(state="visible", timeout=20_000)
            assert canvas_stats(page, canvas)["ink"] > 200, f"{path.name}: the canvas is blank"
            assert_styled(root, shadow=False)
            if path == qk:
                border = page.locator(".aw-qk-panel").first.evaluate("(e) => getComputedStyle(e).borderTopStyle")
                assert border == "solid", "QK's own styles did not reach its panels"
            shot(root, f"saved-page-{path.stem}-styled")
    finally:
        context.close()
    assert not errors, errors
