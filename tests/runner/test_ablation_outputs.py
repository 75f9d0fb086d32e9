"""Watched outputs before/after an ablation, the pure numpy helpers, data loaders, probe, comparison and plots."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from attnwidgets.analysis.compare import head_similarity, mean_head_similarity, similarity_by_layer
from attnwidgets.analysis.outputs import (
    as_values,
    compare_values,
    cosine_matrix,
    pair_similarities,
    rank_candidates,
    softmax,
    top_k,
)
from attnwidgets.analysis.probe import cross_validated_accuracy, fit_probe
from attnwidgets.data.labelled import load_sentiment, load_sts_pairs, train_test_split_frame
from attnwidgets.result import AttentionResult
from attnwidgets.runner import get_runner
from attnwidgets.runner.ablation import Ablation
from attnwidgets.studies.watch import watch_ablation


def test_numpy_helpers():
    p = softmax(np.array([[0.0, np.log(3.0)]]))
    np.testing.assert_allclose(p, [[0.25, 0.75]])
    ids, probs = top_k(np.array([[1.0, 3.0, 2.0]]), k=2)
    assert ids.tolist() == [[1, 2]] and probs[0, 0] > probs[0, 1]
    A = np.array([[1.0, 0.0], [0.0, 2.0]])
    np.testing.assert_allclose(cosine_matrix(A, A), np.eye(2))
    np.testing.assert_allclose(pair_similarities(A, A[::-1]), [0.0, 0.0])
    order, scores = rank_candidates(np.array([0.0, 1.0]), np.array([[1.0, 0.0], [0.1, 1.0]]))
    assert order.tolist() == [1, 0] and scores[1] > scores[0]
    assert as_values(0.5) == {"value": 0.5}
    assert as_values({"a": np.float32(1)}) == {"a": 1.0}
    assert list(as_values(np.array([1.0, 2.0]), "x")) == ["x[0]", "x[1]"]
    f = compare_values({"a": 1.0, "b": 2.0}, {"b": 3.0, "c": 0.0}, item="t")
    assert f.name.tolist() == ["a", "b", "c"] and np.isnan(f.after[0]) and f.delta[1] == 1.0


def test_watch_mlm_shows_union_of_top_k(tiny_bert_mlm):
    runner = get_runner(tiny_bert_mlm)
    w = watch_ablation(runner, ["The [MASK] sat on the mat."], Ablation.layers([1]), k=3)
    assert w.kind == "mlm"
    f = w.frame
    assert set(f["item"]) == {"text 0 mask 0"} and 3 <= len(f) <= 6
    assert (f.before.iloc[:3].diff().dropna() <= 0).all()  # before's top-3 first, best first
    assert not np.allclose(f.before, f.after)
    logits = w.after[0].outputs["mask_logits"][0]
    tok = runner.tokenizer
    p = softmax(logits)[tok.convert_tokens_to_ids(f.name.iloc[0])]
    assert f.after.iloc[0] == pytest.approx(p, rel=1e-5)
    d = w.to_dict()
    assert d["kind"] == "mlm" and set(d["rows"][0]) == {"item", "name", "before", "after", "delta"}


def test_watch_pairs_ranking_drift_and_callable(tiny_bert):
    runner = get_runner(tiny_bert)
    ab = Ablation.heads([(0, 1)])
    pairs = watch_ablation(runner, ["A cat sat.", "Dogs bark."], ab, text_pairs=["A cat was sitting.", "Cats meow."])
    assert pairs.kind == "pairs" and len(pairs.frame) == 2 and len(pairs.after) == 2
    e = [r.outputs["embedding"] for r in runner.run_batch(["A cat sat.", "A cat was sitting."], ablation=ab)]
    assert pairs.frame.after[0] == pytest.approx(pair_similarities(e[0][None], e[1][None])[0], rel=1e-5)
    rank = watch_ablation(runner, ["A cat sat.", "Stocks fell.", "A cat was sitting."], ab, query="The cat sits.")
    assert rank.kind == "ranking"
    ranks = rank.frame[rank.frame.name == "rank"]
    assert sorted(ranks.before) == [1, 2, 3] and sorted(ranks.after) == [1, 2, 3]
    drift = watch_ablation(runner, ["A cat sat."], ab)
    assert drift.kind == "drift" and drift.frame.before[0] == 1.0 and drift.frame.after[0] < 1.0
    same = watch_ablation(runner, ["A cat sat."], Ablation())
    assert same.frame.after[0] == pytest.approx(1.0)
    fn = watch_ablation(runner, ["A cat sat."], ab, kind=lambda r: {"n": r.n_tokens, "a": r.attention[0, 1, 0, 0]})
    assert fn.kind == "callable" and fn.frame.set_index("name").loc["a", "after"] == 0.0
    with pytest.raises(ValueError, match="query"):
        watch_ablation(runner, ["x"], ab, kind="ranking")
    with pytest.raises(ValueError, match="masked-LM"):
        watch_ablation(runner, ["x"], ab, kind="mlm")


def test_shipped_sets_load_and_split():
    s = load_sentiment()
    assert len(s) == 200 and (s.label == "pos").sum() == 100 and s.text.str.len().min() > 10
    assert s.text.is_unique
    p = load_sts_pairs()
    assert len(p) >= 150 and p.score.between(0, 5).all() and p.score.std() > 1
    train, test = train_test_split_frame(s, test_size=0.4, seed=0)
    assert len(test) == 80 and (test.label == "pos").sum() == 40
    assert not set(train.text) & set(test.text)
    again, _ = train_test_split_frame(s, test_size=0.4, seed=0)
    assert again.text.tolist() == train.text.tolist()


def test_probe_weights_reproduce_its_logits():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 4)) * [1, 10, 0.1, 3] + [0, 5, 0, 0]
    y = np.where(X[:, 0] + 0.1 * X[:, 1] > 0.5, "pos", "neg")
    probe = fit_probe(X, y)
    p1 = 1 / (1 + np.exp(-(X @ probe.weight[0] + probe.bias[0])))
    np.testing.assert_allclose(probe.predict_proba(X)[:, 1], p1, rtol=1e-6)
    assert probe.accuracy(X, y) > 0.9 and probe.log_likelihood(X, y) < 0
    with pytest.raises(ValueError, match="two classes"):
        fit_probe(X, ["a"] * 60)


@pytest.mark.slow
def test_probe_on_bundled_embeddings_beats_chance(bundled):
    s = load_sentiment()
    X = np.stack([r.outputs["embedding"] for r in bundled.run_batch(list(s.text), batch_size=64)])
    assert cross_validated_accuracy(X, s.label.to_numpy()) > 0.8


def test_head_similarity_is_cosine_of_flattened_maps():
    rng = np.random.default_rng(0)
    a = rng.random((2, 3, 4, 4)).astype(np.float32)
    b = rng.random((2, 3, 4, 4)).astype(np.float32)
    a, b = a / a.sum(-1, keepdims=True), b / b.sum(-1, keepdims=True)  # rows of probabilities, as from_arrays wants
    toks = ["[CLS]", "a", "b", "[SEP]"]
    ra, rb = AttentionResult.from_arrays(a, toks), AttentionResult.from_arrays(b, toks)
    s = head_similarity(ra, rb)
    x, y = a[1, 2].ravel(), b[1, 2].ravel()
    assert s[1, 2] == pytest.approx(x @ y / np.linalg.norm(x) / np.linalg.norm(y), rel=1e-6)
    np.testing.assert_allclose(head_similarity(ra, ra), 1.0)
    np.testing.assert_allclose(head_similarity(ra, ra, measure="l1"), 1.0)
    m = mean_head_similarity([ra, ra], [ra, rb])
    np.testing.assert_allclose(m, (1.0 + s) / 2)
    assert similarity_by_layer(s).shape == (2, 5)
    with pytest.raises(ValueError, match="different tokens"):
        head_similarity(ra, AttentionResult.from_arrays(a, ["[CLS]", "x", "b", "[SEP]"]))


def test_finetune_changes_attention_and_makes_a_runner(tiny_bert):
    from attnwidgets.studies.finetune import finetune_classifier

    runner = get_runner(tiny_bert)
    texts = ["good fun", "great film", "bad food", "awful day"] * 2
    labels = ["pos", "pos", "neg", "neg"] * 2
    tuned, log = finetune_classifier(runner, texts, labels, epochs=2, lr=1e-2, batch_size=4, progress=False)
    assert len(log["losses"]) == 4 and log["classes"] == ["neg", "pos"]
    before, after = runner.run("good fun"), tuned.run("good fun")
    sim = head_similarity(before, after)
    assert sim.shape == (2, 4) and np.all(sim < 1.0) and np.all(sim > 0)
    assert runner.run("good fun") is before  # the original runner and model are untouched


def test_static_twins_return_figures():
    from matplotlib.figure import Figure

    from attnwidgets.plots import plot_pruning_curve, plot_sweep
    from attnwidgets.studies.pruning import PruningCurve
    from attnwidgets.studies.sweeps import SweepResult

    heads = np.array([[0.5, 0.7], [0.6, 0.4]])
    sweep = SweepResult(frame=None, heads=heads, layers=np.array([0.3, 0.55]), baseline=0.6, metric="acc",
                        mode="uniform", seconds=1.0)
    fig = plot_sweep(sweep)
    assert isinstance(fig, Figure)
    outlined = [p for p in fig.axes[0].patches]
    assert len(outlined) == 1  # only head (0, 1) improves on 0.6
    import pandas as pd

    curve = PruningCurve(pd.DataFrame({"share": [0, 0.5], "metric": [0.9, 0.8]}), "acc", [])
    fig2 = plot_pruning_curve(curve)
    assert isinstance(fig2, Figure) and fig2.axes[0].get_xlabel() == "heads pruned (%)"


def test_analysis_modules_do_not_import_torch():
    code = ("import sys; import attnwidgets.analysis.outputs, attnwidgets.analysis.probe, "
            "attnwidgets.analysis.compare, attnwidgets.plots.ablation, attnwidgets.data.labelled; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_pruning_curve_plot_takes_a_frame():
    import pandas as pd

    from attnwidgets.plots import plot_pruning_curve
    from attnwidgets.studies.pruning import PruningCurve

    frame = pd.DataFrame({"share": [0, 0.5], "metric": [0.9, 0.8]})
    fig = plot_pruning_curve(frame)
    assert fig.axes[0].get_ylabel() == "metric"  # not the text of the metric column
    fig = plot_pruning_curve(PruningCurve(frame, "spearman", []), label="a")
    plot_pruning_curve(frame, ax=fig.axes[0], label="b")
    assert fig.axes[0].get_ylabel() == "spearman" and len(fig.axes[0].lines) == 4


def test_watch_checks_its_arguments_before_running_the_model(tiny_bert):
    runner = get_runner(tiny_bert)
    texts = ["A sentence nobody ran before the argument checks."]
    n = runner.n_forward
    with pytest.raises(ValueError, match="unknown kind 'foo'"):
        watch_ablation(runner, texts, Ablation.heads([(0, 1)]), kind="foo")
    with pytest.raises(ValueError, match="masked-LM"):
        watch_ablation(runner, texts, Ablation.heads([(0, 1)]), kind="mlm")
    with pytest.raises(ValueError, match="classification head"):
        watch_ablation(runner, texts, Ablation.heads([(0, 1)]), kind="probs")
    assert runner.n_forward == n


def test_watch_classifier_probabilities(tiny_bert_classifier):
    runner = get_runner(tiny_bert_classifier)
    assert runner.head == "classification"
    texts = ["A wonderful, moving film.", "Dull and far too long."]
    ab = Ablation.layers([1], "uniform")
    w = watch_ablation(runner, texts, ab)
    assert w.kind == "probs"
    f = w.frame
    assert f["item"].tolist() == ["text 0", "text 0", "text 1", "text 1"]
    assert f["name"].tolist() == ["neg", "pos", "neg", "pos"]
    clean = [r.outputs for r in runner.run_batch(texts)]
    ablated = [r.outputs for r in runner.run_batch(texts, ablation=ab)]
    np.testing.assert_allclose(f.before, np.concatenate([softmax(o["logits"]) for o in clean]), rtol=1e-5)
    np.testing.assert_allclose(f.after, np.concatenate([o["probs"] for o in ablated]), rtol=1e-6)
    np.testing.assert_allclose(f.groupby("item").after.sum(), 1.0, rtol=1e-6)
    assert np.abs(f.delta).max() > 1e-3, "a disabled layer moves the class probabilities"
    np.testing.assert_allclose(f.delta, f.after - f.before)
    assert w.to_dict()["kind"] == "probs"


def test_head_similarity_of_runs_is_one_where_nothing_changed_and_known_where_a_head_was_edited(tiny_bert):
    """Clean vs ablated in layer 1: layer 0 and the other heads are 1; a uniform head's cosine to its clean map A is
    Σ A / n / (‖A‖ · ‖U‖) = 1 / ‖A‖_F (rows of A sum to 1 and U = 1/n has ‖U‖_F = 1); a zeroed head's is 0."""
    runner = get_runner(tiny_bert)
    texts = ["The cat sat on the mat.", "Dogs bark at night, loudly."]
    clean = runner.run_batch(texts)
    np.testing.assert_allclose(mean_head_similarity(clean, runner.run_batch(texts)), 1.0, rtol=1e-12)
    edited = runner.run_batch(texts, ablation=Ablation.heads({(1, 3): "uniform", (1, 1): "zero"}))
    sim = mean_head_similarity(clean, edited)
    expected = np.ones((2, 4))
    expected[1, 3] = np.mean([1 / np.linalg.norm(r.attention[1, 3].astype(np.float64)) for r in clean])
    expected[1, 1] = 0.0
    np.testing.assert_allclose(sim, expected, rtol=1e-5, atol=1e-7)
    by_layer = similarity_by_layer(sim)
    assert by_layer.least_similar_head[1] == 1 and by_layer["min"][1] == 0.0


def test_compare_finetuning_without_learning_finds_every_head_unchanged(tiny_bert):
    """lr=0 leaves the copy's weights as they were: every head's maps agree with the original's (cosine 1)."""
    from attnwidgets.studies.finetune import compare_finetuning

    runner = get_runner(tiny_bert)
    cmp = compare_finetuning(runner, epochs=1, lr=0.0, progress=False)
    assert cmp.similarity.shape == (2, 4) and len(cmp.texts) == 60
    np.testing.assert_allclose(cmp.similarity, 1.0, rtol=1e-6)
    np.testing.assert_allclose(cmp.by_layer["mean"], 1.0, rtol=1e-6)
    assert cmp.tuned.info.name.endswith("(fine-tuned)") and 0.0 <= cmp.log["heldout_accuracy"] <= 1.0
    text = cmp.texts[0]
    np.testing.assert_allclose(head_similarity(runner.run(text), cmp.tuned.run(text)), 1.0, rtol=1e-6)
