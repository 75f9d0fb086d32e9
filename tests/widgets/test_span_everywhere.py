"""Span selection in the rest of the views (issue 27 §1): the per-head statistic widgets (HeadStatsGrid,
EntropyBars, HeadClusterMap) and AttentionCompare take the heatmap's ``selection`` / ``combine`` traits, with the
same checks, numbers checked against hand-computed means and sums of the selected rows, and ``link_span`` links a
heatmap to each of them (the generation view's part is in test_span_share.py)."""

from __future__ import annotations

import ipywidgets
import numpy as np
import pytest
import traitlets
from lazy_helpers import dense_twin, lazy_result

import attnwidgets as aw
from attnwidgets.analysis import surface_stats
from attnwidgets.result import AttentionResult

TOKENS = ["[CLS]", "i", "flew", "new", "york", "to", "paris", "[SEP]"]
STAT_VIEWS = [aw.HeadStatsGrid, aw.EntropyBars, aw.HeadClusterMap]


@pytest.fixture
def small() -> AttentionResult:
    rng = np.random.default_rng(11)
    a = rng.random((2, 3, 8, 8)).astype(np.float32)
    a /= a.sum(-1, keepdims=True)
    return AttentionResult.from_arrays(a, TOKENS)


# -- statistics of selected rows ---------------------------------------------------------------------------------


def test_surface_stats_of_selected_rows_are_the_hand_means(small):
    a = small.attention.astype(np.float64)
    rows = [3, 4, 7]
    got = surface_stats(small, rows=rows)
    np.testing.assert_allclose(got["sep"], a[:, :, rows, 7].mean(-1), rtol=1e-6)
    np.testing.assert_allclose(got["cls"], a[:, :, rows, 0].mean(-1), rtol=1e-6)
    np.testing.assert_allclose(got["prev"], np.mean([a[:, :, q, q - 1] for q in rows], 0), rtol=1e-6)
    np.testing.assert_allclose(got["next"], np.mean([a[:, :, 3, 4], a[:, :, 4, 5], 0 * a[:, :, 0, 0]], 0),
                               rtol=1e-6)  # row 7 has no next key: it counts 0, as over every row
    ent = -(a[:, :, rows] * np.log(a[:, :, rows])).sum(-1).mean(-1)
    np.testing.assert_allclose(got["entropy"], ent, rtol=1e-6)
    np.testing.assert_allclose(got["sep_sep"], a[:, :, 7, 7], rtol=1e-6)  # the one selected [SEP] row
    np.testing.assert_allclose(got["rest_sep"], a[:, :, [3, 4], 7].mean(-1), rtol=1e-6)
    assert np.isnan(got["entropy_cls"]).all()  # row 0 not selected
    np.testing.assert_allclose(got["entropy_last"], -(a[:, :, 7] * np.log(a[:, :, 7])).sum(-1), rtol=1e-6)
    # every row is the plain statistic; rows in any order
    every = surface_stats(small)
    for name, value in surface_stats(small, rows=list(range(8))[::-1]).items():
        np.testing.assert_allclose(value, every[name], rtol=1e-6, err_msg=name)


def test_surface_stats_of_rows_of_a_lazy_result(no_dense):
    lazy = lazy_result(200, layers=2, heads=4, kv_heads=2, seed=4)
    rows = [0, 1, 2, 50, 51, 199]
    got, want = surface_stats(lazy, rows=rows), surface_stats(dense_twin(lazy), rows=rows)
    for name in ("first", "self", "prev", "entropy", "entropy_uniform"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-7, err_msg=name)
    # causal baseline: the mean over the selected rows of ln(i + 1)
    assert got["entropy_uniform"][0, 0] == pytest.approx(np.log(np.array(rows) + 1.0).mean())


def test_surface_stats_rows_checks(small):
    with pytest.raises(ValueError, match="rows is empty"):
        surface_stats(small, rows=[])
    with pytest.raises(ValueError, match="query row 8 is out of range: there are 8 query rows"):
        surface_stats(small, rows=[8])
    with pytest.raises(ValueError, match="repeats"):
        surface_stats(small, rows=[1, 1])
    with pytest.raises(TypeError, match="must be an integer, got float"):
        surface_stats(small, rows=[1.0])


# -- the per-head statistic widgets ------------------------------------------------------------------------------


@pytest.mark.parametrize("view", STAT_VIEWS)
def test_stat_widgets_show_the_statistics_of_the_selection(small, view):
    a = small.attention.astype(np.float64)
    w = view(small, selection=[3, 4])  # "new york"
    assert w.selection == [3, 4] and w.combine == "mean"
    assert w._meta["tokens"] == TOKENS and "mean of 2 selected rows" in w._meta["title"]
    sep = a[:, :, [3, 4], 7]
    np.testing.assert_allclose(w.values("sep"), sep.mean(-1), rtol=1e-6)
    w.combine = "sum"  # the total attention the two give [SEP]; entropies stay means
    np.testing.assert_allclose(w.values("sep"), sep.sum(-1), rtol=1e-6)
    ent = -(a[:, :, [3, 4]] * np.log(a[:, :, [3, 4]])).sum(-1).mean(-1)
    np.testing.assert_allclose(w.values("entropy"), ent, rtol=1e-6)
    sent = np.frombuffer(bytes(w._payload["stats"]["buffer"]), np.float32).reshape(w._payload["stats"]["shape"])
    np.testing.assert_allclose(sent[w._meta["names"].index("entropy")], ent, rtol=1e-6)  # what the page draws
    w.selection = []  # every row again
    np.testing.assert_allclose(w.values("sep"), a[:, :, :, 7].mean(-1), rtol=1e-6)
    assert "selected" not in w._meta["title"]


@pytest.mark.parametrize("view", STAT_VIEWS)
def test_stat_widgets_check_the_selection(small, view):
    w = view(small)
    for bad, match in (([8], "out of range: there are 8 query tokens"), ([2, 2], "repeats"),
                       ([True], "must be an integer")):
        with pytest.raises(traitlets.TraitError, match=match):
            w.selection = bad
    with pytest.raises(traitlets.TraitError, match="unknown combine"):
        w.combine = "max"
    assert w.selection == []


def test_statistics_without_attention_refuse_a_selection(small):
    stats = aw.analysis.aggregate_stats([small, small])
    w = aw.HeadStatsGrid(stats)
    assert w._meta["tokens"] == []
    with pytest.raises(traitlets.TraitError, match="only when given one result's attention"):
        w.selection = [1]
    with pytest.raises(traitlets.TraitError, match="only when given one result's attention"):
        aw.HeadStatsGrid(stats, selection=[1])


def test_word_level_clears_the_selection():
    r = aw.run("Tokenization splits words.")
    w = aw.HeadStatsGrid(r, selection=[1, 2])
    w.words = True
    assert w.selection == [] and len(w._meta["tokens"]) < r.n_tokens  # words now
    w.selection = [1]
    assert "1 selected row" in w._meta["title"]


# -- the compare view --------------------------------------------------------------------------------------------


def test_compare_draws_the_combined_rows_of_a_and_b():
    a = aw.run("I flew from New York to Paris.")
    b = aw.run("I flew from New York to Rome today.")
    ny = [a.tokens.index("new"), a.tokens.index("york")]
    w = aw.AttentionCompare(a, b, layer=2, head=3, selection=ny)
    rows = w.span_weights()
    np.testing.assert_allclose(rows["a"], a.attention[2, 3][ny].mean(0), rtol=1e-6)
    ny_b = [b.tokens.index("new"), b.tokens.index("york")]
    np.testing.assert_allclose(rows["b"], b.attention[2, 3][ny_b].mean(0), rtol=1e-6)
    c = w.comparison
    np.testing.assert_allclose(rows["diff"], rows["b"][c.keys.b_index] - rows["a"][c.keys.a_index], atol=1e-7)
    p = w._payload
    assert p["span_key"] == f"2/3/{ny[0]},{ny[1]}/mean"
    sent = np.frombuffer(bytes(p["span_a"]["buffer"]), np.float32)
    np.testing.assert_allclose(sent, rows["a"], rtol=1e-6)
    w.combine = "sum"
    np.testing.assert_allclose(w.span_weights()["a"], a.attention[2, 3][ny].sum(0), rtol=1e-6)
    assert w._payload["span_key"].endswith("/sum")
    # a token of A with no partner in B ("paris"): B's row is NaN, the difference too
    w.selection = [a.tokens.index("paris")]
    assert np.isnan(w.span_weights()["b"]).all()
    with pytest.raises(traitlets.TraitError, match="out of range: there are 10 query tokens"):
        w.selection = [10]
    w.selection = []
    assert "span_key" not in w._payload
    with pytest.raises(ValueError, match="selection is empty"):
        w.span_weights()


# -- link_span -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("view", [*STAT_VIEWS, "compare"])
def test_link_span_links_a_heatmap_to_each(small, view):
    other = AttentionResult.from_arrays(small.attention[:, :, ::-1, ::-1].copy(), TOKENS[::-1])
    w = aw.AttentionCompare(small, other) if view == "compare" else view(small)
    heat = aw.AttentionHeatmap(small)
    link = aw.widgets.link_span(heat, w, js=False)
    heat.selection = [3, 4]  # what a click and a shift-click in the heatmap do
    assert w.selection == [3, 4]
    heat.combine = "sum"
    assert w.combine == "sum"
    w.selection = [1]  # and back
    assert heat.selection == [1]
    link.unlink()
    heat.selection = [2]
    assert w.selection == [1]
    longer = aw.AttentionHeatmap(AttentionResult.from_arrays(np.full((1, 1, 3, 3), 1 / 3, np.float32), list("abc")))
    with pytest.raises(ValueError, match="different query tokens"):
        aw.widgets.link_span(longer, w)


def test_link_span_refuses_a_widget_that_selects_no_tokens(small):
    with pytest.raises(TypeError, match="select query tokens"):
        aw.widgets.link_span(aw.AttentionHeatmap(small), ipywidgets.IntSlider())
