"""Mergeable results, the shard route, results folders that resume, and the Ray backend (issue 17).

Every study runs shard -> merge, in this process or on Ray; these tests check that merging shards gives the whole,
that a results folder resumes (and refuses another run's folder), and that Ray gives the single-process numbers,
survives a killed worker and says how to install itself when missing. One local Ray with 2 worker CPUs is started
once for the whole session (``ray_session``).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

import attnwidgets as aw
from attnwidgets.analysis.conllu import read_conllu
from attnwidgets.analysis.corpus import CorpusStats
from attnwidgets.data import load_corpus, ud_sample_path
from attnwidgets.runner import get_runner
from attnwidgets.studies import pool, shards
from attnwidgets.studies.corpus import CorpusWork
from attnwidgets.studies.importance import ImportanceSums, head_importance, importance_sums
from attnwidgets.studies.sweeps import sweep_heads
from attnwidgets.studies.tasks import Task

TEXTS = load_corpus()[:24]


def assert_same_stats(a: CorpusStats, b: CorpusStats, rtol: float = 1e-5) -> None:
    assert (a.n_docs, a.n_tokens) == (b.n_docs, b.n_tokens)
    ma, mb = a.mean(), b.mean()
    assert ma.keys() == mb.keys()
    for key in ma:
        np.testing.assert_allclose(ma[key], mb[key], rtol=rtol, atol=1e-6, err_msg=key)
    assert a.pattern_counts is not None and b.pattern_counts is not None
    # pattern classes are thresholds of float features: allow one flip in a few thousand
    assert np.abs(a.pattern_counts - b.pattern_counts).sum() <= 2
    if a.settings()["distances"]:
        np.testing.assert_allclose(a.distances(), b.distances(), rtol=rtol, atol=1e-7)


def toy_task(runner) -> Task:
    """A task of 8 texts whose metric and loss are the first coordinate of the pooled embedding (as test_sweeps)."""
    import torch

    texts = list(TEXTS[:8])

    def score_embeddings(E: np.ndarray) -> float:
        return float(E[:, 0].mean())

    def score(results) -> float:
        return score_embeddings(np.stack([r.outputs["embedding"] for r in results]))

    def loss(pooled: torch.Tensor, rows: np.ndarray) -> torch.Tensor:
        return pooled[:, 0].sum()

    return Task("toy", "first coordinate", texts, score, loss, score_embeddings=score_embeddings)


# -- merge -------------------------------------------------------------------------------------------------------


def test_corpus_stats_of_shards_merge_into_the_whole_in_any_order(tiny_bert):
    runner = get_runner(tiny_bert)
    work = CorpusWork(distances=True, batch_size=8)
    whole = work(runner, [(t, None) for t in TEXTS])
    a, b, c = (work(runner, [(t, None) for t in part]) for part in (TEXTS[:5], TEXTS[5:17], TEXTS[17:]))
    assert_same_stats(a.merge(b, c), whole)
    assert_same_stats(c.merge(a, b), whole)
    assert_same_stats(a.merge(b).merge(c), a.merge(b.merge(c)))
    assert_same_stats(aw.studies.merge([b, c, a]), whole)
    # the parts are not changed
    assert a.n_docs == 5 and whole.n_docs == 24
    # against a hand-checkable number: the mean is the count-weighted mean of the parts' means
    sep = (a.mean()["sep"] * 5 + b.mean()["sep"] * 12 + c.mean()["sep"] * 7) / 24
    np.testing.assert_allclose(a.merge(b, c).mean()["sep"], sep, rtol=1e-10)


def test_merging_different_models_or_settings_is_refused(tiny_bert, tiny_gpt2):
    bert, gpt2 = get_runner(tiny_bert), get_runner(tiny_gpt2)
    a = CorpusWork()(bert, [(TEXTS[0], None)])
    with pytest.raises(ValueError, match="different models"):
        a.merge(CorpusWork()(gpt2, [(TEXTS[0], None)]))
    with pytest.raises(ValueError, match=r"smoothing=0\.0 in part 0 but smoothing=0\.0001 in part 1"):
        a.merge(CorpusWork(smoothing=1e-4)(bert, [(TEXTS[1], None)]))
    with pytest.raises(ValueError, match="words=False"):
        a.merge(CorpusWork(words=True)(bert, [(TEXTS[1], None)]))
    with pytest.raises(TypeError, match="one kind"):
        aw.studies.merge([a, ImportanceSums(np.zeros((2, 4)), 1)])
    with pytest.raises(ValueError, match="at least one part"):
        aw.studies.merge([])


def test_dependency_scores_of_shards_merge_into_the_whole(tiny_bert):
    sentences = read_conllu(ud_sample_path())
    whole = aw.studies.dependency_scores(sentences, tiny_bert, progress=False)
    parts = [aw.studies.dependency_scores(sentences[i:i + 10], tiny_bert, progress=False) for i in range(0, 45, 10)]
    assert any(p.relations != whole.relations for p in parts)  # parts saw fewer relations: merge aligns them
    merged = aw.studies.merge(parts[::-1])
    assert merged.relations == whole.relations and merged.n_sentences == whole.n_sentences == 45
    np.testing.assert_array_equal(merged.counts, whole.counts)
    np.testing.assert_array_equal(merged.correct, whole.correct)
    np.testing.assert_array_equal(merged.baseline_correct, whole.baseline_correct)
    first = aw.studies.dependency_scores(sentences[:10], tiny_bert, rows="first", progress=False)
    with pytest.raises(ValueError, match="rows='mean' in part 0 but rows='first'"):
        parts[0].merge(first)


def test_partial_sweeps_over_disjoint_heads_merge_into_the_whole(tiny_bert):
    runner = get_runner(tiny_bert)
    task = toy_task(runner)
    whole = sweep_heads(runner, task, mode="zero", progress=False)
    from attnwidgets.studies.sweeps import SweepWork

    sw = SweepWork(task, (2, 4), "zero")
    units = [("baseline", -1, -1)] + [("head", lay, h) for lay in range(2) for h in range(4)] + \
        [("layer", 0, -1), ("layer", 1, -1)]
    left, right = sw(runner, units[:4]), sw(runner, units[4:])
    assert np.isnan(right.baseline) and np.isnan(left.heads[1]).all()
    merged = right.merge(left)
    np.testing.assert_allclose(merged.heads, whole.heads, rtol=1e-6)
    np.testing.assert_allclose(merged.layers, whole.layers, rtol=1e-6)
    assert merged.baseline == pytest.approx(whole.baseline)
    assert merged.frame[["unit", "layer", "head"]].equals(whole.frame[["unit", "layer", "head"]])
    np.testing.assert_allclose(merged.frame["delta"], whole.frame["delta"], rtol=1e-5, atol=1e-9)
    with pytest.raises(ValueError, match="both swept head 0-2"):
        left.merge(sw(runner, units[3:5]))


def test_importance_sums_merge_and_head_importance_is_derived_from_them(tiny_bert):
    runner = get_runner(tiny_bert)
    task = toy_task(runner)
    batches = task.batches(2)
    whole = importance_sums(runner, task, batches)
    merged = aw.studies.merge([importance_sums(runner, task, [b]) for b in batches[::-1]])
    assert merged.n_examples == whole.n_examples == 8
    np.testing.assert_allclose(merged.total, whole.total, rtol=1e-10)
    np.testing.assert_allclose(head_importance(runner, task, batch_size=2, progress=False), whole.importance(),
                               rtol=1e-10)
    # by hand: importance is the mean over examples of |dL/dgate|, each layer's row then scaled to unit length
    raw = whole.total / 8
    np.testing.assert_allclose(whole.importance(None), raw)
    np.testing.assert_allclose(whole.importance(), raw / np.linalg.norm(raw, axis=1, keepdims=True))
    masked = importance_sums(runner, task, batches, mask=np.array([[1, 0, 1, 1], [1, 1, 1, 1]]))
    with pytest.raises(ValueError, match="different settings: mask="):
        whole.merge(masked)


# -- results folder: resume, refusal ---------------------------------------------------------------------------


class StopAfter:
    """A work function that raises (as an interrupted driver would stop) after ``n`` shards."""

    def __init__(self, work, n: int) -> None:
        self.work, self.n, self.calls = work, n, 0

    def __call__(self, runner, items):
        if self.calls >= self.n:
            raise KeyboardInterrupt("stopped on purpose")
        self.calls += 1
        return self.work(runner, items)


class Counting:
    def __init__(self, work) -> None:
        self.work, self.calls = work, 0

    def __call__(self, runner, items):
        self.calls += 1
        return self.work(runner, items)


def test_an_interrupted_run_resumes_from_its_results_folder(tiny_bert, tmp_path):
    runner = get_runner(tiny_bert)
    work = CorpusWork(distances=True, batch_size=4)
    plan = shards.plan([(t, None) for t in TEXTS], per_shard=4, lengths=[len(t) for t in TEXTS])
    assert len(plan) == 6
    options = shards.Options(results_dir=tmp_path / "run", progress=False)
    settings = {"study": "test", "distances": True}
    with pytest.raises(KeyboardInterrupt):
        shards.run(StopAfter(work, 4), plan, runner, options, kind=CorpusStats, settings=settings, desc="", unit="")
    files = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert files.count("manifest.json") == 1 and len([f for f in files if f.endswith(".npz")]) == 4
    again = Counting(work)
    resumed = shards.run(again, plan, runner, options, kind=CorpusStats, settings=settings, desc="", unit="")
    assert again.calls == 2  # only the two shards that had not finished
    uninterrupted = shards.run(work, plan, runner, shards.Options(progress=False), kind=CorpusStats,
                               settings=settings, desc="", unit="")
    assert_same_stats(resumed, uninterrupted, rtol=1e-12)
    # a shard file carries the model, revision and package version
    import json

    meta = json.loads((tmp_path / "run" / "shard-00000.json").read_text())
    assert meta["model"] == shards.ModelSpec.of(runner).name and meta["version"] == aw.__version__
    assert "revision" in meta
    # the public route: corpus_stats(results_dir=) resumes too, and gives the same numbers
    first = aw.studies.corpus_stats(TEXTS, model=tiny_bert, results_dir=tmp_path / "public", progress=False,
                                    batch_size=8)
    second = aw.studies.corpus_stats(TEXTS, model=tiny_bert, results_dir=tmp_path / "public", progress=False,
                                     batch_size=8)
    assert_same_stats(first, second, rtol=1e-12)


def test_a_results_folder_of_another_run_is_refused(tiny_bert, tiny_gpt2, tmp_path):
    folder = tmp_path / "run"
    aw.studies.corpus_stats(TEXTS[:4], model=tiny_bert, results_dir=folder, progress=False)
    with pytest.raises(shards.ResultsFolderError, match=r"smoothing.*Use another folder"):
        aw.studies.corpus_stats(TEXTS[:4], model=tiny_bert, results_dir=folder, progress=False, smoothing=1e-4)
    with pytest.raises(shards.ResultsFolderError, match="holds shards of another run: it has model="):
        aw.studies.corpus_stats(TEXTS[:4], model=tiny_gpt2, results_dir=folder, progress=False)
    with pytest.raises(shards.ResultsFolderError, match="the plan"):
        aw.studies.corpus_stats(TEXTS[4:8], model=tiny_bert, results_dir=folder, progress=False)


def test_missing_ray_says_how_to_install_it(tiny_bert, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(ImportError, match=r'pip install "attnwidgets\[ray\]"'):
        aw.studies.corpus_stats(TEXTS[:2], model=tiny_bert, backend="ray", progress=False)
    with pytest.raises(ValueError, match="backend must be 'local' or 'ray'"):
        aw.studies.corpus_stats(TEXTS[:2], model=tiny_bert, backend="dask", progress=False)


#: every study that runs through shards, and the Options fields it does not take (a pruning curve's steps depend on
#: each other, so there is no results folder to resume from)
SHARDED = {"corpus_stats": set(), "dependency_scores": set(), "sweep_heads": set(), "head_importance": set(),
           "pruning_curve": {"results_dir", "torch_threads"}}


@pytest.mark.parametrize("name", sorted(SHARDED))
def test_every_sharded_study_takes_the_options_fields_with_their_defaults(name):
    """One place says what the Ray keywords are and what they default to: shards.Options. Each study repeats them in
    its signature (so help() and an IDE show them), and this keeps every copy equal to Options."""
    import dataclasses
    import inspect

    params = inspect.signature(getattr(aw.studies, name)).parameters
    fields = [f for f in dataclasses.fields(shards.Options) if f.name not in SHARDED[name] | {"torch_threads"}]
    for f in fields:
        assert f.name in params, f"{name} does not take {f.name}, a field of shards.Options"
        p = params[f.name]
        assert p.kind is p.KEYWORD_ONLY and p.default == f.default, (
            f"{name}({f.name}={p.default!r}) differs from shards.Options' default {f.default!r}")
    order = [n for n in params if n in {f.name for f in fields} - {"progress"}]
    assert order == [f.name for f in fields if f.name != "progress"], f"{name} lists them out of Options' order"


@pytest.mark.parametrize("name", sorted(SHARDED))
def test_every_sharded_study_hands_its_keywords_to_options(tiny_bert, name):
    """What a study is given reaches shards.Options, whose checks name the keyword (a wrong value is refused before
    anything runs)."""
    runner = get_runner(tiny_bert)
    args, kwargs = {"corpus_stats": ((TEXTS[:2],), {"model": runner}),
                    "dependency_scores": ((ud_sample_path(), runner), {})}.get(name, ((runner, toy_task(runner)), {}))
    study = getattr(aw.studies, name)
    with pytest.raises(ValueError, match="backend must be 'local' or 'ray', got 'dask'"):
        study(*args, **kwargs, backend="dask", progress=False)
    with pytest.raises(ValueError, match="num_workers must be at least 1, got 0"):
        study(*args, **kwargs, num_workers=0, progress=False)
    with pytest.raises(ValueError, match="num_gpus must be 0 or more, got -1"):
        study(*args, **kwargs, num_gpus=-1, progress=False)


# -- Ray ----------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_session(ray_cluster):
    """The session's local Ray (tests/studies/conftest.py, shared with test_pool.py); this file is its last user, so
    Ray stops when the file ends rather than idling through the rest of the session."""
    pool.shutdown_pool()
    yield ray_cluster
    pool.shutdown_pool()
    ray_cluster.shutdown()


def test_ray_gives_the_single_process_numbers_on_the_shipped_corpus_and_ud_sample(ray_session):
    # The shipped corpus's first 96 texts: three batches of 32 shared by two workers, the whole corpus's shapes of
    # work (the 293 texts took 21 s of the unit tier for nothing more)
    corpus = load_corpus()[:96]
    local = aw.studies.corpus_stats(corpus, progress=False, distances=True)
    remote = aw.studies.corpus_stats(corpus, progress=False, distances=True, backend="ray", num_workers=2)
    assert remote.n_docs == len(corpus) == 96
    assert_same_stats(remote, local)
    ud = read_conllu(ud_sample_path())
    dep_local = aw.studies.dependency_scores(ud, progress=False)
    dep_remote = aw.studies.dependency_scores(ud, progress=False, backend="ray", num_workers=2, batch_size=8)
    assert dep_remote.relations == dep_local.relations and dep_remote.n_sentences == 45
    np.testing.assert_array_equal(dep_remote.counts, dep_local.counts)
    # argmax of attention rows: a tie broken differently by float rounding may move one guess
    assert np.abs(dep_remote.correct - dep_local.correct).sum() <= 2


def test_ray_sweep_and_importance_equal_the_local_ones(ray_session, tiny_bert):
    runner = get_runner(tiny_bert)
    task = toy_task(runner)
    local = sweep_heads(runner, task, mode="zero", progress=False)
    remote = sweep_heads(runner, task, mode="zero", progress=False, backend="ray", num_workers=2)
    np.testing.assert_allclose(remote.heads, local.heads, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(remote.layers, local.layers, rtol=1e-5, atol=1e-7)
    assert remote.frame[["unit", "layer", "head"]].equals(local.frame[["unit", "layer", "head"]])
    imp_local = head_importance(runner, task, batch_size=2, progress=False)
    imp_remote = head_importance(runner, task, batch_size=2, progress=False, backend="ray", num_workers=2)
    np.testing.assert_allclose(imp_remote, imp_local, rtol=1e-4, atol=1e-7)


class KillOnce:
    """Work that kills its own worker process (SIGKILL, as the OOM killer or a lost node would) the first time it runs
    a shard, then works normally: Ray must restart the actor and retry the shard."""

    def __init__(self, work, marker: str) -> None:
        self.work, self.marker = work, marker

    def __call__(self, runner, items):
        if not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return self.work(runner, items)


def test_a_killed_ray_worker_is_retried_and_the_result_is_identical(ray_session, tiny_bert, tmp_path):
    runner = get_runner(tiny_bert)
    work = CorpusWork(distances=True, batch_size=4)
    plan = shards.plan([(t, None) for t in TEXTS], per_shard=4, lengths=[len(t) for t in TEXTS])
    settings = {"study": "test"}
    marker = tmp_path / "killed"
    with shards.Pool(tiny_bert, shards.Options(backend="ray", num_workers=2, progress=False)) as pool:
        parts = pool.map(KillOnce(work, str(marker)), plan, kind=CorpusStats, settings=settings, desc="",
                         unit="")
        pids = pool.worker_pids()
    killed = int(marker.read_text())
    assert killed not in pids  # the process that died was replaced by a restarted actor
    remote = aw.studies.merge(parts)
    local = shards.run(work, plan, runner, shards.Options(progress=False), kind=CorpusStats, settings=settings,
                       desc="", unit="")
    assert_same_stats(remote, local)
