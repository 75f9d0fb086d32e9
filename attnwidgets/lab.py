"""``attnwidgets lab``: JupyterLab on a copy of the tutorials, ready for a class.

The installed notebooks stay pristine: they are copied into a folder of the user's (``~/attnwidgets-tutorials`` by
default; files already there are kept, so a lecturer's edits survive a second launch, unless ``fresh``). JupyterLab
starts on loopback with its own settings folder inside that copy, so the "news" pop-up (which covers the bottom-right
corner of every widget) and the update check are off without touching the user's own JupyterLab settings.
``lecture=True`` opens notebook 05 with every view in the lecture theme (``ATTNWIDGETS_THEME=lecture``) and
JupyterLab in the extension's lecture mode from the start (``ATTNWIDGETS_LECTURE_LAB=1``, which the server part
reports: larger code, text and menus, a prompt column wide enough for ``[100]:``; the same mode as the View menu's
command, so its toggle turns all of it off and on again), with the file browser collapsed; the workspace goes in a
folder of the copy used only by lecture launches, so a plain ``attnwidgets lab`` afterwards looks as usual and the
user's own JupyterLab settings are never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LECTURE_ENV", "LECTURE_NOTEBOOK", "LabLaunch", "copy_tutorials", "prepare_lab", "tutorials_source"]

#: The notebook ``--lecture`` opens.
LECTURE_NOTEBOOK = "05_lecture_quick_start.ipynb"

#: What JupyterLab is told, in its own settings folder: no news, no update check.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}

#: Set in a lecture launch's server: the extension asks the server part (``GET /attnwidgets/lecture``) and starts in
#: lecture mode (js/src/lab/commands.ts LECTURE_FONTS: 18 px code, 20 px text, 16 px menus, a 92 px prompt column).
LECTURE_ENV = "ATTNWIDGETS_LECTURE_LAB"

#: The workspace a lecture launch starts from: the left side bar (file browser) collapsed, its tabs still there.
LECTURE_WORKSPACE = {
    "data": {"layout-restorer:data": {"left": {"collapsed": True, "visible": True, "widgets": []},
                                      "right": {"collapsed": True, "visible": True, "widgets": []}}},
    "metadata": {"id": "default"},
}

#: Its file name: what jupyterlab_server calls the workspace "default" (``slugify("default")``, a test checks it).
#: Each lecture launch writes it again, so every lecture starts with the side bar collapsed.
LECTURE_WORKSPACE_FILE = "default-37a8.jupyterlab-workspace"


#: What installs JupyterLab, nbconvert and nbclient, which ``attnwidgets lab`` and ``attnwidgets export`` run on (the
#: package's own dependencies do not include them).
LAB_INSTALL = 'pip install "attnwidgets[lab]"'


def require_lab(command: str, *modules: str) -> None:
    """Raise :class:`ModuleNotFoundError` naming ``command``, the missing ``modules`` and :data:`LAB_INSTALL` if any
    of ``modules`` cannot be imported.

    >>> require_lab("attnwidgets lab", "json")
    >>> try:
    ...     require_lab("attnwidgets lab", "no_such_module_here")
    ... except ModuleNotFoundError as exc:
    ...     print(exc)
    attnwidgets lab needs no_such_module_here, which the lab extra installs: pip install "attnwidgets[lab]"
    """
    import importlib.util

    missing = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules (blocked)
            found = False
        if not found:
            missing.append(name)
    if missing:
        raise ModuleNotFoundError(f"{command} needs {', '.join(missing)}, which the lab extra installs: {LAB_INSTALL}",
                                  name=missing[0])


def tutorials_source() -> Path:
    """The folder holding the tutorial notebooks: ``attnwidgets/tutorials`` in an installed wheel, the repository's
    ``notebooks/`` in a source checkout (an editable install)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "tutorials", here.parent / "notebooks"):
        if candidate.is_dir() and any(candidate.glob("*.ipynb")):
            return candidate
    raise FileNotFoundError("the tutorial notebooks are not installed with this copy of attnwidgets: reinstall it "
                            "(pip install --force-reinstall attnwidgets) or clone the repository and "
                            "pip install -e . there")


def copy_tutorials(target: Path, source: Path | None = None, *, fresh: bool = False) -> tuple[list[str], list[str]]:
    """Copy the tutorial notebooks into folder ``target`` (made if missing); a notebook already there is kept (a
    lecturer's edits survive) unless ``fresh``. Returns (copied, kept) file names. ``attnwidgets lab`` and the
    extension's Launcher card (:mod:`attnwidgets.server`) both copy with it."""
    source = tutorials_source() if source is None else source
    target.mkdir(parents=True, exist_ok=True)
    copied, kept = [], []
    for notebook in sorted(source.glob("*.ipynb")):
        dest = target / notebook.name
        if dest.exists() and not fresh:
            kept.append(notebook.name)
            continue
        shutil.copyfile(notebook, dest)
        copied.append(notebook.name)
    return copied, kept


@dataclass
class LabLaunch:
    """What :func:`prepare_lab` set up: the folder, the notebooks copied (and kept), and the command and environment
    that start JupyterLab there."""

    folder: Path
    copied: list[str]
    kept: list[str]
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)


def prepare_lab(folder: str | Path | None = None, *, lecture: bool = False, fresh: bool = False,
                port: int | None = None, browser: bool = True) -> LabLaunch:
    """Copy the tutorials into ``folder`` and build the JupyterLab command (nothing is started).

    Examples
    --------
    >>> import tempfile
    >>> launch = prepare_lab(tempfile.mkdtemp(), lecture=True, browser=False)
    >>> sorted(launch.copied)[:2], launch.env["ATTNWIDGETS_THEME"], launch.command[-1]
    (['01_attention_is_all_you_need.ipynb', '02_bert.ipynb'], 'lecture', '05_lecture_quick_start.ipynb')
    >>> len(prepare_lab(launch.folder, browser=False).kept) == len(launch.copied)   # a second launch keeps edits
    True
    """
    require_lab("attnwidgets lab", "jupyterlab")
    source = tutorials_source()
    target = Path(folder).expanduser() if folder is not None else Path.home() / "attnwidgets-tutorials"
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{target} exists and is not a folder: give --dir another place for the tutorials")
    copied, kept = copy_tutorials(target, source, fresh=fresh)
    # Lecture launches have settings of their own: a plain launch afterwards is not enlarged.
    settings = target / (".jupyterlab-settings-lecture" if lecture else ".jupyterlab-settings")
    written = dict(LAB_SETTINGS)
    for name, values in written.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values, indent=2))
    command = [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={target}", "--ServerApp.ip=127.0.0.1",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if port is not None:
        command.append(f"--port={port}")
    if not browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # containers: JupyterLab refuses root without it
    env = {"JUPYTERLAB_SETTINGS_DIR": str(settings)}
    if lecture:
        env["ATTNWIDGETS_THEME"] = "lecture"
        env[LECTURE_ENV] = "1"
        workspaces = target / ".jupyterlab-workspaces-lecture"
        workspaces.mkdir(exist_ok=True)
        (workspaces / LECTURE_WORKSPACE_FILE).write_text(json.dumps(LECTURE_WORKSPACE, indent=2))
        command.append(f"--LabApp.workspaces_dir={workspaces}")
        command.append(LECTURE_NOTEBOOK)  # a path relative to root_dir: JupyterLab opens it
    return LabLaunch(target, copied, kept, command, env)
