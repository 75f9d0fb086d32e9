"""PatchingView: the grid carries the patching effect as a signed summary, its static twins draw the same numbers on
a scale centred on 0, and bad sources are refused."""

from __future__ import annotations

import numpy as np
import pytest

import attnwidgets as aw
from attnwidgets.fallback import twin_figure
from attnwidgets.studies import patch_heads
from attnwidgets.studies.patching import PatchingResult


def unpack(packed: dict) -> np.ndarray:
    return np.frombuffer(packed["buffer"], dtype="<f4").reshape(packed["shape"])


@pytest.fixture(scope="module")
def patched(bundled):
    return patch_heads("The cat sat on the mat.", "The dog sat on the mat.")


def test_the_grid_is_the_patching_effect(patched):
    w = aw.widgets.PatchingView(patched)
    assert w.summary == "patching"
    assert (w.layer, w.head) == patched.top(1)[0][:2]
    meta = w._meta
    assert meta["signed"] == ["patching"] and meta["summaries"][-1] == "patching"
    stack = unpack(w._payload["summary"])
    np.testing.assert_allclose(stack[-1], patched.effect, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(w.summary_values(), patched.effect)
    normal = aw.widgets.PatchingView(patched, normalised=True)
    np.testing.assert_allclose(normal.summary_values(), patched.normalised)
    w.summary = "js"  # the attention summaries stay in the menu
    with pytest.raises(Exception, match="summary must be one of"):
        w.summary = "nope"


def test_twins_draw_the_same_numbers_centred_on_zero(patched):
    w = aw.widgets.PatchingView(patched)
    fig = twin_figure(w)
    grid = next(ax for ax in fig.axes if ax.get_xlabel() == "head").get_images()[0]
    np.testing.assert_allclose(np.asarray(grid.get_array()), patched.effect, atol=1e-12)
    lo, hi = grid.get_clim()
    assert lo == pytest.approx(-hi) and hi == pytest.approx(np.abs(patched.effect).max())
    alone = aw.plots.plot_patching(patched, selected=(1, 2))
    image = alone.axes[0].get_images()[0]
    np.testing.assert_allclose(np.asarray(image.get_array()), patched.effect, atol=1e-12)
    assert image.get_clim()[0] == pytest.approx(-image.get_clim()[1])


def test_a_result_without_its_run_is_refused():
    bare = PatchingResult(np.zeros((1, 2)), 1.0, 0.0, "noising", "output", "m", ["a"], ["b"], "toy")
    with pytest.raises(ValueError, match="patch_heads"):
        aw.widgets.PatchingView(bare)
