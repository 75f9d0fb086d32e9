"""Every tutorial notebook, run top to bottom in JupyterLab as a user's Run All does, in the lecture theme at 1280 x
720 (a lecturer's projector), renders every view without an error and reads from the back of the room.

nbclient/nbmake execute the cells but never render them, so an error that lives in the page (a view that cannot
decode what Python sent it) passes there unseen; this test is the run of the notebooks in CI (.ci/run), one
JupyterLab server for all of them, its kernels in the lecture theme (``ATTNWIDGETS_THEME=lecture``) and JupyterLab in
the extension's lecture mode (its fonts). From that one run:

- no cell raises, no widget shows its error box or "Error displaying widget", and the page throws nothing;
- every figure the notebook shows reads in the lecture theme (``figure_problems`` of
  tests/plots/test_notebook_figures.py: no text under 14 pt, no overlap, not wider than the lecture box);
- every widget view it shows reads in the page, with JupyterLab's file browser closed and open (issue 33 §1,
  tests/browser/layout_check.py): no text under 14 px, no two text boxes overlapping, nothing cut (wider than its
  output area without a scrollbar, or text clipped), and each view's main map at least 200 px;
- the executed notebook is saved for the docs (:data:`EXECUTED`).

No other tier executes the notebooks (the unit tier's figure tests build the layouts from hand-made attention).
Screenshots: test-artifacts/notebook-<name>.png, and test-artifacts/layout/<name>-cell<i>-<state>.png for each
widget cell with a problem (every widget cell when ``ATTNWIDGETS_LAYOUT_SHOTS=1``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from helpers import ARTIFACTS
from layout_check import CANVAS_TEXTS, check_output
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.plots.test_notebook_figures import COLLECT, REPORT, ROOT

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# Scroll each widget output into view (JupyterLab renders off-screen outputs lazily) and report how many there are
# and how many have drawn something.
SCROLL_WIDGETS = f"""async () => {{
    const nb = window.jupyterapp.shell.currentWidget.content;
    let n = 0;
    for (let i = 0; i < nb.widgets.length; i++) {{
        const cell = nb.widgets[i];
        if (cell.model.type !== 'code') continue;
        const outputs = cell.model.outputs.toJSON();
        if (!outputs.some(o => o.data && o.data['{WIDGET_MIME}'])) continue;
        await nb.scrollToItem(i, 'start');
        await new Promise(r => setTimeout(r, 300));
        n++;
    }}
    return n;
}}"""

# Each widget output in the page: its cell's index, whether it drew (a view's root, a box of views or a picture) and
# the start of its text (an error a widget output shows instead of a view). JupyterLab 4.5 puts no data-mime-type on
# a widget's output, so each is found from its cell's outputs (the k-th output is the output area's k-th child) and
# marked with data-aw-widget-output.
WIDGET_OUTPUTS = f"""() => {{
    const nb = window.jupyterapp.shell.currentWidget.content;
    const out = [];
    nb.widgets.forEach((cell, i) => {{
        if (cell.model.type !== 'code') return;
        cell.model.outputs.toJSON().forEach((o, k) => {{
            const child = cell.outputArea.widgets[k];
            if (!o.data || !o.data['{WIDGET_MIME}'] || !child) return;
            const node = child.node.querySelector('.jp-OutputArea-output') || child.node;
            node.dataset.awWidgetOutput = String(i);
            out.push({{ cell: i, drawn: !!node.querySelector('.aw-root, .widget-box, .widget-html, img, canvas'),
                        text: node.innerText.slice(0, 300) }});
        }});
    }});
    return out;
}}"""


def _widget_outputs(page, n: int, timeout: float = 60) -> list[dict]:
    """The widget outputs once ``n`` of them have drawn (or the timeout passed)."""
    deadline = time.time() + timeout
    while True:
        outs = page.evaluate(WIDGET_OUTPUTS)
        if sum(o["drawn"] for o in outs) >= n or time.time() > deadline:
            return outs
        page.wait_for_timeout(500)


#: A folder .ci/run's two test streams share (ATTNWIDGETS_CI_CLAIMS): each stream, when its other tiers are done, runs
#: the tests of this file, each only if it is the first to make the test's entry there, so the notebooks go to whichever
#: stream is free, each runs once, and the two streams end together however the other tiers grow (no fixed split).
CLAIMS = os.environ.get("ATTNWIDGETS_CI_CLAIMS")


@pytest.fixture
def claimed_lab(request):
    """The session's ``lecture_lab``, once this process has claimed the test in :data:`CLAIMS` (when set); a test
    the other stream claimed first is skipped, and a process whose every test was claimed starts no server."""
    if CLAIMS:
        try:
            os.mkdir(Path(CLAIMS) / re.sub(r"\W+", "_", request.node.name))
        except FileExistsError:
            pytest.skip("run by the other stream of .ci/run")
    return request.getfixturevalue("lecture_lab")


def _code_cells(path: Path) -> int:
    return sum(c["cell_type"] == "code" for c in json.loads(path.read_text(encoding="utf-8"))["cells"])


#: The page a room sees, and how to get JupyterLab's file browser (the left side bar) open or closed.
VIEWPORT = (1280, 720)
FILE_BROWSER = {"closed": "() => window.jupyterapp.shell.collapseLeft()",
                "open": "() => window.jupyterapp.shell.activateById('filebrowser')"}
WIDGET_CELLS = f"""() => window.jupyterapp.shell.currentWidget.content.widgets.flatMap((cell, i) =>
    cell.model.type === 'code' && cell.model.outputs.toJSON().some(o => o.data && o.data['{WIDGET_MIME}'])
    ? [i] : [])"""
SHOTS = ARTIFACTS / "layout"
# Outputs other than views (a table, printed text) wider than their output area: the room sees them cut at the edge.
WIDE_OUTPUTS = """() => {
    const nb = window.jupyterapp.shell.currentWidget.content;
    const out = [];
    nb.widgets.forEach((cell, i) => {
        if (cell.model.type !== 'code') return;
        for (const o of cell.node.querySelectorAll('.jp-OutputArea-output:not([data-aw-widget-output])'))
            if (o.scrollWidth > o.clientWidth + 1 && !o.querySelector('.aw-root, .jupyter-widgets'))
                out.push(`cell ${i}: output ${o.scrollWidth} px wide in a ${o.clientWidth} px output area`);
    });
    return out;
}"""
# The prompts ("[12]:") the prompt column cuts: JupyterLab ellipsises a prompt wider than its column.
CUT_PROMPTS = """() => [...document.querySelectorAll('.jp-InputPrompt, .jp-OutputPrompt')]
    .filter(e => e.textContent.trim() && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.trim())"""


# Cell i's first widget output is in the DOM with a size (JupyterLab renders cells near the viewport).
OUTPUT_SHOWN = """(i) => {
    const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
    const area = cell && cell.outputArea.node;
    return !!area && area.getBoundingClientRect().height > 0 &&
        !!area.querySelector('.aw-root, .jupyter-widgets, canvas, img');
}"""
TWO_FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


def layout_problems(page, name: str) -> list[str]:
    """Every widget view of the open notebook read by layout_check.CHECK, with the file browser closed and open: one
    line per problem, naming the cell."""
    problems = []
    cells = page.evaluate(WIDGET_CELLS)
    for state, toggle in FILE_BROWSER.items():
        page.evaluate(toggle)
        page.wait_for_timeout(1000)  # the views fit their new width (a ResizeObserver each) and paint again
        for i in cells:
            # The cell in view, its outputs laid out (not the fixed 1 s per cell and state this waited before: about
            # 110 s of the notebooks tier), then two frames for what the scroll repaints.
            page.evaluate(f"() => window.jupyterapp.shell.currentWidget.content.scrollToItem({i}, 'start')")
            try:
                page.wait_for_function(OUTPUT_SHOWN, arg=i, timeout=5_000)
            except PlaywrightTimeout:  # an output that draws none of these: the fixed wait this replaced
                page.wait_for_timeout(700)
            page.evaluate(WIDGET_OUTPUTS)  # marks them
            outputs = page.locator(f"[data-aw-widget-output='{i}']")
            outputs.first.evaluate("(e) => e.scrollIntoView({ block: 'start' })")  # the view at the top, as shown
            page.evaluate(TWO_FRAMES)
            found = []
            for k in range(outputs.count()):
                result = check_output(outputs.nth(k))
                found += [f"cell {i} (file browser {state}): {p['kind']}: {p['what']}" for p in result["problems"]]
            if found or os.environ.get("ATTNWIDGETS_LAYOUT_SHOTS"):
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SHOTS / f"{name}-cell{i}-{state}.png"))
            problems += found
        problems += [f"{w} (file browser {state}): it runs off the screen" for w in page.evaluate(WIDE_OUTPUTS)]
        cut = sorted(set(page.evaluate(CUT_PROMPTS)))
        if cut:
            problems.append(f"prompts cut by their column (file browser {state}): {cut[:6]}")
    return problems


# The longest first (by code cells, a fair guess of the time), so that the streams sharing them end close together.
@pytest.mark.parametrize("path", sorted(NOTEBOOKS, key=_code_cells, reverse=True), ids=lambda p: p.name)
def test_notebook_runs_and_renders_in_jupyterlab(claimed_lab, path):
    lab = claimed_lab
    # COLLECT keeps every figure the notebook shows; CANVAS_TEXTS every text a canvas draws.
    nb = lab.open_notebook(path, timeout=900, before=COLLECT, viewport=VIEWPORT, init_script=CANVAS_TEXTS,
                           commands=("attnwidgets:lecture-mode",))
    page = nb.page
    n = page.evaluate(SCROLL_WIDGETS)
    outs = _widget_outputs(page, n)
    page.wait_for_timeout(1500)  # requests a view sends on its first paint (tiles, rows) come back
    nb.screenshot(f"notebook-{path.stem}")
    problems = [f"widget output of cell {o['cell']} did not draw: {o['text']!r}" for o in outs if not o["drawn"]]
    problems += [f"widget error box: {t.strip()!r}" for t in page.locator(".aw-error").all_inner_texts() if t.strip()]
    # A view titled by a temporary folder's name (tempfile.mkdtemp: "tmpbf355675") names no model a student knows.
    temp_names = sorted({m for t in page.locator(".aw-root").all_inner_texts() for m in TEMP_NAME.findall(t)})
    problems += [f"a view names a temporary folder, not a model: {name!r}" for name in temp_names]
    if "Error displaying widget" in page.locator("body").inner_text():
        problems.append("'Error displaying widget' in the page")
    problems += [f"page error: {e}" for e in nb.errors()]
    assert not problems, f"{path.name} in JupyterLab:\n" + "\n".join(problems)
    assert n > 0 or "aw." not in path.read_text(encoding="utf-8"), f"{path.name}: no widget output was found"
    save_executed(lab, page, path)
    # Every figure it showed reads (tests/plots/test_notebook_figures.py), and every view (layout_check.py).
    report = json.loads(nb.python(REPORT.format(root=str(ROOT)), timeout=300).split("AW-FIGURES ", 1)[1])
    bad = [f"figure of cell {r['cell']} ({r['title']}, {r['theme']}): {'; '.join(r['problems'])}" for r in report
           if r["problems"]]
    bad += layout_problems(page, path.stem)
    bad = [b for b in bad if not any(b.startswith(f"cell {cell}") and kind in b
                                     for stem, cell, kind in KNOWN if stem == path.stem)]
    assert not bad, f"{path.name} in the lecture theme at {VIEWPORT[0]} x {VIEWPORT[1]}:\n" + "\n".join(bad)
    # (05, the lecture quick start, shows widgets only; every other notebook draws figures, so none seen means the
    # collection missed them)
    assert report or path.name.startswith("05_"), f"{path.name}: no figure was seen"
    assert all(r["theme"] == "lecture" for r in report), "the kernel did not draw in the lecture theme"
    # The executed copy, exported as a page from its own outputs and opened offline: live views, no raw TeX (#32 §4).
    from test_nbexport_browser import export, live_page_ok

    page_path = EXECUTED / f"{path.stem}.html"
    export(EXECUTED / path.name, page_path, "--no-execute")
    live_page_ok(lab.browser, page_path, f"exported-{path.stem}")


#: tempfile's folder names (``tmp`` and 8 of ``[a-z0-9_]``), as a view's title shows a model loaded from one.
TEMP_NAME = re.compile(r"\btmp[a-z0-9_]{8}\b")

#: Faults the check finds that are still open, each named with why (issue 33 §1): (notebook, cell, text of the fault).
#: Anything else fails; an entry goes when its fault is fixed.
KNOWN: list[tuple[str, int, str]] = []

#: Where each notebook that ran cleanly is saved with its outputs: the docs site renders the tutorials from here
#: (docs/gen_ref.py), so the docs tier of .ci/run executes no notebook of its own.
EXECUTED = Path(__file__).resolve().parents[2] / "test-artifacts" / "executed"


def save_executed(lab, page, path: Path, timeout: float = 60) -> None:
    """Save the notebook as JupyterLab holds it now (every output, each view's picture in its bundle) and copy it to
    :data:`EXECUTED`."""
    saved = lab.root / path.name
    before = saved.stat().st_mtime_ns
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    deadline = time.time() + timeout
    while saved.stat().st_mtime_ns == before and time.time() < deadline:
        time.sleep(0.25)
    assert saved.stat().st_mtime_ns != before, f"{path.name}: JupyterLab did not save the executed notebook"
    time.sleep(0.5)  # the write is one rename in jupyter_server, but give a slow disk a moment
    EXECUTED.mkdir(parents=True, exist_ok=True)
    shutil.copy(saved, EXECUTED / path.name)


def test_stat_views_drawn_before_their_statistics_wait_for_them(claimed_lab):
    """The cause of notebook 06's "Cannot read properties of undefined (reading 'buffer')" in the head-roles grid: a
    per-head statistic view drawn from a state without ``_payload["stats"]`` and ``_meta`` (the state each of these
    widgets opened its comm with, before it published). Such a view now draws nothing, raises nothing, and draws
    once the statistics arrive."""
    nb = claimed_lab.open([
        "import numpy as np, attnwidgets as aw\n"
        "from attnwidgets.analysis.roles import HeadRoles, ROLES\n"
        "a = np.tril(np.ones((7, 7), np.float32)); a /= a.sum(1, keepdims=True)\n"
        "ex = aw.AttentionResult.from_arrays(np.stack([a, a])[None], list('^abcabc'), kind='decoder')\n"
        "roles = aw.HeadRolesView(HeadRoles({k: np.array([[0.1, 0.7]]) for k in ROLES}, ex, 3, 1, 1, 0, 'toy'))\n"
        "bars = aw.EntropyBars(ex)\n"
        "views = [roles.grid, bars]\n"
        "kept = [(v._payload, v._meta) for v in views]\n"
        "for v in views:\n"
        "    v._payload, v._meta = {}, {}\n"
        "display(roles, bars)",
    ])
    nb.page.wait_for_timeout(2000)
    boxes = [t.strip() for t in nb.page.locator(".aw-error").all_inner_texts() if t.strip()]
    assert not boxes and not nb.errors(), f"before the statistics: boxes {boxes}, page errors {nb.errors()}"
    nb.python("for v, (p, m) in zip(views, kept):\n    v._payload, v._meta = p, m")
    grid = nb.page.locator("[data-testid=grid-canvas]").first
    grid.wait_for(state="visible", timeout=20_000)
    nb.page.wait_for_function(
        "() => document.querySelector('[data-testid=grid-canvas]').dataset.statistic === 'induction'",
        timeout=20_000)
    assert not nb.errors(), nb.errors()
