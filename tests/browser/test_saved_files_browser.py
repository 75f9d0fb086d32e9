"""Files ``aw.save`` wrote, opened by double-click in JupyterLab's file browser with no kernel running: a saved result
opens as a document that draws its heatmap, model view and entropy bars (a click switches the head), saved corpus
statistics draw their grid (a click selects a head), a tampered file shows the loader's message and nothing else,
and hostile token text in a saved result runs nothing (no dialog, no element made from it). The document is this
checkout's build of the extension (js/src/lab/saved_file.ts), served with the server part (attnwidgets/server.py).
Screenshot at 1280 x 720.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import Lab
from helpers import ARTIFACTS, canvas_stats, dataset, free_port, page_point, redrawn, serve
from test_saved_views_browser import EVIL, open_saved

import attnwidgets as aw
from attnwidgets.persist import SavedFileError

ROOT = Path(__file__).resolve().parents[2]

rng = np.random.default_rng(0)
_a = rng.random((2, 3, 6, 6)).astype(np.float32)
ATTENTION = _a / _a.sum(-1, keepdims=True)


def _files(root: Path) -> None:
    r = aw.AttentionResult.from_arrays(ATTENTION, EVIL, name="<svg onload=alert(3)>", text="x")
    aw.save(r, root / "result.npz")
    two = [aw.AttentionResult.from_arrays(ATTENTION[:, :, :4, :4] / ATTENTION[:, :, :4, :4].sum(-1, keepdims=True),
                                          ["[CLS]", "a", "b", "[SEP]"])] * 2
    aw.save(aw.analysis.aggregate_stats(two), root / "stats.npz")
    aw.save(r, root / "tampered.npz")
    import io
    import zipfile

    with zipfile.ZipFile(root / "tampered.npz") as z:
        entries = {n: z.read(n) for n in z.namelist()}
    buffer = io.BytesIO()
    np.save(buffer, np.load(io.BytesIO(entries["attention.npy"])) * 2, allow_pickle=False)  # rows sum to 2
    entries["attention.npy"] = buffer.getvalue()
    with zipfile.ZipFile(root / "tampered.npz", "w") as z:
        for n, data in entries.items():
            z.writestr(n, data)


@pytest.fixture(scope="module")
def lab_docs(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Lab]:
    """JupyterLab with the server part enabled and this checkout's lab extension first on JUPYTER_PATH (the venv may
    hold an older copy of it)."""
    built = ROOT / "attnwidgets" / "labextension"
    if not (built / "package.json").is_file():
        pytest.fail("the lab extension is not built here: cd js && npm run build")
    root = tmp_path_factory.mktemp("docs")
    _files(root)
    data = tmp_path_factory.mktemp("jupyter-path")
    (data / "labextensions").mkdir()
    (data / "labextensions" / "attnwidgets").symlink_to(built)
    settings = tmp_path_factory.mktemp("docs-settings")
    notif = settings / "@jupyterlab" / "apputils-extension"
    notif.mkdir(parents=True)
    (notif / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    port = free_port()
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ServerApp.token=",
           "--ServerApp.password=", "--ServerApp.ip=127.0.0.1", "--allow-root", f"--ServerApp.root_dir={root}",
           "--LabApp.expose_app_in_browser=True", "--ServerApp.disable_check_xsrf=True",
           "--ServerApp.jpserver_extensions=attnwidgets.server=True"]
    env = {"JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTER_PATH": str(data)}
    url = f"http://127.0.0.1:{port}"
    with serve(cmd, f"{url}/api/status", tmp_path_factory.mktemp("docslog"), env=env):
        yield Lab(url, root, browser, "lab/tree")


def kernels(lab: Lab) -> list[Any]:
    with urllib.request.urlopen(f"{lab.url}/api/kernels", timeout=30) as answer:
        return json.loads(answer.read())


def open_file(lab: Lab, name: str) -> Any:
    """A fresh page on the file browser; double-click ``name``; the page, once the document is current."""
    page = open_saved(lab, "", wait=False, viewport=(1280, 720))
    item = page.locator(".jp-DirListing-item", has=page.locator(".jp-DirListing-itemText", has_text=name))
    item.first.wait_for(timeout=30_000)
    item.first.dblclick()
    page.wait_for_function(
        "(name) => { const w = window.jupyterapp.shell.currentWidget; return w && w.context && "
        "w.context.path === name && w.node.querySelector('.aw-saved-file'); }", arg=name, timeout=30_000)
    return page


def no_script_ran(page: Any) -> None:
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator(".aw-saved-file img, .aw-saved-file svg[onload]").count() == 0
    dialogs = [e for e in page.context._aw_errors if e.startswith("dialog:")]
    assert dialogs == [], dialogs


def test_a_saved_result_opens_by_double_click_and_draws_its_views_with_no_kernel(lab_docs: Lab) -> None:
    page = open_file(lab_docs, "result.npz")
    doc = page.locator(".aw-saved-file")
    heatmap = doc.locator(".aw-saved-view .aw-heatmap").first
    heatmap.wait_for(timeout=60_000)
    doc.locator(".aw-saved-view .aw-model-view").first.wait_for(timeout=30_000)
    doc.locator(".aw-saved-view .aw-entropy-bars").first.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    assert "result.npz — AttentionResult" in doc.locator(".aw-doc-name").inner_text()
    assert canvas_stats(heatmap, "heatmap-canvas")["ink"] > 0
    # A click switches the head: the heatmap's head menu, then a thumbnail of the model view.
    before = canvas_stats(heatmap, "heatmap-canvas")["sum"]
    heatmap.locator("[data-testid=head-select]").select_option("2")
    redrawn(heatmap, "heatmap-canvas", before)
    assert dataset(heatmap, "heatmap-canvas")["view"].startswith("self/0/2")
    model_view = doc.locator(".aw-saved-view .aw-model-view").first
    before = canvas_stats(model_view, "heatmap-canvas")["sum"]
    g = dataset(model_view, "thumb-grid")
    step = float(g["slot"]) + float(g["gap"])
    page.mouse.click(*page_point(model_view, "thumb-grid", float(g["x0"]) + 1 * step + float(g["slot"]) / 2,
                                 float(g["y0"]) + step + float(g["slot"]) / 2))  # layer 1, head 1
    redrawn(model_view, "heatmap-canvas", before)
    # Hostile token text was drawn as text (on the canvas), never made into markup, and nothing ran.
    drawn = page.evaluate("() => window.__drawn")
    assert any("<img src=x" in d for d in drawn), drawn[:20]
    no_script_ran(page)
    assert kernels(lab_docs) == []  # no kernel was started to draw any of it
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "saved-file-result-1280x720.png"))


def test_saved_corpus_stats_open_as_their_grid_and_a_click_selects_a_head(lab_docs: Lab) -> None:
    page = open_file(lab_docs, "stats.npz")
    doc = page.locator(".aw-saved-file")
    grid = doc.locator(".aw-saved-view .aw-head-stats-grid").first
    grid.wait_for(timeout=60_000)
    page.wait_for_timeout(500)
    info = canvas_stats(grid, "grid-canvas")
    assert info["ink"] > 0 and (info["nLayers"], info["nHeads"]) == ("2", "3"), info
    cell = float(info["cell"])
    page.mouse.click(*page_point(grid, "grid-canvas", float(info["x0"]) + 2.5 * cell, float(info["y0"]) + 1.5 * cell))
    page.wait_for_function(
        "() => document.querySelector('.aw-saved-file [data-testid=grid-canvas]').dataset.selected === '1/2'",
        timeout=10_000)
    no_script_ran(page)
    assert kernels(lab_docs) == []
    page.screenshot(path=str(ARTIFACTS / "saved-file-stats-1280x720.png"))


def test_a_tampered_file_shows_the_loaders_message_and_no_view(lab_docs: Lab) -> None:
    page = open_file(lab_docs, "tampered.npz")
    error = page.locator(".aw-saved-file .aw-saved-error")
    error.wait_for(timeout=60_000)
    with pytest.raises(SavedFileError) as expected:
        aw.load(lab_docs.root / "tampered.npz")
    message = str(expected.value).replace(repr(str(lab_docs.root / "tampered.npz")), repr("tampered.npz"))
    assert error.inner_text() == message
    assert page.locator(".aw-saved-file .aw-root, .aw-saved-file canvas").count() == 0  # never a wrong picture
    no_script_ran(page)
    page.screenshot(path=str(ARTIFACTS / "saved-file-tampered-1280x720.png"))


def test_file_reload_reads_a_newer_save_of_the_same_name(lab_docs: Lab) -> None:
    """File > Reload from Disk (docmanager:reload) after the file was saved again: the document shows the new file
    (here corpus statistics where a result was), not the views it drew first."""
    import os
    import shutil

    path = lab_docs.root / "reloaded.npz"
    shutil.copy(lab_docs.root / "result.npz", path)
    page = open_file(lab_docs, "reloaded.npz")
    doc = page.locator(".aw-saved-file")
    doc.locator(".aw-saved-view .aw-heatmap").first.wait_for(timeout=60_000)
    assert "— AttentionResult" in doc.locator(".aw-doc-name").inner_text()
    shutil.copy(lab_docs.root / "stats.npz", path)
    stamp = path.stat().st_mtime + 5
    os.utime(path, (stamp, stamp))  # a later modification time than the one the document read
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:reload')")
    page.wait_for_function(
        "() => (document.querySelector('.aw-saved-file .aw-doc-name') || {}).textContent?.includes('CorpusStats')",
        timeout=60_000)
    doc.locator(".aw-saved-view .aw-head-stats-grid").first.wait_for(timeout=30_000)
    assert doc.locator(".aw-doc-name").count() == 1, "the first file's views are gone, drawn once"
    assert doc.locator(".aw-saved-view .aw-heatmap").count() == 0
    no_script_ran(page)
