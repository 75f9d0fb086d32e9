"""|∂L/∂A| per head and key kind: an objective with a known gradient, the MLM loss, and a paraphrase objective."""

from __future__ import annotations

import numpy as np
import pytest

TEXTS = ["The cat sat on the mat, because it was tired.", "A dog barked.", "She gave him the book that he wanted."]


def test_known_gradient(tiny_bert):
    import attnwidgets as aw
    from attnwidgets.runner.gradients import attention_gradients

    runner = aw.get_runner(tiny_bert)

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
    from attnwidgets.runner.gradients import attention_gradients

    runner = aw.get_runner(tiny_bert)

    def total(outputs, enc):
        return outputs.attentions[0].sum()

    one = attention_gradients(TEXTS, model=runner, objective=total, batch_size=1)
    padded = attention_gradients(TEXTS, model=runner, objective=total, batch_size=3)
    assert np.array_equal(one.counts, padded.counts)
    assert np.allclose(one.mean(), padded.mean(), atol=1e-6)


def test_masked_lm_loss(tiny_bert_mlm):
    import attnwidgets as aw
    from attnwidgets.runner.gradients import attention_gradients

    runner = aw.get_runner(tiny_bert_mlm)
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
    from attnwidgets.runner.gradients import attention_gradients, embedding_similarity

    runner = aw.get_runner(tiny_bert)
    with pytest.raises(ValueError, match="objective"):
        attention_gradients(TEXTS, model=runner)
    pairs = [(t, t.replace("The", "A")) for t in TEXTS]
    g = attention_gradients(TEXTS, model=runner, objective=embedding_similarity(runner, pairs), batch_size=2)
    assert g.objective == "embedding_similarity"
    assert np.isfinite(g.mean()).all() and (g.mean() > 0).any()
