"""PositionalExplorer and MaskExplorer in JupyterLab: they draw, hover shows the value Python computed, and changing
the encoding, a slider, the mask or the KV heads in the page sets the Python trait and changes what is drawn.

Screenshots (light and lecture theme) go to test-artifacts/.
"""

from __future__ import annotations

import json
import time

import pytest
from helpers import (
    canvas_stats,
    control_listener_balance,
    count_control_listeners,
    eventually,
    hover_cell,
    wait_dataset,
)

SETUP = """
import attnwidgets as aw
pos = aw.PositionalExplorer(length=32, d_model=32)
masks = aw.MaskExplorer("causal", length=16, window=4)
lecture = aw.MaskExplorer("global_local", length=12, window=3, causal=False, theme="lecture")
"""
POS, MASK, LECTURE = 0, 1, 2


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open([SETUP, "pos", "masks", "lecture"], viewport=(1400, 2400))
    for i in range(3):
        nb.widget(i)
    return nb


def set_range(nb, widget: int, testid: str, value: int) -> None:
    """Move a range slider the way a user lets go of it: value, then input and change events."""
    nb.widget(widget).locator(f"[data-testid={testid}]").evaluate(
        "(el, v) => { el.value = String(v); el.dispatchEvent(new Event('input', {bubbles: true}));"
        " el.dispatchEvent(new Event('change', {bubbles: true})); }",
        value,
    )


def test_positional_explorer_draws_both_panels(nb):
    for i, shape in [(0, ("32", "32")), (1, ("32", "32"))]:
        info = canvas_stats(nb.widget(POS), f"pos-panel-{i}")
        assert info["ink"] > 5000 and info["colours"] > 20, info
        assert (info["rows"], info["cols"]) == shape
    note = nb.widget(POS).locator("[data-testid=panel-note-1]").inner_text()
    assert "m − n only" in note
    nb.screenshot("positional_sinusoidal", nb.widget(POS))
    assert nb.errors() == []


def test_positional_hover_shows_the_value_python_computed(nb):
    text = hover_cell(nb.widget(POS), "pos-panel-0", 5, 0)
    expected = float(nb.python("print(float(pos.panels()[0]['matrix'][5, 0]))"))
    assert "position m 5, dimension 0" in text
    assert f"{expected:.4f}" in text  # sin(5) = -0.9589


def test_choosing_an_encoding_in_the_page_sets_python_and_redraws(nb):
    before = canvas_stats(nb.widget(POS), "pos-panel-0")
    nb.widget(POS).locator("[data-testid=encoding-select]").select_option("alibi")
    eventually(nb, "print(pos.encoding)", "alibi")
    info = wait_dataset(nb.widget(POS), "pos-panel-0", "encoding", "alibi")
    assert (info["rows"], info["cols"]) == ("8", "32")  # [head, distance]
    # the scale changed with the encoding: ALiBi draws every head on one shared scale (so the slopes' 128-fold
    # differences show), and the panel says so
    assert "one scale for every head" in nb.widget(POS).locator("[data-testid=scale-note-0]").inner_text()
    assert canvas_stats(nb.widget(POS), "pos-panel-0") != before
    # ALiBi shows the heads and head sliders; move the head, then switch to causal.
    set_range(nb, POS, "head-slider", 7)
    eventually(nb, "print(pos.head)", "7")
    nb.widget(POS).locator("[data-testid=causal-box]").check()
    eventually(nb, "print(pos.causal)", "True")
    title = nb.widget(POS).locator("[data-testid=panel-title-1]")
    assert "head 7" in title.inner_text()
    assert "masked" in hover_cell(nb.widget(POS), "pos-panel-1", 0, 5)  # a future key under the causal mask
    nb.screenshot("positional_alibi", nb.widget(POS))
    nb.widget(POS).locator("[data-testid=encoding-select]").select_option("t5")
    eventually(nb, "print(pos.encoding)", "t5")
    info = wait_dataset(nb.widget(POS), "pos-panel-0", "encoding", "t5")
    assert info["cols"] == str(2 * 32 - 1)  # offsets -31 .. 31
    assert "bucket" in hover_cell(nb.widget(POS), "pos-panel-0", 0, 31)
    nb.screenshot("positional_t5", nb.widget(POS))
    assert nb.errors() == []


def test_length_and_width_sliders_set_python_and_resize(nb):
    nb.widget(POS).locator("[data-testid=encoding-select]").select_option("rope")
    eventually(nb, "print(pos.encoding)", "rope")
    set_range(nb, POS, "length-slider", 48)
    eventually(nb, "print(pos.length)", "48")
    set_range(nb, POS, "dmodel-slider", 16)
    eventually(nb, "print(pos.d_model)", "16")
    deadline = time.time() + 20
    while time.time() < deadline:
        info = canvas_stats(nb.widget(POS), "pos-panel-0")
        if (info["rows"], info["cols"]) == ("48", "16"):
            break
        time.sleep(0.2)
    assert (info["rows"], info["cols"]) == ("48", "16")
    assert canvas_stats(nb.widget(POS), "pos-panel-1")["rows"] == "48"
    nb.screenshot("positional_rope", nb.widget(POS))


def test_python_side_changes_redraw_the_page(nb):
    nb.python("pos.encoding = 'sinusoidal'; pos.similarity = 'dot'")
    info = wait_dataset(nb.widget(POS), "pos-panel-1", "encoding", "sinusoidal")
    select = nb.widget(POS).locator("[data-testid=encoding-select]")
    assert select.input_value() == "sinusoidal"
    assert float(info["vmax"]) == pytest.approx(8.0, rel=1e-3)  # PE(m)·PE(m) = d / 2 with d = 16


def test_mask_explorer_draws_and_counts(nb):
    info = canvas_stats(nb.widget(MASK), "mask-canvas")
    assert info["n"] == "16" and info["allowed"] == str(16 * 17 // 2)  # causal: the lower triangle
    assert info["ink"] > 3000
    assert "136 of 256" in nb.widget(MASK).locator("[data-testid=mask-stats]").inner_text()
    assert "masked" in hover_cell(nb.widget(MASK), "mask-canvas", 2, 9)
    assert "attends" in hover_cell(nb.widget(MASK), "mask-canvas", 9, 2)
    nb.screenshot("mask_causal", nb.widget(MASK))


def test_choosing_a_mask_and_window_in_the_page(nb):
    assert "attends" in hover_cell(nb.widget(MASK), "mask-canvas", 9, 2)  # causal: the past is visible
    nb.widget(MASK).locator("[data-testid=mask-select]").select_option("sliding_window")
    eventually(nb, "print(masks.mask)", "sliding_window")
    info = wait_dataset(nb.widget(MASK), "mask-canvas", "mask", "sliding_window")
    tooltip = nb.widget(MASK).locator("[data-testid=tooltip]")
    assert not tooltip.is_visible(), "the tooltip still describes the causal mask"
    assert info["allowed"] == nb.python("print(int(masks.mask_array().sum()))").strip()
    before = int(info["allowed"])
    set_range(nb, MASK, "window-slider", 2)
    eventually(nb, "print(masks.window)", "2")
    deadline = time.time() + 20
    while time.time() < deadline and int(canvas_stats(nb.widget(MASK), "mask-canvas")["allowed"]) == before:
        time.sleep(0.2)
    after = int(canvas_stats(nb.widget(MASK), "mask-canvas")["allowed"])
    assert after == 16 + 15  # the diagonal and one key back
    assert after == int(nb.python("print(int(masks.mask_array().sum()))"))
    nb.screenshot("mask_sliding_window", nb.widget(MASK))


def test_kv_heads_menu_sets_python_and_the_cache_bars(nb):
    nb.widget(MASK).locator("[data-testid=kv-select]").select_option("1")
    eventually(nb, "print(masks.n_kv_heads)", "1")
    info = wait_dataset(nb.widget(MASK), "kv-canvas", "variant", "MQA")
    assert info["nKvHeads"] == "1" and info["nHeads"] == "8"
    text = nb.widget(MASK).locator("[data-testid=kv-text]").inner_text()
    assert text.startswith("MQA")
    cache = json.loads(nb.python("import json; print(json.dumps(masks.kv_cache()))"))
    assert cache["MQA"] == 2**26  # 64 MiB
    assert "64 MiB" in nb.widget(MASK).locator("[data-testid=cache-MQA]").inner_text()
    nb.widget(MASK).locator("[data-testid=heads-select]").select_option("32")
    eventually(nb, "print(masks.n_heads, masks.n_kv_heads)", "32 1")
    nb.widget(MASK).locator("[data-testid=kv-select]").select_option("8")
    eventually(nb, "print(masks.n_kv_heads, masks._meta['variant'])", "8 GQA")
    wait_dataset(nb.widget(MASK), "kv-canvas", "nHeads", "32")
    nb.screenshot("mask_gqa", nb.widget(MASK))
    assert nb.errors() == []


def test_global_tokens_box_and_lecture_theme(nb):
    root = nb.widget(LECTURE)
    assert root.get_attribute("data-theme") == "lecture"
    box = root.locator("[data-testid=global-input]")
    box.fill("0, 6, 99")
    box.dispatch_event("change")
    eventually(nb, "print(lecture.global_tokens)", "[0, 6]")  # 99 is past the end: dropped
    info = canvas_stats(nb.widget(LECTURE), "mask-canvas")
    assert float(info["cw"]) > 30  # big cells for a projector
    assert "attends" in hover_cell(nb.widget(LECTURE), "mask-canvas", 6, 11)  # a global token sees everything
    nb.screenshot("mask_global_local_lecture", root)
    assert nb.errors() == []


def test_rebuilding_the_controls_drops_the_old_controls_listeners(nb):
    """Each Python-side change rebuilds the control bar; the listeners of the bar it replaces go with it."""
    count_control_listeners(nb.page)
    for n in (17, 18, 19, 20, 21, 22):
        nb.python(f"masks.length = {n}; pos.length = {n}")
        wait_dataset(nb.widget(MASK), "mask-canvas", "n", str(n))
        net = control_listener_balance(nb.page)
    assert nb.widget(MASK).locator("[data-testid=length-slider]").input_value() == "22"
    assert net == 0, f"{net} control listeners left behind by 6 rebuilds of two widgets"


def test_padding_slider_masks_pad_keys_for_every_query(nb):
    """The padding mask: the last keys are [PAD], no query may attend to them (outlined, their rows hatched)."""
    root = nb.widget(LECTURE)
    before = int(canvas_stats(root, "mask-canvas")["allowed"])
    set_range(nb, LECTURE, "padding-slider", 3)
    eventually(nb, "print(lecture.padding)", "3")
    info = wait_dataset(root, "mask-canvas", "padding", "3")
    assert int(info["allowed"]) == int(nb.python("print(int(lecture.mask_array().sum()))")) < before
    assert "[PAD]: masked for every query" in hover_cell(root, "mask-canvas", 0, 10)   # global token 0 too
    assert "computed, then thrown away" in hover_cell(root, "mask-canvas", 10, 1)
    assert "are [PAD]" in root.locator("[data-testid=mask-stats]").inner_text()
    nb.screenshot("mask_padding_lecture", root)
    assert nb.errors() == []
