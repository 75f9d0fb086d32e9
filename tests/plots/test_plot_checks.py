"""Every static twin checks its layer, head, kind and query arguments with viewdata.checks, as the widgets do.

Before, ``plot_head_view(r, layer=-1)`` drew the last layer under the title "layer -1", ``layer=6`` of a 6-layer
result and ``layer=1.5`` failed deep inside numpy. The result here has 2 layers x 3 heads x 5 tokens, so a message
that names the wrong count shows.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

import attnwidgets as aw
from attnwidgets.plots import plot_head_stats, plot_head_view, plot_heatmap, plot_model_view, plot_qk
from attnwidgets.qk_result import QKCapture

matplotlib.use("Agg")

N_LAYERS, N_HEADS, N_TOKENS = 2, 3, 5

LAYER_ERRORS = [
    (-1, ValueError, r"^layer -1 is out of range: there are 2 layers \(0\.\.1\)$"),
    (N_LAYERS, ValueError, r"^layer 2 is out of range: there are 2 layers \(0\.\.1\)$"),
    (1.5, TypeError, r"^layer must be an integer, got float 1\.5$"),
    ("2", TypeError, r"^layer must be an integer, got str '2'$"),
]
HEAD_MEAN = r"^head 3 is out of range: each layer has 3 heads \(0\.\.2, or -1 for their mean\)$"
HEAD_SINGLE = r"^head {h} is out of range: each layer has 3 heads \(0\.\.2\)$"
NO_CROSS = r"^this result has no 'cross' attention; it has \['self'\]$"


@pytest.fixture(scope="module")
def result() -> aw.AttentionResult:
    a = np.random.default_rng(0).random((N_LAYERS, N_HEADS, N_TOKENS, N_TOKENS), dtype=np.float32)
    return aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), ["[CLS]", "a", "b", ".", "[SEP]"])


# Each plot with a layer argument, called so that only the layer is wrong.
LAYER_CALLS = {
    "plot_heatmap": lambda r, layer: plot_heatmap(r, layer=layer),
    "plot_head_view": lambda r, layer: plot_head_view(r, layer=layer),
    "plot_model_view": lambda r, layer: plot_model_view(r, highlight=(layer, 0)),
    "plot_head_stats": lambda r, layer: plot_head_stats(r, "sep", selected=(layer, 0)),
}


@pytest.mark.parametrize("plot", list(LAYER_CALLS))
@pytest.mark.parametrize(("layer", "error", "message"), LAYER_ERRORS)
def test_layer_is_checked(result, plot, layer, error, message):
    with pytest.raises(error, match=message):
        LAYER_CALLS[plot](result, layer)


def test_heads_out_of_range(result):
    with pytest.raises(ValueError, match=HEAD_MEAN):
        plot_heatmap(result, layer=0, head=3)
    with pytest.raises(ValueError, match=r"^head -2 is out of range"):
        plot_heatmap(result, layer=0, head=-2)
    with pytest.raises(TypeError, match=r"^head must be an integer, got str '1'$"):
        plot_heatmap(result, layer=0, head="1")
    with pytest.raises(ValueError, match=HEAD_MEAN):
        plot_head_stats(result, "sep", selected=(0, 3))
    # the line view and the grid draw single heads: -1 (the mean) is refused there
    for h in (3, -1):
        with pytest.raises(ValueError, match=HEAD_SINGLE.format(h=h)):
            plot_head_view(result, layer=0, heads=[0, h])
        with pytest.raises(ValueError, match=HEAD_SINGLE.format(h=h)):
            plot_model_view(result, highlight=(0, h))


@pytest.mark.parametrize("plot", [
    lambda r, kind: plot_heatmap(r, kind=kind),
    lambda r, kind: plot_head_view(r, kind=kind),
    lambda r, kind: plot_model_view(r, kind=kind),
], ids=["plot_heatmap", "plot_head_view", "plot_model_view"])
def test_kind_is_checked(result, plot):
    with pytest.raises(ValueError, match=NO_CROSS):
        plot(result, "cross")
    with pytest.raises(TypeError, match=r"^kind must be a string, one of .*, got NoneType None$"):
        plot(result, None)


def test_head_view_queries_are_checked(result):
    with pytest.raises(ValueError, match=r"^query 5 is out of range: there are 5 query tokens \(0\.\.4\)$"):
        plot_head_view(result, queries=[1, 5])
    with pytest.raises(ValueError, match=r"^query -1 is out of range"):
        plot_head_view(result, queries=[-1])  # numpy would have selected the last token


def test_qk_head_and_query_are_checked():
    rng = np.random.default_rng(0)
    cap = QKCapture.from_vectors(rng.normal(size=(3, 4, 2)), rng.normal(size=(3, 4, 2)), rng.normal(size=(3, 4, 2)),
                                 ["[CLS]", "a", "b", "[SEP]"])
    with pytest.raises(ValueError, match=HEAD_SINGLE.format(h=3)):
        plot_qk(cap, head=3)
    with pytest.raises(ValueError, match=HEAD_SINGLE.format(h=-1)):
        plot_qk(cap, head=-1)
    with pytest.raises(TypeError, match=r"^head must be an integer, got float 1\.0$"):
        plot_qk(cap, head=1.0)
    with pytest.raises(ValueError, match=r"^query 4 is out of range: there are 4 query tokens \(0\.\.3\)$"):
        plot_qk(cap, query=4)


def test_valid_arguments_still_draw(result):
    import matplotlib.pyplot as plt

    figs = [
        plot_heatmap(result, layer=np.int64(1), head=-1),  # numpy integers are integers
        plot_head_view(result, layer=1, heads=[2], queries=[0, 4]),
        plot_model_view(result, highlight=(1, 2)),
        plot_head_stats(result, "sep", selected=(1, -1)),
    ]
    assert figs[0].axes[0].get_title() == "arrays · self attention · layer 1 · mean of heads"
    assert figs[1].axes[0].get_title() == "arrays · self attention · layer 1"  # the page's title (state.ts titleText)
    assert [t.get_text() for t in figs[1].axes[0].get_legend().get_texts()] == ["2"]  # the head, as its swatch
    for fig in figs:
        plt.close(fig)
