"""A notebook executed, saved and reopened without its kernel keeps every view live (the attnwidgets extension draws
each view's saved state, ``application/vnd.attnwidgets.view+json``): hover shows the tooltip, switching the head (the
router view's layer) redraws the canvas, and no widget error shows. With a live kernel holding the widget, the live
widget is drawn and the saved view is not (never both). Hostile token text stays text; a corrupt or future-version
state gives a clear message, never half a view. In JupyterLab 4 and Notebook 7.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from helpers import ARTIFACTS, canvas_stats, dataset, hover_cell, page_point, redrawn

from attnwidgets.nbexport import notebook_client

VIEW_MIME = "application/vnd.attnwidgets.view+json"
EVIL = ["[CLS]", "<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>", "<b>x</b>", "&lt;i&gt;",
        "[SEP]"]
SETUP = f"""
import numpy as np
import attnwidgets as aw
rng = np.random.default_rng(0)
a = rng.random((2, 3, 6, 6)).astype(np.float32)
r = aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), {EVIL!r}, name="<svg onload=alert(3)>")
from attnwidgets.router_result import RouterResult
ex = np.stack([[rng.permutation(4)[:2] for _ in range(6)] for _ in range(2)])  # a MoE routing: top 2 of 4 experts
routes = RouterResult(list(r.tokens), [0, 1], rng.normal(size=(2, 6, 4)).astype(np.float32), ex,
                      np.full(ex.shape, 0.5, np.float32), model=r.model)
"""
VIEWS = {"aw-heatmap": "aw.AttentionHeatmap(r, layer=1, head=2)", "aw-model-view": "aw.ModelView(r, layer=1, head=0)",
         "aw-head-view": "aw.HeadView(r, layer=1)", "aw-entropy-bars": "aw.EntropyBars(r)",
         "aw-head-stats-grid": "aw.HeadStatsGrid(r)", "aw-routers": "aw.RouterView(routes)"}
# Record every string drawn on a canvas, and trip a flag if anything ever runs (as test_xss_browser.py does).
HOOK = """
window.__drawn = [];
const fill = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
  window.__drawn.push(String(text));
  return fill.call(this, text, ...rest);
};
window.alert = (m) => { window.__pwned = String(m); };
"""


def _cells(setup: str = SETUP) -> list[str]:
    return [setup, *VIEWS.values()]


def executed(folder: Path, name: str, setup: str = SETUP) -> Path:
    """Run the cells in a kernel (nbclient, as `attnwidgets export` does), save the notebook without any widget
    state, as a notebook is when it is handed on or reopened later, and return its path."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in _cells(setup)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # Every head saved however busy the machine is (view_mime saves only the view on screen past ALL_SECONDS).
    os.environ["ATTNWIDGETS_VIEW_SECONDS"] = "120"
    notebook_client(nb, folder, timeout=120).execute()
    assert all(o["data"][VIEW_MIME].get("scope") == "all" for c in nb.cells[1:] for o in c["outputs"]
               if VIEW_MIME in o.get("data", {})), "a view was saved without every head"
    nb.metadata.pop("widgets", None)  # no widget state: the manager cannot rebuild the models
    path = folder / name
    nbformat.write(nb, path)
    return path


def open_saved(jupyter: Any, name: str, viewport: tuple[int, int] = (1400, 1000), wait: bool = True) -> Any:
    """Open notebook ``name`` in a fresh page without running anything (its kernel starts fresh) and return the page.
    """
    for old in jupyter.browser.contexts:
        old.close()
    jupyter.shutdown_kernels()
    context = jupyter.browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    context._aw_errors = []
    context.add_init_script(HOOK)
    page = context.new_page()
    page.on("pageerror", lambda e: context._aw_errors.append(f"{e}\n{getattr(e, 'stack', '')}"))
    page.on("dialog", lambda d: (context._aw_errors.append(f"dialog: {d.message}"), d.dismiss()))
    reset = "?reset" if jupyter.tree == "lab/tree" else ""
    where = f"{jupyter.tree}/{name}" if name else jupyter.tree.split("/")[0]  # "" : JupyterLab with no notebook
    page.goto(f"{jupyter.url}/{where}{reset}", wait_until="domcontentloaded")
    ready = ("window.jupyterapp.shell.currentWidget && window.jupyterapp.shell.currentWidget.content" if wait else
             "window.jupyterapp.commands.hasCommand('attnwidgets:open-tutorials')")
    page.wait_for_function(f"() => window.jupyterapp && {ready}", timeout=60_000)
    return page


def run_all(page: Any, n_cells: int, timeout: float = 120) -> None:
    page.wait_for_function(
        "() => { const s = window.jupyterapp.shell.currentWidget.sessionContext.session; "
        "return s && s.kernel && s.kernel.status === 'idle'; }", timeout=timeout * 1000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(
        f"""() => {{
            const panel = window.jupyterapp.shell.currentWidget;
            const code = panel.content.widgets.filter(c => c.model.type === 'code');
            return code.length === {n_cells} && panel.sessionContext.session.kernel.status === 'idle' &&
                code.every(c => c.model.executionCount);
        }}""", timeout=timeout * 1000, polling=500)


def saved_views(page: Any, n: int) -> Any:
    views = page.locator(".aw-saved-view .aw-root")
    deadline = time.time() + 60
    while views.count() < n and time.time() < deadline:
        page.wait_for_timeout(250)
    assert views.count() == n, f"{views.count()} saved views drawn, expected {n}"
    return views


def no_widget_error(page: Any) -> None:
    text = page.locator(".jp-NotebookPanel").inner_text()
    assert "model not found" not in text and "Error displaying widget" not in text, text[:500]


def check_live_from_saved_state(page: Any, shot: str) -> None:
    saved_views(page, len(VIEWS))
    for cls in VIEWS:
        assert page.locator(f".aw-saved-view .{cls}").count() == 1, cls
    page.wait_for_timeout(800)  # the probes of the (fresh) widget manager have given up
    no_widget_error(page)
    heatmap = page.locator(".aw-saved-view .aw-heatmap").first
    tip = hover_cell(heatmap, "heatmap-canvas", 1, 2)
    assert EVIL[1] in tip and EVIL[2] in tip, tip  # escaped: the token text itself, character for character
    moved = hover_cell(heatmap, "heatmap-canvas", 3, 4)
    assert moved != tip, "hovering another cell did not change the tooltip"
    before = canvas_stats(heatmap, "heatmap-canvas")["sum"]
    for _ in range(20):  # the bar may be rebuilt once the first saved reply is in: choose again until it takes
        heatmap.locator("[data-testid=head-select]").select_option("0")
        page.wait_for_timeout(300)
        if dataset(heatmap, "heatmap-canvas")["view"].startswith("self/1/0"):
            break
    redrawn(heatmap, "heatmap-canvas", before)  # another head, from the saved replies, no kernel
    model_view = page.locator(".aw-saved-view .aw-model-view").first
    before = canvas_stats(model_view, "heatmap-canvas")["sum"]
    g = dataset(model_view, "thumb-grid")
    step = float(g["slot"]) + float(g["gap"])
    page.mouse.click(*page_point(model_view, "thumb-grid", float(g["x0"]) + 2 * step + float(g["slot"]) / 2,
                                 float(g["y0"]) + float(g["slot"]) / 2))  # layer 0, head 2
    redrawn(model_view, "heatmap-canvas", before)
    routers = page.locator(".aw-saved-view .aw-routers").first  # a click on layer 1's number: its load bars
    r = dataset(routers, "routers-canvas")
    before = canvas_stats(routers, "routers-canvas")["sum"]
    page.mouse.click(*page_point(routers, "routers-canvas", float(r["x0"]) + 1.5 * float(r["cw"]),
                                 float(r["y0"]) - 0.6 * float(r["ch"])))
    assert redrawn(routers, "routers-canvas", before)["layer"] == "1"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{shot}.png"))
    # Hostile text: drawn as text, never made into elements, nothing ran.
    assert page.locator(".jp-NotebookPanel img[src=x], .jp-NotebookPanel svg[onload]").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    drawn = page.evaluate("() => window.__drawn")
    assert any("</script><scr" in d for d in drawn) and any("<img src=x" in d for d in drawn), drawn[:20]
    # Notebook 7.6.5 itself throws this on opening any notebook, with or without this extension (tried both).
    errors = [e for e in page.context._aw_errors if "reading 'schema'" not in e or "notebook_core" not in e]
    assert not errors, errors


def check_live_widget_wins(page: Any) -> None:
    run_all(page, len(_cells()))
    deadline = time.time() + 60
    while time.time() < deadline and page.locator(".aw-root").count() != len(VIEWS):
        page.wait_for_timeout(250)
    assert page.locator(".aw-root").count() == len(VIEWS), page.locator(".aw-root").count()
    assert page.locator(".aw-saved-view").count() == 0, "a saved view was drawn beside the live widget"
    assert page.locator(".aw-saved-output .aw-root").count() == len(VIEWS)  # chosen by our renderer: live
    no_widget_error(page)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("saved")
    return executed(folder, "saved_views.ipynb")


@pytest.mark.parametrize("host", ["lab", "notebook7"])
def test_reopened_without_kernel_every_view_is_live_and_a_live_kernel_wins(host: str, saved: Path,
                                                                            request: pytest.FixtureRequest) -> None:
    jupyter = request.getfixturevalue(host)
    (jupyter.root / saved.name).write_bytes(saved.read_bytes())
    page = open_saved(jupyter, saved.name)
    check_live_from_saved_state(page, f"saved-views-{host}")
    check_live_widget_wins(page)


def _output(entry: Any) -> dict:
    return {"output_type": "display_data", "metadata": {},
            "data": {VIEW_MIME: entry, "text/plain": "AttentionHeatmap (re-run the cell to interact)"}}


def test_corrupt_or_future_state_says_so(lab: Any, saved: Path) -> None:
    nb = json.loads(saved.read_text(encoding="utf-8"))
    good = next(o["data"][VIEW_MIME] for o in nb["cells"][1]["outputs"] if VIEW_MIME in o.get("data", {}))
    future = {**good, "version": 99, "attnwidgets": "9.0"}
    corrupt = copy.deepcopy(good)
    corrupt["state"]["_payload"] = "not a payload"
    unknown = {**good, "widget": "<img src=x onerror=alert(6)>"}
    omitted = {k: good[k] for k in ("version", "attnwidgets", "widget", "bundle")}
    omitted["omitted"] = "the view on screen would add about 9.9 MB, over the 2.0 MB budget per view"
    cells = []
    for entry in (future, corrupt, unknown, omitted):
        cell = nbformat.v4.new_code_cell("aw.AttentionHeatmap(r)")
        cell["outputs"] = [nbformat.from_dict(_output(entry))]
        cells.append(cell)
    bad = nbformat.v4.new_notebook(cells=cells, metadata=nb["metadata"])
    nbformat.write(bad, lab.root / "bad_state.ipynb")
    page = open_saved(lab, "bad_state.ipynb")
    errors = page.locator(".aw-saved-error")
    errors.nth(2).wait_for(timeout=30_000)
    texts = errors.all_inner_texts()
    assert "newer attnwidgets" in texts[0] and "version 99" in texts[0], texts[0]
    assert "no payload" in texts[1], texts[1]
    assert "does not know" in texts[2] and "<img src=x onerror=alert(6)>" in texts[2], texts[2]
    assert page.locator(".aw-saved-omitted").first.inner_text().count("budget") >= 1
    assert page.locator(".aw-root").count() == 0  # never half a view
    assert page.locator(".jp-NotebookPanel img[src=x]").count() == 0
    assert page.evaluate("() => window.__pwned") is None


def test_the_extension_is_listed() -> None:
    out = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True, text=True,
                         env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    lines = [line for line in (out.stdout + out.stderr).splitlines() if "attnwidgets" in line]
    assert lines and "enabled" in lines[0] and "OK" in lines[0], out.stdout + out.stderr


def test_a_page_reloaded_while_its_kernel_holds_the_widgets_shows_them_live(lab: Any, saved: Path) -> None:
    """The kernel outlives the page: on reload the widget manager restores the models from it after the outputs were
    drawn, and the live views replace the saved ones (never both on screen)."""
    (lab.root / "reload.ipynb").write_bytes(saved.read_bytes())
    page = open_saved(lab, "reload.ipynb")
    run_all(page, len(_cells()))
    page.locator(".aw-root").nth(len(VIEWS) - 1).wait_for(timeout=60_000)
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_timeout(1500)
    page.reload(wait_until="domcontentloaded")
    deadline = time.time() + 60
    while time.time() < deadline:
        live = page.locator(".aw-saved-output .aw-root").count() - page.locator(".aw-saved-view .aw-root").count()
        if live == len(VIEWS):
            break
        page.wait_for_timeout(500)
    assert page.locator(".aw-saved-view").count() == 0, "a saved view stayed beside or instead of a live widget"
    assert page.locator(".aw-saved-output .aw-root").count() == len(VIEWS)
    no_widget_error(page)


def test_what_needs_the_model_is_disabled_and_says_so(lab: Any, tmp_path: Path) -> None:
    """The ablation widget's re-run is Python's: saved without a kernel, its heads, layers, mode and reset are
    disabled with the tooltip "needs a running kernel", while its maps still draw."""
    source = 'import attnwidgets as aw\naw.AblationWidget(["The cat sat on the mat."])'
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    nb.cells[0]["outputs"] = _run_one(tmp_path, source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab.root / "ablation_saved.ipynb")
    page = open_saved(lab, "ablation_saved.ipynb")
    view = page.locator(".aw-saved-view .aw-ablation").first
    view.wait_for(timeout=60_000)
    cell = view.locator("[data-testid=cell-0-0]")
    assert cell.is_disabled() and cell.get_attribute("title") == "needs a running kernel"
    for testid in ("layer-0", "reset", "mode-select", "scale-slider"):
        control = view.locator(f"[data-testid={testid}]").first
        assert control.is_disabled(), testid
    assert canvas_stats(view, "map-before")["ink"] > 0
    no_widget_error(page)


def _run_one(folder: Path, source: str) -> list:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook_client(nb, folder, timeout=300).execute()
    return nb.cells[0]["outputs"]
