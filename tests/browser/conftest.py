"""JupyterLab in headless Chromium, driven by Playwright: where users meet the widgets.

One JupyterLab server and one Chromium per test session. ``lab.open(cells)`` writes a notebook, opens it, runs every
cell and returns a :class:`LabNotebook`, whose ``python(code)`` runs code in the same kernel and returns what it
printed, so a test can click in the page and then read the Python trait. Screenshots go to ``test-artifacts/``.
``notebook7`` is the same for Jupyter Notebook 7 (its own server, started only by the tests that ask for it);
``helpers.serve`` starts any other host (marimo) with the same bounded wait and clean stop.

``lab.open(cells)`` runs ``cells`` in the page and kernel of the previous ``lab.open`` of any test file (after a
reset, and never across a failed test) instead of a fresh page and kernel (see :meth:`Lab.open`): the browser tier
then pays JupyterLab's page load, the kernel's imports and the model loads a few times instead of once per test.
``reuse=False`` asks for a fresh page and kernel.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ARTIFACTS, free_port, serve

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


_FAILURES = [0]  # tests of the browser tier failed so far: a ``reuse=True`` open never reuses across a failure


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    report = yield
    if report.failed:
        _FAILURES[0] += 1
    return report


# What a reused kernel forgets between two opens: the widgets (their comms, and attnwidgets' _LIVE), the theme a
# test set with aw.set_theme and the dense budget of aw.runner.set_dense_budget (both back to what a fresh kernel
# starts with), and every name of the namespace. Imported modules stay, and with them attnwidgets' loaded models and
# cached results: that is what reuse saves. Other global settings a test changes it must undo itself.
RESET_KERNEL = """
import os as _os, sys as _sys
if "ipywidgets" in _sys.modules:
    _sys.modules["ipywidgets"].Widget.close_all()
if "attnwidgets.viewdata.theme" in _sys.modules:
    _theme = _sys.modules["attnwidgets.viewdata.theme"]
    _theme.use_theme(_theme._from_environment())
if "attnwidgets.attention_stack" in _sys.modules:
    _stack = _sys.modules["attnwidgets.attention_stack"]
    _stack.set_dense_budget(int(_os.environ.get("ATTNWIDGETS_DENSE_BUDGET", _stack._DEFAULT_BUDGET)))
get_ipython().run_line_magic("reset", "-f")
"""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("chromium is not installed: `apt-get install -y chromium` (.ci/run does this)")
    return path


class LabNotebook:
    """An open notebook in JupyterLab."""

    def __init__(self, page: Any, name: str) -> None:
        self.page = page
        self.name = name

    def python(self, code: str, timeout: float = 60) -> str:
        """Run ``code`` in the notebook's kernel and return its stdout (raises with the traceback on error)."""
        result = self.page.evaluate(
            """async ([code, timeout]) => {
                const panel = window.jupyterapp.shell.currentWidget;
                const kernel = panel.sessionContext.session.kernel;
                const future = kernel.requestExecute({ code, store_history: false });
                let out = "", err = "";
                future.onIOPub = (msg) => {
                    const t = msg.header.msg_type;
                    if (t === "stream") out += msg.content.text;
                    else if (t === "error") err += msg.content.ename + ": " + msg.content.evalue;
                };
                await Promise.race([future.done, new Promise((_, r) => setTimeout(() => r(new Error("timeout")),
                    timeout * 1000))]);
                return { out, err };
            }""",
            [code, timeout],
        )
        if result["err"]:
            raise AssertionError(f"kernel error running {code!r}: {result['err']}")
        return str(result["out"])

    def widget(self, index: int = 0) -> Any:
        """The ``index``-th rendered anywidget root (``.aw-root``) in the notebook."""
        loc = self.page.locator(".aw-root").nth(index)
        loc.wait_for(state="visible", timeout=60_000)
        return loc

    def screenshot(self, name: str, locator: Any = None) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        (locator or self.page).screenshot(path=str(path))
        return path

    def errors(self) -> list[str]:
        return list(self.page.context._aw_errors)


class Lab:
    """A Jupyter server whose front end is JupyterLab (``tree="lab/tree"``) or Notebook 7 (``tree="notebooks"``)."""

    def __init__(self, url: str, root: Path, browser: Any, tree: str = "lab/tree") -> None:
        self.url = url
        self.root = root
        self.browser = browser
        self.tree = tree
        self.count = 0
        # The notebook open now, if a ``reuse=True`` open made it: (its key, the failures then, the notebook).
        self._reusable: tuple[str, int, LabNotebook] | None = None

    def shutdown_kernels(self) -> None:
        """End the kernels of the notebooks opened before: closing their page leaves them running, each holding
        torch and a model (the browser tier opens about a hundred notebooks on one server)."""
        with urllib.request.urlopen(f"{self.url}/api/sessions", timeout=30) as answer:
            sessions = json.loads(answer.read())
        for session in sessions:
            request = urllib.request.Request(f"{self.url}/api/sessions/{session['id']}", method="DELETE")
            with urllib.request.urlopen(request, timeout=60):
                pass

    def open(self, cells: list[str], *, name: str | None = None, viewport: tuple[int, int] = (1400, 1000),
             timeout: float = 120, reuse: bool | str = True) -> LabNotebook:
        """Write a notebook with ``cells``, open it in a fresh page, run all cells and wait until the kernel idles.

        ``reuse=True`` (the default): if the notebook open now was opened with ``reuse=True`` (by any test: a
        string names a group of its own) and no test failed since, put ``cells`` in its place instead (the old cells
        and their outputs go, the page gets ``viewport``, its error list starts empty) and run them in the same
        kernel, after :data:`RESET_KERNEL` (widgets closed, default theme, empty namespace; imports, models and
        cached results stay). Otherwise, as ``reuse=False``: a fresh page and kernel. ``name`` then names only a
        fresh notebook. A test that needs what a fresh kernel has that this does not (a module not imported yet,
        environment variables read at import, a clean ``sys.modules``) passes ``reuse=False``. Each fresh open costs
        a kernel's imports and a JupyterLab page load (8-19 s of CPU here): sharing one kernel across the browser
        tier's files is most of its time."""
        key = (reuse if isinstance(reuse, str) else "shared") if reuse else None
        if key is not None and self._reusable is not None:
            old_key, failures, old = self._reusable
            if old_key == key and failures == _FAILURES[0] and not old.page.is_closed():
                return self._rerun(old, cells, viewport=viewport, timeout=timeout)
        self.count += 1
        name = name or f"nb{self.count}.ipynb"
        nb = {
            "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c}
                      for c in cells],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5,
        }
        (self.root / name).write_text(json.dumps(nb))
        opened = self.run(name, len(cells), viewport=viewport, timeout=timeout)
        if key is not None:
            self._reusable = (key, _FAILURES[0], opened)
        return opened

    def _rerun(self, nb: LabNotebook, cells: list[str], *, viewport: tuple[int, int],
               timeout: float) -> LabNotebook:
        """Replace the cells of the open notebook ``nb`` with ``cells`` and run them in its kernel (``reuse=True``)."""
        page = nb.page
        page.context._aw_errors.clear()
        page.mouse.move(0, 0)  # no hover left over from the last test on what the new cells draw
        page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
        page.evaluate(
            """(cells) => {
                const model = window.jupyterapp.shell.currentWidget.content.model.sharedModel;
                model.transact(() => {
                    model.deleteCellRange(0, model.cells.length);
                    model.insertCells(0, cells.map(source => ({ cell_type: "code", source, metadata: {} })));
                });
            }""",
            cells,
        )
        nb.python(RESET_KERNEL)
        return self._run_all(page, nb.name, len(cells), time.time() + timeout)

    def open_notebook(self, path: Path, *, viewport: tuple[int, int] = (1400, 1000), timeout: float = 600,
                      before: str | None = None, init_script: str | None = None,
                      commands: tuple[str, ...] = ()) -> LabNotebook:
        """Copy the notebook file ``path`` (markdown, hidden answers and all) into the server's root, open it in a
        fresh page and run all its cells in order, as a user's Run All does (after ``before``, ``init_script`` and
        ``commands``, see :meth:`run`)."""
        self.count += 1
        shutil.copy(path, self.root / path.name)
        return self.run(path.name, len(json.loads(path.read_text(encoding="utf-8"))["cells"]), viewport=viewport,
                        timeout=timeout, before=before, init_script=init_script, commands=commands)

    def run(self, name: str, n_cells: int, *, viewport: tuple[int, int] = (1400, 1000), timeout: float = 120,
            before: str | None = None, init_script: str | None = None, commands: tuple[str, ...] = ()
            ) -> LabNotebook:
        """Open notebook ``name`` (``n_cells`` cells, in the server's root) in a fresh page, run all its cells and
        wait until every code cell ran and the kernel idles; raise with the traceback if a cell raised. ``before``:
        code run in the kernel once it is idle, before the cells (no cell of the notebook shows it);
        ``init_script``: JavaScript the page runs before its own; ``commands``: JupyterLab commands run before the
        cells (``"attnwidgets:lecture-mode"``: the extension's lecture mode)."""
        self._reusable = None
        for old in self.browser.contexts:  # one notebook page at a time keeps memory and focus simple
            old.close()
        self.shutdown_kernels()
        context = self.browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        context._aw_errors = []
        if init_script:
            context.add_init_script(init_script)
        page = context.new_page()
        page.on("pageerror", lambda e: context._aw_errors.append(str(e)))
        page.on("dialog", lambda d: (context._aw_errors.append(f"dialog: {d.message}"), d.dismiss()))
        reset = "?reset" if self.tree == "lab/tree" else ""  # Lab: forget the last session's layout
        page.goto(f"{self.url}/{self.tree}/{name}{reset}", wait_until="domcontentloaded")
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.shell.currentWidget && "
            "window.jupyterapp.shell.currentWidget.sessionContext && "
            "window.jupyterapp.shell.currentWidget.sessionContext.session && "
            "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel && "
            "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
            timeout=timeout * 1000,
        )
        if before:
            LabNotebook(page, name).python(before)
        for command in commands:
            page.evaluate("(c) => window.jupyterapp.commands.execute(c)", command)
        return self._run_all(page, name, n_cells, time.time() + timeout)

    def _run_all(self, page: Any, name: str, n_cells: int, deadline: float) -> LabNotebook:
        """Run All in the open notebook; wait until every code cell ran and the kernel idles (see :meth:`run`)."""
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        # Wait for every code cell to have an execution count (run) and the kernel to be idle again.
        page.wait_for_function(
            f"""() => {{
                const nb = window.jupyterapp.shell.currentWidget.content;
                const cells = nb.widgets;
                const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
                const code = cells.filter(c => c.model.type === 'code');
                // A cell that raised stops Run All: the cells after it never get a count, so stop waiting then.
                const raised = code.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));
                return cells.length === {n_cells} && k.status === 'idle' &&
                    (raised || code.every(c => c.model.executionCount));
            }}""",
            timeout=max(1, deadline - time.time()) * 1000,
            polling=500,
        )
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
        if tracebacks:
            raise AssertionError("a cell raised:\n" + "\n".join(tracebacks))
        return LabNotebook(page, name)


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Any]:
    """One headless Chromium for the whole session (Playwright's sync API allows one driver per thread)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


#: This tree's build of the JupyterLab extension (``cd js && npm run build``), when there is one.
LAB_EXTENSION = Path(__file__).resolve().parents[2] / "attnwidgets" / "labextension"


def _jupyter(app: str, tmp_path_factory: pytest.TempPathFactory, browser: Any, tree: str,
             env: dict[str, str] | None = None) -> Iterator[Lab]:
    """A Jupyter server with ``app``'s front end (``lab`` or ``notebook``), no token, in a fresh root folder, with
    ``env`` added to its environment (and its kernels'). It loads this tree's build of the JupyterLab extension
    (:data:`LAB_EXTENSION`, found first on ``JUPYTER_PATH``) where there is one, not the copy an earlier install put
    in the environment's share/jupyter, so a test sees the extension as built from the code it tests."""
    root = tmp_path_factory.mktemp(app)
    settings = tmp_path_factory.mktemp(f"{app}-settings")
    notif = settings / "@jupyterlab" / "apputils-extension"
    notif.mkdir(parents=True)
    (notif / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    port = free_port()
    app_class = "LabApp" if app == "lab" else "JupyterNotebookApp"
    # The kernels draw figures as a user's do (ipykernel's inline backend): CI exports MPLBACKEND=Agg for its own
    # processes, and a kernel that inherited it showed no figure of a notebook without `%matplotlib inline` (01's).
    env = {"JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTER_RUNTIME_DIR": str(tmp_path_factory.mktemp("runtime")),
           "MPLBACKEND": "module://matplotlib_inline.backend_inline", **(env or {})}
    if (LAB_EXTENSION / "package.json").exists():
        share = tmp_path_factory.mktemp(f"{app}-share")
        (share / "labextensions").mkdir()
        (share / "labextensions" / "attnwidgets").symlink_to(LAB_EXTENSION)
        env["JUPYTER_PATH"] = os.pathsep.join(p for p in [str(share), os.environ.get("JUPYTER_PATH", "")] if p)
    cmd = [sys.executable, "-m", "jupyter", app, "--no-browser", f"--port={port}", "--ServerApp.token=",
           "--ServerApp.password=", "--ServerApp.ip=127.0.0.1", "--allow-root", f"--ServerApp.root_dir={root}",
           f"--{app_class}.expose_app_in_browser=True", "--ServerApp.disable_check_xsrf=True"]
    url = f"http://127.0.0.1:{port}"
    with serve(cmd, f"{url}/api/status", tmp_path_factory.mktemp(f"{app}log"), env=env):
        yield Lab(url, root, browser, tree)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Lab]:
    yield from _jupyter("lab", tmp_path_factory, browser, "lab/tree")


@pytest.fixture(scope="session")
def lecture_lab(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Lab]:
    """JupyterLab whose kernels draw in the lecture theme (``ATTNWIDGETS_THEME=lecture``, as ``attnwidgets lab
    --lecture`` starts them); open a notebook with ``commands=("attnwidgets:lecture-mode",)`` for JupyterLab's own
    lecture fonts."""
    yield from _jupyter("lab", tmp_path_factory, browser, "lab/tree", {"ATTNWIDGETS_THEME": "lecture"})


@pytest.fixture(scope="session")
def notebook7(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Lab]:
    """Jupyter Notebook 7 (one notebook per page, the classic interface's successor); same API as ``lab``."""
    yield from _jupyter("notebook", tmp_path_factory, browser, "notebooks")
