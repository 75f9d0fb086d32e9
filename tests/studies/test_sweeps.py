"""Sweeps, Michel et al. importance, pruning curve, the shipped tasks and the probe."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidgets.runner import get_runner
from attnwidgets.runner.ablation import Ablation
from attnwidgets.studies.importance import head_importance, least_important, normalize_importance
from attnwidgets.studies.pruning import pruning_curve
from attnwidgets.studies.sweeps import evaluate, pooled_embeddings, sweep_heads
from attnwidgets.studies.tasks import Task, pooled_embedding, sentiment_task, sts_task

TEXTS = ["The cat sat on the mat.", "Dogs bark at night.", "She gave him the book.", "It rained all day long."]


def _toy_task(runner) -> Task:
    """Score: mean first embedding coordinate; loss: sum of squares of the pooled embedding (both per text)."""

    def score_embeddings(E):
        return float(E[:, 0].mean())

    def score(results):
        return score_embeddings(np.stack([r.outputs["embedding"] for r in results]))

    def loss(pooled, rows):
        return (pooled ** 2).sum()

    return Task("toy", "first coordinate", list(TEXTS), score, loss, score_embeddings=score_embeddings)


def test_fast_embeddings_equal_result_embeddings(tiny_bert):
    runner = get_runner(tiny_bert)
    ab = Ablation.heads([(1, 2)], "uniform")
    fast = pooled_embeddings(runner, TEXTS, ab, batch_size=3)
    slow = np.stack([r.outputs["embedding"] for r in runner.iter_results(TEXTS, ablation=ab, cache=False)])
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)
    clean = np.stack([r.outputs["embedding"] for r in runner.run_batch(TEXTS)])
    assert not np.allclose(fast, clean)


def test_sweep_matches_single_evaluations_and_flags_improvements(tiny_bert):
    runner = get_runner(tiny_bert)
    task = _toy_task(runner)
    sweep = sweep_heads(runner, task, mode="zero", progress=False)
    assert sweep.heads.shape == (2, 4) and sweep.layers.shape == (2,)
    assert sweep.baseline == pytest.approx(evaluate(runner, task))
    assert sweep.heads[1, 3] == pytest.approx(evaluate(runner, task, Ablation.heads([(1, 3)])))
    assert sweep.layers[0] == pytest.approx(task.score(runner.run_batch(TEXTS, ablation=Ablation.layers([0]))),
                                            abs=1e-6)
    np.testing.assert_array_equal(sweep.improving, sweep.heads > sweep.baseline)
    assert 0 < sweep.improving.sum() < 8  # a random model: some heads help this arbitrary score, some hurt
    frame = sweep.frame
    assert len(frame) == 8 + 2 and set(frame.unit) == {"head", "layer"}
    row = frame[(frame.unit == "head") & (frame.layer == 1) & (frame["head"] == 3)].iloc[0]
    assert row.delta == pytest.approx(sweep.heads[1, 3] - sweep.baseline)
    assert bool(row.improves) == bool(sweep.improving[1, 3])


def test_importance_is_the_gate_gradient(tiny_bert):
    """Unnormalised importance of a one-text task equals |dL/ds| of scaling that head, by finite differences."""
    runner = get_runner(tiny_bert)
    task = _toy_task(runner)
    task.texts, task.groups = TEXTS[:1], np.zeros(1, np.int64)
    imp = head_importance(runner, task, normalize=None, progress=False)

    def loss_at(scale):
        enc = runner.encode(TEXTS[:1])
        out = runner.forward(enc, Ablation.heads({(1, 2): scale}).hooks(runner.info) if scale < 1 else [])
        return float(task.loss(pooled_embedding(out, enc.inputs["attention_mask"]).double(), np.arange(1)))

    eps = 1e-3
    numeric = abs(loss_at(1.0) - loss_at(1.0 - eps)) / eps
    assert imp[1, 2] == pytest.approx(numeric, rel=2e-2)
    assert np.all(imp >= 0) and np.all(np.isfinite(imp))


def test_importance_averages_per_example_abs_and_does_not_depend_on_batch_size(tiny_bert):
    runner = get_runner(tiny_bert)
    task = _toy_task(runner)
    a = head_importance(runner, task, normalize=None, batch_size=1, progress=False)
    b = head_importance(runner, task, normalize=None, batch_size=4, progress=False)
    np.testing.assert_allclose(a, b, rtol=1e-4)


def test_importance_normalisation():
    imp = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]])
    out = normalize_importance(imp)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0)
    np.testing.assert_allclose(out[0], [0.6, 0.8, 0.0])
    g = normalize_importance(imp, "global")
    assert g.min() == 0.0 and g.max() == 1.0
    np.testing.assert_array_equal(normalize_importance(np.zeros((2, 2))), 0.0)
    with pytest.raises(ValueError, match="normalize"):
        normalize_importance(imp, "row")
    assert least_important(np.array([[0.5, np.nan], [0.1, 0.9]]), 2) == [(1, 0), (0, 0)]


def test_masked_heads_get_nan_importance(tiny_bert):
    runner = get_runner(tiny_bert)
    mask = np.ones((2, 4), np.float32)
    mask[0, 1] = 0
    imp = head_importance(runner, _toy_task(runner), mask=mask, progress=False)
    assert np.isnan(imp[0, 1]) and np.isfinite(np.delete(imp.ravel(), 1)).all()


def test_pruning_curve_prunes_least_important_first(tiny_bert):
    runner = get_runner(tiny_bert)
    task = _toy_task(runner)
    curve = pruning_curve(runner, task, step=0.25, max_share=0.75, progress=False)
    f = curve.frame
    assert f.n_pruned.tolist() == [0, 2, 4, 6]
    np.testing.assert_allclose(f.share, [0, 0.25, 0.5, 0.75])
    first = least_important(curve.importance[0], 2)
    assert f.pruned.iloc[1] == first
    assert f.metric.iloc[2] == pytest.approx(evaluate(runner, task, Ablation.heads(f.pruned.iloc[2])))


def test_task_without_loss_says_what_to_do(tiny_bert):
    runner = get_runner(tiny_bert)
    task = Task("no loss", "m", TEXTS, lambda rs: 0.0)
    with pytest.raises(ValueError, match="differentiable loss"):
        head_importance(runner, task, progress=False)


def test_sts_batches_keep_pairs_whole():
    task = sts_task()
    assert len(task.texts) == 2 * 152
    for rows in task.batches(7):
        assert len(rows) % 2 == 0 and rows[0] % 2 == 0


@pytest.mark.slow
def test_bundled_model_metrics_are_well_above_chance(bundled):
    sent = sentiment_task(bundled)
    assert evaluate(bundled, sent) > 0.8  # chance is 0.5
    assert evaluate(bundled, sts_task()) > 0.6  # Spearman of a random ranking is about 0
    worse = evaluate(bundled, sent, Ablation.layers(range(6), "uniform"))
    assert worse < evaluate(bundled, sent)


@pytest.mark.slow
def test_bundled_importance_gradient_flows_to_every_head(bundled):
    task = sentiment_task(bundled)
    task.texts = task.texts[:8]
    imp = head_importance(bundled, task, progress=False)
    assert imp.shape == (6, 12) and np.all(imp > 0)
    np.testing.assert_allclose(np.linalg.norm(imp, axis=1), 1.0)
    assert torch.is_grad_enabled()


def test_embedding_tasks_refuse_decoder_stacks_of_an_encoder_decoder(bart_3x2_decoder, tiny_bert):
    """The pooled embedding is the encoder's: a decoder sweep would be all zeros, decoder importance a torch error."""
    runner = get_runner(bart_3x2_decoder)
    task = _toy_task(runner)
    for stack in ("decoder", "cross"):
        with pytest.raises(ValueError, match="pooled encoder embedding"):
            sweep_heads(runner, task, stack=stack, progress=False)
        with pytest.raises(ValueError, match="pooled encoder embedding"):
            head_importance(runner, task, stack=stack, progress=False)
        with pytest.raises(ValueError, match="pooled encoder embedding"):
            pruning_curve(runner, task, stack=stack, progress=False)
    with pytest.raises(ValueError, match="encoder-decoder"):
        head_importance(runner, task, progress=False)  # stack="self" gated nothing: a torch RuntimeError before
    with pytest.raises(ValueError, match="one attention stack"):
        sweep_heads(get_runner(tiny_bert), task, stack="encoder", progress=False)
    n = runner.n_forward
    with pytest.raises(ValueError, match="pooled encoder embedding"):
        sweep_heads(runner, task, stack="decoder", progress=False)
    assert runner.n_forward == n, "refused before running anything"


def test_encoder_stack_of_an_encoder_decoder_sweeps_and_has_importance(bart_3x2_decoder):
    runner = get_runner(bart_3x2_decoder)
    task = _toy_task(runner)
    sweep = sweep_heads(runner, task, stack="encoder", mode="zero", progress=False)
    assert sweep.heads.shape == (2, 4) and np.all(sweep.delta != 0)
    imp = head_importance(runner, task, stack="encoder", normalize=None, progress=False)
    assert imp.shape == (2, 4) and np.all(np.isfinite(imp)) and np.all(imp > 0)
    curve = pruning_curve(runner, task, stack="encoder", step=0.25, max_share=0.5, progress=False)
    assert curve.frame.n_pruned.tolist() == [0, 2, 4]


def test_a_task_that_reads_the_decoder_sweeps_decoder_stacks_with_their_own_shape(bart_3x2_decoder):
    runner = get_runner(bart_3x2_decoder)

    def score(results):  # the last decoder layer's attention to the first target token, averaged over heads
        return float(np.mean([r.decoder_attention[-1, :, 1:, 0].mean() for r in results]))

    task = Task("decoder", "attention to the first target token", TEXTS, score,
                score_embeddings=lambda E: 0.0, stacks=("encoder", "decoder"))
    sweep = sweep_heads(runner, task, stack="decoder", mode="zero", progress=False)
    assert sweep.heads.shape == (3, 2) and sweep.layers.shape == (3,)  # the decoder's shape, not the encoder's
    assert np.all(sweep.delta != 0), "scored from full results, not from the encoder's pooled embedding"
    assert sweep.heads[2, 1] == pytest.approx(
        score(runner.run_batch(TEXTS, ablation=Ablation.heads([(2, 1)], stack="decoder"))), abs=1e-6)
    with pytest.raises(ValueError, match="pooled encoder embedding"):
        sweep_heads(runner, task, stack="cross", progress=False)
