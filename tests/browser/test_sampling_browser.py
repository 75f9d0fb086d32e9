"""The sampling playground of GenerationView in JupyterLab: the box shows the sliders, a slider moves the Python trait,
and the sampler's distribution the page draws is Python's (analysis.sampling.reshape), cut tokens named."""

from __future__ import annotations

import json

from helpers import eventually

SETUP = """
import json
import attnwidgets as aw
from attnwidgets.studies.induction_model import induction_decoder
g = aw.generate("<bos> t5 t9 t2 t7 t5 t9", induction_decoder(), max_new_tokens=3, top_k=6)
w = aw.GenerationView(g, step=0)
"""


def page_after(nb) -> tuple[list[float], list[str]]:
    topk = nb.widget(0).locator("[data-testid=topk]")
    return json.loads(topk.get_attribute("data-after") or "[]"), json.loads(topk.get_attribute("data-cut") or "[]")


def test_sampling_playground_follows_the_sliders(lab):
    nb = lab.open([SETUP, "w"], viewport=(1280, 720))
    root = nb.widget(0)
    assert root.locator("[data-testid=sampling-box]").is_hidden()
    root.locator("[data-testid=sampling]").check()
    eventually(nb, "print(w.sampling)", "True")
    slider = root.locator("[data-testid=temperature]")
    slider.wait_for(state="visible")
    slider.fill("2")  # a range input takes fill; it fires "input"
    eventually(nb, "print(w.temperature)", "2.0")
    nb.python("w.top_p = 0.9; w.top_k = 4")
    nb.page.wait_for_timeout(400)
    after, cut = page_after(nb)
    want = json.loads(nb.python("a, c = w.sampled(); print(json.dumps([a.tolist(), c]))"))
    assert cut == want[1] and "top-k" in cut
    assert max(abs(x - y) for x, y in zip(after, want[0])) < 1e-5
    assert root.locator(".aw-topk-row.aw-cut").count() == sum(1 for c in cut if c)
    assert root.locator("[data-testid=top-k]").input_value() == "4"  # the sliders follow Python's traits
    nb.screenshot("sampling-playground", root)
