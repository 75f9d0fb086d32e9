"""The tests of tests/result/test_persist.py that need a model (a run, a study or a runner): saving and loading what
a model made, and the model check against a real runner. The rest of the file runs without torch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lazy_helpers import lazy_result
from pandas.testing import assert_frame_equal
from sample_texts import SENTENCES

import attnwidgets as aw
from attnwidgets.analysis.corpus import CorpusStats
from attnwidgets.persist import (
    FORMAT,
    ModelMismatchError,
    check_provenance,
    provenance,
    read,
    read_tags,
    write,
)
from attnwidgets.result import AttentionResult, ModelInfo
from tests.result.test_persist import assert_same_corpus_stats, assert_same_dependency_scores


@pytest.mark.parametrize("options", [dict(), dict(words=True, smoothing=1e-4, distances=True),
                                     dict(patterns=False)])
def test_corpus_stats_round_trip_on_a_tiny_model(tiny_bert, tmp_path, options) -> None:
    stats = aw.studies.corpus_stats(SENTENCES, model=tiny_bert, progress=False, **options)
    path = stats.save(tmp_path / "stats.npz")
    back = CorpusStats.load(path, model=tiny_bert)
    assert_same_corpus_stats(stats, back)
    assert read_tags(path)["settings"] == {"words": options.get("words", False),
                                           "smoothing": options.get("smoothing", 0.0),
                                           "distances": options.get("distances", False),
                                           "patterns": options.get("patterns", True)}


def test_a_loaded_corpus_stats_keeps_adding(tiny_bert, tmp_path) -> None:
    """Sums, counts and distances come back as running sums: adding the rest of the corpus to the loaded half gives
    the statistics of the whole corpus."""
    whole = aw.studies.corpus_stats(SENTENCES, model=tiny_bert, distances=True, progress=False, batch_size=1)
    half = aw.studies.corpus_stats(SENTENCES[:1], model=tiny_bert, distances=True, progress=False)
    back = CorpusStats.load(half.save(tmp_path / "half.npz"))
    back.update(aw.run(t, model=tiny_bert) for t in SENTENCES[1:])
    for key, value in whole.mean().items():
        np.testing.assert_allclose(back.mean()[key], value, rtol=1e-6, atol=1e-9, err_msg=key)
    np.testing.assert_allclose(back.distances(), whole.distances(), rtol=1e-6)


def test_corpus_stats_on_the_bundled_model_and_shipped_corpus(tmp_path) -> None:
    from attnwidgets.data import load_corpus

    stats = aw.studies.corpus_stats(load_corpus()[:16], progress=False, distances=True)
    path = stats.save(tmp_path / "bundled.npz")
    runner = aw.runner.get_runner()
    assert_same_corpus_stats(stats, CorpusStats.load(path, model=runner))
    tags = read_tags(path)
    assert tags["kind"] == "CorpusStats" and tags["attnwidgets_file"] == FORMAT
    assert tags["attnwidgets"] == aw.__version__
    assert tags["model"]["name"] == "all-MiniLM-L6-v2 (bundled)"
    assert tags["model"]["commit"] == runner.info.commit and runner.info.commit.startswith("config-sha256:")


def test_corpus_stats_from_another_model_are_refused(tiny_bert, tmp_path) -> None:
    stats = aw.studies.corpus_stats(SENTENCES, model=tiny_bert, progress=False)
    path = stats.save(tmp_path / "stats.npz")
    for other in (aw.runner.get_runner(), aw.runner.get_runner().info, "bert-base-uncased"):
        with pytest.raises(ModelMismatchError) as caught:
            CorpusStats.load(path, model=other)
        message = str(caught.value)
        assert tiny_bert in message and "model=None" in message
        assert "bundled" in message or "bert-base-uncased" in message
    assert CorpusStats.load(path).n_docs == 3  # model=None: no check


def test_dependency_scores_round_trip_on_the_ud_sample(tmp_path) -> None:
    from attnwidgets.analysis.conllu import read_conllu
    from attnwidgets.analysis.dependency import DependencyScores
    from attnwidgets.data import ud_sample_path

    scores = aw.studies.dependency_scores(read_conllu(ud_sample_path())[:12], progress=False, rows="first")
    assert scores.settings == {"rows": "first", "subtypes": True}
    assert scores.model_info == aw.runner.get_runner().info
    path = aw.save(scores, tmp_path / "deps.npz")
    back = aw.load(path, model=aw.runner.get_runner())
    assert isinstance(back, DependencyScores)
    assert_same_dependency_scores(scores, back)
    assert_same_dependency_scores(scores, DependencyScores.load(path, model="all-MiniLM-L6-v2 (bundled)"))
    assert read_tags(path)["settings"] == {"rows": "first", "subtypes": True}


def test_dependency_scores_from_a_tiny_model_are_refused_against_the_bundled_one(tiny_bert, tmp_path) -> None:
    from attnwidgets.analysis.conllu import read_conllu
    from attnwidgets.analysis.dependency import DependencyScores
    from attnwidgets.data import ud_sample_path

    scores = aw.studies.dependency_scores(read_conllu(ud_sample_path())[:4], model=tiny_bert, progress=False)
    path = scores.save(tmp_path / "deps.npz")
    assert_same_dependency_scores(scores, DependencyScores.load(path, model=tiny_bert))
    with pytest.raises(ModelMismatchError, match="all-MiniLM-L6-v2") as caught:
        aw.load(path, model=aw.runner.get_runner())
    assert tiny_bert in str(caught.value)


def assert_same_sweep(a, b) -> None:
    assert_frame_equal(a.frame, b.frame)
    for name in ("heads", "layers", "delta", "improving"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.baseline, a.metric, a.mode, a.seconds, a.seconds_per_head) == \
        (b.baseline, b.metric, b.mode, b.seconds, b.seconds_per_head)
    assert a.model == b.model and a.settings == b.settings


@pytest.fixture(scope="module")
def tiny_task():
    """Score: mean first embedding coordinate; loss: sum of squares of the pooled embedding (test_sweeps' toy task)."""
    from attnwidgets.studies.tasks import Task

    def score_embeddings(E):
        return float(E[:, 0].mean())

    def score(results):
        return score_embeddings(np.stack([r.outputs["embedding"] for r in results]))

    return Task("toy", "first coordinate", list(SENTENCES), score, lambda pooled, rows: (pooled ** 2).sum(),
                score_embeddings=score_embeddings)


def test_sweep_round_trip_on_a_tiny_model(tiny_bert, tiny_task, tmp_path) -> None:
    from attnwidgets.studies.sweeps import SweepResult, sweep_heads

    runner = aw.runner.get_runner(tiny_bert)
    sweep = sweep_heads(runner, tiny_task, progress=False)
    assert sweep.model == runner.info and sweep.settings["task"] == tiny_task.name
    path = aw.save(sweep, tmp_path / "sweep.npz")
    back = SweepResult.load(path, model=runner)
    assert_same_sweep(sweep, back)
    assert_same_sweep(sweep, aw.load(path))
    with pytest.raises(ModelMismatchError):
        aw.load(path, model=aw.runner.get_runner())


def test_pruning_curve_and_importance_round_trip(tiny_bert, tiny_task, tmp_path) -> None:
    from attnwidgets.studies.pruning import PruningCurve, pruning_curve

    runner = aw.runner.get_runner(tiny_bert)
    curve = pruning_curve(runner, tiny_task, step=0.25, max_share=0.5, progress=False)
    back = PruningCurve.load(curve.save(tmp_path / "curve.npz"), model=runner)
    assert_frame_equal(curve.frame, back.frame)
    assert back.frame["pruned"].iloc[-1] == curve.frame["pruned"].iloc[-1]
    assert all(isinstance(lh, tuple) for lh in back.frame["pruned"].iloc[-1])
    assert len(back.importance) == len(curve.importance) == 2
    for x, y in zip(curve.importance, back.importance):
        np.testing.assert_array_equal(x, y)  # NaN for pruned heads, equal too
    assert (back.metric, back.model, back.settings) == (curve.metric, curve.model, curve.settings)

    imp = curve.importance[0]
    path = aw.save(imp, tmp_path / "imp.npz", model=runner, settings={"task": tiny_task.name, "normalize": "layer"})
    np.testing.assert_array_equal(aw.load(path, model=tiny_bert), imp)
    assert read_tags(path)["kind"] == "HeadImportance" and read_tags(path)["settings"]["normalize"] == "layer"
    with pytest.raises(ValueError, match="pass model="):
        aw.save(imp, tmp_path / "x.npz")
    with pytest.raises(ValueError, match="does not fit"):
        aw.save(np.zeros((3, 3)), tmp_path / "x.npz", model=runner)


def assert_same_result(a: AttentionResult, b: AttentionResult) -> None:
    assert a.tokens == b.tokens and a.model == b.model
    for name in ("text", "text_pair", "target_text", "target_tokens", "truncated", "ablation"):
        assert getattr(a, name) == getattr(b, name), name
    for name in ("token_ids", "word_ids", "segment_ids", "special_mask", "attention", "target_token_ids",
                 "decoder_attention", "cross_attention"):
        x, y = getattr(a, name), getattr(b, name)
        if x is None:
            assert y is None, name
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)
            assert x.dtype == y.dtype and not y.flags.writeable, name
    assert a.outputs.keys() == b.outputs.keys()
    for key in a.outputs:
        np.testing.assert_array_equal(a.outputs[key], b.outputs[key], err_msg=key)


def test_results_round_trip(tiny_bert, tiny_bart, tmp_path) -> None:
    pair = aw.run("The cat sat.", model=tiny_bert, text_pair="It was tired.")
    seq2seq = aw.run("The cat sat.", model=tiny_bart, target="Le chat")
    bundled = aw.run("The cat sat on the mat because it was tired.")
    for i, result in enumerate([pair, seq2seq, bundled]):
        path = aw.save(result, tmp_path / f"r{i}.npz")
        back = aw.load(path, model=result.model)
        assert_same_result(result, back)
    with pytest.raises(ModelMismatchError, match=r"tiny|bart"):
        aw.load(tmp_path / "r1.npz", model=aw.runner.get_runner())


def test_long_and_ablated_results_are_refused_with_what_to_do(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"queries and keys.*corpus_stats"):
        aw.save(lazy_result(64), tmp_path / "lazy.npz")
    ablated = aw.run("The cat sat.", ablation=aw.runner.Ablation.heads([(0, 1)]))
    with pytest.raises(ValueError, match=r"ablated.*to_dict"):
        aw.save(ablated, tmp_path / "ablated.npz")
    assert not list(tmp_path.iterdir())


def test_saving_something_else_says_what_can_be_saved(tmp_path) -> None:
    with pytest.raises(TypeError, match="CorpusStats, DependencyScores"):
        aw.save({"a": 1}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="importance array"):
        aw.save(CorpusStats(), tmp_path / "x.npz", model=aw.runner.get_runner())


def test_provenance_and_its_check(tiny_bert, tmp_path) -> None:
    runner = aw.runner.get_runner(tiny_bert)
    tags = provenance(runner)
    assert tags["name"] == Path(tiny_bert).name and tags["path"] == str(Path(tiny_bert).resolve())
    assert tags["commit"].startswith("config-sha256:") and tags["n_layers"] == 2 and tags["n_heads"] == 4
    check_provenance(tags, runner)
    check_provenance(tags, runner.info)
    check_provenance(tags, tiny_bert)
    check_provenance(tags, None)
    with pytest.raises(ModelMismatchError, match=r"at config-sha256:.*other weights or config"):
        check_provenance({**tags, "commit": "config-sha256:0000"}, runner)
    with pytest.raises(ModelMismatchError, match="n_heads=8"):
        check_provenance({**tags, "n_heads": 8}, runner)
    with pytest.raises(TypeError, match="a runner, a ModelInfo"):
        check_provenance(tags, 42)
    # the file's whole tags work too, as the Ray resume folder keeps them
    write(tmp_path / "x.npz", "Example", {"a": np.zeros(1)}, model=runner)
    check_provenance(read_tags(tmp_path / "x.npz"), tiny_bert)
    with pytest.raises(ModelMismatchError):
        read(tmp_path / "x.npz", model=ModelInfo("other", "encoder", 2, 4, 64))


def test_the_commit_of_a_local_folder_follows_its_config(tmp_path) -> None:
    from attnwidgets.runner.loading import model_commit

    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    first = model_commit(None, tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "bert", "num_hidden_layers": 3}')
    assert first != model_commit(None, tmp_path) and first.startswith("config-sha256:")

    class HubConfig:
        _commit_hash = "86b5e0934494bd15c9632b12f734a8a67f723594"

    assert model_commit(HubConfig()) == HubConfig._commit_hash
    assert model_commit(object()) is None
