"""Clark et al. figures: they draw from every form of statistics the analysis hands out, and show what was given."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from attnwidgets.analysis import CorpusStats, head_embedding, stats_to_frame
from attnwidgets.plots.clark import plot_entropy_by_layer, plot_head_clusters, plot_token_attention
from attnwidgets.result import AttentionResult


@pytest.fixture()
def stats() -> CorpusStats:
    rng = np.random.default_rng(0)
    acc = CorpusStats()
    for n in (6, 8):
        a = rng.random((3, 4, n, n))
        a /= a.sum(-1, keepdims=True)
        acc.add(AttentionResult.from_arrays(a, ["[CLS]", *[f"w{i}" for i in range(n - 3)], ".", "[SEP]"]))
    return acc


def test_figure2_from_stats_frame_and_dict(stats):
    import matplotlib.pyplot as plt

    for source in (stats, stats.frame(), stats.mean()):
        fig = plot_token_attention(source)
        axes = fig.get_axes()
        assert [ax.get_title() for ax in axes] == ["[CLS]", "[SEP]", ". or ,"]
        line = axes[1].get_lines()[0]  # the layer mean of attention to [SEP]
        assert np.allclose(line.get_ydata(), stats.mean()["sep"].mean(1))
        assert list(line.get_xdata()) == [0, 1, 2]  # layers numbered as the widgets number them
        plt.close(fig)
    fig = plot_token_attention(stats, paper_numbers=True)
    assert list(fig.get_axes()[1].get_lines()[0].get_xdata()) == [1, 2, 3]
    assert fig.get_axes()[0].get_xlabel() == "layer (1-based, as in the paper)"
    plt.close(fig)
    with pytest.raises(KeyError):
        plot_token_attention({"cls": np.zeros((2, 2))})


def test_figure4_draws_uniform_baseline(stats):
    import matplotlib.pyplot as plt

    fig = plot_entropy_by_layer(stats)
    left, right = fig.get_axes()[:2]
    uniform = stats.mean()["entropy_uniform"].mean()
    assert any(np.allclose(line.get_ydata(), uniform) for line in left.get_lines())
    assert np.allclose(right.get_lines()[0].get_ydata(), stats.mean()["entropy_cls"].mean(1))
    plt.close(fig)


def test_figure6_colours(stats):
    import matplotlib.pyplot as plt

    d = np.abs(np.subtract.outer(np.arange(12.0), np.arange(12.0)))
    emb = head_embedding(d, n_heads=4)
    fig = plot_head_clusters(emb, annotate=True)
    points = fig.get_axes()[0].collections[0]
    assert np.allclose(points.get_array(), emb["layer"])
    lay, head = int(emb["layer"].iloc[0]), int(emb["head"].iloc[0])
    assert fig.get_axes()[0].texts[0].get_text() == f"{lay}-{head}"
    plt.close(fig)
    fig = plot_head_clusters(emb, annotate=True, paper_numbers=True)
    assert np.allclose(fig.get_axes()[0].collections[0].get_array(), emb["layer"] + 1)
    assert fig.get_axes()[0].texts[0].get_text() == f"{lay + 1}-{head + 1}"
    plt.close(fig)
    fig = plot_head_clusters(emb, color_by="entropy", stats=stats_to_frame(stats.mean()))
    assert np.allclose(fig.get_axes()[0].collections[0].get_array(), stats.mean()["entropy"].ravel())
    plt.close(fig)
    with pytest.raises(ValueError):
        plot_head_clusters(emb, color_by="entropy")
