"""``num_workers=N`` without Ray runs local worker processes (loky; issue 33 §3): the numbers are one process's, a
killed worker's shards run again with the same result, Ctrl-C ends the busy workers, a shard's error reaches the
caller, and a model that lives only in memory is refused before anything runs.

The workers run torch with one thread; so does this process while the module runs, so that "the numbers of one
process" can be checked bit for bit. Each worker start imports torch and loads the tiny BERT (seconds on two cores):
the tests share the kept executor where they can (the failure tests end it, as they should).
"""

from __future__ import annotations

import dataclasses
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from test_pool import SleepUntilInterrupted, SleepUntilKilled, when_marked

from attnwidgets.analysis.corpus import CorpusStats
from attnwidgets.data import load_corpus
from attnwidgets.runner import Runner, get_runner
from attnwidgets.runner.loading import LoadedModel
from attnwidgets.studies import corpus_stats, local_pool, pool, shards
from attnwidgets.studies.corpus import CorpusWork

TEXTS = load_corpus()[:16]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
    local_pool.shutdown_local_pool()


def assert_identical(a: CorpusStats, b: CorpusStats) -> None:
    assert (a.n_docs, a.n_tokens) == (b.n_docs, b.n_tokens)
    ma, mb = a.mean(), b.mean()
    assert ma.keys() == mb.keys()
    for key in ma:
        assert np.array_equal(ma[key], mb[key], equal_nan=True), key
    assert np.array_equal(a.pattern_counts, b.pattern_counts)
    assert np.array_equal(a.distances(), b.distances())


class NotePid:
    """Work that leaves a file named after the process that ran it in ``folder``, then does ``work``."""

    def __init__(self, work, folder: str) -> None:
        self.work, self.folder = work, folder

    def __call__(self, runner, items):
        Path(self.folder, str(os.getpid())).touch()
        return self.work(runner, items)


class Fails:
    def __call__(self, runner, items):
        raise ValueError(f"shard of {len(items)} items refused")


def plan_of(texts) -> list[shards.Shard]:
    return shards.plan([(t, None) for t in texts], per_shard=4, lengths=[len(t) for t in texts])


def run(work, model, **options) -> CorpusStats:
    return shards.run(work, plan_of(TEXTS), model, shards.Options(progress=False, **options), kind=CorpusStats,
                      settings={}, desc="", unit="")


def test_worker_processes_give_the_numbers_of_one_process(tiny_bert, tmp_path):
    work = CorpusWork(distances=True, batch_size=4)
    here = run(work, tiny_bert)
    there = run(NotePid(work, str(tmp_path)), tiny_bert, num_workers=2)
    ran_in = {int(p.name) for p in tmp_path.iterdir()}
    assert ran_in and os.getpid() not in ran_in, "the shards ran in other processes"
    assert_identical(there, here)
    # the studies take it from num_workers alone, and a second call reuses the kept workers
    assert_identical(corpus_stats(TEXTS, model=tiny_bert, num_workers=2, progress=False, batch_size=4, distances=True),
                     corpus_stats(TEXTS, model=tiny_bert, progress=False, batch_size=4, distances=True))
    assert shards.Pool(tiny_bert, shards.Options(num_workers=2)).local_workers == 2
    assert shards.Pool(tiny_bert, shards.Options(num_workers=1)).local_workers == 0  # one worker: this process
    assert shards.Pool(tiny_bert, shards.Options(num_workers=2, backend="ray")).local_workers == 0


def test_a_shard_s_error_reaches_the_caller_and_an_in_memory_model_is_refused(tiny_bert):
    with pytest.raises(ValueError, match="shard of 4 items refused"):
        run(Fails(), tiny_bert, num_workers=2)
    assert local_pool.IDLE_SECONDS and run(CorpusWork(batch_size=4), tiny_bert, num_workers=2).n_docs == 16  # kept
    runner = get_runner(tiny_bert)
    in_memory = Runner(LoadedModel(model=runner.model, tokenizer=runner.tokenizer, head=runner.head,
                                   info=dataclasses.replace(runner.info, name="tiny (fine-tuned)", source=None)))
    with pytest.raises(pool.PoolError, match=r"'tiny \(fine-tuned\)'.*save_pretrained.*leave num_workers out"):
        corpus_stats(TEXTS[:2], model=in_memory, num_workers=2, progress=False)


def test_a_killed_worker_s_shards_run_again_and_the_numbers_are_the_same(tiny_bert, tmp_path):
    import psutil

    marker = tmp_path / "pid"
    killed: list[int] = []

    def kill(pid: int) -> None:
        killed.append(pid)
        os.kill(pid, signal.SIGKILL)  # as the OOM killer would

    killer = when_marked(marker, kill)
    work = CorpusWork(distances=True, batch_size=4)
    there = run(SleepUntilKilled(work, str(marker)), tiny_bert, num_workers=2)
    killer.join(timeout=5)
    assert killed and killed[0] != os.getpid()
    psutil.wait_procs([psutil.Process(killed[0])] if psutil.pid_exists(killed[0]) else [], timeout=10)
    assert not psutil.pid_exists(killed[0])
    assert_identical(there, run(work, tiny_bert))


def test_ctrl_c_ends_the_busy_workers(tiny_bert, tmp_path):
    import psutil

    marker = tmp_path / "pid"
    interrupter = when_marked(marker, lambda _: os.kill(os.getpid(), signal.SIGINT))  # Ctrl-C in the notebook
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as test_pool: KeyboardInterrupt, whatever
    try:                                                                   # handler an earlier library left
        with pytest.raises(KeyboardInterrupt):
            run(SleepUntilInterrupted(str(marker)), tiny_bert, num_workers=2)
    finally:
        signal.signal(signal.SIGINT, previous)
    interrupter.join(timeout=5)
    pid = int(marker.read_text())
    assert pid != os.getpid()
    psutil.wait_procs([psutil.Process(pid)] if psutil.pid_exists(pid) else [], timeout=10)
    assert not psutil.pid_exists(pid), "the worker left sleeping on a shard nobody will read is ended"
