"""Windows of long inputs in HeadView and QKStepThrough (attnwidgets/viewdata/windows.py): what crosses equals the
dense attention's rows, a lazy result's dense attention is never built, far keys keep the strongest line outside the
window, the window follows a selection, and bad windows are refused. GQA groups reach the pages' metadata."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets
from lazy_helpers import dense_twin, lazy_result

import attnwidgets as aw
from attnwidgets.attention_stack import set_dense_budget
from attnwidgets.qk_result import QKCapture
from attnwidgets.viewdata.lines import unpack, window_heads
from attnwidgets.viewdata.windows import check_window, far_keys, window_around


def _reply_payload(content, buffers):
    out = dict(content)
    for part, buf in zip(content["parts"], buffers):
        out[part["name"]] = {"buffer": buf, "dtype": part["dtype"], "shape": part["shape"]}
    return out


def test_lazy_head_view_sends_a_window_equal_to_the_dense_rows(no_dense):
    r = lazy_result(5000, sink=10.0)
    with pytest.raises(aw.AttentionTooLargeError):
        r.attention  # noqa: B018 - the budget really is 0
    w = aw.HeadView(r, layer=1)
    assert w.window == [0, 64] and w.long
    payload = w._payload["heads"]
    assert payload["shape"] == [4, 64, 64] and w._payload["key"] == "self/1/t/0-64"
    content, buffers = w.answer({"what": "layer", "kind": "self", "layer": 0, "window": [100, 164]})
    info = content["window"]
    assert info["q"] == [100, 164] and info["k"] == [100, 164] and 0 in info["far"]
    drawn = unpack(_reply_payload(content, buffers))
    set_dense_budget(1 << 40)
    dense = dense_twin(r).attention[0][:, 100:164]
    cols = [*range(100, 164), *info["far"]]
    expected = dense[:, :, cols]
    # What crosses is every weight >= min_weight, as float16.
    kept = np.where(expected.astype(np.float16).astype(np.float32) >= w.min_weight, expected, 0)
    np.testing.assert_allclose(drawn, kept, atol=1e-3)
    # The far keys are the strongest outside the window (over heads and the window's queries).
    outside = dense.max(axis=(0, 1))
    outside[100:164] = -1
    assert info["far"] == sorted(np.argsort(-outside)[:3].tolist())


def test_far_keys_hand_computed():
    rows = np.zeros((1, 2, 8), np.float32)
    rows[0, 0, 1] = 0.5
    rows[0, 1, 7] = 0.3
    rows[0, 1, 6] = 0.01
    rows[0, :, 3:5] = 0.9
    assert far_keys(rows, (3, 5)) == [1, 6, 7]
    assert far_keys(rows, (3, 5), floor=0.02) == [1, 7]
    assert far_keys(rows, (0, 8)) == []
    identity = aw.AttentionResult.from_arrays(np.eye(8, dtype=np.float32)[None, None], list("abcdefgh"))
    a, info = window_heads(identity, "self", 0, (2, 4), far=2)
    assert info == {"q": [2, 4], "k": [2, 4], "far": [], "n": [8, 8]}  # the identity has no weight outside
    assert a.tolist() == [[[1.0, 0.0], [0.0, 1.0]]]


def test_window_follows_selection_and_buttons_semantics(no_dense):
    r = lazy_result(3000)
    w = aw.HeadView(r, selected=[2500])
    assert w.window == list(window_around([2500], 3000)) == [2468, 2532]
    w.window = [10, 30]
    w.selected = [12]
    assert w.window == [10, 30], "a selection inside the window leaves it"
    w.selected = [1000, 1010]
    assert w.window == [995, 1015], "outside: the window moves to it, keeping its width"
    assert w._view_key("self", 0, False, w.window) == "self/0/t/995-1015"
    req = w._export_requests("view")
    assert req == [{"what": "layer", "kind": "self", "layer": 0, "words": False, "window": [995, 1015]}]


def test_bad_windows_are_refused(no_dense):
    w = aw.HeadView(lazy_result(1000))
    for bad, msg in (([5, 5], "0 <= start < stop"), ([0, 1001], "0 <= start < stop"), ([0, 300], "at most 256"),
                     ([1.5, 3], "expected an int"), ([1], "two token positions")):
        with pytest.raises(traitlets.TraitError, match=msg):
            w.window = bad
    with pytest.raises(traitlets.TraitError, match="word level is not shown in windows"):
        w.words = True
    assert check_window([0, 400], 400) == (0, 400), "the whole of an input up to 512 tokens is one window"


def test_short_dense_inputs_keep_the_whole_view():
    rng = np.random.default_rng(1)
    a = rng.random((2, 3, 20, 20)).astype(np.float32)
    a /= a.sum(-1, keepdims=True)
    r = aw.AttentionResult.from_arrays(a, [f"t{i}" for i in range(20)])
    w = aw.HeadView(r)
    assert w.window == [0, 20] and not w.windowed()
    assert w._payload["key"] == "self/0/t" and "window" not in w._payload["heads"]
    # A narrower window on a short input is drawn as a window too, with the same numbers.
    w.window = [5, 10]
    content, buffers = w.answer({"what": "layer", "kind": "self", "layer": 1, "window": [5, 10]})
    got = unpack(_reply_payload(content, buffers)) if content["format"] == "sparse" else None
    cols = [*range(5, 10), *content["window"]["far"]]
    expected = a[1, :, 5:10][:, :, cols]
    if got is None:  # dense format
        got = np.frombuffer(bytes(buffers[0]), "<f2").astype(np.float32).reshape(content["shape"])
        np.testing.assert_allclose(got, expected, atol=1e-3)
    else:
        np.testing.assert_allclose(got, np.where(expected >= 0.02 - 1e-4, expected, 0), atol=2e-3)


def test_plot_head_view_of_a_lazy_result_draws_the_window(no_dense):
    r = lazy_result(2000, sink=10.0)
    fig = aw.plots.plot_head_view(r, 1, [0], window=(100, 120))
    title = fig.axes[0].get_title()
    assert "tokens 100–119 of 2000" in title
    labels = [t.get_text() for t in fig.axes[0].texts]
    # the window's positions beside its tokens, muted, as the page writes them (paint.ts paintQueries)
    assert labels[1] == "100" and any(t.startswith("#0 ") for t in labels), "the sink is a far key"
    set_dense_budget(1 << 40)
    a = dense_twin(r).attention[1, 0, 100:120]
    n_far = sum(t.startswith("#") for t in labels)
    far = [int(t.split()[0][1:]) for t in labels if t.startswith("#")]
    cols = [*range(100, 120), *far]
    assert len(fig.axes[0].collections[0].get_segments()) == int((a[:, cols] >= 0.02).sum()) and n_far >= 1


def _long_capture(n=800, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(4, n, 8)), rng.normal(size=(2, n, 8)), rng.normal(size=(2, n, 8))
    k[:, 0] = 4 * np.abs(q).mean((0, 1))  # a sink-ish key 0
    q = np.abs(q)
    return QKCapture.from_vectors(q, k, v, [f"w{i}" for i in range(n)], mask=np.tril(np.ones((n, n), bool)))


def test_qk_window_on_a_long_capture():
    cap = _long_capture()
    w = aw.QKStepThrough(cap, head=2)
    assert w.query == 799 and w.window == [736, 800] and w.long
    arrays = w._payload["arrays"]
    assert w._payload["key"] == "0/2/799/736-800"
    assert arrays["logits"]["shape"][0] == 1 and arrays["k"]["shape"][0] >= 64
    vals = w.window_values(head=2, query=400)
    w.query = 400
    assert w.window == [368, 432], "a query outside the window moves it"
    vals = w.window_values()
    keys = vals["keys"]
    assert keys[:64].tolist() == list(range(368, 432)) and 0 in keys[64:].tolist()
    np.testing.assert_allclose(vals["weights"][0], cap.weights[2, 400, keys], atol=1e-7)
    np.testing.assert_allclose(vals["logits"][0], cap.logits[2, 400, keys], atol=1e-6)
    np.testing.assert_allclose(vals["k"], cap.k[1, keys])
    outside = cap.weights[2, 400].sum() - cap.weights[2, 400, 368:432].sum()
    assert abs(float(vals["outside"][0]) - outside) < 1e-5
    content, buffers = w.answer({"what": "qk", "layer": 0, "head": 1, "query": 10, "window": [0, 64]})
    names = [a["name"] for a in content["arrays"]]
    assert names[-2:] == ["keys", "outside"] and len(buffers) == len(names)
    with pytest.raises(traitlets.TraitError, match="at most 256"):
        w.window = [0, 400]
    fig = aw.plots.plot_qk(cap, 2, 400)
    assert "keys 368–431 of 800" in fig._suptitle.get_text()


def test_short_capture_unchanged():
    rng = np.random.default_rng(0)
    cap = QKCapture.from_vectors(rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4)),
                                 list("abcde"))
    w = aw.QKStepThrough(cap)
    assert w.window == [0, 5] and not w.windowed() and w._payload["key"] == "0/0"
    assert w._payload["arrays"]["logits"]["shape"] == [5, 5]
    assert w._export_requests("view") == [{"what": "qk", "layer": 0, "head": 0}]


def test_gqa_groups_in_meta(no_dense):
    w = aw.HeadView(lazy_result(100, heads=8, kv_heads=2))
    assert w._meta["n_kv_heads"] == 2 and w._meta["long"]
    a = np.full((1, 4, 3, 3), 1 / 3, np.float32)
    assert aw.HeadView(aw.AttentionResult.from_arrays(a, list("abc")))._meta["n_kv_heads"] == 0
