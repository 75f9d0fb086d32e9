"""``attnwidgets lab --lecture`` enlarges JupyterLab itself, not only the widgets (issue 24 §2): in a 1280 x 720
window, a markdown cell's text and a code cell's code are at least 18 px, the menus at least 16 px, and the file
browser is collapsed. Before, the same launch showed JupyterLab's defaults (14 px text, 13 px code, file browser open
over a fifth of the screen)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import ARTIFACTS, free_port

from attnwidgets.lab import LECTURE_NOTEBOOK

FONT_SIZE = "(e) => parseFloat(getComputedStyle(e).fontSize)"


def _start(folder: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """``attnwidgets lab --lecture`` in its own process group (JupyterLab, its child, ends with it), and the URL of
    notebook 05 with the token it printed (what the browser it opens would be sent to)."""
    port = free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(folder.parent / "runtime"), "HF_HUB_OFFLINE": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "attnwidgets", "lab", "--lecture", "--dir", str(folder),
                                 "--no-browser", "--port", str(port)], stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-3000:]
        found = re.search(rf"127\.0\.0\.1:{port}/lab\S*\?token=(\w+)", log.read_text())
        if found:
            return proc, f"http://127.0.0.1:{port}/lab/tree/{LECTURE_NOTEBOOK}?token={found.group(1)}"
        time.sleep(0.5)
    _stop(proc)
    raise AssertionError(f"no URL printed in 120 s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def test_lecture_launch_enlarges_jupyterlab(tmp_path, browser):
    proc, url = _start(tmp_path / "tutorials", tmp_path / "lab.log")
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.goto(url, wait_until="domcontentloaded")
        markdown = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown p").first
        markdown.wait_for(state="visible", timeout=90_000)
        code = page.locator(".jp-CodeCell .jp-InputArea-editor .cm-content").first
        code.wait_for(state="visible", timeout=30_000)
        page.wait_for_function("() => document.documentElement.dataset.awLecture === '1'", timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "lecture_lab.png"))
        sizes = {"markdown": markdown.evaluate(FONT_SIZE), "code": code.evaluate(FONT_SIZE),
                 "menu": page.locator(".lm-MenuBar-itemLabel").first.evaluate(FONT_SIZE)}
        assert sizes["markdown"] >= 18 and sizes["code"] >= 18 and sizes["menu"] >= 16, sizes
        # The extension's lecture mode, on from the start: the prompt column fits "[100]:", and the toggle turns
        # JupyterLab back to its own sizes (the theme overrides a lecture launch used to set could not be turned off).
        prompt = page.locator(".jp-InputPrompt").first.evaluate("(e) => e.getBoundingClientRect().width")
        assert prompt >= 90, prompt
        page.locator("[data-testid=aw-lecture-toggle]").first.click()  # the notebook toolbar's toggle: off
        page.wait_for_function("() => document.documentElement.dataset.awLecture === undefined", timeout=10_000)
        assert code.evaluate(FONT_SIZE) < 18 and markdown.evaluate(FONT_SIZE) < 18, "lecture mode off: JupyterLab's own"
        assert not page.locator("#filebrowser").is_visible(), "the file browser should start collapsed"
        assert page.locator(".jp-SideBar.jp-mod-left").is_visible()  # its tab is still there to open it
    finally:
        context.close()
        _stop(proc)
    # A plain launch of the same copy afterwards is not enlarged: the lecture settings live in their own folder.
    assert "themes" not in " ".join(p.name for p in (tmp_path / "tutorials" / ".jupyterlab-settings").rglob("*"))
