"""Every static twin builds its Figure without pyplot, follows ``aw.set_theme`` unless given ``theme=``, and takes
the inputs its widget takes.

Before, most plot functions made their figure with ``pyplot.subplots``: ``fig = aw.plots.plot_heatmap(r)`` still showed
it (inline backends display every pyplot figure at the end of a cell) and a last-line call showed it twice. They drew
the "light" look after ``aw.set_theme("lecture")``. ``plot_qk(capture_qk_layers(...))`` failed with AttributeError
and ``plot_head_clusters(corpus_stats(...))`` with TypeError although QKStepThrough and HeadClusterMap take them.
"""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import traitlets
from matplotlib.figure import Figure
from matplotlib.text import Text

import attnwidgets as aw
from attnwidgets import plots
from attnwidgets.analysis import CorpusStats, head_distances, head_embedding, surface_stats
from attnwidgets.analysis.coref import CorefScores
from attnwidgets.analysis.qk_space import build_qk_space
from attnwidgets.analysis.residual import ResidualContributions
from attnwidgets.analysis.roles import HeadRoles, RoleCheck, role_scores
from attnwidgets.generation_result import GenerationResult
from attnwidgets.qk_result import QKCapture
from attnwidgets.router_result import RouterResult
from attnwidgets.viewdata.compare import make_comparison
from attnwidgets.viewdata.head_stats import head_stats
from attnwidgets.viewdata.views.ablation import AblationView, Outcome, ablation_setup, ablation_state
from attnwidgets.viewdata.views.compare import CompareOptions, compare_state
from attnwidgets.viewdata.views.entropy_bars import entropy_bars_state
from attnwidgets.viewdata.views.fill_mask import fill_mask_state
from attnwidgets.viewdata.views.generation import GenerationOptions, generation_state
from attnwidgets.viewdata.views.head_cluster_map import head_cluster_map_state
from attnwidgets.viewdata.views.head_stats_grid import head_stats_state
from attnwidgets.viewdata.views.head_view import HeadViewOptions, head_view_state
from attnwidgets.viewdata.views.heatmap import HeatmapOptions, heatmap_state
from attnwidgets.viewdata.views.model_view import ModelViewOptions, model_view_state
from attnwidgets.viewdata.views.profile import ProfileOptions, profile_state
from attnwidgets.viewdata.views.qk import QKOptions, qk_state
from attnwidgets.viewdata.views.qk_space import qk_space_state
from attnwidgets.viewdata.views.routers import router_state

matplotlib.use("Agg")

TOKENS = ["[CLS]", "the", "cat", "sat", ".", "[SEP]"]


def _result(seed: int = 0) -> aw.AttentionResult:
    a = np.random.default_rng(seed).random((2, 3, len(TOKENS), len(TOKENS)), dtype=np.float32)
    return aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), TOKENS)


def _generation(rng: np.random.Generator) -> GenerationResult:
    """Prompt a b c, generated D E F G (fed: a b c D E F), attention by hand."""
    att = np.tril(rng.random((2, 3, 6, 6))).astype(np.float32) + np.eye(6, dtype=np.float32)
    r = aw.AttentionResult.from_arrays(att / att.sum(-1, keepdims=True), list("abcDEF"), kind="decoder")
    probs = np.sort(rng.dirichlet(np.ones(3), size=4).astype(np.float32), 1)[:, ::-1].copy()
    lens = np.sort(rng.dirichlet(np.ones(4), size=(4, 3)).astype(np.float32)[..., :2], -1)[..., ::-1].copy()
    return GenerationResult(r, "a b c", list("abc"), np.arange(3), list("DEFG"), np.arange(3, 7),
                            np.arange(12).reshape(4, 3), probs, [[t, "x", "y"] for t in "DEFG"], text="DEFG",
                            lens_ids=np.zeros((4, 3, 2), np.int64), lens_probs=lens,   # 2 layers: 3 rows of 2
                            lens_tokens=[[["p", "q"]] * 3] * 4)


def _captures() -> list[QKCapture]:
    rng = np.random.default_rng(1)
    return [QKCapture.from_vectors(*(rng.normal(size=(3, len(TOKENS), 4)) for _ in range(3)), TOKENS, layer=layer)
            for layer in (0, 1)]


def _patched() -> object:
    from attnwidgets.studies.patching import PatchingResult

    values = np.random.default_rng(3).normal(size=(2, 3))
    return PatchingResult(values, 1.0, -1.0, "noising", "output", "logit('a') − logit('b') at the last position",
                          TOKENS, TOKENS, "arrays")


def _attribution() -> object:
    from attnwidgets.studies.logits import LogitAttribution

    heads = np.random.default_rng(4).normal(size=(2, 3))
    return LogitAttribution(heads, np.zeros(2), np.array([0.5, -0.25]), 0.1, 0.05, float(heads.sum() + 0.4),
                            ("cat",), 4, TOKENS, "arrays")


R = _result()
GENERATION = _generation(np.random.default_rng(2))
STATS = surface_stats(R)
EMBEDDING = head_embedding(head_distances([R]), n_heads=3)
SWEEP = SimpleNamespace(heads=np.arange(6.0).reshape(2, 3), layers=np.array([1.0, 2.0]), baseline=2.5,
                        metric="accuracy", mode="zero")
CURVE = pd.DataFrame({"share": [0.0, 0.5, 1.0], "metric": [0.9, 0.7, 0.2]})
def _roles() -> HeadRoles:
    """Head roles of a hand-made 2-layer, 2-head causal attention on [BOS] r r with len(r) = 3."""
    rng = np.random.default_rng(3)
    a = np.tril(rng.random((2, 2, 7, 7))).astype(np.float32)
    a /= a.sum(-1, keepdims=True)
    example = aw.AttentionResult.from_arrays(a, ["<s>", "x", "y", "z", "x", "y", "z"])
    return HeadRoles(role_scores(a, 3), example, seq_len=3, prefix=1, n_seqs=1, seed=0)


ROLES = _roles()
COREF = CorefScores(np.array([[[True, False], [True, True]]]), {b: np.array([True, False])
                    for b in ("nearest", "same_head", "rules")}, [{"kind": "pronoun"}] * 2)
FILL_VIEW = {"tokens": ["[CLS]", "the", "[MASK]", "sat", "[SEP]"], "positions": [2],
             "fills": [{"tokens": ["cat", "dog"], "probs": [0.5, 0.2]}],
             "rows": np.random.default_rng(4).dirichlet(np.ones(5), size=(1, 2, 3)).astype(np.float32),
             "lens": {"tokens": [[["the", "a"], ["cat", "the"], ["cat", "dog"]]], "rows": ["embeddings"],
                      "probs": np.array([[[0.3, 0.2], [0.4, 0.1], [0.5, 0.2]]], np.float32), "reader": "a toy head"}}
QK_SPACE = build_qk_space([np.eye(4), np.eye(4)[::-1]], [np.eye(4)] * 2, [np.full((4, 4), 0.25)] * 2,
                          [["[CLS]", "a", "b", "[SEP]"]] * 2)
PANEL = pd.DataFrame({"item": ["a", "b"], "name": ["p", "p"], "before": [0.9, 0.2], "after": [0.7, 0.3]})
_X = np.random.default_rng(5).normal(size=(5, 8))
INPUT_PARTS = SimpleNamespace(tokens=["[CLS]", "a", "[SEP]", "b", "[SEP]"], part=[0, 0, 0, 1, 1], token=_X,
                              segment=0.3 * _X, position=0.2 * _X, total=1.5 * _X, normed=_X, model="toy",
                              segment_rows=2)
EXTRAPOLATION = SimpleNamespace(schemes=["sinusoidal", "learned"], test_lengths=[4, 8, 12],
                                accuracy=np.array([[1.0, 0.9, 0.3], [1.0, 0.95, np.nan]]), train_max=8,
                                limit=lambda scheme: 8 if scheme == "learned" else None, settings={"n_symbols": 10})
_ROUTED = np.random.default_rng(6).permutation(np.tile(np.arange(4), (2, 5, 1)).reshape(-1, 4), axis=1)
ROUTERS = RouterResult(["The", " cat", " sat", " on", " mat"], [0, 2], np.zeros((2, 5, 4), np.float32),
                       _ROUTED[:, :2].reshape(2, 5, 2), np.full((2, 5, 2), 0.5, np.float32))

#: One call per plot function, with the theme passed through (None: the current one).
CALLS = {
    "plot_heatmap": lambda theme: plots.plot_heatmap(R, 1, -1, theme=theme),
    "paint_heatmap": lambda theme: plots.paint_heatmap(heatmap_state(R, HeatmapOptions(layer=1, head=-1)), theme=theme),
    "plot_model_view": lambda theme: plots.plot_model_view(R, theme=theme),
    "paint_model_view": lambda theme: plots.paint_model_view(model_view_state(R, ModelViewOptions()), theme=theme),
    "paint": lambda theme: plots.paint(profile_state(R, ProfileOptions(layer=1, selection=(1, 2))), theme=theme),
    "paint_profile": lambda theme: plots.paint_profile(profile_state(R, ProfileOptions(selection=(2,))), theme=theme),
    "paint_compare": lambda theme: plots.paint_compare(
        compare_state(make_comparison(R, R), (R, R), CompareOptions(layer=1)), theme=theme),
    "paint_entropy_bars": lambda theme: plots.paint_entropy_bars(entropy_bars_state(
        head_stats(STATS), measure="weights", can_norms=False, can_words=False, tokens=[]), theme=theme),
    "paint_head_cluster_map": lambda theme: plots.paint_head_cluster_map(head_cluster_map_state(
        head_stats(STATS), EMBEDDING, can_words=False, tokens=[]), color="entropy", theme=theme),
    "plot_head_view": lambda theme: plots.plot_head_view(R, 1, theme=theme),
    "plot_head_stats": lambda theme: plots.plot_head_stats(R, "sep", theme=theme),
    "plot_sinks": lambda theme: plots.plot_sinks(R, keys=[0, 1], theme=theme),
    "plot_qk": lambda theme: plots.plot_qk(_captures(), 1, 2, theme=theme),
    "paint_qk": lambda theme: plots.paint_qk(qk_state({c.layer: c for c in _captures()}, QKOptions(1, 2, 1, (1, 3))),
                                             selection=[1, 2], theme=theme),
    "plot_qk_space": lambda theme: plots.plot_qk_space(QK_SPACE, "token", theme=theme),
    "paint_qk_space": lambda theme: plots.paint_qk_space(qk_space_state(QK_SPACE), color="attention", sentence=1,
                                                         selection=[1, 2], theme=theme),
    "plot_input_embeddings": lambda theme: plots.plot_input_embeddings(INPUT_PARTS, dims=6, theme=theme),
    "plot_extrapolation": lambda theme: plots.plot_extrapolation(EXTRAPOLATION, theme=theme),
    "plot_token_attention": lambda theme: plots.plot_token_attention(STATS, theme=theme),
    "plot_entropy_by_layer": lambda theme: plots.plot_entropy_by_layer(STATS, theme=theme),
    "plot_head_clusters": lambda theme: plots.plot_head_clusters(EMBEDDING, theme=theme),
    "plot_head_grid": lambda theme: plots.plot_head_grid(np.arange(6.0).reshape(2, 3), title="t", theme=theme),
    "plot_sweep": lambda theme: plots.plot_sweep(SWEEP, theme=theme),
    "plot_pruning_curve": lambda theme: plots.plot_pruning_curve(CURVE, theme=theme),
    "plot_ablation_panel": lambda theme: plots.plot_ablation_panel(PANEL, theme=theme),
    "plot_ablation_rows": lambda theme: plots.plot_ablation_rows(
        SimpleNamespace(kind="drift", frame=PANEL, before=[R], after=[R]), [1, 2], layer=1, head=2, theme=theme),
    "plot_profile": lambda theme: plots.plot_profile(R, 1, -1, query=2, theme=theme),
    "plot_generation": lambda theme: plots.plot_generation(GENERATION, 1, 1, -1, theme=theme),
    "paint_generation": lambda theme: plots.paint_generation(generation_state(GENERATION, GenerationOptions(head=1)),
                                                             step=-1, theme=theme),
    "plot_generation_lens": lambda theme: plots.plot_generation_lens(GENERATION, 2, theme=theme),
    "plot_sampling": lambda theme: plots.plot_sampling(GENERATION, 1, temperature=0.7, top_p=0.9, theme=theme),
    "plot_patching": lambda theme: plots.plot_patching(_patched(), theme=theme, selected=(1, 2)),
    "plot_routers": lambda theme: plots.plot_routers(ROUTERS, layer=2, selection=[1, 2], theme=theme),
    "paint_routers": lambda theme: plots.paint_routers(router_state(ROUTERS), selection=[0, 3], weighted=True,
                                                       theme=theme),
    "plot_logit_attribution": lambda theme: plots.plot_logit_attribution(_attribution(), theme=theme),
    "plot_span_share": lambda theme: plots.plot_span_share(GENERATION, (0, 1), step=1, theme=theme),
    "plot_compare": lambda theme: plots.plot_compare(R, R, 1, 0, show="diff", theme=theme),
    "plot_coref": lambda theme: plots.plot_coref(COREF, theme=theme),
    "plot_head_roles": lambda theme: plots.plot_head_roles(ROLES, theme=theme),
    "plot_role_check": lambda theme: plots.plot_role_check(
        RoleCheck("induction", [(1, 0)], 0.5, 3.0, [[(0, 0)], [(1, 1)]], np.array([0.6, 0.5])), theme=theme),
    "plot_induction_curve": lambda theme: plots.plot_induction_curve([0, 10], [3.4, 3.0], np.zeros((2, 2, 2)),
                                                                     theme=theme),
    "LiveInductionCurve": lambda theme: plots.LiveInductionCurve(total=10, theme=theme, display=False).figure(),
    "plot_norm_comparison": lambda theme: plots.plot_norm_comparison(SimpleNamespace(
        variants=["pre-LN", "post-LN"], losses=np.ones((2, 8)), grad_norms=np.ones((2, 8)), settings={"lr": 0.01}),
        theme=theme),
    "plot_residual_contributions": lambda theme: plots.plot_residual_contributions(ResidualContributions(
        np.array([[0.2, 0.5]]), np.ones((1, 2)), np.ones((1, 2)), ["L0"], ["attention", "feed-forward"], "toy", True,
        ["a"]), theme=theme),
    "plot_attention_cost": lambda theme: plots.plot_attention_cost(SimpleNamespace(
        ns=np.array([64, 128]), seconds_n=np.array([1e-3, 4e-3]), ds=np.array([8, 16]),
        seconds_d=np.array([1e-3, 2e-3]), n_fixed=64, d_fixed=8), theme=theme),
    "plot_pretrain_curve": lambda theme: plots.plot_pretrain_curve([10, 20], [7.0, 6.0], [0.7, 0.6], total=40,
                                                                   vocab_size=3000, theme=theme),
    "LivePretrainCurve": lambda theme: plots.LivePretrainCurve(total=10, theme=theme, display=False).figure(),
    "plot_fill_mask": lambda theme: plots.plot_fill_mask(FILL_VIEW, mask=0, layer=1, head=-1, theme=theme),
    "paint_fill_mask": lambda theme: plots.paint_fill_mask(fill_mask_state({**FILL_VIEW, "model": "toy"}, ""),
                                                           head=2, theme=theme),
    "plot_fill_mask_lens": lambda theme: plots.plot_fill_mask_lens(FILL_VIEW, mask=0, layer=1, theme=theme),
    "paint_head_stats_grid": lambda theme: plots.paint_head_stats_grid(
        head_stats_state(head_stats(R), can_words=False, tokens=[]), statistic="sep", layer=1, head=0, theme=theme),
    "paint_head_view": lambda theme: plots.paint_head_view(head_view_state(R, HeadViewOptions(layer=1)), heads=[0, 2],
                                                           selected=[1], theme=theme),
    "paint_ablation": lambda theme: plots.paint_ablation(ablation_state(
        ablation_setup("toy", {"self": (2, 3)}, {"self": 0}, ["a", "b"], None, "drift"),
        Outcome("drift", PANEL.assign(delta=PANEL["after"] - PANEL["before"]), [R], [R]), AblationView(layer=1, head=2),
        {"edits": [{"stack": "self", "layer": 1, "head": 2, "mode": "zero", "scale": 0.0}]}, seconds=0.1, seq=1),
        selection=[1, 2], theme=theme),
}


@pytest.fixture
def light_after():
    yield
    aw.set_theme("light")


#: What plots exports that lays panels out rather than drawing a figure of its own
#: (tests/plots/test_notebook_figures.py).
LAYOUT = {"panel_grid", "fit_panels"}


def test_every_plot_function_is_covered():
    assert set(CALLS) == set(plots.__all__) - LAYOUT


def _fonts(fig: Figure) -> float:
    return max(t.get_fontsize() for t in fig.findobj(Text) if t.get_text())


@pytest.mark.parametrize("name", list(CALLS))
def test_no_pyplot_figure_and_plots_follow_set_theme(name, light_after):
    before = plt.get_fignums()
    fig = CALLS[name](None)
    assert isinstance(fig, Figure)
    assert plt.get_fignums() == before, f"{name} made a pyplot figure: it would display even when assigned"
    fig.canvas.draw()  # draws without a pyplot manager
    light = _fonts(fig)
    aw.set_theme("lecture")
    followed, own = _fonts(CALLS[name](None)), _fonts(CALLS[name]("light"))
    assert followed == _fonts(CALLS[name]("lecture")) > light, f"{name} ignores set_theme('lecture')"
    assert own == light, f"{name}(theme='light') must keep the light look under set_theme('lecture')"


def test_heatmap_lecture_colours_follow_set_theme(light_after):
    aw.set_theme("lecture")
    assert plots.plot_heatmap(R).axes[0].collections[0].get_cmap().name == "viridis"
    assert plots.plot_heatmap(R, theme="light").axes[0].collections[0].get_cmap().name == "Blues"
    with pytest.raises(ValueError, match=r"^unknown theme 'dark'"):
        plots.plot_heatmap(R, theme="dark")


# -- the twins take what their widgets take ----------------------------------------------------------------------

def test_plot_qk_takes_the_captures_qkstepthrough_takes():
    caps = _captures()
    widget = aw.QKStepThrough(caps, layer=1)
    assert "layer 0 " in plots.plot_qk(caps)._suptitle.get_text()  # the first, as the widget starts
    fig = plots.plot_qk(caps, 2, 1, layer=1)
    assert "layer 1 · head 2" in fig._suptitle.get_text()
    np.testing.assert_allclose(fig.axes[10].patches[0].get_width(), widget.values(1, 2, 1)["weights"][0])
    with pytest.raises(traitlets.TraitError) as widget_error:
        widget.layer = 5
    with pytest.raises(ValueError) as plot_error:
        plots.plot_qk(caps, layer=5)
    assert str(plot_error.value) == str(widget_error.value)
    with pytest.raises(TypeError, match=r"^plot_qk takes a QKCapture or a list of them"):
        plots.plot_qk([R])


def test_plot_head_clusters_takes_what_headclustermap_takes():
    corpus = CorpusStats(distances=True, patterns=False).update([R, _result(1)])
    for source in (R, [R, _result(1)], corpus, EMBEDDING):
        widget = aw.HeadClusterMap(source, seed=3)
        fig = plots.plot_head_clusters(source, seed=3)
        np.testing.assert_allclose(fig.axes[0].collections[0].get_offsets(), widget.xy())
    # a statistic of the source colours the points without stats=, as the widget's menu does
    fig = plots.plot_head_clusters(corpus, color_by="entropy")
    np.testing.assert_allclose(fig.axes[0].collections[0].get_array(), corpus.mean()["entropy"].ravel())
    with pytest.raises(ValueError, match="corpus_stats\\(texts, distances=True\\)"):
        plots.plot_head_clusters(CorpusStats(patterns=False).update([R]))


@pytest.mark.parametrize("source", ["result", "results", "corpus", "frame"])
def test_entropy_and_token_plots_take_what_entropybars_takes(source):
    corpus = CorpusStats(patterns=False).update([R, _result(1)])
    given = {"result": R, "results": [R, _result(1)], "corpus": corpus, "frame": corpus.frame()}[source]
    bars = aw.EntropyBars(given)
    fig = plots.plot_entropy_by_layer(given)
    means = fig.axes[0].get_lines()[0].get_ydata()
    np.testing.assert_allclose(means, np.nanmean(bars.values("entropy"), axis=1), rtol=1e-6)
    assert fig.axes[0].get_lines()[1].get_ydata()[0] == pytest.approx(bars.baseline("all"))
    plots.plot_token_attention(given)


def test_entropy_rows_of_a_decoder():
    causal = np.tril(np.ones((len(TOKENS), len(TOKENS)), np.float32))
    maps = np.broadcast_to(causal / causal.sum(-1, keepdims=True), (2, 3, 6, 6)).copy()
    r = aw.AttentionResult.from_arrays(maps, TOKENS, kind="decoder")
    fig = plots.plot_entropy_by_layer(r)  # a decoder's first row sees one key: the last row is the one to show
    assert [" ".join(ax.get_title().split()).split(" · ")[-1] for ax in fig.axes] == [
        "attention entropy, all rows", "attention entropy, last row"]
    assert fig.axes[1].get_lines()[1].get_ydata()[0] == pytest.approx(np.log(len(TOKENS)))
    # the row choices are EntropyBars' (viewdata.views.entropy_bars.ROWS), named when one is unknown
    with pytest.raises(ValueError, match=r"rows must name some of \['all', 'cls', 'last'\], got \['first'\]"):
        plots.plot_entropy_by_layer(r, rows=["first"])
