"""``attnwidgets.analysis`` loads its modules on first use (as ``attnwidgets.studies`` does): importing the package
imports none of them, every public name is still there (``from attnwidgets.analysis import X`` and ``import *``), and
the names type checkers and the API docs read (the ``TYPE_CHECKING`` imports) are exactly the lazy ones."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import attnwidgets.analysis as analysis


def test_importing_the_package_imports_none_of_its_modules() -> None:
    code = ("import sys, attnwidgets.analysis as a\n"
            "before = sorted(m for m in sys.modules if m.startswith('attnwidgets.analysis.'))\n"
            "from attnwidgets.analysis import row_entropy\n"
            "after = sorted(m for m in sys.modules if m.startswith('attnwidgets.analysis.'))\n"
            "print(before, 'attnwidgets.analysis.surface' in after, 'attnwidgets.analysis.coref' in after)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["[]", "True", "False"]


def test_every_public_name_is_the_object_its_module_defines() -> None:
    for name, module in analysis._LAZY.items():
        assert getattr(analysis, name) is getattr(importlib.import_module(module), name), name
    assert sorted(analysis.__all__) == sorted(analysis._LAZY)
    namespace: dict[str, object] = {}
    exec("from attnwidgets.analysis import *", namespace)
    assert set(analysis.__all__) <= set(namespace)
    assert analysis.sampling is importlib.import_module("attnwidgets.analysis.sampling")  # a submodule, as before
    assert {"surface_stats", "surface", "words"} <= set(dir(analysis))


def test_the_type_checking_imports_name_every_lazy_name_from_its_module() -> None:
    tree = ast.parse(Path(analysis.__file__).read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    seen = {alias.name: f"attnwidgets.analysis.{node.module}" for node in guarded.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert seen == analysis._LAZY
    files = {p.stem for p in Path(analysis.__file__).parent.glob("*.py")} - {"__init__"}
    assert set(analysis._MODULES) == files
