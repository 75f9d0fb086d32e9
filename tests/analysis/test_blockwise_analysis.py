"""Analysis at any length: every function, given a lazy result whose dense attention may not be built (budget 0),
gives the numbers of the existing dense code on the same attention (its dense twin).

Tolerances: the blockwise sums run in another order than the dense ones (float32 matmuls and means over rows), so
statistics agree to about 1e-7; we hold them to 1e-6. Rollout is float64 throughout and agrees to 1e-12.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from lazy_helpers import dense_twin, lazy_result

import attnwidgets as aw
from attnwidgets.analysis import (
    CorpusStats,
    attention_flow,
    attention_rollout,
    classify_patterns,
    head_distances,
    pattern_features,
    read_conllu,
    score_dependencies,
    surface_stats,
    word_level,
)
from attnwidgets.analysis.batch import AttentionBatch
from attnwidgets.attention_stack import set_dense_budget
from attnwidgets.data import ud_sample_path

TOL = 1e-6



def _bert_like(n: int, *, causal: bool, pair: bool = False, pieces: bool = False, seed: int = 0) -> aw.AttentionResult:
    """A lazy result over [CLS] ... [SEP] tokens with punctuation, optionally a pair and multi-piece words."""
    body = ["the", "cat", ".", "sat", "on", ",", "mat"]
    tokens = ["[CLS]"] + [body[i % len(body)] for i in range(n - 2)] + ["[SEP]"]
    if pair:
        tokens[n // 2] = "[SEP]"
    r = lazy_result(n, causal=causal, seed=seed, tokens=tokens, sink=2.0 if causal else 0.0)
    special = np.array([t in ("[CLS]", "[SEP]") for t in tokens])
    seg = (np.arange(n) > n // 2).astype(np.int64) if pair else np.zeros(n, np.int64)
    words = np.where(special, -1, np.cumsum(~special) - 1)
    if pieces:  # pieces 3k+1 and 3k+2 of the body form one word: words of one, two and three pieces
        words = np.where(special, -1, (np.cumsum(~special) - 1) // 2)
    return r.replace(special_mask=special, segment_ids=seg, word_ids=words.astype(np.int64))


def _same(got: dict, want: dict, tol: float = TOL) -> None:
    assert list(got) == list(want)
    for k in want:
        g, w = np.asarray(got[k], float), np.asarray(want[k], float)
        assert g.shape == w.shape, k
        assert (np.isnan(g) == np.isnan(w)).all(), k
        assert np.nanmax(np.abs(g - w), initial=0.0) <= tol, (k, np.nanmax(np.abs(g - w)))


CASES = [pytest.param(dict(causal=True), id="causal"), pytest.param(dict(causal=False), id="bidirectional"),
         pytest.param(dict(causal=False, pair=True), id="pair"),
         pytest.param(dict(causal=True, pieces=True), id="causal-pieces")]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("smoothing", [0.0, 1e-4])
def test_surface_stats(case, smoothing, no_dense):
    r = _bert_like(150, **case)
    assert r.model.n_kv_heads < r.n_heads  # GQA
    want = surface_stats(dense_twin(r), smoothing=smoothing)
    _same(surface_stats(r, smoothing=smoothing), want)
    assert not np.allclose(want["entropy"], want["entropy_uniform"])  # the statistics are not trivial
    with pytest.raises(aw.AttentionTooLargeError):
        r.attention  # noqa: B018 (the budget really is 0)


@pytest.mark.parametrize("case", CASES)
def test_word_level_statistics(case, no_dense):
    r = _bert_like(120, **case)
    d = dense_twin(r)
    _same(surface_stats(r, words=True), surface_stats(d, words=True))
    _same(pattern_features(r, words=True), pattern_features(d, words=True))


@pytest.mark.parametrize("rows", ["mean", "first"])
def test_word_level_result_is_lazy_and_exact(rows, no_dense):
    r = _bert_like(101, causal=False, pieces=True)
    w = word_level(r, rows=rows)
    assert w.is_lazy and w.n_tokens < r.n_tokens
    want = word_level(dense_twin(r), rows=rows)
    assert w.tokens == want.tokens and (w.word_ids == want.word_ids).all()
    got = np.zeros(want.attention.shape, np.float32)
    for layer, start, stop, block in w.iter_blocks(rows=7):
        got[layer, :, start:stop] = block
    np.testing.assert_allclose(got, want.attention, atol=TOL)
    np.testing.assert_allclose(w.head(1, -1), want.attention[1].mean(0), atol=TOL)
    np.testing.assert_allclose(w.rows(0, 3, 9, head=2), want.attention[0, 2, 3:9], atol=TOL)


def test_word_level_non_contiguous_words(no_dense):
    r = _bert_like(30, causal=False)
    words = r.word_ids.copy()
    words[5], words[20] = 3, 3  # word 3 has pieces 4, 5 and 20, with other words between
    r = r.replace(word_ids=words)
    want = word_level(dense_twin(r)).attention
    got = word_level(r)
    for layer, start, stop, block in got.iter_blocks(rows=4):
        np.testing.assert_allclose(block, want[layer, :, start:stop], atol=TOL)


def test_dense_word_level_matches_the_matrix_product():
    from attnwidgets.analysis import word_groups, word_matrices

    d = dense_twin(_bert_like(64, causal=False, pieces=True))
    r, c = word_matrices(word_groups(d.word_ids, d.special_mask))
    np.testing.assert_allclose(word_level(d).attention, np.matmul(np.matmul(r, d.attention), c), atol=TOL)


@pytest.mark.parametrize("case", CASES)
def test_patterns(case, no_dense):
    r = _bert_like(140, **case)
    d = dense_twin(r)
    _same(pattern_features(r), pattern_features(d))
    assert (classify_patterns(r) == classify_patterns(d)).all()


def test_corpus_stats_mixes_lazy_and_dense(no_dense):
    lazy = [_bert_like(90, causal=False, seed=s) for s in range(2)] + [_bert_like(70, causal=False, pair=True)]
    dense = [dense_twin(r) for r in lazy]
    short = dense_twin(_bert_like(20, causal=False, seed=5))
    for words in (False, True):
        got = CorpusStats(words=words, distances=True)
        got.update([lazy[0], short, lazy[1], lazy[2]], batch_size=2)
        want = CorpusStats(words=words, distances=True)
        want.update([dense[0], short, dense[1], dense[2]], batch_size=2)
        _same(got.mean(), want.mean())
        assert (got.pattern_counts == want.pattern_counts).all()
        assert got.n_docs == 4 and got.n_tokens == want.n_tokens
        np.testing.assert_allclose(got.distances(), want.distances(), atol=1e-9)


def test_corpus_checks_each_block():
    from attnwidgets.analysis.corpus import _Check
    from attnwidgets.result import InvalidAttentionError

    block = np.full((2, 3, 4), 0.25, np.float32)
    _Check().add(1, 3, 6, block)  # rows that sum to 1 pass
    block[1, 2, 0] = np.nan
    with pytest.raises(InvalidAttentionError, match=r"layer 1, rows 3\.\.5"):
        _Check().add(1, 3, 6, block)


@pytest.mark.parametrize("reduce", ["mean", "sum"])
def test_head_distances(reduce, no_dense):
    r = _bert_like(50, causal=True)
    want = head_distances([dense_twin(r)], reduce=reduce)
    np.testing.assert_allclose(head_distances([r], reduce=reduce), want, atol=1e-9)
    assert want[0, 1] > 0


def test_batch_from_lazy_results_reads_blocks():
    r = _bert_like(30, causal=False)
    got = AttentionBatch.from_results([r]).attention[0]
    np.testing.assert_array_equal(got, dense_twin(r).attention)
    assert not r.stack()._dense  # no dense copy was kept inside the result
    old = set_dense_budget(0)
    try:
        with pytest.raises(aw.AttentionTooLargeError, match="one at a time"):
            AttentionBatch.from_results([r])
    finally:
        set_dense_budget(old)


@pytest.mark.parametrize("rows", ["mean", "first"])
def test_dependency_scores(rows, no_dense):
    sentences = read_conllu(ud_sample_path())[:8]
    lazy, dense = [], []
    for i, s in enumerate(sentences):
        pieces = ["[CLS]"]
        for word in s.words:  # long words in two pieces
            w = word.lower()
            pieces += [w[:3], "##" + w[3:]] if len(w) > 4 else [w]
        pieces.append("[SEP]")
        r = lazy_result(len(pieces), causal=False, tokens=pieces, seed=i)
        r = r.replace(special_mask=np.array([p in ("[CLS]", "[SEP]") for p in pieces]))
        lazy.append(r)
        dense.append(dense_twin(r))
    got = score_dependencies(lazy, sentences, rows=rows, progress=False)
    want = score_dependencies(dense, sentences, rows=rows, progress=False)
    assert want.correct.sum() > 0
    np.testing.assert_array_equal(got.correct, want.correct)
    np.testing.assert_array_equal(got.counts, want.counts)


@pytest.mark.parametrize("causal", [True, False])
def test_rollout_rows_equal_rows_of_the_full_rollout(causal, no_dense):
    r = lazy_result(48, layers=3, causal=causal)
    d = dense_twin(r)
    full = attention_rollout(d)
    np.testing.assert_allclose(attention_rollout(r, rows=[0, 7, -1]), full[[0, 7, 47]], atol=1e-12)
    np.testing.assert_allclose(attention_rollout(r, rows=7), full[7], atol=1e-12)
    partial = attention_rollout(d, all_layers=True, start_layer=1)
    np.testing.assert_allclose(attention_rollout(r, rows=[3, 9], all_layers=True, start_layer=1), partial[:, [3, 9]],
                               atol=1e-12)
    for fusion in ("max", "min"):
        np.testing.assert_allclose(attention_rollout(r, rows=[5], head_fusion=fusion, residual=False),
                                   attention_rollout(d, head_fusion=fusion, residual=False)[[5]], atol=1e-12)
    np.testing.assert_allclose(attention_rollout(d, rows=[2, 4]), full[[2, 4]], atol=1e-12)  # arrays too
    with pytest.raises(aw.AttentionTooLargeError, match="rows="):
        attention_rollout(r)
    with pytest.raises(IndexError):
        attention_rollout(r, rows=[48])


def test_full_rollout_and_flow_of_a_short_lazy_result():
    r = lazy_result(12, layers=2, causal=False)
    d = dense_twin(r)
    np.testing.assert_allclose(attention_rollout(r), attention_rollout(d), atol=1e-12)
    np.testing.assert_allclose(attention_flow(r), attention_flow(d), atol=1e-9)
    assert not r.stack()._dense


def test_rollout_rows_by_hand():
    a = np.zeros((2, 1, 2, 2))
    a[:, 0, :, 0] = 1.0  # everything on token 0: Ã = [[1, 0], [.5, .5]] in both layers, R = [[1, 0], [.75, .25]]
    assert attention_rollout(a, rows=[1, 0]).tolist() == [[0.75, 0.25], [1.0, 0.0]]


def test_surface_stats_of_a_long_input_stay_small():
    """4k tokens, 2 layers x 4 heads: the dense array would take 537 MB; the blockwise pass far less."""
    r = lazy_result(4096, layers=2, heads=4, kv_heads=2, causal=True, sink=2.0)
    dense_bytes = r.dense_nbytes()
    assert dense_bytes > 500e6
    old = set_dense_budget(0)
    tracemalloc.start()
    try:
        stats = surface_stats(r)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        set_dense_budget(old)
    assert peak < dense_bytes / 3, peak  # one 32 MB block and the temporaries of rebuilding it
    assert stats["first"].shape == (2, 4) and (stats["first"] > 10 / 4096).all()  # the sink draws more than its share
    assert (stats["entropy"] < stats["entropy_uniform"]).all()


def test_the_old_name_of_aggregate_stats_warns_and_gives_its_numbers():
    """analysis.corpus_stats was renamed aggregate_stats (studies.corpus_stats runs texts: one name did two things)."""
    r = dense_twin(_bert_like(12, causal=False, seed=3))
    with pytest.warns(FutureWarning, match="aggregate_stats"):
        old = aw.analysis.corpus_stats([r, r])
    new = aw.analysis.aggregate_stats([r, r])
    _same(old.mean(), new.mean())
    assert old.n_docs == new.n_docs == 2
