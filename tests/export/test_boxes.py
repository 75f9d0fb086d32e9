"""Views inside ipywidgets boxes keep their saved state (attnwidgets/widgets/boxes.py): the box's display bundle
carries its children's states and its layout, so a saved notebook and an exported page draw them live."""

from __future__ import annotations

import base64
import json
import re
from types import SimpleNamespace

import ipywidgets
import numpy as np
import pytest
from IPython.core.formatters import DisplayFormatter
from test_nbexport import make_notebook, run_cli

import attnwidgets as aw
from attnwidgets.nbexport import saved_views_in
from attnwidgets.view_mime import VIEW_MIME, set_view_budget
from attnwidgets.widgets.boxes import box_bundle, box_state, install_box_formatter

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
                       "AAAABJRU5ErkJggg==")  # one pixel


@pytest.fixture(autouse=True)
def default_budget(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ATTNWIDGETS_VIEW_SECONDS", "120")
    set_view_budget(None)
    yield
    set_view_budget(None)


def _result() -> aw.AttentionResult:
    a = np.random.default_rng(0).random((2, 3, 4, 4)).astype(np.float32)
    return aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), ["[CLS]", "a", "b", "[SEP]"])


def test_a_box_carries_each_views_state_its_layout_and_its_pictures() -> None:
    r = _result()
    heat, bars = aw.AttentionHeatmap(r, layer=1, head=2), aw.EntropyBars(r)
    picture = ipywidgets.Image(value=PNG, format="png", layout=ipywidgets.Layout(max_width="100%"))
    left = ipywidgets.VBox([picture, ipywidgets.Label("<b>caption</b>")],
                           layout=ipywidgets.Layout(flex="1 1 400px", min_width="url(javascript:alert(1))"))
    box = ipywidgets.HBox([left, ipywidgets.VBox([heat, bars]), ipywidgets.IntSlider()],
                          layout=ipywidgets.Layout(flex_flow="row wrap", align_items="flex-start"))
    entry = box_state(box)
    assert entry is not None
    json.dumps(entry, allow_nan=False)  # what nbformat writes
    assert (entry["version"], entry["widget"], entry["layout"]) == (1, "Box", "row")
    assert entry["style"] == {"flex_flow": "row wrap", "align_items": "flex-start"}
    pics, views, slider = entry["children"]
    assert pics["layout"] == "column" and pics["slot"] == {"flex": "1 1 400px"}  # url(...) is never kept
    assert base64.b64decode(pics["children"][0]["data"]) == PNG and pics["children"][0]["format"] == "png"
    assert pics["children"][1] == {"widget": "Label", "text": "<b>caption</b>"}  # drawn as text by the renderer
    assert [v["widget"] for v in views["children"]] == ["AttentionHeatmap", "EntropyBars"]
    assert all(v["scope"] == "all" and "_payload" in v["state"] for v in views["children"])
    assert views["children"][0]["state"]["layer"] == 1 and views["children"][0]["state"]["head"] == 2
    assert slider == {"widget": "IntSlider", "needs": "a running kernel"}
    assert [v["widget"] for v in saved_views_in(entry)] == ["AttentionHeatmap", "EntropyBars"]


def test_each_view_in_a_box_keeps_to_the_budget_per_view() -> None:
    r = _result()
    entry = box_state(ipywidgets.HBox([aw.AttentionHeatmap(r), ipywidgets.Image(value=PNG * 50, format="png")]),
                      budget=200)
    assert entry is not None
    view, picture = entry["children"]
    assert "budget" in view["omitted"] and "state" not in view
    assert "data" not in picture and "budget" in picture["needs"]


def test_ipython_shows_a_box_of_views_with_its_saved_state_and_other_boxes_as_before() -> None:
    shell = SimpleNamespace(display_formatter=DisplayFormatter())
    assert install_box_formatter(shell) and install_box_formatter(shell)  # twice: the same formatter, kept
    r = _result()
    data, _ = shell.display_formatter.format(ipywidgets.HBox([aw.AttentionHeatmap(r), aw.ModelView(r)]))
    assert WIDGET_VIEW in data, "the live box is still what a running kernel draws"
    assert [c["widget"] for c in data[VIEW_MIME]["children"]] == ["AttentionHeatmap", "ModelView"]
    roles_like = type("Roles", (ipywidgets.HBox,), {})([aw.EntropyBars(r)])  # subclasses of boxes too
    assert shell.display_formatter.format(roles_like)[0][VIEW_MIME]["children"][0]["widget"] == "EntropyBars"
    plain, _ = shell.display_formatter.format(ipywidgets.HBox([ipywidgets.Label("no view")]))
    assert VIEW_MIME not in plain and WIDGET_VIEW in plain
    closed = ipywidgets.HBox([aw.AttentionHeatmap(r)])
    closed.close()
    assert box_bundle(closed) is None


def test_hosts_without_the_extension_see_the_boxed_views_pictures_side_by_side() -> None:
    """GitHub and nbviewer draw no widget and no saved state: a box of views showed ipywidgets' text. Its bundle now
    has one picture: its views' twins side by side in a row, stacked in a column, nested boxes likewise."""
    import io

    from PIL import Image

    from attnwidgets.fallback import BOX_GAP, twin_png

    def size(png: bytes) -> tuple[int, int]:
        return Image.open(io.BytesIO(png)).size

    r = _result()
    heat, bars, model = aw.AttentionHeatmap(r), aw.EntropyBars(r), aw.ModelView(r)
    (hw, hh), (bw, bh), (mw, mh) = (size(twin_png(v)) for v in (heat, bars, model))
    column_box = ipywidgets.VBox([bars, model, ipywidgets.Label("no picture")])
    box = ipywidgets.HBox([heat, column_box, ipywidgets.IntSlider()])
    data, _ = box_bundle(box)
    got = Image.open(io.BytesIO(base64.b64decode(data["image/png"]))).convert("RGB")
    column = (max(bw, mw), bh + BOX_GAP + mh)
    expected = (hw + BOX_GAP + column[0], max(hh, column[1]))
    scale = min(1.0, 1600 / max(expected))
    assert got.size == (round(expected[0] * scale), round(expected[1] * scale))
    # the heatmap's own picture sits at the top left (unscaled here: the box is under the 1,600-pixel cap)
    assert scale == 1.0
    heat_png = Image.open(io.BytesIO(twin_png(heat))).convert("RGB")
    assert np.array_equal(np.asarray(got.crop((0, 0, hw, hh))), np.asarray(heat_png))
    assert WIDGET_VIEW in data and VIEW_MIME in data, "the live box and its saved state still come first"
    plain, _ = box_bundle(ipywidgets.HBox([ipywidgets.Label("no view")]))
    assert "image/png" not in plain


BOXED = [
    ("code", "import numpy as np, ipywidgets, base64\nimport attnwidgets as aw\n"
             "r = aw.AttentionResult.from_arrays(np.full((2, 3, 3, 3), 1 / 3, dtype=np.float32), "
             "['<img src=x onerror=alert(1)>', 'cat', 'sat'])\n"
             f"png = base64.b64decode({base64.b64encode(PNG).decode()!r})"),
    ("code", "ipywidgets.HBox([aw.AttentionHeatmap(r, layer=1, head=2), aw.HeadView(r, layer=1)])"),
    ("code", "left = ipywidgets.VBox([ipywidgets.Image(value=png, format='png')])\n"
             "ipywidgets.HBox([left, ipywidgets.VBox([aw.EntropyBars(r), aw.ModelView(r)])])"),
    ("code", "aw.AttentionHeatmap(r)"),
    ("code", "ipywidgets.HBox([ipywidgets.Label('no view here')])"),
]


def test_an_exported_page_draws_every_boxed_view_live(tmp_path) -> None:
    nb = make_notebook(tmp_path / "boxed.ipynb", BOXED)
    done = run_cli(["export", str(nb), "-o", str(tmp_path / "boxed.html")], tmp_path)
    assert done.returncode == 0, done.stderr
    # 2 + 2 views in boxes, 1 on its own; the box of a label is a widget output with no view (its text)
    assert "6 views, 5 live, 0 as their picture, 1 as text" in done.stdout, done.stdout
    html = (tmp_path / "boxed.html").read_text(encoding="utf-8")
    blocks = re.findall(r'<script type="application/json" id="aw-view-\d+">(.*?)</script>', html, re.S)
    states = [json.loads(b) for b in blocks]
    assert [s["widget"] for s in states] == ["Box", "Box", "AttentionHeatmap"]
    assert [[v["widget"] for v in saved_views_in(s)] for s in states[:2]] == [
        ["AttentionHeatmap", "HeadView"], ["EntropyBars", "ModelView"]]
    assert "<img src=x" not in html  # the hostile token stays escaped inside the JSON
    # each box of views shows its views' pictures until it is drawn (and if it cannot be)
    pictures = re.findall(r'<div class="aw-saved" data-aw="aw-view-(\d)">.*?<div class="aw-picture">(.*?)</div>',
                          html, re.S)
    assert [(n, p.startswith("<img ")) for n, p in pictures] == [("0", True), ("1", True), ("2", True)]
