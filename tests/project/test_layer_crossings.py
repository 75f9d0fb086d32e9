"""An ablation click crosses the package's layers a bounded number of times and changes its numbers' form a bounded
number of times (issue 33 §4), counted by ``benchmarks/layer_crossings.py``'s own profile hook, so the counts the
changelog reports cannot creep back.

Before issue 33 the click below (two sentence pairs, one head zeroed) made 90 crossings through 21 doors and 27
changes of form (22 ``ndarray.tolist``: tokens read from ids again on every run and replay lengths worked out per
layer; a DataFrame built from rows per text and read back with ``itertuples``); after it, 35 crossings through 18
doors and 3 changes (the two arrays packed for the wire, and the batch's prefix lengths once per tokenisation).
The bounds are those counts: a change that adds a door or a change of form on this path fails here, and says which.
The texts are this file's own, so no other test's cached runs make the click cheaper than it is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import attnwidgets as aw

ROOT = Path(__file__).resolve().parents[2]

TEXTS = ["A crossing counted by the project tests.", "Nobody else runs this sentence."]
PAIRS = ["The counted crossing of a project test.", "This sentence is run by nobody else."]


@pytest.fixture(scope="module")
def crossings() -> ModuleType:
    spec = importlib.util.spec_from_file_location("layer_crossings", ROOT / "benchmarks" / "layer_crossings.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("layer_crossings", module)
    spec.loader.exec_module(module)
    return module


def _doors(count) -> str:
    return "\n".join(f"  {n:>3}  {a} -> {b}" for (a, b), n in count.doors.most_common())


def test_an_ablation_click_crosses_each_layer_a_bounded_number_of_times(crossings):
    count, _ = crossings.measure(crossings.ablation_click(TEXTS, PAIRS))
    assert count.crossings <= 35 and len(count.doors) <= 18, (
        f"{count.crossings} crossings through {len(count.doors)} doors (at most 35 through 18):\n{_doors(count)}"
    )
    changes = dict(count.changes)
    sites = "\n".join(f"  {n:>3}  {name} in {site}" for (name, site), n in count.change_sites.most_common())
    assert sum(changes.values()) <= 3, f"{changes} (at most 3 changes of form):\n{sites}"
    assert changes.get("ndarray.tolist", 0) <= 1, sites
    assert changes.get("pack") == 2, sites  # the head's two maps, packed for the wire: the hook does count
    frames = {k: v for k, v in changes.items() if k.startswith(("DataFrame", "Series"))}
    assert not frames, f"the click built or read a DataFrame: {frames}\n{sites}"


def test_a_heatmap_build_crosses_each_layer_a_bounded_number_of_times(crossings):
    result = aw.run(TEXTS[0])
    count, _ = crossings.measure(lambda: aw.AttentionHeatmap(result))
    assert count.crossings <= 34 and len(count.doors) <= 29, _doors(count)
    assert dict(count.changes) == {"pack": 1}  # the payload, packed once for the wire
