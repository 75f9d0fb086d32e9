"""The page's types come from Python's: js/src/generated/wire.ts is what js/scripts/wire_types.py writes from the
views' state dataclasses now (a state changed without regenerating fails here), and what a widget actually sends
has exactly the fields its interface names (so ``tsc`` checks the views against what arrives, not against a wish).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import typing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnwidgets.analysis.qk_space import build_qk_space
from attnwidgets.generation_result import GenerationResult
from attnwidgets.qk_result import QKCapture
from attnwidgets.result import AttentionResult
from attnwidgets.viewdata.compare import make_comparison
from attnwidgets.viewdata.state import to_reply, to_wire, ts_type
from attnwidgets.viewdata.views import (
    REPLIES,
    STATES,
    TRAITS,
    ablation,
    compare,
    entropy_bars,
    fill_mask,
    generation,
    head_cluster_map,
    head_stats_grid,
    head_view,
    heatmap,
    model_view,
    positional,
    profile,
    qk,
    qk_space,
)

ROOT = Path(__file__).resolve().parents[2]
WIRE_TS = ROOT / "js" / "src" / "generated" / "wire.ts"


def generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("wire_types_gen", ROOT / "js" / "scripts" / "wire_types.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def interfaces() -> dict[str, dict[str, bool]]:
    """{interface: {field: required}} read back out of the committed TypeScript."""
    out = {}
    for name, body in re.findall(r"export interface (\w+)[^{]*\{\n(.*?)\n\}", WIRE_TS.read_text(encoding="utf-8"),
                                 flags=re.S):
        out[name] = {m[0]: not m[1] for m in re.findall(r"^  (\w+)(\??):", body, flags=re.M)}
    return out


def test_the_committed_types_are_what_the_script_writes_now():
    assert WIRE_TS.exists(), "run `python js/scripts/wire_types.py` from the repository root"
    assert WIRE_TS.read_text(encoding="utf-8") == generator().render(), (
        "js/src/generated/wire.ts is stale: a view's state dataclass changed; run `python js/scripts/wire_types.py` "
        "and fix what tsc then reports in the views")


def test_every_view_state_has_an_entry_in_views():
    text = WIRE_TS.read_text(encoding="utf-8")
    for view, cls in STATES.items():
        names = [f.name for f in dataclasses.fields(cls)]
        assert names[0] == "payload" and set(names) <= {"payload", "meta"}, cls
        assert re.search(rf"^  {view}: \{{ payload: {cls.__name__.replace('State', 'Payload')}", text, re.M), view


def _fields_match(wire: dict, interface: str, seen: dict[str, dict[str, bool]]) -> None:
    fields = seen[interface]
    assert set(wire) <= set(fields), f"{interface}: Python sends {sorted(set(wire) - set(fields))}, not in the type"
    missing = {f for f, required in fields.items() if required} - set(wire)
    assert not missing, f"{interface}: the type requires {sorted(missing)}, Python did not send them"


def _example_heatmap(words: bool) -> heatmap.HeatmapState:
    w = np.array([[[[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]]], np.float32)
    r = AttentionResult.from_arrays(w, ["a", "##b", "c"])
    return heatmap.heatmap_state(r, heatmap.HeatmapOptions(words=words, discount_sinks=True))


@pytest.mark.parametrize("words", [False, True])
def test_what_the_heatmap_sends_is_what_its_interfaces_name(words):
    seen = interfaces()
    state = _example_heatmap(words)
    wire = to_wire(state)
    _fields_match(wire["payload"], "HeatmapPayload", seen)
    _fields_match(wire["meta"], "HeatmapMeta", seen)
    assert ("labels" in wire["payload"]) is words, "labels travel only at word level (an optional field)"
    assert wire["meta"]["shapes"] == {"self": [1, 1]} and wire["meta"]["sinks"] == [0]
    # The packed map decodes to the numbers the state holds (hand-checked: row 1 of the token-level map).
    m = wire["payload"]["matrix"]
    got = np.frombuffer(m["buffer"], "<f4").reshape(m["shape"])
    if not words:
        assert got[1].tolist() == pytest.approx([0.2, 0.3, 0.5])
    content, buffers = to_reply(heatmap.HeatmapMatrix(state.payload.matrix, 1, 1, 0.5))
    _fields_match({k: v for k, v in content.items() if k not in ("shape", "dtype")}, "HeatmapMatrix", seen)
    assert content["shape"] == m["shape"] and len(buffers) == 1


def test_what_the_ablation_sends_is_what_its_interfaces_name():
    seen = interfaces()
    clean = AttentionResult.from_arrays(np.full((1, 2, 2, 2), 0.5, np.float32), ["a", "b"])
    frame = pd.DataFrame({"item": ["pair 0"], "name": ["cosine"], "before": [0.75], "after": [np.nan],
                          "delta": [np.nan]})
    setup = ablation.ablation_setup("m", {"self": (1, 2)}, {"self": 0}, ["a b"], ["c d"], "pairs")
    state = ablation.ablation_state(setup, ablation.Outcome("pairs", frame, [clean], [clean]),
                                    ablation.AblationView(head=1),
                                    {"edits": [{"stack": "self", "layer": 0, "head": 1, "mode": "zero", "scale": 0.0}]},
                                    seconds=0.25, seq=4)
    wire = to_wire(state)
    _fields_match(wire["payload"], "AblationPayload", seen)
    _fields_match(wire["payload"]["rows"][0], "OutputRow", seen)
    _fields_match(wire["payload"]["map"], "AblationMap", seen)
    _fields_match(wire["payload"]["ablation"]["edits"][0], "AblationEdit", seen)
    assert wire["payload"]["rows"] == [{"item": "pair 0", "label": "pair 0: a b  ↔  c d", "name": "cosine",
                                        "before": 0.75, "after": None, "delta": None}], "NaN crosses as null"
    assert wire["payload"]["map"]["key"] == "self/0/0/1" and wire["payload"]["stacks"] == {"self": [1, 2]}


@pytest.mark.parametrize("words", [False, True])
def test_what_the_head_view_sends_is_what_its_interfaces_name(words):
    seen = interfaces()
    w = np.array([[[[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]]], np.float32)
    r = AttentionResult.from_arrays(w, ["a", "##b", "c"], word_ids=np.array([0, 0, 1]))
    wire = to_wire(head_view.head_view_state(r, head_view.HeadViewOptions(words=words, window=(0, 3))))
    _fields_match(wire["payload"], "HeadViewPayload", seen)
    _fields_match(wire["meta"], "HeadViewMeta", seen)
    assert wire["meta"]["tokens"] == {"self": [["a", "##b", "c"], ["a", "##b", "c"]]}, "tuples cross as lists"
    if words:
        _fields_match(wire["payload"]["labels"], "LineLabels", seen)
        assert wire["payload"]["labels"]["tokens"]["self"][0] == ["ab", "c"]


@pytest.mark.parametrize("window", [(0, 3), (1, 3)])
def test_what_qk_sends_is_what_its_interfaces_name(window):
    seen = interfaces()
    rng = np.random.default_rng(0)
    cap = QKCapture.from_vectors(*rng.normal(size=(3, 2, 3, 4)), ["a", "b", "c"])
    wire = to_wire(qk.qk_state({0: cap}, qk.QKOptions(0, 1, 2, window)))
    _fields_match(wire["payload"], "QKPayload", seen)
    _fields_match(wire["payload"]["arrays"], "QKArrays", seen)
    _fields_match(wire["meta"], "QKMeta", seen)
    mask = wire["payload"]["arrays"]["mask"]
    assert mask["dtype"] == "uint8" and bytes(mask["buffer"]) == b"\xff" * int(np.prod(mask["shape"])), \
        "a boolean mask crosses as uint8 (every key allowed: every byte the top)"
    assert ("keys" in wire["payload"]["arrays"]) is (window != (0, 3)), "keys and outside travel only in a window"


def test_what_the_model_view_sends_is_what_its_interfaces_name():
    seen = interfaces()
    w = np.array([[[[0.5, 0.5], [0.0, 1.0]]]], np.float32)
    r = AttentionResult.from_arrays(w, ["a", "b"])
    state = model_view.model_view_state(r, model_view.ModelViewOptions(thumb_size=4))
    wire = to_wire(state)
    _fields_match(wire["payload"], "ModelViewPayload", seen)
    _fields_match(wire["meta"], "ModelViewMeta", seen)
    thumbs = wire["payload"]["thumbs"]
    assert thumbs["dtype"] == "uint8" and thumbs["shape"] == [1, 1, 2, 2]
    assert list(bytes(thumbs["buffer"])) == [128, 128, 0, 255], "each cell a share of 255 of the head's maximum"
    content, _ = to_reply(model_view.model_view_thumbs(r, "self", model_view.ModelViewOptions(thumb_size=4)))
    _fields_match({k: v for k, v in content.items() if k not in ("shape", "dtype", "scale")}, "ModelViewThumbs", seen)


@pytest.mark.parametrize("selection", [(), (1,)])
def test_what_compare_sends_is_what_its_interfaces_name(selection):
    seen = interfaces()
    a = AttentionResult.from_arrays(np.array([[1.0, 0.0], [0.5, 0.5]], np.float32), ["x", "y"])
    b = AttentionResult.from_arrays(np.array([[1.0, 0.0], [0.25, 0.75]], np.float32), ["x", "y"])
    wire = to_wire(compare.compare_state(make_comparison(a, b), (a, b), compare.CompareOptions(selection=selection)))
    _fields_match(wire["payload"], "ComparePayload", seen)
    _fields_match(wire["meta"], "CompareMeta", seen)
    _fields_match(wire["meta"]["labels"], "CompareLabels", seen)
    assert wire["payload"]["dmax"] == 0.25 and wire["meta"]["query_map"] == [[0, 1], [0, 1]]
    if selection:  # row 1 of B minus row 1 of A, hand-computed
        diff = wire["payload"]["span_diff"]
        assert np.frombuffer(diff["buffer"], "<f4").tolist() == [-0.25, 0.25]
    else:
        assert "span_key" not in wire["payload"], "no selection: no span fields at all"


def test_what_the_profile_sends_is_what_its_interfaces_name():
    seen = interfaces()
    r = AttentionResult.from_arrays(np.array([[1.0, 0.0], [0.25, 0.75]], np.float32), ["Hi", "."])
    wire = to_wire(profile.profile_state(r, profile.ProfileOptions(selection=(1,), combine="sum")))
    _fields_match(wire["payload"], "ProfilePayload", seen)
    _fields_match(wire["payload"]["docs"]["self"], "ProfileDoc", seen)
    w = wire["payload"]["weights"]
    assert np.frombuffer(w["buffer"], "<f4").tolist() == [0.25, 0.75] and wire["payload"]["key"] == "self/0/-1/1:2/sum"


def test_what_the_generation_view_sends_is_what_its_interfaces_name():
    seen = interfaces()
    att = np.tril(np.ones((4, 4), np.float32))
    att /= att.sum(1, keepdims=True)
    r = AttentionResult.from_arrays(att, ["a", "b", "c", "d"], kind="decoder")
    g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d", "e"], np.array([2, 3, 4]),
                         np.array([[2], [3], [4]]), np.array([[0.9], [0.8], [0.7]], np.float32),
                         [["c"], ["d"], ["e"]], text="c d e")
    wire = to_wire(generation.generation_state(g, generation.GenerationOptions()))
    _fields_match(wire["payload"], "GenerationPayload", seen)
    _fields_match(wire["meta"], "GenerationMeta", seen)
    assert wire["payload"]["matrix"]["dtype"] == "float16", "the steps x keys matrix crosses as float16"
    share = to_wire(generation.generation_share(g, [0, 1], "mean", "layer", 0))
    _fields_match(share, "GenerationShare", seen)
    bad = to_wire(generation.generation_share(g, [3], "mean", "layer", 0))  # a generated token: no share
    _fields_match(bad, "GenerationShare", seen)
    assert bad["error"] and "lines" not in bad


def test_what_the_qk_space_view_sends_is_what_its_interfaces_name():
    seen = interfaces()
    rng = np.random.default_rng(3)
    tokens = [["[CLS]", "a", "[SEP]"], ["[CLS]", "the", "dog", "[SEP]"]]
    q = [rng.normal(size=(len(t), 4)) for t in tokens]
    k = [rng.normal(size=(len(t), 4)) for t in tokens]
    w = [np.full((len(t), len(t)), 1 / len(t)) for t in tokens]
    space = build_qk_space(q, k, w, tokens, layer=1, head=0, model="toy")
    wire = to_wire(qk_space.qk_space_state(space))
    _fields_match(wire["payload"], "QKSpacePayload", seen)
    _fields_match(wire["meta"], "QKSpaceMeta", seen)
    assert wire["payload"]["points"]["shape"] == [14, 9], "a query and a key row per token: 2 * 7"
    with pytest.raises(ValueError, match="sentence 2 is out of range: there are 2 sentences"):
        qk_space.sentence_weights(space, 2)


def _uniform3() -> AttentionResult:
    return AttentionResult.from_arrays(np.full((1, 2, 3, 3), 1 / 3, np.float32), ["[CLS]", "hi", "[SEP]"])


def test_what_the_head_stats_grid_sends_is_what_its_interfaces_name():
    from attnwidgets.widgets.head_stats_grid import HeadStatsGrid

    seen = interfaces()
    grid = HeadStatsGrid(_uniform3())
    _fields_match(grid._payload, "HeadStatsPayload", seen)
    _fields_match(grid._meta, "HeadStatsMeta", seen)
    names, stats = grid._meta["names"], grid._payload["stats"]
    assert stats["shape"] == [len(names), 1, 2] and grid._meta["tokens"] == ["[CLS]", "hi", "[SEP]"]
    sep = np.frombuffer(stats["buffer"], "<f4").reshape(stats["shape"])[names.index("sep")]
    assert sep.ravel().tolist() == pytest.approx([1 / 3, 1 / 3]), "uniform over 3 keys: a third on [SEP]"
    assert to_wire(head_stats_grid.head_stats_state(grid.stats, can_words=True, tokens=[]))["meta"]["tokens"] == []


def test_what_the_entropy_bars_send_is_what_their_interfaces_name():
    from attnwidgets.widgets.entropy_bars import EntropyBars

    seen = interfaces()
    bars = EntropyBars(_uniform3())
    _fields_match(bars._payload, "EntropyBarsPayload", seen)
    _fields_match(bars._meta, "EntropyBarsMeta", seen)
    meta = bars._meta
    assert meta["names"] == ["entropy", "entropy_cls", "entropy_last"]
    assert meta["rows"] == [["all", "all rows"], ["cls", "[CLS] row"]], "an encoder with all rows: no last-row choice"
    assert meta["baselines"]["all"] == pytest.approx(np.log(3)), "uniform attention over 3 keys: ln 3 nats"
    got = np.frombuffer(bars._payload["stats"]["buffer"], "<f4")
    assert got.tolist() == pytest.approx([np.log(3)] * 6, rel=1e-6), "3 statistics x 2 heads, each ln 3"
    causal = entropy_bars.available_rows(type(bars.stats)(bars.stats.values, "d", causal=True))
    assert causal == ["all", "last"], "a decoder's first row sees one key: no [CLS] choice"


def test_what_the_head_cluster_map_sends_is_what_its_interfaces_name():
    from attnwidgets.widgets.head_cluster_map import HeadClusterMap

    seen = interfaces()
    frame = pd.DataFrame({"layer": [0, 0], "head": [0, 1], "x": [0.5, -0.5], "y": [0.0, 1.0]})
    view = HeadClusterMap(frame, stats={"sep": np.array([[0.25, 0.75]])})
    _fields_match(view._payload, "HeadClusterMapPayload", seen)
    _fields_match(view._meta, "HeadClusterMapMeta", seen)
    points = view._payload["points"]
    assert np.frombuffer(points["buffer"], "<f4").tolist() == [0.5, 0.0, -0.5, 1.0]
    assert view._meta["colors"] == [["layer", "layer"], ["sep", "sep"]]
    with pytest.raises(ValueError, match="the embedding has 1 heads but the statistics 1 x 2"):
        head_cluster_map.head_cluster_map_state(view.stats, frame.iloc[:1], can_words=False, tokens=[])


def test_what_fill_mask_sends_is_what_its_interfaces_name():
    seen = interfaces()
    rows = np.arange(2 * 1 * 2 * 3, dtype=np.float32).reshape(2, 1, 2, 3)
    view = {"tokens": ["[CLS]", "[MASK]", "[MASK]"], "positions": [1, 2], "model": "toy", "rows": rows,
            "head": "toy's own head.",
            "fills": [{"tokens": ["a", "b"], "probs": [0.75, 0.25]}, {"tokens": ["c", "d"], "probs": [0.5, 0.5]}]}
    wire = to_wire(fill_mask.fill_mask_state(view, "[MASK] [MASK]"))
    _fields_match(wire["payload"], "FillMaskPayload", seen)
    _fields_match(wire["payload"]["fills"][0], "MaskFill", seen)
    _fields_match(wire["meta"], "FillMaskMeta", seen)
    assert wire["meta"] == {"model": "toy", "shape": [2, 1, 2, 3], "head": "toy's own head."}
    assert wire["payload"]["positions"] == [1, 2]
    got = wire["payload"]["rows"]
    assert np.frombuffer(got["buffer"], "<f4")[-3:].tolist() == [9.0, 10.0, 11.0], "mask 1, head 1's row, as sent"
    with pytest.raises(ValueError, match=r"\(masks, layers, heads, tokens\), got shape \(2, 6\)"):
        fill_mask.fill_mask_state({**view, "rows": rows.reshape(2, 6)}, "x")


def test_what_the_mask_explorer_sends_is_what_its_interfaces_name():
    from attnwidgets.widgets.mask_explorer import MaskExplorer

    seen = interfaces()
    w = MaskExplorer("sliding_window", length=5, window=2, padding=1, n_heads=4, n_kv_heads=2)
    _fields_match(w._payload, "MaskExplorerPayload", seen)
    _fields_match(w._meta, "MaskExplorerMeta", seen)
    mask = w._payload["mask"]
    assert mask["dtype"] == "uint8" and list(bytes(mask["buffer"]))[-5:] == [0, 0, 0, 255, 0], \
        "the last query sees the one before (255: allowed, a share of the top), not the [PAD] key (itself)"
    assert w._meta["kv_heads"] == [0, 0, 1, 1] and w._meta["padding"] == 1 and w._meta["variant"] == "GQA"
    # rows 0..4 see 1, 2, 2, 2, 1 keys once the last column is [PAD]: 8 of 25 cells
    assert (w._meta["allowed"], w._meta["total"], w._meta["keys_min"], w._meta["keys_max"]) == (8, 25, 1, 2)


@pytest.mark.parametrize("encoding", ["sinusoidal", "alibi", "t5"])
def test_what_the_positional_explorer_sends_is_what_its_interfaces_name(encoding):
    from attnwidgets.widgets.positional import PositionalExplorer

    seen = interfaces()
    w = PositionalExplorer(encoding, length=4, d_model=4, n_heads=2, head=1, causal=True, per_head_scale=True)
    _fields_match(w._payload, "PositionalPayload", seen)
    _fields_match(w._meta, "PositionalMeta", seen)
    for panel in w._payload["panels"]:
        _fields_match(panel, "PositionalPanel", seen)
    first, second = w._payload["panels"]
    assert ("extra" in first) is (encoding == "t5") and ("row_vmax" in first) is (encoding == "alibi")
    assert "note" in second and "note" not in first and w._meta["table_shape"] is None
    if encoding == "alibi":  # 2 heads: slopes 2^-4, 2^-8; head 1's bias of query 3 on keys 0..3 is -3/256 .. 0
        m = second["matrix"]
        assert np.frombuffer(m["buffer"], "<f4").reshape(m["shape"])[3].tolist() == [-3 / 256, -2 / 256, -1 / 256, 0]
    with pytest.raises(ValueError, match="unknown encoding"):
        positional.positional_state(positional.PositionalOptions("nope"))


def test_every_reply_and_state_dataclass_is_frozen():
    for cls in [*STATES.values(), *(c for group in [*REPLIES.values(), *TRAITS.values()] for c in group)]:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls  # type: ignore[attr-defined]


def test_a_type_the_page_cannot_read_is_a_clear_error():
    with pytest.raises(TypeError, match=r"no TypeScript type for .*set"):
        ts_type(set[int], {})
    with pytest.raises(TypeError, match="at most one array"):
        to_reply(ablation.AblationMap("k", [], [], np.zeros(1), np.zeros(1)))
    assert ts_type(typing.Optional[int], {}) == "number | null"  # noqa: UP045
