"""The API reference by task (docs/api_tasks.py, written as reference/tasks.md by docs/gen_ref.py) holds every
public name of every public package exactly once, and names nothing that is not public (issue 33 §2: the reference
was only by package, in ``__all__`` order)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import attnwidgets

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs"))
from api_tasks import TASKS, assign


def _exports() -> dict[str, dict[str, object]]:
    out = {"": {n: getattr(attnwidgets, n) for n in attnwidgets.__all__}}
    for info in pkgutil.iter_modules(attnwidgets.__path__):
        if info.ispkg and not info.name.startswith("_"):
            module = importlib.import_module(f"attnwidgets.{info.name}")
            if hasattr(module, "__all__"):
                out[info.name] = {n: getattr(module, n) for n in module.__all__}
    return out


def test_every_public_name_is_under_exactly_one_task() -> None:
    exports = _exports()
    placed, problems = assign(exports)
    assert not problems, "\n".join(problems)
    assert all(placed[title] for title, _what, _names in TASKS), "a task with no name"
    shown = {(p, n) for names in placed.values() for p, n in names}
    assert ("", "run") in shown and ("studies", "patch_heads") in shown and ("widgets", "link_span") in shown


def test_a_name_in_two_tasks_or_in_none_is_a_problem(monkeypatch) -> None:
    import api_tasks

    exports = _exports()
    moved = [(t, w, [n for n in ns if n != "widgets.*"]) for t, w, ns in TASKS]
    monkeypatch.setattr(api_tasks, "TASKS", moved)
    assert any(p.startswith("widgets.AttnWidget: in 0 tasks") for p in api_tasks.assign(exports)[1])
    twice = [*TASKS, ("again", "", ["studies.patch_heads", "runner.nothing"])]
    monkeypatch.setattr(api_tasks, "TASKS", twice)
    problems = api_tasks.assign(exports)[1]
    assert "studies.patch_heads: in 2 tasks ['What a head does', 'again']" in problems
    assert "runner.nothing: not a public name" in problems
