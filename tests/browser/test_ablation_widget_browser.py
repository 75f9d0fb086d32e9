"""AblationWidget in JupyterLab: toggling a head, dragging the scale slider, disabling a layer, switching mode and
resetting in the page re-run the model, and the numbers the panel prints are Python's; a failing watcher shows its
error in the widget. One notebook (the bundled model, three short sentence pairs) serves the module.
"""

from __future__ import annotations

import json
import time

import pytest

SETUP = """
import attnwidgets as aw
TEXTS = ["A man is playing a guitar.", "A woman is slicing an onion.", "A dog runs in the park."]
PAIRS = ["A man plays the guitar.", "A woman cuts an onion.", "The stock market fell sharply today."]
w = aw.AblationWidget(TEXTS, text_pairs=PAIRS)
runs = []
w.observe(lambda change: change["new"] and runs.append(w.ablation), names="_running")  # one entry per model run

def fragile(result):
    if result.ablation:
        raise RuntimeError("boom: this watcher fails on ablated runs")
    return {"first weight": float(result.attention[0, 0, 0, 0])}

bad = aw.AblationWidget(TEXTS[:1], watch=fragile)
"""
MAIN, BAD = 0, 1


@pytest.fixture(scope="module")
def nb(lab):
    nb = lab.open([SETUP, "w", "bad"], viewport=(1500, 2000))
    for i in (MAIN, BAD):
        nb.widget(i)
    return nb


def shown(nb, widget: int = MAIN) -> dict:
    """What the widget's panel prints, its status and the ablation its numbers belong to."""
    return nb.page.evaluate(
        """(i) => {
            const root = document.querySelectorAll('.aw-ablation')[i];
            const out = root.querySelector('[data-testid=output]');
            const status = root.querySelector('[data-testid=status]');
            const rows = [...out.querySelectorAll('[data-testid=out-row]')].map((r) => ({
                item: r.dataset.item,
                before: r.querySelector('[data-testid=out-before]').textContent,
                after: r.querySelector('[data-testid=out-after]').textContent,
            }));
            const error = root.querySelector('[data-testid=error]');
            return { rows, state: status.dataset.state, roundtrip: Number(status.dataset.roundtrip),
                     status: status.textContent, ablation: out.dataset.ablation,
                     error: error.style.display === 'none' ? '' : error.textContent };
        }""",
        widget,
    )


def wait_for(nb, ablation: dict, widget: int = MAIN, timeout: float = 60) -> dict:
    """Wait until the page is idle and its numbers belong to ``ablation``."""
    deadline = time.time() + timeout
    got: dict = {}
    while time.time() < deadline:
        got = shown(nb, widget)
        if got["state"] == "idle" and got["ablation"] and json.loads(got["ablation"]) == ablation:
            return got
        time.sleep(0.1)
    raise AssertionError(f"the page did not show {ablation}: {got}")


def python_rows(nb) -> list[dict]:
    rows = json.loads(nb.python(
        "import json; print(json.dumps([{'item': r.item, 'before': float(r.before), 'after': float(r.after)} "
        "for r in w.frame.itertuples()]))"
    ))
    return [{"item": r["item"], "before": f"{r['before']:.4f}", "after": f"{r['after']:.4f}"} for r in rows]


def py_ablation(nb) -> dict:
    return json.loads(nb.python("import json; print(json.dumps(w.ablation.to_dict()))"))


def cell(nb, layer: int, head: int, widget: int = MAIN):
    return nb.widget(widget).locator(f"[data-testid=cell-{layer}-{head}]")


def test_toggle_a_head_updates_the_numbers_to_pythons(nb):
    clean = shown(nb)
    assert len(clean["rows"]) == 3 and clean["rows"] == python_rows(nb)
    assert all(r["before"] == r["after"] for r in clean["rows"])
    nb.screenshot("ablation-clean", nb.widget(MAIN))

    start = time.perf_counter()
    cell(nb, 3, 3).click()
    expected = {"edits": [{"stack": "self", "layer": 3, "head": 3, "mode": "zero", "scale": 0.0}]}
    now = wait_for(nb, expected)
    elapsed = time.perf_counter() - start
    assert py_ablation(nb) == expected
    assert nb.python("print(w.layer, w.head)").strip() == "3 3", "a click also selects the head"
    assert nb.python("print(w.result.ablation)").strip() == "Ablation(3.3=zero)", "w.result is the ablated run"
    assert now["rows"] == python_rows(nb)
    assert [r["after"] for r in now["rows"]] != [r["after"] for r in clean["rows"]], "the numbers changed"
    assert cell(nb, 3, 3).get_attribute("data-state") == "zero"
    assert cell(nb, 3, 3).inner_text() == "×"
    # The selected head's map after ablation is empty (zeroed); before is the clean map.
    maps = nb.page.evaluate(
        """() => ['map-before', 'map-after'].map((id) => {
            const c = document.querySelector(`.aw-ablation [data-testid=${id}]`);
            return { key: c.dataset.key, sum: Number(c.dataset.sum) };
        })"""
    )
    assert maps[0]["key"] == maps[1]["key"] == "self/0/3/3"
    assert maps[0]["sum"] > 1 and maps[1]["sum"] == 0
    print(f"\ntoggle round trip: page {now['roundtrip']:.0f} ms, click to numbers {elapsed * 1000:.0f} ms")
    nb.screenshot("ablation-head-3-3-zero", nb.widget(MAIN))

    cell(nb, 3, 3).click()  # enable it again
    assert wait_for(nb, {"edits": []})["rows"] == clean["rows"]


def test_scale_slider_is_debounced_and_sets_the_scale(nb):
    cell(nb, 0, 3).click()
    wait_for(nb, {"edits": [{"stack": "self", "layer": 0, "head": 3, "mode": "zero", "scale": 0.0}]})
    n_runs = int(nb.python("print(len(runs))"))
    # A drag: eight moves 20 ms apart end on 0.5; the page sends at most two requests (one may be in flight).
    nb.widget(MAIN).locator("[data-testid=scale-slider]").evaluate(
        """async (s) => {
            for (const v of [0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.45, 0.5]) {
                s.value = String(v);
                s.dispatchEvent(new Event('input', { bubbles: true }));
                await new Promise((r) => setTimeout(r, 20));
            }
        }"""
    )
    expected = {"edits": [{"stack": "self", "layer": 0, "head": 3, "mode": "scale", "scale": 0.5}]}
    now = wait_for(nb, expected)
    assert py_ablation(nb) == expected
    assert 1 <= int(nb.python("print(len(runs))")) - n_runs <= 2, "a drag is one re-run, not one per move"
    assert now["rows"] == python_rows(nb)
    assert cell(nb, 0, 3).inner_text() == ".50"
    assert nb.widget(MAIN).locator("[data-testid=scale-value]").inner_text() == "×0.50"
    nb.screenshot("ablation-head-0-3-scale-half", nb.widget(MAIN))
    nb.widget(MAIN).locator("[data-testid=reset]").click()
    wait_for(nb, {"edits": []})


def test_disable_layer_mode_switch_and_reset(nb):
    clean = shown(nb)
    nb.widget(MAIN).locator("[data-testid=layer-2]").click()
    expected = {"edits": [{"stack": "self", "layer": 2, "head": None, "mode": "zero", "scale": 0.0}]}
    now = wait_for(nb, expected)
    assert py_ablation(nb) == expected and now["rows"] == python_rows(nb)
    assert now["rows"] != clean["rows"]
    assert cell(nb, 2, 7).is_disabled() and cell(nb, 2, 7).get_attribute("data-state") == "layer-off"
    assert nb.widget(MAIN).locator("[data-testid=layer-2]").get_attribute("aria-pressed") == "true"

    nb.widget(MAIN).locator("[data-testid=mode-select]").select_option("uniform")
    expected = {"edits": [{"stack": "self", "layer": 2, "head": None, "mode": "uniform", "scale": 1.0}]}
    now = wait_for(nb, expected)
    assert nb.python("print(w.mode)").strip() == "uniform"
    assert py_ablation(nb) == expected and now["rows"] == python_rows(nb)
    nb.screenshot("ablation-layer-2-uniform", nb.widget(MAIN))

    nb.widget(MAIN).locator("[data-testid=reset]").click()
    assert wait_for(nb, {"edits": []})["rows"] == clean["rows"]
    assert not cell(nb, 2, 7).is_disabled()
    nb.python("w.mode = 'zero'")


def test_setting_the_trait_in_python_redraws_the_grid(nb):
    nb.python("w.ablation = aw.runner.Ablation.heads({(1, 2): 'zero', (4, 0): 0.25})")
    now = wait_for(nb, py_ablation(nb))
    assert now["rows"] == python_rows(nb)
    assert cell(nb, 1, 2).get_attribute("data-state") == "zero"
    assert cell(nb, 4, 0).inner_text() == ".25"
    nb.python("w.theme = 'lecture'")
    nb.page.wait_for_function("() => document.querySelector('.aw-ablation').dataset.theme === 'lecture'")
    nb.screenshot("ablation-lecture", nb.widget(MAIN))
    nb.python("w.theme = 'light'; w.reset()")
    wait_for(nb, {"edits": []})


def test_an_error_shows_in_the_widget_and_clears(nb):
    cell(nb, 0, 0, BAD).click()
    err = nb.widget(BAD).locator("[data-testid=error]")
    err.wait_for(state="visible", timeout=30_000)
    assert "boom: this watcher fails on ablated runs" in err.inner_text()
    assert "boom" in nb.python("print(bad._error)")
    nb.page.wait_for_function(
        "() => document.querySelectorAll('.aw-ablation')[1].querySelector('[data-testid=status]')"
        ".dataset.state === 'error'", timeout=10_000,
    )
    nb.screenshot("ablation-error", nb.widget(BAD))
    cell(nb, 0, 0, BAD).click()
    wait_for(nb, {"edits": []}, widget=BAD)
    err.wait_for(state="hidden", timeout=10_000)
    assert nb.python("print(repr(bad._error))").strip() == "''"
    assert nb.errors() == []


LINKED = """
import attnwidgets as aw
text = "I flew from New York to Paris."
w = aw.AblationWidget([text], watch="drift", layer=2, head=3, ablation=aw.runner.Ablation.heads({(2, 3): "uniform"}))
h = aw.AttentionHeatmap(aw.run(text), layer=2, head=3)
link = aw.widgets.link_span(h, w)
"""


def test_rows_selected_in_a_linked_heatmap_are_compared_before_and_after(lab):
    """AblationWidget linked to a heatmap of its text: "new york" selected in the heatmap is outlined in both maps,
    its mean row drawn under each at Python's numbers, the caption prints how much attention moved; a click on a
    row of the "before" map selects it in the heatmap."""
    from helpers import canvas_stats, dataset, eventually, page_point, row_point, wait_dataset

    nb = lab.open([LINKED, "h", "w"], viewport=(1500, 1400), reuse=True)
    hm, ab = nb.widget(0), nb.widget(1)
    wait_dataset(hm, "heatmap-canvas", "view", "self/2/3/t")
    wait_dataset(ab, "map-after", "key", "self/0/2/3")
    before = canvas_stats(ab, "map-after")["ink"]  # (its "sum" is the map's, a data attribute)
    ny = [int(v) for v in nb.python("print(w.result.tokens.index('new'), w.result.tokens.index('york'))").split()]
    nb.page.mouse.click(*row_point(hm, "heatmap-canvas", ny[0]))
    wait_dataset(hm, "heatmap-canvas", "selection", str(ny[0]))
    nb.page.keyboard.down("Shift")
    nb.page.mouse.click(*row_point(hm, "heatmap-canvas", ny[1]))
    nb.page.keyboard.up("Shift")
    d = wait_dataset(ab, "map-after", "selection", f"{ny[0]},{ny[1]}")
    eventually(nb, "print(w.selection)", str(ny))
    want = json.loads(nb.python("import json; c = w.span_change(); "
                                "print(json.dumps([c['after'].tolist(), c['moved']]))"))
    shown_row = [float(x) for x in d["span"].split(",")]
    assert all(abs(a - b) < 1e-5 for a, b in zip(shown_row, want[0], strict=True))
    assert abs(float(d["moved"]) - want[1]) < 1e-5 and want[1] > 0.01
    assert canvas_stats(ab, "map-after")["ink"] > before, "the after map did not draw the rows' band"
    caption = ab.locator(".aw-abl-maps span").first.text_content()
    assert f"= {want[1]:.3f}" in caption, caption
    nb.screenshot("ablation-linked-span", ab)

    # A click on row 2 of the "before" map selects it in the heatmap.
    m = dataset(ab, "map-before")
    nb.page.mouse.click(*page_point(ab, "map-before", float(m["x0"]) + 2, float(m["y0"]) + 2.5 * float(m["cell"])))
    eventually(nb, "print(h.selection, w.selection)", "[2] [2]")
    wait_dataset(hm, "heatmap-canvas", "selection", "2")
    assert not nb.errors(), nb.errors()
