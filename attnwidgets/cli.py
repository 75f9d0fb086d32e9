"""The command line: ``attnwidgets show "TEXT" --model NAME --out page.html`` writes a self-contained page;
``attnwidgets lab [--lecture]`` opens JupyterLab on a copy of the tutorials (:mod:`attnwidgets.lab`);
``attnwidgets export notebook.ipynb [-o out.html] [--pictures] [--trust]`` writes a notebook as one offline HTML page
whose views stay live (:mod:`attnwidgets.nbexport`).

Handy for slides and paper-club handouts: the page has the view's JS and data inlined and renders offline.
:func:`build_view` (text + options -> widget) is shared with the IPython magics.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from traitlets import TraitError

from .viewdata.checks import THEMES
from .viewdata.views import BY_CLI

if TYPE_CHECKING:
    from .widgets import AttnWidget

#: The ``--view`` names, from the one registry of views (:data:`attnwidgets.viewdata.views.VIEWS`).
VIEWS = tuple(BY_CLI)

__all__ = ["THEMES", "VIEWS", "UsageError", "build_view", "main"]


class UsageError(ValueError):
    """Arguments that do not make sense together (reported with the usage line, never a traceback)."""


def build_view(
    text: str,
    *,
    view: str = "heatmap",
    model: str | None = None,
    pair: str | None = None,
    layer: int | None = None,
    head: int | None = None,
    theme: str | None = None,
    query: str | None = None,
) -> AttnWidget:
    """Run ``text`` through ``model`` and return the widget for ``view`` ("heatmap", "model", "head" or "qk").

    ``query`` opens the view on the first token that reads ``query`` (case and the "##"/"Ġ" marks ignored, or a
    token position): the head view selects that token's lines, the qk view steps through it. The heatmap and model
    views have no chosen query token, so they refuse it.

    Examples
    --------
    >>> w = build_view("The cat sat.", view="heatmap", layer=1, head=2)
    >>> type(w).__name__, w.layer, w.head
    ('AttentionHeatmap', 1, 2)
    """
    if view not in VIEWS:
        raise UsageError(f"unknown view {view!r}; choose one of {', '.join(VIEWS)}")
    if theme is not None and theme not in THEMES:
        raise UsageError(f"unknown theme {theme!r}; choose one of {', '.join(THEMES)}")
    if not text or not text.strip():
        raise UsageError("the text is empty: give at least one word")
    if query is not None and view not in ("head", "qk"):
        raise UsageError(f"--query is for --view head or qk (the {view} view has no chosen query token)")
    # What can be checked without the model is checked before loading it (which can take many seconds).
    # head -1 is "every head": the mean on a heatmap, every head's lines in the head view.
    low = -1 if view in ("heatmap", "head") else 0
    if layer is not None and layer < 0:
        raise UsageError(f"--layer {layer} is out of range: layers count from 0")
    if head == -1 and low == 0:
        raise UsageError(f"--head -1 (every head) is for --view heatmap and head only; the {view} view shows single "
                         "heads: give a head from 0")
    if head is not None and head < low:
        raise UsageError(f"--head {head} is out of range: heads count from 0 (-1: every head, heatmap and head "
                         "views)")
    from . import widgets
    from .runner import get_runner

    runner = get_runner(model)
    info = runner.info
    n_layers = info.n_layers
    if layer is not None and not 0 <= layer < n_layers:
        raise UsageError(f"--layer {layer} is out of range: {info.name!r} has {n_layers} layers (0..{n_layers - 1})")
    if head is not None and not low <= head < info.n_heads:
        raise UsageError(f"--head {head} is out of range: {info.name!r} has {info.n_heads} heads "
                         f"({low}..{info.n_heads - 1}{', -1 = every head' if low < 0 else ''})")
    kwargs: dict[str, Any] = {}
    if theme is not None:
        kwargs["theme"] = theme
    if layer is not None:
        kwargs["layer"] = layer
    if head is not None:
        kwargs["head"] = head
    if view == "qk":
        from .runner.qk import capture_qk_layers

        captures = capture_qk_layers(text, pair, model=runner)
        if query is not None:
            kwargs["query"] = query_position(captures[0].tokens, query)
        return widgets.QKStepThrough(captures, **kwargs)
    result = runner.run(text, pair)
    if view == "head" and query is not None:
        kwargs["selected"] = [query_position(result.tokens, query)]
    cls = getattr(widgets, BY_CLI[view].widget)
    return cls(result, **kwargs)


def query_position(tokens: Sequence[str], query: str) -> int:
    """Position of the first token that reads ``query`` (case, spaces and "##" ignored), or ``query`` as a position.

    Examples
    --------
    >>> query_position(["[CLS]", "the", "cat", "##s", "[SEP]"], "Cat"), query_position(["[CLS]", "a"], "1")
    (2, 1)
    """
    def norm(t: str) -> str:
        return t.strip().removeprefix("##").lower()

    want = norm(query)
    for k, token in enumerate(tokens):
        if norm(token) == want:
            return k
    if query.strip().lstrip("-").isdigit() and 0 <= int(query) < len(tokens):
        return int(query)
    shown = " ".join(t.strip() for t in tokens[:40]) + (" ..." if len(tokens) > 40 else "")
    raise UsageError(f"--query {query!r} is not a token of the text (nor a position 0..{len(tokens) - 1}); "
                     f"its tokens are: {shown}")


def _parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    # allow_abbrev=False everywhere: an abbreviation ("--mod" for "--model") would also match a word meant as text.
    parser = argparse.ArgumentParser(
        prog="attnwidgets", allow_abbrev=False,
        description="See what a transformer's attention heads do: write a view as one self-contained HTML page.",
    )
    from ._version import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    show = sub.add_parser(
        "show", help="write a self-contained HTML page of one view", allow_abbrev=False,
        description="Run TEXT through a model and write one view as a self-contained HTML page (no network needed "
                    "to open it). Options are written in full; a TEXT that starts with - goes after a bare --: "
                    "attnwidgets show --out page.html -- \"--TEXT\".",
    )
    show.add_argument("text", metavar="TEXT", help="the input text")
    show.add_argument("--out", "-o", required=True, metavar="PAGE.html", help="where to write the page")
    show.add_argument("--model", "-m", default=None, metavar="NAME",
                      help="hub id or local folder (default: the bundled all-MiniLM-L6-v2)")
    show.add_argument("--view", choices=VIEWS, default="heatmap", help="which view (default: heatmap)")
    show.add_argument("--layer", type=int, default=None, metavar="L", help="layer shown first")
    show.add_argument("--head", type=int, default=None, metavar="H",
                      help="head shown first (-1: every head: the mean on a heatmap, all lines in the head view)")
    show.add_argument("--pair", default=None, metavar="TEXT_B", help="segment B of a sentence pair")
    show.add_argument("--theme", choices=THEMES, default=None, help="light (default) or lecture")
    show.add_argument("--query", default=None, metavar="WORD",
                      help="open on this query token (head and qk views): the first token that reads WORD")
    show.add_argument("--precision", choices=("float16", "uint8", "float32"), default="float16",
                      help="how saved arrays are stored (default float16; uint8 is smaller, float32 exact)")
    show.add_argument("--scope", choices=("auto", "all", "view"), default="auto",
                      help="all: every layer/head works offline; view: only the first view (smaller); auto (default): "
                           "all unless the page would pass 20 MB")
    show.add_argument("--title", default=None, help="page title")
    lab = sub.add_parser(
        "lab", help="open JupyterLab on a copy of the tutorials", allow_abbrev=False,
        description="Copy the tutorial notebooks into a folder of yours (files already there are kept) and open "
                    "JupyterLab on them, offline, with its news pop-up off.",
    )
    lab.add_argument("--dir", default=None, metavar="FOLDER",
                     help="where the copy lives (default: ~/attnwidgets-tutorials)")
    lab.add_argument("--lecture", action="store_true",
                     help="lecture theme for every view, JupyterLab's own text enlarged (code 18 px, text 20 px) with "
                          "the file browser collapsed, and notebook 05 (the lecture quick start) opened")
    lab.add_argument("--fresh", action="store_true", help="copy the tutorials again, over your edits")
    lab.add_argument("--port", type=int, default=None, help="JupyterLab's port (default: its own choice)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    lab.add_argument("--dry-run", action="store_true", help="copy the tutorials and print the command, start nothing")
    export = sub.add_parser(
        "export", help="write a notebook as one HTML page whose views stay live offline", allow_abbrev=False,
        description="Execute NOTEBOOK in a fresh kernel (or take its outputs as stored, --no-execute) and write it as "
                    "one HTML page where every view is drawn live from its saved state (hover, switch head, select "
                    "a span; --pictures: its static picture instead) and the maths is typeset. The page loads "
                    "nothing from the network, and nothing else the notebook carries runs in it: its HTML is "
                    "sanitised and its scripts dropped (--trust keeps them, for your own notebooks). The notebook "
                    "is not changed.",
    )
    export.add_argument("notebook", metavar="NOTEBOOK", help="the .ipynb file")
    export.add_argument("--out", "-o", default=None, metavar="PAGE.html",
                        help="where to write the page (default: the notebook's name with .html)")
    export.add_argument("--no-execute", action="store_true",
                        help="use the outputs stored in the notebook (executed elsewhere) instead of running it")
    export.add_argument("--timeout", type=int, default=900, metavar="S", help="seconds per cell (default 900)")
    export.add_argument("--kernel", default=None, metavar="NAME",
                        help="kernel to run it in (default: the notebook's own, else python3)")
    export.add_argument("--pictures", action="store_true",
                        help="each view as its picture (a smaller page, no script of ours), not live")
    export.add_argument("--trust", action="store_true",
                        help="keep the notebook's own HTML and scripts as they are (only for notebooks you wrote)")
    return parser, show


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``attnwidgets`` command. Returns the exit status (0 ok, 1 failure, 2 bad arguments)."""
    parser, show = _parsers()
    args = parser.parse_args(argv)  # exits 2 with the usage line on bad arguments
    if args.command == "lab":
        return _lab(args)
    if args.command == "export":
        return _export(args)
    from .export import save_html

    try:
        widget = build_view(args.text, view=args.view, model=args.model, pair=args.pair, layer=args.layer,
                            head=args.head, theme=args.theme, query=args.query)
        save_html(widget, args.out, title=args.title, precision=args.precision, scope=args.scope)
    except UsageError as exc:
        show.error(str(exc))  # exits 2
    except (OSError, ValueError, RuntimeError, IndexError, TypeError, TraitError) as exc:
        print(f"attnwidgets: error: {exc}", file=sys.stderr)
        return 1
    print("open it in any browser, no network needed")  # save_html printed what it wrote and its size
    return 0


def _export(args: argparse.Namespace) -> int:
    from .nbexport import NotebookExportError, export_notebook

    try:
        dest, stats = export_notebook(args.notebook, args.out, execute_cells=not args.no_execute,
                                      timeout=args.timeout, kernel_name=args.kernel, pictures=args.pictures,
                                      trust=args.trust)
    except (NotebookExportError, OSError) as exc:
        print(f"attnwidgets: error: {exc}", file=sys.stderr)
        return 1
    size = dest.stat().st_size
    print(f"wrote {dest} ({size / 1e6:.1f} MB): {stats.views} views, {stats.live} live, {stats.pictures} as their "
          f"picture, {len(stats.text_only)} as text (no static twin); opens offline in any browser")
    for why in stats.omitted:
        print(f"  a view shows its picture: {why}")
    if stats.dropped:
        print(f"  {stats.dropped} outputs lost a part the page does not run (scripts, other libraries' types); "
              "--trust keeps them")
    return 0


def _lab(args: argparse.Namespace) -> int:
    import os
    import shlex
    import subprocess

    from .lab import prepare_lab

    try:
        launch = prepare_lab(args.dir, lecture=args.lecture, fresh=args.fresh, port=args.port,
                             browser=not args.no_browser)
    except (OSError, ImportError) as exc:
        print(f"attnwidgets: error: {exc}", file=sys.stderr)
        return 1
    print(f"tutorials in {launch.folder}: {len(launch.copied)} copied, {len(launch.kept)} kept as you left them"
          + (" (--fresh copies them again)" if launch.kept else ""))
    env_words = " ".join(f"{k}={shlex.quote(v)}" for k, v in launch.env.items())
    if args.dry_run:
        print(f"{env_words} {shlex.join(launch.command)}")
        return 0
    try:
        return subprocess.call(launch.command, cwd=launch.folder, env={**os.environ, **launch.env})
    except KeyboardInterrupt:  # Ctrl-C stops JupyterLab; not an error
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
