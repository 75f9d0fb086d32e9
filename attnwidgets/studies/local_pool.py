"""Worker processes on this machine (loky, the process pool joblib ships): what ``num_workers=N`` runs on when no
``ray_address`` or ``backend="ray"`` is given.

A study run with ``num_workers=N`` (N > 1) on the local backend hands its shards to N processes of one reusable loky
executor (kept for the session, its idle workers ending after :data:`IDLE_SECONDS`); each worker loads the model once
(:meth:`~attnwidgets.studies.shards.ModelSpec.load` keeps it, as :func:`~attnwidgets.runner.get_runner` does) with
``torch_threads`` torch threads and one thread for the numeric libraries, so N workers do not oversubscribe N cores.
The partials come back as shards finish and are merged in plan order, as one process merges them: the numbers are one
process's. No cluster to start, nothing to install (joblib comes with scikit-learn); Ray stays for clusters
(``ray_address=``) and GPUs shared between workers.

It fails as :mod:`attnwidgets.studies.pool` does:

- a worker that dies (killed, out of memory) breaks the executor, and with it every shard still running: a fresh
  executor runs those shards again, so the result is the one an undisturbed run gives; a shard whose workers died
  more than :data:`~attnwidgets.studies.pool.RETRIES` times is a :class:`~attnwidgets.studies.pool.PoolError` that
  names it;
- a call interrupted (KeyboardInterrupt, an error in the driver) ends the workers, so that nothing keeps computing
  shards nobody will read; the next call starts fresh ones. A shard's own error reaches the caller as it was raised;
  the shards not started are cancelled, the ones running finish (one shard each) and the workers are kept.

>>> sorted(worker_environment(2))
['MKL_NUM_THREADS', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'TOKENIZERS_PARALLELISM']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

from .pool import RETRIES, PoolError

__all__ = ["IDLE_SECONDS", "check_loadable", "run_shards", "shutdown_local_pool", "worker_environment"]

#: How long an idle worker (and the model it holds) is kept for the next call.
IDLE_SECONDS = 300

_EXECUTOR: dict[str, Any] = {}


def worker_environment(torch_threads: int) -> dict[str, str]:
    """What a worker's environment sets: ``torch_threads`` threads for the numeric libraries, tokenizers quiet."""
    threads = str(max(1, int(torch_threads)))
    return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads,
            "TOKENIZERS_PARALLELISM": "false"}


def _executor(num_workers: int, torch_threads: int) -> Any:
    from joblib.externals.loky import get_reusable_executor

    executor = get_reusable_executor(max_workers=num_workers, timeout=IDLE_SECONDS,
                                     env=worker_environment(torch_threads))
    _EXECUTOR["now"] = executor
    return executor


def shutdown_local_pool() -> None:
    """End this session's local workers now (they also end when idle for :data:`IDLE_SECONDS`, or at exit)."""
    executor = _EXECUTOR.pop("now", None)
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)


def check_loadable(spec: Any) -> None:
    """:class:`~attnwidgets.studies.pool.PoolError` when a worker process could not load ``spec``'s model."""
    if spec.unloadable is not None:
        raise PoolError(f"num_workers= runs worker processes, which cannot load model {spec.unloadable!r}: it lives "
                        "only in this process (fine-tuned or built in memory, or a toy model). Save it with "
                        "save_pretrained and pass the folder as model=, or leave num_workers out to run it here.")


def _run_one(spec: Any, torch_threads: int, work: Callable[[Any, list[Any]], Any], items: list[Any]) -> Any:
    """In a worker: ``work(runner, items)`` with the model loaded once per process."""
    import torch

    if torch.get_num_threads() != torch_threads:
        torch.set_num_threads(torch_threads)
    return work(spec.load(), items)


def run_shards(spec: Any, work: Callable[[Any, list[Any]], Any], shards: Sequence[Any], *, num_workers: int,
               torch_threads: int = 1) -> Iterator[tuple[Any, Any]]:
    """``(shard, work(runner, shard.items))`` for every shard, as they finish, from ``num_workers`` local processes
    (see the module docstring for a worker's death and an interrupted call)."""
    from joblib.externals.loky.process_executor import BrokenProcessPool

    check_loadable(spec)
    deaths = {shard.index: 0 for shard in shards}
    todo = list(shards)
    while todo:
        executor = _executor(num_workers, torch_threads)  # the same size every call: the kept workers are reused
        running: dict[Future[Any], Any] = {executor.submit(_run_one, spec, torch_threads, work, shard.items): shard
                                           for shard in todo}
        lost: list[Any] = []
        shard_failed = False
        try:
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    shard = running.pop(future)
                    try:
                        partial = future.result()
                    except BrokenProcessPool:  # a worker died: this shard goes to a fresh executor
                        lost.append(shard)
                        continue
                    except Exception:
                        shard_failed = True
                        raise
                    yield shard, partial
        except BaseException:
            for future in running:  # the shards not started yet
                future.cancel()
            if not shard_failed:  # KeyboardInterrupt, the driver's error: end the busy workers now
                _EXECUTOR.pop("now", None)
                executor.shutdown(wait=False, kill_workers=True)
            raise
        for shard in lost:
            deaths[shard.index] += 1
            if deaths[shard.index] > RETRIES:
                raise PoolError(f"the local workers running shard {shard.index} ({shard.size} items) died "
                                f"{deaths[shard.index]} times (killed, or out of memory?): run fewer at once "
                                "(num_workers=) or smaller shards, or leave num_workers out to run in this process")
        todo = sorted(lost, key=lambda s: s.index)
