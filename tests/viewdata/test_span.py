"""Span selection (issue 16.5, bertviz #125 and #129): the ``selection`` and ``combine`` traits of the heatmap, the
model view and the profile, their checks, the combined row against a hand-computed mean and sum of rows (dense and
lazy), the static twins and ``link_span``."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets
from lazy_helpers import dense_twin, lazy_result

import attnwidgets as aw
from attnwidgets.result import AttentionResult
from attnwidgets.viewdata.selection import check_combine, check_selection, runs, span_label, span_row, span_rows

TOKENS = ["[CLS]", "i", "flew", "new", "york", "to", "paris", "[SEP]"]
VIEWS = [aw.AttentionHeatmap, aw.ModelView, aw.AttentionProfile]


@pytest.fixture
def small() -> AttentionResult:
    rng = np.random.default_rng(5)
    a = rng.random((2, 3, 8, 8)).astype(np.float32)
    a /= a.sum(-1, keepdims=True)
    return AttentionResult.from_arrays(a, TOKENS)


# -- numbers ---------------------------------------------------------------------------------------------------------


def test_span_row_is_the_hand_mean_and_sum_of_the_rows(small):
    a = small.attention
    # "new york" in head 2 of layer 1, by hand
    mean = [(a[1, 2, 3, k] + a[1, 2, 4, k]) / 2 for k in range(8)]
    total = [a[1, 2, 3, k] + a[1, 2, 4, k] for k in range(8)]
    np.testing.assert_allclose(span_row(small, 1, [3, 4], 2), mean, rtol=1e-6)
    np.testing.assert_allclose(span_row(small, 1, [4, 3], 2, combine="sum"), total, rtol=1e-6)
    # a selection with a gap, the mean of heads, and a list of heads
    np.testing.assert_allclose(span_row(small, 0, [1, 4, 5], -1), a[0].mean(0)[[1, 4, 5]].mean(0), rtol=1e-6)
    np.testing.assert_allclose(span_row(small, 0, [0, 6], [0, 2], combine="sum"),
                               a[0, [0, 2]].mean(0)[[0, 6]].sum(0), rtol=1e-6)
    # rows of a softmax: the mean sums to 1, the sum to the number of rows
    assert span_row(small, 1, [1, 2, 7], 0).sum() == pytest.approx(1.0, abs=1e-5)
    assert span_row(small, 1, [1, 2, 7], 0, combine="sum").sum() == pytest.approx(3.0, abs=1e-5)
    np.testing.assert_allclose(span_rows(small, [3, 4]), a[:, :, 3:5].mean(2), rtol=1e-6)


def test_span_row_of_a_lazy_result_never_builds_its_attention(no_dense):
    lazy = lazy_result(300, layers=2, heads=4, kv_heads=2, seed=2)
    dense = dense_twin(lazy)
    sel = [5, 6, 7, 100, 299]
    want = dense.attention[1, 3][sel].sum(0)
    with pytest.raises(aw.AttentionTooLargeError):
        _ = lazy.attention
    np.testing.assert_allclose(span_row(lazy, 1, sel, 3, combine="sum"), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(span_rows(lazy, sel, combine="mean")[1, 3], want / len(sel), rtol=1e-5, atol=1e-7)
    w = aw.AttentionHeatmap(lazy, layer=1, head=3, selection=sel, combine="sum")
    np.testing.assert_allclose(w.span_weights(), want, rtol=1e-5, atol=1e-7)
    _reply, buffers = w.answer({"what": "span", "kind": "self", "layer": 1, "head": -1, "selection": [0, 1],
                               "combine": "mean"})
    np.testing.assert_allclose(np.frombuffer(bytes(buffers[0]), np.float32),
                               dense.attention[1].mean(0)[:2].mean(0), rtol=1e-5, atol=1e-7)


def test_checks_say_what_is_wrong():
    assert check_selection((4, 2), 5) == [2, 4] and check_selection([], 5) == []
    with pytest.raises(ValueError, match="out of range: there are 5 query tokens"):
        check_selection([5], 5)
    with pytest.raises(ValueError, match="out of range"):
        check_selection([-1], 5)
    with pytest.raises(ValueError, match="repeats a position"):
        check_selection([1, 1], 5)
    with pytest.raises(TypeError, match="must be an integer, got float"):
        check_selection([1.0], 5)
    with pytest.raises(TypeError, match="list of token positions, got str"):
        check_selection("12", 5)
    with pytest.raises(ValueError, match="unknown combine 'max'"):
        check_combine("max")
    with pytest.raises(ValueError, match="selection is empty"):
        span_row(AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"]), 0, [])
    assert runs([0, 1, 5]) == [(0, 2), (5, 6)]
    assert span_label(TOKENS, [3, 4]) == "mean of 2 rows: new york (3–4)"


# -- widgets ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("view", VIEWS)
def test_every_view_validates_selection_and_combine_the_same_way(small, view):
    w = view(small, layer=1, head=2)
    w.selection = [4, 3]
    assert w.selection == [3, 4]
    np.testing.assert_allclose(w.span_weights(), small.attention[1, 2, 3:5].mean(0), rtol=1e-6)
    w.combine = "sum"
    np.testing.assert_allclose(w.span_weights(), small.attention[1, 2, 3:5].sum(0), rtol=1e-6)
    for bad, message in [([8], "selection position 8 is out of range: there are 8 query tokens"),
                         ([2, 2], "repeats a position"), (["a"], "must be an integer, got str"),
                         ([True], "must be an integer, got bool"), (3, "list of token positions, got int"),
                         (None, "list of token positions, got NoneType")]:
        with pytest.raises(traitlets.TraitError, match=message):
            w.selection = bad
    assert w.selection == [3, 4], "a refused value leaves the selection as it was"
    with pytest.raises(traitlets.TraitError, match="unknown combine"):
        w.combine = "median"
    with pytest.raises(traitlets.TraitError, match="out of range"):
        view(small, selection=[99])
    # the page's request answers the same numbers
    _reply, buffers = w.answer({"what": "profile" if view is aw.AttentionProfile else "span", "kind": "self",
                               "layer": 0, "head": 1, "selection": [0, 7], "combine": "sum"})
    np.testing.assert_allclose(np.frombuffer(bytes(buffers[0]), np.float32), small.attention[0, 1, [0, 7]].sum(0),
                               rtol=1e-6)


PIECES = "An unbelievably tiring flight to New York."  # 15 tokens, 10 words


def test_a_saved_page_gets_the_selection_row(small):
    """The selection on screen is saved first; a full page ("all") also saves the row a click on each single token
    of the map on screen asks for (so a click answers offline), a "view" page only the selection."""
    for view in (aw.AttentionHeatmap, aw.ModelView):
        w = view(small, layer=1, head=2, selection=[3, 4])
        for scope in ("view", "all"):
            spans = [r for r in w._export_requests(scope) if r["what"] == "span"]
            assert spans[0] == {**spans[0], "selection": [3, 4], "combine": "mean", "layer": 1, "head": 2}
            clicks = [r["selection"] for r in spans[1:]]
            assert clicks == ([[i] for i in range(small.n_tokens)] if scope == "all" else [])
            assert all(r["combine"] == "mean" and (r["layer"], r["head"]) == (1, 2) for r in spans)
            w.answer(spans[0])
        bare = [r["selection"] for r in view(small)._export_requests("all") if r["what"] == "span"]
        assert bare == [[i] for i in range(small.n_tokens)]  # no selection: the click rows alone
    p = aw.AttentionProfile(small, layer=1, selection=[1, 4])
    assert {tuple(r["selection"]) for r in p._export_requests("all")} == {(1, 4)}


def test_profile_selection_and_query_follow_each_other(small):
    p = aw.AttentionProfile(small, layer=1, head=0, query=(3, 5))
    assert p.selection == [3, 4] and p._payload["key"] == "self/1/0/3:5/mean"
    np.testing.assert_allclose(p.weights(), small.attention[1, 0, 3:5].mean(0), rtol=1e-6)
    p.selection = [1, 4]  # a gap: the profile is the mean of rows 1 and 4; the query covers them
    assert p.query == [1, 5] and p.selection == [1, 4]
    np.testing.assert_allclose(p.weights(), small.attention[1, 0, [1, 4]].mean(0), rtol=1e-6)
    p.combine = "sum"
    np.testing.assert_allclose(p.profile("token"), small.attention[1, 0, [1, 4]].sum(0), rtol=1e-6)
    p.query = [5, 7]
    assert p.selection == [5, 6]
    p.selection = []  # never empty: back to the default query (the last token that is not special)
    assert p.selection == [6] and p.query == [6, 7]


# -- static twins ----------------------------------------------------------------------------------------------------


def test_plot_heatmap_draws_the_combined_row(small):
    fig = aw.plots.plot_heatmap(small, 1, 2, selection=[3, 4], annotate=False)
    ax = fig.axes[0]
    inset = next(child for child in ax.child_axes)
    drawn = inset.images[0].get_array()
    np.testing.assert_allclose(np.asarray(drawn)[0], small.attention[1, 2, 3:5].mean(0), rtol=1e-6)
    assert ax.get_title().endswith(" · head 2 · mean of 2 rows: new york (3–4)")  # the page's title, selection last
    outlined = [p for p in ax.patches if p.get_edgecolor()[:3] != (0, 0, 0)]
    assert [(p.get_y(), p.get_height()) for p in outlined] == [(3, 2)]
    with pytest.raises(ValueError, match="out of range"):
        aw.plots.plot_heatmap(small, selection=[8])
    assert not aw.plots.plot_heatmap(small).axes[0].child_axes


def test_plot_model_view_and_profile_take_the_selection(small):
    fig = aw.plots.plot_model_view(small, selection=[3, 4], combine="sum", highlight=(1, 2))
    row = np.asarray(fig.axes[1].images[0].get_array())[0]
    np.testing.assert_allclose(row, small.attention[1, 2, 3:5].sum(0), rtol=1e-6)
    assert "sum of 2 rows" in fig.axes[1].get_title()
    fig = aw.plots.plot_profile(small, 1, 0, selection=[1, 4])
    assert "mean of 2 rows" in " ".join(fig.axes[1].get_xlabel().split())  # the page's caption
    with pytest.raises(TypeError, match="list of token positions"):
        aw.plots.plot_profile(small, selection=4)


# -- linking ---------------------------------------------------------------------------------------------------------
