"""``attnwidgets lab``: the tutorials copied into a user folder (edits kept), JupyterLab started there offline with the
news pop-up off, ``--lecture`` opening notebook 05 in the lecture theme. One test really starts JupyterLab."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from attnwidgets import cli
from attnwidgets.lab import LECTURE_NOTEBOOK, prepare_lab, tutorials_source

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def test_the_copy_has_every_tutorial_and_keeps_edits_unless_fresh(tmp_path):
    assert tutorials_source().samefile(ROOT / "notebooks")  # a source checkout reads notebooks/
    launch = prepare_lab(tmp_path / "t", browser=False)
    assert sorted(launch.copied) == TUTORIALS and len(TUTORIALS) >= 6 and launch.kept == []
    edited = tmp_path / "t" / TUTORIALS[0]
    edited.write_text("my edits")
    again = prepare_lab(tmp_path / "t", browser=False)
    assert again.copied == [] and sorted(again.kept) == TUTORIALS
    assert edited.read_text() == "my edits"                       # the lecturer's notes survive a relaunch
    prepare_lab(tmp_path / "t", browser=False, fresh=True)
    assert edited.read_bytes() == (ROOT / "notebooks" / TUTORIALS[0]).read_bytes()


def test_news_and_update_check_are_off_in_the_copy_s_own_settings(tmp_path):
    launch = prepare_lab(tmp_path, browser=False, port=8899)
    settings = Path(launch.env["JUPYTERLAB_SETTINGS_DIR"])
    assert settings.parent == tmp_path                            # not the user's own JupyterLab settings
    notification = json.loads((settings / "@jupyterlab/apputils-extension/notification.jupyterlab-settings")
                              .read_text())
    assert notification == {"fetchNews": "false", "checkForUpdates": False}
    cmd = " ".join(launch.command)
    assert "--ServerApp.ip=127.0.0.1" in cmd and "NeverCheckForUpdate" in cmd and "--no-browser" in cmd
    assert "--port=8899" in cmd and "ATTNWIDGETS_THEME" not in launch.env and LECTURE_NOTEBOOK not in cmd


def test_lecture_opens_notebook_05_in_the_lecture_theme(tmp_path, capsys):
    assert cli.main(["lab", "--dir", str(tmp_path), "--lecture", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"{len(TUTORIALS)} copied" in out and "ATTNWIDGETS_THEME=lecture" in out
    assert out.strip().endswith(LECTURE_NOTEBOOK) and (tmp_path / LECTURE_NOTEBOOK).is_file()


def test_lecture_enlarges_jupyterlab_in_settings_of_its_own(tmp_path, monkeypatch):
    from jupyterlab_server.workspaces_handler import slugify

    from attnwidgets.lab import LECTURE_ENV, LECTURE_WORKSPACE_FILE
    from attnwidgets.server import lecture_launch

    plain = Path(prepare_lab(tmp_path, browser=False).env["JUPYTERLAB_SETTINGS_DIR"])
    launch = prepare_lab(tmp_path, lecture=True, browser=False)
    settings = Path(launch.env["JUPYTERLAB_SETTINGS_DIR"])
    assert settings != plain and settings.parent == plain.parent == tmp_path  # a plain launch stays plain
    # JupyterLab is enlarged by the extension's lecture mode, which the server part reports for this launch only
    assert launch.env[LECTURE_ENV] == "1" and LECTURE_ENV not in prepare_lab(tmp_path, browser=False).env
    monkeypatch.setitem(os.environ, LECTURE_ENV, launch.env[LECTURE_ENV])
    assert lecture_launch()
    monkeypatch.delitem(os.environ, LECTURE_ENV)
    assert not lecture_launch()
    # The workspace file is the one JupyterLab reads for "default", kept in the copy, not in ~/.jupyter.
    assert LECTURE_WORKSPACE_FILE == slugify("default") + ".jupyterlab-workspace"
    flag = next(c for c in launch.command if c.startswith("--LabApp.workspaces_dir="))
    workspace = json.loads((Path(flag.split("=", 1)[1]) / LECTURE_WORKSPACE_FILE).read_text())
    assert workspace["data"]["layout-restorer:data"]["left"]["collapsed"] is True
    assert Path(flag.split("=", 1)[1]).parent == tmp_path


def test_a_file_where_the_folder_should_be_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    assert cli.main(["lab", "--dir", str(tmp_path / "f"), "--dry-run"]) == 1
    assert "is not a folder" in capsys.readouterr().err


def test_without_jupyterlab_it_says_which_extra_to_install_and_copies_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "jupyterlab", None)  # as on `pip install attnwidgets` without the lab extra
    assert cli.main(["lab", "--dir", str(tmp_path / "t"), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "attnwidgets lab needs jupyterlab" in err and 'pip install "attnwidgets[lab]"' in err
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(("value", "theme", "warns"), [("lecture", "lecture", False), ("", "light", False),
                                                       ("neon", "light", True)])
def test_theme_from_the_environment(value, theme, warns):
    code = "import warnings; warnings.simplefilter('always'); import attnwidgets as aw; " \
           "from attnwidgets.viewdata.theme import current_theme; print(current_theme())"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "ATTNWIDGETS_THEME": value})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == theme
    assert ("is not a theme" in run.stderr) == warns


@pytest.mark.slow
def test_jupyterlab_answers_and_lists_the_tutorials(tmp_path):
    """The README's first command ends with `attnwidgets lab`: it must start a JupyterLab that lists the tutorials
    and serves our settings (news off)."""
    import signal
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    log = tmp_path / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "attnwidgets", "lab", "--dir", str(tmp_path / "t"),
                                 "--no-browser", "--port", str(port)], stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)  # its own process group: JupyterLab, its child, goes too
    try:
        token = None
        deadline = time.monotonic() + 120
        while token is None and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            found = re.search(rf"127\.0\.0\.1:{port}/lab\?token=(\w+)", log.read_text())
            token = found.group(1) if found else None
            time.sleep(0.5)
        assert token, log.read_text()[-3000:]

        def get(path: str) -> bytes:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}?token={token}", timeout=30) as r:
                assert r.status == 200
                return r.read()

        assert b"JupyterLab" in get("/lab")
        listed = sorted(c["name"] for c in json.loads(get("/api/contents"))["content"] if c["type"] == "notebook")
        assert listed == TUTORIALS
        notification = json.loads(get("/lab/api/settings/@jupyterlab/apputils-extension:notification"))
        assert notification["settings"]["fetchNews"] == "false"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # terminate() alone left the JupyterLab child serving after the test
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
