"""Saving analyses and loading them back (issue 16.6): every object round-trips exactly, every file is tagged with its
model, and a file from another model, a newer format, another kind or a damaged file is refused with a clear message."""

from __future__ import annotations

import io
import json
import zipfile
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
    SavedFileError,
    check_provenance,
    provenance,
    read,
    read_tags,
    write,
)
from attnwidgets.result import AttentionResult, ModelInfo


def assert_same_corpus_stats(a: CorpusStats, b: CorpusStats) -> None:
    assert (a.n_docs, a.n_tokens, a.words, a.smoothing) == (b.n_docs, b.n_tokens, b.words, b.smoothing)
    assert a.model == b.model
    ma, mb = a.mean(), b.mean()
    assert ma.keys() == mb.keys()
    for key in ma:
        np.testing.assert_array_equal(ma[key], mb[key])
    assert_frame_equal(a.frame(), b.frame())
    if a.pattern_counts is None:
        assert b.pattern_counts is None
    else:
        np.testing.assert_array_equal(a.pattern_counts, b.pattern_counts)
        assert_frame_equal(a.patterns(), b.patterns())
        np.testing.assert_array_equal(a.majority_pattern(), b.majority_pattern())
    try:
        da = a.distances()
    except ValueError:
        with pytest.raises(ValueError, match="distances=True"):
            b.distances()
    else:
        np.testing.assert_array_equal(da, b.distances())


# -- CorpusStats ---------------------------------------------------------------------------------------------------


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


def test_corpus_stats_of_a_long_input_round_trip(tmp_path) -> None:
    stats = aw.analysis.corpus_stats([lazy_result(40), lazy_result(30, seed=1)], distances=True)
    assert_same_corpus_stats(stats, CorpusStats.load(stats.save(tmp_path / "lazy.npz"), model=stats.model))


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


def test_empty_corpus_stats_round_trip(tmp_path) -> None:
    back = CorpusStats.load(CorpusStats(words=True).save(tmp_path / "empty.npz"))
    assert (back.n_docs, back.words, back.model) == (0, True, None)
    with pytest.raises(ModelMismatchError, match="does not say which model"):
        CorpusStats.load(tmp_path / "empty.npz", model="bert-base-uncased")


# -- DependencyScores ----------------------------------------------------------------------------------------------


def assert_same_dependency_scores(a, b) -> None:
    assert a.relations == b.relations and (a.n_sentences, a.model) == (b.n_sentences, b.model)
    assert a.model_info == b.model_info and a.settings == b.settings
    for name in ("counts", "correct", "baseline_correct", "accuracy", "accuracy_all", "baseline"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert getattr(a, name).dtype == getattr(b, name).dtype, name
    assert_frame_equal(a.table(), b.table())
    assert_frame_equal(a.frame(), b.frame())
    assert repr(a) == repr(b)


def test_dependency_scores_round_trip_on_the_ud_sample(tmp_path) -> None:
    from attnwidgets.analysis.dependency import DependencyScores, read_conllu
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
    from attnwidgets.analysis.dependency import DependencyScores, read_conllu
    from attnwidgets.data import ud_sample_path

    scores = aw.studies.dependency_scores(read_conllu(ud_sample_path())[:4], model=tiny_bert, progress=False)
    path = scores.save(tmp_path / "deps.npz")
    assert_same_dependency_scores(scores, DependencyScores.load(path, model=tiny_bert))
    with pytest.raises(ModelMismatchError, match="all-MiniLM-L6-v2") as caught:
        aw.load(path, model=aw.runner.get_runner())
    assert tiny_bert in str(caught.value)


def test_dependency_scores_that_know_only_a_name(tmp_path) -> None:
    """Scores built by hand know the model's name only: the file says so, and checks that name."""
    from attnwidgets.analysis.dependency import DependencyScores

    correct = np.arange(2 * 1 * 2 * 3, dtype=np.float64).reshape(2, 1, 2, 3) % 4
    scores = DependencyScores(["amod", "det", "nsubj"], np.array([4, 5, 6]), correct, np.ones((6, 3)), 2, "toy")
    path = scores.save(tmp_path / "toy.npz")
    assert read_tags(path)["model"] == {"name": "toy", "path": None}
    assert_same_dependency_scores(scores, DependencyScores.load(path, model="toy"))
    with pytest.raises(ModelMismatchError, match=r"'toy'.*'other'"):
        DependencyScores.load(path, model="other")


# -- sweeps, pruning, importance -----------------------------------------------------------------------------------


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
    from attnwidgets.studies.sweeps import PruningCurve, pruning_curve

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


# -- attention results ---------------------------------------------------------------------------------------------


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


# -- bad files -----------------------------------------------------------------------------------------------------


@pytest.fixture
def saved_stats(tmp_path) -> Path:
    r = AttentionResult.from_arrays(np.array([[0.5, 0.5], [0.0, 1.0]]), ["[CLS]", "[SEP]"])
    return aw.analysis.corpus_stats([r] * 2).save(tmp_path / "stats.npz")


def test_a_file_of_another_kind_is_refused(saved_stats) -> None:
    from attnwidgets.analysis.dependency import DependencyScores

    with pytest.raises(SavedFileError, match=r"holds a CorpusStats, not a DependencyScores.*aw.load"):
        DependencyScores.load(saved_stats)


@pytest.mark.parametrize("cut", [0.0, 0.3, 0.9])
def test_a_truncated_file_is_refused(saved_stats, cut) -> None:
    data = saved_stats.read_bytes()
    saved_stats.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(SavedFileError, match="damaged"):
        aw.load(saved_stats)


def test_a_corrupt_entry_is_refused(saved_stats) -> None:
    data = bytearray(saved_stats.read_bytes())
    data[60:80] = b"\x00" * 20  # inside the first compressed entry
    saved_stats.write_bytes(bytes(data))
    with pytest.raises(SavedFileError, match="damaged"):
        CorpusStats.load(saved_stats)


def test_files_that_are_not_ours_are_refused(tmp_path) -> None:
    np.save(tmp_path / "bare.npy", np.zeros(3))
    np.savez(tmp_path / "plain.npz", a=np.zeros(3))
    (tmp_path / "text.npz").write_text("hello")
    np.savez(tmp_path / "pickled.npz", a=np.array([{"x": 1}], dtype=object))
    for name in ("bare.npy", "plain.npz", "text.npz", "pickled.npz"):
        with pytest.raises(SavedFileError, match="not a file attnwidgets saved"):
            aw.load(tmp_path / name)
    with pytest.raises(FileNotFoundError, match="no saved file"):
        aw.load(tmp_path / "missing.npz")


def rewrite_tags(path: Path, change) -> None:
    with zipfile.ZipFile(path) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    tags = json.loads(str(np.load(path, allow_pickle=False)["__tags__"]))
    change(tags)
    buffer = io.BytesIO()
    np.save(buffer, np.array(json.dumps(tags)))
    entries["__tags__.npy"] = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)


def test_a_newer_format_is_refused_with_upgrade_advice(saved_stats) -> None:
    rewrite_tags(saved_stats, lambda t: t.update(attnwidgets_file=FORMAT + 1, attnwidgets="9.0"))
    with pytest.raises(SavedFileError, match=f"attnwidgets 9.0 in file format {FORMAT + 1}.*upgrade"):
        aw.load(saved_stats)


def test_an_unknown_kind_is_refused(saved_stats) -> None:
    rewrite_tags(saved_stats, lambda t: t.update(kind="Hologram"))
    with pytest.raises(SavedFileError, match="'Hologram', which this attnwidgets"):
        aw.load(saved_stats)


def test_loading_runs_no_code_from_the_file(saved_stats) -> None:
    """An object array would need pickle to read: under a name the format reads it is refused, never unpickled; under
    a name it does not read it is never opened at all (issue 23: only the entries the format names are read)."""
    buffer = io.BytesIO()
    np.save(buffer, np.array([print], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(saved_stats, "a") as z:
        z.writestr("evil.npy", buffer.getvalue())
    assert aw.load(saved_stats).n_docs == 2
    with zipfile.ZipFile(saved_stats) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    entries["sum.sep.npy"] = buffer.getvalue()
    with zipfile.ZipFile(saved_stats, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    with pytest.raises(SavedFileError, match=r"damaged.*'sum\.sep' as Python objects"):
        aw.load(saved_stats)


def test_saving_something_else_says_what_can_be_saved(tmp_path) -> None:
    with pytest.raises(TypeError, match="CorpusStats, DependencyScores"):
        aw.save({"a": 1}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="importance array"):
        aw.save(CorpusStats(), tmp_path / "x.npz", model=aw.runner.get_runner())


# -- provenance ----------------------------------------------------------------------------------------------------


def test_provenance_and_its_check(tiny_bert, tmp_path) -> None:
    runner = aw.runner.get_runner(tiny_bert)
    tags = provenance(runner)
    assert tags["name"] == tiny_bert and tags["path"] == str(Path(tiny_bert).resolve())
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


def test_one_hub_commit_under_two_names_is_the_same_model_but_one_config_is_not() -> None:
    commit = "86b5e0934494bd15c9632b12f734a8a67f723594"
    saved = provenance(ModelInfo("bert-base-uncased", "encoder", 12, 12, 512, commit=commit))
    check_provenance(saved, ModelInfo("google-bert/bert-base-uncased", "encoder", 12, 12, 512, commit=commit))
    config = provenance(ModelInfo("./finetuned-a", "encoder", 12, 12, 512, commit="config-sha256:1234"))
    with pytest.raises(ModelMismatchError, match="finetuned-a"):
        check_provenance(config, ModelInfo("./finetuned-b", "encoder", 12, 12, 512, commit="config-sha256:1234"))


def test_numpy_numbers_in_settings_are_saved_as_numbers(tmp_path) -> None:
    write(tmp_path / "x.npz", "Example", {}, settings={"step": np.float32(0.25), "n": np.int64(3)})
    assert read_tags(tmp_path / "x.npz")["settings"] == {"step": 0.25, "n": 3}
    with pytest.raises(TypeError, match="not JSON"):
        write(tmp_path / "y.npz", "Example", {}, settings={"bad": object()})
    assert not (tmp_path / "y.npz").exists()
