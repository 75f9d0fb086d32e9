"""The README's and the docs pages' python examples run, and every widget that takes a result takes one of the
bundled model.

The examples are read from README.md and docs/**/*.md here, so a new one is run without touching this file (the
README is the landing page; the long examples live in docs/guide/); a block is skipped only
by a marker in ``SKIPPED`` with the reason (it needs the network, a cluster, or names the reader's own data), and a
marker that no longer matches a block fails. ``FROM_A_RESULT`` builds each widget (and each of its paths that goes
back to the model, such as ``measure="norms"`` and the ablation widget's re-runs) from ``aw.run(...)`` on the bundled
default model; ``NOT_FROM_A_RESULT`` names the widgets that take something else, and why.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import pytest

import attnwidgets as aw
from attnwidgets.result import BUNDLED_SOURCE, AttentionResult

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: the markdown files whose ```python blocks are examples: the README, then every docs page.
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]

#: marker (a string only that block holds) -> why the block cannot run in CI.
SKIPPED: dict[str, str] = {
    "eight_thousand_token_text": "a placeholder model ('path/or/hub-id') with a placeholder text, and 'gpt2' from the "
                                 "hub: needs the network (long inputs run offline in "
                                 "tests/viewdata/test_long_views.py)",
    'ray_address="auto"': "connects to a running Ray cluster and loads a 7B model from the hub on GPUs; `texts`, "
                          "`runner` and `task` are the reader's own",
    'model="bert-base-uncased"': "loads bert-base-uncased, gpt2 and opus-mt-en-de from the hub: needs the network",
}


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of every ```python block of a markdown text."""
    blocks = []
    for m in re.finditer(r"^```python[ \t]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
        blocks.append((text.count("\n", 0, m.start()) + 2, m.group(1)))
    return blocks


#: (where, code): "README.md:12" or "docs/guide/scale.md:20", and the block.
BLOCKS = [(f"{page.relative_to(ROOT).as_posix()}:{line}", code)
          for page in PAGES for line, code in python_blocks(page.read_text(encoding="utf-8"))]


def test_blocks_are_found_and_every_skip_names_one_block():
    assert any(where.startswith("README.md:") for where, _ in BLOCKS), "README.md has no ```python blocks"
    assert python_blocks("text\n```python\nx = 1\n```\n```bash\nls\n```\n") == [(3, "x = 1\n")]
    for marker in SKIPPED:
        holding = [where for where, code in BLOCKS if marker in code]
        assert len(holding) == 1, f"skip marker {marker!r} is in {len(holding)} example blocks, not one: update SKIPPED"
    assert any(not any(m in code for m in SKIPPED) for _, code in BLOCKS), "every example is skipped"


@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_readme_example_runs(where: str, code: str, tmp_path, monkeypatch):
    reason = next((why for marker, why in SKIPPED.items() if marker in code), None)
    if reason is not None:
        pytest.skip(f"{where}: {reason}")
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(code, where, "exec"), namespace)


# -- every widget from a result of the bundled model ---------------------------------------------------------------


@pytest.fixture(scope="module")
def results() -> list[AttentionResult]:
    return [aw.run("The cat sat on the mat because it was tired."), aw.run("A dog barked at the moon.")]


#: (case id, widget class, how to build it from results of aw.run on the bundled model)
FROM_A_RESULT: list[tuple[str, type, Callable[[list[AttentionResult]], Any]]] = [
    ("AttentionHeatmap", aw.AttentionHeatmap, lambda rs: aw.AttentionHeatmap(rs[0], layer=2, head=-1)),
    ("AttentionHeatmap-words", aw.AttentionHeatmap, lambda rs: aw.AttentionHeatmap(rs[0], words=True)),
    ("AttentionHeatmap-norms", aw.AttentionHeatmap, lambda rs: aw.AttentionHeatmap(rs[0], measure="norms")),
    ("ModelView", aw.ModelView, lambda rs: aw.ModelView(rs[0])),
    ("ModelView-norms", aw.ModelView, lambda rs: aw.ModelView(rs[0], measure="norms")),
    ("HeadView", aw.HeadView, lambda rs: aw.HeadView(rs[0], layer=1)),
    ("AttentionProfile", aw.AttentionProfile, lambda rs: aw.AttentionProfile(rs[0], layer=3, query=2)),
    ("EntropyBars", aw.EntropyBars, lambda rs: aw.EntropyBars(rs[0])),
    ("EntropyBars-list", aw.EntropyBars, lambda rs: aw.EntropyBars(rs)),
    ("EntropyBars-norms", aw.EntropyBars, lambda rs: aw.EntropyBars(rs[0], measure="norms")),
    ("HeadStatsGrid", aw.HeadStatsGrid, lambda rs: aw.HeadStatsGrid(rs[0])),
    ("HeadStatsGrid-list", aw.HeadStatsGrid, lambda rs: aw.HeadStatsGrid(rs)),
    ("HeadStatsGrid.from_sinks", aw.HeadStatsGrid, lambda rs: aw.HeadStatsGrid.from_sinks(rs[0])),
    ("HeadClusterMap", aw.HeadClusterMap, lambda rs: aw.HeadClusterMap(rs)),
    ("AttentionCompare", aw.AttentionCompare, lambda rs: aw.AttentionCompare(rs[0], rs[1])),
    ("AttentionCompare-ablated", aw.AttentionCompare,
     lambda rs: aw.AttentionCompare(rs[0], aw.run(rs[0].text, ablation=aw.runner.Ablation.layers([2])))),
    ("AblationWidget", aw.AblationWidget, lambda rs: aw.AblationWidget(rs[0])),
    ("AblationWidget-list", aw.AblationWidget, lambda rs: aw.AblationWidget(rs, watch="drift")),
]

#: widget -> what it takes instead of a result.
NOT_FROM_A_RESULT: dict[str, str] = {
    "QKStepThrough": "a QKCapture (aw.runner.capture_qk(text)): queries and keys, which a result does not keep",
    "GenerationView": "a GenerationResult of aw.generate, which needs a decoder (the bundled model is an encoder)",
    "FillMask": "a text with [MASK] (it runs the masked-LM head itself)",
    "PositionalExplorer": "an encoding name or a position table (PositionalExplorer.from_model)",
    "MaskExplorer": "a mask name",
    "HeadRolesView": "head_roles(...) scores of a decoder",
    "QKSpaceView": "a QKSpace (attnwidgets.studies.qk_space(texts, layer, head)): one head over many texts",
    "PatchingView": "a PatchingResult (attnwidgets.studies.patch_heads(clean, corrupted)): it runs both inputs",
    "RouterView": "a RouterResult of aw.runner.route, which needs a mixture-of-experts decoder",
}


def test_every_widget_is_built_from_a_result_or_says_why_not():
    exported = {name for name, obj in inspect.getmembers(aw.widgets, inspect.isclass)
                if name in aw.widgets.__all__ and name != "AttnWidget"
                and (issubclass(obj, aw.widgets.AttnWidget) or name.endswith("View"))}
    covered = {cls.__name__ for _, cls, _ in FROM_A_RESULT} | set(NOT_FROM_A_RESULT)
    assert exported <= covered, f"widgets with no case here: {sorted(exported - covered)}"
    assert not {cls.__name__ for _, cls, _ in FROM_A_RESULT} & set(NOT_FROM_A_RESULT)


@pytest.mark.parametrize(("case", "cls", "make"), FROM_A_RESULT, ids=[c for c, _, _ in FROM_A_RESULT])
def test_widget_from_a_bundled_result(case: str, cls: type, make: Callable[[list[AttentionResult]], Any], results):
    assert results[0].model.source == BUNDLED_SOURCE
    w = make(results)
    assert isinstance(w, cls)
    assert w._error == "", f"{case}: the page would show {w._error!r}"
    if case.endswith("-norms"):
        assert w.measure == "norms", f"{case}: fell back to the weights"
    if isinstance(w, aw.AblationWidget):  # it re-runs: the same shared runner, the results' own texts
        assert w._runner is aw.runner.get_runner()
        assert w.result.text == results[0].text and len(w.frame) == (1 if case == "AblationWidget" else 2)
        w.ablation = aw.runner.Ablation.heads({(5, 3): "zero"})
        assert w._error == "" and w.result.ablation == aw.runner.Ablation.heads({(5, 3): "zero"})
