"""The extension's own commands in a running JupyterLab: lecture mode (palette, View menu, notebook toolbar toggle)
enlarges JupyterLab's code, content and UI fonts and switches every view's theme live, saved and live views alike,
and back; the Launcher card "attnwidgets tutorials" copies the tutorials (through the server endpoint,
attnwidgets/server.py) and opens notebook 05. Screenshots at 1280 x 720 in lecture mode, file browser open and closed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Lab
from helpers import ARTIFACTS, canvas_stats, eventually, free_port, redrawn, serve
from test_saved_views_browser import VIEWS, _cells, executed, open_saved, run_all

FONT_SIZES = """() => {
  const px = (sel) => { const e = document.querySelector(sel); return e ? getComputedStyle(e).fontSize : null; };
  return { code: px('.jp-Cell .cm-content'), content: px('.jp-RenderedMarkdown p'),
           ui: px('.lm-MenuBar-itemLabel') || px('.jp-Toolbar-item .jp-ToolbarButtonComponent-label'),
           view: px('.aw-saved-view .aw-heatmap') || px('.aw-heatmap') };
}"""


@pytest.fixture(scope="module")
def lab_ext(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Lab]:
    """JupyterLab with the extension's server part enabled (as the wheel's jupyter_server_config.d file does)."""
    root = tmp_path_factory.mktemp("labext")
    port = free_port()
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ServerApp.token=",
           "--ServerApp.password=", "--ServerApp.ip=127.0.0.1", "--allow-root", f"--ServerApp.root_dir={root}",
           "--LabApp.expose_app_in_browser=True", "--ServerApp.disable_check_xsrf=True",
           "--ServerApp.jpserver_extensions=attnwidgets.server=True"]
    settings = tmp_path_factory.mktemp("labext-settings")
    notif = settings / "@jupyterlab" / "apputils-extension"
    notif.mkdir(parents=True)  # no news pop-up over the screenshots (conftest.py does the same)
    (notif / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    env = {"JUPYTERLAB_SETTINGS_DIR": str(settings)}
    url = f"http://127.0.0.1:{port}"
    with serve(cmd, f"{url}/api/status", tmp_path_factory.mktemp("labextlog"), env=env):
        yield Lab(url, root, browser, "lab/tree")


def _notebook_with_markdown(folder: Path) -> Path:
    import nbformat

    path = executed(folder, "lecture.ipynb")
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("Attention, **live** from the saved notebook."))
    nbformat.write(nb, path)
    return path


def test_lecture_mode_enlarges_jupyterlab_and_switches_every_view_and_back(lab_ext: Lab, tmp_path: Path) -> None:
    path = _notebook_with_markdown(tmp_path)
    (lab_ext.root / path.name).write_bytes(path.read_bytes())
    page = open_saved(lab_ext, path.name, viewport=(1280, 720))
    page.locator(".aw-saved-view .aw-heatmap").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1000)
    before = page.evaluate(FONT_SIZES)
    heatmap = page.locator(".aw-saved-view .aw-heatmap").first
    pixels = canvas_stats(heatmap, "heatmap-canvas")["sum"]
    # The View menu and the palette carry it.
    page.locator(".lm-MenuBar-itemLabel", has_text="View").first.click()
    assert page.locator(".lm-Menu-itemLabel", has_text="Lecture Mode (attnwidgets)").count() == 1
    page.keyboard.press("Escape")
    page.evaluate("() => window.jupyterapp.commands.execute('attnwidgets:lecture-mode')")
    page.wait_for_timeout(500)
    on = page.evaluate(FONT_SIZES)
    assert on["code"] == "18px" and on["content"] == "20px" and on["ui"] == "16px", (before, on)
    assert float(on["view"].rstrip("px")) > float(before["view"].rstrip("px")), (before, on)  # the lecture theme
    redrawn(heatmap, "heatmap-canvas", pixels)
    assert page.evaluate("() => window.jupyterapp.commands.isToggled('attnwidgets:lecture-mode')") is True
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "lecture-mode-1280x720-filebrowser-open.png"))
    page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / "lecture-mode-1280x720-filebrowser-closed.png"))
    # Back, from the notebook's toolbar toggle.
    toggle = page.locator("[data-testid=aw-lecture-toggle]").first
    toggle.click()
    page.wait_for_timeout(500)
    assert page.evaluate(FONT_SIZES) == before
    # Live views: run the cells; lecture mode on switches the widgets' theme in Python too, and back.
    run_all(page, len(_cells()))
    page.locator(".aw-root").nth(len(VIEWS) - 1).wait_for(timeout=60_000)
    assert page.locator(".aw-saved-view").count() == 0
    toggle.click()
    nb = _Kernel(page)
    eventually(nb, "print(Out[2].theme, Out[3].theme)", "lecture lecture")  # the heatmap and model view, in Python
    assert page.evaluate(FONT_SIZES)["code"] == "18px"
    toggle.click()
    eventually(nb, "print(Out[2].theme, Out[3].theme)", "light light")
    assert page.evaluate(FONT_SIZES)["code"] == before["code"]


class _Kernel:
    """``python(code)`` in the current notebook's kernel (helpers.eventually's interface)."""

    def __init__(self, page: Any) -> None:
        self.page = page

    def python(self, code: str) -> str:
        from conftest import LabNotebook

        return LabNotebook(self.page, "").python(code)


def test_launcher_card_copies_the_tutorials_and_opens_notebook_05(lab_ext: Lab) -> None:
    page = open_saved(lab_ext, "", wait=False)  # the file browser, no notebook
    page.evaluate("() => window.jupyterapp.commands.execute('launcher:create')")
    card = page.locator(".jp-LauncherCard", has_text="attnwidgets tutorials")
    card.first.wait_for(timeout=30_000)
    card.first.click()
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget; return w && w.context && "
        "w.context.path === 'attnwidgets-tutorials/05_lecture_quick_start.ipynb'; }", timeout=60_000)
    copied = sorted(p.name for p in (lab_ext.root / "attnwidgets-tutorials").glob("*.ipynb"))
    assert "05_lecture_quick_start.ipynb" in copied and len(copied) >= 6, copied
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "launcher-opened-05.png"))
