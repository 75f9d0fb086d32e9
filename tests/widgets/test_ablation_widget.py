"""AblationWidget without a browser: the trait, the page's change and watch_ablation agree; a page change (the
``ablation`` and ``mode`` traits set by the page, numbered by ``_page_seq``) is read into an Ablation once and answered
by one state update; reset; stale changes are dropped without running the model; bad input fails clearly; errors land
in ``_error``; the old names (stack=, kind=<output>) still work, warning.

Tiny seeded models (2 layers x 4 heads) keep it fast; one test uses the bundled model, as the page does.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import dataclasses
import shutil

import numpy as np
import pytest
import torch
import traitlets

import attnwidgets as aw
from attnwidgets.runner import get_runner
from attnwidgets.runner.ablation import Ablation
from attnwidgets.studies.watch import WatchResult, watch_ablation
from attnwidgets.widgets.ablation import remode

TEXTS = ["A man is playing a guitar.", "The cat sat on the mat."]
PAIRS = ["A man plays the guitar.", "A dog ran in the park."]


def _decode(packed: dict) -> np.ndarray:
    assert packed["dtype"] == "float32" and isinstance(packed["buffer"], memoryview), "maps cross as binary float32"
    return np.frombuffer(packed["buffer"], dtype="<f4").reshape(packed["shape"])


def _after(w: aw.AblationWidget) -> list[float]:
    return [r["after"] for r in w._payload["rows"]]


def _map(w: aw.AblationWidget, which: str) -> np.ndarray:
    return _decode(w._payload["map"][which])


def _page(w: aw.AblationWidget, seq: int, ablation, **extra) -> None:
    """What the page sends on a click: one state update setting the traits (the comm hands it to set_state)."""
    w.set_state({"ablation": ablation, **extra, "_page_seq": seq})


@pytest.fixture
def widget(tiny_bert):
    return aw.AblationWidget(TEXTS, text_pairs=PAIRS, model=tiny_bert)


def test_toggling_a_head_via_the_trait_equals_watch_ablation(widget, tiny_bert):
    runner = get_runner(tiny_bert)
    assert widget._payload["output"] == "pairs"
    assert [r["before"] for r in widget._payload["rows"]] == _after(widget), "no edit: after equals before"
    widget.ablation = {"edits": [{"stack": "self", "layer": 1, "head": 2, "mode": "zero"}]}  # a dict is read once
    assert widget.ablation == Ablation.heads({(1, 2): "zero"})
    assert widget.get_state("ablation")["ablation"] == {
        "edits": [{"stack": "self", "layer": 1, "head": 2, "mode": "zero", "scale": 0.0}]}, "the page gets the dict"
    direct = watch_ablation(runner, TEXTS, Ablation.heads({(1, 2): "zero"}), text_pairs=PAIRS)
    assert _after(widget) == pytest.approx(direct.frame["after"].tolist(), abs=1e-7)
    assert widget.frame["after"].tolist() == pytest.approx(direct.frame["after"].tolist(), abs=1e-7)
    assert widget._payload["rows"][0]["label"] == f"pair 0: {TEXTS[0]}  ↔  {PAIRS[0]}"
    assert widget._payload["ablation"] == widget.ablation.to_dict()


def test_page_message_equals_trait_and_watch_ablation(widget, tiny_bert):
    runner = get_runner(tiny_bert)
    ab = Ablation.heads({(0, 1): 0.5}) | Ablation.layers([1], mode="uniform")
    _page(widget, 1, ab.to_dict(), mode="uniform")
    assert widget._payload["seq"] == 1 and widget._payload["ablation"] == ab.to_dict()
    assert widget.ablation == ab and widget.mode == "uniform"
    direct = watch_ablation(runner, TEXTS, ab, text_pairs=PAIRS)
    assert _after(widget) == pytest.approx(direct.frame["after"].tolist(), abs=1e-7)


def test_selected_head_map_shows_the_ablation(widget):
    widget.layer, widget.head = 1, 3
    before = _map(widget, "before")
    assert widget._payload["map"]["key"] == "self/0/1/3"
    np.testing.assert_allclose(before, widget.watch_result.before[0].attention[1, 3])
    widget.ablation = Ablation.heads({(1, 3): "uniform"})
    after = _map(widget, "after")
    n = after.shape[0]
    np.testing.assert_allclose(after, np.full((n, n), 1 / n), rtol=1e-6)
    np.testing.assert_allclose(after, widget.result.attention[1, 3])  # .result is the ablated run shown
    np.testing.assert_allclose(_map(widget, "before"), before)  # before stays the clean map
    widget.item = 1
    assert widget._payload["map"]["key"] == "self/1/1/3"
    assert widget._payload["map"]["queries"] == widget.result.tokens == widget.watch_result.after[1].tokens


def test_reset_restores_the_clean_numbers_without_a_forward_pass(widget, tiny_bert):
    runner = get_runner(tiny_bert)
    clean = _after(widget)
    widget.ablation = Ablation.layers([0])
    assert _after(widget) != pytest.approx(clean)
    n = runner.n_forward
    widget.reset()
    assert widget.ablation == Ablation() and not widget.ablation
    assert _after(widget) == pytest.approx(clean)
    assert runner.n_forward == n, "the clean run is cached"


def test_stale_messages_are_dropped_without_running(widget, tiny_bert):
    runner = get_runner(tiny_bert)
    _page(widget, 20, Ablation.heads({(0, 0): "zero"}).to_dict())
    applied, payload, n = widget.ablation, dict(widget._payload), runner.n_forward
    for seq in (5, 20):  # older, and the same one again: the update for 20 answers them
        _page(widget, seq, Ablation.layers([1]).to_dict())
    assert widget.ablation == applied and widget._payload == payload and runner.n_forward == n
    _page(widget, 21, {"edits": []})
    assert widget._payload["seq"] == 21 and widget.ablation == Ablation()


def test_a_change_that_carries_only_its_seq_is_answered(widget, tiny_bert):
    """Hosts send only the traits that changed: a toggle undone before it was saved reaches Python as ``_page_seq``
    alone, and the page waits for its answer all the same (without a model run)."""
    runner = get_runner(tiny_bert)
    n = runner.n_forward
    widget.set_state({"_page_seq": 30})
    assert widget._payload["seq"] == 30 and runner.n_forward == n and widget.ablation == Ablation()


def test_page_messages_are_answered_by_state_and_errors(widget, tiny_bert):
    clean = _after(widget)
    _page(widget, 3, {"edits": [{"stack": "self", "layer": 5, "head": 0, "mode": "zero"}]})
    assert "layer 5 does not exist" in widget._error and widget.ablation == Ablation()
    assert widget._payload["seq"] == 3 and widget._payload["ablation"] == {"edits": []}, "answered, numbers kept"
    # a page may leave out the scale of a zero edit: the head is still removed (it used to run as scale 1, no edit)
    _page(widget, 4, {"edits": [{"stack": "self", "layer": 0, "head": 2, "mode": "zero"}]})
    assert widget._error == "" and widget._payload["seq"] == 4
    assert widget.ablation == Ablation.heads({(0, 2): "zero"})
    assert widget.ablation.edits[0].scale == 0.0
    direct = watch_ablation(get_runner(tiny_bert), TEXTS, Ablation.heads({(0, 2): "zero"}), text_pairs=PAIRS)
    assert _after(widget) == pytest.approx(direct.frame["after"].tolist(), abs=1e-7)
    assert _after(widget) != pytest.approx(clean)
    assert not widget.result.attention[0, 2].any()


def _counting(monkeypatch) -> dict[str, int]:
    """Count Ablation constructions and dict parses (from_dict) from now on."""
    counts = {"constructed": 0, "from_dict": 0}
    post_init, from_dict = Ablation.__post_init__, Ablation.from_dict.__func__

    def counted_post_init(self):
        counts["constructed"] += 1
        post_init(self)

    def counted_from_dict(cls, *args, **kwargs):
        counts["from_dict"] += 1
        return from_dict(cls, *args, **kwargs)

    monkeypatch.setattr(Ablation, "__post_init__", counted_post_init)
    monkeypatch.setattr(Ablation, "from_dict", classmethod(counted_from_dict))
    return counts


def _sent(widget, monkeypatch) -> list[dict]:
    """Every comm message the kernel sends the page from now on (state updates and custom messages), less
    ipywidgets' own acknowledgement of a page's change (``echo_update``, which every widget sends)."""
    sent: list[dict] = []

    def send(data=None, metadata=None, buffers=None):
        if data.get("method") != "echo_update":
            sent.append(data)

    monkeypatch.setattr(widget.comm, "send", send)
    return sent


@pytest.mark.parametrize("mode", ["zero", "uniform"])
def test_a_click_is_one_conversion_and_one_message_back(widget, monkeypatch, mode):
    """One page change: the ablation is read into an Ablation once, the model runs once, and the page gets exactly
    one message back, a state update carrying the numbers (no reply beside it, and not the page's own edit again)."""
    runs: list = []
    rerun = widget._rerun
    monkeypatch.setattr(widget, "_rerun", lambda: (runs.append(1), rerun()))
    ablation = remode(Ablation.heads({(1, 2): "zero"}) | Ablation.layers([0]), mode)  # what the page's menu sends
    counts = _counting(monkeypatch)
    sent = _sent(widget, monkeypatch)
    _page(widget, 7, ablation, mode=mode)
    assert counts == {"constructed": 1, "from_dict": 1}, "one conversion: dict -> Ablation, once"
    assert len(runs) == 1, "one run"
    assert len(sent) == 1 and sent[0]["method"] == "update", f"one state update and nothing else: {sent}"
    state = sent[0]["state"]
    assert widget.ablation.to_dict() == ablation and state["_payload"]["ablation"] == ablation
    assert state["_payload"]["seq"] == 7 and state.get("_error", "") == ""
    assert state["_payload"]["rows"] == widget._payload["rows"] and _after(widget) != [
        r["before"] for r in widget._payload["rows"]]
    assert widget.mode == mode and widget.get_state(["ablation", "mode"]) == {"ablation": ablation, "mode": mode}
    assert not {"ablation", "mode", "_page_seq"} & set(state), "the page's own edit is not sent back to it"


def test_a_failing_message_is_answered_by_one_update_too(widget, monkeypatch):
    counts = _counting(monkeypatch)
    sent = _sent(widget, monkeypatch)
    _page(widget, 9, {"edits": [{"stack": "self", "layer": 7, "head": 0, "mode": "zero"}]})
    assert counts["from_dict"] == 1 and len(sent) == 2 and widget.ablation == Ablation()
    # The page set the refused ablation in its model: Python's (unchanged) goes back first, then the answer.
    assert sent[0]["state"] == {"ablation": {"edits": []}, "mode": "zero"}
    assert "layer 7 does not exist" in sent[1]["state"]["_error"] and sent[1]["state"]["_payload"]["seq"] == 9
    assert "ablation" not in sent[1]["state"]


def test_setting_the_state_in_python_updates_the_page(widget, monkeypatch):
    ablation = Ablation.heads({(0, 1): 0.5})
    counts = _counting(monkeypatch)
    sent = _sent(widget, monkeypatch)
    widget.ablation = ablation
    assert counts == {"constructed": 0, "from_dict": 0}, "an Ablation is checked, never converted"
    updates = [m["state"] for m in sent if m["method"] == "update"]
    assert {"ablation": ablation.to_dict()} in updates
    assert any("_payload" in u and u["_payload"]["ablation"] == widget.ablation.to_dict() for u in updates)
    assert [u["_running"] for u in updates if "_running" in u] == [True, False], "the page shows running…"


def test_mode_switches_disabled_heads_and_keeps_scales(widget):
    widget.ablation = Ablation.heads({(0, 1): "zero", (1, 0): 0.25}) | Ablation.layers([1])
    widget.mode = "uniform"
    modes = {(e["layer"], e["head"]): (e["mode"], e["scale"]) for e in widget.ablation.to_dict()["edits"]}
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
    assert w.ablation.reference is ref and w.spec is w.ablation


def test_ranking_and_callable_watch(tiny_bert):
    w = aw.AblationWidget(TEXTS, query="A person plays music.", model=tiny_bert)
    assert w._payload["output"] == "ranking"
    assert {r["name"] for r in w._payload["rows"]} == {"cosine", "rank"}

    def tokens(result):
        return {"first attention": float(result.attention[0, 0, 0, 0])}

    w = aw.AblationWidget(TEXTS, watch=tokens, model=tiny_bert)
    w.ablation = Ablation.heads({(0, 0): "zero"})
    assert w._payload["output"] == "callable" and _after(w) == [0.0, 0.0]
    assert "tokens(result)" in w._payload["watch"]


def test_errors_in_a_run_show_in_the_widget_and_clear_after(tiny_bert):
    def fragile(result):
        if result.ablation:
            raise RuntimeError("boom: this watcher fails on ablated runs")
        return 1.0

    w = aw.AblationWidget(TEXTS, watch=fragile, model=tiny_bert)
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
    with pytest.raises(ValueError, match="unknown watch"):
        aw.AblationWidget(TEXTS, watch="accuracy", model=tiny_bert)
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
    with pytest.raises(traitlets.TraitError, match="invalid ablation"):
        widget.ablation = [(0, 0)]
    with pytest.raises(traitlets.TraitError, match="unknown mode"):
        widget.mode = "scale"
    # layer and head are checked by attnwidgets.viewdata.checks, with its text, as in every view
    with pytest.raises(traitlets.TraitError, match=r"head 4 is out of range: each layer has 4 heads \(0..3\)$"):
        widget.head = 4
    with pytest.raises(traitlets.TraitError, match=r"head -1 is out of range"):
        widget.head = -1
    with pytest.raises(traitlets.TraitError, match=r"layer 2 is out of range: there are 2 layers \(0..1\)"):
        widget.layer = 2
    with pytest.raises(traitlets.TraitError, match="item 2 is out of range"):
        widget.item = 2
    with pytest.raises(traitlets.TraitError, match="no 'cross' attention"):
        widget.kind = "cross"
    with pytest.raises(traitlets.TraitError, match="unknown colormap"):
        widget.colormap = "rainbow"
    assert widget.ablation == Ablation() and widget.head == 0 and widget.kind == "self"


def test_encoder_decoder_grid_per_stack(tiny_bart):
    w = aw.AblationWidget(["The cat sat on the mat."], model=tiny_bart)
    assert w.kind == "encoder" and set(w._payload["stacks"]) == {"encoder", "decoder", "cross"}
    w.ablation = Ablation.heads({(1, 2): "zero"}, stack="cross")
    w.kind, w.layer, w.head = "cross", 1, 2
    assert w._payload["map"]["key"] == "cross/0/1/2"
    assert not _map(w, "after").any(), "a zeroed cross-attention head shows an empty map"
    w.kind = "self"  # "self" names an encoder-decoder's encoder, as in every view
    assert w.kind == "encoder" and w._payload["map"]["key"] == "encoder/0/1/2"


def test_the_attention_stack_is_kind_and_the_watched_output_is_watch(tiny_bert, tiny_bart):
    """The pre-release spellings (stack=, kind=<watched output>, .stack) are gone: each is refused, naming the
    arguments the widget takes, instead of being quietly mapped."""
    def first(result):
        return float(result.attention[0, 0, 0, 0])

    w = aw.AblationWidget(TEXTS[:1], watch=first, model=tiny_bert)
    assert w.kind == "self" and "first(result)" in w._payload["watch"] and w._payload["output"] == "callable"
    w = aw.AblationWidget(["The cat sat."], kind="cross", watch="drift", model=tiny_bart)
    assert w.kind == "cross" and w._payload["output"] == "drift"
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['stack'\].*'kind'"):
        aw.AblationWidget(TEXTS[:1], stack="self", model=tiny_bert)
    with pytest.raises(traitlets.TraitError):
        aw.AblationWidget(TEXTS[:1], kind="drift", model=tiny_bert)
    assert not hasattr(w, "stack")


def test_bundled_model_default_texts_and_static_twin(bundled):
    w = aw.AblationWidget()  # three shipped similarity pairs, the bundled model
    assert w._payload["stacks"] == {"self": [6, 12]} and len(w._payload["rows"]) == 3
    assert isinstance(w.result, aw.AttentionResult) and isinstance(w.watch_result, WatchResult)
    w.ablation = Ablation.layers([5])
    fig = aw.plots.plot_ablation_panel(w)
    assert "5=zero" in fig.axes[0].get_title("left")
    numbers = [t.get_text() for t in fig.axes[1].texts]  # as the page prints them: before → after  change
    assert f"→ {w.frame['after'].iloc[0]:.4f}  " in numbers[0]
    assert fig.axes[0].texts[0].get_text() == w._payload["rows"][0]["label"]  # headed by its texts
    with pytest.raises(TypeError, match="WatchResult"):
        aw.plots.plot_ablation_panel([1, 2, 3])


def test_a_result_stands_for_its_text_and_model(tiny_bert):
    """AblationWidget(result) is AblationWidget([result.text], model=<the result's model>)."""
    clean = aw.run(TEXTS[0], model=tiny_bert)
    from_result = aw.AblationWidget(clean, text_pairs=[PAIRS[0]], watch="pairs")
    from_texts = aw.AblationWidget([TEXTS[0]], text_pairs=[PAIRS[0]], model=tiny_bert, watch="pairs")
    assert from_result.result.text == TEXTS[0] and from_result.result.model.name == clean.model.name
    np.testing.assert_allclose(from_result.watch_result.frame["before"], from_texts.watch_result.frame["before"])
    other = aw.run("Another text.", model=aw.runner.get_runner())
    with pytest.raises(ValueError, match="different models"):
        aw.AblationWidget([clean, other])
    with pytest.raises(ValueError, match="sentence-pair result is one input"):
        aw.AblationWidget(aw.run(TEXTS[0], PAIRS[0], model=tiny_bert))


def test_a_result_reloads_its_model_by_source_not_by_display_name(tiny_bert, tmp_path, monkeypatch):
    """The bundled model's display name, a folder given relative to another directory, and a dtype: the widget runs
    the model the result came from (the same shared runner, so the clean run is the result itself)."""
    bundled = aw.run(TEXTS[0])
    w = aw.AblationWidget(bundled, watch="drift")
    assert w._runner is get_runner() and w._runner.run(TEXTS[0]) is bundled
    folder = tmp_path / "mine" / "tiny"
    shutil.copytree(tiny_bert, folder)  # a folder no other test has loaded: its name is the one given here
    monkeypatch.chdir(folder.parent)
    relative = aw.run(TEXTS[0], model="tiny", dtype="bfloat16")
    assert relative.model.name == "tiny" and relative.model.source == str(folder.resolve())
    monkeypatch.chdir(tmp_path)  # "tiny" no longer points at the folder
    w = aw.AblationWidget(relative, watch="drift")
    assert w._runner.dtype == torch.bfloat16 and w._runner.run(TEXTS[0]) is relative


def test_a_fine_tuned_result_runs_the_fine_tuned_model(tiny_bert):
    from attnwidgets.studies.finetune import finetune_classifier

    base = get_runner(tiny_bert)
    tuned, _ = finetune_classifier(base, ["good", "bad", "fine", "awful"], [1, 0, 1, 0], epochs=1, batch_size=4,
                                   lr=1e-2, progress=False)
    result = tuned.run(TEXTS[0])
    assert result.model.source is None  # its weights are in memory only: the base model's folder is not it
    w = aw.AblationWidget(result, watch="drift")
    assert w._runner is tuned
    assert not np.allclose(result.attention, base.run(TEXTS[0]).attention)  # the tuned weights differ: a real check


def test_a_result_that_cannot_be_reloaded_says_to_pass_the_model(tiny_bert):
    from attnwidgets.runner.loading import ModelLoadError

    made = aw.AttentionResult.from_arrays(np.full((1, 1, 3, 3), 1 / 3, np.float32), ["a", "b", "c"])
    made = dataclasses.replace(made, text="a b c")
    with pytest.raises(ModelLoadError, match=r"cannot be loaded again.*model="):
        aw.AblationWidget(made)
    w = aw.AblationWidget(made, model=tiny_bert, watch="drift")  # model= says which
    assert w.result.text == "a b c"
