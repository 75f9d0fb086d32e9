"""ALiBi's maps in a fitted positional view read on a projector (issue 24 §2). At 1280 x 720 in the lecture theme,
with JupyterLab's file browser collapsed (as ``attnwidgets lab --lecture`` opens it), each 64 x 64 map is at least
200 CSS px; with the file browser open (836 px of room for two maps and their notes) they are ~85 px, which is why the
lecture launch collapses it. Either way the maps lie inside the visible area.
Screenshots: test-artifacts/positional-alibi-lecture-1280x720-{wide,sidebar}.png."""

from __future__ import annotations

MIN_SIDE = 200  # CSS px of the map itself: ~3 px a cell for 64 positions

MEASURE = """(e) => {
    const area = document.querySelector('.jp-WindowedPanel-outer').getBoundingClientRect();
    const maps = [0, 1].map((i) => {
        const c = e.querySelector(`[data-testid=pos-panel-${i}]`);
        const r = c.getBoundingClientRect();
        return {map: Math.min(+c.dataset.ch * +c.dataset.rows, +c.dataset.cw * +c.dataset.cols),
                bottom: r.bottom, right: r.right};
    });
    return {area: {bottom: area.bottom, right: area.right}, maps, box: e.dataset.fitBox};
}"""


def _measure(nb, root, name):
    root.evaluate("(e) => e.scrollIntoView({block: 'start'})")
    nb.page.wait_for_timeout(800)
    sizes = root.evaluate(MEASURE)
    nb.screenshot(name, root)
    print(name, sizes)
    for m in sizes["maps"]:
        assert m["bottom"] <= sizes["area"]["bottom"] + 1 and m["right"] <= sizes["area"]["right"] + 1, sizes
    return sizes


def test_alibi_maps_fit_and_read_at_1280x720(lab):
    nb = lab.open(["import attnwidgets as aw\naw.set_theme('lecture')\n"
                   "pos = aw.PositionalExplorer('alibi', length=64); pos"], viewport=(1280, 720))
    root = nb.widget(0)
    root.locator("[data-testid=pos-panel-1]").wait_for(state="visible", timeout=30_000)
    sidebar = _measure(nb, root, "positional-alibi-lecture-1280x720-sidebar")
    nb.page.evaluate("() => { const s = window.jupyterapp.shell; if (!s.leftCollapsed) s.collapseLeft(); }")
    nb.page.wait_for_function(
        "(w) => +document.querySelector('.aw-root').dataset.fitBox.split('x')[0] > w", arg=int(
            sidebar["box"].split("x")[0]), timeout=20_000)
    wide = _measure(nb, root, "positional-alibi-lecture-1280x720-wide")
    for m in wide["maps"]:
        assert m["map"] >= MIN_SIDE, f"an ALiBi map is {m['map']:.0f} px: {wide}"
    assert not nb.errors(), nb.errors()
