"""EntropyBars, HeadStatsGrid, HeadClusterMap and link_selection, without a browser: the payloads carry the analysis
layer's numbers, switches work, bad input fails clearly, and linking moves the heatmap."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import ipywidgets
import numpy as np
import pytest
import traitlets
from ipywidgets import widget_link

import attnwidgets as aw
from attnwidgets.analysis import (
    CorpusStats,
    head_distances,
    head_embedding,
    mean_entropy,
    row_entropy,
    surface_stats,
    uniform_entropy,
)
from attnwidgets.result import AttentionResult

# 2 layers x 3 heads (non-square, so a transposed (H, L) payload fails), 7 pieces, one word in two pieces.
TOKENS = ["[CLS]", "the", "play", "##ing", ",", "cat", "[SEP]"]
WORD_IDS = np.array([-1, 0, 1, 1, 2, 3, -1])


def _result(seed: int = 0, n_layers: int = 2, n_heads: int = 3) -> AttentionResult:
    rng = np.random.default_rng(seed)
    a = rng.dirichlet(np.full(len(TOKENS), 0.5), size=(n_layers, n_heads, len(TOKENS))).astype(np.float32)
    return AttentionResult.from_arrays(a, TOKENS, word_ids=WORD_IDS)


def _decode(packed: dict) -> np.ndarray:
    assert packed["dtype"] == "float32", "statistics cross as float32 binary buffers"
    assert isinstance(packed["buffer"], memoryview)
    return np.frombuffer(packed["buffer"], dtype="<f4").reshape(packed["shape"])


def _payload(w: aw.HeadStatsGrid) -> dict[str, np.ndarray]:
    stack = _decode(w._payload["stats"])
    return dict(zip(w._meta["names"], stack))


@pytest.fixture(scope="module")
def result() -> AttentionResult:
    return _result()


# -- EntropyBars --------------------------------------------------------------------------------------------------


def test_entropy_bars_payload_equals_analysis(result):
    bars = aw.EntropyBars(result)
    sent = _payload(bars)
    assert sent["entropy"].shape == (2, 3)
    np.testing.assert_allclose(sent["entropy"], mean_entropy(result.attention), rtol=1e-5)
    np.testing.assert_allclose(sent["entropy_cls"], row_entropy(result.attention)[..., 0], rtol=1e-5)
    assert bars._meta["baselines"]["all"] == pytest.approx(float(uniform_entropy(len(TOKENS))))
    assert bars._meta["baselines"]["cls"] == pytest.approx(np.log(7))
    assert [r for r, _ in bars._meta["rows"]] == ["all", "cls"]  # an encoder: all rows and the [CLS] row
    assert bars.selection_shape == (2, 3)


def test_entropy_bars_rows_switch_and_smoothing(result):
    bars = aw.EntropyBars(result, rows="cls", smoothing=1e-4)
    assert bars.rows == "cls"
    np.testing.assert_allclose(bars.values("entropy_cls"), surface_stats(result, smoothing=1e-4)["entropy_cls"])
    bars.rows = "all"
    assert bars.baseline() == pytest.approx(np.log(7))
    with pytest.raises(ValueError, match="rows"):
        bars.rows = "middle"
    with pytest.raises(ValueError, match="last"):
        bars.rows = "last"  # an encoder has no "last row" choice


def test_entropy_bars_words_switch_recomputes(result):
    bars = aw.EntropyBars(result)
    bars.words = True
    np.testing.assert_allclose(_payload(bars)["entropy"], surface_stats(result, words=True)["entropy"], rtol=1e-5)
    assert bars._meta["baselines"]["all"] == pytest.approx(np.log(6))  # "play ##ing" is one word
    assert "words" in bars._meta["title"]
    bars.words = False
    np.testing.assert_allclose(_payload(bars)["entropy"], mean_entropy(result.attention), rtol=1e-5)


def test_entropy_bars_from_corpus_uses_mean_baseline():
    short = AttentionResult.from_arrays(np.full((2, 3, 3, 3), 1 / 3, np.float32), ["[CLS]", "hi", "[SEP]"])
    acc = CorpusStats()
    acc.update([_result(1), short])
    bars = aw.EntropyBars(acc)
    np.testing.assert_allclose(_payload(bars)["entropy"], acc.mean()["entropy"], rtol=1e-5)
    assert bars._meta["baselines"]["all"] == pytest.approx((np.log(7) + np.log(3)) / 2)
    assert not bars._meta["can_words"]
    framed = aw.EntropyBars(acc.frame())
    np.testing.assert_allclose(_payload(framed)["entropy"], acc.mean()["entropy"], rtol=1e-5)
    with pytest.raises(ValueError, match="corpus_stats"):
        aw.EntropyBars(acc, words=True)


def test_entropy_bars_decoder_offers_last_row():
    a = np.tril(np.ones((4, 4), np.float32))
    a = (a / a.sum(-1, keepdims=True))[None, None]
    r = AttentionResult.from_arrays(a, ["a", "b", "c", "d"], kind="decoder")
    bars = aw.EntropyBars(r, rows="last")
    assert [row for row, _ in bars._meta["rows"]] == ["all", "last"]
    assert bars._meta["baselines"]["last"] == pytest.approx(np.log(4))
    assert bars._meta["baselines"]["all"] == pytest.approx(float(uniform_entropy(4, causal=True)))
    assert bars.values("entropy_last")[0, 0] == pytest.approx(np.log(4), rel=1e-5)


# -- HeadStatsGrid ------------------------------------------------------------------------------------------------


def test_grid_payload_carries_every_statistic(result):
    grid = aw.HeadStatsGrid(result)
    assert grid.statistic == "sep"
    sent = _payload(grid)
    expected = surface_stats(result)
    for name in ("cls", "sep", "punct", "self", "prev", "next", "first", "entropy", "entropy_cls"):
        np.testing.assert_allclose(sent[name], expected[name], rtol=1e-5, atol=1e-7, err_msg=name)
    assert grid._meta["names"][:7] == ["cls", "sep", "punct", "self", "prev", "next", "first"]
    assert "entropy_uniform" not in grid._meta["names"]
    assert grid._meta["labels"]["sep"] == "attention to [SEP]"
    # By hand, for one head: previous-token share is the mean of the sub-diagonal with row 0 counting 0.
    a = result.attention[1, 2]
    assert grid.values("prev")[1, 2] == pytest.approx(np.diagonal(a, -1).sum() / len(TOKENS), rel=1e-5)


def test_grid_statistic_switch(result):
    grid = aw.HeadStatsGrid(result, statistic="prev", layer=1, head=2)
    assert (grid.statistic, grid.layer, grid.head) == ("prev", 1, 2)
    grid.statistic = "entropy"
    assert grid.statistic == "entropy"
    with pytest.raises(ValueError, match="unknown statistic 'nope'"):
        grid.statistic = "nope"
    with pytest.raises(ValueError, match="unknown statistic"):
        aw.HeadStatsGrid(result, statistic="nope")


def test_grid_words_switch(result):
    grid = aw.HeadStatsGrid(result, words=True)
    np.testing.assert_allclose(_payload(grid)["punct"], surface_stats(result, words=True)["punct"], rtol=1e-5)


def test_grid_other_sources(result):
    stats = surface_stats(result)
    from_dict = aw.HeadStatsGrid({"sep": stats["sep"], "prev": stats["prev"]}, statistic="prev")
    np.testing.assert_allclose(_payload(from_dict)["prev"], stats["prev"], rtol=1e-6)
    both = aw.HeadStatsGrid([result, _result(3)])
    acc = CorpusStats(patterns=False)
    acc.update([result, _result(3)])
    np.testing.assert_allclose(_payload(both)["sep"], acc.mean()["sep"], rtol=1e-5)
    assert "mean of 2 inputs" in both._meta["title"]


def test_bad_input_fails_clearly(result):
    with pytest.raises(TypeError, match="AttentionResult"):
        aw.HeadStatsGrid("The cat sat.")
    with pytest.raises(TypeError, match="unexpected keyword"):
        aw.EntropyBars(result, colour="layer")
    with pytest.raises(TypeError, match="unexpected keyword"):
        aw.HeadStatsGrid(result, _stats={})
    with pytest.raises(traitlets.TraitError, match="layer 5 is out of range"):
        aw.EntropyBars(result, layer=5)
    grid = aw.HeadStatsGrid(result)
    with pytest.raises(traitlets.TraitError, match="head 3 is out of range"):
        grid.head = 3
    grid.head = -1  # the whole layer, as the heatmap's "mean of heads"
    import pandas as pd

    with pytest.raises(ValueError, match="tidy columns"):
        aw.HeadStatsGrid(pd.DataFrame({"a": [1]}))
    with pytest.raises(ValueError, match="entropy"):
        aw.EntropyBars({"sep": np.zeros((2, 3))})


# -- HeadClusterMap -----------------------------------------------------------------------------------------------


def test_cluster_map_points_are_the_mds_of_js_distances(result):
    m = aw.HeadClusterMap(result, seed=0)
    expected = head_embedding(head_distances([result]), result.n_heads, seed=0)
    xy = _decode(m._payload["points"])
    assert xy.shape == (6, 2)
    np.testing.assert_allclose(xy, expected[["x", "y"]].to_numpy(), rtol=1e-5, atol=1e-6)
    assert m.embedding[["layer", "head"]].to_numpy().tolist() == [[k // 3, k % 3] for k in range(6)]
    np.testing.assert_allclose(_payload(m)["entropy"], mean_entropy(result.attention), rtol=1e-5)
    assert m._meta["colors"][0] == ["layer", "layer"]


def test_cluster_map_colour_switch_and_sources(result):
    m = aw.HeadClusterMap(result, color="sep")
    m.color = "layer"
    m.color = "entropy"
    with pytest.raises(ValueError, match="color"):
        m.color = "nope"
    frame = m.embedding
    bare = aw.HeadClusterMap(frame)
    assert bare._meta["colors"] == [["layer", "layer"]]
    with_stats = aw.HeadClusterMap(frame, stats=surface_stats(result), color="prev")
    np.testing.assert_allclose(_payload(with_stats)["prev"], surface_stats(result)["prev"], rtol=1e-5)
    with pytest.raises(ValueError, match="distances=True"):
        acc = CorpusStats()
        acc.add(result)
        aw.HeadClusterMap(acc)
    acc = CorpusStats(distances=True)
    acc.update([result, _result(4)])
    from_corpus = aw.HeadClusterMap(acc)
    assert _decode(from_corpus._payload["points"]).shape == (6, 2)
    with pytest.raises(TypeError, match="HeadClusterMap takes"):
        aw.HeadClusterMap(np.zeros((6, 6)))


def test_cluster_map_words_switch(result):
    m = aw.HeadClusterMap(result)
    before = _decode(m._payload["points"]).copy()
    m.words = True
    expected = head_embedding(head_distances([result], words=True), 3, seed=0)
    np.testing.assert_allclose(_decode(m._payload["points"]), expected[["x", "y"]].to_numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(before, _decode(m._payload["points"]))


# -- linking ------------------------------------------------------------------------------------------------------


def test_link_selection_through_python_moves_the_heatmap(result):
    bars, grid, cmap = aw.EntropyBars(result), aw.HeadStatsGrid(result), aw.HeadClusterMap(result)
    heat = aw.AttentionHeatmap(result, layer=1, head=1)
    link = aw.widgets.link_selection(heat, bars, grid, cmap, js=False)
    assert (bars.layer, bars.head) == (1, 1), "linked widgets take the first widget's selection"
    bars.layer, bars.head = 0, 2  # what a click on bar 0-2 does
    assert (heat.layer, heat.head) == (0, 2)
    assert (grid.layer, grid.head, cmap.layer, cmap.head) == (0, 2, 0, 2)
    heat.head = -1  # the heatmap's mean of heads selects the whole layer
    assert grid.head == -1
    link.unlink()
    grid.head = 1
    assert heat.head == -1


def test_link_selection_in_the_page_uses_jslink(result):
    bars, heat = aw.EntropyBars(result), aw.AttentionHeatmap(result)
    link = aw.widgets.link_selection(bars, heat)
    assert len(link.links) == 2
    assert all(isinstance(k, widget_link.Link) for k in link.links)
    assert {(k.source[0], k.source[1], k.target[0], k.target[1]) for k in link.links} == {
        (bars, "layer", heat, "layer"), (bars, "head", heat, "head")}
    link.unlink()


def test_link_selection_rejects_bad_widgets(result):
    bars = aw.EntropyBars(result)
    with pytest.raises(TypeError, match="two or more"):
        aw.widgets.link_selection(bars)
    with pytest.raises(TypeError, match="'layer' and 'head'"):
        aw.widgets.link_selection(bars, ipywidgets.IntSlider())
    other = aw.AttentionHeatmap(_result(n_layers=3, n_heads=2))
    with pytest.raises(ValueError, match="different models"):
        aw.widgets.link_selection(bars, other)


# -- static twin --------------------------------------------------------------------------------------------------


def test_plot_head_stats_matches_the_grid(result):
    from matplotlib.figure import Figure

    fig = aw.plots.plot_head_stats(result, "prev", selected=(1, 2))
    assert isinstance(fig, Figure)
    mesh = fig.axes[0].collections[0]
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(2, 3), surface_stats(result)["prev"], rtol=1e-5)
    assert "previous" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="unknown statistic"):
        aw.plots.plot_head_stats(result, "nope")
