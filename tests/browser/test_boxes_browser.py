"""Views inside ipywidgets boxes, in a notebook executed, saved and reopened with no kernel: the box's saved state
(attnwidgets/widgets/boxes.py) draws both views live, side by side as the HBox laid them out, and a click switches
the head in each (JupyterLab 4). A crafted box that names hostile or missing children shows a clear message in its
place, the good view beside them still draws, and nothing runs (0 dialogs). Notebook 7: a saved notebook's views and
boxed views draw live with no kernel, and the lecture-mode command enlarges the fonts and switches the views' theme,
and back. This checkout's build of the extension (first on JUPYTER_PATH, as test_saved_files_browser.py does).
Screenshots at 1280 x 720.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import Lab
from helpers import ARTIFACTS, canvas_stats, dataset, free_port, page_point, redrawn, serve
from test_saved_views_browser import EVIL, open_saved

from attnwidgets.nbexport import notebook_client

ROOT = Path(__file__).resolve().parents[2]
VIEW_MIME = "application/vnd.attnwidgets.view+json"
SETUP = f"""
import numpy as np, ipywidgets
import attnwidgets as aw
rng = np.random.default_rng(0)
a = rng.random((2, 3, 6, 6)).astype(np.float32)
r = aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), {EVIL!r})
"""
BOXED = "ipywidgets.HBox([aw.AttentionHeatmap(r, layer=1, head=2), aw.ModelView(r, layer=1, head=0)])"


def _server(app: str, tree: str, tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Lab]:
    built = ROOT / "attnwidgets" / "labextension"
    if not (built / "package.json").is_file():
        pytest.fail("the lab extension is not built here: cd js && npm run build")
    root = tmp_path_factory.mktemp(f"boxes-{app}")
    data = tmp_path_factory.mktemp("jupyter-path")
    (data / "labextensions").mkdir()
    (data / "labextensions" / "attnwidgets").symlink_to(built)
    settings = tmp_path_factory.mktemp(f"boxes-{app}-settings")
    notif = settings / "@jupyterlab" / "apputils-extension"
    notif.mkdir(parents=True)
    (notif / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    port = free_port()
    app_class = "LabApp" if app == "lab" else "JupyterNotebookApp"
    cmd = [sys.executable, "-m", "jupyter", app, "--no-browser", f"--port={port}", "--ServerApp.token=",
           "--ServerApp.password=", "--ServerApp.ip=127.0.0.1", "--allow-root", f"--ServerApp.root_dir={root}",
           f"--{app_class}.expose_app_in_browser=True", "--ServerApp.disable_check_xsrf=True"]
    env = {"JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTER_PATH": str(data),
           "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    url = f"http://127.0.0.1:{port}"
    with serve(cmd, f"{url}/api/status", tmp_path_factory.mktemp(f"boxes-{app}-log"), env=env):
        yield Lab(url, root, browser, tree)


@pytest.fixture(scope="module")
def lab_build(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Lab]:
    yield from _server("lab", "lab/tree", tmp_path_factory, browser)


@pytest.fixture(scope="module")
def nb7_build(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Lab]:
    yield from _server("notebook", "notebooks", tmp_path_factory, browser)


def executed(folder: Path, name: str, cells: list[tuple[str, str]]) -> Path:
    """Run ``cells`` (kind, source) in a kernel and save the notebook without any widget state (as a notebook handed
    on or reopened later is); its path."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(s) if k == "markdown" else nbformat.v4.new_code_cell(s)
                for k, s in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    os.environ["ATTNWIDGETS_VIEW_SECONDS"] = "120"  # every head saved however busy the machine is
    notebook_client(nb, folder, timeout=180).execute()
    nb.metadata.pop("widgets", None)
    path = folder / name
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def boxed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return executed(tmp_path_factory.mktemp("boxed"), "boxed.ipynb",
                    [("markdown", "Views **side by side**, saved."), ("code", SETUP), ("code", BOXED),
                     ("code", "aw.AttentionHeatmap(r)")])


def _errors(page: Any) -> list[str]:
    # Notebook 7.6.5 itself throws this on opening any notebook, with or without this extension.
    return [e for e in page.context._aw_errors if "reading 'schema'" not in e or "notebook_core" not in e]


def switch_heads_in_the_box(page: Any, root: str = ".aw-saved-view", text_of: str = ".jp-NotebookPanel") -> None:
    """Both views of the box drawn live from saved state, side by side; a click switches a head in each (``root``:
    what holds a saved view, in JupyterLab or in an exported page)."""
    box = page.locator(f"{root} .aw-saved-box-row").first
    box.wait_for(timeout=60_000)
    heatmap, model_view = box.locator(".aw-heatmap").first, box.locator(".aw-model-view").first
    model_view.wait_for(timeout=30_000)
    h, m = heatmap.bounding_box(), model_view.bounding_box()
    assert h and m and m["x"] >= h["x"] + h["width"] - 2, (h, m)  # a row, as the HBox: side by side
    page.wait_for_timeout(800)  # the probes of the (fresh) widget manager have given up
    before = canvas_stats(heatmap, "heatmap-canvas")["sum"]
    for _ in range(20):  # the bar may be rebuilt once the first saved reply is in: choose again until it takes
        heatmap.locator("[data-testid=head-select]").select_option("0")
        page.wait_for_timeout(300)
        if dataset(heatmap, "heatmap-canvas")["view"].startswith("self/1/0"):
            break
    redrawn(heatmap, "heatmap-canvas", before)
    before = canvas_stats(model_view, "heatmap-canvas")["sum"]
    g = dataset(model_view, "thumb-grid")
    step = float(g["slot"]) + float(g["gap"])
    page.mouse.click(*page_point(model_view, "thumb-grid", float(g["x0"]) + 2 * step + float(g["slot"]) / 2,
                                 float(g["y0"]) + float(g["slot"]) / 2))  # layer 0, head 2
    redrawn(model_view, "heatmap-canvas", before)
    text = page.locator(text_of).inner_text()
    assert "model not found" not in text and "Error displaying widget" not in text, text[:500]


def test_boxed_views_reopened_without_a_kernel_are_live_in_jupyterlab(lab_build: Lab, boxed: Path) -> None:
    (lab_build.root / boxed.name).write_bytes(boxed.read_bytes())
    page = open_saved(lab_build, boxed.name, viewport=(1280, 720))
    switch_heads_in_the_box(page)
    assert page.locator(".aw-saved-view .aw-root").count() == 3  # two in the box, one on its own
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(".aw-saved-box-row").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "boxed-views-lab-1280x720.png"))
    assert page.evaluate("() => window.__pwned") is None and not _errors(page), _errors(page)


def _crafted(good: dict) -> list[dict]:
    hostile = "<img src=x onerror=alert(1)>"
    box = {"version": 1, "attnwidgets": good["attnwidgets"], "widget": "Box", "layout": "row",
           "style": {"flex_flow": "row wrap", "width": "url(javascript:alert(2))"}}
    children = [{**good, "widget": hostile}, "bogus-child-id", {"model_id": "bogus-child-id"}, good,
                {"widget": "Image", "format": "png", "data": 'x" onerror="alert(3)'},
                {"widget": hostile, "needs": hostile}, {"widget": "Label", "text": hostile}]
    return [{**box, "children": children}, {**box, "children": "aw-view-99"}, {**box, "layout": hostile,
                                                                                 "children": []}]


def test_a_crafted_box_with_hostile_or_missing_children_says_so_and_runs_nothing(lab_build: Lab,
                                                                               boxed: Path) -> None:
    nb = json.loads(boxed.read_text(encoding="utf-8"))
    good = next(o["data"][VIEW_MIME] for c in nb["cells"] for o in c.get("outputs", [])
                if o.get("data", {}).get(VIEW_MIME, {}).get("widget") == "AttentionHeatmap")
    cells = []
    for entry in _crafted(good):
        cell = nbformat.v4.new_code_cell("ipywidgets.HBox([])")
        cell["outputs"] = [nbformat.from_dict({"output_type": "display_data", "metadata": {},
                                               "data": {VIEW_MIME: entry, "text/plain": "HBox(...)"}})]
        cells.append(cell)
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=nb["metadata"]), lab_build.root / "crafted.ipynb")
    page = open_saved(lab_build, "crafted.ipynb", viewport=(1280, 720))
    page.locator(".aw-saved-view .aw-heatmap").first.wait_for(timeout=60_000)  # the good child still draws
    page.wait_for_timeout(1000)
    errors = page.locator(".aw-saved-error").all_inner_texts()
    assert any("does not know" in e and "<img src=x onerror=alert(1)>" in e for e in errors), errors
    assert sum("not an object" in e for e in errors) == 1, errors  # the bare id
    assert sum("no format version" in e for e in errors) == 1, errors  # an object naming no view
    assert any("not a PNG" in e for e in errors), errors
    assert any("children are not a list" in e for e in errors), errors
    assert any("neither 'row' nor 'column'" in e for e in errors), errors
    notes = page.locator(".aw-saved-needs, .aw-saved-label").all_inner_texts()
    assert sum("<img src=x onerror=alert(1)>" in n for n in notes) == 2, notes  # as text
    assert page.locator(".jp-NotebookPanel img[src=x], .jp-NotebookPanel img[onerror]").count() == 0
    width = page.evaluate("() => document.querySelector('.aw-saved-box').style.width")
    assert "url" not in width
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "boxed-crafted-lab-1280x720.png"))
    assert page.evaluate("() => window.__pwned") is None
    assert not [e for e in page.context._aw_errors if e.startswith("dialog")], page.context._aw_errors


FONT_SIZES = """() => {
  const px = (sel) => { const e = document.querySelector(sel); return e ? getComputedStyle(e).fontSize : null; };
  return { code: px('.jp-Cell .cm-content'), content: px('.jp-RenderedMarkdown p'),
           ui: px('.lm-MenuBar-itemLabel') || px('.jp-Toolbar-item .jp-ToolbarButtonComponent-label'),
           view: px('.aw-saved-view .aw-heatmap') };
}"""


def test_notebook7_draws_saved_and_boxed_views_live_and_lecture_mode_works(nb7_build: Lab, boxed: Path) -> None:
    (nb7_build.root / boxed.name).write_bytes(boxed.read_bytes())
    page = open_saved(nb7_build, boxed.name, viewport=(1280, 720))
    switch_heads_in_the_box(page)
    assert page.locator(".aw-saved-view .aw-root").count() == 3
    page.wait_for_timeout(500)
    before = page.evaluate(FONT_SIZES)
    assert all(before.values()), before
    heatmap = page.locator(".aw-saved-view .aw-heatmap").last  # the one on its own
    pixels = canvas_stats(heatmap, "heatmap-canvas")["sum"]
    page.locator(".lm-MenuBar-itemLabel", has_text="View").first.click()
    assert page.locator(".lm-Menu-itemLabel", has_text="Lecture Mode (attnwidgets)").count() == 1
    page.keyboard.press("Escape")
    page.evaluate("() => window.jupyterapp.commands.execute('attnwidgets:lecture-mode')")
    page.wait_for_timeout(500)
    on = page.evaluate(FONT_SIZES)
    assert on["code"] == "18px" and on["content"] == "20px" and on["ui"] == "16px", (before, on)
    assert float(on["view"].rstrip("px")) > float(before["view"].rstrip("px")), (before, on)  # the lecture theme
    redrawn(heatmap, "heatmap-canvas", pixels)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "notebook7-lecture-1280x720.png"))
    toggle = page.locator("[data-testid=aw-lecture-toggle]").first
    toggle.click()  # back, from the notebook's toolbar toggle
    page.wait_for_timeout(500)
    assert page.evaluate(FONT_SIZES) == before
    assert page.evaluate("() => window.__pwned") is None and not _errors(page), _errors(page)


def test_an_exported_page_draws_the_boxed_views_live_and_a_click_switches_heads(boxed: Path, browser: Any) -> None:
    """`attnwidgets export` of the boxed notebook, opened from a file with every other request aborted: the box is
    a row of live views (its picture hidden once drawn) and a click switches a head in each, with no kernel."""
    from test_nbexport_browser import Offline, export

    out = boxed.parent / "boxed.html"
    done = export(boxed, out)
    assert "3 views, 3 live" in done.stdout, done.stdout
    page = Offline(browser, out)
    page.drawn(2)
    switch_heads_in_the_box(page.page, root=".aw-saved.aw-drawn", text_of="body")
    assert not page.page.locator(".aw-saved.aw-drawn .aw-picture").first.is_visible()
    page.page.screenshot(path=str(ARTIFACTS / "boxes-exported-page.png"))
    assert not page.errors and not page.blocked, (page.errors, page.blocked)
    page.close()
