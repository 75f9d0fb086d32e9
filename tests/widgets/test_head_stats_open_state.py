"""The per-head statistic views open their comm with their statistics in the state: the page builds its model from
that first state, and a view drawn from it before the next update failed in notebook 06 ("Cannot read properties of
undefined (reading 'buffer')" in the head-roles grid; tests/browser/test_notebooks_browser.py draws that case)."""

from __future__ import annotations

import comm
import numpy as np
import pytest

import attnwidgets as aw


@pytest.fixture
def opened(monkeypatch):
    """The state each widget's comm opens with; its binary buffers put back where ``buffer_paths`` say."""
    states: list[dict] = []
    create = comm.create_comm

    def spy(**kwargs):
        state = kwargs["data"]["state"]
        for path, buffer in zip(kwargs["data"]["buffer_paths"], kwargs.get("buffers") or [], strict=True):
            node = state
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = bytes(buffer)
        states.append(state)
        return create(**kwargs)

    monkeypatch.setattr(comm, "create_comm", spy)
    return states


def _toy() -> aw.AttentionResult:
    a = np.tril(np.ones((7, 7), np.float32))
    a /= a.sum(1, keepdims=True)
    return aw.AttentionResult.from_arrays(np.stack([a, a])[None], list("^abcabc"), kind="decoder")


@pytest.mark.parametrize("make", [
    lambda r: aw.HeadStatsGrid(r),
    lambda r: aw.EntropyBars(r),
    lambda r: aw.HeadClusterMap([r, r]),
], ids=["HeadStatsGrid", "EntropyBars", "HeadClusterMap"])
def test_first_state_holds_the_statistics(opened, make):
    widget = make(_toy())
    first = [s for s in opened if s.get("_esm") == widget._esm]
    assert len(first) == 1, "one comm per widget"
    state = first[0]
    names = widget._meta["names"]
    assert state["_meta"]["names"] == names and state["_meta"]["shape"] == [1, 2]
    stats = state["_payload"]["stats"]
    assert stats["shape"] == [len(names), 1, 2] and len(stats["buffer"]) == len(names) * 2 * 4


def test_grid_opens_with_its_statistic_chosen(opened):
    from attnwidgets.analysis.roles import ROLES, HeadRoles

    view = aw.HeadRolesView(HeadRoles({k: np.array([[0.1, 0.7]]) for k in ROLES}, _toy(), 3, 1, 1, 0, "toy"))
    state = next(s for s in opened if s.get("_esm") == view.grid._esm)
    assert state["statistic"] == "induction" and "stats" in state["_payload"]
    plain = aw.HeadStatsGrid(_toy())
    state = [s for s in opened if s.get("_esm") == plain._esm][-1]
    assert state["statistic"] == plain.statistic != ""
