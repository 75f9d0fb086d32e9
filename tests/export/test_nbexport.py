"""``attnwidgets export``: a notebook with views as one HTML page showing every view offline (attnwidgets/nbexport.py).

The export runs in a subprocess whose Python (and the kernel it starts, which inherits the environment) can open no
socket except to the loopback address: the network is blocked the whole time, as on a machine offline.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "<img src=x onerror=alert(1)>"

# Any connection to a non-loopback address fails, in this process and in every Python it starts (the kernel).
BLOCK_NETWORK = '''
import socket
_connect = socket.socket.connect
def _loopback_only(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost") and self.family != socket.AF_UNIX:
        raise OSError(f"network blocked by the test: {address!r}")
    return _connect(self, address)
socket.socket.connect = _loopback_only
'''

CELLS = [
    ("markdown", "# A notebook with views\n\nText before the views."),
    ("code", "import numpy as np\nimport attnwidgets as aw\n"
             f"r = aw.AttentionResult.from_arrays(np.full((2, 3, 3, 3), 1 / 3, dtype=np.float32), "
             f"[{HOSTILE!r}, 'cat', 'sat'])"),
    ("code", "aw.AttentionHeatmap(r, layer=1, head=2)"),
    ("code", "aw.ModelView(r)"),
    ("code", "import ipywidgets\nipywidgets.IntSlider(value=3, description='plain')"),
    ("code", "r"),
]


def make_notebook(path: Path, cells=CELLS) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "markdown" else nbformat.v4.new_code_cell(src)
                for kind, src in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def run_cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    guard = tmp_path / "offline"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(BLOCK_NETWORK, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(guard)]),
           "ATTNWIDGETS_STATIC_FALLBACK": "0",  # the export turns the pictures on in its kernel itself
           "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "attnwidgets", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)


def _export(tmp: Path, *flags: str) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    nb = make_notebook(tmp / "views.ipynb")
    before = nb.read_bytes()
    done = run_cli(["export", str(nb), "-o", str(tmp / "out" / "page.html"), *flags], tmp)
    assert done.returncode == 0, done.stderr
    assert nb.read_bytes() == before, "the notebook file was changed"
    return nb, tmp / "out" / "page.html", done


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """The notebook exported with --pictures: every view as its picture (the page before issue 32 §4)."""
    return _export(tmp_path_factory.mktemp("export"), "--pictures")


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """The notebook exported as by default: every view live from its saved state."""
    return _export(tmp_path_factory.mktemp("live"))


def test_the_network_guard_blocks_the_network(tmp_path):
    code = ("import socket\ntry:\n    socket.create_connection(('93.184.216.34', 80), timeout=2)\n"
            "except OSError as e:\n    print('blocked' if 'blocked by the test' in str(e) else 'other')")
    guard = tmp_path / "offline"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(BLOCK_NETWORK, encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(guard)}, timeout=60)
    assert out.stdout.strip() == "blocked"


def test_every_view_shows_its_picture_and_nothing_loads_from_the_network(exported):
    _, page, done = exported
    html = page.read_text(encoding="utf-8")
    # no script, stylesheet or image from anywhere but the page itself
    assert not re.search(r"<script[^>]*\ssrc=", html), "a script is loaded from outside the page"
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "something is loaded over the network"
    assert "application/vnd.jupyter.widget-view+json" not in html and "jupyter-widgets" not in html
    pngs = re.findall(r'<img[^>]*src="data:image/png;base64,([A-Za-z0-9+/=\s]+)"', html)
    assert len(pngs) == 2, f"{len(pngs)} pictures for the heatmap and the model view"
    for b64 in pngs:
        assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote " in done.stdout and "3 views, 0 live, 2 as their picture, 1 as text" in done.stdout
    assert "page_views" not in html and "aw-saved" not in html, "a pictures page carries no script of ours"


def test_the_live_page_carries_each_state_once_and_one_script_of_views(live):
    _, page, done = live
    html = page.read_text(encoding="utf-8")
    assert "3 views, 2 live, 0 as their picture, 1 as text" in done.stdout
    assert not re.search(r"<script[^>]*\ssrc=", html) and not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert html.count('class="aw-saved"') == 2
    blocks = re.findall(r'<script type="application/json" id="aw-view-(\d+)">', html)
    assert blocks == ["0", "1"], "each view's state once"
    nonce = re.search(r"script-src 'nonce-([\w-]+)'", html)
    assert nonce, "the page's policy lets only its own scripts run"
    runnable = re.findall(r"<script(?![^>]*application/json)([^>]*)>", html)
    assert runnable == [f' nonce="{nonce.group(1)}"'], "one script of views, with the page's nonce, no other"
    assert html.index("Content-Security-Policy") < html.index("<script"), "the policy comes before any script"
    # the picture stays in the page (shown until the view is drawn, or if it cannot be), its text as the alt text
    assert len(re.findall(r'<img alt="AttentionHeatmap · arrays[^"]*" src="data:image/png;base64,', html)) == 1
    assert HOSTILE not in html


def test_the_two_names_of_the_view_mime_type_agree():
    from attnwidgets import nbexport, view_mime

    assert view_mime.VIEW_MIME == nbexport.VIEW_MIME


def test_a_view_over_its_budget_keeps_its_picture_and_says_why():
    from attnwidgets.nbexport import VIEW_MIME, WIDGET_MIME, static_views, to_html

    png = "iVBORw0KGgo="
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("aw.AttentionHeatmap(r)")
    why = "this AttentionHeatmap is about 9.0 MB saved, over the 5.0 MB budget"
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        WIDGET_MIME: {"model_id": "x"}, "image/png": png, "text/plain": "AttentionHeatmap · demo",
        VIEW_MIME: {"version": 1, "widget": "AttentionHeatmap", "bundle": "heatmap", "omitted": why}})]
    nb.cells = [cell]
    stats, saved = static_views(nb, live=True)
    assert (stats.views, stats.live, stats.pictures, stats.omitted) == (1, 0, 1, [why])
    html = to_html(nb, "t", saved)
    assert f"Shown as a picture: {why}" in html and f'src="data:image/png;base64,{png}"' in html
    assert 'class="aw-live"' not in html


def test_the_export_kernel_gives_every_view_time_to_save_all_of_itself(monkeypatch):
    import numpy as np

    import attnwidgets as aw
    from attnwidgets.nbexport import EXPORT_SECONDS
    from attnwidgets.view_mime import view_state

    view = aw.AttentionHeatmap(aw.AttentionResult.from_arrays(np.full((2, 3, 4, 4), 0.25, np.float32), list("abcd")))
    monkeypatch.setenv("ATTNWIDGETS_VIEW_SECONDS", "0")  # as a busy machine: no time for every head
    assert view_state(view)["scope"] == "view"
    monkeypatch.setenv("ATTNWIDGETS_VIEW_SECONDS", str(EXPORT_SECONDS))  # what the export's kernel gets
    assert view_state(view)["scope"] == "all"


def test_trust_keeps_ones_own_html_and_scripts_and_still_loads_nothing_remote():
    from attnwidgets.nbexport import page_of

    def notebook():
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("x")
        cell.outputs = [nbformat.v4.new_output("display_data", data={
            "text/html": "<b onclick='go()'>mine</b><script>window.mine = 1</script>", "text/plain": "b"})]
        nb.cells = [nbformat.v4.new_markdown_cell("<i onmouseover='x()'>hover</i>"), cell]
        return nb

    kept, _ = page_of(notebook(), "t", trust=True)
    assert "<script>window.mine = 1</script>" in kept and 'onclick="go()"' in kept and "onmouseover" in kept
    assert "script-src 'unsafe-inline'" in kept and "default-src 'none'" in kept and "connect-src 'none'" in kept
    clean, _ = page_of(notebook(), "t")
    assert "window.mine" not in clean and "onclick" not in clean and "onmouseover" not in clean
    assert "'unsafe-inline'" not in clean.split("script-src", 1)[1].split(";", 1)[0]


def test_matplotlib_figures_stay_pictures_whatever_backend_the_shell_set(tmp_path):
    # run_cli sets MPLBACKEND=Agg, as CI jobs do: the kernel still draws its figures inline
    nb = make_notebook(tmp_path / "fig.ipynb", [
        ("code", "import matplotlib.pyplot as plt\nplt.plot([1, 0])\nplt.show()"),
        ("code", "fig, ax = plt.subplots(figsize=(2, 1))\nax.plot([0, 1])\ndisplay(fig)\nplt.close(fig)")])
    done = run_cli(["export", str(nb)], tmp_path)
    assert done.returncode == 0, done.stderr
    html = nb.with_suffix(".html").read_text(encoding="utf-8")
    assert len(re.findall(r'<img[^>]*src="data:image/png;base64,', html)) == 2 and "<Figure size" not in html


def test_export_folder_writes_a_page_per_executed_notebook(tmp_path):
    from attnwidgets.nbexport import export_folder

    src = tmp_path / "executed"
    src.mkdir()
    for name in ("b", "a"):
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("1")
        cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": f"result {name}"},
                                               execution_count=1)]
        nb.cells = [nbformat.v4.new_markdown_cell(f"# {name}"), cell]
        nbformat.write(nb, src / f"{name}.ipynb")
    done = export_folder(src, tmp_path / "pages")
    assert [p.name for p, _ in done] == ["a.html", "b.html"]
    assert "result a" in (tmp_path / "pages" / "a.html").read_text(encoding="utf-8")
