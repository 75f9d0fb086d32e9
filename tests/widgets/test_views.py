"""ModelView, HeadView and the heatmap's long-input path without a browser: thumbnails, regions, filters, payloads."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.viewdata.display import (
    MAX_REGION_CELLS,
    block_reduce,
    is_causal,
    mask_future,
    overview,
    region,
    thumbnails,
)
from attnwidgets.viewdata.lines import filter_mask, layer_payload, payload_bytes, unpack


def test_block_reduce_hand_computed_non_square():
    m = np.arange(35, dtype=np.float32).reshape(5, 7)  # 5 queries x 7 keys: a transpose would show
    assert block_reduce(m, 2, "max").tolist() == [[8, 10, 12, 13], [22, 24, 26, 27], [29, 31, 33, 34]]
    # mean of partial edge blocks uses only the cells that exist: block (2, 3) is the single cell 34
    mean = block_reduce(m, 2, "mean")
    assert mean.shape == (3, 4)
    assert mean[0, 0] == pytest.approx((0 + 1 + 7 + 8) / 4)
    assert mean[2, 3] == 34 and mean[2, 0] == pytest.approx((28 + 29) / 2)
    assert block_reduce(m, 1).tolist() == m.tolist()


def test_block_reduce_ignores_masked_cells():
    m = mask_future(np.full((4, 4), 0.25, np.float32))
    small = block_reduce(m, 2)
    assert small[0, 0] == 0.25 and np.isnan(small[0, 1]) and small[1, 0] == 0.25


def test_thumbnails_scale_each_head_to_its_max():
    a = np.zeros((2, 3, 5, 7), np.float32)
    a[1, 2, 4, 6] = 0.2
    a[1, 2, 0, 0] = 0.1
    t, f = thumbnails(a, side=4)
    assert f == 2 and t.shape == (2, 3, 3, 4) and t.dtype == np.uint8
    assert t[1, 2, 2, 3] == 255 and t[1, 2, 0, 0] == 128
    assert t[0, 0].max() == 0  # an all-zero map stays zero, no division by zero


def test_region_slicing_clips_and_refuses_huge_requests():
    m = np.arange(35, dtype=np.float32).reshape(5, 7)
    assert region(m, 1, 3, 5, 99).tolist() == [[12, 13], [19, 20]]
    assert region(m, -4, 1, 0, 2).tolist() == [[0, 1]]
    with pytest.raises(ValueError, match="empty"):
        region(m, 3, 3, 0, 2)
    big = np.zeros((1024, 1024), np.float32)
    with pytest.raises(ValueError, match="smaller tiles"):
        region(big, 0, 1024, 0, 1024)
    assert region(big, 0, 512, 0, 512).size == MAX_REGION_CELLS


def test_causal_masks_and_overview():
    causal = np.tril(np.ones((3, 3), np.float32))
    dec = aw.AttentionResult.from_arrays(causal / causal.sum(-1, keepdims=True), list("abc"), kind="decoder")
    enc = aw.AttentionResult.from_arrays(np.ones((3, 3), np.float32) / 3, list("abc"))
    assert is_causal(dec, "self") and not is_causal(enc, "self")
    block = mask_future(np.ones((2, 2), np.float32), q0=4, k0=5)  # rows 4-5, keys 5-6
    assert np.isnan(block[0]).tolist() == [True, True] and np.isnan(block[1]).tolist() == [False, True]
    m, f = overview(np.ones((100, 80), np.float32))
    assert f == 1 and m.shape == (100, 80)
    m, f = overview(np.ones((4096, 4096), np.float32))
    assert f == 8 and m.shape == (512, 512)


def test_filter_masks():
    seg = np.array([0, 0, 0, 1, 1])
    assert filter_mask(seg, seg, "all").all()
    ab = filter_mask(seg, seg, "AB")
    assert ab.sum() == 3 * 2 and ab[0, 3] and not ab[3, 0] and not ab[0, 0]
    assert filter_mask(seg, seg, "BA").sum() == 2 * 3 and filter_mask(seg, seg, "BB").sum() == 4
    total = sum(filter_mask(seg, seg, w).sum() for w in ("AA", "AB", "BA", "BB"))
    assert total == 25  # the four filters partition the pairs
    # non-square (cross-attention: 2 target queries, 5 source keys)
    assert filter_mask(np.zeros(2, int), seg, "AB").shape == (2, 5)
    with pytest.raises(ValueError, match="unknown sentence filter"):
        filter_mask(seg, seg, "AC")


def _random_result(layers: int, heads: int, n: int, **kw) -> aw.AttentionResult:
    a = np.random.default_rng(0).random((layers, heads, n, n), dtype=np.float32)
    a /= a.sum(-1, keepdims=True)
    return aw.AttentionResult.from_arrays(a, [f"t{i}" for i in range(n)], **kw)


def _state_bytes(widget) -> int:
    """Bytes of the binary buffers in the widget's synced state (what crosses when it is displayed)."""
    from ipywidgets.widgets.widget import _remove_buffers

    _, _, buffers = _remove_buffers(widget.get_state())
    return sum(memoryview(b).nbytes for b in buffers)


def test_model_view_sends_only_thumbnails():
    r = _random_result(12, 12, 512)
    w = aw.ModelView(r)
    sent = _state_bytes(w)
    assert sent == 12 * 12 * 32 * 32  # uint8 thumbnails, nothing else
    assert sent < r.attention.nbytes / 400
    reply, buffers = w.answer({"what": "matrix", "kind": "self", "layer": 3, "head": 5})
    assert reply["shape"] == [512, 512]
    np.testing.assert_array_equal(np.frombuffer(buffers[0], "<f4").reshape(512, 512), r.attention[3, 5])
    with pytest.raises(traitlets.TraitError, match="layer 12 is out of range"):
        w.layer = 12


def test_model_view_encoder_decoder_kinds_and_causal_nan():
    rng = np.random.default_rng(1)
    n, m = 5, 7
    enc = rng.random((2, 3, n, n), dtype=np.float32)
    dec = np.tril(rng.random((2, 3, m, m), dtype=np.float32))
    cross = rng.random((2, 3, m, n), dtype=np.float32)
    enc, dec, cross = (x / x.sum(-1, keepdims=True) for x in (enc, dec, cross))  # rows of probabilities
    r = aw.AttentionResult.from_arrays(enc, list("abcde"), kind="encoder-decoder", target_tokens=list("ABCDEFG"),
                                       decoder_attention=dec, cross_attention=cross)
    w = aw.ModelView(r)
    assert w.kind == "encoder" and w._payload["thumbs"]["shape"] == [2, 3, 5, 5]
    w.kind = "cross"
    assert w._payload["thumbs"]["shape"] == [2, 3, 7, 5]  # target queries x source keys
    w.kind = "decoder"
    full = w.matrix("decoder", 1, 2)
    assert np.isnan(full[0, 1]) and full[1, 0] == dec[1, 2, 1, 0]


def _reply_payload(reply: dict, buffers: list) -> dict:
    """The payload dict back from a "layer" reply (what js/src/shared/lines.ts: payloadFromReply does)."""
    if reply["format"] == "dense":
        return {**reply, "buffer": buffers[0]}
    return {**reply, **{p["name"]: {**p, "buffer": b} for p, b in zip(reply["parts"], buffers, strict=True)}}


def test_head_view_payload_and_layer_request():
    r = _random_result(6, 12, 128)
    w = aw.HeadView(r)
    assert w.heads == list(range(12))
    # Only weights >= min_weight cross, as sparse rows: far less than the dense float16 layer (12 x 128 x 128 x 2).
    assert w._payload["heads"]["format"] == "sparse"
    assert _state_bytes(w) < 12 * 128 * 128 * 2 / 2
    reply, buffers = w.answer({"what": "layer", "kind": "self", "layer": 4})
    assert reply["format"] == "sparse" and reply["shape"] == [12, 128, 128] and reply["floor"] == 0.02
    got = unpack(_reply_payload(reply, buffers))
    a16 = r.attention[4].astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got, np.where(a16 >= 0.02, a16, 0), "every drawable weight, at its float16 value")
    # min_weight 0 keeps every weight: sparse rows would be bigger, so the dense float16 layer crosses, exact.
    w.min_weight = 0.0
    assert w._payload["heads"]["format"] == "dense" and w._payload["heads"]["floor"] == 0.0
    reply, buffers = w.answer({"what": "layer", "kind": "self", "layer": 4})
    assert reply["dtype"] == "float16" and reply["shape"] == [12, 128, 128]
    np.testing.assert_allclose(unpack(_reply_payload(reply, buffers)), r.attention[4], atol=1e-3)
    big = aw.HeadView(_random_result(1, 2, 512), min_weight=0.0)
    assert big._payload["heads"]["dtype"] == "uint8" and big._payload["heads"]["scale"] == 1.0
    with pytest.raises(Exception, match="unknown sentence filter"):
        w.sentence_filter = "XY"
    with pytest.raises(TypeError):
        aw.HeadView(r, colour="red")


def test_layer_payload_sparse_rows_non_square():
    # 2 heads x 5 queries x 7 keys: a transpose or a row mix-up would show.
    a = np.zeros((2, 5, 7), np.float32)
    a[0, 1, 6] = 0.5
    a[0, 4, 0] = 0.3
    a[1, 0, 3] = 0.019  # under the floor: not sent
    a[1, 2, 2] = 0.7
    a[1, 2, 5] = 0.02
    p = layer_payload(a, 0.02)
    assert p["format"] == "sparse" and p["shape"] == [2, 5, 7]
    counts = np.frombuffer(bytes(p["counts"]["buffer"]), np.uint8)
    assert counts.tolist() == [0, 1, 0, 0, 1, 0, 0, 2, 0, 0]
    assert np.frombuffer(bytes(p["keys"]["buffer"]), "<u2").tolist() == [6, 0, 2, 5]
    expect = a.astype(np.float16).astype(np.float32)
    expect[1, 0, 3] = 0
    np.testing.assert_array_equal(unpack(p), expect)
    assert payload_bytes(p) == 10 + 4 * 2 + 4 * 2
    # Many keys: uint32 key positions; a weight whose float16 rounds up to the floor is kept (the page compares
    # float16 values, as it did with dense layers).
    wide = np.zeros((1, 1, 70_000), np.float32)
    wide[0, 0, 69_999] = 0.5
    wide[0, 0, 5] = 0.019999
    q = layer_payload(wide, 0.02)
    assert q["keys"]["dtype"] == "uint32" and unpack(q)[0, 0, 69_999] == 0.5
    assert unpack(q)[0, 0, 5] == np.float16(0.019999) == np.float16(0.02)
    with pytest.raises(ValueError, match="head, query, key"):
        layer_payload(a[0], 0.02)


def test_head_view_words_and_pairs():
    toks = ["[CLS]", "play", "##ing", "[SEP]", "it", "[SEP]"]
    a = np.full((1, 2, 6, 6), 1 / 6, np.float32)
    r = aw.AttentionResult.from_arrays(a, toks, word_ids=np.array([-1, 0, 0, -1, 1, -1]),
                                       segment_ids=np.array([0, 0, 0, 0, 1, 1]))
    w = aw.HeadView(r)
    assert w.mask("AB").sum() == 4 * 2
    w.words = True
    words = ["[CLS]", "playing", "[SEP]", "it", "[SEP]"]
    assert w.labels() == {"tokens": {"self": [words, words]}, "segments": {"self": [[0, 0, 0, 1, 1]] * 2}}
    assert w.answer({"what": "labels", "words": True}) == (w.labels(True), [])
    assert w._payload["labels"] == w.labels(True), "a word-level first view carries its labels"
    assert w._meta["tokens"]["self"][0] == toks, "_meta keeps the token labels: a saved page needs both levels"
    assert w.mask("AB").sum() == 3 * 2, "the filter follows the word level"
    assert w.layer_heads().shape == (2, 5, 5)


def test_heatmap_long_input_overview_and_region():
    n = 2048
    a = np.tril(np.ones((1, 1, n, n), np.float32))
    a /= a.sum(-1, keepdims=True)
    r = aw.AttentionResult.from_arrays(a, [f"t{i}" for i in range(n)], kind="decoder")
    w = aw.AttentionHeatmap(r)
    assert w._payload["factor"] == 4 and w._payload["matrix"]["shape"] == [512, 512]
    assert _state_bytes(w) == 512 * 512 * 4
    reply, buffers = w.answer({"what": "region", "kind": "self", "layer": 0, "head": 0, "words": False,
                               "q0": 1000, "q1": 1256, "k0": 1100, "k1": 1356})
    block = np.frombuffer(buffers[0], "<f4").reshape(256, 256)
    assert reply["q0"] == 1000 and reply["k0"] == 1100
    assert block[200, 0] == pytest.approx(1 / 1201)  # query 1200, key 1100: visible
    assert np.isnan(block[0, 0])  # query 1000, key 1100: the future, masked
    small = aw.AttentionHeatmap(_random_result(1, 1, 20))
    assert small._payload["factor"] == 1


def test_static_twins_return_figures():
    import matplotlib

    matplotlib.use("Agg")
    r = _random_result(2, 3, 6)
    fig = aw.plots.plot_model_view(r, highlight=(1, 2))
    (ax,) = fig.axes  # one image of every head, each tile scaled to its own maximum, one blank cell between tiles
    mosaic = np.asarray(ax.images[0].get_array().filled(np.nan))
    assert mosaic.shape == (2 * 7 - 1, 3 * 7 - 1)
    tile = mosaic[7:13, 14:20]  # layer 1, head 2
    # the page's thumbnails themselves (uint8, each to its own maximum): within half a step of 1/255
    np.testing.assert_allclose(tile, r.attention[1, 2] / r.attention[1, 2].max(), atol=0.5 / 255 + 1e-6)
    assert np.isnan(mosaic[6]).all() and np.isnan(mosaic[:, 13]).all()
    (box,) = ax.patches
    assert box.get_xy() == (14 - 0.5, 7 - 0.5) and (box.get_width(), box.get_height()) == (6, 6)
    fig2 = aw.plots.plot_head_view(r, layer=1, heads=[0, 2], min_weight=0.0)  # one line collection per head
    assert [len(c.get_segments()) for c in fig2.axes[0].collections] == [6 * 6, 6 * 6]
    fig3 = aw.plots.plot_head_view(r, layer=0, queries=[1], min_weight=0.0)
    assert [len(c.get_segments()) for c in fig3.axes[0].collections] == [6] * 3


def test_set_theme_restyles_live_widgets_but_not_those_given_a_theme():
    import gc

    from attnwidgets.widgets import _base

    r = aw.AttentionResult.from_arrays(np.full((1, 2, 3, 3), 1 / 3, np.float32), ["a", "b", "c"])
    follows, given = aw.AttentionHeatmap(r), aw.HeadView(r, theme="light")
    later = aw.ModelView(r)
    try:
        aw.set_theme("lecture")
        assert (follows.theme, given.theme, later.theme) == ("lecture", "light", "lecture")
        later.theme = "light"  # set by hand: its own from now on
        aw.set_theme("light")
        aw.set_theme("lecture")
        assert (follows.theme, given.theme, later.theme) == ("lecture", "light", "light")
        aw.set_theme("light", existing=False)  # only what new widgets start with
        assert follows.theme == "lecture" and aw.EntropyBars(r).theme == "light"
        follows.close()
        aw.set_theme("light")  # a closed widget is left alone, without error
        assert follows not in _base._LIVE
    finally:
        aw.set_theme("light")
    # Closed another way (the front end closing the comm does not call our close()), a widget is not kept alive.
    import ipywidgets

    n = len(_base._LIVE)
    ipywidgets.Widget.close(given)
    del given
    gc.collect()
    assert len(_base._LIVE) == n - 1, "the registry holds widgets weakly"
