"""Each view's display bundle holds, beside the widget, a description (text/plain) and its static twin (image/png),
so a notebook without widget support shows something; ``repr(widget)`` says what it shows.

Before, the bundle was the widget mimetype and ``<attnwidgets.widgets.heatmap.AttentionHeatmap object at 0x7f…>``.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

import attnwidgets as aw
from attnwidgets import fallback
from attnwidgets.qk_result import QKCapture

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
TOKENS = ["[CLS]", "the", "cat", "sat", ".", "[SEP]"]


def _result() -> aw.AttentionResult:
    a = np.random.default_rng(0).random((2, 3, len(TOKENS), len(TOKENS)), dtype=np.float32)
    return aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), TOKENS)


def _captures() -> list[QKCapture]:
    rng = np.random.default_rng(1)
    return [QKCapture.from_vectors(*(rng.normal(size=(3, len(TOKENS), 4)) for _ in range(3)), TOKENS, layer=layer)
            for layer in (0, 1)]


VIEWS = {
    "AttentionHeatmap": lambda: aw.AttentionHeatmap(_result(), layer=1, head=2),
    "ModelView": lambda: aw.ModelView(_result(), layer=1, head=0),
    "HeadView": lambda: aw.HeadView(_result(), layer=1),
    "QKStepThrough": lambda: aw.QKStepThrough(_captures(), layer=1, head=2),
    "HeadStatsGrid": lambda: aw.HeadStatsGrid(_result(), statistic="sep"),
    "EntropyBars": lambda: aw.EntropyBars(_result()),
    "HeadClusterMap": lambda: aw.HeadClusterMap(_result(), color="entropy"),
    "QKSpaceView": lambda: aw.QKSpaceView(_qk_space(), color="token", sentence=1),
    "RouterView": lambda: aw.RouterView(_routes(), layer=2, selection=[1, 2]),
}


def _routes():
    from attnwidgets.router_result import RouterResult

    rng = np.random.default_rng(3)
    experts = np.stack([[rng.permutation(4)[:2] for _ in TOKENS] for _ in range(2)])  # (2 layers, 6 tokens, top 2)
    return RouterResult(TOKENS, [0, 2], rng.normal(size=(2, len(TOKENS), 4)).astype(np.float32), experts,
                        np.full(experts.shape, 0.5, np.float32))


def _qk_space():
    from attnwidgets.analysis.qk_space import build_qk_space

    rng = np.random.default_rng(2)
    q = [rng.normal(size=(len(TOKENS), 4)) for _ in range(3)]
    return build_qk_space(q, q, [np.full((len(TOKENS),) * 2, 1 / len(TOKENS))] * 3, [TOKENS] * 3)


@pytest.fixture(autouse=True)
def fallback_on():
    fallback.set_static_fallback(True)
    yield
    fallback.set_static_fallback(True)


@pytest.mark.parametrize("view", list(VIEWS))
def test_bundle_has_widget_text_and_picture(view):
    w = VIEWS[view]()
    data, _ = w._repr_mimebundle_()
    assert WIDGET_VIEW in data
    assert data["text/plain"].startswith(f"{view} · arrays")
    assert data["text/plain"].endswith("re-run the cell to interact)")
    png = base64.b64decode(data["image/png"])
    image = np.asarray(Image.open(io.BytesIO(png)).convert("L"))
    assert 2_000 < len(png) < 200_000 and max(image.shape) <= fallback.MAX_PIXELS
    assert (image < 200).mean() > 0.02, "a blank picture"


def test_description_names_model_tokens_layer_and_head():
    w = VIEWS["AttentionHeatmap"]()
    assert repr(w) == str(w._repr_mimebundle_()[0]["text/plain"])
    assert repr(w).startswith("AttentionHeatmap · arrays · 6 tokens: [CLS] the cat sat . [SEP] · self attention · "
                              "layer 1 · head 2")
    w.head = -1
    assert "layer 1 · mean of heads" in repr(w) and "object at 0x" not in repr(w)
    assert "QKStepThrough · arrays · 6 tokens" in repr(VIEWS["QKStepThrough"]())


def test_picture_follows_the_widget_state():
    w = VIEWS["AttentionHeatmap"]()
    first = w._repr_mimebundle_()[0]["image/png"]
    w.layer = 0
    assert w._repr_mimebundle_()[0]["image/png"] != first


def test_view_without_twin_gets_text_only():
    w = aw.MaskExplorer()
    data, _ = w._repr_mimebundle_()
    assert WIDGET_VIEW in data and "image/png" not in data
    assert data["text/plain"].startswith("MaskExplorer") and "object at 0x" not in data["text/plain"]


def test_switch_off_keeps_text():
    w = VIEWS["AttentionHeatmap"]()
    fallback.set_static_fallback(False)
    data, _ = w._repr_mimebundle_()
    assert "image/png" not in data and data["text/plain"].startswith("AttentionHeatmap")


def test_environment_switch():
    import subprocess
    import sys

    code = "from attnwidgets import fallback; print(fallback.static_fallback())"
    for value, expected in (("0", "False"), ("off", "False"), ("1", "True")):
        out = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ,
                             "ATTNWIDGETS_STATIC_FALLBACK": value}, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == expected


def test_closed_widget_has_no_bundle_but_a_repr():
    w = VIEWS["AttentionHeatmap"]()
    w.close()
    assert "AttentionHeatmap · arrays" in repr(w)
