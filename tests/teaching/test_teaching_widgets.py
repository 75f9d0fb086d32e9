"""PositionalExplorer and MaskExplorer in Python: what crosses to the page, trait validation, and the maths shown."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.teaching import masks as M
from attnwidgets.teaching import positional as P
from attnwidgets.viewdata.views.mask_explorer import MASKS, build_mask
from attnwidgets.viewdata.views.positional import ENCODINGS, positional_panels


def unpack(p: dict) -> np.ndarray:
    dtype = {"float32": "<f4", "uint8": "u1"}[p["dtype"]]
    a = np.frombuffer(bytes(p["buffer"]), dtype=dtype).reshape(p["shape"])
    return a.astype(np.float32) * (p.get("scale", 255.0) / 255.0) if p["dtype"] == "uint8" else a


# -- PositionalExplorer -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_encoding_sends_two_binary_panels(encoding):
    w = aw.PositionalExplorer(encoding, length=12, d_model=8, n_heads=4, head=2)
    assert len(w._payload["panels"]) == 2
    for sent, computed in zip(w._payload["panels"], w.panels()):
        assert isinstance(sent["matrix"]["buffer"], memoryview)  # a binary buffer, not a JSON list
        np.testing.assert_array_equal(unpack(sent["matrix"]), computed["matrix"])
    assert w._payload["panels"][1]["matrix"]["shape"] == [12, 12]
    assert w._meta["caption"]


def test_sinusoidal_panels_are_the_teaching_kit_and_toeplitz():
    a, b = positional_panels("sinusoidal", length=20, d_model=16, similarity="dot")
    np.testing.assert_allclose(a["matrix"], P.sinusoidal(20, 16))
    np.testing.assert_allclose(b["matrix"], P.position_similarity(P.sinusoidal(20, 16)), rtol=1e-6)
    assert b["spread"] < 1e-5 and "m − n only" in b["note"]
    assert b["matrix"][0, 0] == pytest.approx(8.0)  # the dot product peaks at d / 2


def test_random_learned_table_has_no_distance_structure_and_a_given_table_is_shown():
    _, b = positional_panels("learned", length=16, d_model=32)
    assert b["spread"] > 0.1 and "not a function" in b["note"]
    table = np.arange(40 * 6, dtype=np.float32).reshape(40, 6)
    w = aw.PositionalExplorer(table=table, table_name="toy")
    assert w.encoding == "sinusoidal" and w.length == 40  # length starts at the table's rows (<= 64)
    w.encoding = "learned"
    np.testing.assert_array_equal(w.panels()[0]["matrix"], table)
    assert w._meta["has_table"] and w._meta["max_length"] == 40
    with pytest.raises(traitlets.TraitError, match=r"2\.\.40"):
        w.length = 41


def test_rope_and_alibi_and_t5_depend_on_offset_only():
    for enc in ("rope", "alibi", "t5"):
        _, b = positional_panels(enc, length=24, d_model=16, n_heads=4, head=1)
        assert b["spread"] < 1e-6, enc
    a, b = positional_panels("alibi", length=6, n_heads=8, head=0, causal=True)
    np.testing.assert_allclose(a["matrix"][0], -0.5 * np.arange(6))  # slope 1/2 for head 0 of 8
    assert np.isnan(b["matrix"][0, 5]) and b["matrix"][5, 0] == pytest.approx(-2.5)
    a, _ = positional_panels("t5", length=5, n_heads=2)
    assert a["matrix"].shape == (2, 9) and a["col_start"] == -4  # offsets -4 .. 4
    np.testing.assert_array_equal(a["extra"][0], P.t5_relative_position_bucket(np.arange(-4, 5)))


def test_positional_traits_validate_and_redraw():
    w = aw.PositionalExplorer(length=10, d_model=8)
    before = w._payload["panels"]
    w.d_model = 12
    assert w._payload["panels"] is not before and w._payload["panels"][0]["matrix"]["shape"] == [10, 12]
    for name, bad in [("encoding", "nope"), ("d_model", 7), ("d_model", 1024), ("length", 1), ("similarity", "l2")]:
        with pytest.raises(traitlets.TraitError):
            setattr(w, name, bad)
    w.n_heads, w.head = 4, 3
    w.n_heads = 2  # the shown head follows
    assert w.head == 1
    with pytest.raises(TypeError, match="unexpected keyword"):
        aw.PositionalExplorer(colour="red")


def test_position_embeddings_of_the_bundled_model():
    table = aw.runner.position_embeddings()
    assert table.shape == (512, 384) and table.dtype == np.float32
    w = aw.PositionalExplorer.from_model(length=32)
    assert w.encoding == "learned" and "512 × 384" in w._meta["table_name"]
    assert w._payload["panels"][0]["matrix"]["shape"] == [32, 384]
    # A trained table: nearby positions are more alike than far ones.
    sim = w.panels()[1]["matrix"]
    assert np.mean(np.diagonal(sim, 1)) > np.mean(np.diagonal(sim, 20))


# -- MaskExplorer -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mask", MASKS)
def test_every_mask_crosses_as_uint8(mask):
    w = aw.MaskExplorer(mask, length=9, window=3)
    sent = w._payload["mask"]
    assert sent["dtype"] == "uint8" and sent["shape"] == [9, 9]
    np.testing.assert_array_equal(unpack(sent) > 0.5, w.mask_array())
    assert w._meta["allowed"] == int(w.mask_array().sum()) and w._meta["total"] == 81


def test_masks_match_the_teaching_kit():
    np.testing.assert_array_equal(build_mask("causal", 5), M.causal_mask(5))
    np.testing.assert_array_equal(build_mask("full", 5), M.full_mask(5))
    np.testing.assert_array_equal(build_mask("sliding_window", 6, window=2, causal=False),
                                  M.sliding_window_mask(6, 2, causal=False))
    g = build_mask("global_local", 8, window=1, causal=False, global_tokens=[0, 5, 99])  # 99: ignored
    assert g[5].all() and g[:, 5].all() and g[0].all()


def test_window_changes_keys_per_query_and_the_sent_mask():
    w = aw.MaskExplorer("sliding_window", length=12, window=2)
    assert w._meta["keys_max"] == 2
    w.window = 5
    assert w._meta["keys_max"] == 5 and int((unpack(w._payload["mask"]) > 0.5).sum(1).max()) == 5
    w.causal = False
    assert w._meta["keys_max"] == 5  # 2 on each side + itself


def test_kv_heads_and_cache():
    w = aw.MaskExplorer(n_heads=8, n_kv_heads=2)
    assert w._meta["kv_heads"] == [0, 0, 0, 0, 1, 1, 1, 1] and w._meta["variant"] == "GQA"
    assert w._meta["cache"] == {"MHA": 2**29, "GQA": 2**27, "MQA": 2**26}  # 2 x 32 layers x heads x 128 x 4096 x 2 B
    w.n_kv_heads = 1
    assert w._meta["variant"] == "MQA"
    with pytest.raises(traitlets.TraitError, match="divide"):
        w.n_kv_heads = 3
    w.n_kv_heads = 4
    w.n_heads = 12  # 4 does divide 12: kept
    assert w.n_kv_heads == 4
    w.n_heads = 6  # 4 does not divide 6: falls back to MQA
    assert w.n_kv_heads == 1 and w._meta["kv_heads"] == [0] * 6
    with pytest.raises(traitlets.TraitError):
        w.mask = "diagonal"


@pytest.mark.parametrize("module", ["attnwidgets.widgets.positional", "attnwidgets.widgets.mask_explorer",
                                    "attnwidgets.runner.positions"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
