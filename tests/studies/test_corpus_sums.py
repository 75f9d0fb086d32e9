"""Corpus statistics summed in the forward (runner/corpus_sums.py): the numbers of the numpy path, with padding masked,
no weights kept, and the same sums however the corpus is split into batches or shards."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import attnwidgets as aw
from attnwidgets.analysis.batch import AttentionBatch
from attnwidgets.analysis.corpus import CorpusStats, sum_sets
from attnwidgets.analysis.patterns import pattern_features_batch
from attnwidgets.analysis.surface import surface_stats_batch
from attnwidgets.runner import batches
from attnwidgets.runner.capture import AttentionSite
from attnwidgets.runner.corpus_sums import CorpusSums
from attnwidgets.studies.corpus import CorpusWork, corpus_stats

TEXTS = [  # mixed lengths, so every batch of 3 is padded
    "Rain.",
    "The cat sat on the mat because it was tired, and the dog was not.",
    "She gave him the book.",
    "A dog barked.",
    "Birds that migrate at night navigate by the stars.",
    "It rained, so we stayed in.",
    "Hi.",
]
PAIRS = [("The kettle clicked off.", "Mara poured the tea, slowly."), ("It rained.", "We stayed in, and read."),
         ("Hi.", "Hello, there, you.")]
FAMILIES = ["tiny_bert", "tiny_gpt2", "tiny_llama"]  # encoder, decoder, decoder with grouped-query heads and RoPE


def _items(texts, pairs=None):
    return list(zip(texts, pairs if pairs is not None else [None] * len(texts)))


def _assert_same(a: CorpusStats, b: CorpusStats, atol: float = 1e-5) -> None:
    assert (a.n_docs, a.n_tokens) == (b.n_docs, b.n_tokens)
    ma, mb = a.mean(), b.mean()
    assert ma.keys() == mb.keys()
    for k in ma:
        assert np.allclose(ma[k], mb[k], atol=atol, equal_nan=True), (k, np.nanmax(np.abs(ma[k] - mb[k])))
        assert np.array_equal(a._counts[k], b._counts[k]), k
    assert (a.pattern_counts is None) == (b.pattern_counts is None)
    if a.pattern_counts is not None:
        assert np.array_equal(a.pattern_counts, b.pattern_counts)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("smoothing", [0.0, 1e-4])
def test_sums_in_the_forward_equal_the_numpy_path(family, smoothing, request, monkeypatch):
    runner = aw.runner.get_runner(request.getfixturevalue(family))
    numpy_path = CorpusWork(batch_size=3, smoothing=smoothing, in_forward=False)(runner, _items(TEXTS))
    before = runner.n_forward

    def no_maps(*args, **kwargs):
        raise AssertionError("the in-forward path padded the maps")

    monkeypatch.setattr(batches, "iter_padded", no_maps)
    fused = CorpusWork(batch_size=3, smoothing=smoothing)(runner, _items(TEXTS))
    assert runner.n_forward - before == 3  # one forward per batch of 3, none to fetch weights
    _assert_same(fused, numpy_path)
    # and the statistics are not trivial: the check above would pass on zeros
    assert np.all(fused.mean()["entropy"] > 0.1) and np.all(fused.mean()["first"] > 0)


@pytest.mark.parametrize("family", FAMILIES)
def test_padding_is_masked_a_batch_equals_one_text_at_a_time(family, request):
    runner = aw.runner.get_runner(request.getfixturevalue(family))
    together = CorpusWork(batch_size=len(TEXTS))(runner, _items(TEXTS))  # one batch, padded to the longest
    alone = CorpusWork(batch_size=1)(runner, _items(TEXTS))  # no padding at all
    _assert_same(together, alone)


def test_sentence_pairs_segments_and_sep_rows(tiny_bert, monkeypatch):
    runner = aw.runner.get_runner(tiny_bert)
    numpy_path = CorpusWork(batch_size=2, in_forward=False)(runner, PAIRS)
    monkeypatch.setattr(batches, "iter_padded", None)  # not called
    fused = CorpusWork(batch_size=2)(runner, PAIRS)
    _assert_same(fused, numpy_path)
    mean = fused.mean()
    assert np.isfinite(mean["pattern_block"]).all() and np.isfinite(mean["sep_sep"]).all()


def test_bfloat16_weights_are_summed_in_float32(tiny_llama):
    runner = aw.runner.get_runner(tiny_llama, dtype="bfloat16")
    numpy_path = CorpusWork(batch_size=3, in_forward=False)(runner, _items(TEXTS))
    fused = CorpusWork(batch_size=3)(runner, _items(TEXTS))
    _assert_same(fused, numpy_path)


def test_sums_of_a_hand_made_map_with_padding():
    """[CLS] a . [SEP] + one padded position; the weights of every row are written out by hand."""
    w = torch.tensor([[0.5, 0.0, 0.0, 0.5, 0.0],
                      [0.25, 0.25, 0.25, 0.25, 0.0],
                      [0.0, 1.0, 0.0, 0.0, 0.0],
                      [0.0, 0.0, 0.5, 0.5, 0.0],
                      [0.2, 0.2, 0.2, 0.2, 0.2]])[None, None]  # (B=1, H=1, T=5, S=5); row 4 is padding
    valid = torch.tensor([[True, True, True, True, False]])
    sets = [sum_sets(["[CLS]", "a", ".", "[SEP]"], np.array([1, 0, 0, 1], bool), np.zeros(4, int), causal=False)]
    hook = CorpusSums(valid, sets, n_layers=1, n_heads=1, causal=False)
    assert hook(SimpleNamespace(site=AttentionSite("self", 0)), w) is None
    assert hook.checked(1, 1e-6)
    s = {k: float(v[0, 0, 0]) for k, v in hook.sums().items()}
    assert s["cls"] == pytest.approx(0.5 + 0.25)
    assert s["sep"] == pytest.approx(0.5 + 0.25 + 0.5)
    assert s["sep_from_sep"] == pytest.approx(0.5)
    assert s["punct"] == pytest.approx(0.25 + 0.5)
    assert s["self"] == pytest.approx(0.5 + 0.25 + 0.0 + 0.5)
    assert s["prev"] == pytest.approx(0.25 + 1.0 + 0.5)
    assert s["next"] == pytest.approx(0.0 + 0.25 + 0.0)  # row 3's next key is padding: not counted
    assert s["next_words"] == pytest.approx(0.25)  # row 1 -> key 2 ('.'); row 0 -> key 1 is 0
    assert s["entropy"] == pytest.approx(np.log(2) + np.log(4) + 0 + np.log(2))
    assert s["entropy_first"] == pytest.approx(np.log(2)) and s["entropy_last"] == pytest.approx(np.log(2))
    # and CorpusStats makes of them what the numpy path makes of the map
    summed = CorpusStats()
    summed.add_sums(hook.sums(), sets, causal=False)
    dense = CorpusStats()
    att = (w[0, 0, :4, :4].numpy())[None, None, None]
    dense.add_batch(AttentionBatch.from_padded(att, np.ones((1, 4), bool), [["[CLS]", "a", ".", "[SEP]"]],
                                               [np.array([1, 0, 0, 1], bool)]))
    _assert_same(summed, dense, atol=1e-6)


def test_a_left_padded_batch_matches_its_rolled_numpy_batch():
    """Padding on the left (as decoders pad): positions are the padded batch's, and nothing of the padding counts."""
    rng = np.random.default_rng(3)
    b, h, t = 2, 3, 6
    lengths = [6, 4]
    logits = torch.from_numpy(rng.normal(size=(b, h, t, t)).astype(np.float32))
    valid = torch.zeros((b, t), dtype=torch.bool)
    for i, n in enumerate(lengths):
        valid[i, t - n:] = True
    causal = torch.ones((t, t), dtype=torch.bool).tril()
    allowed = valid[:, None, None, :] & causal
    w = torch.softmax(logits.masked_fill(~allowed, float("-inf")), -1).nan_to_num(0.0)
    toks = [["<s>", "a", ",", "b", ".", "c"], ["<s>", "d", ".", "e"]]
    special = [np.array([1, 0, 0, 0, 0, 0], bool), np.array([1, 0, 0, 0], bool)]
    sets = [sum_sets(tk, sp, np.zeros(len(tk), int), causal=True) for tk, sp in zip(toks, special, strict=True)]
    hook = CorpusSums(valid, sets, n_layers=1, n_heads=h, causal=True, smoothing=1e-4)
    hook(SimpleNamespace(site=AttentionSite("self", 0)), w)
    summed = CorpusStats(smoothing=1e-4)
    summed.add_sums(hook.sums(), sets, causal=True)
    dense = np.zeros((b, 1, h, t, t), np.float32)
    for i, n in enumerate(lengths):
        dense[i, 0, :, :n, :n] = w[i, :, t - n:, t - n:].numpy()
    rolled = np.zeros((b, t), bool)
    for i, n in enumerate(lengths):
        rolled[i, :n] = True
    numpy_path = CorpusStats(smoothing=1e-4)
    numpy_path.add_batch(AttentionBatch.from_padded(dense, rolled, toks, special, causal=True))
    _assert_same(summed, numpy_path, atol=1e-6)
    stats = surface_stats_batch(AttentionBatch.from_padded(dense, rolled, toks, special, causal=True), 1e-4)
    assert np.all(stats["entropy"] > 0)
    assert set(pattern_features_batch(AttentionBatch.from_padded(dense, rolled, toks, special, causal=True)))


def test_weights_that_are_not_attention_are_refused_with_where(tiny_bert):
    from attnwidgets.runner import AttentionUnavailableError
    from attnwidgets.runner.loading import load
    from attnwidgets.runner.runner import Runner

    runner = Runner(load(tiny_bert))
    with torch.no_grad():
        runner.model.encoder.layer[1].attention.self.query.weight.fill_(float("nan"))
    with pytest.raises(AttentionUnavailableError, match="not finite"):
        CorpusWork(batch_size=3)(runner, _items(TEXTS))


def test_shards_merge_to_the_sums_of_one_batch(tiny_bert):
    runner = aw.runner.get_runner(tiny_bert)
    whole = CorpusWork(batch_size=len(TEXTS))(runner, _items(TEXTS))
    sharded = corpus_stats(TEXTS, model=runner, batch_size=2, progress=False)  # 4 shards, merged
    _assert_same(sharded, whole)


def test_corpus_stats_hands_the_in_forward_work_to_the_pool(tiny_bert, monkeypatch):
    """What shards.run (local or Ray workers) runs is a CorpusWork that sums in the forward."""
    from attnwidgets.studies import shards

    seen = []
    original = shards.run

    def spy(work, *args, **kwargs):
        seen.append(work)
        return original(work, *args, **kwargs)

    monkeypatch.setattr(shards, "run", spy)
    corpus_stats(TEXTS[:2], model=tiny_bert, progress=False)
    assert len(seen) == 1 and isinstance(seen[0], CorpusWork) and seen[0].in_forward


def test_a_batch_summed_in_chunks_of_one_input_gives_the_same_sums(tiny_gpt2, monkeypatch):
    """Past _ELEMENTS weights a layer is summed a few inputs at a time (bounded temporaries): the same numbers."""
    from attnwidgets.runner import corpus_sums

    runner = aw.runner.get_runner(tiny_gpt2)
    whole = CorpusWork(batch_size=4, smoothing=1e-4)(runner, _items(TEXTS))
    monkeypatch.setattr(corpus_sums, "_ELEMENTS", 1)  # one input per chunk
    chunked = CorpusWork(batch_size=4, smoothing=1e-4)(runner, _items(TEXTS))
    _assert_same(chunked, whole, atol=1e-6)


@pytest.mark.parametrize("smoothing", [0.0, 1e-3])
def test_entropy_made_a_block_of_rows_at_a_time_is_the_same_number(monkeypatch, smoothing):
    """Long inputs' entropy terms are made _ROWS_AT_ONCE weights at a time (a block in the cache, one buffer): the
    same operations per row, so the very same float32 sums as the whole at once; and -Σ p ln p computed here in
    float64 agrees. Rows of padding, a row with zeros (0 ln 0 = 0), a last block cut short."""
    from attnwidgets.runner import corpus_sums

    rng = np.random.default_rng(5)
    b, h, t = 3, 2, 7
    scores = rng.normal(size=(b, h, t, t)) * 3
    scores[..., 0, 1:] = -np.inf  # row 0 all on key 0: zeros in the row
    valid = np.ones((b, t), bool)
    valid[1, 5:] = False
    valid[2, 3:] = False
    scores = np.where(valid[:, None, None, :], scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w = (w / w.sum(-1, keepdims=True)).astype(np.float32)
    sets = []
    for n in valid.sum(1):
        tokens = ["[CLS]", *["w"] * (n - 2), "[SEP]"]
        special = np.array([True, *[False] * (n - 2), True])
        sets.append(sum_sets(tokens, special, np.zeros(n, int), causal=False))

    def entropy(rows_at_once: int) -> np.ndarray:
        monkeypatch.setattr(corpus_sums, "_ROWS_AT_ONCE", rows_at_once)
        hook = CorpusSums(torch.from_numpy(valid), sets, n_layers=1, n_heads=h, causal=False, smoothing=smoothing)
        hook(SimpleNamespace(site=AttentionSite("self", 0)), torch.from_numpy(w))
        assert hook.checked(1, 1e-5)
        return hook.sums()["entropy"][:, 0]

    whole = entropy(1 << 16)
    assert b * h * t * t <= 4 * (1 << 16)  # whole at once here; in blocks of rows below
    for rows_at_once in (2, 7, 5 * 7):  # fewer weights than a row: a row at a time; one row; 5 rows, then 2 (42)
        assert np.array_equal(entropy(rows_at_once), whole), rows_at_once
    expected = np.zeros((b, h))
    for i in range(b):
        n = int(valid[i].sum())
        p = w[i, :, :n, :n].astype(np.float64)
        if smoothing:
            p = p * (1 - smoothing) + smoothing / n
        expected[i] = -(p * np.log(np.where(p > 0, p, 1))).sum((-1, -2))
    assert np.allclose(whole, expected, rtol=1e-5, atol=1e-5)


def test_sets_that_do_not_fit_the_batch_are_refused_clearly():
    """The sets are laid over the batch's valid positions all at once: a set of the wrong length (or a missing input)
    is a clear error, not numpy's broadcasting message or sums over the wrong tokens."""
    valid = torch.tensor([[True, True, True, False], [True, True, True, True]])
    ok = sum_sets(["[CLS]", "a", "[SEP]"], np.array([1, 0, 1], bool), np.zeros(3, int), causal=False)
    four = sum_sets(["[CLS]", "a", "b", "[SEP]"], np.array([1, 0, 0, 1], bool), np.zeros(4, int), causal=False)
    CorpusSums(valid, [ok, four], n_layers=1, n_heads=1, causal=False)
    for sets in ([ok, ok], [four, four], [ok]):
        with pytest.raises(ValueError, match="one value per valid token"):
            CorpusSums(valid, sets, n_layers=1, n_heads=1, causal=False)
