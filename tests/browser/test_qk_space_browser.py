"""The query–key space in JupyterLab (lecture theme, 1280 x 720): 12,000 points drawn on a canvas, a hover that names
the token in its sentence, a click that opens the sentence's attention in the panel and reaches Python, and the
colour menu."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pytest
from helpers import (
    ARTIFACTS,
    canvas_stats,
    dataset,
    eventually,
    free_port,
    live_listeners,
    page_point,
    serve,
    tooltip_text,
    track_live_listeners,
    wait_dataset,
)

from attnwidgets.analysis.qk_space import build_qk_space

SETUP = """
import numpy as np
import attnwidgets as aw
from attnwidgets.analysis.qk_space import build_qk_space

aw.set_theme("lecture")
rng = np.random.default_rng(0)
words = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "log", "and"]
n_sent, n_tok = 600, 10                                  # 6,000 queries + 6,000 keys
tokens = [["[CLS]", *rng.choice(words, n_tok - 2).tolist(), "[SEP]"] for _ in range(n_sent)]
t = np.arange(n_tok)
spiral = np.column_stack([t * np.cos(t / 1.5), t * np.sin(t / 1.5)])     # a position head's spiral
q = [np.hstack([spiral, np.zeros((n_tok, 6))]) + rng.normal(0, 0.6, (n_tok, 8)) for _ in range(n_sent)]
k = [np.hstack([np.roll(spiral, 1, 0), np.zeros((n_tok, 6))]) + rng.normal(0, 0.6, (n_tok, 8)) for _ in range(n_sent)]
w = []
for a, b in zip(q, k):
    x = a @ b.T
    e = np.exp(x - x.max(1, keepdims=True))
    w.append(e / e.sum(1, keepdims=True))
space = build_qk_space(q, k, w, tokens, layer=3, head=5, model="hand-made")
view = aw.QKSpaceView(space)
# the point farthest from every other one (so the mouse lands on it alone)
from scipy.spatial import cKDTree
d, _ = cKDTree(space.xy).query(space.xy, k=2)
target = int(np.argmax(d[:, 1]))
"""


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open([SETUP, "view"], viewport=(1280, 720), timeout=180)
    nb.widget(0)
    return nb


def point_xy(nb, i: int) -> tuple[float, float]:
    """CSS pixel of point ``i`` on the scatter canvas, from the layout the canvas publishes."""
    x, y = json.loads(nb.python(f"print(space.xy[{i}].tolist())"))
    layout = json.loads(dataset(nb.page, "qk-space-canvas")["layout"])
    return layout["ox"] + layout["s"] * x, layout["oy"] - layout["s"] * y


def test_twelve_thousand_points_draw_fast_and_a_hover_names_the_token_in_its_sentence(nb):
    info = wait_dataset(nb.page, "qk-space-canvas", "n", "12000")
    stats = canvas_stats(nb.page, "qk-space-canvas")
    assert stats["color"] == "position" and stats["ink"] > 20_000 and stats["colours"] > 30
    print("paint of 12,000 points:", info["paintMs"], "ms")
    assert int(info["paintMs"]) < 1000
    assert canvas_stats(nb.page, "qk-space-panel")["ink"] < 50  # nothing clicked: an empty panel
    nb.widget(0).evaluate("e => e.scrollIntoView({block: 'start'})")
    assert nb.widget(0).bounding_box()["height"] <= 720 - 90  # fitted: the whole view on a 1280 x 720 screen
    nb.screenshot("qk-space-lecture-1280x720")

    i = int(nb.python("print(target)"))
    s, tok, kind = json.loads(nb.python(f"print([int(space.sentence[{i}]), int(space.token[{i}]), "
                                        f"int(space.kind[{i}])])"))
    word = nb.python(f"print(space.text[{i}])").strip()
    nb.page.mouse.move(*page_point(nb.page, "qk-space-canvas", *point_xy(nb, i)))
    tip = tooltip_text(nb.page)
    assert f"sentence {s}, token {tok}" in tip and f"⟦{word}⟧" in tip
    assert tip.startswith("query" if kind == 0 else "key")
    assert dataset(nb.page, "tooltip")["sentence"] == str(s)


def test_a_click_opens_the_sentence_map_and_reaches_python(nb):
    i = int(nb.python("print(target)"))
    s = int(nb.python(f"print(int(space.sentence[{i}]))"))
    before = canvas_stats(nb.page, "qk-space-canvas")["sum"]
    nb.page.mouse.click(*page_point(nb.page, "qk-space-canvas", *point_xy(nb, i)))
    eventually(nb, "print(view.sentence, view.point)", f"{s} {i}")
    panel = wait_dataset(nb.page, "qk-space-panel", "sentence", str(s))
    assert panel["n"] == "10"
    stats = canvas_stats(nb.page, "qk-space-panel")
    assert stats["ink"] > 5_000 and stats["colours"] > 10
    assert f"sentence {s}" in nb.page.locator("[data-testid=qk-space-panel-title]").inner_text()
    assert canvas_stats(nb.page, "qk-space-canvas")["sum"] != before  # the sentence's points are outlined
    nb.screenshot("qk-space-clicked-sentence-1280x720")

    # Python sets the sentence: the panel follows.
    nb.python("view.sentence = 0; view.point = -1")
    wait_dataset(nb.page, "qk-space-panel", "sentence", "0")


def test_colour_menu_switches_to_attention_received(nb):
    before = canvas_stats(nb.page, "qk-space-canvas")["sum"]
    nb.widget(0).locator("[data-testid=color-select]").select_option("attention")
    eventually(nb, "print(view.color)", "attention")
    wait_dataset(nb.page, "qk-space-canvas", "color", "attention")
    assert canvas_stats(nb.page, "qk-space-canvas")["sum"] != before
    assert "attention received" in nb.widget(0).locator("[data-testid=legend]").inner_text()
    nb.screenshot("qk-space-attention-1280x720")
    assert not nb.errors(), nb.errors()


def test_closing_the_view_removes_its_controls_listeners(nb):
    """The colour menu rebuilds the bar (menu and export buttons); once the view is closed none of their listeners
    may stay behind (the bar's listener group was not among the view's cleanups)."""
    track_live_listeners(nb.page)
    for color in ("token", "position"):
        nb.widget(0).locator("[data-testid=color-select]").select_option(color)
        eventually(nb, "print(view.color)", color)
    root = nb.page.locator(".aw-qk-space")
    bar_controls = root.locator(".aw-bar select, .aw-bar button").count()
    live = live_listeners(nb.page)
    assert bar_controls >= 3 and live >= bar_controls, (bar_controls, live)  # menu, PNG, SVG: one listener or more each
    nb.python("view.close()")
    root.wait_for(state="detached", timeout=20_000)
    assert live_listeners(nb.page) == 0, "listeners left on the closed view's controls"
    assert not nb.errors(), nb.errors()


# -- marimo: the widget in a shadow root; the click's map comes by the widget's own message there too -------------

MARIMO_APP = '''
import marimo

app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo
    import attnwidgets as aw
    from attnwidgets.analysis.qk_space import build_qk_space
    import numpy as np
    {make}
    return aw, mo, space


@app.cell
def _(aw, mo, space):
    qk = mo.ui.anywidget(aw.QKSpaceView(space))
    qk
    return (qk,)


@app.cell
def _(mo, qk):
    mo.Html(f'<p data-testid="py-state">sentence {{qk.widget.sentence}}</p>')
    return
'''

MAKE = ("rng = np.random.default_rng(5); toks = [['[CLS]', 'a', 'cat', 'sat', '[SEP]']] * 40; "
        "q = [rng.normal(size=(5, 6)) for _ in toks]; k = [rng.normal(size=(5, 6)) for _ in toks]; "
        "w = [np.exp(a @ b.T) / np.exp(a @ b.T).sum(1, keepdims=True) for a, b in zip(q, k)]; "
        "space = build_qk_space(q, k, w, toks)")


@pytest.fixture(scope="module")
def marimo_page(tmp_path_factory, browser):
    folder = tmp_path_factory.mktemp("marimo_qk")
    app = folder / "qk.py"
    app.write_text(MARIMO_APP.format(make=MAKE))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "marimo", "run", str(app), "--headless", "--host", "127.0.0.1", "--port", str(port),
           "--no-token", "--no-sandbox"]
    with serve(cmd, f"{url}/health", tmp_path_factory.mktemp("marimolog_qk")):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url, wait_until="domcontentloaded")
        try:
            yield page, errors
        finally:
            context.close()


def test_marimo_click_opens_the_sentence_and_reaches_python(marimo_page):
    page, errors = marimo_page
    scope: dict = {"np": np, "build_qk_space": build_qk_space}
    exec(MAKE, scope)  # the same space as the app's (same seed)
    space = scope["space"]
    dist = np.linalg.norm(space.xy[:, None] - space.xy[None], axis=-1) + np.eye(space.n_points) * 1e9
    i = int(np.argmax(dist.min(1)))
    root = page.locator(".aw-root.aw-qk-space").first
    root.wait_for(state="visible", timeout=60_000)
    wait_dataset(page, "qk-space-canvas", "n", str(space.n_points), timeout=60)
    layout = json.loads(dataset(page, "qk-space-canvas")["layout"])
    x, y = (float(v) for v in space.xy[i])
    page.mouse.click(*page_point(page, "qk-space-canvas", layout["ox"] + layout["s"] * x,
                                 layout["oy"] - layout["s"] * y))
    s = int(space.sentence[i])
    wait_dataset(page, "qk-space-panel", "sentence", str(s), timeout=30)
    assert canvas_stats(page, "qk-space-panel")["ink"] > 2_000
    deadline = time.time() + 30  # marimo re-runs the cell that reads the trait: Python saw the click
    while page.locator("[data-testid=py-state]").first.inner_text().strip() != f"sentence {s}":
        assert time.time() < deadline, page.locator("[data-testid=py-state]").first.inner_text()
        page.wait_for_timeout(200)
    root.screenshot(path=str(ARTIFACTS / "marimo-qk-space-clicked.png"))
    assert not errors, errors


LINKED = """
import numpy as np
import attnwidgets as aw
from attnwidgets.analysis.qk_space import build_qk_space

aw.set_theme("light")
toks = ["[CLS]", "i", "flew", "new", "york", "to", "paris", "[SEP]"]
sents = [toks, toks[:5], ["[CLS]", "a", "b", "c", "[SEP]"]]
grid = lambda s, n, dx: np.column_stack([np.arange(n) * 3.0 + dx, np.full(n, s * 3.0 + dx), np.zeros((n, 4))])
q = [grid(s, len(t), 0) for s, t in enumerate(sents)]
k = [grid(s, len(t), 1.5) for s, t in enumerate(sents)]
w = [np.full((len(t), len(t)), 1 / len(t)) for t in sents]
w[0] = np.random.default_rng(0).dirichlet(np.ones(8), 8)
space = build_qk_space(q, k, w, sents, model="hand-made")
view = aw.QKSpaceView(space, sentence=0)
h = aw.AttentionHeatmap(aw.AttentionResult.from_arrays(w[0][None, None].astype(np.float32), toks))
link = aw.widgets.link_span(h, view)
query_of = lambda t: int(np.flatnonzero((space.kind == 0) & (space.sentence == 0) & (space.token == t))[0])
"""


def test_points_and_tokens_select_each_other_with_a_linked_heatmap(lab):
    """QKSpaceView linked to a heatmap of its sentence: a click and a shift-click on "new", "york" in the heatmap
    ring those tokens' query points in the scatter (its pixels change) and outline their rows in the panel; a click
    on the query point of "paris" selects that row in the heatmap."""
    from helpers import row_point

    nb = lab.open([LINKED, "h", "view"], viewport=(1400, 1000), reuse=True)
    hm, qs = nb.widget(0), nb.widget(1)
    wait_dataset(hm, "heatmap-canvas", "view", "self/0/0/t")  # one head: the heatmap shows it, not a mean
    wait_dataset(qs, "qk-space-panel", "sentence", "0")
    before = canvas_stats(qs, "qk-space-canvas")["sum"]
    nb.page.mouse.click(*row_point(hm, "heatmap-canvas", 3))
    wait_dataset(hm, "heatmap-canvas", "selection", "3")
    nb.page.keyboard.down("Shift")
    nb.page.mouse.click(*row_point(hm, "heatmap-canvas", 4))
    nb.page.keyboard.up("Shift")
    want = nb.python("print(query_of(3), query_of(4), sep=',')").strip()
    wait_dataset(qs, "qk-space-canvas", "selected", want)
    eventually(nb, "print(view.selection, view.selected_points())", f"[3, 4] [{want.replace(',', ', ')}]")
    assert canvas_stats(qs, "qk-space-canvas")["sum"] != before, "the scatter did not ring the points"
    assert dataset(qs, "qk-space-panel")["selection"] == "3,4"
    nb.screenshot("qk-space-linked-span", qs)

    # A click on the query point of "paris" selects token 6 in the heatmap.
    i = int(nb.python("print(query_of(6))"))
    x, y = json.loads(nb.python(f"print(space.xy[{i}].tolist())"))
    layout = json.loads(dataset(qs, "qk-space-canvas")["layout"])
    nb.page.mouse.click(*page_point(qs, "qk-space-canvas", layout["ox"] + layout["s"] * x,
                                    layout["oy"] - layout["s"] * y))
    eventually(nb, "print(h.selection, view.selection, view.point)", f"[6] [6] {i}")
    wait_dataset(hm, "heatmap-canvas", "selection", "6")
    assert not nb.errors(), nb.errors()
