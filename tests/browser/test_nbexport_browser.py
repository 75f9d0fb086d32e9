"""Pages written by ``attnwidgets export`` in Chromium, opened from a file with every non-file request aborted.

A hostile notebook (the views' XSS payloads as tokens, plus what a notebook itself can carry: a markdown
``<img onerror>``, a ``javascript:`` link, an iframe, a remote image, a ``text/html`` ``<script src=https://…>`` and an
``application/javascript`` output) exports to a page where nothing runs and nothing is requested; its views are live
(a head switched redraws), and its maths is typeset by KaTeX (no raw TeX on screen). Every tutorial is exported the
same way from its executed copy by the notebooks tier (``live_page_ok``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from helpers import ARTIFACTS, canvas_stats, wait_dataset

ROOT = Path(__file__).resolve().parents[2]

EVIL = ["[CLS]", "<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>", "<b>x</b>", "&lt;i&gt;",
        "[SEP]"]
NAME = "<svg onload=alert(3)>"
TEXT = "<img src=y onerror=alert(4)> said </script>"

MARKDOWN = """# A notebook someone sent

<img src=x onerror="alert('markdown img')"> [a link](javascript:alert('markdown link'))
<a href="javascript:alert('html link')" id="evil-link">another link</a>
<iframe src="https://evil.example/frame"></iframe> ![remote](https://evil.example/pixel.png)
<svg onload="alert('markdown svg')"></svg> <b onmouseover="alert('markdown hover')" id="evil-hover">hover me</b>

Attention: $$\\mathrm{softmax}\\left(\\frac{QK^\\top}{\\sqrt{d_k}}\\right)V$$ and inline $\\mathrm{head}_i = W_i x$.
"""

CODE = [
    f"""import numpy as np
import attnwidgets as aw
from attnwidgets.qk_result import QKCapture
rng = np.random.default_rng(0)
a = rng.random((2, 3, 6, 6)).astype(np.float32)
r = aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), {EVIL!r}, name={NAME!r}, text={TEXT!r})
cap = QKCapture.from_vectors(rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 6, 4)),
                             {EVIL!r})""",
    "aw.AttentionHeatmap(r, layer=1, head=2)",
    "aw.ModelView(r, layer=1, head=2)",
    "aw.HeadView(r)",
    "aw.QKStepThrough(cap, query=2)",
    "aw.EntropyBars(r)",
    "aw.HeadStatsGrid(r)",
    "aw.HeadClusterMap(r)",
    """from IPython.display import HTML, Javascript, display
display(HTML("<script src='https://evil.example/x.js'></script><script>alert('html script')</script>"
             "<img src='https://evil.example/p.png'><b onclick=\\"alert('html click')\\" id='evil-click'>click</b>"))
display(Javascript("alert('javascript output')"))""",
]
VIEWS = 7

# Trip a flag if anything ever runs (alert is also caught as a dialog).
HOOK = "window.alert = (m) => { window.__pwned = String(m); };"


def export(notebook: Path, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ATTNWIDGETS_STATIC_FALLBACK": "0", "HF_HUB_OFFLINE": "1",
           "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-m", "attnwidgets", "export", str(notebook), "-o", str(out), *flags],
                          capture_output=True, text=True, env=env, cwd=notebook.parent, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


class Offline:
    """A page opened from a file: every non-file request aborted and recorded, dialogs and errors caught."""

    def __init__(self, browser, path: Path, viewport=(1280, 720)) -> None:
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self.context.add_init_script(HOOK)
        self.page = self.context.new_page()
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))
        self.page.goto(path.resolve().as_uri())

    def _route(self, route) -> None:
        if route.request.url.startswith(("file:", "data:")):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def drawn(self, n: int) -> None:
        self.page.wait_for_function("(n) => document.querySelectorAll('.aw-saved.aw-drawn').length >= n", arg=n,
                                    timeout=30_000)

    def visible_text(self) -> str:
        return self.page.evaluate("() => document.body.innerText")

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(MARKDOWN), *(nbformat.v4.new_code_cell(c) for c in CODE)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp / "hostile.ipynb"
    nbformat.write(nb, path)
    done = export(path, tmp / "hostile.html")
    assert f"{VIEWS} views, {VIEWS} live" in done.stdout, done.stdout
    return tmp / "hostile.html"


def no_raw_tex(text: str) -> None:
    for raw in ("\\mathrm", "\\frac", "$$", "\\sqrt"):
        assert raw not in text, f"raw TeX {raw!r} is visible"


def test_nothing_a_hostile_notebook_carries_runs_or_fetches(browser, hostile):
    page = Offline(browser, hostile)
    page.drawn(VIEWS)
    p = page.page
    # the elements may stay, their handlers and links do not: fire what a reader would
    fire = "(e) => { for (const t of ['mouseover', 'click']) e.dispatchEvent(new MouseEvent(t, {bubbles: true})); }"
    for element in p.locator("main a, main b, main img, main svg, main details").all():
        element.evaluate(fire)
    for link in p.locator("a").all():
        assert not (link.get_attribute("href") or "").lower().strip().startswith("javascript:")
    p.wait_for_timeout(500)
    assert p.evaluate("() => window.__pwned") is None, "something ran"
    assert p.locator("iframe, object, embed, svg[onload], main script").count() == 0
    assert not page.errors, page.errors
    assert not page.blocked, f"the page asked the network for {page.blocked}"
    assert "<IPython.core.display.Javascript object>" in page.visible_text(), "a script output shows its text only"
    ARTIFACTS.mkdir(exist_ok=True)
    p.screenshot(path=str(ARTIFACTS / "nbexport-hostile.png"), full_page=True)
    page.close()


def test_views_are_live_and_maths_is_typeset_offline(browser, hostile):
    page = Offline(browser, hostile)
    page.drawn(VIEWS)
    p = page.page
    assert p.locator(".katex").count() >= 2 and p.locator(".katex-display").count() == 1
    no_raw_tex(page.visible_text())
    assert p.evaluate("() => document.fonts.check('16px KaTeX_Main')"), "KaTeX's own font, inlined, is loaded"
    heat = "[data-testid=heatmap-canvas]"
    wait_dataset(p, heat, "view", "self/1/2/t")
    before = canvas_stats(p, heat)
    p.locator("[data-testid=head-select]").first.select_option("0")
    wait_dataset(p, heat, "view", "self/1/0/t")
    assert canvas_stats(p, heat)["sum"] != before["sum"], "a head switched in the page redraws, with no kernel"
    # every token is text: drawn on canvases and shown in titles, never made into elements
    assert p.locator(".aw-saved img:not(.aw-picture img)").count() == 0
    assert p.locator(".aw-saved b").count() == 0
    p.locator(".aw-saved").first.screenshot(path=str(ARTIFACTS / "nbexport-heatmap-live.png"))
    assert not page.errors and not page.blocked, (page.errors, page.blocked)
    page.close()


def live_page_ok(browser, out: Path, shot: str) -> None:
    """The page ``out`` opened from a file with every other request aborted: each live view draws, a click on the
    first changes what it draws, no raw TeX shows, no page error, nothing asked of the network. What the notebooks
    tier checks of every tutorial's executed copy (tests/browser/test_notebooks_browser.py)."""
    page = Offline(browser, out)
    live = page.page.evaluate("() => document.querySelectorAll('.aw-saved .aw-live').length")
    assert live > 0, f"{out.name}: no view is live"
    page.drawn(live)
    no_raw_tex(page.visible_text())
    p = page.page
    # A head switched in the first view that has a head menu (every notebook shows one), else a click on a canvas:
    # what the view draws changes, with no kernel.
    menus = p.locator(".aw-saved.aw-drawn [data-testid=head-select]")
    if menus.count():
        menu = menus.first
        view = menu.locator("xpath=ancestor::*[contains(concat(' ', @class, ' '), ' aw-root ')][1]")
        view.scroll_into_view_if_needed()
        before = view.screenshot()
        current = menu.input_value()
        other = next(v for v in menu.locator("option").evaluate_all("(os) => os.map((o) => o.value)") if v != current)
        menu.select_option(other)
        for _ in range(20):  # what it draws changes (its map, its title), with no kernel
            p.wait_for_timeout(250)
            if view.screenshot() != before:
                break
        else:
            raise AssertionError(f"{out.name}: choosing head {other} in the first head menu changed nothing drawn")
    else:
        view = p.locator(".aw-saved.aw-drawn").first
        canvas = view.locator("canvas").first
        canvas.scroll_into_view_if_needed()
        before, shot_before = canvas.evaluate("(c) => c.toDataURL()"), view.screenshot()
        box = canvas.bounding_box()
        p.mouse.click(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.6)
        p.wait_for_timeout(800)
        assert view.screenshot() != shot_before or canvas.evaluate("(c) => c.toDataURL()") != before, \
            f"{out.name}: a click on a view changes what it draws"
    errors = [t.strip() for t in p.locator(".aw-saved .aw-error").all_inner_texts() if t.strip()]
    assert not errors, f"{out.name}: {errors}"
    p.screenshot(path=str(ARTIFACTS / f"{shot}.png"))
    assert not page.errors, page.errors
    assert not page.blocked, f"the page asked the network for {page.blocked}"
    page.close()
