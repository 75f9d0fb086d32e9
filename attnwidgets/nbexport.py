"""``attnwidgets export notebook.ipynb [-o out.html] [--pictures] [--trust]``: a notebook as one HTML page whose
views stay live offline.

``jupyter nbconvert --execute --to html`` stores each widget's state and then prefers it over every other output, so
a view's cell shows nothing until a widget manager loads from a CDN: offline, the cells are blank. Here the notebook
is executed (or taken as already executed, ``execute=False``) with the static fallback on and each view's saved
state in its bundle (``application/vnd.attnwidgets.view+json``, :mod:`attnwidgets.view_mime`: what ``save_html``
puts in a page, within the size budget ``ATTNWIDGETS_VIEW_BUDGET`` sets, 2 MB a view by default). The page carries
one script of views (``static/page_views.js``, from js/src/pages/views.ts: every view's front end and the saved-view
reader, once) and each view's state once, and draws every view live with the code that draws it in a notebook:
hover, switch head, select a span, whatever was precomputed. A view whose state was left out (over the budget) or is
missing (a notebook executed without it) shows its picture and a line saying why. ``pictures=True``
(``--pictures``) writes every view as its picture: a smaller page with no script of ours.

Nothing else a notebook carries runs in the page (:mod:`attnwidgets.nbsanitize`): markdown and HTML outputs are
sanitised, scripts and other libraries' outputs dropped, and a Content-Security-Policy lets only the page's own
script run (by nonce) and nothing load from the network. ``trust=True`` (``--trust``, for one's own notebooks) keeps
the notebook's HTML and inline scripts as they are; nothing remote loads either way. Maths is typeset by KaTeX (its
fonts inlined), offline.

This module imports little of ours: the file writer (:func:`attnwidgets.persist.atomic_write`), and for the page
export's ``script_json`` and the built bundles. The kernel imports attnwidgets; this runs it and rewrites its outputs.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .lab import require_lab
from .persist import atomic_write

__all__ = ["VIEW_MIME", "WIDGET_MIME", "ExportStats", "NotebookExportError", "csp", "export_folder", "export_notebook",
           "has_maths", "page_of", "saved_views_in", "static_views", "to_html"]

#: The display-bundle key of a live widget, which nbconvert ranks above every other output.
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

#: The display-bundle key of a view's saved state (attnwidgets.view_mime.VIEW_MIME; a test keeps the two equal).
VIEW_MIME = "application/vnd.attnwidgets.view+json"

# nbconvert's lab template, without the two <script src=...> it loads from a CDN.
_TEMPLATE = "attnwidgets_offline.html.j2"
_TEMPLATE_TEXT = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
"""

# A saved view over its picture: the picture shows until the view is drawn (or when it cannot be), the note says why.
_PAGE_CSS = (".aw-saved .aw-note:empty{display:none}.aw-saved .aw-note{color:#57606a;font-size:0.9em}"
             ".aw-saved.aw-drawn .aw-picture{display:none}")


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
    live: int = 0
    """Of them, drawn live in the page from their saved state."""
    omitted: list[str] = field(default_factory=list)
    """Why each view whose saved state was left out (over its size budget) shows its picture instead."""
    dropped: int = 0
    """Outputs of the notebook's own that lost a part the page will not run (scripts, other libraries' types)."""


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


#: Seconds a view's saved replies may take to compute in the export's kernel before it keeps only the view on screen.
EXPORT_SECONDS = 30

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


def execute(nb: Any, path: Path, *, timeout: int = 900, kernel_name: str | None = None,
            save_views: bool = False) -> None:
    """Run every cell of ``nb`` (in place) in a fresh kernel started in the notebook's folder, with the static
    fallback on (and, with ``save_views``, each view's saved state in its bundle); a cell that raises is a
    :class:`NotebookExportError` with its number and the error."""
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    name = kernel_name or nb.metadata.get("kernelspec", {}).get("name") or "python3"
    # store_widget_state=True although the state is dropped afterwards: nbclient 0.11 raises KeyError on an Output
    # widget's message when it does not store state.
    client = notebook_client(nb, path.parent, timeout=timeout, kernel_name=name, store_widget_state=True)
    names = ("ATTNWIDGETS_STATIC_FALLBACK", "ATTNWIDGETS_VIEW_BUDGET", "ATTNWIDGETS_VIEW_SECONDS", "MPLBACKEND")
    saved = {name: os.environ.get(name) for name in names}
    # The kernel's own figures inline, as in JupyterLab: an MPLBACKEND=Agg inherited from a CI job or a shell would
    # leave every matplotlib figure of the page as "<Figure size ...>" text.
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    os.environ["ATTNWIDGETS_STATIC_FALLBACK"] = "1"  # the kernel inherits it: every view leaves its picture
    if not save_views:  # ... and its state (attnwidgets.view_mime), unless only the pictures are wanted
        os.environ["ATTNWIDGETS_VIEW_BUDGET"] = "0"
    # Every view (each layer and head) unless over the budget: nobody waits on a display here, and a busy machine
    # must not make a page lose its heads (the notebook's own displays give up after view_mime.ALL_SECONDS).
    os.environ["ATTNWIDGETS_VIEW_SECONDS"] = str(EXPORT_SECONDS)
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
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def static_views(nb: Any, live: bool = False) -> tuple[ExportStats, list[Any]]:
    """Drop every widget output's live part and the stored widget state (in place).

    Without ``live``, each view shows its picture (``image/png``) with its line of text under it, or only the text
    where it has no picture. With ``live``, a view whose bundle holds its saved state (:data:`VIEW_MIME`) becomes a
    placeholder the page's script draws it into (its picture inside, shown until then or if it cannot be drawn);
    the saved states are returned, in page order, for :func:`to_html` to write once each.
    """
    from nbformat.v4 import new_output

    stats = ExportStats()
    saved: list[Any] = []
    for cell in nb.cells:
        outputs = []
        for out in cell.get("outputs", []):
            outputs.append(out)
            data = out.get("data")
            if not isinstance(data, dict) or (WIDGET_MIME not in data and VIEW_MIME not in data):
                continue
            data.pop(WIDGET_MIME, None)
            state = data.pop(VIEW_MIME, None)
            inside = saved_views_in(state)  # a box (attnwidgets/widgets/boxes.py): the views in it; else the one
            stats.views += max(1, len(inside))
            text = data.get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else str(text)
            png = data.get("image/png")
            if live and isinstance(state, dict):
                n = len(saved)
                saved.append(state)
                picture = ""
                if isinstance(png, str) and re.fullmatch(r"[A-Za-z0-9+/=\s]*", png):
                    # its line of text (what the view shows) as the picture's alt text, for readers and searches
                    picture = f'<img alt="{html.escape(text)}" src="data:image/png;base64,{png.strip()}">'
                omitted = state.get("omitted")
                if isinstance(omitted, str):
                    stats.omitted.append(omitted)
                if state.get("widget") == "Box":  # drawn as a row or column; a view left out there says so itself
                    stats.omitted += [v["omitted"] for v in inside if isinstance(v.get("omitted"), str)]
                    stats.live += sum(1 for v in inside if not isinstance(v.get("omitted"), str))
                    out["data"] = {"text/plain": text, "text/html": (
                        f'<div class="aw-saved" data-aw="aw-view-{n}"><div class="aw-live"></div>'
                        f'<div class="aw-picture">{picture}</div><div class="aw-note"></div></div>')}
                    continue
                live_div = "" if isinstance(omitted, str) else '<div class="aw-live"></div>'
                note = f"Shown as a picture: {omitted}" if isinstance(omitted, str) else ""
                out["data"] = {"text/plain": text, "text/html": (
                    f'<div class="aw-saved" data-aw="aw-view-{n}">{live_div}<div class="aw-picture">{picture}</div>'
                    f'<div class="aw-note">{html.escape(note)}</div></div>')}
                if not isinstance(omitted, str):
                    stats.live += 1
                    continue
            if isinstance(png, str):
                stats.pictures += 1
                if text:  # the page shows the picture only: its line of text (what the view shows) goes under it
                    outputs.append(new_output("display_data", data={"text/plain": text}))
            elif "text/html" not in out["data"]:
                stats.text_only.append(text)
        if "outputs" in cell:
            cell.outputs = outputs
    nb.metadata.pop("widgets", None)
    return stats, saved


def saved_views_in(state: Any, depth: int = 0) -> list[dict[str, Any]]:
    """The views' entries in saved state ``state``: itself for a view, every view inside (nested boxes included) for a
    box (attnwidgets/widgets/boxes.py), none for anything else.

    >>> view = {"widget": "AttentionHeatmap", "state": {}}
    >>> len(saved_views_in({"widget": "Box", "children": [view, {"widget": "Box", "children": [view]}, "bogus"]}))
    2
    """
    if not isinstance(state, dict) or depth > 8:
        return []
    if state.get("widget") != "Box":
        return [state] if "state" in state or "omitted" in state else []
    children = state.get("children")
    return [v for c in (children if isinstance(children, list) else []) for v in saved_views_in(c, depth + 1)]


_MATHS = re.compile(r"\$|\\\(|\\\[|\\begin\{")


def has_maths(nb: Any) -> bool:
    """Whether a markdown cell or a ``text/latex`` output of ``nb`` may hold maths (the page then carries KaTeX)."""
    for cell in nb.cells:
        texts = [cell.get("source", "")] if cell.get("cell_type") == "markdown" else []
        texts += [o["data"]["text/latex"] for o in cell.get("outputs", [])
                  if isinstance(o.get("data"), dict) and "text/latex" in o["data"]]
        if any(_MATHS.search("".join(t) if isinstance(t, list) else str(t)) for t in texts):
            return True
    return False


def _exporter(trust: bool) -> Any:
    """nbconvert's HTML exporter with the offline template; untrusted, markdown is cleaned after it is rendered."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    from .nbsanitize import clean_html

    class Exporter(HTMLExporter):  # type: ignore[misc]
        def markdown2html(self, context: Any, source: str) -> str:
            rendered = super().markdown2html(context, source)
            return rendered if trust else clean_html(rendered)

    Exporter.markdown2html.jinja_pass_arg = HTMLExporter.markdown2html.jinja_pass_arg  # type: ignore[attr-defined]
    return Exporter(extra_loaders=[DictLoader({_TEMPLATE: _TEMPLATE_TEXT})], template_file=_TEMPLATE,
                    embed_images=True)


def csp(nonce: str | None) -> str:
    """The page's Content-Security-Policy: nothing remote; scripts only with ``nonce`` (None: ``--trust``, the
    notebook's own inline scripts run too); fonts and images from ``data:`` only."""
    scripts = f"'nonce-{nonce}'" if nonce else "'unsafe-inline'"
    return (f"default-src 'none'; script-src {scripts}; style-src 'unsafe-inline'; img-src data: blob:; "
            "font-src data:; connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'none'; "
            "form-action 'none'")


def to_html(nb: Any, title: str, saved: list[Any] | None = None, *, trust: bool = False) -> str:
    """The notebook as one HTML page (nbconvert's lab look), images inlined, no script loaded from the network.

    ``saved``: the views' saved states (:func:`static_views` with ``live``); the page then carries the views' script
    (``static/page_views.js``, from js/src/pages/views.ts: every view's front end, once) and draws each view live.
    A notebook with maths gets KaTeX (``static/page_math.js`` and ``katex.css``, its fonts inlined) either way.
    """
    import secrets

    from .export import script_json
    from .viewdata.wire import STATIC

    body, _ = _exporter(trust).from_notebook_node(nb, resources={"metadata": {"name": title}})
    page = str(body)
    nonce = None if trust else secrets.token_urlsafe(18)
    scripts = (["page_math"] if has_maths(nb) else []) + (["page_views"] if saved else [])
    css = (STATIC / "katex.css").read_text(encoding="utf-8") if "page_math" in scripts else ""
    css = css.replace("</", "<\\/")  # (a CSS escape of "/"): nothing can end the <style> element
    head = (f'<meta http-equiv="Content-Security-Policy" content="{csp(nonce)}">\n'
            f"<style>{css}\n{_PAGE_CSS if saved else ''}</style>\n")
    blocks = "".join(f'<script type="application/json" id="aw-view-{n}">{script_json(state)}</script>\n'
                     for n, state in enumerate(saved or []))
    attr = f' nonce="{nonce}"' if nonce else ""
    for name in scripts:
        code = (STATIC / f"{name}.js").read_text(encoding="utf-8")
        # esbuild output never has it, but a page must never be cut short
        code = re.sub(r"</(script)", r"<\\/\1", code, flags=re.IGNORECASE)
        blocks += f"<script{attr}>{code}</script>\n"
    tail = blocks
    at = page.index("<head>") + len("<head>")  # first in the head: the policy covers everything after it
    page = page[:at] + "\n" + head + page[at:]
    end = page.rindex("</body>")
    return page[:end] + tail + page[end:]


def page_of(nb: Any, title: str, *, pictures: bool = False, trust: bool = False) -> tuple[str, ExportStats]:
    """The page of an executed notebook ``nb`` (changed in place) and what was done: what :func:`export_notebook`
    writes, for callers that hold executed notebooks already (the docs build, :func:`export_folder`)."""
    dropped = 0
    if not trust:
        from .nbsanitize import sanitize_notebook

        dropped = sanitize_notebook(nb, keep=frozenset({WIDGET_MIME, VIEW_MIME}))
    views, saved = static_views(nb, live=not pictures)
    views.dropped = dropped
    return to_html(nb, title, saved, trust=trust), views


def export_folder(folder: str | os.PathLike[str], dest: str | os.PathLike[str], *, pictures: bool = False
                  ) -> list[tuple[Path, ExportStats]]:
    """Write each executed notebook ``folder/*.ipynb`` as ``dest/<name>.html`` (not run again; untrusted), in name
    order; returns each page's path and what was done. For CI, which executes the tutorials once for the notebooks
    tier and the docs both: the docs build (docs/gen_ref.py) makes the same pages from the same folder."""
    out = []
    for src in sorted(Path(folder).glob("*.ipynb")):
        page, stats = page_of(read_notebook(src), src.stem, pictures=pictures)
        target = Path(dest) / f"{src.stem}.html"
        data = page.encode("utf-8")
        atomic_write(target, lambda f, data=data: f.write(data))  # type: ignore[misc]
        out.append((target, stats))
    return out


def export_notebook(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
                    execute_cells: bool = True, timeout: int = 900, kernel_name: str | None = None,
                    pictures: bool = False, trust: bool = False) -> tuple[Path, ExportStats]:
    """Write ``path`` as one offline HTML page (``out``, default: beside it with ``.html``): executed first unless
    ``execute_cells`` is False. Returns the page's path and what was done.

    Each view is drawn live from its saved state (its picture where the state was left out or is missing, as in a
    notebook executed without it), or, with ``pictures``, shown as its picture only. Unless ``trust``, nothing else
    the notebook carries runs in the page (:mod:`attnwidgets.nbsanitize`). The notebook file itself is never changed.
    """
    try:
        require_lab("attnwidgets export", "nbformat", "nbclient", "nbconvert", *(() if trust else ("nh3",)))
    except ModuleNotFoundError as exc:
        raise NotebookExportError(str(exc)) from exc
    src = Path(path)
    nb = read_notebook(src)
    if execute_cells:
        execute(nb, src.resolve(), timeout=timeout, kernel_name=kernel_name, save_views=not pictures)
    page, views = page_of(nb, src.stem, pictures=pictures, trust=trust)
    dest = Path(out) if out is not None else src.with_suffix(".html")
    if dest.resolve() == src.resolve():
        raise NotebookExportError(f"{dest}: the page would overwrite the notebook; give another -o")
    atomic_write(dest, lambda f: f.write(page.encode("utf-8")))
    return dest, views
