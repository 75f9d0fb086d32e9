"""Ray workers that load a model once and are kept for the session: one pool per (model, revision, device, dtype).

A study run with ``backend="ray"`` (:func:`~attnwidgets.studies.corpus_stats`, ``dependency_scores``, ``sweep_heads``,
``head_importance``, ``pruning_curve``) takes its workers from here. The first call for a model starts Ray (a local
instance, unless one is running or ``ray_address=`` names a cluster) and the workers, each loading the model; later
calls for the same model, device and dtype, by any of those studies, reuse them, so a second call pays no start-up.
A call that asks for more workers than the pool has adds the missing ones; one that asks for fewer uses some.

- :func:`shutdown_pool` ends every pool's workers (and the local Ray that attnwidgets started); it also runs when the
  interpreter exits. ``with shards.worker_pool(model, num_workers=4): ...`` starts a pool and ends it on leaving the
  block.
- Each worker reserves ``torch_threads`` CPUs (1 by default), GPU workers too: a worker's tokenising and statistics run
  on its CPU whatever device runs the forward, so a GPU worker is not packed onto a CPU another worker is using.
- A worker that dies during a call (killed, out of memory, its node lost) is replaced by a fresh one, which loads the
  model and runs the shard again: the result is the one an undisturbed run gives. After :data:`RETRIES` deaths on the
  same shard, :class:`PoolError` names it.
- A call interrupted (KeyboardInterrupt, an error in the driver) ends the workers that were busy with its shards, so
  the next call does not queue behind work nobody will read; it starts fresh ones.
- Pools of other models held by this session are ended when a new pool needs their CPUs or GPUs on the local Ray
  attnwidgets started (the least recently used first); asking for more than the cluster has is a :class:`PoolError`,
  not a wait that never ends.

>>> from attnwidgets.studies.pool import actor_resources
>>> actor_resources(num_gpus=0, torch_threads=1), actor_resources(num_gpus=0.5, torch_threads=1)
({'num_cpus': 1, 'num_gpus': 0}, {'num_cpus': 1, 'num_gpus': 0.5})
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RETRIES", "PoolError", "ShardWorker", "WorkerPool", "actor_resources", "get_pool", "import_ray",
           "make_room", "pools", "shutdown_pool", "start_local_ray", "worker_env"]

RAY_MISSING = 'backend="ray" needs Ray, which is not installed: pip install "attnwidgets[ray]"'

#: How many times one shard is given to a fresh worker after the one running it died.
RETRIES = 3


class PoolError(RuntimeError):
    """The Ray workers cannot do what was asked: more than the cluster has, a model they cannot load, or a shard whose
    workers kept dying."""


def import_ray() -> Any:
    """The ``ray`` module, or an ImportError that says how to install it."""
    try:
        import ray
    except ImportError as err:
        raise ImportError(RAY_MISSING) from err
    return ray


def actor_resources(*, num_gpus: float, torch_threads: int) -> dict[str, float]:
    """What one worker reserves on the cluster: ``torch_threads`` CPUs (at least 1; its statistics and tokenising run
    on them whatever device runs the forward) and ``num_gpus`` GPUs."""
    return {"num_cpus": max(1, int(torch_threads)), "num_gpus": num_gpus}


# -- the pools of this session ------------------------------------------------------------------------------------

_POOLS: dict[tuple[Any, ...], WorkerPool] = {}
#: The node id of the local Ray this module started (None: it started none, or it was shut down).
_STARTED: dict[str, str | None] = {"node": None}
_ATEXIT: list[bool] = []


def pools() -> list[WorkerPool]:
    """The pools alive in this session (for tests and for a look at what is held), least recently used first."""
    _forget_stale()
    return sorted(_POOLS.values(), key=lambda p: p.last_used)


def get_pool(spec: Any, *, ray_address: str | None = None, num_gpus: float = 0, torch_threads: int = 1,
             num_workers: int | None = None) -> WorkerPool:
    """The kept pool of workers for ``spec`` (a :class:`~attnwidgets.studies.shards.ModelSpec`) with these resources,
    made (without workers yet) if there is none. Ray is connected to (``ray_address``) or started first: a local Ray
    gets every CPU of the machine, or ``num_workers`` x ``torch_threads`` CPUs when that is more."""
    if spec.unloadable is not None:
        raise PoolError(f"Ray workers cannot load model {spec.unloadable!r}: it lives only in this process (fine-tuned "
                        "or built in memory, or a toy model), and a worker loads its model by a hub id or folder. Save "
                        "it with save_pretrained and pass the folder as model=, or run it with backend='local'.")
    ray = import_ray()
    resources = actor_resources(num_gpus=num_gpus, torch_threads=torch_threads)
    if not ray.is_initialized():
        if ray_address is not None:
            ray.init(address=ray_address, log_to_driver=False)
        else:
            cpus = max(os.cpu_count() or 1, int((num_workers or 0) * resources["num_cpus"]))
            start_local_ray(ray, cpus, worker_env())
            _STARTED["node"] = _node_id(ray)
    _forget_stale()
    key = (spec.model, spec.revision, spec.device or "cpu", spec.dtype or "float32", num_gpus, resources["num_cpus"])
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = WorkerPool(spec, resources, torch_threads, _node_id(ray))
        if not _ATEXIT:
            atexit.register(shutdown_pool)
            _ATEXIT.append(True)
    pool.last_used = time.monotonic()
    return pool


def shutdown_pool() -> int:
    """End every kept worker of this session (their processes exit) and the local Ray instance attnwidgets started, if
    it did; a Ray you started, or a cluster given by ``ray_address``, keeps running. Returns how many workers were
    ended. The next ``backend="ray"`` call starts afresh. Also runs when the interpreter exits."""
    ended = 0
    try:
        import ray
    except ImportError:
        return 0
    for pool in list(_POOLS.values()):
        ended += pool.close()
    _POOLS.clear()
    if _started_here(ray):
        ray.shutdown()
    _STARTED["node"] = None
    return ended


def _node_id(ray: Any) -> str:
    return str(ray.get_runtime_context().get_node_id())


def _forget_stale() -> None:
    """Drop the pools of a Ray that is gone (``ray.shutdown()`` by hand, or another cluster since): their workers went
    with it."""
    if not _POOLS:
        return
    import ray

    node = _node_id(ray) if ray.is_initialized() else None
    for key, pool in list(_POOLS.items()):
        if pool.node != node:
            del _POOLS[key]


def _started_here(ray: Any) -> bool:
    """Whether the running Ray is the local instance this module started."""
    return _STARTED["node"] is not None and ray.is_initialized() and _node_id(ray) == _STARTED["node"]


_RESOURCE_NAMES = {"num_cpus": "CPU", "num_gpus": "GPU"}


def make_room(pool: WorkerPool, need: dict[str, float], wait: float = 10.0) -> None:
    """Make ``need`` (``num_cpus``, ``num_gpus``) free for new workers of ``pool``: end this session's other pools,
    least recently used first, until it is. :class:`PoolError` when the whole cluster has less, or when the local Ray
    attnwidgets started still has too little free (nothing else would free it); on a Ray of yours, workers that do not
    fit yet wait for the cluster's other work, as Ray makes them."""
    import ray

    def lacking(resources: dict[str, float]) -> list[str]:
        return [n for k, n in _RESOURCE_NAMES.items() if need.get(k, 0) > resources.get(n, 0) + 1e-9]

    def refuse(missing: list[str], what: str) -> PoolError:
        total, free = ray.cluster_resources(), ray.available_resources()
        asked = ", ".join(f"{need[k]:g} {n}" for k, n in _RESOURCE_NAMES.items() if need.get(k))
        have = ", ".join(f"{total.get(n, 0):g} {n} ({free.get(n, 0):g} free)" for n in missing)
        return PoolError(f"the Ray workers asked for need {asked} {what}, and the cluster has {have}: ask for fewer "
                         "workers (num_workers=) or fewer CPUs or GPUs per worker, or end other work on the cluster "
                         "(shutdown_pool() ends this session's workers)")

    missing = lacking(ray.cluster_resources())
    if missing:
        raise refuse(missing, "more than the cluster holds")
    closed = False
    for other in pools():
        if not lacking(ray.available_resources()):
            return
        if other is not pool:
            closed = bool(other.close()) or closed
    deadline = time.monotonic() + (wait if closed else 0)  # ended workers' resources are freed a moment after
    while lacking(ray.available_resources()) and time.monotonic() < deadline:
        time.sleep(0.1)
    missing = lacking(ray.available_resources())
    if missing and _started_here(ray):
        raise refuse(missing, "free")


# -- one pool ---------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class WorkerPool:
    """Ray actors (:class:`ShardWorker`) that hold one model, kept between calls.

    Attributes
    ----------
    started : int
        Workers ever started for this pool (the first ones, replacements of dead ones): a call that starts none
        leaves it as it was.
    startup_seconds : float
        Time spent starting them, all calls together.
    """

    spec: Any
    resources: dict[str, float]
    torch_threads: int
    node: str | None
    actors: list[Any] = field(default_factory=list)
    started: int = 0
    startup_seconds: float = 0.0
    last_used: float = 0.0

    def __repr__(self) -> str:
        return (f"WorkerPool({self.spec.name!r}, device={self.spec.device or 'cpu'!r}, "
                f"dtype={self.spec.dtype or 'float32'!r}, {len(self.actors)} workers, {self.resources})")

    def workers_for(self, num_workers: int | None, n_shards: int | None) -> int:
        """How many workers a call uses: ``num_workers``, else what the cluster holds (its CPUs, or GPUs /
        ``num_gpus``, per worker); never more than ``n_shards``."""
        import ray

        wanted = num_workers
        if wanted is None:
            total = ray.cluster_resources()
            wanted = int(total.get("CPU", 1) // self.resources["num_cpus"])
            if self.resources["num_gpus"]:
                wanted = min(wanted, int(total.get("GPU", 0) // self.resources["num_gpus"]))
        if n_shards is not None:
            wanted = min(wanted, n_shards)
        return max(1, wanted)

    def ensure(self, n: int) -> None:
        """Start workers until there are ``n``, and return once each has loaded the model (a load error shows here)."""
        missing = n - len(self.actors)
        if missing <= 0:
            return
        make_room(self, {k: v * missing for k, v in self.resources.items()})
        start = time.perf_counter()
        fresh = [self._new_actor() for _ in range(missing)]
        self.actors += fresh
        self._wait_ready(fresh)
        self.startup_seconds += time.perf_counter() - start

    def _new_actor(self) -> Any:
        import ray

        self.started += 1
        # Ray's own restart is off: a dead worker is replaced here, where the shard it held is known
        cls = ray.remote(max_restarts=0, max_task_retries=0, num_cpus=self.resources["num_cpus"],
                         num_gpus=self.resources["num_gpus"])(ShardWorker)
        return cls.remote(self.spec, self.torch_threads)

    def _wait_ready(self, actors: list[Any]) -> None:
        import ray

        try:
            ray.get([a.ready.remote() for a in actors])
        except BaseException:
            for actor in actors:
                self._discard(actor)
            raise

    def _discard(self, actor: Any) -> None:
        import ray

        if actor in self.actors:
            self.actors.remove(actor)
        with contextlib.suppress(Exception):
            ray.kill(actor, no_restart=True)

    def close(self) -> int:
        """End this pool's workers (their processes exit); returns how many. The pool is forgotten."""
        n = len(self.actors)
        pids = self._pids_if_alive()
        for actor in list(self.actors):
            self._discard(actor)
        _wait_gone(pids)
        for key, pool in list(_POOLS.items()):
            if pool is self:
                del _POOLS[key]
        return n

    def _pids_if_alive(self) -> list[int]:
        import ray

        if not self.actors or not ray.is_initialized():
            return []
        try:
            return [int(p) for p in ray.get([a.pid.remote() for a in self.actors], timeout=5)]
        except Exception:  # a dead or busy worker: it is killed all the same, without waiting for it
            return []

    def worker_pids(self) -> list[int]:
        """Process ids of the workers."""
        import ray

        return [int(p) for p in ray.get([a.pid.remote() for a in self.actors])]

    def actor_ids(self) -> list[str]:
        """Ray's ids of the workers."""
        import ray

        return [str(i) for i in ray.get([a.actor_id.remote() for a in self.actors])]

    def map(self, work: Callable[[Any, list[Any]], Any], shards: Sequence[Any], n_workers: int
            ) -> Iterator[tuple[Any, Any]]:
        """``(shard, work(runner, shard.items))`` for every shard as workers finish them, on ``n_workers`` workers
        (started when missing). A shard whose worker died runs again on a fresh worker, up to :data:`RETRIES` times."""
        import ray
        from ray.exceptions import RayActorError

        self.last_used = time.monotonic()
        if not shards:
            return
        self.ensure(n_workers)
        idle = list(self.actors[:n_workers])
        queue = deque(shards)
        running: dict[Any, tuple[Any, Any]] = {}
        deaths: dict[int, int] = {}
        # one copy of the work function for every shard, handed over as a reference inside a list (so that Ray does
        # not resolve it before the call): each worker unpickles it once per call, not once per shard
        work_ref = [ray.put(work)]
        try:
            while queue or running:
                while queue and idle:
                    actor, shard = idle.pop(), queue.popleft()
                    running[actor.run.remote(work_ref, shard.index, shard.items)] = (actor, shard)
                (ref,), _ = ray.wait(list(running), num_returns=1)
                actor, shard = running.pop(ref)
                try:
                    _, partial = ray.get(ref)
                except RayActorError as err:
                    deaths[shard.index] = deaths.get(shard.index, 0) + 1
                    self._discard(actor)
                    if deaths[shard.index] > RETRIES:
                        raise PoolError(f"shard {shard.index} was tried on {deaths[shard.index]} workers and each "
                                        f"died while running it (the last: {str(err).splitlines()[0]}); it may need "
                                        "more memory than a worker has: try a smaller batch_size, or fewer workers "
                                        "per machine") from err
                    fresh = self._new_actor()
                    self.actors.append(fresh)
                    start = time.perf_counter()
                    self._wait_ready([fresh])
                    self.startup_seconds += time.perf_counter() - start
                    idle.append(fresh)
                    queue.appendleft(shard)
                    continue
                idle.append(actor)
                yield shard, partial
        finally:
            for actor, _ in running.values():  # left busy by an interrupted call: nobody will read what they make
                self._discard(actor)
            self.last_used = time.monotonic()


def _wait_gone(pids: list[int], timeout: float = 10.0) -> None:
    """Wait until the processes ``pids`` have exited (``ray.kill`` returns before they have)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - Ray depends on psutil
        return
    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            procs.append(psutil.Process(pid))
    psutil.wait_procs(procs, timeout=timeout)


@dataclass
class ShardWorker:
    """A Ray actor's state: the model, loaded once when the actor starts."""

    spec: Any
    threads: int = 1
    runner: Any = field(init=False, default=None)
    work: tuple[Any, Any] = field(init=False, default=(None, None))

    def __post_init__(self) -> None:
        import torch

        torch.set_num_threads(max(1, self.threads))
        self.runner = self.spec.load()

    def ready(self) -> bool:
        return True

    def pid(self) -> int:
        return os.getpid()

    def actor_id(self) -> str:
        import ray

        return str(ray.get_runtime_context().get_actor_id())

    def run(self, work: Any, index: int, items: list[Any]) -> tuple[int, Any]:
        """``(index, work(runner, items))``; ``work`` is the work function, or ``[ref]`` to it in Ray's object store
        (fetched once and kept while the same reference comes back, as it does for every shard of one call)."""
        if isinstance(work, list):
            import ray

            (ref,) = work
            if self.work[0] != ref:
                self.work = (ref, ray.get(ref))
            work = self.work[1]
        return index, work(self.runner, items)


# -- starting a local Ray ------------------------------------------------------------------------------------------

#: What a local Ray start sets in the environment while it starts (the raylet reads RAY_<name> from the environment
#: it inherits): its agents get 2 min to register instead of 15 s. A value the caller set is kept.
RAY_START_ENV = {"RAY_agent_register_timeout_ms": "120000"}

#: What a failed local start says when it failed: Ray's start-up waits ran out on a busy machine.
_RAY_START_TIMEOUTS = ("timed out during startup", "Failed to get node info", "raylet start wait time",
                       "agent_register_timeout", "agent register")


def start_local_ray(ray: Any, num_cpus: int, env: dict[str, str], attempts: int = 3, **init: Any) -> None:
    """``ray.init`` of a local instance with ``num_cpus`` CPUs, tried ``attempts`` times when it times out; ``init``
    are further ``ray.init`` arguments (``num_gpus=``).

    Ray waits for its own processes twice while it starts: the raylet waits ``RAY_agent_register_timeout_ms`` (15 s)
    for its agents, and ``ray.init`` waits a fixed 30 s (its "raylet start wait time") for the raylet to register;
    on a machine whose CPUs are all busy either can run out (ray-project/ray#65983; where ``rfc3987-syntax`` is
    installed, as Jupyter's jsonschema extras install it, every Ray process spends about 4 CPU-seconds importing it).
    The first is raised to 2 min (:data:`RAY_START_ENV`, unless the caller set it) for the start only: the
    environment is put back as it was afterwards, whether the start worked or not. A start that fails leaves nothing
    running: ``ray.shutdown()``, and every Ray process this start spawned (``gcs_server``, ``raylet``, agents) is
    ended, since a start that fails half-way has not told ``ray.shutdown`` about them. They are found by the session
    folder the start made under Ray's root (:func:`_ray_root`; each Ray process names it on its command line), so an
    agent whose raylet died first, re-parented away from this process, is ended too; and among this process's new
    children. A timeout is tried again; after the last try the error says what to set. Any other error is raised as
    it is, after the same cleaning up.
    """
    root = _ray_root(init.get("_temp_dir"))
    for attempt in range(attempts):
        saved = {name: os.environ.get(name) for name in RAY_START_ENV}
        before = _child_pids()
        sessions = _sessions(root)
        try:
            for name, value in RAY_START_ENV.items():
                os.environ.setdefault(name, value)
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env},
                     **init)
            return
        except Exception as err:  # Ray raises a bare Exception when its start times out
            _clean_failed_start(ray, before, [root / name for name in sorted(_sessions(root) - sessions)])
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


def _ray_root(temp_dir: str | None = None) -> Path:
    """The folder a local Ray started here keeps its sessions in (``session_<date>_<pid>``): ``temp_dir`` (ray.init's
    ``_temp_dir``), else ``ray`` in RAY_TMPDIR, else in TMPDIR (Linux), else in /tmp, as Ray chooses it."""
    if temp_dir:
        return Path(temp_dir)
    system = os.environ.get("RAY_TMPDIR") or (os.environ.get("TMPDIR") if sys.platform.startswith("linux") else None)
    if not system:
        system = "/tmp" if sys.platform.startswith(("linux", "darwin")) else tempfile.gettempdir()
    return Path(system) / "ray"


def _sessions(root: Path) -> set[str]:
    """The names of the session folders under Ray's ``root`` now (``session_latest`` is a link to one of them)."""
    try:
        return {p.name for p in root.iterdir() if p.name.startswith("session_") and p.name != "session_latest"}
    except OSError:
        return set()


def _child_pids() -> set[int]:
    """Process ids of this process's children (and theirs); empty without psutil."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - Ray depends on psutil
        return set()
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _clean_failed_start(ray: Any, before: set[int], sessions: Sequence[Path] = ()) -> None:
    """After a failed ``ray.init``: ``ray.shutdown()``, then end the Ray processes the start spawned that shutdown did
    not know of: every process whose command line names one of the start's ``sessions`` folders (wherever its parent
    is), and the children that were not there before it and whose command line names Ray."""
    try:
        ray.shutdown()
    except Exception:  # a half-started Ray may fail to shut down: its processes are ended below
        pass
    try:
        import psutil
    except ImportError:  # pragma: no cover
        return
    found = {}
    for proc in psutil.Process().children(recursive=True):
        if proc.pid in before:
            continue
        try:
            if "ray" in " ".join(proc.cmdline()).lower() or proc.name().startswith(("gcs_server", "raylet")):
                found[proc.pid] = proc
        except psutil.Error:
            continue
    folders = [str(folder) for folder in sessions]
    if folders:
        for proc in psutil.process_iter(["cmdline"]):
            try:
                line = " ".join(proc.info["cmdline"] or [])
            except psutil.Error:
                continue
            if proc.pid != os.getpid() and any(folder in line for folder in folders):
                found[proc.pid] = proc
    started = list(found.values())
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


def worker_env() -> dict[str, str]:
    """Environment of a local Ray's workers: this package importable (also from a source checkout), one thread for
    the numeric libraries (torch gets it in :class:`ShardWorker`), tokenizers quiet."""
    here = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": here + (os.pathsep + path if path else ""), "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
            **{k: os.environ[k] for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_VERBOSITY", "HF_HOME") if k in os.environ}}

