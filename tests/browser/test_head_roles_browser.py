"""The head-roles view in JupyterLab: the role grid draws, its menu switches between the three roles, and a click on
a cell opens that head's pattern on the repeated sequence in the linked heatmap (lecture theme, 1280 x 720)."""

from __future__ import annotations

import pytest
from helpers import canvas_stats, eventually, page_point, wait_dataset

SETUP = """
import numpy as np
import attnwidgets as aw
from attnwidgets.analysis.roles import HeadRoles, role_scores

aw.set_theme("lecture")
n, T = 8, 17
rng = np.random.default_rng(0)
att = rng.random((2, 4, T, T)) * np.tril(np.ones((T, T)))        # random causal heads ...
for i in range(T):                                               # ... head 0.2 exactly previous-token
    att[0, 2, i] = 0; att[0, 2, i, max(i - 1, 0)] = 1
    att[1, 1, i] = 0; att[1, 1, i, i - n + 1 if i > n else i] = 1  # ... head 1.1 exactly induction
att /= att.sum(-1, keepdims=True)
att = att.astype(np.float32)
r = list("QWERTYUI")
example = aw.AttentionResult.from_arrays(att, ["<s>", *r, *r], kind="decoder")
roles = HeadRoles(role_scores(att, n), example, n, 1, 1, 0, "hand-made")
view = aw.HeadRolesView(roles)
"""
GRID, HEAT = 0, 1


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open([SETUP, "view"], viewport=(1280, 720))
    nb.widget(GRID)
    nb.widget(HEAT)
    return nb


def cell_xy(info: dict, layer: int, head: int) -> tuple[float, float]:
    cell = float(info["cell"])
    return float(info["x0"]) + (head + 0.5) * cell, float(info["y0"]) + (layer + 0.5) * cell


def test_role_grid_opens_the_best_head_and_a_click_opens_another(nb):
    info = canvas_stats(nb.page, "grid-canvas")
    assert (info["nLayers"], info["nHeads"]) == ("2", "4")
    assert info["statistic"] == "induction" and info["ink"] > 2000 and info["colours"] > 3
    assert info["selected"] == "1/1"  # the exact induction head, opened first
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/1/1/t")
    assert canvas_stats(nb.page, "heatmap-canvas")["ink"] > 2000
    nb.screenshot("head-roles-lecture-1280x720")
    nb.widget(HEAT).scroll_into_view_if_needed()
    nb.screenshot("head-roles-induction-head-pattern-1280x720")

    # The menu lists the three roles; previous-token colours the grid by that score.
    options = nb.widget(GRID).locator("[data-testid=statistic-select] option").all_inner_texts()
    assert [o.lower() for o in options] == ["previous-token score", "duplicate-token score", "induction score"]
    nb.widget(GRID).locator("[data-testid=statistic-select]").select_option("previous_token")
    eventually(nb, "print(view.grid.statistic)", "previous_token")

    # Click head 0.2 (exactly previous-token): the heatmap opens it, and Python sees the selection.
    info = canvas_stats(nb.page, "grid-canvas")
    nb.page.mouse.click(*page_point(nb.page, "grid-canvas", *cell_xy(info, 0, 2)))
    eventually(nb, "print(view.grid.layer, view.grid.head)", "0 2")
    wait_dataset(nb.page, "heatmap-canvas", "view", "self/0/2/t")
    eventually(nb, "print(view.heatmap.layer, view.heatmap.head)", "0 2")
    nb.screenshot("head-roles-previous-token-clicked")
    assert not nb.errors(), nb.errors()


def test_rows_selected_in_a_linked_heatmap_rescore_the_grid(lab):
    """A heatmap of the example linked to the view by link_span: a click and a shift-click on rows of the second
    copy select them in the view's own heatmap, and the grid redraws with the role scores of those rows (Python's
    numbers, in its title); a click on a row of the view's heatmap selects it in the other."""
    from helpers import dataset, row_point

    cells = [SETUP.replace('aw.set_theme("lecture")', 'aw.set_theme("light")'),
             "other = aw.AttentionHeatmap(example, layer=1, head=1)\nlink = aw.widgets.link_span(other, view)",
             "other", "view"]
    nb = lab.open(cells, viewport=(1400, 1000), reuse=True)
    other, grid, heat = nb.widget(0), nb.widget(1), nb.widget(2)
    wait_dataset(other, "heatmap-canvas", "view", "self/1/1/t")
    before = canvas_stats(grid, "grid-canvas")
    nb.page.mouse.click(*row_point(other, "heatmap-canvas", 10))
    wait_dataset(other, "heatmap-canvas", "selection", "10")
    nb.page.keyboard.down("Shift")
    nb.page.mouse.click(*row_point(other, "heatmap-canvas", 12))
    nb.page.keyboard.up("Shift")
    wait_dataset(heat, "heatmap-canvas", "selection", "10,11,12")
    eventually(nb, "print(view.heatmap.selection, 'of the example' in view.grid._meta['title'])", "[10, 11, 12] True")
    check = ("a = example.attention.astype(float); rows = [10, 11, 12]; "
             "print(np.allclose(view.grid.values('induction'), np.mean([a[..., i, i - n + 1] for i in rows], 0)))")
    assert nb.python(check).strip() == "True"
    nb.page.wait_for_function(
        "(s) => { const c = document.querySelectorAll('[data-testid=grid-canvas]')[0];"
        " const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let t = 0;"
        " for (let i = 0; i < d.length; i += 4) t += d[i] + 3 * d[i+1] + 7 * d[i+2]; return t !== s; }",
        arg=before["sum"], timeout=20_000)
    nb.screenshot("head-roles-linked-span", grid)

    # A click on row 3 of the view's own heatmap selects it in the other heatmap.
    assert dataset(heat, "heatmap-canvas")["cell"]
    nb.page.mouse.click(*row_point(heat, "heatmap-canvas", 3))
    eventually(nb, "print(other.selection)", "[3]")
    wait_dataset(other, "heatmap-canvas", "selection", "3")
    assert not nb.errors(), nb.errors()
