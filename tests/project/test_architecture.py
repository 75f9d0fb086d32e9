"""The layer rules of docs/architecture.md, read from the modules' own imports (lazy ones inside functions too).

If this fails, a module reached across a seam: move the helper to the lower layer (public there) instead of
widening the rule. Each rule names the package that may not import the other, so the failure says what to fix.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "attnwidgets"

#: package (first dotted part below attnwidgets) -> what it must never import, ours or third party.
FORBIDDEN: dict[str, set[str]] = {
    "result": {"torch", "transformers", "anywidget", "traitlets", "matplotlib", "runner", "studies", "analysis",
               "viewdata", "widgets", "plots", "teaching", "export", "cli", "magics", "fallback"},
    "analysis": {"torch", "transformers", "anywidget", "traitlets", "matplotlib", "runner", "studies", "viewdata",
                 "widgets", "plots", "teaching", "export", "cli", "magics", "fallback"},
    "viewdata": {"torch", "transformers", "anywidget", "traitlets", "matplotlib", "runner", "studies", "widgets",
                 "plots", "teaching", "export", "cli", "magics", "fallback"},
    "runner": {"anywidget", "traitlets", "matplotlib", "studies", "viewdata", "widgets", "plots", "teaching",
               "export", "cli", "magics", "fallback"},
    "studies": {"anywidget", "traitlets", "matplotlib", "viewdata", "widgets", "plots", "teaching", "export", "cli",
                "magics", "fallback"},
    "plots": {"anywidget", "traitlets", "widgets", "export", "cli", "magics", "fallback"},
    "widgets": {"plots", "teaching", "export", "cli", "magics"},
    "teaching": {"widgets", "plots", "export", "cli", "magics", "runner", "studies", "fallback"},
    "data": {"torch", "transformers", "anywidget", "traitlets", "matplotlib", "runner", "studies", "analysis",
             "viewdata", "widgets", "plots", "teaching", "export", "cli", "magics", "fallback"},
}
# lazy.py (a package's lazy names) imports nothing of ours, like result.
FORBIDDEN["lazy"] = FORBIDDEN["result"]
# qk_result, attention_stack, layer_qk, result_checks and token_text (what a token reads as) are part of the result
# layer.
FORBIDDEN["attention_stack"] = FORBIDDEN["result"]
FORBIDDEN["layer_qk"] = FORBIDDEN["result"]  # one layer's queries and keys, held by attention_stack's LazyStack
FORBIDDEN["result_checks"] = FORBIDDEN["result"]  # the checks a result's arrays pass (check_attention)
FORBIDDEN["token_text"] = FORBIDDEN["result"]
FORBIDDEN["qk_result"] = FORBIDDEN["result"]
FORBIDDEN["generation_result"] = FORBIDDEN["result"]
FORBIDDEN["chat_roles"] = FORBIDDEN["result"]  # who speaks where in a prompt: held by a GenerationResult
FORBIDDEN["router_result"] = FORBIDDEN["result"]  # a MoE model's routing, numpy
# persist (the saved-file format and its model tags) sits in the result layer, so every layer above can save with it.
FORBIDDEN["persist"] = FORBIDDEN["result"]
# html_repr (the compact table every result and analysis shows in a notebook) too, so every layer can use it.
FORBIDDEN["html_repr"] = FORBIDDEN["result"]
# _version (the package version, read by persist, cli and the top level) imports nothing of ours.
FORBIDDEN["_version"] = FORBIDDEN["result"]
# lab (`attnwidgets lab`: copy the tutorials, start JupyterLab) needs nothing of ours, so the command starts fast.
FORBIDDEN["lab"] = FORBIDDEN["result"]
# nbexport (`attnwidgets export`: runs a notebook in a kernel, writes its views' saved states into one page) too, but
# for export's script_json and the views' bundle files (viewdata.wire.STATIC), which the page needs as save_html's
# does; nbsanitize (what of a notebook may reach that page) imports nothing of ours.
FORBIDDEN["nbexport"] = FORBIDDEN["result"] - {"export", "viewdata"}
FORBIDDEN["nbsanitize"] = FORBIDDEN["result"]
# server (the extension's Launcher endpoint) builds on lab only, so a Jupyter Server loads it without the views.
FORBIDDEN["server"] = FORBIDDEN["result"]
# view_mime (a view's saved state in its display bundle) sits above widgets, beside export and fallback.
FORBIDDEN["view_mime"] = {"cli", "magics"}
# saved_doc (a saved file as its views' saved states, for the extension's document) sits beside view_mime; the server
# runs it as a process of its own, never imports it.
FORBIDDEN["saved_doc"] = {"cli", "magics", "server"}


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "static" not in p.parts)


def dotted(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names) for every import in the file, however deep inside functions."""
    here = dotted(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [alias.name for alias in node.names]
            found.append((node.lineno, module, names))
            # ``from attnwidgets import widgets`` / ``from . import masks`` import modules too
            folder = PACKAGE.parent / module.replace(".", "/")
            found += [(node.lineno, f"{module}.{name}", []) for name in names if module.startswith("attnwidgets")
                      and ((folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists())]
    return found


def layer(module: str) -> str:
    """'attnwidgets.runner.ablation' -> 'runner'; third-party 'torch.nn' -> 'torch'."""
    parts = module.split(".")
    return parts[1] if parts[0] == "attnwidgets" and len(parts) > 1 else parts[0]


def test_the_rules_see_every_layer() -> None:
    """A new top-level package must get a rule (or this test says which one has none)."""
    tops = {layer(dotted(p)) for p in modules()} - {"attnwidgets", "__init__", "__main__"}
    assert tops <= set(FORBIDDEN) | {"export", "cli", "magics", "fallback"}, sorted(tops - set(FORBIDDEN))


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layer_rules(path: Path) -> None:
    own = layer(dotted(path))
    banned = FORBIDDEN.get(own, set())
    broken = [f"line {line}: {own} imports {module}" for line, module, _ in imports(path) if layer(module) in banned]
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_other_modules_private_names(path: Path) -> None:
    """``from .x import _helper`` across modules: the helper belongs, public, in the lower module."""
    me = dotted(path)
    broken = [f"line {line}: from {module} import {name}" for line, module, names in imports(path)
              for name in names if name.startswith("_") and not name.startswith("__")
              and module.startswith("attnwidgets") and module != me]
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_other_packages_private_modules(path: Path) -> None:
    """``widgets._base`` is private to ``widgets``: from outside, import what its package exports."""
    me = dotted(path)
    broken = []
    for line, module, _ in imports(path):
        parts = module.split(".")
        private = [i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__")]
        if module.startswith("attnwidgets") and private and not me.startswith(".".join(parts[: private[0]])):
            broken.append(f"line {line}: imports {module}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("package", ["attnwidgets.result", "attnwidgets.analysis", "attnwidgets.viewdata"])
def test_importing_the_numpy_layers_loads_no_model_or_view_code(package: str) -> None:
    code = (f"import sys, {package}\n"
            "bad = [m for m in ('torch', 'transformers', 'matplotlib', 'anywidget', 'traitlets', 'ipywidgets',"
            " 'attnwidgets.widgets', 'attnwidgets.plots', 'attnwidgets.teaching', 'attnwidgets.runner',"
            " 'attnwidgets.studies') if m in sys.modules]\n"
            "print(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing {package} imported {out.stdout.strip()}"


def own_private_names(tree: ast.AST) -> set[str]:
    """Underscore names a module defines itself: functions, classes, attributes it assigns, class-level names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"setattr", "getattr"}:
            if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                names.add(node.args[1].value)
    return {n for n in names if n.startswith("_")}


@functools.cache
def package_private_names() -> dict[str, set[str]]:
    return {dotted(p): own_private_names(ast.parse(p.read_text(encoding="utf-8"))) for p in modules()}


# Underscore names of the libraries we build on that are their public protocol, not their internals.
PROTOCOL = {"_esm", "_css", "_repr_html_", "_repr_mimebundle_", "_repr_png_", "_repr_svg_", "_ipython_display_",
            "_model_id", "_asdict", "_replace", "_fields", "_make",
            # AttnWidget's hook for what a saved page must answer: declared on the base class, driven by export.py
            "_export_requests",
            # the name of a view's front-end bundle (js/src/views/<name>), which its saved state names (view_mime.py)
            "_bundle"}


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_reaching_into_other_modules(path: Path) -> None:
    """``runner._to_result`` from another module: an attribute another of our modules defines, read from outside.

    An object's own underscore attributes are fine inside the module that defines them (``self._x``, or another
    instance of the same class); reading one that only another module of ours defines is a private seam.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mine = own_private_names(tree)
    theirs = set().union(*(names for module, names in package_private_names().items() if module != dotted(path)))
    broken = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and node.attr not in PROTOCOL and node.attr not in mine and node.attr in theirs
                and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})):
            broken.append(f"line {node.lineno}: .{node.attr}")
    assert not broken, "\n".join(broken)
