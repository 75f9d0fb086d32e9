"""A notebook of attnwidgets views, executed by nbconvert and opened offline as HTML, shows a picture of each view.

Before, a view's display bundle held only the widget mimetype and ``<...AttentionHeatmap object at 0x7f…>``: without
widget support (HTML export, GitHub, nbviewer) the cell was blank. Each view now adds its static twin as
``image/png`` and a description as ``text/plain`` (attnwidgets.fallback). The page is opened with every network
request refused, as a reader offline would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ARTIFACTS

ROOT = Path(__file__).resolve().parents[2]

CELLS = [
    "import numpy as np, attnwidgets as aw\n"
    "a = np.random.default_rng(0).random((2, 3, 6, 6), dtype=np.float32)\n"
    "r = aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), ['[CLS]', 'the', 'cat', 'sat', '.', '[SEP]'])",
    "aw.AttentionHeatmap(r, layer=1, head=2)",
    "aw.ModelView(r)",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Any]:
    import nbformat

    folder = tmp_path_factory.mktemp("fallback_nb")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "views.ipynb")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "MPLBACKEND": "Agg"}
    # The executed .ipynb (to read its bundles) and its HTML page. Without widget state, as JupyterLab saves a notebook
    # by default: with it (nbconvert --execute stores it unless told not to) nbconvert's HTML prefers the widget view,
    # whose renderer comes from a CDN, and the cell stays blank offline whatever else the bundle holds.
    for to in ("notebook", "html"):
        subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", to, "--execute", "views.ipynb",
                        "--ExecutePreprocessor.store_widget_state=False",
                        "--output", f"executed.{'ipynb' if to == 'notebook' else 'html'}"],
                       cwd=folder, env=env, check=True, capture_output=True, timeout=300)
    return folder / "executed.html", nbformat.reads((folder / "executed.ipynb").read_text(), as_version=4)


def test_executed_bundles_carry_picture_and_description(exported):
    _, nb = exported
    bundles = [o["data"] for cell in nb["cells"][1:] for o in cell["outputs"] if "data" in o]
    assert len(bundles) == 2
    for data, view in zip(bundles, ("AttentionHeatmap", "ModelView")):
        assert "application/vnd.jupyter.widget-view+json" in data  # the live widget is still there
        assert data["text/plain"].startswith(f"{view} · arrays · 6 tokens: [CLS] the cat sat . [SEP]")
        assert "re-run the cell to interact" in data["text/plain"]
        assert "object at 0x" not in data["text/plain"]
        assert 2_000 < len(data["image/png"]) < 400_000


def test_offline_html_shows_the_pictures(exported, browser):
    """The session's one Chromium (a second sync Playwright in the same process fails inside its asyncio loop)."""
    html, _ = exported
    refused: list[str] = []
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    try:

        def route(r):
            if r.request.url.startswith("file:"):
                r.continue_()
            else:
                refused.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.goto(html.as_uri(), wait_until="load")
        page.wait_for_timeout(500)
        images = page.evaluate("""() => [...document.querySelectorAll('img')]
            .filter(img => img.src.startsWith('data:image/png;base64,'))
            .map(img => {
                const c = document.createElement('canvas');
                c.width = img.naturalWidth; c.height = img.naturalHeight;
                const g = c.getContext('2d'); g.drawImage(img, 0, 0);
                const d = g.getImageData(0, 0, c.width, c.height).data;
                let dark = 0, coloured = 0;
                for (let i = 0; i < d.length; i += 4) {
                    if (d[i] + d[i + 1] + d[i + 2] < 600) dark++;
                    if (Math.abs(d[i] - d[i + 2]) > 40) coloured++;
                }
                return {bytes: img.src.length, w: img.naturalWidth, h: img.naturalHeight, shown: img.clientWidth,
                        dark: dark / (d.length / 4), coloured: coloured / (d.length / 4)};
            })""")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "fallback_offline_html.png"), full_page=True)
    finally:
        page.close()
    assert len(images) == 2, images
    for img in images:
        assert img["bytes"] > 5_000 and img["w"] > 200 and img["h"] > 150 and img["shown"] > 100, img
        assert img["dark"] > 0.05 and img["coloured"] > 0.01, img  # a drawn map, not a blank page
    assert refused, "the page asked for nothing outside: the test did not exercise offline loading"
