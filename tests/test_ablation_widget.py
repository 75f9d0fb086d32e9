"""AblationWidget without a browser: the trait, the page's "apply" request and watch_ablation agree; reset; stale
requests are dropped without running the model; bad input fails clearly; errors land in ``_error``.

Tiny seeded models (2 layers x 4 heads) keep it fast; one test uses the bundled model, as the page does.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.runner import get_runner
from attnwidgets.runner.ablation import Ablation
from attnwidgets.studies.watch import watch_ablation
from attnwidgets.widgets.ablation import remode

TEXTS = ["A man is playing a guitar.", "The cat sat on the mat."]
PAIRS = ["A man plays the guitar.", "A dog ran in the park."]


def _decode(packed: dict) -> np.ndarray:
    assert packed["dtype"] == "float32" and isinstance(packed["buffer"], memoryview), "maps cross as binary float32"
    return np.frombuffer(packed["buffer"], dtype="<f4").reshape(packed["shape"])


def _after(w: aw.AblationWidget) -> list[float]:
    return [r["after"] for r in w._output["rows"]]


@pytest.fixture
def widget(tiny_bert):
    return aw.AblationWidget(TEXTS, text_pairs=PAIRS, model=tiny_bert)


def test_toggling_a_head_via_the_trait_equals_watch_ablation(widget, tiny_bert):
    runner = get_runner(tiny_bert)
    assert widget._output["kind"] == "pairs"
    assert [r["before"] for r in widget._output["rows"]] == _after(widget), "no edit: after equals before"
    widget.ablation = Ablation.heads({(1, 2): "zero"})  # an Ablation is stored as its dict form
    assert widget.ablation == {"edits": [{"stack": "self", "layer": 1, "head": 2, "mode": "zero", "scale": 0.0}]}
    direct = watch_ablation(runner, TEXTS, Ablation.heads({(1, 2): "zero"}), text_pairs=PAIRS)
    assert _after(widget) == pytest.approx(direct.frame["after"].tolist(), abs=1e-7)
    assert widget.frame["after"].tolist() == pytest.approx(direct.frame["after"].tolist(), abs=1e-7)
    assert widget._output["rows"][0]["label"] == f"pair 0: {TEXTS[0]}  ↔  {PAIRS[0]}"
    assert widget._output["ablation"] == widget.ablation


def test_page_request_equals_trait_and_watch_ablation(widget, tiny_bert):
    runner = get_runner(tiny_bert)
    ab = Ablation.heads({(0, 1): 0.5}) | Ablation.layers([1], mode="uniform")
    reply, buffers = widget.answer({"what": "apply", "seq": 1, "ablation": ab.to_dict(), "mode": "uniform"})
    assert buffers == [] and reply["seq"] == 1 and reply["ablation"] == ab.to_dict()
    assert widget.ablation == ab.to_dict() and widget.mode == "uniform"
    direct = watch_ablation(runner, TEXTS, ab, text_pairs=PAIRS)
    assert _after(widget) == pytest.approx(direct.frame["after"].tolist(), abs=1e-7)


def test_selected_head_map_shows_the_ablation(widget):
    widget.layer, widget.head = 1, 3
    before = _decode(widget._heatmap["before"])
    assert widget._heatmap["key"] == "self/0/1/3"
    np.testing.assert_allclose(before, widget.result.before[0].attention[1, 3])
    widget.ablation = Ablation.heads({(1, 3): "uniform"})
    after = _decode(widget._heatmap["after"])
    n = after.shape[0]
    np.testing.assert_allclose(after, np.full((n, n), 1 / n), rtol=1e-6)
    np.testing.assert_allclose(_decode(widget._heatmap["before"]), before)  # before stays the clean map
    widget.item = 1
    assert widget._heatmap["key"] == "self/1/1/3"
    assert widget._heatmap["queries"] == widget.result.after[1].tokens


def test_reset_restores_the_clean_numbers_without_a_forward_pass(widget, tiny_bert):
    runner = get_runner(tiny_bert)
    clean = _after(widget)
    widget.ablation = Ablation.layers([0])
    assert _after(widget) != pytest.approx(clean)
    n = runner.n_forward
    widget.reset()
    assert widget.ablation == {"edits": []}
    assert _after(widget) == pytest.approx(clean)
    assert runner.n_forward == n, "the clean run is cached"


def test_stale_requests_are_dropped_without_running(widget, tiny_bert):
    runner = get_runner(tiny_bert)
    widget.answer({"what": "apply", "seq": 20, "ablation": Ablation.heads({(0, 0): "zero"}).to_dict()})
    applied, output, n = dict(widget.ablation), dict(widget._output), runner.n_forward
    for seq in (5, 20):  # older, and the same one again
        reply, _ = widget.answer({"what": "apply", "seq": seq, "ablation": Ablation.layers([1]).to_dict()})
        assert reply == {"stale": True, "seq": seq, "latest": 20}
    assert widget.ablation == applied and widget._output == output and runner.n_forward == n
    reply, _ = widget.answer({"what": "apply", "seq": 21, "ablation": {"edits": []}})
    assert "stale" not in reply and widget.ablation == {"edits": []}


def test_page_messages_get_replies_and_errors(widget, monkeypatch, tiny_bert):
    sent: list[dict] = []
    monkeypatch.setattr(widget, "send", lambda content, buffers=None: sent.append(content))
    clean = _after(widget)
    widget._on_msg(widget, {"type": "request", "id": 7, "what": "apply", "seq": 3,
                            "ablation": {"edits": [{"stack": "self", "layer": 5, "head": 0, "mode": "zero"}]}}, [])
    assert sent[-1]["id"] == 7 and "layer 5 does not exist" in sent[-1]["error"]
    assert "layer 5 does not exist" in widget._error and widget.ablation == {"edits": []}
    # a page may leave out the scale of a zero edit: the head is still removed (it used to run as scale 1, no edit)
    widget._on_msg(widget, {"type": "request", "id": 8, "what": "apply", "seq": 4,
                            "ablation": {"edits": [{"stack": "self", "layer": 0, "head": 2, "mode": "zero"}]}}, [])
    assert sent[-1]["id"] == 8 and "error" not in sent[-1] and widget._error == ""
    assert widget.ablation == Ablation.heads({(0, 2): "zero"}).to_dict()
    assert widget.ablation["edits"][0]["scale"] == 0.0
    direct = watch_ablation(get_runner(tiny_bert), TEXTS, Ablation.heads({(0, 2): "zero"}), text_pairs=PAIRS)
    assert _after(widget) == pytest.approx(direct.frame["after"].tolist(), abs=1e-7)
    assert _after(widget) != pytest.approx(clean)
    assert not widget.result.after[0].attention[0, 2].any()


def test_mode_switches_disabled_heads_and_keeps_scales(widget):
    widget.ablation = Ablation.heads({(0, 1): "zero", (1, 0): 0.25}) | Ablation.layers([1])
    widget.mode = "uniform"
    modes = {(e["layer"], e["head"]): (e["mode"], e["scale"]) for e in widget.ablation["edits"]}
    assert modes == {(0, 1): ("uniform", 1.0), (1, None): ("uniform", 1.0), (1, 0): ("scale", 0.25)}
    assert remode({"edits": []}, "mean") == {"edits": []}
    with pytest.raises(ValueError, match="unknown mode"):
        remode({"edits": []}, "scale")


def test_mean_reference_is_computed_once_lazily(tiny_bert):
    w = aw.AblationWidget(TEXTS, text_pairs=PAIRS, model=tiny_bert, reference="texts")
    assert w._reference is None, "no mean pattern until 'mean' is used"
    w.mode = "mean"
    w.ablation = Ablation.heads({(0, 0): "zero"})  # the trait takes the page's mode only through remode
    assert w._reference is None
    w.ablation = remode(w.ablation, "mean")
    ref = w._reference
    assert ref is not None and ref.n_texts == len(TEXTS) + len(PAIRS)
    w.ablation = remode(Ablation.layers([1]).to_dict(), "mean")
    assert w._reference is ref
    assert w.spec.reference is ref


def test_ranking_and_callable_watch(tiny_bert):
    w = aw.AblationWidget(TEXTS, query="A person plays music.", model=tiny_bert)
    assert w._output["kind"] == "ranking"
    assert {r["name"] for r in w._output["rows"]} == {"cosine", "rank"}

    def tokens(result):
        return {"first attention": float(result.attention[0, 0, 0, 0])}

    w = aw.AblationWidget(TEXTS, kind=tokens, model=tiny_bert)
    w.ablation = Ablation.heads({(0, 0): "zero"})
    assert w._output["kind"] == "callable" and _after(w) == [0.0, 0.0]
    assert "tokens(result)" in w._meta["watch"]


def test_errors_in_a_run_show_in_the_widget_and_clear_after(tiny_bert):
    def fragile(result):
        if result.ablation:
            raise RuntimeError("boom: this watcher fails on ablated runs")
        return 1.0

    w = aw.AblationWidget(TEXTS, kind=fragile, model=tiny_bert)
    with pytest.raises(RuntimeError, match="boom"):
        w.ablation = Ablation.heads({(0, 0): "zero"})
    assert w._error == "RuntimeError: boom: this watcher fails on ablated runs"
    assert w._running is False
    w.reset()
    assert w._error == ""


def test_bad_input_fails_clearly(tiny_bert, widget):
    with pytest.raises(TypeError, match="list of strings"):
        aw.AblationWidget("one text", model=tiny_bert)
    with pytest.raises(TypeError, match="unexpected keyword"):
        aw.AblationWidget(TEXTS, model=tiny_bert, colour="red")
    with pytest.raises(ValueError, match="one second sentence per text"):
        aw.AblationWidget(TEXTS, text_pairs=PAIRS[:1], model=tiny_bert)
    with pytest.raises(ValueError, match="unknown kind"):
        aw.AblationWidget(TEXTS, kind="accuracy", model=tiny_bert)
    with pytest.raises(ValueError, match="texts is empty"):
        aw.AblationWidget([], model=tiny_bert)
    with pytest.raises(ValueError, match="reference"):
        aw.AblationWidget(TEXTS, model=tiny_bert, reference="wikipedia")
    with pytest.raises(traitlets.TraitError, match="layer 2 does not exist"):
        widget.ablation = Ablation.heads({(2, 0): "zero"})
    with pytest.raises(traitlets.TraitError, match="head 4 does not exist"):
        widget.ablation = {"edits": [{"stack": "self", "layer": 0, "head": 4, "mode": "zero"}]}
    with pytest.raises(traitlets.TraitError, match="unknown ablation mode"):
        widget.ablation = {"edits": [{"stack": "self", "layer": 0, "head": 0, "mode": "half"}]}
    with pytest.raises(traitlets.TraitError, match="unknown mode"):
        widget.mode = "scale"
    with pytest.raises(traitlets.TraitError, match="out of range"):
        widget.head = 4
    with pytest.raises(traitlets.TraitError, match="unknown stack"):
        widget.stack = "cross"
    assert widget.ablation == {"edits": []} and widget.head == 0


def test_encoder_decoder_grid_per_stack(tiny_bart):
    w = aw.AblationWidget(["The cat sat on the mat."], model=tiny_bart)
    assert w.stack == "encoder" and set(w._meta["stacks"]) == {"encoder", "decoder", "cross"}
    w.ablation = Ablation.heads({(1, 2): "zero"}, stack="cross")
    w.stack, w.layer, w.head = "cross", 1, 2
    assert w._heatmap["key"] == "cross/0/1/2"
    assert not _decode(w._heatmap["after"]).any(), "a zeroed cross-attention head shows an empty map"


def test_bundled_model_default_texts_and_static_twin(bundled):
    w = aw.AblationWidget()  # three shipped similarity pairs, the bundled model
    assert w._meta["stacks"] == {"self": [6, 12]} and len(w._output["rows"]) == 3
    w.ablation = Ablation.layers([5])
    fig = aw.plot_ablation_panel(w)
    assert "5=zero" in fig.axes[0].get_title()
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert f"{w.frame['after'].iloc[0]:.3f}" in texts
    with pytest.raises(TypeError, match="WatchResult"):
        aw.plot_ablation_panel([1, 2, 3])
