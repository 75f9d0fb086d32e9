"""Each view's display bundle carries its saved state under ``application/vnd.attnwidgets.view+json``
(:mod:`attnwidgets.view_mime`), within a size budget, so the extension can draw it without a kernel."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest
from test_fallback import VIEWS, _result

import attnwidgets as aw
from attnwidgets import view_mime
from attnwidgets.export import request_key
from attnwidgets.view_mime import VIEW_MIME, set_view_budget, view_state

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(autouse=True)
def default_budget(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ATTNWIDGETS_VIEW_SECONDS", "120")  # every view saved however busy the machine is
    set_view_budget(None)
    yield
    set_view_budget(None)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_every_view_saves_its_state_in_its_bundle(name: str) -> None:
    widget = VIEWS[name]()
    data, _ = widget._repr_mimebundle_()
    assert WIDGET_VIEW in data and "text/plain" in data
    entry = data[VIEW_MIME]
    assert entry["version"] == 1 and entry["widget"] == name and entry["bundle"] == type(widget)._bundle
    assert entry["attnwidgets"] == aw.__version__
    assert entry["scope"] == "all", entry.get("omitted")
    assert "_payload" in entry["state"] and "_esm" not in entry["state"]
    json.dumps(entry, allow_nan=False)  # what nbformat writes: plain JSON


def test_the_replies_answer_what_the_view_asks() -> None:
    widget = aw.AttentionHeatmap(_result(), layer=1, head=2)
    entry = view_state(widget)
    request = {"type": "request", "id": 3, "what": "matrix", "layer": 0, "head": 1, "kind": "self", "words": False}
    keys = set(entry["replies"])
    assert any(json.loads(k).get("layer") == 0 and json.loads(k).get("head") == 1 for k in keys), sorted(keys)[:3]
    assert all(isinstance(r["buffers"], list) and "content" in r for r in entry["replies"].values())
    assert request_key(request).startswith("{")


def test_past_the_budget_the_view_on_screen_then_a_line_saying_why() -> None:
    widget = aw.AttentionHeatmap(_result(), layer=1, head=2)
    full = len(json.dumps(view_state(widget)))
    light = view_state(widget, budget=full // 3)
    assert light["scope"] == "view" and len(light["replies"]) < len(view_state(widget)["replies"])
    gone = view_state(widget, budget=100)
    assert "state" not in gone and "replies" not in gone
    assert "budget" in gone["omitted"] and "set_view_budget" in gone["omitted"]
    assert "ATTNWIDGETS_VIEW_BUDGET" in gone["omitted"]


def test_the_budget_is_settable_and_zero_switches_it_off() -> None:
    set_view_budget(0)
    entry = aw.AttentionHeatmap(_result())._repr_mimebundle_()[0][VIEW_MIME]
    assert "switched off" in entry["omitted"]
    with pytest.raises(ValueError, match="number of bytes"):
        set_view_budget(-1)
    with pytest.raises(ValueError, match="number of bytes"):
        set_view_budget(2.5)  # type: ignore[arg-type]


def test_the_environment_sets_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNWIDGETS_VIEW_BUDGET", "1234")
    try:
        assert importlib.reload(view_mime).view_budget() == 1234
        monkeypatch.setenv("ATTNWIDGETS_VIEW_BUDGET", "lots")
        assert importlib.reload(view_mime).view_budget() == view_mime.VIEW_BUDGET
    finally:
        monkeypatch.delenv("ATTNWIDGETS_VIEW_BUDGET")
        importlib.reload(view_mime)


def test_a_view_that_cannot_be_saved_says_so_and_still_displays() -> None:
    widget = aw.AttentionHeatmap(_result())

    def broken(_scope: str) -> list:
        raise TypeError("this view cannot be saved")

    widget._export_requests = broken  # type: ignore[method-assign]
    data, _ = widget._repr_mimebundle_()
    assert WIDGET_VIEW in data and "cannot be saved" in data[VIEW_MIME]["omitted"]


def test_long_inputs_keep_their_overview_and_shown_head() -> None:
    n = 1100  # past the heatmap's full-detail limit: an overview plus tiles
    a = np.random.default_rng(0).random((1, 2, n, n), dtype=np.float32)
    r = aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), [f"t{i}" for i in range(n)])
    entry = view_state(aw.AttentionHeatmap(r))
    assert entry["scope"] in ("all", "view"), entry.get("omitted")  # the overviews of 2 heads fit: "all"
    assert len(json.dumps(entry)) <= view_mime.VIEW_BUDGET
    light = view_state(aw.AttentionHeatmap(r), budget=len(json.dumps(entry)) * 3 // 4)
    assert light["scope"] == "view" and light["state"]["_payload"], light.get("omitted")


def test_replies_that_take_too_long_settle_for_the_view_on_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNWIDGETS_VIEW_SECONDS", "0")
    widget = aw.AttentionHeatmap(_result(), layer=1, head=2)
    entry = view_state(widget)
    assert entry["scope"] == "view" and entry["replies"]
    assert set(entry["replies"]) == {request_key(r) for r in widget._export_requests("view")}
