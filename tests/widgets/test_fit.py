"""The ``fit`` trait every view shares (fit to screen; issue 15 §3): what it accepts, and the clear errors for
what it does not."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.viewdata.checks import check_fit


@pytest.fixture
def result():
    return aw.AttentionResult.from_arrays(np.eye(3, dtype=np.float32), ["a", "b", "c"])


def test_default_is_auto_and_values_sync_as_json(result):
    w = aw.AttentionHeatmap(result)
    assert w.fit == "auto"
    assert aw.AttentionHeatmap(result, fit=False).fit is False
    assert aw.AttentionHeatmap(result, fit=True).fit is True
    box = aw.AttentionHeatmap(result, fit=(1200, 640.5))
    assert box.fit == [1200.0, 640.5]  # a list: what the page gets as JSON
    assert box.get_state()["fit"] == [1200.0, 640.5]
    w.fit = [900, 500]
    assert w.fit == [900.0, 500.0]


@pytest.mark.parametrize(
    ("value", "error", "text"),
    [
        ("yes", traitlets.TraitError, 'fit must be "auto", True, False or a (width, height)'),
        (1, traitlets.TraitError, "got int 1"),
        (None, traitlets.TraitError, "got NoneType None"),
        ((800,), traitlets.TraitError, "got tuple (800,)"),
        ((800, 600, 1), traitlets.TraitError, "(width, height)"),
        ((800, 50), traitlets.TraitError, "fit height must be at least 100 CSS pixels, got 50"),
        ((float("nan"), 600), traitlets.TraitError, "fit width must be at least 100 CSS pixels, got nan"),
        ((float("inf"), 600), traitlets.TraitError, "fit width must be at least 100"),
        (("800", 600), traitlets.TraitError, "fit width must be a number of CSS pixels, got str '800'"),
        ((True, 600), traitlets.TraitError, "got bool True"),
    ],
)
def test_bad_values_are_refused_with_a_clear_error(result, value, error, text):
    with pytest.raises(error, match=None) as info:
        aw.AttentionHeatmap(result, fit=value)
    assert text in str(info.value)
    w = aw.AttentionHeatmap(result)
    with pytest.raises(error):
        w.fit = value
    assert w.fit == "auto"  # unchanged


def test_check_fit_types():
    with pytest.raises(TypeError, match="fit width must be a number"):
        check_fit(("a", 600))
    with pytest.raises(ValueError, match="at least 100"):
        check_fit((99, 600))
    assert check_fit((100, 100)) == [100.0, 100.0]


@pytest.mark.parametrize("name", ["AttentionHeatmap", "ModelView", "HeadView", "AttentionProfile"])
def test_every_view_has_it(result, name):
    w = getattr(aw, name)(result, fit=(1000, 600))
    assert w.fit == [1000.0, 600.0]
    assert "fit" in w.trait_names(sync=True)
