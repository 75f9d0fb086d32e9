"""Heatmap and model view at long context: overviews, tiles and thumbnails read a block of rows at a time from a
lazy result (its dense array is never built), equal to the dense computation; GQA groups; sink discount."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.attention_stack import set_dense_budget
from attnwidgets.viewdata import display
from attnwidgets.viewdata.display import block_reduce, mask_future, reduce_head, region_of, thumbnails
from tests.lazy_helpers import dense_twin, lazy_result


@pytest.fixture(scope="module")
def long_pair():
    r = lazy_result(3000, sink=4.0)
    return r, dense_twin(r)


def _send(w, **req):
    """A request as the page sends it, through the widget's message handler; the reply as the page gets it."""
    sent: list = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))
    w._on_msg(w, {"type": "request", "id": 1, **req}, [])
    (content, buffers), = sent
    if "error" in content:
        return content, None
    return content, np.frombuffer(buffers[0], "<f4").reshape(content["shape"])


def _dense_head(twin, layer, head):
    a = twin.attention[layer]
    return mask_future(a.mean(0) if head == -1 else a[head])


@pytest.mark.parametrize("how", ["max", "mean"])
def test_heatmap_on_a_long_lazy_result_builds_nothing_dense(long_pair, no_dense, how):
    r, twin = long_pair
    w = aw.AttentionHeatmap(r, layer=1, head=2, reduce=how)
    p = w._payload
    assert p["factor"] == 6 and p["matrix"]["shape"] == [500, 500] and p["rows_used"] == 6
    set_dense_budget(1 << 40)
    want_first = block_reduce(_dense_head(twin, 1, 2), 6, how)
    set_dense_budget(0)
    got_first = np.frombuffer(p["matrix"]["buffer"], "<f4").reshape(500, 500)
    np.testing.assert_allclose(got_first, want_first, rtol=1e-5, atol=1e-7, equal_nan=True)
    # a head switch, as the page asks for it
    reply, got = _send(w, what="matrix", kind="self", layer=0, head=3, words=False)
    set_dense_budget(1 << 40)
    want = block_reduce(_dense_head(twin, 0, 3), 6, how)
    mean_heads = block_reduce(_dense_head(twin, 0, -1), 6, how)
    set_dense_budget(0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, equal_nan=True)
    assert reply["vmax"] == pytest.approx(float(np.nanmax(want)))
    _, got_mean = _send(w, what="matrix", kind="self", layer=0, head=-1, words=False)
    np.testing.assert_allclose(got_mean, mean_heads, rtol=1e-5, atol=1e-7, equal_nan=True)
    # a tile at full detail
    reply, tile = _send(w, what="region", kind="self", layer=1, head=2, words=False, q0=2000, q1=2256, k0=1900,
                        k1=2156)
    assert (reply["q0"], reply["k0"]) == (2000, 1900) and tile.shape == (256, 256)
    set_dense_budget(1 << 40)
    exact = mask_future(twin.attention[1, 2])[2000:2256, 1900:2156]
    set_dense_budget(0)
    np.testing.assert_allclose(tile, exact, rtol=1e-5, atol=1e-8, equal_nan=True)
    assert np.isnan(tile[0, 101]) and not np.isnan(tile[0, 100])  # query 2000 sees key 2000, not 2001


def test_tiles_outside_the_matrix_are_an_error_reply(long_pair, no_dense):
    r, _ = long_pair
    w = aw.AttentionHeatmap(r)
    reply, data = _send(w, what="region", kind="self", layer=0, head=0, words=False, q0=3000, q1=3256, k0=0, k1=256)
    assert data is None and "outside the 3000 x 3000 map" in reply["error"]
    reply, data = _send(w, what="region", kind="self", layer=0, head=0, words=False, q0=0, q1=256, k0=-512, k1=-256)
    assert data is None and "outside" in reply["error"]
    reply, _ = _send(w, what="region", kind="self", layer=0, head=9, words=False, q0=0, q1=256, k0=0, k1=256)
    assert "head 9 is out of range" in reply["error"]
    reply, edge = _send(w, what="region", kind="self", layer=0, head=0, words=False, q0=2900, q1=3156, k0=0, k1=256)
    assert edge.shape == (100, 256), "a tile across the edge is clipped, not refused"
    with pytest.raises(traitlets.TraitError, match="reduce must be"):
        w.reduce = "median"
    with pytest.raises(traitlets.TraitError, match="outside the 3000 keys"):
        w.discount_sinks = [3000]


@pytest.mark.parametrize("how", ["max", "mean"])
def test_model_view_thumbnails_on_a_long_lazy_result(no_dense, how, monkeypatch):
    r = lazy_result(3000, layers=1, heads=2, kv_heads=1, sink=4.0)
    twin = dense_twin(r)
    monkeypatch.setattr(display, "THUMB_BUDGET", 1 << 40)  # every row read: the exact thumbnails
    w = aw.ModelView(r, layer=0, head=1, reduce=how)
    p = w._payload
    assert p["rows_used"] == p["factor"] == 94
    got = np.frombuffer(p["thumbs"]["buffer"], np.uint8).reshape(p["thumbs"]["shape"])
    set_dense_budget(1 << 40)
    want, factor = thumbnails(mask_future(twin.attention), 32, how)
    exact = mask_future(twin.attention[0, 1])
    set_dense_budget(0)
    assert factor == 94
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1  # float rounding at .5 of a uint8 step
    _, big = _send(w, what="matrix", kind="self", layer=0, head=1)
    np.testing.assert_allclose(big, block_reduce(exact, 6, how), rtol=1e-5, atol=1e-7, equal_nan=True)
    assert w._meta["kv_group_size"] == {"self": 2}


def test_past_the_budget_a_run_of_rows_stands_for_each_block(long_pair, no_dense):
    r, twin = long_pair
    red = reduce_head(r, "self", 1, 2, 6, "max", budget=3000 * 3000 // 3)  # 2 of every 6 rows
    assert red.rows_used == 2 and not red.exact
    set_dense_budget(1 << 40)
    m = mask_future(twin.attention[1, 2])
    set_dense_budget(0)
    rows = np.concatenate([m[b + 2:b + 4] for b in range(0, 3000, 6)])  # the middle two rows of each block
    np.testing.assert_allclose(red.matrix, display.block_reduce_rows(rows, 2, 6, "max"), rtol=1e-6, equal_nan=True)
    assert red.matrix.shape == (500, 500)
    # the default thumbnail budget samples at 3000 tokens x 8 heads; the caption reports it
    w = aw.ModelView(r)
    assert 1 <= w._payload["rows_used"] < w._payload["factor"]


def test_sink_discount_tops_the_scale_at_the_other_keys(no_dense):
    r = lazy_result(1500, sink=6.0, layers=1)
    twin = dense_twin(r)
    w = aw.AttentionHeatmap(r, head=1)
    plain = w._payload["vmax"]
    w.discount_sinks = True
    set_dense_budget(1 << 40)
    over = block_reduce(mask_future(twin.attention[0, 1]), 3, "max")
    rest = mask_future(twin.attention[0, 1])
    rest[:, 0] = np.nan
    set_dense_budget(0)
    assert plain == pytest.approx(float(np.nanmax(over)))
    assert w._payload["vmax"] == pytest.approx(float(np.nanmax(block_reduce(rest, 3, "max"))))
    assert w._payload["vmax"] < 0.5 * plain and w._meta["sinks"] == [0]
    got = np.frombuffer(w._payload["matrix"]["buffer"], "<f4").reshape(500, 500)
    np.testing.assert_allclose(got, over, rtol=1e-5, equal_nan=True)  # the numbers stay; only the scale moves


def test_gqa_groups_and_kv_head(no_dense):
    r = lazy_result(64, heads=8, kv_heads=2)
    w = aw.AttentionHeatmap(r, head=5)
    assert w.kv_head() == 1 and w.kv_head(3) == 0 and w.kv_head(-1) is None
    assert w._meta["kv_group_size"] == {"self": 4}
    assert aw.ModelView(lazy_result(64, heads=4, kv_heads=4))._meta["kv_group_size"] == {"self": 1}


def test_region_of_agrees_with_the_dense_region():
    a = np.random.default_rng(1).random((1, 2, 40, 40)).astype(np.float32)
    a /= a.sum(-1, keepdims=True)
    r = aw.AttentionResult.from_arrays(a, [f"t{i}" for i in range(40)])
    block, q0, k0 = region_of(r, "self", 0, 1, 5, 12, 30, 90)
    assert (q0, k0) == (5, 30)
    np.testing.assert_array_equal(block, a[0, 1, 5:12, 30:40])


def test_sink_shares_blockwise_equal_the_dense_count(no_dense):
    r = lazy_result(700, sink=5.0, layers=2, heads=2, kv_heads=1)
    got = aw.analysis.sink_shares(r)
    set_dense_budget(1 << 40)
    a = dense_twin(r).attention
    set_dense_budget(0)
    np.testing.assert_allclose(got, a[:, :, 1:, 0].mean(-1), rtol=1e-5)  # query 0 sees only the sink: left out
    assert (got > 20 / 700).all(), "key 0 is a sink: far above a uniform share"
    two = aw.analysis.sink_shares(r, keys=[0, 5])
    np.testing.assert_allclose(two, (a[:, :, 1:, 0] + a[:, :, 1:, 5]).mean(-1), rtol=1e-5)  # 1..4 see key 0
    with pytest.raises(ValueError, match="outside the 700 keys"):
        aw.analysis.sink_shares(r, keys=[700])
    grid = aw.HeadStatsGrid.from_sinks(r)
    np.testing.assert_allclose(grid.values("sink"), got)
    assert "share of attention on key 0 (<s>)" in grid.stats.title
    import matplotlib

    matplotlib.use("Agg")
    fig = aw.plots.plot_sinks(r, keys=[0, 5])
    assert "keys 0 (<s>), 5" in fig.axes[0].get_title()


def test_static_twins_at_long_context(long_pair, no_dense):
    import matplotlib

    matplotlib.use("Agg")
    r, _ = long_pair
    fig = aw.plots.plot_heatmap(r, layer=1, head=2, reduce="mean", discount_sinks=True)
    ax = fig.axes[0]
    assert "KV head 1" in ax.get_title()
    assert "sink key 0 clipped" in fig.axes[1].get_ylabel() and "mean of 6x6" in fig.axes[1].get_ylabel()
    fig2 = aw.plots.plot_model_view(lazy_result(1200, heads=4, kv_heads=2), reduce="mean")
    assert [t.get_text() for t in fig2.axes[0].texts] == ["KV head 0", "KV head 1"]


def test_one_heads_layer_rebuilds_that_heads_weights_with_its_key_head_bias_and_sink():
    """``LayerQK.head`` (what a pending view's first map is made from): query head ``h`` alone with the key head it
    reads under GQA, its row of a relative bias and its sink logit; its rows are that head's rows of the layer."""
    from attnwidgets.attention_stack import KeyMask, LayerQK, RelativeBias

    rng = np.random.default_rng(3)
    n, heads = 9, 4
    q = rng.normal(size=(heads, n, 8)).astype(np.float32)
    k = rng.normal(size=(2, n, 8)).astype(np.float32)
    bias = RelativeBias(rng.normal(size=(heads, 2 * n - 1)).astype(np.float32), n - 1)
    layer = LayerQK(q, k, 8 ** -0.5, KeyMask.causal(n, n), bias, softcap=5.0,
                    sinks=rng.normal(size=heads).astype(np.float32))
    every = layer.rows(0, n)
    for h in range(heads):
        one = layer.head(h)
        assert (one.n_heads, one.n_kv_heads) == (1, 1)
        np.testing.assert_allclose(one.rows(0, n)[0], every[h], rtol=1e-6, atol=1e-7)
    with pytest.raises(IndexError, match="4 heads"):
        layer.head(4)


@pytest.mark.parametrize("allowed", [False, True], ids=["intervals", "bool mask"])
@pytest.mark.parametrize("dense_bias", [False, True], ids=["bias by distance", "dense bias"])
def test_rows_at_scattered_queries_equal_those_rows_of_a_block(allowed, dense_bias):
    """``LayerQK.rows_at`` (the rows a sampled overview reads, in one product) gives the rows ``rows`` gives, under a
    sliding window or a bool mask, a relative or dense bias, a soft-cap, sinks and GQA, for every head form."""
    from attnwidgets.attention_stack import KeyMask, LayerQK, LazyStack, RelativeBias, stack_rows_at

    rng = np.random.default_rng(5)
    n, heads = 23, 4
    q = rng.normal(size=(heads, n, 8)).astype(np.float32)
    k = rng.normal(size=(2, n, 8)).astype(np.float32)
    mask = KeyMask.causal(n, n, window=7)
    if allowed:
        grid = mask.rows(0, n, n).copy()
        grid[12, 0] = True  # no longer one interval per row: kept as a bool array
        mask = KeyMask.from_allowed(grid)
        assert mask.allowed is not None
    bias = RelativeBias(rng.normal(size=(heads, 2 * n - 1)).astype(np.float32), n - 1)
    if dense_bias:
        bias = RelativeBias(np.zeros((heads, 0), np.float32), 0, rng.normal(size=(heads, n, n)).astype(np.float32))
    layer = LayerQK(q, k, 8 ** -0.5, mask, bias, softcap=4.0, sinks=rng.normal(size=heads).astype(np.float32))
    every = layer.rows(0, n)
    picked = np.array([1, 2, 5, 11, 12, 22])
    np.testing.assert_allclose(layer.rows_at(picked), every[:, picked], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(layer.rows_at(picked, np.array([3])), every[[3]][:, picked], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(layer.rows_at(picked, np.array([0, 3])), every[[0, 3]][:, picked], rtol=1e-6,
                               atol=1e-7)
    stack = LazyStack((layer,))
    for head in (None, -1, 2):
        want = stack.rows(0, 0, n, head=head)
        np.testing.assert_allclose(stack_rows_at(stack, 0, picked, head), want[..., picked, :], rtol=1e-6,
                                   atol=1e-7)
        dense = np.asarray(stack.rows(0, 0, n))[None]
        np.testing.assert_allclose(stack_rows_at(dense, 0, picked, head), want[..., picked, :], rtol=1e-6,
                                   atol=1e-7)


@pytest.mark.parametrize("how", ["max", "mean"])
@pytest.mark.parametrize("head", [3, -1])
def test_sampled_overview_with_a_short_last_block_equals_the_dense_rows_it_reads(no_dense, how, head):
    """Past the budget the sampled rows of many blocks are read together; a map whose last block is shorter than the
    run of rows (1,003 = 143 x 7 + 2 rows, 3 of every 7 read) reads all of that block's rows, the sink discount too."""
    r = lazy_result(1003, layers=1, heads=4, kv_heads=2, sink=3.0)
    twin = dense_twin(r)
    set_dense_budget(1 << 40)
    m = mask_future(twin.attention[0].mean(0) if head == -1 else twin.attention[0, head])
    set_dense_budget(0)
    red = reduce_head(r, "self", 0, head, 7, how, budget=144 * 1003 * 3, discount=(0,))  # 144 blocks x 3 rows
    assert red.rows_used == 3
    runs = [m[b + 2:b + 5] for b in range(0, 1001, 7)]  # the middle three rows of each whole block
    want = np.concatenate([display.block_reduce_rows(np.concatenate(runs), 3, 7, how),
                           display.block_reduce_rows(m[1001:], 2, 7, how)])
    np.testing.assert_allclose(red.matrix, want, rtol=1e-5, atol=1e-7, equal_nan=True)
    read = np.concatenate([*runs, m[1001:]])
    read[:, 0] = np.where(np.isnan(read[:, 0]), np.nan, 0)  # the sink key discounted
    top = np.concatenate([display.block_reduce_rows(read[:-2], 3, 7, how),
                          display.block_reduce_rows(read[-2:], 2, 7, how)])
    assert red.vmax == pytest.approx(float(np.nanmax(top)), rel=1e-5)
