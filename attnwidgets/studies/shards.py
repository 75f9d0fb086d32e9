"""One route for every study over many inputs: plan shards, run a work function on each, merge the partial results.

A study (``corpus_stats``, ``dependency_scores``, ``sweep_heads``, ``head_importance``, ``pruning_curve``) cuts its
work into shards (texts sorted by length and cut into batches; heads to disable; batches of a task's examples),
hands each shard to a picklable work function ``work(runner, items) -> partial`` and merges the partials, which are
sums and counts underneath (:class:`~attnwidgets.analysis.corpus.CorpusStats`,
:class:`~attnwidgets.analysis.dependency.DependencyScores`, :class:`~attnwidgets.studies.sweeps.SweepResult`,
:class:`~attnwidgets.studies.importance.ImportanceSums`; :func:`merge`). The same route runs in this process
(``backend="local"``, the default), in worker processes on this machine (``num_workers=N``:
:mod:`attnwidgets.studies.local_pool`) or on a Ray cluster (``backend="ray"``): there is one code path.

On Ray, each worker is an actor that loads the model once (``device=``, ``dtype=``, ``num_gpus=`` per actor) and
is kept for the session (:mod:`attnwidgets.studies.pool`: one pool per model, device and dtype, reused by every study,
ended by :func:`~attnwidgets.studies.pool.shutdown_pool`); shards are handed out as workers free up, and the driver
merges and counts finished items on its progress bar. A worker that dies is replaced by a fresh one and its shard run
again, so the result is the same. With ``results_dir=`` every finished shard is written to that folder as it
arrives (:mod:`attnwidgets.studies.results_folder`: tagged with the model, its revision and the package version,
beside a manifest of the plan that records each finished shard's arrays, shapes, dtypes and checksums), and a rerun
with the same folder loads those shards instead of running them again, after checking each against the manifest: a
shard changed, cut or lost since is refused, by name, with how to compute it again. Every file in the folder is
written whole through a fresh temporary file and a rename (:func:`attnwidgets.persist.atomic_write`), so no write
follows a link planted there.

Why actors and not Ray Data's ``map_batches``: a shard's output is one small object of sums (not rows of a table),
the driver must see each shard finish to write it to the results folder and to count it, and a sweep's items are
heads, not data. Core actors do exactly that, and stay loaded between calls; Ray Data would add a streaming
executor, its own progress bars and a table round trip for each partial.

Examples
--------
>>> shards = plan(["a long text", "short", "mid text"], lengths=[11, 5, 8], per_shard=2)
>>> [s.items for s in shards], [s.size for s in shards]
([['short', 'mid text'], ['a long text']], [2, 1])
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .results_folder import ResultsFolder, ResultsFolderError, Shard, json_default, package_version

__all__ = ["ModelSpec", "Options", "Pool", "ResultsFolderError", "Shard", "merge", "plan", "run", "worker_pool"]


def plan(items: Sequence[Any], *, per_shard: int = 1, lengths: Sequence[int] | None = None,
         sizes: Sequence[int] | None = None) -> list[Shard]:
    """Cut ``items`` into shards of ``per_shard`` items, shortest first when ``lengths`` are given (batching by
    length: texts of similar length pad little); ``sizes`` are what each item counts for on the progress bar (1)."""
    if per_shard < 1:
        raise ValueError(f"per_shard must be at least 1, got {per_shard}")
    order = np.argsort(np.asarray(lengths), kind="stable") if lengths is not None else np.arange(len(items))
    out = []
    for index, start in enumerate(range(0, len(order), per_shard)):
        idx = [int(i) for i in order[start:start + per_shard]]
        chunk = [items[i] for i in idx]
        size = len(idx) if sizes is None else int(sum(sizes[i] for i in idx))
        out.append(Shard(index, chunk, size, hashlib.sha1(pickle.dumps(chunk, protocol=4)).hexdigest()))
    return out


@dataclass(frozen=True)
class ModelSpec:
    """What a worker loads: a model (a hub id or an absolute folder; None: the bundled model), revision, device and
    dtype.

    A worker process cannot be handed a loaded runner; it gets this and calls :meth:`load` once. A runner's spec is
    made from what loaded it (:attr:`ModelInfo.source <attnwidgets.result.ModelInfo.source>`), never from its display
    name; a runner with no source (fine-tuned in memory, a toy model) has ``unloadable`` set to its name, and
    :meth:`load` says it cannot be loaded again.

    Examples
    --------
    >>> ModelSpec.of("bert-base-uncased", device="cpu")
    ModelSpec(model='bert-base-uncased', revision=None, device='cpu', dtype=None, unloadable=None)
    """

    model: str | None = None
    revision: str | None = None
    device: str | None = None
    dtype: str | None = None
    unloadable: str | None = None

    @classmethod
    def of(cls, model: Any, device: Any = None, dtype: Any = None) -> ModelSpec:
        """The spec of a runner, a model name or folder, or None; ``device``/``dtype`` override the runner's."""
        from ..runner import Runner

        if isinstance(model, Runner):
            info = model.info
            dev, typ = str(device or info.device), str(dtype or info.dtype)
            if info.source is None:
                return cls(None, info.revision, dev, typ, unloadable=info.name)
            return cls(cls._key(info.source), info.revision, dev, typ)
        return cls(cls._key(model), None, None if device is None else str(device),
                   None if dtype is None else str(dtype))

    @staticmethod
    def _key(model: Any) -> str | None:
        """What loads ``model``, as :func:`~attnwidgets.runner.loading.model_key` says, with None for the bundled
        model."""
        from ..runner.loading import bundled_key, model_key

        if model is None:
            return None
        key = model_key(model)
        return None if key == bundled_key() else key

    @property
    def name(self) -> str:
        """The model's name as results show it."""
        if self.unloadable is not None:
            return self.unloadable
        return "all-MiniLM-L6-v2 (bundled)" if self.model is None else self.model

    def load(self) -> Any:
        """The runner (loaded once per process and kept, as :func:`attnwidgets.runner.get_runner` does)."""
        from ..runner import get_runner
        from ..runner.loading import ModelLoadError

        if self.unloadable is not None:
            raise ModelLoadError(f"model {self.unloadable!r} cannot be loaded again: it lives only in the process that "
                                 "made it (fine-tuned or built in memory, or a toy model). Pass its runner, or save "
                                 "it with save_pretrained and pass the folder")
        return get_runner(self.model, self.revision, device=self.device, dtype=self.dtype)


@dataclass
class Options:
    """Where and how shards run; every study takes these as keyword arguments.

    Attributes
    ----------
    backend : {"local", "ray"}
        This machine, or Ray actors. On this machine, ``num_workers=N`` (N > 1) runs the shards in N worker
        processes (:mod:`attnwidgets.studies.local_pool`, loky), the numbers those of one process; without it, in
        this process.
    ray_address : str, optional
        An existing Ray cluster ("auto", or "ray://head:10001"); implies ``backend="ray"``. Default: the Ray already
        running in this process, else a local Ray started with every CPU of the machine (or ``num_workers`` x
        ``torch_threads`` CPUs, when more).
    num_workers : int, optional
        Worker processes (each loads the model once, and is kept for the next call): local processes, or with
        ``backend="ray"`` Ray actors. Default: this process alone locally; on Ray, as many as the cluster's CPUs
        hold (``torch_threads`` each), and no more than ``GPUs / num_gpus`` when ``num_gpus`` is set. Never more
        than there are shards.
    num_gpus : float
        GPUs per actor (0.5 puts two actors on one GPU). A GPU actor reserves ``torch_threads`` CPUs as well: its
        tokenising and statistics run there.
    device, dtype : str, optional
        Where each worker runs its model and what it loads the weights in (see :func:`attnwidgets.runner.get_runner`);
        statistics are accumulated in float32/float64 whatever the dtype.
    results_dir : str or Path, optional
        Folder that keeps every finished shard; a rerun with the same folder resumes.
    progress : bool
        A tqdm bar on the driver counting finished items (texts, sentences, heads).
    torch_threads : int
        Torch threads per worker (local or Ray), and the CPUs a Ray worker reserves (1: one worker per CPU does not
        oversubscribe it).
    """

    backend: str = "local"
    ray_address: str | None = None
    num_workers: int | None = None
    num_gpus: float = 0
    device: str | None = None
    dtype: str | None = None
    results_dir: str | os.PathLike[str] | None = None
    progress: bool = True
    torch_threads: int = 1

    def __post_init__(self) -> None:
        if self.ray_address is not None:
            self.backend = "ray"
        if self.backend not in ("local", "ray"):
            raise ValueError(f"backend must be 'local' or 'ray', got {self.backend!r}")
        if self.num_workers is not None and self.num_workers < 1:
            raise ValueError(f"num_workers must be at least 1, got {self.num_workers}")
        if self.num_gpus < 0:
            raise ValueError(f"num_gpus must be 0 or more, got {self.num_gpus}")
        if self.torch_threads < 1:
            raise ValueError(f"torch_threads must be at least 1, got {self.torch_threads}")


def merge(parts: Sequence[Any]) -> Any:
    """Merge partial results of the same kind into the result over all their inputs.

    Takes :class:`~attnwidgets.analysis.corpus.CorpusStats`, :class:`~attnwidgets.analysis.dependency.DependencyScores`,
    :class:`~attnwidgets.studies.sweeps.SweepResult` (sweeps over disjoint heads) or
    :class:`~attnwidgets.studies.importance.ImportanceSums`: each has a ``merge`` method; this is ``parts[0].merge(
    *parts[1:])``. Associative and independent of the order up to float rounding; ValueError for parts of different
    models or settings.

    Examples
    --------
    >>> from attnwidgets.studies.importance import ImportanceSums
    >>> parts = [ImportanceSums(np.ones((1, 2)), 1, None, "m", "t", "self") for _ in range(3)]
    >>> merge(parts).n_examples
    3
    """
    parts = list(parts)
    if not parts:
        raise ValueError("merge needs at least one part")
    kinds = {type(p) for p in parts}
    if len(kinds) > 1:
        raise TypeError(f"merge takes parts of one kind, got {sorted(k.__name__ for k in kinds)}")
    if not hasattr(parts[0], "merge"):
        raise TypeError(f"{type(parts[0]).__name__} cannot be merged")
    return parts[0].merge(*parts[1:])


# -- running -----------------------------------------------------------------------------------------------------


def run(work: Callable[[Any, list[Any]], Any], shards: Sequence[Shard], model: Any, options: Options, *,
        kind: type[Any], settings: dict[str, Any], desc: str, unit: str) -> Any:
    """Run ``work(runner, shard.items)`` on every shard and merge the partials (see the module docstring).

    ``kind`` is the class of what ``work`` returns (its ``merge`` joins the partials, its ``from_state`` reads a
    finished shard back from a results folder).

    ``model`` is a runner, a model name or folder, or None (the bundled model); ``settings`` are what the partials
    were measured with, written to a results folder's manifest so that a folder of another run is refused.
    """
    with Pool(model, options) as pool:
        return merge(pool.map(work, shards, kind=kind, settings=settings, desc=desc, unit=unit))


class Pool:
    """Where one study's shards run, across its :meth:`map` calls (a pruning curve's steps): this process, or the
    session's kept Ray workers for the model (:mod:`attnwidgets.studies.pool`), which outlive it. A context manager,
    kept for the studies that hold one over several maps; leaving it ends no worker (:func:`~attnwidgets.studies.pool.
    shutdown_pool` does)."""

    def __init__(self, model: Any, options: Options) -> None:
        from ..runner import Runner

        self.options = options
        self.spec = ModelSpec.of(model, options.device, options.dtype)
        self._runner = model if isinstance(model, Runner) and options.device is None and options.dtype is None \
            else None
        self._workers: Any = None
        if self.local_workers:
            from .local_pool import check_loadable

            check_loadable(self.spec)  # before the study's own work, as for Ray
        if options.backend == "ray":
            from .pool import PoolError, import_ray

            import_ray()  # fail now, with how to install it, not after the local work of a study
            if self.spec.unloadable is not None:  # and before Ray starts: workers cannot load this model
                raise PoolError(f"backend='ray' cannot run model {self.spec.unloadable!r}: it lives only in this "
                                "process (fine-tuned or built in memory, or a toy model), and a Ray worker loads its "
                                "model by a hub id or folder. Save it with save_pretrained and pass the folder as "
                                "model=, or use backend='local'.")

    @property
    def local_workers(self) -> int:
        """Worker processes on this machine (0: the shards run in this process or on Ray)."""
        n = self.options.num_workers or 1
        return n if self.options.backend == "local" and n > 1 else 0

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to end: the Ray workers are kept for the next call."""

    def runner(self) -> Any:
        """The runner of the local backend (loaded on first use)."""
        if self._runner is None:
            self._runner = self.spec.load()
        return self._runner

    def tags(self, settings: dict[str, Any]) -> dict[str, Any]:
        """What a results folder's manifest and every shard file carry."""
        return {"model": self.spec.name, "revision": self.spec.revision, "version": package_version(),
                "settings": json.loads(json.dumps(settings, default=json_default))}

    def map(self, work: Callable[[Any, list[Any]], Any], shards: Sequence[Shard], *, kind: type[Any],
            settings: dict[str, Any], desc: str, unit: str) -> list[Any]:
        """The partial result of every shard, in plan order (finished shards of a results folder loaded, not run)."""
        folder = ResultsFolder(self.options.results_dir, self.tags(settings), shards, kind) \
            if self.options.results_dir is not None else None
        done: dict[int, Any] = {}
        if folder is not None:
            for shard in shards:
                found = folder.load(shard)
                if found is not None:
                    done[shard.index] = found
        todo = [s for s in shards if s.index not in done]
        bar: Any = None
        if self.options.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=sum(s.size for s in shards), initial=sum(s.size for s in shards if s.index in done),
                       desc=desc, unit=unit, delay=1.0)
        try:
            for shard, partial in self._run(work, todo):
                if folder is not None:
                    folder.save(shard, partial)
                done[shard.index] = partial
                if bar is not None:
                    bar.update(shard.size)
        finally:
            if bar is not None:
                bar.close()
        return [done[s.index] for s in shards]

    def _run(self, work: Callable[[Any, list[Any]], Any], shards: list[Shard]) -> Iterator[tuple[Shard, Any]]:
        if not shards:
            return
        if self.local_workers:
            from .local_pool import run_shards

            yield from run_shards(self.spec, work, shards, num_workers=self.local_workers,
                                  torch_threads=self.options.torch_threads)
            return
        if self.options.backend == "local":
            runner = self.runner()
            for shard in shards:
                yield shard, work(runner, shard.items)
            return
        workers = self.workers()
        yield from workers.map(work, shards, workers.workers_for(self.options.num_workers, len(shards)))

    def workers(self) -> Any:
        """The session's kept :class:`~attnwidgets.studies.pool.WorkerPool` for this model, device and dtype (Ray
        started, or connected to, if it is not running; no worker started yet)."""
        if self._workers is None:
            from .pool import get_pool

            opts = self.options
            self._workers = get_pool(self.spec, ray_address=opts.ray_address, num_gpus=opts.num_gpus,
                                     torch_threads=opts.torch_threads, num_workers=opts.num_workers)
        return self._workers

    def start_workers(self, n_shards: int) -> None:
        """Start the workers ``n_shards`` shards would use that are not running yet, each loading the model; returns
        once every one has it loaded."""
        workers = self.workers()
        workers.ensure(workers.workers_for(self.options.num_workers, n_shards))

    def worker_pids(self) -> list[int]:
        """Process ids of the Ray workers (for tests that kill one)."""
        return [] if self._workers is None else self._workers.worker_pids()


@contextlib.contextmanager
def worker_pool(model: Any = None, *, num_workers: int | None = None, ray_address: str | None = None,
                num_gpus: float = 0, device: str | None = None, dtype: str | None = None,
                torch_threads: int = 1) -> Iterator[Any]:
    """A kept pool for ``model``, its workers started now (``num_workers``, default every CPU, or GPUs /
    ``num_gpus``), ended when the block is left. Studies run inside with the same model, device and dtype use it.

    ``with worker_pool("bert-base-uncased", num_workers=4): corpus_stats(texts, model="bert-base-uncased",
    backend="ray"); dependency_scores(path, "bert-base-uncased", backend="ray")``: both calls run on the same four
    workers, which load the model once.
    """
    from .pool import get_pool

    spec = ModelSpec.of(model, device, dtype)
    pool = get_pool(spec, ray_address=ray_address, num_gpus=num_gpus, torch_threads=torch_threads,
                    num_workers=num_workers)
    try:
        pool.ensure(pool.workers_for(num_workers, None))
        yield pool
    finally:
        pool.close()
