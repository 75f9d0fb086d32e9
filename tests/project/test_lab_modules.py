"""The extension's list of view modules (js/src/lab/modules.ts, what saved states are drawn with) names exactly the
views Python's registry has (attnwidgets.viewdata.views.VIEWS, through STATES): a view added on one side only would
save states the extension cannot draw, or ship a module nothing saves for. The two lists are in two languages; this
keeps them one."""

from __future__ import annotations

import re
from pathlib import Path

from attnwidgets.viewdata.views import STATES

MODULES_TS = Path(__file__).resolve().parents[2] / "js" / "src" / "lab" / "modules.ts"


def modules_ts_names(text: str) -> set[str]:
    """The keys of ``MODULES`` in modules.ts, each imported from ``../views/<name>/index``."""
    imported = set(re.findall(r'^import (\w+) from "\.\./views/(\w+)/index";', text, flags=re.M))
    assert all(a == b for a, b in imported), f"an import named unlike its folder: {imported}"
    body = re.search(r"export const MODULES = \{(.*?)\}", text, flags=re.S)
    assert body, "modules.ts has no MODULES"
    keys = set(re.findall(r"(\w+),", body.group(1)))
    assert keys == {a for a, _ in imported}, "MODULES lists what it does not import, or the reverse"
    return keys


def test_the_parser_can_fail():
    text = 'import heatmap from "../views/heatmap/index";\nexport const MODULES = {\n  heatmap,\n} as unknown;\n'
    assert modules_ts_names(text) == {"heatmap"}
    assert modules_ts_names(text) != set(STATES)


def test_the_extension_draws_every_view_python_saves():
    assert modules_ts_names(MODULES_TS.read_text(encoding="utf-8")) == set(STATES)
