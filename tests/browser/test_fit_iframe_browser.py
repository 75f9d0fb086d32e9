"""``fit=True`` inside an output iframe (VS Code's webview, Colab's output frames, an exported page framed): the view
fits the viewport the reader sees, not the frame, whose height follows its content (js/src/draw/fit.ts:
viewportHeight).

A saved heatmap page (40 tokens in the lecture theme: taller than the screen unfitted) is framed in a 1280 × 720 page
by an iframe 2,000 px high, served from memory: same origin (the top window's 720 px are used) and cross origin (3/4
of the screen). Before the fix the view fitted the frame's 2,000 px and ran off the screen.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ARTIFACTS

import attnwidgets as aw
from attnwidgets.export import page_html

HEAT = "[data-testid=heatmap-canvas]"


@pytest.fixture(scope="module")
def saved_page() -> str:
    rng = np.random.default_rng(0)
    a = rng.random((1, 2, 40, 40)).astype(np.float32)
    r = aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), [f"tok{i}" for i in range(40)])
    return page_html(aw.AttentionHeatmap(r, theme="lecture", fit=True), scope="view")


def framed(browser, view_html: str, frame_origin: str):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    outer = ('<!doctype html><html><body style="margin:0">'
             f'<iframe id="out" src="{frame_origin}/view.html" style="width:1200px;height:2000px;border:0"></iframe>'
             "</body></html>")

    def route(r):
        url = r.request.url
        if url.endswith("/outer.html"):
            r.fulfill(status=200, content_type="text/html", body=outer)
        elif url.endswith("/view.html"):
            r.fulfill(status=200, content_type="text/html", body=view_html)
        else:
            r.abort()

    page.route("**/*", route)
    page.goto("http://aw.test/outer.html")
    frame = page.frame_locator("#out")
    frame.locator(HEAT).wait_for(timeout=20_000)
    page.wait_for_timeout(600)  # the fit watcher's settling frames
    return context, page, frame


@pytest.mark.parametrize("origin", ["http://aw.test", "http://other.test"], ids=["same-origin", "cross-origin"])
def test_a_fitted_view_in_a_tall_output_iframe_fits_the_screen(browser, saved_page, origin):
    context, page, frame = framed(browser, saved_page, origin)
    root = frame.locator(".aw-root").first
    # same origin: the top window's 720 px; cross origin: 3/4 of the screen (headless Chromium's is 800 x 600)
    height = 720 if origin == "http://aw.test" else root.evaluate("() => Math.round(screen.availHeight * 0.75)")
    assert root.get_attribute("data-fit") == "on"
    box = root.get_attribute("data-fit-box")
    assert box and box.endswith(f"x{height - 16}"), f"fitted to {box}, not the {height} px the reader sees"
    drawn = root.bounding_box()
    assert drawn["height"] <= height - 16 + 1, f"the view is {drawn['height']:.0f} px tall in a {height} px screen"
    assert drawn["height"] > 200, "and it still has room to draw"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"fit-iframe-{origin.split('//')[1].split('.')[0]}.png"))
    context.close()
