"""|∂L/∂A| per head and key kind: an objective with a known gradient, the MLM loss, and a paraphrase objective."""

from __future__ import annotations

import numpy as np
import pytest

TEXTS = ["The cat sat on the mat, because it was tired.", "A dog barked.", "She gave him the book that he wanted."]


def test_known_gradient(tiny_bert):
    import attnwidgets as aw
    from attnwidgets.studies.gradients import attention_gradients

    runner = aw.runner.get_runner(tiny_bert)

    def to_cls_in_layer0(outputs, enc):  # L = sum_i A0[h, i, 0]: ∂L/∂A0[i, j] = 1 if j is [CLS], else 0
        return outputs.attentions[0][..., 0].sum()

    g = attention_gradients(TEXTS, model=runner, objective=to_cls_in_layer0, batch_size=1)
    m = g.mean()  # (L, H, 4): [CLS], [SEP], punct, other
    assert m.shape == (2, 4, 4)
    assert np.allclose(m[0, :, 0], 1.0)
    assert np.allclose(m[0, :, 1:], 0.0)
    assert np.allclose(m[1], 0.0)  # layer 1 does not reach the objective
    lengths = [r.n_tokens for r in runner.run_batch(TEXTS)]
    assert g.counts[0] == sum(lengths)  # one [CLS] key per row
    assert g.counts[1] == sum(lengths)  # one [SEP] key per row
    assert g.counts[2] == lengths[0] * 2 + lengths[1] + lengths[2]  # "," and "." / "." / "."
    assert g.counts.sum() == sum(n * n for n in lengths)
    df = g.frame()
    assert set(df["statistic"]) == {"grad_cls", "grad_sep", "grad_punct", "grad_other"}


def test_padding_never_counts(tiny_bert):
    import attnwidgets as aw
    from attnwidgets.studies.gradients import attention_gradients

    runner = aw.runner.get_runner(tiny_bert)

    def total(outputs, enc):
        return outputs.attentions[0].sum()

    one = attention_gradients(TEXTS, model=runner, objective=total, batch_size=1)
    padded = attention_gradients(TEXTS, model=runner, objective=total, batch_size=3)
    assert np.array_equal(one.counts, padded.counts)
    assert np.allclose(one.mean(), padded.mean(), atol=1e-6)


def test_masked_lm_loss(tiny_bert_mlm):
    import attnwidgets as aw
    from attnwidgets.studies.gradients import attention_gradients

    runner = aw.runner.get_runner(tiny_bert_mlm)
    assert runner.head == "masked-lm"
    g = attention_gradients(TEXTS, model=runner, seed=0)
    again = attention_gradients(TEXTS, model=runner, seed=0)
    other = attention_gradients(TEXTS, model=runner, seed=1)
    assert g.objective == "masked-lm"
    m = g.mean()
    assert np.isfinite(m).all() and (m > 0).any()
    assert np.array_equal(m, again.mean())  # seeded masking
    assert not np.array_equal(m, other.mean())
    assert runner.run("The cat sat.").attention.shape[:2] == (2, 4)  # the model is left usable


def test_paraphrase_objective_and_errors(tiny_bert):
    import attnwidgets as aw
    from attnwidgets.studies.gradients import attention_gradients, embedding_similarity

    runner = aw.runner.get_runner(tiny_bert)
    with pytest.raises(ValueError, match="objective"):
        attention_gradients(TEXTS, model=runner)
    pairs = [(t, t.replace("The", "A")) for t in TEXTS]
    g = attention_gradients(TEXTS, model=runner, objective=embedding_similarity(runner, pairs), batch_size=2)
    assert g.objective == "embedding_similarity"
    assert np.isfinite(g.mean()).all() and (g.mean() > 0).any()


WORDY = ["Unbelievably, the kettle clicked off.", "The gutters overflowed onto the path.", "A dog barked."]


def test_words_gradient_is_the_gradient_of_word_level_attention(tiny_bert):
    """An objective that reads attention only through W = R A C (word_level's map) has ∂L/∂W = its coefficients."""
    import torch

    import attnwidgets as aw
    from attnwidgets.analysis import key_kind_index, token_kinds, word_groups, word_level, word_matrices
    from attnwidgets.studies.gradients import attention_gradients

    runner = aw.runner.get_runner(tiny_bert)
    rng = np.random.default_rng(0)
    maps, coefs, kinds, split, twins = {}, {}, {}, [], {}
    for text in WORDY:
        r = runner.run(text)
        rows, cols = word_matrices(word_groups(r.word_ids, r.special_mask))  # (u, n), (n, u)
        split.append(rows.shape[0] < r.n_tokens)
        sizes = cols.sum(0)
        twins[text] = tuple(np.flatnonzero(cols[:, sizes.argmax()])[:2]) if sizes.max() > 1 else None  # one word
        maps[text] = (torch.from_numpy(rows), torch.from_numpy(cols))
        coefs[text] = rng.normal(size=(rows.shape[0],) * 2)  # (u, u) signed: ∂L/∂W[h, i, j] = coef[i, j]
        w = word_level(r)
        kinds[text] = key_kind_index(token_kinds(w.tokens, w.special_mask))
    assert split == [True, True, False]  # un ##bel ##ie ##va ##bly; gut ##ters, over ##flow ##ed; one piece per word

    def linear_in_words(outputs, enc):  # L = sum_b,h,i,j coef[i, j] W0[b, h, i, j], padding cut off
        total = outputs.attentions[0].new_zeros(())
        for b, text in enumerate(enc.texts):
            n = int(enc.inputs["attention_mask"][b].sum())
            rows, cols = maps[text]
            a = outputs.attentions[0][b, :, :n, :n]  # (H, n, n)
            w = rows @ a @ cols  # (H, u, u)
            total = total + (w * torch.from_numpy(coefs[text]).float()).sum()
            # plus what W cannot see: two pieces of one word moving in opposite directions, as rows (one word's pieces
            # look differently) and as columns (one word's pieces are looked at differently). Their word-level
            # gradient is 0; taking magnitudes before aggregating would count them.
            if twins[text] is not None:
                p, q = twins[text]
                total = total + 3.0 * (a[:, p] - a[:, q]).sum() + 2.0 * (a[..., p] - a[..., q]).sum()
        return total

    g = attention_gradients(WORDY, model=runner, objective=linear_in_words, batch_size=2, words=True)
    assert g.words and "words=True" in repr(g)
    sums, counts = np.zeros(4), np.zeros(4)
    for text in WORDY:
        onehot = np.eye(4)[kinds[text]]  # (u, 4)
        sums += np.abs(coefs[text]).sum(0) @ onehot
        counts += len(kinds[text]) * onehot.sum(0)
    assert np.array_equal(g.counts, counts)
    m = g.mean()
    for head in range(4):
        assert m[0, head] == pytest.approx(sums / counts, rel=1e-4)
    assert np.allclose(m[1], 0.0)
    # the piece-level statistic is another one: more cells, and the terms W cannot see count there
    pieces = attention_gradients(WORDY, model=runner, objective=linear_in_words, batch_size=2)
    assert pieces.counts.sum() > counts.sum()
    assert not np.allclose(pieces.mean()[0], m[0], rtol=1e-2)


def test_words_is_pieces_when_every_word_is_one_piece(tiny_bert):
    import attnwidgets as aw
    from attnwidgets.studies.gradients import attention_gradients

    runner = aw.runner.get_runner(tiny_bert)
    assert all(r.n_tokens == len(set(r.word_ids[r.word_ids >= 0])) + 2 for r in runner.run_batch(TEXTS))

    def total(outputs, enc):
        return (outputs.attentions[0] ** 2).sum()

    pieces = attention_gradients(TEXTS, model=runner, objective=total, batch_size=3)
    words = attention_gradients(TEXTS, model=runner, objective=total, batch_size=3, words=True)
    assert np.array_equal(pieces.counts, words.counts)
    assert np.allclose(pieces.mean(), words.mean(), rtol=1e-5)


def test_words_on_a_decoder_counts_only_earlier_words(tiny_gpt2):
    import attnwidgets as aw
    from attnwidgets.analysis import word_level
    from attnwidgets.studies.gradients import attention_gradients

    runner = aw.runner.get_runner(tiny_gpt2)

    def total(outputs, enc):
        return outputs.attentions[-1].sum()

    g = attention_gradients(TEXTS, model=runner, objective=total, batch_size=2, words=True)
    sizes = [word_level(r).n_tokens for r in runner.run_batch(TEXTS)]
    assert g.counts.sum() == sum(u * (u + 1) // 2 for u in sizes)  # word j <= word i
    assert np.isfinite(g.mean()[-1][..., 3]).all() and (g.mean()[-1] > 0).any()
