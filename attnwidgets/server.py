"""The extension's server part: two endpoints, each behind the server's own login (``@web.authenticated``).

- ``POST <base_url>/attnwidgets/tutorials``, behind JupyterLab's Launcher card "attnwidgets tutorials". It copies the
  tutorials into ``attnwidgets-tutorials/`` under the server's root folder, as ``attnwidgets lab`` does
  (:func:`attnwidgets.lab.copy_tutorials`: a notebook already there is kept), and answers with the path of notebook 05
  for the page to open.
- ``GET <base_url>/attnwidgets/saved?path=<path>``, behind the document a file ``aw.save`` wrote opens as
  (``js/src/lab/saved_file.ts``). ``path`` is the file browser's path, relative to the root folder: one that resolves
  outside it (``..``, a link pointing out), a hidden one (unless the server shows hidden files), a folder or anything
  but an ``.npz`` is refused (:func:`resolve_under`), so is a file over the size limit, before anything reads it. The
  file is read by ``python -m attnwidgets.saved_doc`` in a process of its own (the validated loader, then each
  view's saved state; :mod:`attnwidgets.saved_doc`), so Jupyter Server never imports the views nor holds a file's
  arrays, and a read that hangs is stopped after :data:`READ_SECONDS`. The answer is that process's JSON; a file it
  refuses is a 4xx with ``{"error": <the loader's message>}``.

Enabled by ``etc/jupyter/jupyter_server_config.d/attnwidgets.json``, which the wheel installs (or
``--ServerApp.jpserver_extensions=attnwidgets.server=True``). It imports nothing of ours but :mod:`lab`, and
Jupyter Server only inside the functions the server calls, so importing attnwidgets never needs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path, PurePosixPath
from typing import Any

from .lab import LECTURE_ENV, LECTURE_NOTEBOOK, copy_tutorials

__all__ = ["FOLDER", "READ_SECONDS", "Refused", "copy_into", "read_saved", "resolve_under"]

#: Where under the server's root folder the Launcher card copies the tutorials.
FOLDER = "attnwidgets-tutorials"

#: Seconds a saved file's reader may take before it is stopped (the answer is then a 504 saying so).
READ_SECONDS = 120.0

#: Files larger than this are refused before they are read (``ATTNWIDGETS_DOC_MAX_BYTES``; saved_doc.MAX_FILE_BYTES).
_MAX_BYTES = 2**30


class Refused(ValueError):
    """A request for a saved file the server does not read: ``str(error)`` for the reader, ``status`` for HTTP."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def resolve_under(root: str | Path, path: str, *, allow_hidden: bool = False) -> Path:
    """The file ``path`` (relative, with ``/``, as the file browser names it) under ``root``, resolved, or
    :class:`Refused`: a path that leaves ``root`` (``..``, an absolute path, a link pointing out), a hidden file or
    folder (unless ``allow_hidden``), a missing file (404), a folder, or a file that is not an ``.npz``.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); (root / "a.npz").write_bytes(b"")
    0
    >>> resolve_under(root, "a.npz") == (root / "a.npz").resolve()
    True
    >>> resolve_under(root, "../etc/passwd")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnwidgets.server.Refused: '../etc/passwd' is outside the server's folder...
    """
    base = Path(root).resolve()
    parts = PurePosixPath(path).parts
    if not path or "\0" in path or PurePosixPath(path).is_absolute() or ".." in parts or "\\" in path:
        raise Refused(f"{path!r} is outside the server's folder: open a file under it from the file browser", 403)
    if not allow_hidden and any(p.startswith(".") for p in parts):
        raise Refused(f"{path!r} is hidden, and this server does not show hidden files", 403)
    file = (base / Path(*parts)).resolve()
    if not file.is_relative_to(base):  # a link that points out of the root
        raise Refused(f"{path!r} is outside the server's folder: open a file under it from the file browser", 403)
    if not file.exists():
        raise Refused(f"there is no file {path!r}: it may have been moved or deleted", 404)
    if not file.is_file() or file.suffix.lower() != ".npz":
        raise Refused(f"{path!r} is not an .npz file: attnwidgets opens the .npz files aw.save writes")
    return file


def _max_bytes() -> int:
    raw = os.environ.get("ATTNWIDGETS_DOC_MAX_BYTES", "").strip()
    try:
        return max(0, int(float(raw))) if raw else _MAX_BYTES
    except ValueError:
        return _MAX_BYTES


async def read_saved(file: Path, name: str, *, seconds: float = READ_SECONDS) -> dict[str, Any]:
    """What the document shows of ``file`` (named ``name`` in messages): ``python -m attnwidgets.saved_doc`` run in
    a process of its own, its JSON answer; :class:`Refused` for a file it refuses (its message and status), one over
    the size limit (413), a reader that took longer than ``seconds`` (504) or stopped (500)."""
    size, limit = file.stat().st_size, _max_bytes()
    if size > limit:
        raise Refused(f"{name!r} is {size / 2**20:,.1f} MiB, over the {limit / 2**20:,.1f} MiB a saved file may have "
                      "to open here; load it in a notebook with aw.load(path), or raise the limit with "
                      "ATTNWIDGETS_DOC_MAX_BYTES=<bytes> in the Jupyter server's environment", 413)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "attnwidgets.saved_doc", str(file), name,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), seconds)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise Refused(f"reading {name!r} took longer than {seconds:.0f} s and was stopped; load it in a notebook "
                      "with aw.load(path)", 504) from None
    try:
        answer = json.loads(out) if proc.returncode == 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        raise Refused(f"attnwidgets could not read {name!r} ({tail[0][:300]}); the Jupyter server's log has the "
                      "details", 500)
    if "error" in answer:
        status = answer.get("status")
        raise Refused(str(answer["error"]), status if isinstance(status, int) and 400 <= status < 600 else 400)
    return answer


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


def lecture_launch() -> bool:
    """Whether this server is an ``attnwidgets lab --lecture`` launch (:data:`attnwidgets.lab.LECTURE_ENV` set): the
    extension then starts in lecture mode. ``GET /attnwidgets/lecture`` answers ``{"lecture": true|false}``.

    >>> import os
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"ATTNWIDGETS_LECTURE_LAB": "1"}):
    ...     lecture_launch()
    True
    """
    return os.environ.get(LECTURE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "attnwidgets.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.base.handlers import APIHandler
    from jupyter_server.utils import url_path_join
    from tornado import web

    root = serverapp.root_dir
    reading = asyncio.Semaphore(2)  # at most two files read at once: each reader holds a file's arrays

    class TutorialsHandler(APIHandler):  # type: ignore[misc]
        @web.authenticated
        def post(self) -> None:
            try:
                answer = copy_into(root)
            except OSError as exc:  # a read-only root: the page shows why
                self.set_status(500)
                answer = {"error": f"could not copy the tutorials into {FOLDER}/: {exc}"}
            self.finish(json.dumps(answer))

    class SavedFileHandler(APIHandler):  # type: ignore[misc]
        @web.authenticated
        async def get(self) -> None:
            path = self.get_query_argument("path", "")
            allow_hidden = bool(getattr(serverapp.contents_manager, "allow_hidden", False))
            try:
                file = resolve_under(root, path, allow_hidden=allow_hidden)
                async with reading:
                    answer = await read_saved(file, path)
            except Refused as exc:
                if exc.status >= 500:
                    self.log.error("attnwidgets: %s", exc)
                self.set_status(exc.status)
                answer = {"error": str(exc)}
            self.finish(json.dumps(answer))

    class LectureHandler(APIHandler):  # type: ignore[misc]
        @web.authenticated
        def get(self) -> None:
            self.finish(json.dumps({"lecture": lecture_launch()}))

    web_app = serverapp.web_app
    base = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [(url_path_join(base, "attnwidgets", "tutorials"), TutorialsHandler),
                                 (url_path_join(base, "attnwidgets", "saved"), SavedFileHandler),
                                 (url_path_join(base, "attnwidgets", "lecture"), LectureHandler)])
