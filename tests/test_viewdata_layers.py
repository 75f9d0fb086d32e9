"""The layer rules around viewdata, read from the imports: viewdata sits below widgets and plots and imports neither;
plots never import widgets; widgets never import the teaching kit; nobody reaches into another module's underscore
names or another package's underscore modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "attnwidgets"

#: Files allowed to import another package's underscore module, each with the reason.
UNDERSCORE_MODULE_EXCEPTIONS = {
    "cli.py": "imports widgets._base.AttnWidget; cli.py is being changed on another branch (issue 12)",
}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(absolute module, imported names) of every import in ``path``, relative imports resolved."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            out.append((module, [a.name for a in node.names]))
    return out


def _files(sub: str) -> list[Path]:
    return sorted((PACKAGE / sub).glob("*.py"))


def _within(module: str, names: list[str], package: str) -> bool:
    """True when the import reaches ``package`` (``from attnwidgets import widgets`` counts too)."""
    if module == package or module.startswith(package + "."):
        return True
    parent, _, last = package.rpartition(".")
    return module == parent and last in names


@pytest.mark.parametrize("path", _files("viewdata"), ids=lambda p: p.name)
def test_viewdata_imports_only_numpy_result_and_analysis(path):
    allowed_own = ("attnwidgets.viewdata", "attnwidgets.result", "attnwidgets.analysis")
    for module, names in _imports(path):
        root = module.split(".")[0]
        if root == "attnwidgets":
            assert module.startswith(allowed_own), f"{path.name} imports {module} {names}"
        else:
            # pandas only to read a tidy statistics frame, imported where it is used (as analysis/ does)
            assert root in ("numpy", "pandas") or root in sys.stdlib_module_names, f"{path.name} imports {module}"


def test_importing_viewdata_loads_no_widget_plot_or_model_code():
    code = ("import sys, attnwidgets.viewdata\n"
            "bad = [m for m in ('torch', 'transformers', 'matplotlib', 'anywidget', 'traitlets', 'ipywidgets',"
            " 'attnwidgets.widgets', 'attnwidgets.plots', 'attnwidgets.teaching', 'attnwidgets.runner')"
            " if m in sys.modules]\n"
            "print(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing attnwidgets.viewdata imported {out.stdout.strip()}"


@pytest.mark.parametrize("path", _files("plots"), ids=lambda p: p.name)
def test_plots_never_import_widgets(path):
    for module, names in _imports(path):
        assert not _within(module, names, "attnwidgets.widgets"), f"plots/{path.name} imports {module} {names}"


@pytest.mark.parametrize("path", _files("widgets"), ids=lambda p: p.name)
def test_widgets_never_import_the_teaching_kit(path):
    for module, names in _imports(path):
        assert not _within(module, names, "attnwidgets.teaching"), f"widgets/{path.name} imports {module} {names}"


def test_no_module_reaches_into_another_modules_underscore_names():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        own = ".".join(["attnwidgets", *path.relative_to(PACKAGE).parts[:-1]])
        for module, names in _imports(path):
            if not module.startswith("attnwidgets"):
                continue
            bad += [f"{rel}: from {module} import {n}" for n in names if n.startswith("_")]
            # an underscore module (widgets._base) is private to its own package
            parts = module.split(".")
            private = [i for i, p in enumerate(parts) if p.startswith("_")]
            outside = private and not own.startswith(".".join(parts[: private[0]]))
            if outside and rel not in UNDERSCORE_MODULE_EXCEPTIONS:
                bad.append(f"{rel}: imports {module}")
    assert not bad, "\n".join(bad)
