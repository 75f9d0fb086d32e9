"""Widgets rebuild their control bars on every change (a new layer menu for a new layer, and so on); the listeners of
the controls they replace must go with them, or a lecture's hundred clicks leave hundreds of dead listeners behind.

Each test counts listeners added to minus removed from form controls and buttons while the page drives the menus.
"""

from __future__ import annotations

import pytest
from helpers import control_listener_balance, count_control_listeners, eventually

SETUP = """
import attnwidgets as aw
text = "The cat sat on the mat because it was tired."
r = aw.run(text)
heat = aw.AttentionHeatmap(r)
hv = aw.HeadView(r)
qk = aw.QKStepThrough(aw.runner.capture_qk_layers(text), layer=0, head=0)
grid = aw.HeadStatsGrid(r, statistic="sep")
"""
HEAT, HV, QK, GRID = range(4)


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open([SETUP, "heat", "hv", "qk", "grid"], viewport=(1400, 3600))
    for i in range(4):
        nb.widget(i)
    return nb


def test_menus_rebuild_without_leaving_listeners_behind(nb):
    count_control_listeners(nb.page)
    statistics = ["cls", "sep", "punct", "prev"]
    for step in range(1, 5):
        layer = str(step % 3)
        nb.widget(HEAT).locator("[data-testid=layer-select]").select_option(layer)
        nb.widget(HEAT).locator("[data-testid=head-select]").select_option(str(step))
        nb.widget(HV).locator("[data-testid=layer-select]").select_option(layer)
        nb.widget(QK).locator("[data-testid=query-select]").select_option(str(step))
        nb.widget(GRID).locator("[data-testid=statistic-select]").select_option(statistics[step % 4])
        eventually(
            nb,
            "print(heat.layer, heat.head, hv.layer, qk.query, grid.statistic)",
            f"{layer} {step} {layer} {step} {statistics[step % 4]}",
        )
    # The bars were rebuilt (the heatmap's menus show the new choice) and every old control's listeners are gone.
    assert nb.widget(HEAT).locator("[data-testid=head-select]").input_value() == "4"
    balance = control_listener_balance(nb.page)
    assert balance == 0, f"{balance} listeners left on replaced controls after 4 rounds of menu changes"
    assert nb.errors() == []
