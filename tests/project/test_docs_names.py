"""Every name the views guide's table gives (`AttentionHeatmap`, `HeadStatsGrid.from_sinks`, `plot_sinks`, ...)
exists where the guide says names live (the top level, ``attnwidgets.plots``, ``.analysis``, ``.studies``,
``.teaching``, ``.widgets``, ``.runner``): the table once named ``sink_grid`` and ``coref_grid``, which never existed
(issue 33 §2)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import attnwidgets as aw

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "guide" / "views.md"]  # the API table (the others tabulate measurements)
PLACES = ["", ".widgets", ".plots", ".analysis", ".studies", ".teaching", ".runner"]
#: Words a table uses for "the object you have" rather than an API name.
OWN = {"result": "AttentionResult", "stats": "CorpusStats"}


def table_names(text: str) -> list[str]:
    """The code spans in a markdown page's table rows that look like Python names (a call's arguments dropped)."""
    names = []
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        for span in re.findall(r"`([^`]+)`", line):
            name = span.split("(", 1)[0]
            if re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*", name) and not name.startswith("."):
                names.append(name)
    return names


def resolve(name: str) -> object:
    """The object ``name`` means, looked up as the guide says: the top level, then each subpackage."""
    parts = name.split(".")
    first = OWN.get(parts[0], parts[0])
    if first == "attnwidgets":
        obj: object = aw
        parts = parts[1:]
    else:
        for place in PLACES:
            module = importlib.import_module("attnwidgets" + place)
            if hasattr(module, first):
                obj = getattr(module, first)
                break
        else:
            raise LookupError(f"{first!r} is in none of attnwidgets{', attnwidgets'.join(PLACES)}")
        parts = parts[1:]
    for part in parts:
        if not hasattr(obj, part) and isinstance(obj, type(aw)):
            importlib.import_module(f"{obj.__name__}.{part}")  # a submodule not imported yet
        if not hasattr(obj, part) and isinstance(obj, type):
            fields = getattr(obj, "__dataclass_fields__", {})
            if part in fields:  # a dataclass field (result.attention)
                obj = fields[part]
                continue
        obj = getattr(obj, part)
    return obj


def test_the_lookup_can_fail():
    assert table_names("| a | `sink_grid`, `X(y=1)` | `not a name` |\n`outside`") == ["sink_grid", "X"]
    with pytest.raises(LookupError):
        resolve("sink_grid")
    with pytest.raises(AttributeError):
        resolve("HeadStatsGrid.from_nowhere")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_name_in_a_guide_table_exists(page: Path):
    missing = []
    for name in table_names(page.read_text(encoding="utf-8")):
        try:
            resolve(name)
        except (LookupError, AttributeError, ImportError) as e:
            missing.append(f"{name}: {e}")
    assert not missing, f"{page.name} names what does not exist:\n" + "\n".join(missing)
