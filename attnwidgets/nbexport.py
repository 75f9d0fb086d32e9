"""``attnwidgets export notebook.ipynb [-o out.html]``: a notebook as one HTML file whose views show offline.

``jupyter nbconvert --execute --to html`` stores each widget's state and then prefers it over every other output, so
a view's cell shows nothing until a widget manager loads from a CDN: offline, the cells are blank. Here the notebook
is executed (or taken as already executed, ``execute=False``) with the static fallback on, so each view's display
bundle holds its picture (its static twin as a PNG, :mod:`attnwidgets.fallback`) and a line of text; the widget
output and the stored widget state are dropped, and nbconvert writes the page with the PNGs inlined as data URIs.
A view with no static twin (the positional and mask explorers) and a plain ipywidget (a progress bar, a slider)
show their line of text.

Why the picture and not the live view inlined as ``save_html`` does: the picture is already in every view's bundle
(the kernel made it), so the export needs nothing but the notebook; it works for a notebook executed elsewhere; it
is a few tens of kB per view where an inlined live page carries its JS bundle and its data (100 kB to MBs each);
and it is what GitHub and nbviewer show too. For an interactive page of one view, ``attnwidgets.save_html(view, ...)``.

The page loads no script from the network: nbconvert's lab template is used with its require.js and MathJax
``<script src=...>`` blocks emptied (maths shows as its TeX source). This module imports nothing of ours but the
file writer (:func:`attnwidgets.persist.atomic_write`): the kernel imports attnwidgets, this runs it and rewrites its
outputs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .lab import require_lab
from .persist import atomic_write

__all__ = ["WIDGET_MIME", "ExportStats", "NotebookExportError", "export_notebook", "static_views", "to_html"]

#: The display-bundle key of a live widget, which nbconvert ranks above every other output.
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# nbconvert's lab template, without the two <script src=...> it loads from a CDN.
_TEMPLATE = "attnwidgets_offline.html.j2"
_TEMPLATE_TEXT = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
"""


class NotebookExportError(ValueError):
    """A notebook that cannot be exported: not found, not a notebook, or a cell that raised (the message says which
    file and cell, and what to do)."""


@dataclass
class ExportStats:
    """What :func:`static_views` did to a notebook's outputs."""

    views: int = 0
    """Widget outputs found."""
    pictures: int = 0
    """Of them, shown as their picture (``image/png``)."""
    text_only: list[str] = field(default_factory=list)
    """The text shown for each widget output that had no picture."""


def read_notebook(path: str | os.PathLike[str]) -> Any:
    """The notebook at ``path`` (nbformat 4), or a :class:`NotebookExportError` naming the file and what is wrong."""
    import nbformat

    p = Path(path)
    if not p.is_file():
        raise NotebookExportError(f"{p}: no such notebook file")
    try:
        nb = nbformat.read(p, as_version=4)
    except Exception as exc:  # nbformat raises JSON, validation and reader errors of several types
        raise NotebookExportError(f"{p}: not a readable Jupyter notebook ({type(exc).__name__}: {exc})") from exc
    if not isinstance(nb.get("cells"), list):
        raise NotebookExportError(f"{p}: not a Jupyter notebook (no list of cells)")
    return nb


#: Longest wait on one socket poll while a cell runs (seconds); see :func:`notebook_client`.
POLL_STEP = 0.5


def _polled(get_msg: Any) -> Any:
    """``get_msg`` of a kernel client's channel, waiting in polls of at most :data:`POLL_STEP` seconds."""
    import time
    from queue import Empty

    async def get_msg_in_steps(timeout: float | None = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = POLL_STEP if deadline is None else min(POLL_STEP, max(0.0, deadline - time.monotonic()))
            try:
                return await get_msg(timeout=step)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    return get_msg_in_steps


def notebook_client(nb: Any, folder: str | os.PathLike[str], *, timeout: int, kernel_name: str = "python3",
                    **kwargs: Any) -> Any:
    """An ``nbclient.NotebookClient`` for ``nb`` with its kernel started in ``folder``, whose waits for the kernel's
    messages cannot stall.

    nbclient waits for a cell's reply in one socket poll as long as the cell's whole ``timeout``. When a cell's
    widgets send messages while it runs (an ``ipywidgets.Output`` that a ``display`` goes into, as notebook 01's
    checkpoint slider does), that poll sometimes misses the reply that has already come (jupyter/nbclient#312): the
    cell then waits out its timeout although the kernel is idle. Measured: 60 such cells, a 60 s timeout, 5 runs: one
    run took 314 s instead of 15. Here every wait is a sequence of polls of at most :data:`POLL_STEP` seconds, each of
    which looks at the socket afresh, so a missed wake-up costs half a second; the cell's timeout still holds.
    """
    from nbclient import NotebookClient

    class SteppedClient(NotebookClient):  # type: ignore[misc]
        async def async_start_new_kernel_client(self) -> Any:
            kc = await super().async_start_new_kernel_client()
            for channel in (kc.shell_channel, kc.iopub_channel, kc.control_channel):
                channel.get_msg = _polled(channel.get_msg)
            return kc

    return SteppedClient(nb, timeout=timeout, kernel_name=kernel_name,
                         resources={"metadata": {"path": str(folder)}}, **kwargs)


def execute(nb: Any, path: Path, *, timeout: int = 900, kernel_name: str | None = None) -> None:
    """Run every cell of ``nb`` (in place) in a fresh kernel started in the notebook's folder, with the static
    fallback on; a cell that raises is a :class:`NotebookExportError` with its number and the error."""
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    name = kernel_name or nb.metadata.get("kernelspec", {}).get("name") or "python3"
    # store_widget_state=True although the state is dropped afterwards: nbclient 0.11 raises KeyError on an Output
    # widget's message when it does not store state.
    client = notebook_client(nb, path.parent, timeout=timeout, kernel_name=name, store_widget_state=True)
    saved = os.environ.get("ATTNWIDGETS_STATIC_FALLBACK")
    os.environ["ATTNWIDGETS_STATIC_FALLBACK"] = "1"  # the kernel inherits it: every view leaves its picture
    try:
        client.execute()
    except CellExecutionError as exc:
        failed = next((k for k, cell in enumerate(nb.cells, 1)
                       if any(o.get("output_type") == "error" for o in cell.get("outputs", []))), None)
        where = f"cell {failed}" if failed is not None else "a cell"
        raise NotebookExportError(f"{path}: {where} raised {exc.ename}: {exc.evalue}; fix it, or export a copy "
                                  "you executed yourself with --no-execute") from exc
    except (CellTimeoutError, DeadKernelError) as exc:
        raise NotebookExportError(f"{path}: execution stopped ({type(exc).__name__}: {exc}); raise --timeout or "
                                  "export a copy you executed yourself with --no-execute") from exc
    finally:
        if saved is None:
            os.environ.pop("ATTNWIDGETS_STATIC_FALLBACK", None)
        else:
            os.environ["ATTNWIDGETS_STATIC_FALLBACK"] = saved


def static_views(nb: Any) -> ExportStats:
    """Drop every widget output's live part and the stored widget state (in place), so each view shows its picture
    (``image/png``) with its line of text under it, or only the text where it has no picture."""
    from nbformat.v4 import new_output

    stats = ExportStats()
    for cell in nb.cells:
        outputs = []
        for out in cell.get("outputs", []):
            outputs.append(out)
            data = out.get("data")
            if not isinstance(data, dict) or WIDGET_MIME not in data:
                continue
            stats.views += 1
            del data[WIDGET_MIME]
            text = data.get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else str(text)
            if "image/png" in data:
                stats.pictures += 1
                if text:  # the page shows the picture only: its line of text (what the view shows) goes under it
                    outputs.append(new_output("display_data", data={"text/plain": text}))
            else:
                stats.text_only.append(text)
        if "outputs" in cell:
            cell.outputs = outputs
    nb.metadata.pop("widgets", None)
    return stats


def to_html(nb: Any, title: str) -> str:
    """The notebook as one HTML page (nbconvert's lab look), images inlined, no script loaded from the network."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(extra_loaders=[DictLoader({_TEMPLATE: _TEMPLATE_TEXT})], template_file=_TEMPLATE)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    return str(body)


def export_notebook(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
                    execute_cells: bool = True, timeout: int = 900,
                    kernel_name: str | None = None) -> tuple[Path, ExportStats]:
    """Write ``path`` as one offline HTML page (``out``, default: beside it with ``.html``): executed first unless
    ``execute_cells`` is False; every view shows its picture. Returns the page's path and what was done.

    The notebook file itself is never changed.
    """
    try:
        require_lab("attnwidgets export", "nbformat", "nbclient", "nbconvert")
    except ModuleNotFoundError as exc:
        raise NotebookExportError(str(exc)) from exc
    src = Path(path)
    nb = read_notebook(src)
    if execute_cells:
        execute(nb, src.resolve(), timeout=timeout, kernel_name=kernel_name)
    stats = static_views(nb)
    page = to_html(nb, src.stem)
    dest = Path(out) if out is not None else src.with_suffix(".html")
    if dest.resolve() == src.resolve():
        raise NotebookExportError(f"{dest}: the page would overwrite the notebook; give another -o")
    atomic_write(dest, lambda f: f.write(page.encode("utf-8")))
    return dest, stats
