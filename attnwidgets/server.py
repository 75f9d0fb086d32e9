"""The extension's server part: one endpoint, ``POST <base_url>/attnwidgets/tutorials``, behind JupyterLab's Launcher
card "attnwidgets tutorials". It copies the tutorials into ``attnwidgets-tutorials/`` under the server's root folder,
as ``attnwidgets lab`` does (:func:`attnwidgets.lab.copy_tutorials`: a notebook already there is kept), and answers
with the path of notebook 05 for the page to open.

Enabled by ``etc/jupyter/jupyter_server_config.d/attnwidgets.json``, which the wheel installs (or
``--ServerApp.jpserver_extensions=attnwidgets.server=True``). It imports nothing of ours but :mod:`lab`, and
Jupyter Server only inside the functions the server calls, so importing attnwidgets never needs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .lab import LECTURE_NOTEBOOK, copy_tutorials

__all__ = ["FOLDER", "copy_into"]

#: Where under the server's root folder the Launcher card copies the tutorials.
FOLDER = "attnwidgets-tutorials"


def copy_into(root: str | Path) -> dict[str, Any]:
    """Copy the tutorials into ``root``/:data:`FOLDER` and say what happened and what to open (paths relative to
    ``root``, as the page's contents API names them).

    >>> import tempfile
    >>> answer = copy_into(tempfile.mkdtemp())
    >>> answer["open"], len(answer["copied"]) > 5, answer["kept"]
    ('attnwidgets-tutorials/05_lecture_quick_start.ipynb', True, [])
    """
    copied, kept = copy_tutorials(Path(root) / FOLDER)
    return {"folder": FOLDER, "open": f"{FOLDER}/{LECTURE_NOTEBOOK}", "copied": copied, "kept": kept}


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "attnwidgets.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.base.handlers import APIHandler
    from jupyter_server.utils import url_path_join
    from tornado import web

    root = serverapp.root_dir

    class TutorialsHandler(APIHandler):  # type: ignore[misc]
        @web.authenticated
        def post(self) -> None:
            try:
                answer = copy_into(root)
            except OSError as exc:  # a read-only root: the page shows why
                self.set_status(500)
                answer = {"error": f"could not copy the tutorials into {FOLDER}/: {exc}"}
            self.finish(json.dumps(answer))

    web_app = serverapp.web_app
    route = url_path_join(web_app.settings["base_url"], "attnwidgets", "tutorials")
    web_app.add_handlers(".*$", [(route, TutorialsHandler)])
