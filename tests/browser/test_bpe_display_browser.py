"""Byte-level BPE tokens in JupyterLab: the heatmap labels a GPT-2-style model's tokens with the text they stand for
(`·café`, `·東京`, `·🙂`, not `ĠcafÃ©`), and a character cut between tokens whole on the token that completes it
(`·⟨E6⟩`, `東`); the tooltip names them the same way. Labels are read from what the canvas draws (fillText).
"""

from __future__ import annotations

import pytest
from bpe_models import TEXT, merged_tokenizer, save_gpt2, split_tokenizer
from helpers import hover_cell, unisolate, wait_dataset

HOOK = """() => {
  window.__drawn = [];
  const fill = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
    window.__drawn.push(String(text));
    return fill.call(this, text, ...rest);
  };
}"""
MOJIBAKE = set("ĠÃ©æĿ±äº¬ðŁĻĤ")


@pytest.fixture(scope="module")
def nb(lab, tmp_path_factory):
    root = tmp_path_factory.mktemp("bpe-browser")
    merged, split = save_gpt2(merged_tokenizer(), root / "merged"), save_gpt2(split_tokenizer(), root / "split")
    setup = f"""
import attnwidgets as aw
merged = aw.run({TEXT!r}, model={merged!r})
split = aw.run({TEXT!r}, model={split!r})
"""
    nb = lab.open([setup, "aw.AttentionHeatmap(merged, layer=1, head=0)",
                   "aw.AttentionHeatmap(split, layer=1, head=0)"], viewport=(1280, 720))
    nb.widget(0)
    nb.widget(1)
    return nb


def _drawn(nb) -> list[str]:
    nb.page.evaluate(HOOK)
    nb.python("aw.set_theme('lecture')")  # restyles the views on screen: both repaint through the hook
    nb.page.wait_for_function("() => document.querySelectorAll('.aw-root[data-theme=lecture]').length === 2",
                              timeout=30_000)
    nb.page.wait_for_timeout(500)
    return [unisolate(d) for d in nb.page.evaluate("() => window.__drawn")]


def test_heatmap_labels_and_tooltip_show_the_text(nb):
    drawn = _drawn(nb)
    assert {"·café", "·東京", "·🙂", "<s>", "</s>"} <= set(drawn), drawn
    assert {"·ca", "⟨C3⟩", "é", "·⟨E6⟩", "東", "⟨E4⟩", "京", "⟨F0 9F 99⟩", "🙂"} <= set(drawn), drawn
    assert not [d for d in drawn if MOJIBAKE & set(d)], "a byte-alphabet spelling was drawn"
    first = nb.widget(0)
    first.scroll_into_view_if_needed()
    wait_dataset(first, "heatmap-canvas", "view", "self/1/0/t")
    tip = hover_cell(first, "heatmap-canvas", 2, 1)  # query " 東京", key " café" (causal: a key before it)
    assert tip.startswith(" 東京 →  café\n"), tip  # the tooltip writes tokens as they are, leading spaces too
    assert not MOJIBAKE & set(tip), tip
    nb.screenshot("bpe-heatmap-merged", first)
    nb.page.set_viewport_size({"width": 1920, "height": 1400})  # the large size: the split row whole
    second = nb.widget(1)
    second.scroll_into_view_if_needed()
    nb.page.wait_for_timeout(300)
    nb.screenshot("bpe-heatmap-split", second)
    assert not nb.errors(), nb.errors()
