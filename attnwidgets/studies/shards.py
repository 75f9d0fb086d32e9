"""One route for every study over many inputs: plan shards, run a work function on each, merge the partial results.

A study (``corpus_stats``, ``dependency_scores``, ``sweep_heads``, ``head_importance``, ``pruning_curve``) cuts its
work into shards (texts sorted by length and cut into batches; heads to disable; batches of a task's examples),
hands each shard to a picklable work function ``work(runner, items) -> partial`` and merges the partials, which are
sums and counts underneath (:class:`~attnwidgets.analysis.corpus.CorpusStats`,
:class:`~attnwidgets.analysis.dependency.DependencyScores`, :class:`~attnwidgets.studies.sweeps.SweepResult`,
:class:`~attnwidgets.studies.importance.ImportanceSums`; :func:`merge`). The same route runs in this process
(``backend="local"``, the default) or on a Ray cluster (``backend="ray"``): there is one code path.

On Ray, each worker is an actor that loads the model once (``device=``, ``dtype=``, ``num_gpus=`` per actor) and
runs shards handed out by a :class:`ray.util.ActorPool` as workers free up; the driver merges and counts finished
items on its progress bar. A killed worker is restarted and its shard retried (``max_restarts``,
``max_task_retries``), so the result is the same. With ``results_dir=`` every finished shard is written to that
folder (tagged with the model, its revision and the package version, beside a manifest of the plan that records each
finished shard's arrays, shapes, dtypes and checksums) as it arrives, and a rerun with the same folder loads those
shards instead of running them again, after checking each against the manifest: a shard changed, cut or lost since is
refused, by name, with how to compute it again. Every file in the folder is written whole through a fresh temporary
file and a rename (:func:`attnwidgets.persist.atomic_write`), so no write follows a link planted there.

Why actors and not Ray Data's ``map_batches``: a shard's output is one small object of sums (not rows of a table),
the driver must see each shard finish to write it to the results folder and to count it, and a sweep's items are
heads, not data. Core actors in an ActorPool do exactly that with Ray's own retry of a dead actor's tasks; Ray Data
would add a streaming executor, its own progress bars and a table round trip for each partial.

Examples
--------
>>> shards = plan(["a long text", "short", "mid text"], lengths=[11, 5, 8], per_shard=2)
>>> [s.items for s in shards], [s.size for s in shards]
([['short', 'mid text'], ['a long text']], [2, 1])
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ModelSpec", "Options", "Pool", "ResultsFolderError", "Shard", "merge", "plan", "run"]

RAY_MISSING = 'backend="ray" needs Ray, which is not installed: pip install "attnwidgets[ray]"'


class ResultsFolderError(ValueError):
    """A ``results_dir`` holds shards of another run (another model, revision, package version or settings)."""


@dataclass(frozen=True)
class Shard:
    """One piece of a study's work: its index in the plan, its items, how many items it counts for on the progress
    bar, and a key (a hash of the items) that a results folder checks on resume."""

    index: int
    items: list[Any]
    size: int
    key: str


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
    """What a worker loads: a model name or folder (None: the bundled model), revision, device and dtype.

    A worker process cannot be handed a loaded runner; it gets this and calls :meth:`load` once.
    """

    model: str | None = None
    revision: str | None = None
    device: str | None = None
    dtype: str | None = None

    @classmethod
    def of(cls, model: Any, device: Any = None, dtype: Any = None) -> ModelSpec:
        """The spec of a runner, a model name or folder, or None; ``device``/``dtype`` override the runner's."""
        from ..runner import Runner
        from ..runner.loading import model_key

        if isinstance(model, Runner):
            info = model.info
            bundled = model_key(None) == model_key(info.name) or info.name.endswith("(bundled)")
            name = None if bundled else model_key(info.name)
            return cls(name, info.revision, str(device or info.device), str(dtype or info.dtype))
        if model is not None:
            model = model_key(model)
            if model == model_key(None):
                model = None
        return cls(model, None, None if device is None else str(device), None if dtype is None else str(dtype))

    @property
    def name(self) -> str:
        """The model's name as results show it."""
        return "all-MiniLM-L6-v2 (bundled)" if self.model is None else self.model

    def load(self) -> Any:
        """The runner (loaded once per process and kept, as :func:`attnwidgets.runner.get_runner` does)."""
        from ..runner import get_runner

        return get_runner(self.model, self.revision, device=self.device, dtype=self.dtype)


@dataclass
class Options:
    """Where and how shards run; every study takes these as keyword arguments.

    Attributes
    ----------
    backend : {"local", "ray"}
        This process, or Ray actors.
    ray_address : str, optional
        An existing Ray cluster ("auto", or "ray://head:10001"); implies ``backend="ray"``. Default: a local Ray
        started with ``num_workers`` CPUs (or the one already running in this process).
    num_workers : int, optional
        Actors (each loads the model once). Default: every CPU of the cluster, or ``GPUs / num_gpus`` when
        ``num_gpus`` is set; never more than there are shards.
    num_gpus : float
        GPUs per actor (0.5 puts two actors on one GPU).
    device, dtype : str, optional
        Where each worker runs its model and what it loads the weights in (see :func:`attnwidgets.runner.get_runner`);
        statistics are accumulated in float32/float64 whatever the dtype.
    results_dir : str or Path, optional
        Folder that keeps every finished shard; a rerun with the same folder resumes.
    progress : bool
        A tqdm bar on the driver counting finished items (texts, sentences, heads).
    torch_threads : int
        Torch threads per Ray worker (1: one worker per CPU does not oversubscribe it).
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


# -- the results folder ----------------------------------------------------------------------------------------


def _package_version() -> str:
    from .._version import __version__

    return str(__version__)


class _Folder:
    """Finished shards on disk: ``manifest.json`` (tags, plan, and each finished shard's arrays, their shapes and
    dtypes, and the sha256 of its file) and ``shard-NNNNN.npz`` + ``.json`` per shard.

    The one place shard files are written and read. Every file is written whole through
    :func:`attnwidgets.persist.atomic_write` (a fresh temporary file, then a rename: a link planted in the folder is
    never written through). A shard is written in the order: its arrays, its JSON, its record in the manifest; so it
    counts as finished only once all three are complete. On resume a finished shard is read only if its files are
    there with the checksums the manifest recorded, its arrays have the recorded shapes and dtypes, and its partial
    passes the checks of its kind; otherwise :class:`ResultsFolderError` names it and says how to compute it again.
    """

    def __init__(self, path: str | os.PathLike[str], tags: dict[str, Any], shards: Sequence[Shard],
                 kind: type[Any]) -> None:
        self.path = Path(path)
        self.tags = tags
        self.kind = kind  # what every shard holds: a partial result with to_state/from_state and merge
        self.manifest: dict[str, Any] = {**tags, "shards": [s.key for s in shards], "files": {}}
        self.path.mkdir(parents=True, exist_ok=True)
        mf = self.path / "manifest.json"
        if mf.exists():
            old = self._read_manifest(mf)
            for key, value in self.manifest.items():
                if key != "files" and old.get(key) != value:
                    what = "the plan (the inputs or how they are cut into shards)" if key == "shards" else \
                        f"{key}={old.get(key)!r}, this run {key}={value!r}"
                    raise ResultsFolderError(f"results_dir {str(self.path)!r} holds shards of another run: it has "
                                             f"{what}. Use another folder for this run, or empty this one.")
            self.manifest["files"] = old["files"]
        else:
            self._write_manifest()

    def _read_manifest(self, mf: Path) -> dict[str, Any]:
        def broken(what: str) -> ResultsFolderError:
            return ResultsFolderError(f"results_dir {str(self.path)!r}: its manifest.json is damaged ({what}), so "
                                      "which shards are finished, and what they hold, is unknown. Pass a fresh "
                                      "results_dir (or empty this one) to compute them again.")

        try:
            old = json.loads(mf.read_bytes())
        except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise broken(f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(old, dict):
            raise broken(f"it holds a {type(old).__name__}, not a mapping")
        missing = [k for k in self.manifest if k not in old]
        if missing:
            raise broken(f"it has no {', '.join(missing)}")
        if not isinstance(old["shards"], list) or not all(isinstance(k, str) for k in old["shards"]):
            raise broken("its plan is not a list of shard keys")
        files = old["files"]
        if not isinstance(files, dict) or not all(_record_ok(k, v) for k, v in files.items()):
            raise broken("its records of finished shards are not {index: {sha256, json_sha256, arrays: {name: {dtype, "
                         "shape}}}}")
        return old

    def _write_manifest(self) -> None:
        from ..persist import atomic_write

        data = json.dumps(self.manifest, indent=1).encode()
        atomic_write(self.path / "manifest.json", lambda f: f.write(data))

    def _stem(self, shard: Shard) -> Path:
        return self.path / f"shard-{shard.index:05d}"

    def _refuse(self, shard: Shard, what: str) -> ResultsFolderError:
        stem = self._stem(shard)
        return ResultsFolderError(f"results_dir {str(self.path)!r}: shard {shard.index} ({stem.name}.npz) {what}, so "
                                  f"it is not merged. Delete {stem.name}.npz and {stem.name}.json to compute that "
                                  "shard again on the next run, or pass a fresh results_dir.")

    def load(self, shard: Shard) -> Any | None:
        """The shard's partial result if it was finished, else None; :class:`ResultsFolderError` for a finished shard
        whose files fail a check."""
        from ..persist import SavedFileError, read_entry

        record = self.manifest["files"].get(str(shard.index))
        if record is None:  # not finished (a run stopped before its record was written): run it again
            return None
        stem = self._stem(shard)
        meta_path, npz = stem.with_suffix(".json"), stem.with_suffix(".npz")
        if not meta_path.exists() and not npz.exists():  # both deleted, as _refuse says to: run it again
            return None
        if not meta_path.is_file():
            raise self._refuse(shard, f"has no {meta_path.name}")
        text = meta_path.read_bytes()
        if hashlib.sha256(text).hexdigest() != record["json_sha256"]:
            raise self._refuse(shard, f"has a {meta_path.name} that has changed since it was written (its sha256 is "
                               "not the one manifest.json recorded)")
        try:
            meta = json.loads(text)
        except ValueError as exc:
            raise self._refuse(shard, f"has a damaged {meta_path.name} ({type(exc).__name__}: {exc})") from exc
        if not isinstance(meta, dict):
            raise self._refuse(shard, f"has a {meta_path.name} that is not a mapping")
        if meta.get("key") != shard.key or any(meta.get(k) != v for k, v in self.tags.items()):
            return None
        if not npz.is_file():
            raise self._refuse(shard, "is missing")
        arrays = {}
        try:
            for name, spec in record["arrays"].items():
                dtype = np.dtype(spec["dtype"])
                arr = read_entry(npz, name, spec["shape"], dtype.kind, limit=math.prod(spec["shape"]),
                                 what="the shard", expected_by="manifest.json")
                if arr.dtype != dtype:
                    raise SavedFileError(f"holds {name!r} as {arr.dtype}, the manifest recorded {dtype}")
                arrays[name] = arr
        except (SavedFileError, TypeError, ValueError) as exc:
            raise self._refuse(shard, "does not hold the arrays manifest.json recorded: "
                               + str(exc).split(": ", 1)[-1].split("; such a file")[0]) from exc
        digest = _sha256(npz)
        if digest != record["sha256"]:
            raise self._refuse(shard, f"has changed since it was written (sha256 {digest[:12]}..., the manifest "
                               f"recorded {record['sha256'][:12]}...)")
        if meta.get("type") != self.kind.__name__:
            raise self._refuse(shard, f"holds a {meta.get('type')!r}, not a {self.kind.__name__}")
        try:
            return self.kind.from_state(arrays, meta["state"])
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            what = f"has no field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise self._refuse(shard, f"holds a {meta['type']} that fails its checks ({what})") from exc

    def save(self, shard: Shard, partial: Any) -> None:
        from ..persist import atomic_write

        state_arrays, state = partial.to_state()
        arrays = {name: np.asarray(value) for name, value in state_arrays.items()}
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)  # type: ignore[arg-type]
        data = buffer.getvalue()
        stem = self._stem(shard)
        atomic_write(stem.with_suffix(".npz"), lambda f: f.write(data))
        meta = {**self.tags, "key": shard.key, "index": shard.index, "type": type(partial).__name__, "state": state}
        text = json.dumps(meta, default=_json_default).encode()
        atomic_write(stem.with_suffix(".json"), lambda f: f.write(text))
        # the record is written last: a shard counts as finished only once it is there
        self.manifest["files"][str(shard.index)] = {
            "sha256": hashlib.sha256(data).hexdigest(), "json_sha256": hashlib.sha256(text).hexdigest(),
            "arrays": {name: {"dtype": a.dtype.str, "shape": list(a.shape)} for name, a in arrays.items()}}
        self._write_manifest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def _record_ok(index: Any, record: Any) -> bool:
    """Whether a manifest's record of a finished shard has the fields and types :meth:`_Folder.save` writes."""
    if not isinstance(index, str) or not index.isdigit() or not isinstance(record, dict):
        return False
    arrays = record.get("arrays")
    if not all(isinstance(record.get(k), str) and len(record[k]) == 64 for k in ("sha256", "json_sha256")) \
            or not isinstance(arrays, dict):
        return False
    for spec in arrays.values():
        if not isinstance(spec, dict) or not isinstance(spec.get("dtype"), str) \
                or not isinstance(spec.get("shape"), list) \
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in spec["shape"]):
            return False
    return True


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} to a shard file")


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
    """Where shards run, kept across several :meth:`map` calls (a pruning curve's steps): this process, or Ray actors
    that load the model once. Use it as a context manager; the actors are stopped on exit."""

    def __init__(self, model: Any, options: Options) -> None:
        from ..runner import Runner

        self.options = options
        self.spec = ModelSpec.of(model, options.device, options.dtype)
        self._model = model
        self._runner = model if isinstance(model, Runner) and options.device is None and options.dtype is None \
            else None
        self._actors: list[Any] = []
        self.startup_seconds = 0.0
        if options.backend == "ray":
            import_ray()  # fail now, with how to install it, not after the local work of a study

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the actors (the Ray instance itself keeps running for the next call; ``ray.shutdown()`` stops it)."""
        if self._actors:
            import ray

            for actor in self._actors:
                ray.kill(actor)
            self._actors = []

    def runner(self) -> Any:
        """The runner of the local backend (loaded on first use)."""
        if self._runner is None:
            self._runner = self.spec.load()
        return self._runner

    def tags(self, settings: dict[str, Any]) -> dict[str, Any]:
        """What a results folder's manifest and every shard file carry."""
        return {"model": self.spec.name, "revision": self.spec.revision, "version": _package_version(),
                "settings": json.loads(json.dumps(settings, default=_json_default))}

    def map(self, work: Callable[[Any, list[Any]], Any], shards: Sequence[Shard], *, kind: type[Any],
            settings: dict[str, Any], desc: str, unit: str) -> list[Any]:
        """The partial result of every shard, in plan order (finished shards of a results folder loaded, not run)."""
        folder = _Folder(self.options.results_dir, self.tags(settings), shards, kind) \
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
        if self.options.backend == "local":
            runner = self.runner()
            for shard in shards:
                yield shard, work(runner, shard.items)
            return
        self.start_workers(len(shards))
        from ray.util import ActorPool

        pool = ActorPool(self._actors)
        by_index = {s.index: s for s in shards}
        for index, partial in pool.map_unordered(lambda actor, s: actor.run.remote(work, s.index, s.items), shards):
            yield by_index[index], partial

    def start_workers(self, n_shards: int) -> None:
        """Start Ray (locally, or connect to ``ray_address``) if it is not running, and enough actors for
        ``n_shards`` shards, each loading the model; returns once every actor has it loaded."""
        ray = import_ray()
        start = time.perf_counter()
        opts = self.options
        if not ray.is_initialized():
            if opts.ray_address is not None:
                ray.init(address=opts.ray_address, log_to_driver=False)
            else:
                start_local_ray(ray, opts.num_workers or os.cpu_count() or 1, _worker_env())
        wanted = opts.num_workers
        if wanted is None:
            resources = ray.cluster_resources()
            wanted = int(resources.get("GPU", 0) // opts.num_gpus) if opts.num_gpus else int(resources.get("CPU", 1))
        wanted = max(1, min(wanted, n_shards))
        if len(self._actors) < wanted:
            cls = ray.remote(num_cpus=1 if not opts.num_gpus else 0, num_gpus=opts.num_gpus, max_restarts=3,
                             max_task_retries=3)(ShardWorker)
            self._actors += [cls.remote(self.spec, opts.torch_threads) for _ in range(wanted - len(self._actors))]
            ray.get([a.ready.remote() for a in self._actors])  # the model is loaded: a load error shows here
        self.startup_seconds += time.perf_counter() - start

    def worker_pids(self) -> list[int]:
        """Process ids of the Ray actors (for tests that kill one)."""
        import ray

        return [int(p) for p in ray.get([a.pid.remote() for a in self._actors])]


#: What a local Ray start sets in the environment while it starts (the raylet reads RAY_<name> from the environment
#: it inherits): its agents get 2 min to register instead of 15 s. A value the caller set is kept.
RAY_START_ENV = {"RAY_agent_register_timeout_ms": "120000"}

#: What a failed local start says when it failed: Ray's start-up waits ran out on a busy machine.
_RAY_START_TIMEOUTS = ("timed out during startup", "Failed to get node info", "raylet start wait time",
                       "agent_register_timeout", "agent register")


def start_local_ray(ray: Any, num_cpus: int, env: dict[str, str], attempts: int = 3) -> None:
    """``ray.init`` of a local instance with ``num_cpus`` CPUs, tried ``attempts`` times when it times out.

    Ray waits for its own processes twice while it starts: the raylet waits ``RAY_agent_register_timeout_ms`` (15 s)
    for its agents, and ``ray.init`` waits a fixed 30 s (its "raylet start wait time") for the raylet to register;
    on a machine whose CPUs are all busy either can run out (ray-project/ray#65983; where ``rfc3987-syntax`` is
    installed, as Jupyter's jsonschema extras install it, every Ray process spends about 4 CPU-seconds importing it).
    The first is raised to 2 min (:data:`RAY_START_ENV`, unless the caller set it) for the start only: the
    environment is put back as it was afterwards, whether the start worked or not. A start that fails leaves nothing
    running: ``ray.shutdown()``, and every Ray process this start spawned (``gcs_server``, ``raylet``, agents) is
    ended, since a start that fails half-way has not told ``ray.shutdown`` about them. A timeout is tried again;
    after the last try the error says what to set. Any other error is raised as it is, after the same cleaning up.
    """
    for attempt in range(attempts):
        saved = {name: os.environ.get(name) for name in RAY_START_ENV}
        before = _child_pids()
        try:
            for name, value in RAY_START_ENV.items():
                os.environ.setdefault(name, value)
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
            return
        except Exception as err:  # Ray raises a bare Exception when its start times out
            _clean_failed_start(ray, before)
            if not any(s in str(err) for s in _RAY_START_TIMEOUTS):
                raise
            if attempt == attempts - 1:
                raise RuntimeError(
                    f"a local Ray did not start in {attempts} {'try' if attempts == 1 else 'tries'}: "
                    f"{str(err).splitlines()[0].rstrip('.')}. Ray's own processes took longer to start than it waits "
                    "for them, which happens on a machine whose CPUs are all busy (ray-project/ray#65983); nothing "
                    "of that start is left running. Set "
                    f"RAY_agent_register_timeout_ms higher than the {os.environ['RAY_agent_register_timeout_ms']} "
                    "used here (the raylet's wait for its agents) in the environment before the call, or start Ray "
                    "yourself when the machine is quieter (`ray start --head --num-cpus N`: ray.init's own 30 s wait "
                    "for the raylet cannot be set) and pass ray_address='auto'.") from err
        finally:
            for name, old in saved.items():
                if old is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = old


def _child_pids() -> set[int]:
    """Process ids of this process's children (and theirs); empty without psutil."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - Ray depends on psutil
        return set()
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _clean_failed_start(ray: Any, before: set[int]) -> None:
    """After a failed ``ray.init``: ``ray.shutdown()``, then end the Ray processes the start spawned (children that
    were not there before it and whose command line names Ray) that shutdown did not know of."""
    try:
        ray.shutdown()
    except Exception:  # a half-started Ray may fail to shut down: its processes are ended below
        pass
    try:
        import psutil
    except ImportError:  # pragma: no cover
        return
    started = []
    for proc in psutil.Process().children(recursive=True):
        if proc.pid in before:
            continue
        try:
            if "ray" in " ".join(proc.cmdline()).lower() or proc.name().startswith(("gcs_server", "raylet")):
                started.append(proc)
        except psutil.Error:
            continue
    for proc in started:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(started, timeout=5)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)


def import_ray() -> Any:
    """The ``ray`` module, or an ImportError that says how to install it."""
    try:
        import ray
    except ImportError as err:
        raise ImportError(RAY_MISSING) from err
    return ray


def _worker_env() -> dict[str, str]:
    """Environment of a local Ray's workers: this package importable (also from a source checkout), one thread for
    the numeric libraries (torch gets it in :class:`ShardWorker`), tokenizers quiet."""
    here = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": here + (os.pathsep + path if path else ""), "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
            **{k: os.environ[k] for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_VERBOSITY", "HF_HOME") if k in os.environ}}


@dataclass
class ShardWorker:
    """A Ray actor's state: the model, loaded once when the actor starts (again if Ray restarts it)."""

    spec: ModelSpec
    threads: int = 1
    runner: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        import torch

        torch.set_num_threads(max(1, self.threads))
        self.runner = self.spec.load()

    def ready(self) -> bool:
        return True

    def pid(self) -> int:
        return os.getpid()

    def run(self, work: Callable[[Any, list[Any]], Any], index: int, items: list[Any]) -> tuple[int, Any]:
        return index, work(self.runner, items)
