"""AttentionProfile, its numbers (viewdata.profile) and its static twin (plot_profile): checked against hand
computation on a small result, against the dense twin on a lazy one that cannot build its dense attention, and
with bad input and hostile token text."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets
from lazy_helpers import dense_twin, lazy_result

import attnwidgets as aw
from attnwidgets.attention_stack import dense_budget, set_dense_budget
from attnwidgets.result import AttentionResult
from attnwidgets.viewdata.profile import (
    check_span,
    document_pieces,
    query_profile,
    unit_of,
    unit_starts,
    unit_sums,
)

# 1 layer x 2 heads over 6 tokens (2 sentences); rows sum to 1.
TOKENS = ["The", " cat", ".", " It", " sat", "!"]


@pytest.fixture
def small() -> AttentionResult:
    rng = np.random.default_rng(3)
    a = rng.random((2, 2, 6, 6)).astype(np.float32)
    a /= a.sum(-1, keepdims=True)
    return AttentionResult.from_arrays(a, TOKENS)



def test_profile_is_the_mean_over_span_rows_and_heads_by_hand(small):
    a = small.attention
    # one head, one query row: that row
    np.testing.assert_allclose(query_profile(small, 1, 4, head=0), a[1, 0, 4], rtol=1e-6)
    # span 2..5 of head 1: the mean of rows 2, 3, 4
    by_hand = (a[1, 1, 2] + a[1, 1, 3] + a[1, 1, 4]) / 3
    np.testing.assert_allclose(query_profile(small, 1, (2, 5), head=1), by_hand, rtol=1e-6)
    # mean of heads, and a head list
    np.testing.assert_allclose(query_profile(small, 0, (0, 2), head=-1), a[0, :, 0:2].mean(axis=(0, 1)), rtol=1e-6)
    np.testing.assert_allclose(query_profile(small, 0, (0, 2), head=[1]), a[0, 1, 0:2].mean(0), rtol=1e-6)
    # reading one row at a time gives the same numbers
    np.testing.assert_allclose(query_profile(small, 1, (0, 6), head=-1, rows=1),
                               query_profile(small, 1, (0, 6), head=-1), rtol=1e-6)
    assert query_profile(small, 0, (1, 6), -1).sum() == pytest.approx(1.0, abs=1e-5)


def test_sentences_and_paragraphs_sum_their_keys_by_hand(small):
    assert unit_starts(TOKENS, "sentence").tolist() == [0, 3]
    w = query_profile(small, 0, 5, head=0)
    sums = unit_sums(w, unit_starts(TOKENS, "sentence"))
    assert sums.tolist() == pytest.approx([w[0] + w[1] + w[2], w[3] + w[4] + w[5]])
    assert unit_starts(TOKENS, "paragraph").tolist() == [0]
    doc = ["A", " b", ".", "\n\n", "C", " d", "?", " \"E", ".\"", " F", "\n", "\n", "G"]
    assert unit_starts(doc, "sentence").tolist() == [0, 4, 7, 9, 12]
    assert unit_starts(doc, "paragraph").tolist() == [0, 4, 12]
    assert unit_of([0, 4, 12], 5, 13) == (4, 12) and unit_of([0, 4, 12], 12, 13) == (12, 13)
    # special tokens join the unit they touch instead of standing alone
    bert = ["[CLS]", "hi", ".", "yes", ".", "[SEP]"]
    assert unit_starts(bert, "sentence", [True, False, False, False, False, True]).tolist() == [0, 3]


def test_widget_shows_the_numbers_of_viewdata(small):
    w = aw.AttentionProfile(small, layer=1, head=0, query=(2, 4), unit="sentence")
    assert w.query == [2, 4] and w.selected == []
    expected = small.attention[1, 0, 2:4].mean(0)
    np.testing.assert_allclose(np.frombuffer(bytes(w._payload["weights"]["buffer"]), np.float32), expected, rtol=1e-6)
    assert w.profile().tolist() == pytest.approx([expected[:3].sum(), expected[3:].sum()], rel=1e-5)
    assert w._payload["docs"]["self"]["sentence"] == [0, 3]
    reply, buffers = w.answer({"what": "profile", "kind": "self", "layer": 0, "head": -1, "q0": 5, "q1": 6})
    np.testing.assert_allclose(np.frombuffer(bytes(buffers[0]), np.float32), small.attention[0, :, 5].mean(0),
                               rtol=1e-6)
    assert reply["shape"] == [6]
    assert w.region(4) == (3, 6) and w.region(4, "token") == (4, 5)
    # the default query is the last token that is not special
    assert aw.AttentionProfile(small).query == [5, 6]


def test_lazy_8k_style_result_never_builds_dense_attention(no_dense):
    lazy = lazy_result(300, layers=2, heads=4, kv_heads=2, seed=1)
    twin = dense_twin(lazy)
    with pytest.raises(aw.AttentionTooLargeError):
        _ = lazy.attention
    w = aw.AttentionProfile(lazy, layer=1, head=-1, query=(40, 260), unit="sentence")
    set_dense_budget(1 << 30)
    dense = twin.attention[1, :, 40:260].mean(axis=(0, 1))
    set_dense_budget(0)
    np.testing.assert_allclose(w.weights(), dense, atol=1e-6)
    np.testing.assert_allclose(w.weights(head=[0, 3]), dense_head_list(twin, [0, 3]), atol=1e-6)
    starts = w.unit_starts()
    assert starts[0] == 0 and len(starts) > 10  # the lazy helper's tokens have a "." every 11
    np.testing.assert_allclose(w.profile(), np.add.reduceat(dense.astype(np.float64), starts), atol=1e-5)
    assert len(w._export_requests("all")) == 2 * 5
    fig = aw.plots.plot_profile(lazy, 1, [0, 3], query=(40, 260), unit="sentence")
    assert "heads [0, 3]" in fig.axes[0].get_title()


def dense_head_list(twin: AttentionResult, heads: list[int]) -> np.ndarray:
    before = dense_budget()
    set_dense_budget(1 << 30)
    try:
        return twin.attention[1, heads, 40:260].mean(axis=(0, 1))
    finally:
        set_dense_budget(before)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"query": 6}, traitlets.TraitError, r"query 6 is out of range: there are 6 query tokens \(0..5\)"),
    ({"query": (3, 3)}, traitlets.TraitError, r"query span \(3, 3\) is empty"),
    ({"query": (4, 9)}, traitlets.TraitError, r"query span \(4, 9\) is out of range"),
    ({"query": "cat"}, traitlets.TraitError, "query must be a token index or a"),
    ({"unit": "word"}, traitlets.TraitError, r"unknown unit 'word'; choose one of \('token', 'sentence'"),
    ({"kind": "cross"}, traitlets.TraitError, r"this result has no 'cross' attention; it has \['self'\]"),
    ({"layer": 2}, traitlets.TraitError, r"layer 2 is out of range: there are 2 layers"),
    ({"head": 2}, traitlets.TraitError, r"head 2 is out of range"),
    ({"selected": [4, 2]}, traitlets.TraitError, r"selected must be \[\] or a key range"),
])
def test_bad_input_is_a_clear_error(small, kwargs, error, match):
    with pytest.raises(error, match=match):
        aw.AttentionProfile(small, **kwargs)


def test_bad_input_to_the_functions_and_the_plot(small):
    with pytest.raises(ValueError, match="is empty"):
        check_span((2, 1), 6)
    with pytest.raises(ValueError, match="heads \\[\\] is empty"):
        query_profile(small, 0, 1, head=[])
    with pytest.raises(ValueError, match="repeat a head"):
        query_profile(small, 0, 1, head=[1, 1])
    with pytest.raises(ValueError, match="unknown unit"):
        aw.plots.plot_profile(small, unit="words")
    with pytest.raises(ValueError, match="out of range"):
        aw.plots.plot_profile(small, query=(0, 7))
    with pytest.raises(TypeError, match="AttentionProfile takes an AttentionResult"):
        aw.AttentionProfile("some text")
    w = aw.AttentionProfile(small)
    with pytest.raises(traitlets.TraitError, match="is empty"):
        w.query = (1, 1)
    assert w.query == [5, 6], "a refused query leaves the view as it was"


def test_cross_attention_profiles_the_source_for_target_queries():
    rng = np.random.default_rng(0)
    enc = rng.dirichlet(np.ones(4), size=(1, 2, 4)).astype(np.float32)
    dec = np.tril(np.ones((1, 2, 3, 3), np.float32))
    dec /= dec.sum(-1, keepdims=True)
    cross = rng.dirichlet(np.ones(4), size=(1, 2, 3)).astype(np.float32)
    r = AttentionResult.from_arrays(enc, ["Le", " chat", ".", "</s>"], kind="encoder-decoder",
                                    target_tokens=["The", " cat", "."], decoder_attention=dec, cross_attention=cross)
    w = aw.AttentionProfile(r, kind="cross", query=(1, 3), head=1)
    np.testing.assert_allclose(w.weights(), cross[0, 1, 1:3].mean(0), rtol=1e-6)
    assert w._payload["docs"]["cross"]["queries"] == ["The", " cat", "."]
    w.kind = "decoder"
    assert w.query == [2, 3] and len(w.weights()) == 3


def test_link_heatmap_zooms_it_to_the_clicked_region(small):
    p, h = aw.AttentionProfile(small, query=4), aw.AttentionHeatmap(small)
    link = p.link_heatmap(h, selection=False)
    p.selected = [0, 3]
    assert h.zoom == [3, 6, 0, 3]  # three rows around the query (kept inside the matrix), the sentence's keys
    link.unlink()
    p.selected = [3, 6]
    assert h.zoom == [3, 6, 0, 3], "unlinked: the heatmap stays"
    with pytest.raises(TypeError, match="takes an AttentionHeatmap"):
        p.link_heatmap(p)
    with pytest.raises(traitlets.TraitError, match="zoom must be"):
        h.zoom = [3, 1, 0, 2]
    both = p.link_heatmap(h)  # with the selection: layer and head follow too
    assert h.head == -1
    both.unlink()


def test_hostile_token_text_stays_text(tmp_path):
    hostile = ["<img src=x onerror=alert(1)>", " <script>alert(2)</script>", ".", " ok"]
    a = np.full((1, 1, 4, 4), 0.25, np.float32)
    r = AttentionResult.from_arrays(a, hostile)
    w = aw.AttentionProfile(r)
    assert w._payload["docs"]["self"]["pieces"][0] == hostile[0]  # sent as data, drawn with textContent
    text = aw.save_html(w, tmp_path / "p.html").read_text(encoding="utf-8")
    assert "<img src=x" not in text and "<script>alert" not in text


def test_document_pieces_read_like_text():
    assert "".join(document_pieces(["[CLS]", "the", "play", "##ing", "cat", ",", "it", "[SEP]"],
                                   [-1, 0, 1, 1, 2, 3, 4, -1], [True] + [False] * 6 + [True])) == \
        "[CLS] the playing cat, it [SEP]"
    assert document_pieces(["Hello", " world", "\n\n", "Bye"], [0, 1, 2, 3]) == ["Hello", " world", "\n\n", "Bye"]


def test_static_twin_draws_the_profile(small):
    fig = aw.plots.plot_profile(small, 1, 0, query=(2, 4), unit="sentence", theme="lecture")
    ax = fig.axes[0]
    assert ax.get_title().endswith("· layer 1 · head 0 · 6 tokens")  # the page's title; the span is its caption
    assert "attention per sentence from the mean of 2 rows" in " ".join(fig.axes[1].get_xlabel().split())
    w = query_profile(small, 1, (2, 4), 0)
    heights = sorted(round(float(t.xy[1]), 5) for t in ax.texts)
    assert heights == sorted(round(float(v), 5) for v in [w[:3].sum(), w[3:].sum()])
    assert aw.AttentionProfile(small)._repr_mimebundle_() is not None
