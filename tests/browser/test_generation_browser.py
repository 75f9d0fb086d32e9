"""GenerationView in JupyterLab: it draws the text, the steps x keys map and the top-k; scrubbing a step (arrow key,
slider) moves the Python trait and the highlighted attention on the text changes to Python's numbers for that step."""

from __future__ import annotations

import json

from helpers import canvas_stats, live_listeners, track_live_listeners, wait_dataset

TEXT = "[data-testid=gen-text]"


def setup(path: str) -> str:
    return f"""
import attnwidgets as aw
g = aw.generate("The cat sat on the mat because", {path!r}, max_new_tokens=6, min_new_tokens=6)
w = aw.GenerationView(g, step=1, layer=1, head=2)
w
"""


def shown_weights(nb) -> dict[int, float]:
    """{key index: weight} of the highlighted key tokens on the text."""
    return {int(k): float(v) for k, v in nb.page.eval_on_selector_all(
        f"{TEXT} .aw-tok[data-weight]", "els => els.map(e => [e.dataset.key, e.dataset.weight])")}


def python_weights(nb, step: int, layer: int = 1, head: int = 2) -> list[float]:
    return json.loads(nb.python(f"import json; print(json.dumps(g.step_attention({step}, {layer}, {head}).tolist()))"))


def check_step(nb, step: int) -> None:
    wait_dataset(nb.page, TEXT, "step", str(step))
    shown = shown_weights(nb)
    want = python_weights(nb, step)
    assert sorted(shown) == list(range(len(want))), "every key that exists at this step is highlighted, no other"
    assert max(abs(shown[k] - w) for k, w in enumerate(want)) < 2e-3  # float16 on the wire
    current = nb.page.locator(f"{TEXT} .aw-tok.aw-current")
    assert current.count() == 1
    assert current.inner_text() == nb.python(f"print(g.generated_tokens[{step}], end='')")


def test_generation_view_scrubs_steps(lab, tiny_gpt2):
    nb = lab.open([setup(tiny_gpt2)], viewport=(1280, 720))
    root = nb.widget()
    check_step(nb, 1)
    d = wait_dataset(nb.page, "steps-canvas", "ready", "1")
    assert d["step"] == "1" and d["view"] == "self/1/2" and d["rows"] == "6"
    assert canvas_stats(nb.page, "steps-canvas")["ink"] > 2000
    probs = nb.page.eval_on_selector_all("[data-testid=topk] .aw-topk-row", "els => els.map(e => e.dataset.prob)")
    want = json.loads(nb.python("import json; print(json.dumps(g.topk_probs[1].tolist()))"))
    assert [round(float(p), 5) for p in probs] == [round(p, 5) for p in want]
    nb.screenshot("generation-step1", root)

    # An arrow key moves one step: the Python trait and the highlighted attention follow.
    root.focus()
    nb.page.keyboard.press("ArrowRight")
    check_step(nb, 2)
    assert nb.python("print(w.step, end='')") == "2"
    assert nb.page.locator(f"{TEXT} .aw-tok.aw-future").count() == 3

    # The slider.
    nb.page.locator("[data-testid=step-slider]").evaluate(
        "(s) => { s.value = '4'; s.dispatchEvent(new Event('input', {bubbles: true})); }")
    check_step(nb, 4)
    assert nb.python("print(w.step, end='')") == "4"

    # Another head from the menu is fetched; Python sets the step and the theme (both rebuild the bar).
    track_live_listeners(nb.page)
    nb.page.locator("select[aria-label=head]").select_option("0")
    wait_dataset(nb.page, TEXT, "view", "self/1/0")
    nb.python("w.step = 5; w.theme = 'lecture'")
    wait_dataset(nb.page, TEXT, "step", "5")
    want = python_weights(nb, 5, 1, 0)
    shown = shown_weights(nb)
    assert max(abs(shown[k] - v) for k, v in enumerate(want)) < 2e-3
    nb.page.wait_for_function("() => document.querySelector('.aw-generation').dataset.theme === 'lecture'",
                              timeout=10_000)
    nb.screenshot("generation-lecture-1280x720", nb.page)
    nb.screenshot("generation-lecture", root)
    assert live_listeners(nb.page) > 0
    # Closed, the view takes its bar's listeners with it (the rebuilt menus, slider and buttons included).
    nb.python("w.close()")
    root.wait_for(state="detached", timeout=20_000)
    assert live_listeners(nb.page) == 0, "listeners left on the closed view's controls"
    assert not nb.errors(), nb.errors()


TOY = """
import attnwidgets as aw
from attnwidgets.teaching import train
from attnwidgets.teaching.tasks import reverse_task
aw.set_theme("lecture")
run = train(reverse_task(3, 4), architecture="decoder", seed=0, steps=250, n_held_out=30, lr=5e-3, warmup=30)
g = run.generate("3 1 4 2")
w = aw.GenerationView(g, step=1, layer=0, head=2)
w
"""


def test_toy_decoder_generation_in_the_lecture_theme(lab):
    """The trained toy decoder reversing 3 1 4 2: at step 1 (writing 4) head 0-2 looks at the source's 4."""
    nb = lab.open([TOY], viewport=(1280, 720), timeout=240)
    root = nb.widget()
    wait_dataset(nb.page, TEXT, "step", "1")
    shown = shown_weights(nb)
    assert max(shown, key=shown.get) == 3  # <bos> 3 1 [4] 2 <sep>
    assert nb.page.locator(f"{TEXT} .aw-tok.aw-current").inner_text() == "4"
    nb.screenshot("generation-toy-lecture-1280x720", nb.page)
    nb.screenshot("generation-toy-lecture", root)
    nb.python("aw.set_theme('light')")
    assert not nb.errors(), nb.errors()
