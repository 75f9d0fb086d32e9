"""Every path of this repository that the code, tests and docs name exists (issue 33 §4: six state modules named
``js/src/<view>.ts`` long after the front ends moved to ``js/src/views/<view>/``). CHANGELOG.md keeps history, so it
may name what is gone; a name with a placeholder (``<view>``, ``*``, ``NAME``) or a prefix (``shipped_``) is a
pattern, not a path."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMED = re.compile(r"(?<![\w/.])((?:attnwidgets|js|tests|docs|benchmarks|notebooks|\.ci)/[\w./-]*\w)")
TEXTS = (".py", ".md", ".ts", ".mjs", ".yml", ".toml")
#: written by a build or a run, not kept in git; or a pattern
MADE = ("attnwidgets/tutorials", "attnwidgets/static", "attnwidgets/labextension", "benchmarks/NAME.py")


def test_every_path_named_exists() -> None:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    missing = []
    for name in files:
        if name == "CHANGELOG.md" or name.startswith("changes/") or not name.endswith(TEXTS):
            continue
        path = ROOT / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="ignore")
        for m in NAMED.finditer(text):
            named = m.group(1).rstrip(".")
            if named.startswith(MADE) or named.endswith("_") or (ROOT / named).exists():
                continue
            missing.append(f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {named}")
    assert not missing, "paths named that do not exist:\n" + "\n".join(missing)
