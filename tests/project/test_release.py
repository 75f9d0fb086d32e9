"""The release build (issue 32 §5): ``python -m build`` makes an sdist and a wheel that carry the built bundles, and
the wheel installs into a clean venv with no Node on PATH and no clone, where the views and the export find them.

The release workflow (.github/workflows/release.yml) runs the same build and this test before it publishes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ["heatmap.js", "model_view.js", "page.js", "page_views.js", "page_math.js", "katex.css"]


@pytest.mark.slow
def test_sdist_and_wheel_carry_the_bundles_and_the_wheel_installs_without_node(tmp_path):
    static = ROOT / "attnwidgets" / "static"
    if not all((static / name).is_file() for name in SHIPPED):
        pytest.skip("build the front end first (npm run build in js/)")
    dist = tmp_path / "dist"
    # sdist first, then the wheel from the sdist (what `python -m build` does): the wheel's bundles come from the sdist,
    # so neither the wheel nor a `pip install` of the sdist needs Node.
    env = {**os.environ, "HATCH_JUPYTER_BUILDER_SKIP_NPM": "1"}
    build = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)],
                           capture_output=True, text=True, env=env, timeout=600)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    sdist = next(dist.glob("attnwidgets-*.tar.gz"))
    wheel = next(dist.glob("attnwidgets-*.whl"))
    with tarfile.open(sdist) as tf:
        in_sdist = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    with zipfile.ZipFile(wheel) as zf:
        in_wheel = set(zf.namelist())
    for name in SHIPPED:
        assert f"attnwidgets/static/{name}" in in_sdist, f"{name} missing from the sdist"
        assert f"attnwidgets/static/{name}" in in_wheel, f"{name} missing from the wheel"
    assert not any("node_modules" in n for n in in_sdist | in_wheel)
    labext = [n for n in in_wheel if "/share/jupyter/labextensions/attnwidgets/" in n]
    # (the JupyterLab extension ships here once the ext branch lands: then it must be in the wheel)
    ext_built = (ROOT / "attnwidgets" / "labextension").is_dir()
    assert bool(labext) or not ext_built, "the built labextension is missing from the wheel"

    # A clean venv: no pip install of dependencies (offline), so they are borrowed from this interpreter's
    # site-packages through a path entry after the venv's own (whose .pth files, e.g. an editable install of this
    # checkout, are therefore not run): attnwidgets itself can only come from the wheel.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / ("python.exe" if os.name == "nt" else "python")
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    install = subprocess.run([py, "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    path = str(bindir)  # no Node on this PATH
    assert shutil.which("node", path=path) is None and shutil.which("npm", path=path) is None
    code = f"""
import pathlib, attnwidgets as aw
from attnwidgets.viewdata.wire import STATIC, bundle_text
import numpy as np
assert "site-packages" in aw.__file__, aw.__file__
for name in {SHIPPED!r}:
    assert (STATIC / name).is_file(), name
assert "render" in bundle_text("heatmap")
r = aw.AttentionResult.from_arrays(np.eye(3, dtype=np.float32), ["a", "b", "c"])
from attnwidgets.export import page_html
page = page_html(aw.AttentionHeatmap(r))
assert "render" in page
print("ok", aw.__version__, aw.__file__)
"""
    run = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={"PATH": path, "HOME": str(tmp_path), "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("ok ") and str(venv) in run.stdout
    if ext_built:  # the extension is installed by the wheel alone, where JupyterLab looks for extensions
        find = ("import json, pathlib, jupyter_core.paths as p\n"
                "hits = [pathlib.Path(d) / 'attnwidgets' / 'package.json' for d in p.jupyter_path('labextensions')]\n"
                "hit = next(h for h in hits if h.is_file())\n"
                "print(hit, json.loads(hit.read_text())['name'])")
        listed = subprocess.run([py, "-c", find], capture_output=True, text=True, timeout=120,
                                env={"PATH": path, "HOME": str(tmp_path)})
        assert listed.returncode == 0, listed.stderr[-2000:]
        assert listed.stdout.startswith(str(venv)) and listed.stdout.strip().endswith(" attnwidgets"), listed.stdout
    cli = subprocess.run([bindir / "attnwidgets", "--version"], capture_output=True, text=True, timeout=120,
                         env={"PATH": path, "HOME": str(tmp_path)})
    assert cli.returncode == 0 and cli.stdout.startswith("attnwidgets "), cli.stderr
