"""The tests of tests/viewdata/test_span.py that need a model: selections at word level on a real tokenisation, in
the heatmap and across linked views."""

from __future__ import annotations

import ipywidgets
import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from tests.viewdata import test_span as span_tests
from tests.viewdata.test_span import PIECES

small = span_tests.small  # the fixture of test_span.py


def test_heatmap_selection_names_word_rows_at_word_level():
    r = aw.run(PIECES)
    w = aw.AttentionHeatmap(r, layer=0, head=0, selection=[12, 13])
    w.words = True  # token positions do not name word rows
    assert w.selection == []
    with pytest.raises(traitlets.TraitError, match="there are 10 query tokens"):
        w.selection = [12]
    w.selection = [7, 8]  # "new york" as words
    np.testing.assert_allclose(w.span_weights(), w.matrix()[7:9].mean(0), rtol=1e-6)


def test_link_span_keeps_selections_and_combine_together(small):
    heat, model, prof = aw.AttentionHeatmap(small), aw.ModelView(small), aw.AttentionProfile(small)
    head = aw.HeadView(small)
    heat.selection = [3, 4]
    link = aw.widgets.link_span(heat, model, prof, head, js=False)
    assert model.selection == prof.selection == head.selected == [3, 4]
    model.selection = [2]
    assert heat.selection == [2] and prof.selection == [2] and head.selected == [2]
    prof.combine = "sum"
    assert heat.combine == "sum" and model.combine == "sum"
    link.unlink()
    heat.selection = [5]
    assert model.selection == [2]
    with pytest.raises(TypeError, match="two or more"):
        aw.widgets.link_span(heat)
    with pytest.raises(TypeError, match="select query tokens"):
        aw.widgets.link_span(heat, ipywidgets.IntSlider())  # a widget without a selection of tokens
    r = aw.run(PIECES)
    with pytest.raises(ValueError, match="different query tokens"):
        aw.widgets.link_span(aw.AttentionHeatmap(r), aw.ModelView(r), aw.AttentionHeatmap(r, words=True))
