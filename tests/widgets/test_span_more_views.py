"""Span selection in the views issue 34 §4 adds: QKStepThrough (the query follows the selection), FillMask (the
[MASK] row by default, any rows combined), QKSpaceView (points ⇄ tokens of the sentence shown), AblationWidget (the
selected rows compared before and after) and HeadRolesView (role scores of the selected rows of its example); and
``link_span``'s refusal of the views that show no text. Numbers are checked against torch or numpy computed here from
the arrays, never against stored values."""

from __future__ import annotations

import ipywidgets
import numpy as np
import pytest
import torch
import traitlets

import attnwidgets as aw
from attnwidgets.qk_result import QKCapture
from attnwidgets.result import AttentionResult

TOKENS = ["[CLS]", "i", "flew", "new", "york", "to", "paris", "[SEP]"]


@pytest.fixture
def capture() -> QKCapture:
    rng = np.random.default_rng(3)
    return QKCapture.from_vectors(rng.normal(size=(2, 8, 4)), rng.normal(size=(2, 8, 4)),
                                  rng.normal(size=(2, 8, 4)), TOKENS)


def heatmap_of(capture: QKCapture) -> aw.AttentionHeatmap:
    """A heatmap of the capture's own weights (one layer, its heads): the same query tokens."""
    weights = np.stack([capture.head(h)["weights"] for h in range(capture.n_heads)])[None].astype(np.float32)
    return aw.AttentionHeatmap(AttentionResult.from_arrays(weights, list(capture.tokens)), layer=0, head=0)


# -- link_span's refusals ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("exempt", [lambda: aw.PositionalExplorer(encoding="rope", length=8, d_model=8),
                                    lambda: aw.MaskExplorer("causal", length=8)])
def test_link_span_says_the_explorers_are_exempt_and_lists_what_it_links(capture, exempt):
    view = exempt()
    with pytest.raises(TypeError) as err:
        aw.widgets.link_span(heatmap_of(capture), view)
    text = str(err.value)
    assert f"cannot link {type(view).__name__}: it is exempt because it shows no text" in text
    for name in ("AttentionHeatmap", "HeadView", "QKStepThrough", "FillMask", "QKSpaceView", "AblationWidget",
                 "HeadRolesView"):
        assert name in text, name


def test_link_span_names_a_widget_without_selection(capture):
    with pytest.raises(TypeError, match="got IntSlider, which has no 'selection' of query tokens"):
        aw.widgets.link_span(heatmap_of(capture), ipywidgets.IntSlider())


# -- QKStepThrough -------------------------------------------------------------------------------------------------


def test_qk_selection_validates_like_the_heatmaps(capture):
    w = aw.QKStepThrough(capture)
    with pytest.raises(traitlets.TraitError, match="selection position 8 is out of range: there are 8 query"):
        w.selection = [2, 8]
    with pytest.raises(traitlets.TraitError, match="repeats a position"):
        w.selection = [3, 3]
    with pytest.raises(traitlets.TraitError, match="list of token positions"):
        w.selection = 3
    with pytest.raises(traitlets.TraitError, match="out of range"):
        aw.QKStepThrough(capture, selection=[9])
    assert w.selection == []


def test_qk_query_follows_the_selection(capture):
    w = aw.QKStepThrough(capture, query=6, selection=[4, 3])
    assert (w.selection, w.query) == ([3, 4], 3)  # the query was not selected: the first selected token
    w.query = 4  # another selected token: the selection stays
    assert w.selection == [3, 4]
    w.query = 1  # outside it: selected alone
    assert w.selection == [1]
    w.selection = []  # nothing selected: the query stays
    assert w.query == 1
    w.query = 5
    assert w.selection == []


def test_qk_linked_to_a_heatmap_steps_through_the_selected_row(capture):
    heat, w = heatmap_of(capture), aw.QKStepThrough(capture, head=1)
    link = aw.widgets.link_span(heat, w, js=False)
    heat.selection = [5, 6]  # a click and a shift-click in the heatmap
    assert (w.selection, w.query) == ([5, 6], 5)
    # the softmax panel is row 5 of head 1, computed here from q and k
    a = capture.head(1)
    q, k = torch.tensor(a["q"][5], dtype=torch.float64), torch.tensor(a["k"], dtype=torch.float64)
    want = torch.softmax(k @ q * capture.scaling, dim=0).numpy()
    np.testing.assert_allclose(w.values()["weights"], want, rtol=1e-5, atol=1e-6)
    w.selection = [2]  # and back: a click in the step-through's first panel
    assert heat.selection == [2]
    link.unlink()
    shorter = aw.AttentionHeatmap(AttentionResult.from_arrays(np.full((1, 1, 3, 3), 1 / 3, np.float32), list("abc")))
    with pytest.raises(ValueError, match=r"different query tokens.*QKStepThrough#1: 8 query tokens"):
        aw.widgets.link_span(shorter, w)


def test_plot_qk_marks_the_selected_tokens(capture):
    from attnwidgets.plots import plot_qk
    from attnwidgets.plots.style import SELECTED

    fig = plot_qk(capture, head=0, selection=[3, 4])
    labels = fig.axes[capture.n_heads * 0 + 6].get_yticklabels()  # ① keys: the first panel of the body row
    marked = [t.get_text() for t in labels if t.get_color() == SELECTED]
    assert marked == ["new", "york"]
    assert "query 3 (new)" in fig._suptitle.get_text() and "selected: new york (3–4)" in fig._suptitle.get_text()
    a = capture.head(0)
    bars = [p.get_width() for p in fig.axes[10].patches][:8]  # ⑤ softmax of query 3
    np.testing.assert_allclose(bars, a["weights"][3], rtol=1e-6)
    with pytest.raises(ValueError, match="out of range"):
        plot_qk(capture, selection=[8])


# -- FillMask ------------------------------------------------------------------------------------------------------

FILL_TEXT = "i flew from new york to [MASK] ."


@pytest.fixture(scope="module")
def fill(tiny_bert_mlm) -> aw.FillMask:
    return aw.FillMask(FILL_TEXT, model=tiny_bert_mlm, k=3)


def test_fill_mask_selects_its_mask_row_by_default_and_validates(fill):
    fill.selection, fill.mask = [], 0
    pos = fill.view["positions"][0]
    w = aw.FillMask(FILL_TEXT, model=fill._model, k=3)
    assert w.selection == [pos] and w.view["tokens"][pos] == "[MASK]"
    with pytest.raises(traitlets.TraitError, match=f"selection position 99 is out of range: there are "
                                                   f"{len(w.view['tokens'])} query tokens"):
        w.selection = [99]
    with pytest.raises(traitlets.TraitError, match="must be an integer, got float"):
        w.selection = [1.5]
    with pytest.raises(traitlets.TraitError, match="unknown combine 'max'"):
        w.combine = "max"
    w.selection = [1, 2]
    w.text = "the [MASK] sat ."  # another sentence: its [MASK] is selected again
    assert w.selection == [w.view["positions"][0]] and w.view["tokens"][w.selection[0]] == "[MASK]"


def test_fill_mask_row_of_a_selection_is_the_hand_mean_and_sum(fill, tiny_bert_mlm):
    from attnwidgets.runner import get_runner

    result = get_runner(tiny_bert_mlm).run(FILL_TEXT)
    a = result.attention.astype(np.float64)  # (layers, heads, n, n), from a run of its own
    fill.layer, fill.head, fill.selection, fill.combine = 1, -1, [3, 4], "mean"
    np.testing.assert_allclose(fill.attention_row(), a[1, :, [3, 4]].mean(0).mean(0), rtol=1e-5, atol=1e-7)
    fill.head, fill.combine = 2, "sum"
    np.testing.assert_allclose(fill.attention_row(), a[1, 2, 3] + a[1, 2, 4], rtol=1e-5, atol=1e-7)
    fill.selection = []  # nothing selected: the [MASK]'s own row
    pos = fill.view["positions"][0]
    np.testing.assert_allclose(fill.attention_row(), a[1, 2, pos], rtol=1e-5, atol=1e-7)
    fill.selection = [pos]


def test_fill_mask_linked_to_a_heatmap_copies_the_selection(fill, tiny_bert_mlm):
    from attnwidgets.runner import get_runner

    heat = aw.AttentionHeatmap(get_runner(tiny_bert_mlm).run(FILL_TEXT), layer=1)
    fill.mask, fill.combine = 0, "mean"
    link = aw.widgets.link_span(fill, heat, js=False)
    assert heat.selection == fill.selection == [fill.view["positions"][0]]  # the [MASK] row, copied
    heat.selection, heat.combine = [4, 5], "sum"
    assert (fill.selection, fill.combine) == ([4, 5], "sum")
    fill.layer, fill.head, heat.head = 1, -1, -1
    np.testing.assert_allclose(fill.attention_row(), heat.span_weights(), rtol=1e-5, atol=1e-7)  # the same row
    link.unlink()
    other = aw.AttentionHeatmap(get_runner(tiny_bert_mlm).run("a b"))
    with pytest.raises(ValueError, match=r"different query tokens.*FillMask#1"):
        aw.widgets.link_span(other, fill)


@pytest.mark.filterwarnings("ignore:Glyph")  # the random model's fillers are any pieces of the vocabulary
def test_plot_fill_mask_draws_the_selected_rows(fill):
    from attnwidgets.plots import plot_fill_mask

    fig = plot_fill_mask(fill, layer=1, head=0, selection=[4, 5], combine="sum")
    ax = fig.axes[-1]
    heights = [p.get_height() for p in ax.patches]
    rows = np.asarray(fill.view["attention"], np.float64)
    np.testing.assert_allclose(heights, rows[1, 0, 4] + rows[1, 0, 5], rtol=1e-5)
    colours = {p.get_facecolor() for j, p in enumerate(ax.patches) if j in (4, 5)}
    assert len(colours) == 1 and colours != {ax.patches[0].get_facecolor()}
    assert "sum of 2 rows: new york (4–5)" in ax.get_title()
    with pytest.raises(ValueError, match="out of range"):
        plot_fill_mask(fill, selection=[99])


# -- QKSpaceView ---------------------------------------------------------------------------------------------------


@pytest.fixture
def space():
    from attnwidgets.analysis.qk_space import build_qk_space

    rng = np.random.default_rng(5)
    sizes = [8, 5, 6]
    q = [rng.normal(size=(n, 6)) for n in sizes]
    k = [rng.normal(size=(n, 6)) for n in sizes]
    w = []
    for n in sizes:
        a = rng.random((n, n))
        w.append(a / a.sum(1, keepdims=True))
    return build_qk_space(q, k, w, [TOKENS, TOKENS[:5], TOKENS[2:]])


def test_qk_space_selection_is_of_the_sentence_shown(space):
    view = aw.QKSpaceView(space)
    with pytest.raises(traitlets.TraitError, match="no sentence is shown, so there are no tokens to select"):
        view.selection = [1]
    view.sentence = 1
    with pytest.raises(traitlets.TraitError, match="selection position 5 is out of range: there are 5 query"):
        view.selection = [5]
    view.selection = [3, 1]
    # the rows of the ringed points, found here from the space's own columns
    want = [i for t in (1, 3) for i in range(space.n_points)
            if space.kind[i] == 0 and space.sentence[i] == 1 and space.token[i] == t]
    assert view.selected_points() == want and len(want) == 2
    assert [space.text[i] for i in want] == [TOKENS[1], TOKENS[3]]
    view.sentence = 2  # positions of sentence 1 mean nothing in sentence 2
    assert view.selection == []
    assert aw.QKSpaceView(space, sentence=0, selection=[7]).selection == [7]


def test_qk_space_linked_to_a_heatmap_of_its_sentence(space):
    view = aw.QKSpaceView(space, sentence=0)
    heat = aw.AttentionHeatmap(AttentionResult.from_arrays(space.weights[0][None, None].astype(np.float32), TOKENS))
    link = aw.widgets.link_span(heat, view, js=False)
    heat.selection = [3, 4]
    assert view.selection == [3, 4]
    assert [space.text[i] for i in view.selected_points()] == ["new", "york"]
    view.selection = [6]  # what a click on the query point of "paris" does
    assert heat.selection == [6]
    link.unlink()
    view.sentence = 1  # five tokens: no longer the heatmap's eight
    with pytest.raises(ValueError, match=r"different query tokens.*QKSpaceView#1: 5 query tokens"):
        aw.widgets.link_span(heat, view)


def test_plot_qk_space_rings_the_selected_points(space):
    from matplotlib.colors import to_rgba

    from attnwidgets.plots import plot_qk_space
    from attnwidgets.plots.style import SELECTED

    fig = plot_qk_space(space, "position", sentence=0, selection=[3, 4])
    ringed = [c for c in fig.axes[0].collections
              if len(c.get_edgecolor()) and tuple(c.get_edgecolor()[0]) == to_rgba(SELECTED)]
    assert len(ringed) == 1
    want = [i for t in (3, 4) for i in range(space.n_points)
            if space.kind[i] == 0 and space.sentence[i] == 0 and space.token[i] == t]
    np.testing.assert_allclose(ringed[0].get_offsets(), space.xy[want])
    with pytest.raises(ValueError, match="no sentence is shown"):
        plot_qk_space(space, selection=[1])


# -- AblationWidget ------------------------------------------------------------------------------------------------

ABL_TEXTS = ["i flew from new york to paris .", "the cat sat ."]


@pytest.fixture
def ablation(tiny_bert) -> aw.AblationWidget:
    return aw.AblationWidget(ABL_TEXTS, model=tiny_bert, watch="drift", layer=1, head=2,
                             ablation=aw.runner.Ablation.heads({(0, 1): "zero", (1, 2): "uniform"}))


def test_ablation_compares_the_selected_rows_by_hand(ablation, tiny_bert):
    from attnwidgets.runner import get_runner

    runner = get_runner(tiny_bert)
    clean = runner.run(ABL_TEXTS[0]).attention.astype(np.float64)[1, 2]  # (n, n), a run of its own
    edited = runner.run(ABL_TEXTS[0], ablation=ablation.ablation).attention.astype(np.float64)[1, 2]
    ny = [runner.run(ABL_TEXTS[0]).tokens.index(t) for t in ("new", "york")]
    ablation.selection = ny
    got = ablation.span_change()
    np.testing.assert_allclose(got["before"], clean[ny].mean(0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got["after"], edited[ny].mean(0), rtol=1e-5, atol=1e-7)
    assert got["moved"] == pytest.approx(0.5 * np.abs(edited[ny].mean(0) - clean[ny].mean(0)).sum(), rel=1e-5)
    assert got["moved"] > 1e-4  # head 1-2 made uniform: its rows did move (a random model is near uniform already)
    ablation.combine = "sum"
    np.testing.assert_allclose(ablation.span_change()["after"], edited[ny].sum(0), rtol=1e-5, atol=1e-7)


def test_ablation_selection_validates_and_clears_with_another_text(ablation):
    n = len(ablation.result.tokens)
    with pytest.raises(traitlets.TraitError, match=f"selection position {n} is out of range: there are {n} query"):
        ablation.selection = [n]
    with pytest.raises(traitlets.TraitError, match="unknown combine"):
        ablation.combine = "max"
    with pytest.raises(ValueError, match="selection is empty"):
        ablation.span_change()
    ablation.selection = [1, 2]
    ablation.item = 1  # the other text's positions are other tokens
    assert ablation.selection == []


def test_ablation_linked_to_a_heatmap_of_its_text(ablation, tiny_bert):
    from attnwidgets.plots import plot_ablation_rows
    from attnwidgets.runner import get_runner

    heat = aw.AttentionHeatmap(get_runner(tiny_bert).run(ABL_TEXTS[0]), layer=1, head=2)
    link = aw.widgets.link_span(heat, ablation, js=False)
    heat.selection, heat.combine = [4, 5], "sum"
    assert (ablation.selection, ablation.combine) == ([4, 5], "sum")
    np.testing.assert_allclose(ablation.span_change()["before"], heat.span_weights(), rtol=1e-5, atol=1e-7)
    ablation.selection = [2]  # a click on row 2 of a map
    assert heat.selection == [2]
    link.unlink()
    # the static twin: the same rows, as bars, and the same number in its title
    fig = plot_ablation_rows(ablation)
    ax = fig.axes[0]
    bars = [p.get_height() for p in ax.patches]
    got = ablation.span_change()
    n = len(got["before"])
    np.testing.assert_allclose(bars[:n], got["before"], rtol=1e-6)
    np.testing.assert_allclose(bars[n:], got["after"], rtol=1e-6)
    assert f"= {got['moved']:.3f}" in ax.get_title() and "rows flew (2)" in ax.get_title()
    ablation.item = 1
    with pytest.raises(ValueError, match=r"different query tokens.*AblationWidget#1"):
        aw.widgets.link_span(heat, ablation)


# -- HeadRolesView -------------------------------------------------------------------------------------------------


@pytest.fixture
def roles():
    from attnwidgets.analysis.roles import ROLES, HeadRoles

    rng = np.random.default_rng(9)
    n, T = 3, 7  # [BOS] a b c a b c
    a = np.tril(rng.random((2, 3, T, T))).astype(np.float32)
    a /= a.sum(-1, keepdims=True)
    ex = AttentionResult.from_arrays(a, ["^", "a", "b", "c", "a", "b", "c"], kind="decoder")
    return HeadRoles({k: rng.random((2, 3)) for k in ROLES}, ex, n, 1, 5, 0, "toy")


def test_head_roles_grid_shows_the_scores_of_the_selected_rows(roles):
    view = aw.HeadRolesView(roles)
    batch = view.grid.values("induction").copy()
    np.testing.assert_allclose(batch, roles.scores["induction"])
    view.heatmap.selection = [4, 6]  # the 2nd copy's "a" and "c"
    a = roles.example.attention.astype(np.float64)
    # induction: query i attends to key i - n + 1; duplicate: i - n; previous: i - 1 (n = 3)
    np.testing.assert_allclose(view.grid.values("induction"), (a[..., 4, 2] + a[..., 6, 4]) / 2, rtol=1e-6)
    np.testing.assert_allclose(view.grid.values("duplicate_token"), (a[..., 4, 1] + a[..., 6, 3]) / 2, rtol=1e-6)
    np.testing.assert_allclose(view.grid.values("previous_token"), (a[..., 4, 3] + a[..., 6, 5]) / 2, rtol=1e-6)
    assert "rows" in view.grid._meta["title"] and "of the example" in view.grid._meta["title"]
    view.heatmap.selection = [1, 2]  # the first copy: no induction or duplicate queries there
    assert np.isnan(view.grid.values("induction")).all()
    np.testing.assert_allclose(view.grid.values("previous_token"), (a[..., 1, 0] + a[..., 2, 1]) / 2, rtol=1e-6)
    view.heatmap.selection = []  # back to every sequence's mean
    np.testing.assert_allclose(view.grid.values("induction"), batch)
    with pytest.raises(traitlets.TraitError, match="selection position 7 is out of range: there are 7 query"):
        view.heatmap.selection = [7]


def test_head_roles_view_links_through_its_heatmap(roles):
    from attnwidgets.plots import plot_head_roles

    view = aw.HeadRolesView(roles)
    other = aw.AttentionHeatmap(roles.example, layer=1, head=2)
    link = aw.widgets.link_span(other, view, js=False)
    other.selection = [4, 5, 6]
    assert view.heatmap.selection == [4, 5, 6]
    a = roles.example.attention.astype(np.float64)
    np.testing.assert_allclose(view.grid.values("induction"), (a[..., 4, 2] + a[..., 5, 3] + a[..., 6, 4]) / 3,
                               rtol=1e-6)
    link.unlink()
    fig = plot_head_roles(roles, selection=[4, 5, 6])
    assert "rows a b c (4–6) of the example" in fig._suptitle.get_text()
    short = aw.AttentionHeatmap(AttentionResult.from_arrays(np.full((1, 1, 3, 3), 1 / 3, np.float32), list("abc")))
    with pytest.raises(ValueError, match="different query tokens"):
        aw.widgets.link_span(short, view)
