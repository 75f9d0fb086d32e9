"""save_html pages in Chromium with every network request blocked: they draw, switch heads, and keep tokens inert."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import canvas_stats, hover_cell, wait_dataset

import attnwidgets as aw
from attnwidgets.qk_result import QKCapture

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

EVIL = ["[CLS]", "<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>", "ok", "[SEP]"]


class Offline:
    """A page opened from a file with every non-file request aborted (and recorded), dialogs and errors caught."""

    def __init__(self, browser, path: Path) -> None:
        self.context = browser.new_context(viewport={"width": 1300, "height": 900}, accept_downloads=True)
        self.page = self.context.new_page()
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))
        self.page.goto(path.resolve().as_uri())

    def _route(self, route) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def close(self) -> None:
        self.context.close()


def hover_row(page, row: int) -> str:
    """Hover key row ``row`` of the QK softmax panel and return the tooltip text."""
    canvas = page.locator(SOFTMAX)
    box = canvas.bounding_box()
    ds = canvas.evaluate("(c) => ({ top: Number(c.dataset.top), rh: Number(c.dataset.rh) })")
    page.mouse.move(box["x"] + 30, box["y"] + ds["top"] + (row + 0.5) * ds["rh"])
    tip = page.locator("[data-testid=tooltip]")
    tip.wait_for(state="visible", timeout=5000)
    return tip.inner_text()


HEAT = "[data-testid=heatmap-canvas]"
SOFTMAX = "[data-testid=qk-softmax]"


def test_heatmap_page_draws_and_switches_heads_offline(browser, tmp_path):
    r = aw.run("The cat sat on the mat because it was tired.")
    path = aw.save_html(aw.AttentionHeatmap(r, layer=2, head=3), tmp_path / "heatmap.html")
    page = Offline(browser, path)
    wait_dataset(page.page, HEAT, "view", "self/2/3/t")
    first = canvas_stats(page.page, HEAT)
    assert first["ink"] > 2000, "the saved page draws the heatmap"
    page.page.locator("[data-testid=head-select]").select_option("7")
    wait_dataset(page.page, HEAT, "view", "self/2/7/t")
    assert canvas_stats(page.page, HEAT)["sum"] != first["sum"], "another head, another picture, with no kernel"
    page.page.locator("[data-testid=head-select]").select_option("-1")
    wait_dataset(page.page, HEAT, "view", "self/2/-1/t")
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.locator(".aw-root").screenshot(path=str(ARTIFACTS / "export-heatmap-offline.png"))
    assert not page.blocked, f"the page asked the network for {page.blocked}"
    assert not page.errors, page.errors
    page.close()


def test_view_scope_page_says_what_is_missing(browser, tmp_path):
    r = aw.run("The cat sat on the mat.")
    path = aw.save_html(aw.AttentionHeatmap(r, layer=1, head=0), tmp_path / "view.html", scope="view")
    page = Offline(browser, path)
    wait_dataset(page.page, HEAT, "view", "self/1/0/t")
    page.page.locator("[data-testid=head-select]").select_option("5")
    box = page.page.locator(".aw-error")
    box.wait_for(state="visible", timeout=10_000)
    assert "not saved" in box.inner_text(), "a view that was not saved says so, never a blank"
    assert canvas_stats(page.page, HEAT)["ink"] > 500, "the last view stays on screen"
    page.close()


def test_tokens_stay_text_in_saved_pages(browser, tmp_path):
    a = np.full((1, 2, 5, 5), 0.2, np.float32)
    heat = aw.save_html(aw.AttentionHeatmap(aw.AttentionResult.from_arrays(a, EVIL)), tmp_path / "evil.html")
    rng = np.random.default_rng(0)
    cap = QKCapture.from_vectors(rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4)),
                                 rng.normal(size=(2, 5, 4)), EVIL)
    qk = aw.save_html(aw.QKStepThrough(cap, query=2), tmp_path / "evil_qk.html")
    for path, canvas in ((heat, HEAT), (qk, SOFTMAX)):
        page = Offline(browser, path)
        page.page.wait_for_function("(s) => document.querySelector(s)?.dataset.view", arg=canvas, timeout=20_000)
        assert page.page.locator("#aw-widget img").count() == 0
        assert page.page.locator("#aw-widget script").count() == 0
        assert page.page.locator("script").count() == 3, "only the page's own data, host and replies blocks"
        assert page.page.evaluate("() => window.__pwned === undefined")
        assert not page.errors, f"{path.name}: {page.errors}"
        assert not page.blocked, f"{path.name}: asked the network for {page.blocked}"
        if canvas == SOFTMAX:
            assert "</script><script>alert(2)</script>" in hover_row(page.page, 1), "tokens are shown as text"
            assert "<img src=x onerror=alert(1)>" in hover_row(page.page, 1)
            options = page.page.locator("[data-testid=query-select] option").all_inner_texts()
            assert any("<img src=x onerror=alert(1)>" in o for o in options)
        page.close()


def test_png_and_svg_downloads(browser, tmp_path):
    a = np.full((1, 1, 5, 5), 0.2, np.float32)
    path = aw.save_html(aw.AttentionHeatmap(aw.AttentionResult.from_arrays(a, EVIL)), tmp_path / "dl.html")
    page = Offline(browser, path)
    wait_dataset(page.page, HEAT, "view", "self/0/0/t")
    with page.page.expect_download() as info:
        page.page.locator("[data-testid=export-svg]").click()
    svg = Path(info.value.path()).read_text(encoding="utf-8")
    assert svg.startswith("<?xml") and "<svg" in svg and "<image" in svg and "<text" in svg
    assert "<script" not in svg and "<img" not in svg
    with page.page.expect_download() as info:
        page.page.locator("[data-testid=export-png]").click()
    assert Path(info.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not page.errors, page.errors
    page.close()


def test_cli_page_renders_offline(browser, tmp_path, tiny_llama):
    out = tmp_path / "cli.html"
    proc = subprocess.run([sys.executable, "-m", "attnwidgets.cli", "show", "The cat sat on the mat.", "--model",
                           tiny_llama, "--view", "qk", "--out", str(out), "--head", "2"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    page = Offline(browser, out)
    page.page.wait_for_function("(s) => document.querySelector(s)?.dataset.view", arg=SOFTMAX, timeout=20_000)
    assert canvas_stats(page.page, SOFTMAX)["ink"] > 200
    page.page.keyboard.press("Tab")
    page.page.locator(".aw-root").focus()
    page.page.keyboard.press("ArrowRight")
    page.page.wait_for_function("(s) => document.querySelector(s).dataset.view.startsWith('0/3/')", arg=SOFTMAX,
                                timeout=20_000)
    assert "key/value head 1" in page.page.locator(".aw-root").inner_text(), "GQA: head 3 reads kv head 1"
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.locator(".aw-root").screenshot(path=str(ARTIFACTS / "export-qk-llama-offline.png"))
    assert not page.errors and not page.blocked
    page.close()


GRID = "[data-testid=thumb-grid]"
LINES = "[data-testid=lines-canvas]"


def click_thumb(page, layer: int, head: int) -> None:
    grid = page.locator(GRID)
    box = grid.bounding_box()
    g = grid.evaluate("(c) => ({ slot: +c.dataset.slot, gap: +c.dataset.gap, x0: +c.dataset.x0, y0: +c.dataset.y0 })")
    page.mouse.click(box["x"] + g["x0"] + head * (g["slot"] + g["gap"]) + g["slot"] / 2,
                     box["y"] + g["y0"] + layer * (g["slot"] + g["gap"]) + g["slot"] / 2)


def test_model_view_page_opens_full_heads_offline(browser, tmp_path):
    r = aw.run("The cat sat on the mat because it was tired.")
    path = aw.save_html(aw.ModelView(r, layer=0, head=1), tmp_path / "model_view.html")
    page = Offline(browser, path)
    wait_dataset(page.page, HEAT, "view", "self/0/1")
    assert canvas_stats(page.page, GRID)["ink"] > 5000, "the thumbnails are drawn"
    first = canvas_stats(page.page, HEAT)
    click_thumb(page.page, 4, 7)
    wait_dataset(page.page, HEAT, "view", "self/4/7")
    full = canvas_stats(page.page, HEAT)
    assert full["ink"] > 2000 and full["sum"] != first["sum"], "a clicked head is drawn in full, with no kernel"
    assert int(full["nq"]) == len(r.tokens) and full["factor"] == "1"
    assert canvas_stats(page.page, GRID)["selected"] == "4/7"
    assert page.page.locator(".aw-error").is_hidden(), "every head was saved: no 'not saved' message"
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.locator(".aw-root").screenshot(path=str(ARTIFACTS / "export-model-view-offline.png"))
    # A PNG of the view downloads from the page itself.
    with page.page.expect_download() as info:
        page.page.locator("[data-testid=export-png]").click()
    png = Path(info.value.path()).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width > 400 and height > 200, f"the PNG is the whole view ({width} x {height})"
    (ARTIFACTS / "export-model-view-download.png").write_bytes(png)
    assert info.value.suggested_filename.endswith(".png")
    assert not page.blocked, f"the page asked the network for {page.blocked}"
    assert not page.errors, page.errors
    page.close()


def test_head_view_page_switches_layers_offline(browser, tmp_path):
    r = aw.run("The cat sat on the mat.", "It was tired.")
    w = aw.HeadView(r, layer=0)
    path = aw.save_html(w, tmp_path / "head_view.html")
    page = Offline(browser, path)
    wait_dataset(page.page, LINES, "view", "self/0/t")
    first = canvas_stats(page.page, LINES)
    assert first["ink"] > 3000 and int(first["lines"]) > 0
    page.page.locator("[data-testid=layer-select]").select_option("4")
    wait_dataset(page.page, LINES, "view", "self/4/t")
    s = canvas_stats(page.page, LINES)
    a = w.layer_heads(layer=4).astype(np.float16).astype(np.float32)
    assert int(s["lines"]) == int((a >= w.min_weight).sum()), "every line of layer 4, from the saved sparse rows"
    assert s["sum"] != first["sum"]
    assert page.page.locator(".aw-error").is_hidden()
    page.page.locator(".aw-root").screenshot(path=str(ARTIFACTS / "export-head-view-offline.png"))
    assert not page.blocked, f"the page asked the network for {page.blocked}"
    assert not page.errors, page.errors
    page.close()


PIXEL = """([q, k]) => { const c = document.querySelector('[data-testid=heatmap-canvas]'), d = c.dataset;
    const s = c.width / c.getBoundingClientRect().width;
    const x = (+d.x0 + (k + 0.5) * +d.cell) * s, y = (+d.y0 + (q + 0.5) * +d.cell) * s;
    return Array.from(c.getContext('2d').getImageData(Math.round(x), Math.round(y), 1, 1).data.slice(0, 3)); }"""
GREY = [235, 235, 235]  # js/src/draw/canvas.ts: a masked cell


def test_uint8_pages_draw_the_causal_mask_grey(browser, tmp_path):
    # uint8 used to save NaN (a future key) as 0: masked cells were drawn and described as a weight of zero.
    rng = np.random.default_rng(3)
    a = np.tril(rng.random((2, 3, 6, 6), np.float32)) + 0.01 * np.eye(6, dtype=np.float32)
    a /= a.sum(-1, keepdims=True)
    r = aw.AttentionResult.from_arrays(a, ["The", "cat", "sat", "on", "the", "mat"], kind="decoder")
    for name, widget, view in (("heatmap", aw.AttentionHeatmap(r, layer=1, head=1), "self/1/1/t"),
                               ("model-view", aw.ModelView(r, layer=1, head=1), "self/1/1")):
        path = aw.save_html(widget, tmp_path / f"{name}-uint8.html", precision="uint8")
        page = Offline(browser, path)
        wait_dataset(page.page, HEAT, "view", view)
        assert page.page.evaluate(PIXEL, [1, 4]) == GREY, f"{name}: a future key is drawn grey"
        assert page.page.evaluate(PIXEL, [4, 1]) != GREY
        assert "masked" in hover_cell(page.page, HEAT, 1, 4)
        text = hover_cell(page.page, HEAT, 4, 1)
        assert "masked" not in text
        shown = float(text.split("\n")[-1])
        assert abs(shown - a[1, 1, 4, 1]) <= a[1, 1].max() / 254 + 1e-4, f"{name}: the weight on its own scale"
        page.page.locator(".aw-root").screenshot(path=str(ARTIFACTS / f"export-{name}-uint8-causal.png"))
        assert not page.errors and not page.blocked, (page.errors, page.blocked)
        page.close()


def test_words_toggle_in_saved_pages_redraws_at_word_level(browser, tmp_path):
    # The saved heatmap kept token labels over word-level matrices (a garbled picture), and a saved HeadView had no
    # word-level layers (its checkbox only said "not saved").
    r = aw.run("Unbelievable tokenizers fragment everything.")
    heat = aw.AttentionHeatmap(r, layer=1, head=2)
    words = heat.labels(True)["self"][0]
    assert len(words) < len(r.tokens), "the text has words of several pieces"
    hv = aw.HeadView(r, layer=1)
    for name, widget, canvas, view in (("heatmap", heat, HEAT, "self/1/2"), ("head-view", hv, LINES, "self/1")):
        page = Offline(browser, aw.save_html(widget, tmp_path / f"{name}-words.html"))
        d = wait_dataset(page.page, canvas, "view", f"{view}/t")
        assert int(d["nq"]) == len(r.tokens)
        page.page.locator(".aw-root input[aria-label='word level']").check()
        d = wait_dataset(page.page, canvas, "view", f"{view}/w")
        assert (int(d["nq"]), int(d["nk"])) == (len(words), len(words)), f"{name}: a grid of words"
        if name == "heatmap":
            assert float(d["gridH"]) == pytest.approx(float(d["cell"]) * len(words))
            tip = hover_cell(page.page, HEAT, 1, 1)
            assert tip.startswith(f"{words[1]} → {words[1]}"), f"word labels name word cells: {tip!r}"
            want = heat.matrix(layer=1, head=2, words=True)[1, 1]
            assert abs(float(tip.split("\n")[-1]) - want) < 1e-3
        else:
            a = hv.layer_heads(words=True).astype(np.float16).astype(np.float32)
            assert int(d["lines"]) == int((a >= hv.min_weight).sum()), "every word-level line, from the saved rows"
        assert page.page.locator(".aw-error").is_hidden(), "word level was saved: no 'not saved' message"
        page.page.locator(".aw-root").screenshot(path=str(ARTIFACTS / f"export-{name}-words-offline.png"))
        page.page.locator(".aw-root input[aria-label='word level']").uncheck()
        d = wait_dataset(page.page, canvas, "view", f"{view}/t")
        assert int(d["nq"]) == len(r.tokens), "back to tokens"
        assert not page.errors and not page.blocked, (page.errors, page.blocked)
        page.close()
