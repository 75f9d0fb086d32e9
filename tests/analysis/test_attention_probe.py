"""Clark et al.'s attention-based probing classifier (issue 24 §4): the probe learns the head that is the tree, its
gradient is the loss's, the baselines count what a hand count gives, bad input is refused, and the study on the
shipped treebank reports held-out UAS beside the baselines."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.analysis.attention_probe import (
    DIRECTIONS,
    ProbeSentence,
    branching_heads,
    fit_attention_probe,
    score_heads,
    single_head_counts,
    split_sentences,
)

TREES = [np.array([1, -1, 1]), np.array([1, 3, 3, -1, 3]), np.array([-1, 0, 3, 1]), np.array([2, 2, -1, 2, 3, 2])]


def tree_sentence(heads: np.ndarray, rng: np.random.Generator, n_layers: int = 2, n_heads: int = 3,
                  tree_at: tuple[int, int] = (1, 2), d: int = 0) -> ProbeSentence:
    """Random attention in every head but ``tree_at``, whose rows point each word at its gold head (the root's row at
    the special tokens)."""
    m = len(heads)
    raw = rng.random((n_layers, n_heads, m, m + 1))  # last column: the special tokens
    alpha = raw / raw.sum(-1, keepdims=True)
    layer, head = tree_at
    alpha[layer, head] = 0.0
    for j, h in enumerate(heads):
        alpha[layer, head, j, h if h >= 0 else m] = 1.0
    vectors = rng.normal(size=(m, d)) if d else None
    return ProbeSentence(alpha[..., :m], alpha[..., m], heads, np.zeros(m, bool), None, vectors)


def test_one_head_is_the_tree_the_probe_finds_it():
    rng = np.random.default_rng(0)
    train = [tree_sentence(h, rng) for h in TREES * 3]
    test = [tree_sentence(h, rng) for h in TREES]
    probe = fit_attention_probe(train)
    assert probe.uas(test) == 1.0
    assert probe.weights.shape == (2, 2, 3)
    d, layer, head = np.unravel_index(np.argmax(probe.weights), probe.weights.shape)
    assert (DIRECTIONS[d], layer, head) == ("dependent->head", 1, 2)
    # and it predicts the trees themselves, the root included
    assert [p.tolist() for p in probe.predict(test)] == [t.tolist() for t in TREES]


def test_without_the_tree_head_the_probe_cannot_parse():
    """The same sentences with the tree head's map replaced by noise: the UAS of the test above is the head's."""
    rng = np.random.default_rng(1)

    def noisy(s: ProbeSentence) -> ProbeSentence:
        a, sp = s.attention.copy(), s.special.copy()
        raw = rng.random((s.n_words, s.n_words + 1))
        raw /= raw.sum(-1, keepdims=True)
        a[1, 2], sp[1, 2] = raw[:, :-1], raw[:, -1]
        return ProbeSentence(a, sp, s.heads, s.punct)

    train = [noisy(tree_sentence(h, rng)) for h in TREES * 3]
    test = [noisy(tree_sentence(h, rng)) for h in TREES]
    assert fit_attention_probe(train).uas(test) < 0.7


@pytest.mark.parametrize("words", [False, True])
def test_gradient_matches_finite_differences(words):
    rng = np.random.default_rng(2)
    sentences = [tree_sentence(h, rng, d=3) for h in TREES]
    sentences[1] = ProbeSentence(sentences[1].attention, sentences[1].special, sentences[1].heads,
                                 sentences[1].punct, np.array([True, True, False, True, True]), sentences[1].vectors)
    probe = fit_attention_probe(sentences, words=words, dims=2, max_iter=3)  # somewhere off zero
    for name, value in probe.params.items():
        probe.params[name] = value + rng.normal(scale=0.5, size=value.shape)
    l2 = 0.1
    loss, grad = probe.loss_and_gradient(sentences, l2)
    assert set(grad) == set(probe.params) and (len(grad) == 7) == words
    eps = 1e-6
    for name, value in probe.params.items():
        numeric = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            keep = value[idx]
            value[idx] = keep + eps
            up = probe.loss_and_gradient(sentences, l2)[0]
            value[idx] = keep - eps
            down = probe.loss_and_gradient(sentences, l2)[0]
            value[idx] = keep
            numeric[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grad[name], numeric, atol=1e-6, rtol=1e-5, err_msg=name)
    assert loss > 0


def test_branching_baselines_by_hand():
    # "The cat sat on the mat ." heads: The->cat, cat->sat, sat=root, on->mat, the->mat, mat->sat, .->sat
    heads = np.array([1, 2, -1, 5, 5, 2, 2])
    punct = np.array([0, 0, 0, 0, 0, 0, 1], bool)
    s = ProbeSentence(np.zeros((1, 1, 7, 7)), np.zeros((1, 1, 7)), heads, punct)
    right = branching_heads(7)
    assert right.tolist() == [1, 2, 3, 4, 5, 6, -1]
    # right-branching gets The->cat, cat->sat, the->mat: 3 of the 6 non-punctuation words
    assert score_heads([right], [s]) == (3, 6)
    # left-branching: [-1, 0, 1, 2, 3, 4, 5] gets nothing but ... nothing: 0 of 6; with punctuation 0 of 7
    assert score_heads([branching_heads(7, "left")], [s]) == (0, 6)
    assert score_heads([branching_heads(7, "left")], [s], punct=True) == (0, 7)
    assert score_heads([right], [s], punct=True) == (3, 7)
    # a word with no pieces is not scored, nor a word whose gold head has none
    gone = ProbeSentence(s.attention, s.special, heads, punct, np.array([1, 0, 1, 1, 1, 1, 1], bool))
    assert score_heads([right], [gone]) == (1, 4)


def test_split_is_fixed_by_its_seed_and_refuses_one_sentence():
    a, b = split_sentences(45, 0.25, seed=0)
    assert len(b) == 11 and len(a) == 34 and not set(a) & set(b)
    assert [x.tolist() for x in split_sentences(45, 0.25, seed=0)] == [a.tolist(), b.tolist()]
    assert split_sentences(45, 0.25, seed=1)[1].tolist() != b.tolist()
    with pytest.raises(ValueError, match="at least 2 sentences"):
        split_sentences(1)
    with pytest.raises(ValueError, match="test_share"):
        split_sentences(10, 1.0)


def test_bad_probe_sentences_are_refused():
    with pytest.raises(ValueError, match="heads must be 3 word indices"):
        ProbeSentence(np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 3)), np.array([0, 5, -1]), np.zeros(3, bool))
    with pytest.raises(ValueError, match="layers, heads, words, words"):
        ProbeSentence(np.zeros((3, 3)), np.zeros((1, 1, 3)), np.array([1, -1, 1]), np.zeros(3, bool))
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError, match="needs word vectors"):
        fit_attention_probe([tree_sentence(TREES[0], rng)], words=True)
    with pytest.raises(ValueError, match="same model"):
        fit_attention_probe([tree_sentence(TREES[0], rng), tree_sentence(TREES[1], rng, n_heads=4)])
    with pytest.raises(ValueError, match="no sentences"):
        fit_attention_probe([])


ONE = "# text = Cats sleep.\n1\tCats\tcat\tNOUN\t_\t_\t2\tnsubj\t_\t_\n2\tsleep\tsleep\tVERB\t_\t_\t0\troot\t_\t" \
      "SpaceAfter=No\n3\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_\n"


# ----------------------------------------------------------------------- packed, not padded (issue 33 §6)

def mixed_sentences(rng: np.random.Generator, d: int = 3) -> list[ProbeSentence]:
    """Sentences of 1 to 9 words, one with a word that has no pieces, one with punctuation, all with vectors."""
    out = [tree_sentence(h, rng, d=d) for h in TREES]
    long = np.array([1, 2, -1, 2, 5, 3, 5, 8, 6])
    out.append(tree_sentence(long, rng, d=d))
    out.append(tree_sentence(np.array([-1]), rng, d=d))
    s = out[1]
    out[1] = ProbeSentence(s.attention, s.special, s.heads, np.array([0, 0, 0, 0, 1], bool),
                           np.array([True, True, False, True, True]), s.vectors)
    return out


@pytest.mark.parametrize("words", [False, True])
@pytest.mark.parametrize("features, atol", [("float64", 1e-12), ("float32", 1e-7)])
def test_packed_objective_is_the_padded_one(words, features, atol, monkeypatch):
    """The loss, gradient and predictions of the packed table equal those of every sentence padded to the longest
    (the implementation it replaced, tests/probe_reference.py), at parameters off zero; with the table read a
    sentence or two at a time, as a long treebank's would be."""
    from probe_reference import padded_loss_grad, padded_predict

    import attnwidgets.analysis.attention_probe as module

    rng = np.random.default_rng(5)
    sentences = mixed_sentences(rng)
    monkeypatch.setattr(module, "CHUNK_BYTES", 8 * 6 * 30)  # 30 rows of 6 heads: chunks of whole sentences
    probe = fit_attention_probe(sentences, words=words, dims=2, max_iter=2, features=features)
    for name, value in probe.params.items():
        probe.params[name] = value + rng.normal(scale=1.0, size=value.shape)
    loss, grad = probe.loss_and_gradient(sentences, l2=0.1)
    want_loss, want_grad = padded_loss_grad(probe.params, sentences, probe.projection, 0.1)
    assert loss == pytest.approx(want_loss, abs=atol)
    for name in want_grad:
        np.testing.assert_allclose(grad[name], want_grad[name], rtol=0, atol=atol, err_msg=name)
    assert [p.tolist() for p in probe.predict(sentences)] == \
        [p.tolist() for p in padded_predict(probe.params, sentences, probe.projection)]


@pytest.mark.parametrize("words", [False, True])
def test_packed_float32_fit_is_the_padded_float64_fit(words):
    """Trained to convergence, the float32 probe's weights are the old float64 padded probe's to 1e-4 of the largest,
    and it predicts the same heads."""
    from probe_reference import padded_fit, padded_predict

    rng = np.random.default_rng(6)
    sentences = mixed_sentences(rng) * 2
    probe = fit_attention_probe(sentences, words=words, dims=2, l2=1e-2)
    params, projection = padded_fit(sentences, words=words, dims=2, l2=1e-2)
    assert probe.converged
    for name in params:
        np.testing.assert_allclose(probe.params[name], params[name], rtol=0,
                                   atol=1e-4 * np.abs(params["pair"]).max(), err_msg=name)
    assert [p.tolist() for p in probe.predict(sentences)] == \
        [p.tolist() for p in padded_predict(params, sentences, projection)]


def test_memory_is_linear_in_the_words_not_sentences_times_the_longest():
    """One sentence of 80 words and 400 of 2: packed, the pairs are 80² + 400·2²; padded, 401·80² (50 times as many).
    The peak numpy allocates for a fit and for uas stays within the packed table's own size (float32, both
    directions read from one copy) plus its per-pair and per-word bookkeeping and one working chunk."""
    import tracemalloc

    import scipy.optimize  # noqa: F401  (the fit's import, done before anything is traced)

    from attnwidgets.analysis.attention_probe import CHUNK_BYTES

    rng = np.random.default_rng(7)
    layers, heads = 2, 4
    k = layers * heads
    sentences = [tree_sentence(np.array([*range(1, 80), -1]), rng, layers, heads, tree_at=(0, 0))]
    sentences += [tree_sentence(np.array([1, -1]), rng, layers, heads, tree_at=(0, 0)) for _ in range(400)]
    pairs = sum(s.n_words ** 2 for s in sentences)
    n_words = sum(s.n_words for s in sentences)
    bound = pairs * (4 * k + 120) + n_words * (16 * k + 100) + min(CHUNK_BYTES, 8 * k * pairs)
    padded = len(sentences) * 2 * k * 80 ** 2 * 8 * 2  # the features and the gradient, float64
    assert padded > 20 * bound
    tracemalloc.start()
    try:
        probe = fit_attention_probe(sentences, max_iter=3)
        before, fit_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        probe.uas(sentences)
        uas_peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert fit_peak < bound and uas_peak < bound, (fit_peak, uas_peak, bound)


def test_features_dtype_is_checked():
    rng = np.random.default_rng(8)
    with pytest.raises(ValueError, match="features must be one of"):
        fit_attention_probe([tree_sentence(TREES[0], rng)], features="float16")


def test_single_head_counts_by_hand():
    """"The cat sat on the mat ." with two heads: head 0 points every word at the next (the last at the first), head 1
    at the previous (the first at the second); "the" (4) has no pieces and the full stop is punctuation."""
    heads = np.array([1, 2, -1, 5, 5, 2, 2])
    punct = np.array([0, 0, 0, 0, 0, 0, 1], bool)
    present = np.array([1, 1, 1, 1, 0, 1, 1], bool)
    a = np.zeros((1, 2, 7, 7))
    a[0, 0, np.arange(7), (np.arange(7) + 1) % 7] = 1
    a[0, 1, np.arange(7), np.abs(np.arange(7) - 1)] = 1
    s = ProbeSentence(a, np.zeros((1, 2, 7)), heads, punct, present)
    # scored: The, cat, sat (root: a miss), on, mat; "the" has no pieces; "."'s is punctuation
    # head 0: The->cat right, cat->sat right, on->the: "the" is absent, so the row's next best, its first word
    # (all zeros but "the"): The, wrong; mat->. wrong: 2 of 5. head 1: The->cat right, cat->The, on->sat,
    # mat->the absent -> The: 1 of 5
    assert single_head_counts([s])[1] == 5
    assert single_head_counts([s])[0].tolist() == [[2, 1]]
    # with punctuation: "." -> The (head 0) and "." -> mat (head 1), both wrong; 7 - 1 absent = 6 scored
    assert single_head_counts([s], punct=True)[1] == 6
    assert single_head_counts([s], punct=True)[0].tolist() == [[2, 1]]
    with pytest.raises(ValueError, match="no sentences"):
        single_head_counts([])
