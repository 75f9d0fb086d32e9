"""Voilà serves notebook 05 as an app (issue 32 §4: a lecturer hands out a demo as a page): its views draw, and a
head switched in the page redraws the heatmap with a reply from the kernel Voilà runs.

Voilà (on the package index, in the dev extra) runs on the loopback address with the tests' environment (offline,
this checkout on PYTHONPATH); started and stopped as marimo is (helpers.serve).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ARTIFACTS, canvas_stats, free_port, serve, wait_dataset

ROOT = Path(__file__).resolve().parents[2]
HEAT = "[data-testid=heatmap-canvas]"

pytest.importorskip("voila")


@pytest.fixture(scope="module")
def voila_url(tmp_path_factory) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "voila", str(ROOT / "notebooks" / "05_lecture_quick_start.ipynb"), "--no-browser",
           f"--port={port}", "--Voila.ip=127.0.0.1", "--show_tracebacks=True"]
    # Ready once its static files answer: asking for the notebook itself would start a kernel per poll.
    with serve(cmd, f"{url}/voila/static/voila.js", tmp_path_factory.mktemp("voilalog"), timeout=120):
        yield url


def test_voila_serves_notebook_05_with_views_whose_clicks_work(browser, voila_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(voila_url, wait_until="domcontentloaded", timeout=180_000)
    heat = page.locator(HEAT).first
    heat.wait_for(timeout=240_000)  # Voilà runs every cell before (or while) it shows them
    root = page.locator(".aw-root", has=page.locator(HEAT)).first
    wait_dataset(root, HEAT, "view", "self/2/0/t", timeout=60)
    before = canvas_stats(root, HEAT)
    assert before["ink"] > 2000, f"the heatmap draws in Voilà: {before}"
    root.locator("[data-testid=head-select]").select_option("5")
    wait_dataset(root, HEAT, "view", "self/2/5/t", timeout=60)  # the kernel answered the page's request
    assert canvas_stats(root, HEAT)["sum"] != before["sum"], "a head switched in Voilà redraws"
    assert page.locator(".aw-root").count() >= 5, "the notebook's other views are drawn too"
    ARTIFACTS.mkdir(exist_ok=True)
    root.screenshot(path=str(ARTIFACTS / "voila-05-heatmap.png"))
    assert not [e for e in errors if "attnwidgets" in e or "anywidget" in e], errors
    context.close()
