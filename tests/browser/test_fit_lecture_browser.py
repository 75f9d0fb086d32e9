"""Every view fits a projector (issue 15 §3): at a 1280 x 720 viewport in JupyterLab, in the lecture theme (where
``fit="auto"`` fits), each view scrolled to the top of the notebook lies inside the notebook's visible area, its legend
or colour bar included; with ``fit=False`` the heatmap keeps its old, taller size (so this test can fail).

One notebook holds every view: :data:`VIEWS` lists them as (variable, constructor, legend selector); add a view by
appending to it. Screenshots: test-artifacts/fit-*.png (1280 x 720 lecture, 1920 x 1080 light).
"""

from __future__ import annotations

import pytest

TEXT = "The quick brown fox jumps over the lazy dog because it was tired."  # 16 tokens with [CLS] and [SEP]
SETUP = f"""
import attnwidgets as aw
aw.set_theme("lecture")
text = {TEXT!r}
r = aw.run(text)
cap = aw.runner.capture_qk_layers(text)
"""

#: (variable, constructor, CSS selector of the legend / colour bar inside the view's root, or "" for none).
VIEWS: list[tuple[str, str, str]] = [
    ("hm", "aw.AttentionHeatmap(r)", ".aw-legend"),
    ("mv", "aw.ModelView(r)", ".aw-legend"),
    ("hv", "aw.HeadView(r)", "[data-testid=head-swatches]"),
    ("qk", "aw.QKStepThrough(cap)", ".aw-qk-panel:last-child"),
    ("mask", "aw.MaskExplorer('causal', length=16, window=4)", "[data-testid=mask-stats], [data-testid=kv-cache]"),
    ("pos", "aw.PositionalExplorer(length=32, d_model=32)", ".aw-legend"),
    ("prof", "aw.AttentionProfile(r)", ".aw-legend"),
]
#: Views drawn at their old size for comparison (not in the fit checks).
OFF = [("hm_off", "aw.AttentionHeatmap(r, fit=False)", ".aw-legend")]
ALL = VIEWS + OFF


def cells() -> list[str]:
    return [SETUP + "".join(f"{var} = {code}\n" for var, code, _ in ALL), *[var for var, _, _ in ALL]]


def index(var: str) -> int:
    return [v for v, _, _ in ALL].index(var)


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open(cells(), name="fit_lecture.ipynb", viewport=(1280, 720))
    for i in range(len(ALL)):
        nb.widget(i)
    nb.page.wait_for_timeout(500)
    return nb


VISIBLE_AREA = ".jp-WindowedPanel-outer"


def measure(nb, i: int, legend: str) -> dict:
    """Scroll view ``i`` to the top of the notebook's visible area and return its rect, its legend's, the area's."""
    root = nb.widget(i)
    root.evaluate("(e) => e.scrollIntoView({block: 'start'})")
    nb.page.wait_for_timeout(300)
    return nb.page.evaluate(
        """([i, legend, area]) => {
            const root = document.querySelectorAll('.aw-root')[i];
            const box = (e) => { if (!e) return null; const r = e.getBoundingClientRect();
                return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width,
                        height: r.height}; };
            const legs = legend ? [...root.querySelectorAll(legend)] : [];
            return {root: box(root), legends: legs.map(box), area: box(document.querySelector(area)),
                    legendShown: legs.length > 0 && legs.every((l) => getComputedStyle(l).display !== 'none' &&
                        l.getBoundingClientRect().height > 0),
                    fit: root.dataset.fit, fitBox: root.dataset.fitBox};
        }""",
        [i, legend, VISIBLE_AREA],
    )


def inside(inner: dict, outer: dict, slack: float = 1.0) -> bool:
    return (inner["left"] >= outer["left"] - slack and inner["top"] >= outer["top"] - slack
            and inner["right"] <= outer["right"] + slack and inner["bottom"] <= outer["bottom"] + slack)


def assert_fits(nb, var: str, legend: str) -> dict:
    """View ``var`` of the notebook fits: its root and its legend (when it has one) lie inside the visible area."""
    m = measure(nb, index(var), legend)
    assert m["fit"] == "on", f"{var}: fit is {m['fit']!r} in the lecture theme"
    assert inside(m["root"], m["area"]), f"{var}: {m['root']} is not inside the visible area {m['area']}"
    if legend:
        assert m["legendShown"], f"{var}: its legend {legend} is not shown"
        for leg in m["legends"]:
            assert inside(leg, m["area"]), f"{var}: legend {leg} is outside {m['area']}"
    return m


@pytest.mark.parametrize(("var", "legend"), [(v, sel) for v, _, sel in VIEWS])
def test_every_view_fits_at_1280x720(nb, var, legend):
    measure(nb, index(var), legend)
    nb.screenshot(f"fit-lecture-{var}")
    m = assert_fits(nb, var, legend)
    print(var, "root", m["root"], "area", m["area"])
    assert not nb.errors(), nb.errors()


def test_fit_false_keeps_the_old_size(nb):
    on = measure(nb, index("hm"), ".aw-legend")
    off = measure(nb, index("hm_off"), ".aw-legend")
    assert off["fit"] == "off"
    assert off["root"]["height"] > off["area"]["height"], "unfitted, the 16-token lecture heatmap is taller than 720"
    assert not inside(off["root"], off["area"])
    canvas = nb.page.evaluate(
        "(ix) => ix.map((i) => +document.querySelectorAll('.aw-root')[i]"
        ".querySelector('[data-testid=heatmap-canvas]').dataset.cell)", [index("hm"), index("hm_off")])
    assert canvas[1] == 47, canvas  # the lecture theme's cell: 760 px / 16 tokens, floored
    assert canvas[0] < 30, canvas  # fitted: smaller cells
    assert on["root"]["height"] < off["root"]["height"]


def test_large_screen_light_theme_keeps_full_size(lab):
    """At 1920 x 1080 in the light theme, "auto" does not fit: every view keeps its size (screenshots to look at)."""
    cells_light = [c.replace('aw.set_theme("lecture")', 'aw.set_theme("light")') for c in cells()]
    big = lab.open(cells_light, name="fit_light.ipynb", viewport=(1920, 1080))
    for var, _, legend in VIEWS:
        m = measure(big, index(var), legend)
        assert m["fit"] == "off", var
        big.screenshot(f"fit-light-1920-{var}")
    cell = big.page.evaluate(
        "(i) => +document.querySelectorAll('.aw-root')[i].querySelector('[data-testid=heatmap-canvas]').dataset.cell",
        index("hm"))
    assert cell == 28, cell  # the light theme's cell (maxCell 28; 560 / 16 = 35), not fitted
    assert not big.errors(), big.errors()
