"""AttentionHeatmap on the Python side: what crosses to the page, the request protocol, validation, the static twin."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.viewdata.wire import pack


def crafted() -> aw.AttentionResult:
    """2 layers x 3 heads over 5 tokens, every head different, rows summing to 1."""
    rng = np.random.default_rng(0)
    a = rng.random((2, 3, 5, 5)).astype(np.float32)
    a /= a.sum(-1, keepdims=True)
    return aw.AttentionResult.from_arrays(a, ["[CLS]", "un", "##believ", "##able", "[SEP]"],
                                          word_ids=np.array([-1, 0, 0, 0, -1]))


def unpack(p: dict) -> np.ndarray:
    dtype = {"float32": "<f4", "float16": "<f2", "uint8": "u1"}[p["dtype"]]
    return np.frombuffer(bytes(p["buffer"]), dtype=dtype).reshape(p["shape"])


def test_pack_round_trips():
    a = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], np.float32)  # 2 x 3: a transpose would show
    np.testing.assert_array_equal(unpack(pack(a)), a)
    np.testing.assert_allclose(unpack(pack(a, "float16")), a, atol=1e-3)
    q = pack(a, "uint8")
    np.testing.assert_allclose(unpack(q) / 255 * q["scale"], a, atol=q["scale"] / 255)
    with pytest.raises(ValueError, match="unknown dtype"):
        pack(a, "int64")


def test_only_the_head_on_screen_crosses_up_front():
    r = crafted()
    w = aw.AttentionHeatmap(r, layer=1, head=2)
    assert w._payload["key"] == "self/1/2/t"
    np.testing.assert_array_equal(unpack(w._payload["matrix"]), r.attention[1, 2])
    assert len(w._payload["matrix"]["buffer"]) == 5 * 5 * 4  # one head, not 2 x 3 of them
    assert w._meta["shapes"] == {"self": [2, 3]}
    assert w._meta["tokens"]["self"][0] == r.tokens


def test_requests_answer_any_head_and_the_mean():
    r = crafted()
    w = aw.AttentionHeatmap(r)
    content, buffers = w.answer({"what": "matrix", "kind": "self", "layer": 1, "head": 0})
    got = np.frombuffer(bytes(buffers[0]), "<f4").reshape(content["shape"])
    np.testing.assert_array_equal(got, r.attention[1, 0])
    content, buffers = w.answer({"what": "matrix", "kind": "self", "layer": 0, "head": -1})
    got = np.frombuffer(bytes(buffers[0]), "<f4").reshape(content["shape"])
    np.testing.assert_allclose(got, r.attention[0].mean(0), rtol=1e-6)
    with pytest.raises(ValueError, match="unknown request"):
        w.answer({"what": "nope"})


def test_errors_reach_the_page_as_replies():
    w = aw.AttentionHeatmap(crafted())
    sent = []
    w.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    w._on_msg(w, {"type": "request", "id": 7, "what": "matrix", "kind": "self", "layer": 9, "head": 0}, [])
    assert sent[0]["id"] == 7 and "layer 9 is out of range" in sent[0]["error"]


def test_word_level_switch_merges_pieces():
    r = crafted()
    w = aw.AttentionHeatmap(r, layer=0, head=1)
    w.words = True
    words = ["[CLS]", "unbelievable", "[SEP]"]
    assert w.labels()["self"] == [words, words]
    assert w._meta["tokens"]["self"][0] == r.tokens, "_meta keeps the token labels: a saved page needs both levels"
    assert w._payload["key"].endswith("/w") and w._payload["labels"]["tokens"]["self"][0] == words
    assert w.answer({"what": "labels", "words": True}) == ({"tokens": {"self": [words, words]}}, [])
    m = w.matrix()
    assert m.shape == (3, 3)
    a = r.attention[0, 1]
    # to a word: sum over its pieces (columns); from a word: mean over its pieces (rows)
    assert m[1, 1] == pytest.approx(a[1:4, 1:4].sum(1).mean(), rel=1e-5)
    assert m[0, 1] == pytest.approx(a[0, 1:4].sum(), rel=1e-5)
    np.testing.assert_allclose(m.sum(1), 1.0, atol=1e-5)


def test_validation_and_unknown_kwargs():
    r = crafted()
    with pytest.raises(TypeError, match="unexpected keyword"):
        aw.AttentionHeatmap(r, colour="red")
    with pytest.raises(TypeError, match="AttentionResult"):
        aw.AttentionHeatmap(r.attention)  # type: ignore[arg-type]
    w = aw.AttentionHeatmap(r)
    with pytest.raises(traitlets.TraitError, match="head 3 is out of range"):
        w.head = 3
    with pytest.raises(traitlets.TraitError, match="layer 2 is out of range"):
        w.layer = 2
    with pytest.raises(traitlets.TraitError, match="no 'cross' attention"):
        w.kind = "cross"
    with pytest.raises(Exception, match="unknown theme"):
        w.theme = "neon"
    assert (w.layer, w.head, w.kind) == (0, 0, "self")


def test_encoder_decoder_kinds(tiny_bart):
    r = aw.run("The cat sat.", target="Le chat.", model=tiny_bart)
    w = aw.AttentionHeatmap(r)
    assert w.kind == "encoder" and w._meta["kinds"] == ["encoder", "decoder", "cross"]
    w.kind = "cross"
    assert w.matrix().shape == (len(r.target_tokens), len(r.tokens))
    assert w._meta["tokens"]["cross"] == [r.target_tokens, r.tokens]


def test_lecture_theme_is_global_default():
    r = crafted()
    aw.set_theme("lecture")
    try:
        assert aw.AttentionHeatmap(r).theme == "lecture"
    finally:
        aw.set_theme("light")
    assert aw.AttentionHeatmap(r).theme == "light"


def test_static_twin_draws_the_same_matrix():
    import matplotlib

    matplotlib.use("Agg")
    r = crafted()
    fig = aw.plots.plot_heatmap(r, layer=1, head=2)
    ax = fig.axes[0]
    drawn = ax.collections[0].get_array().reshape(5, 5)
    np.testing.assert_allclose(drawn, r.attention[1, 2], rtol=1e-6)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["[CLS]", "un", "##believ", "##able", "[SEP]"]
    assert "layer 1 · head 2" in ax.get_title()
    fig2 = aw.plots.plot_heatmap(r, layer=0, head=-1, theme="lecture")
    np.testing.assert_allclose(fig2.axes[0].collections[0].get_array().reshape(5, 5), r.attention[0].mean(0),
                               rtol=1e-6)
