"""GenerationView's sampling playground: its settings are checked with the sampler's own ranges, ``sampled`` is the
analysis function on the step's candidates, and the static twin draws the same numbers."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.analysis.sampling import reshape


@pytest.fixture(scope="module")
def view(tiny_gpt2):
    g = aw.generate("the cat sat", tiny_gpt2, max_new_tokens=3, top_k=5)
    return aw.GenerationView(g, step=1)


def test_sampled_is_reshape_of_the_step(view):
    view.temperature, view.top_k, view.top_p, view.min_p = 0.7, 4, 0.9, 0.05
    after, cut = view.sampled()
    want, want_cut = reshape(view.generation.topk_probs[1], temperature=0.7, top_k=4, top_p=0.9, min_p=0.05)
    np.testing.assert_allclose(after, want)
    assert cut == want_cut and cut[4] == "top-k"
    fig = aw.plots.plot_sampling(view.generation, 1, temperature=0.7, top_k=4, top_p=0.9, min_p=0.05)
    bars = [p.get_width() for p in fig.axes[0].patches[:5]]
    np.testing.assert_allclose(bars, want * 100)


@pytest.mark.parametrize(("trait", "value", "match"), [
    ("temperature", 0.0, "temperature must be above 0"), ("top_k", 6, "1 to 5"), ("top_p", 0.0, "top_p"),
    ("min_p", 1.5, "min_p"),
])
def test_out_of_range_settings_are_refused(view, trait, value, match):
    before = getattr(view, trait)
    with pytest.raises(traitlets.TraitError, match=match):
        setattr(view, trait, value)
    assert getattr(view, trait) == before
