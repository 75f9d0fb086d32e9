"""RouterView (issue 34 §5): the state, the widget and the static twin of a MoE model's routing, from the tiny random
Mixtral and OLMoE of conftest.py. Numbers are checked against the RouterResult's own arrays and counts by hand; bad
input (a dense model, a layer without a router, a selection out of range, not a RouterResult) is refused with a
message that says what to do.
"""

from __future__ import annotations

import numpy as np
import pytest
import traitlets
from matplotlib.colors import to_rgb

import attnwidgets as aw
from attnwidgets.plots.routers import STRIP_TITLE
from attnwidgets.router_result import RouterResult
from attnwidgets.viewdata.state import to_wire
from attnwidgets.viewdata.views.routers import (
    EXPERT_PALETTE,
    FADE_FLOOR,
    RouterOptions,
    expert_rgb,
    router_load,
    router_state,
)

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def routes(tiny_mixtral) -> RouterResult:
    return aw.runner.route(TEXT, model=tiny_mixtral)


def _by_hand(r: RouterResult, row: int, rows: list[int], weighted: bool) -> np.ndarray:
    counts = np.zeros(r.n_experts)
    for t in rows:
        for e, w in zip(r.experts[row, t], r.weights[row, t]):
            counts[e] += w if weighted else 1.0
    return counts / counts.sum()


def test_state_carries_the_routing_as_the_model_chose_it(routes):
    state = router_state(routes)
    np.testing.assert_array_equal(state.payload.experts, routes.experts)
    np.testing.assert_array_equal(state.payload.weights, routes.weights)
    m = state.meta
    assert m.tokens == list(routes.tokens) and m.layers == routes.layers
    assert (m.n_experts, m.top_k) == (4, 2) and m.renormalised, "Mixtral renormalises over its top 2"
    assert m.title == f"{routes.model.name} · top-2 of 4 experts"
    wire = to_wire(state)
    assert wire["payload"]["experts"]["shape"] == list(routes.experts.shape)
    assert wire["payload"]["experts"]["dtype"] == "float32"


def test_olmoe_state_says_its_gates_are_not_renormalised(tiny_olmoe):
    r = aw.runner.route(TEXT, model=tiny_olmoe)
    assert not router_state(r).meta.renormalised
    assert r.weights.sum(-1).max() < 1.0


@pytest.mark.parametrize("weighted", [False, True])
def test_load_of_a_layer_over_a_selection_is_counted_by_hand(routes, weighted):
    for row, layer in enumerate(routes.layers):
        for sel in ([], [2, 3, 4], [0, 5]):
            shown = router_load(routes, RouterOptions(layer, tuple(sel), weighted))
            rows = sel or list(range(len(routes.tokens)))
            np.testing.assert_allclose(shown.load, _by_hand(routes, row, rows, weighted), atol=1e-6)
    assert router_load(routes, RouterOptions(1, (2, 3, 4))).title == "load per expert, layer 1, tokens 2–4"


def test_widget_bars_follow_layer_selection_and_weighting(routes):
    w = aw.RouterView(routes)
    assert w.layer == routes.layers[0] and w.selection == [] and w.weighted is False
    np.testing.assert_allclose(w.load(), _by_hand(routes, 0, list(range(len(routes.tokens))), False), atol=1e-6)
    w.layer, w.selection, w.weighted = 1, [4, 1], True
    assert w.selection == [1, 4]
    np.testing.assert_allclose(w.load(), _by_hand(routes, 1, [1, 4], True), atol=1e-6)
    assert w._payload["experts"]["shape"] == list(routes.experts.shape)
    assert w._meta["tokens"] == list(routes.tokens)


def test_bad_input_is_refused_with_a_clear_message(routes, tiny_llama):
    with pytest.raises(ValueError, match=r"no mixture-of-experts layers.*Mixtral, Qwen2-MoE or OLMoE"):
        aw.runner.route(TEXT, model=tiny_llama)  # a dense model asked for routers
    with pytest.raises(TypeError, match="RouterView takes a RouterResult"):
        aw.RouterView(np.zeros((2, 3, 4)))
    with pytest.raises(traitlets.TraitError, match=r"layer 5 has no router: the mixture-of-experts layers are \[0, 1"):
        aw.RouterView(routes, layer=5)
    w = aw.RouterView(routes)
    with pytest.raises(traitlets.TraitError, match="selection position 99 is out of range"):
        w.selection = [99]
    with pytest.raises(traitlets.TraitError, match="layer must be an integer"):
        w.layer = 1.5
    with pytest.raises(TypeError, match="unexpected keyword"):
        aw.RouterView(routes, head=1)
    with pytest.raises(ValueError, match="distinct token indices"):
        routes.load(positions=[1, 1])


def test_twin_draws_the_views_state(routes):
    w = aw.RouterView(routes, layer=1, selection=[2, 3, 4], theme="light")
    fig = aw.plots.plot_routers(routes, layer=1, selection=[2, 3, 4])
    strip_ax, bars_ax = fig.axes[:2]
    strip = strip_ax.images[0].get_array()  # (T, L, 3): the cells as drawn
    m = w._meta
    for t in range(len(routes.tokens)):
        for li in range(len(routes.layers)):
            e, g = int(routes.experts[li, t, 0]), float(routes.weights[li, t, 0])
            s = FADE_FLOOR + (1 - FADE_FLOOR) * g
            want = np.asarray(to_rgb(EXPERT_PALETTE[e % len(EXPERT_PALETTE)])) * s + (1 - s)
            np.testing.assert_allclose(strip[t, li], want, atol=1e-6)
    np.testing.assert_allclose(strip[0, 0], expert_rgb(m["palette"], m["fade_floor"], routes.experts[0, 0, 0],
                                                       routes.weights[0, 0, 0]), atol=1e-6)
    heights = [p.get_height() for p in bars_ax.patches]
    np.testing.assert_allclose(heights, 100 * _by_hand(routes, 1, [2, 3, 4], False), atol=1e-4)
    assert bars_ax.get_ylim() == (0.0, 100.0)
    assert bars_ax.get_title() == "load per expert, layer 1, tokens 2–4"
    assert strip_ax.get_title() == STRIP_TITLE
    assert fig._suptitle.get_text() == m["title"]
    labels = {(round(tx.get_position()[0]), round(tx.get_position()[1])): tx.get_text() for tx in strip_ax.texts}
    assert labels[(1, 4)] == f"{routes.experts[1, 4, 0]}·{routes.experts[1, 4, 1]}"
    with pytest.raises(TypeError, match="takes a RouterResult"):
        aw.plots.plot_routers(routes.logits)


def test_fallback_picture_is_the_twin_of_the_view(routes):
    from attnwidgets import fallback

    w = aw.RouterView(routes, layer=1, selection=[0])
    fig = fallback.twin_figure(w)
    assert fig.axes[1].get_title() == "load per expert, layer 1, token 0"
    assert repr(w).startswith("RouterView")


def test_link_span_with_a_heatmap_of_the_same_text(routes, tiny_mixtral):
    heat = aw.AttentionHeatmap(aw.run(TEXT, model=tiny_mixtral))
    view = aw.RouterView(routes, layer=1)
    link = aw.widgets.link_span(heat, view, js=False)
    before = view.load()
    heat.selection = [2, 3, 4]
    assert view.selection == [2, 3, 4]
    np.testing.assert_allclose(view.load(), _by_hand(routes, 1, [2, 3, 4], False), atol=1e-6)
    assert not np.allclose(view.load(), before), "the span's load differs from the whole text's here"
    view.selection = [1]
    assert heat.selection == [1]
    link.unlink()
    short = aw.RouterView(RouterResult(["a", "b"], [0], np.zeros((1, 2, 4), np.float32), np.zeros((1, 2, 1), int),
                                       np.ones((1, 2, 1), np.float32)))
    with pytest.raises(ValueError, match="select among different query tokens"):
        aw.widgets.link_span(heat, short, js=False)


def test_a_routing_shows_as_an_escaped_table_in_a_notebook():
    r = RouterResult(["<img src=x onerror=alert(1)>", "b"], [0], np.zeros((1, 2, 3), np.float32),
                     np.array([[[0], [2]]]), np.ones((1, 2, 1), np.float32))
    html = r._repr_html_()
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "RouterResult" in html and "2 tokens x 1 MoE layers, 3 experts, top-1" in html
