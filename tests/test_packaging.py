"""The wheel carries the built front end, one bundle per widget entry in js/src."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_contains_every_bundle(tmp_path):
    entries = sorted(p.stem for p in (ROOT / "js" / "src").glob("*.ts") if not p.name.endswith(".test.ts"))
    assert "heatmap" in entries
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, text=True,
    )
    wheel = next(tmp_path.glob("attnwidgets-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for entry in entries:
        assert f"attnwidgets/static/{entry}.js" in names, f"{entry}.js missing from the wheel"
    assert any(n.startswith("attnwidgets/data/") for n in names), "bundled data files must ship"
    bundle = zipfile.ZipFile(wheel).read("attnwidgets/static/heatmap.js").decode()
    assert "render" in bundle and "innerHTML" not in bundle


def test_bundles_have_no_cdn_or_markup_sinks():
    static = ROOT / "attnwidgets" / "static"
    bundles = list(static.glob("*.js"))
    assert bundles, "build the front end first (npm run build in js/)"
    for b in bundles:
        text = b.read_text()
        for bad in ("unpkg.com", "cdn.jsdelivr", "esm.sh", "cdnjs", "innerHTML", "insertAdjacentHTML"):
            assert bad not in text, f"{b.name} contains {bad}"
