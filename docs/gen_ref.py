"""Generate the docs site's API reference and tutorial pages at build time (mkdocs-gen-files runs this).

API reference: one page per public package, read from the package itself, so the pages follow whatever the layout
is: the top level and every subpackage of ``attnwidgets`` that declares ``__all__`` (no underscore in its name).
Each public name is documented once, on the page of the package it is defined in (``surface_stats`` is defined in
``attnwidgets.analysis.surface``, so on the ``analysis`` page); every other page that exports it lists it in its
table with a link there. Nothing is listed by hand.

Front page: the README, its links to ``docs/...`` made relative.

Tutorials: each ``notebooks/*.ipynb`` whose executed copy is found in ``$ATTNWIDGETS_EXECUTED_NOTEBOOKS`` (default
``test-artifacts/executed``, where the notebooks tier of ``.ci/run`` saves each tutorial after running it), with its
cells' sources those of the notebook as it is now, is written as the page ``attnwidgets export`` makes of it
(:func:`attnwidgets.nbexport.page_of`: every view live from the state it saved, the maths typeset, nothing of the
notebook's own run, nothing loaded from the network), ``tutorials/<name>.html``, linked from the tutorials index.
Without an executed copy, the notebook is rendered (by mkdocs-jupyter) without outputs, with a note saying so.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys
from pathlib import Path

import mkdocs_gen_files
import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs"))  # api_tasks.py

import attnwidgets  # noqa: E402  (the checkout's package, not an installed one)
from attnwidgets.nbexport import page_of  # noqa: E402

TOP = "attnwidgets"


def public_packages() -> list[object]:
    """The top level, then every subpackage with ``__all__``, alphabetically."""
    subs = []
    for info in pkgutil.iter_modules(attnwidgets.__path__):
        if info.ispkg and not info.name.startswith("_"):
            module = importlib.import_module(f"{TOP}.{info.name}")
            if hasattr(module, "__all__"):
                subs.append(module)
    return [attnwidgets, *sorted(subs, key=lambda m: m.__name__)]


def where_defined(package: object, name: str, obj: object) -> str:
    """The dotted path griffe documents ``obj`` at: its defining module and qualified name where it has them; a
    submodule as itself; a constant at the submodule of ``package`` that assigns it."""
    if inspect.ismodule(obj):
        return obj.__name__
    module, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qual, str) and "<" not in qual and module.startswith(TOP):
        return f"{module}.{qual}"
    for mod_name, mod in sorted(sys.modules.items()):  # a constant: the deepest module of ours that holds it
        if mod_name.startswith(package.__name__ + ".") and vars(mod).get(name) is obj and \
                not hasattr(sys.modules.get(mod_name), "__path__"):
            return f"{mod_name}.{name}"
    return f"{package.__name__}.{name}"


def home_of(path: str, pages: list[str]) -> str:
    """The page (package name) a definition path belongs on: the longest public package that holds it."""
    best = TOP
    for page in pages:
        if (path == page or path.startswith(page + ".")) and len(page) > len(best):
            best = page
    return best


def summary_line(obj: object) -> str:
    doc = inspect.getdoc(obj) if not isinstance(obj, (int, float, str, tuple, dict, list, frozenset)) else None
    line = (doc or "").strip().split("\n\n")[0].replace("\n", " ")
    line = line.replace("|", "\\|")
    return line if len(line) <= 160 else line[:157] + "..."


def write_tasks(entries: dict[str, list[tuple[str, str, str, object]]]) -> None:
    """reference/tasks.md: every public name under the task it serves (docs/api_tasks.py), each linked to where it
    is documented on its package's page."""
    from api_tasks import TASKS, assign

    short = {p: "" if p == TOP else p.split(".", 1)[1] for p in entries}
    exports = {short[p]: {n: o for n, _path, _home, o in es} for p, es in entries.items()}
    where = {(short[p], n): (path, home, o) for p, es in entries.items() for n, path, home, o in es}
    placed, problems = assign(exports)
    if problems:
        raise SystemExit("docs/api_tasks.py: " + "; ".join(problems))
    with mkdocs_gen_files.open("reference/tasks.md", "w") as f:
        f.write("# The API by task\n\nEvery public name, under what it is for; each links to its documentation on "
                "its package's page.\n\n")
        for title, what, _names in TASKS:
            f.write(f"## {title}\n\n{what}\n\n| name | what it is |\n|---|---|\n")
            for package, name in placed[title]:
                path, home, obj = where[(package, name)]
                shown = f"{package}.{name}" if package else name
                f.write(f"| [`{shown}`]({Path(page_file(home)).name}#{path}) | {summary_line(obj)} |\n")
            f.write("\n")
    mkdocs_gen_files.set_edit_path("reference/tasks.md", "docs/api_tasks.py")


def page_file(package_name: str) -> str:
    return "reference/index.md" if package_name == TOP else f"reference/{package_name.split('.', 1)[1]}.md"


def write_reference() -> None:
    packages = public_packages()
    names = {p.__name__: list(getattr(p, "__all__", [])) for p in packages}
    pages = list(names)
    entries: dict[str, list[tuple[str, str, str, object]]] = {}  # page -> (name, path, home, obj)
    documented: set[str] = set()
    for package in packages:
        rows = []
        for name in names[package.__name__]:
            if name.startswith("__"):
                continue
            obj = getattr(package, name)
            if inspect.ismodule(obj) and obj.__name__ == f"{package.__name__}.{name}" and hasattr(obj, name):
                # a submodule named like the function it defines (studies.attention_probe): once the submodule is
                # imported it shadows the package's lazy name, so take the function, which __all__ means
                obj = getattr(obj, name)
            path = where_defined(package, name, obj)
            home = home_of(path, pages)
            if name not in names.get(home, []):  # defined under a package that does not export it: first exporter
                home = next((p for p in pages[1:] if name in names[p]), TOP)
            rows.append((name, path, home, obj))
        entries[package.__name__] = rows

    for package in packages:
        pname = package.__name__
        out = page_file(pname)
        with mkdocs_gen_files.open(out, "w") as f:
            title = "attnwidgets (top level)" if pname == TOP else pname
            f.write(f"# {title}\n\n")
            f.write(f"::: {pname}\n    options:\n      members: false\n      show_root_heading: false\n"
                    "      show_root_toc_entry: false\n\n")
            if pname == TOP:
                f.write("By task: [the API by task](tasks.md). ")
                f.write("The subpackages: " + ", ".join(f"[{p}]({Path(page_file(p)).name})" for p in pages[1:])
                        + ".\n\n")
            f.write("| name | what it is |\n|---|---|\n")
            for name, path, home, obj in entries[pname]:
                target = "" if home == pname else Path(page_file(home)).name
                f.write(f"| [`{name}`]({target}#{path}) | {summary_line(obj)} |\n")
            f.write("\n")
            for _name, path, home, obj in entries[pname]:
                if home != pname or path in documented:
                    continue
                documented.add(path)
                members = "      members: false\n" if inspect.ismodule(obj) else ""
                f.write(f"::: {path}\n    options:\n      show_root_heading: true\n      show_root_full_path: false\n"
                        f"      heading_level: 2\n{members}\n")
        mkdocs_gen_files.set_edit_path(out, "docs/gen_ref.py")
    write_tasks(entries)


def executed_copy(source: Path, folder: Path) -> object | None:
    """The executed copy of ``source`` in ``folder`` when its cells' sources are the notebook's own, else None."""
    copy = folder / source.name
    if not copy.is_file():
        return None
    try:
        executed = nbformat.read(copy, as_version=4)
    except Exception:  # a broken copy is no copy: the notebook is rendered without outputs
        return None
    fresh = nbformat.read(source, as_version=4)
    if [c.source for c in executed.cells] != [c.source for c in fresh.cells]:
        return None
    return executed


def write_tutorials() -> None:
    folder = Path(os.environ.get("ATTNWIDGETS_EXECUTED_NOTEBOOKS", ROOT / "test-artifacts" / "executed"))
    index = ["# Tutorials\n", "The tutorial notebooks of `notebooks/`, as they look after a run, each as the page "
             "`attnwidgets export` writes: every view is live from the state it saved (switch a head, hover, click a "
             "token) with no kernel and no network. What needs the model (an ablation re-run, a new text) needs "
             "JupyterLab: `attnwidgets lab`.\n"]
    for source in sorted((ROOT / "notebooks").glob("*.ipynb")):
        title = nbformat.read(source, as_version=4).cells[0].source.split("\n")[0].lstrip("# ").strip()
        nb = executed_copy(source, folder)
        if nb is not None:
            page, stats = page_of(nb, source.stem)
            with mkdocs_gen_files.open(f"tutorials/{source.stem}.html", "w") as f:
                f.write(page)
            index.append(f"- [{title}]({source.stem}.html) ({stats.live} live view{'' if stats.live == 1 else 's'}"
                         + (f", {stats.pictures} as pictures" if stats.pictures else "") + ")")
            continue
        nb = nbformat.read(source, as_version=4)
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(
            "*Rendered without outputs: no executed copy of this notebook was found in "
            f"`{os.path.relpath(folder, ROOT) if folder.is_relative_to(ROOT) else folder}` (the notebooks tier of "
            "`.ci/run` makes them; set `ATTNWIDGETS_EXECUTED_NOTEBOOKS` to another folder). `attnwidgets export "
            f"notebooks/{source.name}` writes this notebook as a page with live views.*"))
        with mkdocs_gen_files.open(f"tutorials/{source.name}", "w") as f:
            nbformat.write(nb, f)
        mkdocs_gen_files.set_edit_path(f"tutorials/{source.name}", f"notebooks/{source.name}")
        index.append(f"- [{title}]({source.name}) (without outputs)")
    with mkdocs_gen_files.open("tutorials/index.md", "w") as f:
        f.write("\n".join(index) + "\n")


def write_index() -> None:
    """The site's front page is the README (one text, two places), its links made relative to docs/."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("](docs/", "](")
    text += ("\n## On this site\n\n- [Tutorials](tutorials/index.md): the notebooks with their outputs\n"
             "- [API reference](reference/index.md): every public name, by package, and "
             "[by task](reference/tasks.md)\n"
             "- [Changelog](changelog.md): what changed, turn by turn\n"
             "- [Developing attnwidgets](develop.md): the build, the tests, CI\n")
    with mkdocs_gen_files.open("index.md", "w") as f:
        f.write(text)
    mkdocs_gen_files.set_edit_path("index.md", "README.md")


def write_root_pages() -> None:
    """CHANGELOG.md and DEVELOP.md as pages of the site (one text, two places), their links made relative to docs/;
    a link to a file outside docs/ (a test, a script) becomes its path as code, which the site cannot serve."""
    import re

    for name, out in (("CHANGELOG.md", "changelog.md"), ("DEVELOP.md", "develop.md")):
        text = (ROOT / name).read_text(encoding="utf-8").replace("](docs/", "](")
        text = re.sub(r"\[([^\]]+)\]\((?!https?:|#|[\w./-]+\.md\b)([^)\s]+)\)", r"\1 (`\2`)", text)
        with mkdocs_gen_files.open(out, "w") as f:
            f.write(text)
        mkdocs_gen_files.set_edit_path(out, name)


write_index()
write_root_pages()
write_reference()
write_tutorials()
