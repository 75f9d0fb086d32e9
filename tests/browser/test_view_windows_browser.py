"""HeadView on a long lazy result in JupyterLab: it draws a window of 64 tokens (never the dense 5,000 x 5,000
attention: the dense budget is 0 in the kernel), "next window" moves it to what Python reports, the attention sink
at position 0 is kept as a labelled far key, selecting a token from Python moves the window to it, and the GQA
heads are grouped under "KV head g"."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import dataset, wait_dataset

TESTS = Path(__file__).resolve().parents[1]

SETUP = f"""
import sys; sys.path.insert(0, {str(TESTS)!r})
import attnwidgets as aw
from lazy_helpers import lazy_result
aw.runner.set_dense_budget(0)  # any dense build raises: the view must read windows
aw.set_theme("lecture")
r = lazy_result(5000, sink=10.0)
w = aw.HeadView(r, layer=1)
w
"""

CANVAS = "[data-testid=lines-canvas]"


def python_window(nb) -> tuple[list[int], list[int]]:
    """The window Python reports and the far keys of the lines it sends for it."""
    out = nb.python("import json; print(json.dumps([w.window, w.answer({'what': 'layer', 'kind': 'self', "
                    "'layer': 1, 'window': w.window})[0]['window']['far']]))")
    window, far = json.loads(out)
    return window, far


def test_head_view_window_moves_and_keeps_far_keys(lab):
    nb = lab.open([SETUP], viewport=(1280, 720))
    nb.widget()
    d = wait_dataset(nb.page, CANVAS, "window", "0-64")
    assert (d["nq"], d["view"]) == ("64", "self/1/t/0-64"), "64 query rows drawn, not 5,000"
    assert int(d["lines"]) > 0
    label = nb.page.locator("[data-testid=window-label]").inner_text()
    assert label == "tokens 0–63 of 5000"
    # GQA: 4 query heads on 2 key/value heads, two outlined groups.
    groups = nb.page.locator("[data-testid=kv-group]")
    assert groups.count() == 2 and groups.nth(1).inner_text().startswith("KV head 1")
    assert groups.nth(1).locator("[data-testid=head-swatch]").all_inner_texts() == ["2", "3"]
    nb.screenshot("head-view-window-0", nb.widget())

    nb.page.locator("[data-testid=window-next]").click()
    d = wait_dataset(nb.page, CANVAS, "window", "64-128")
    window, far = python_window(nb)
    assert window == [64, 128], "the click set the Python trait"
    assert d["far"] == ",".join(map(str, far)) and 0 in far, "the sink at 0 is drawn as a far key"
    assert int(d["nk"]) == 64 + len(far)
    assert nb.page.locator("[data-testid=window-label]").inner_text() == "tokens 64–127 of 5000"
    nb.screenshot("head-view-window-64", nb.widget())

    # Select a token far away from Python: the window follows, and the page draws only that token's lines.
    nb.python("w.selected = [3000]")
    d = wait_dataset(nb.page, CANVAS, "window", "2968-3032")
    assert d["selected"] == "3000"
    assert json.loads(nb.python("import json; print(json.dumps(w.window))")) == [2968, 3032]
    # The lines drawn are the weights >= min_weight (as float16, what crosses) of that row over the shown columns.
    expected = nb.python("import numpy as np; a = w.window_heads()[:, 3000 - 2968]; "
                         "print(int((a.astype(np.float16).astype(np.float32) >= w.min_weight).sum()))")
    assert int(d["lines"]) == int(expected) > 0
    nb.screenshot("head-view-window-selected", nb.widget())
    assert dataset(nb.page, CANVAS)["heads"] == "0,1,2,3"
    assert not nb.errors()
