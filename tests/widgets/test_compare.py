"""Comparing two results: token alignment, the aligned maps, B − A, JS divergence and cosine per head, the
AttentionCompare view and its static twin, and the bad inputs each refuses (issue 16, part 4)."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.analysis.compare import align_tokens, compare_attention, token_key
from attnwidgets.result import AttentionResult
from attnwidgets.viewdata.compare import compare_head, compare_labels
from tests.lazy_helpers import dense_twin, lazy_result


def _result(att: np.ndarray, tokens: list[str], **kw) -> AttentionResult:
    return AttentionResult.from_arrays(np.asarray(att, np.float32), tokens, **kw)


def _random(tokens: list[str], layers: int = 2, heads: int = 3, seed: int = 0, **kw) -> AttentionResult:
    rng = np.random.default_rng(seed)
    n = len(tokens)
    return _result(rng.dirichlet(np.ones(n), size=(layers, heads, n)), tokens, **kw)


# -- alignment -------------------------------------------------------------------------------------------------------

def test_the_cat_and_the_cats_align_at_everything_but_cat():
    a = ["[CLS]", "The", "cat", "sat", "[SEP]"]
    b = ["[CLS]", "The", "cats", "sat", "[SEP]"]
    al = align_tokens(a, b)
    assert list(zip(al.a_index.tolist(), al.b_index.tolist())) == [(0, 0), (1, 1), (3, 3), (4, 4)]
    assert al.matched_a.tolist() == [True, True, False, True, True]
    assert not al.identity


def test_inputs_of_different_lengths_align_in_order():
    a = ["<s>", "The", "cat", "sat", "."]
    b = ["<s>", "The", "big", "black", "cat", "sat", "down", "."]
    al = align_tokens(a, b)
    assert al.a_index.tolist() == [0, 1, 2, 3, 4]
    assert al.b_index.tolist() == [0, 1, 4, 5, 7]
    assert al.matched_b.tolist() == [True, True, False, False, True, True, False, True]


def test_two_tokenizers_meet_where_their_pieces_agree():
    # A BPE model's " The" and a cased/uncased WordPiece "the" are one text; "##s" and "s" too.
    assert token_key(" The") == token_key("the") == token_key("ĠThe")
    al = align_tokens(["<s>", " The", " cat", "s", "</s>"], ["[CLS]", "the", "cat", "##s", "[SEP]"])
    assert al.a_index.tolist() == [1, 2, 3] and al.b_index.tolist() == [1, 2, 3]


# -- numbers, by hand and against scipy ------------------------------------------------------------------------------

def test_hand_computed_diff_js_and_cosine_on_the_aligned_submatrix():
    # A: 3 tokens, B: 4 tokens; "cat" ↔ "cats" is unaligned, B has an extra "down".
    A = np.array([[0.5, 0.25, 0.25], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]])
    B = np.array([[0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25], [0.2, 0.2, 0.5, 0.1], [0.0, 0.5, 0.5, 0.0]])
    a = _result(A, ["The", "cat", "sat"])
    b = _result(B, ["The", "cats", "sat", "down"])
    c = compare_attention(a, b)
    assert c.queries.a_index.tolist() == [0, 2] and c.queries.b_index.tolist() == [0, 2]
    pa = np.array([[0.5, 0.25], [0.1, 0.8]])
    pb = np.array([[0.4, 0.2], [0.2, 0.5]])
    np.testing.assert_allclose(c.a_maps[0, 0], pa, atol=1e-7)
    np.testing.assert_allclose(c.diff[0, 0], pb - pa, atol=1e-7)
    # JS by hand, in bits, rows renormalised over the aligned keys.
    def js(p, q):
        p, q = p / p.sum(), q / q.sum()
        m = (p + q) / 2
        kl = lambda x: sum(xi * np.log2(xi / mi) for xi, mi in zip(x, m) if xi > 0)  # noqa: E731
        return 0.5 * kl(p) + 0.5 * kl(q)
    want = np.mean([js(pa[0], pb[0]), js(pa[1], pb[1])])
    assert c.js[0, 0] == pytest.approx(want, abs=1e-6)
    cos = (pa * pb).sum() / np.linalg.norm(pa) / np.linalg.norm(pb)
    assert c.cosine[0, 0] == pytest.approx(cos, abs=1e-6)
    assert c.mass_a[0, 0] == pytest.approx((0.75 + 0.9) / 2, abs=1e-6)
    frame = c.frame()
    assert list(frame.columns) == ["layer", "head", "js", "cosine", "mass_a", "mass_b"]
    assert frame.loc[0, "js"] == pytest.approx(want, abs=1e-6)


def test_js_matches_scipy_jensenshannon():
    spatial = pytest.importorskip("scipy.spatial.distance")
    a = _random(["[CLS]", "a", "b", "c", "d", "[SEP]"], seed=1)
    b = _random(["[CLS]", "a", "x", "c", "d", "e", "[SEP]"], seed=2)
    c = compare_attention(a, b)
    qa, qb = c.queries.a_index, c.queries.b_index
    for layer in range(2):
        for head in range(3):
            A = a.attention[layer, head][np.ix_(qa, qa)].astype(np.float64)
            B = b.attention[layer, head][np.ix_(qb, qb)].astype(np.float64)
            rows = [spatial.jensenshannon(p / p.sum(), q / q.sum(), base=2) ** 2 for p, q in zip(A, B)]
            assert c.js[layer, head] == pytest.approx(np.mean(rows), abs=1e-6)


def test_the_same_result_twice_is_zero_difference_js_zero_cosine_one():
    r = _random(["[CLS]", "a", "b", "[SEP]"])
    c = compare_attention(r, r)
    assert c.queries.identity and not np.any(c.diff)
    np.testing.assert_allclose(c.js, 0.0, atol=1e-9)
    np.testing.assert_allclose(c.cosine, 1.0, atol=1e-6)
    v = compare_head(c, 1, 2)
    assert v.dmax == 0.0 and not np.any(v.diff)


def test_a_zeroed_head_has_no_js_and_cosine_zero():
    rng = np.random.default_rng(3)
    att = rng.dirichlet(np.ones(3), size=(1, 2, 3)).astype(np.float32)
    zeroed = att.copy()
    zeroed[0, 1] = 0.0
    a = _result(att, ["a", "b", "c"])
    b = _result(zeroed, ["a", "b", "c"], ablation="head 0.1 zeroed")
    c = compare_attention(a, b)
    assert c.js[0, 0] == pytest.approx(0.0, abs=1e-9) and np.isnan(c.js[0, 1])
    assert c.cosine[0, 1] == 0.0


def test_lazy_results_compare_as_their_dense_twins(no_dense, monkeypatch):
    a = lazy_result(40, seed=0)
    b = lazy_result(40, seed=1)
    dense_a, dense_b = dense_twin(a), dense_twin(b)

    def refuse(_self):
        raise AssertionError("the comparison built a dense attention array")

    aw.runner.set_dense_budget(2 * 2 * 4 * 40 * 40 * 4)  # the aligned maps of both fit, nothing more is needed
    monkeypatch.setattr(AttentionResult, "attention", property(refuse))
    c = compare_attention(a, b)  # read a block of rows at a time
    monkeypatch.undo()
    d = compare_attention(dense_a, dense_b)
    np.testing.assert_allclose(c.diff, d.diff, atol=1e-6)
    np.testing.assert_allclose(c.js, d.js, atol=1e-6)


def test_above_the_dense_budget_the_comparison_is_refused(no_dense):
    a = lazy_result(40, seed=0)
    aw.runner.set_dense_budget(1000)
    with pytest.raises(aw.AttentionTooLargeError, match="dense budget"):
        compare_attention(a, a)


# -- bad input -------------------------------------------------------------------------------------------------------

def test_different_layer_and_head_counts_are_refused_naming_both():
    a = _random(["a", "b"], layers=2, heads=3)
    b = _random(["a", "b"], layers=3, heads=4, name="other-model")
    with pytest.raises(ValueError, match=r"2 layers x 3 heads \(A: model 'arrays'\).*3 layers x 4 heads \(B: model "
                                         r"'other-model'\)"):
        compare_attention(a, b)
    with pytest.raises(ValueError, match="3 layers x 4 heads"):
        aw.AttentionCompare(a, b)


def test_no_shared_token_is_a_clear_error():
    a = _random(["<s>", "Hello", "world"], name="model-a")
    b = _random(["[CLS]", "Bonjour", "monde", "[SEP]"], name="model-b")
    with pytest.raises(ValueError, match=r"no token of A .*'model-a'.* matches a token of B .*'model-b'"):
        compare_attention(a, b)
    with pytest.raises(ValueError, match="no token of A"):
        aw.plots.plot_compare(a, b)


def test_not_results_and_too_long_are_refused():
    r = _random(["a", "b"])
    with pytest.raises(TypeError, match="two AttentionResults"):
        aw.AttentionCompare(r, "b")
    long = lazy_result(1100, layers=1, heads=1, kv_heads=1)
    with pytest.raises(ValueError, match="up to 1024 tokens a side"):
        aw.AttentionCompare(long, long)


# -- the view --------------------------------------------------------------------------------------------------------

def test_view_payload_follows_the_head_and_labels_mark_unaligned_tokens():
    a = _random(["[CLS]", "The", "cat", "sat", "[SEP]"], seed=0)
    b = _random(["[CLS]", "The", "cats", "sat", "on", "[SEP]"], seed=1)
    w = aw.AttentionCompare(a, b, layer=1, head=2, show="diff")
    assert w._payload["key"] == "1/2/t"
    assert w._payload["diff"]["shape"] == [4, 4] and w._payload["b"]["shape"] == [6, 6]
    diff = np.frombuffer(w._payload["diff"]["buffer"], np.float32).reshape(4, 4)
    np.testing.assert_allclose(diff, w.comparison.diff[1, 2], atol=1e-7)
    assert w._payload["dmax"] == pytest.approx(float(np.abs(w.comparison.diff[1, 2]).max()))
    labels = w._meta["labels"]
    assert labels["a_matched"][0] == [True, True, False, True, True]
    assert labels["b_matched"][0] == [True, True, False, True, False, True]
    assert labels["aligned"][0] == ["[CLS]", "The", "sat", "[SEP]"]
    w.layer, w.head = 0, -1  # the grid's click sets these; the kernel answers with that head's maps
    assert w._payload["key"] == "0/-1/t"
    mean_a = np.frombuffer(w._payload["a"]["buffer"], np.float32).reshape(5, 5)
    np.testing.assert_allclose(mean_a, a.attention[0].mean(0), atol=1e-6)
    summary = np.frombuffer(w._payload["summary"]["buffer"], np.float32).reshape(2, 2, 3)
    np.testing.assert_allclose(summary[0], w.summary_values("js"), atol=1e-6)
    np.testing.assert_allclose(summary[1], w.summary_values("cosine"), atol=1e-6)


def test_view_refuses_bad_show_summary_and_head():
    r = _random(["a", "b"])
    with pytest.raises(traitlets.TraitError, match="show must be one of"):
        aw.AttentionCompare(r, r, show="overlay")
    w = aw.AttentionCompare(r, r)
    with pytest.raises(traitlets.TraitError, match="summary must be one of"):
        w.summary = "kl"
    with pytest.raises(traitlets.TraitError, match="head 3 is out of range"):
        w.head = 3
    with pytest.raises(traitlets.TraitError, match="rdbu"):
        w.diverging = "blues"


def test_causal_maps_mask_the_future_in_both_and_in_the_difference():
    tokens = ["<s>", "a", "b", "c"]
    att = np.tril(np.ones((1, 1, 4, 4), np.float32))
    att /= att.sum(-1, keepdims=True)
    a = _result(att, tokens, kind="decoder")
    b = _result(np.tril(np.full((1, 1, 4, 4), 1.0, np.float32)) / np.arange(1, 5)[:, None], tokens, kind="decoder")
    v = compare_head(compare_attention(a, b), 0, 0)
    assert np.isnan(v.a[0, 1]) and np.isnan(v.diff[0, 1]) and not np.isnan(v.diff[1, 0])


def test_html_in_a_token_travels_as_text():
    r = _random(["<img src=x onerror=alert(1)>", "b"])
    labels = compare_labels(compare_attention(r, r))
    assert labels["a"][0][0] == "<img src=x onerror=alert(1)>"


def test_static_twin_draws_diff_on_a_symmetric_scale_and_greys_unaligned_labels():
    a = _random(["[CLS]", "The", "cat", "sat", "[SEP]"], seed=0)
    b = _random(["[CLS]", "The", "cats", "sat", "[SEP]"], seed=1)
    fig = aw.plots.plot_compare(a, b, 1, 0, show="diff", theme="light")
    im = fig.axes[0].images[0]
    lo, hi = im.get_clim()
    assert lo == pytest.approx(-hi) and hi == pytest.approx(np.abs(compare_attention(a, b).diff[1, 0]).max())
    fig = aw.plots.plot_compare(a, b, 1, 0, show="side", summary="cosine")
    colours = [t.get_color() for t in fig.axes[0].get_yticklabels()]
    assert colours[2] == "#a8a8a8" and colours[1] != "#a8a8a8"
    assert fig.axes[2].get_title() == "cosine similarity"


def test_clean_vs_ablated_on_a_model(tiny_bert):
    from attnwidgets.runner.ablation import Ablation

    clean = aw.run("The cat sat on the mat.", model=tiny_bert)
    ablated = aw.run("The cat sat on the mat.", model=tiny_bert, ablation=Ablation.layers([0], "uniform"))
    c = compare_attention(clean, ablated)
    assert c.queries.identity
    assert np.all(c.js[0] > 0) and np.all(c.js[1] > 0)  # the edited layer and the one it feeds change
    w = aw.AttentionCompare(clean, ablated, show="diff")
    assert w._meta["identity"] and "ablated" in w._meta["b_name"]
    assert aw.AttentionCompare(clean, clean)._payload["dmax"] == 0.0


def test_two_models_with_different_tokenizers_align_by_word(tiny_bert, tiny_gpt2):
    text = "The cat sat on the mat."
    bert = aw.run(text, model=tiny_bert)  # WordPiece, uncased: [CLS] the cat ... [SEP]
    gpt2 = aw.run(text, model=tiny_gpt2)  # byte-level BPE: The, " cat", ...
    pieces = compare_attention(bert, gpt2)  # the tiny GPT-2 cuts " cat" into " c" + "at": no piece "cat"
    assert "cat" not in [bert.tokens[i] for i in pieces.queries.a_index]
    c = compare_attention(bert, gpt2, words=True)
    a_words = [c.a.tokens[i] for i in c.queries.a_index]
    b_words = [c.b.tokens[i].strip() for i in c.queries.b_index]
    assert [w.lower() for w in a_words] == [w.lower() for w in b_words]
    assert {"the", "cat", "sat", "on", "mat", "."} <= set(a_words) and "[CLS]" not in a_words, (c.a.tokens, c.b.tokens)
    assert np.isfinite(c.js).all() and c.js.shape == (2, 4)
    # The word-level maps are word_level's: rows from a word average its pieces, columns to a word sum them.
    from attnwidgets.analysis.words import word_level

    wb = word_level(gpt2)
    cat = wb.tokens.index(" cat") if " cat" in wb.tokens else [t.strip() for t in wb.tokens].index("cat")
    j = int(np.flatnonzero(c.queries.b_index == cat)[0])
    np.testing.assert_allclose(c.b_maps[1, 2, j], wb.attention[1, 2, cat][c.keys.b_index], atol=1e-6)
    w = aw.AttentionCompare(bert, gpt2, words=True, show="diff")
    aligned = w._meta["labels"]["aligned"][0]
    assert aligned[0] == "the/The" and "cat" in aligned  # A's text, and B's where it differs beyond case and space
    with pytest.raises(ValueError, match=r"words=True aligns whole words"):
        compare_attention(_random(["[CLS]", "x", "[SEP]"]), _random(["<s>", "y"]))
