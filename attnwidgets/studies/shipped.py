"""The studies of the bundled model that notebook 04 shows, run once and shipped: load them in a second, or run them
here with ``train=True``.

Notebook 04 disables every head and every layer of the bundled all-MiniLM-L6-v2 in turn on a sentence-similarity task
(78 evaluations) and prunes its heads by importance and in a random order: tens of seconds on a laptop, minutes on a
busy one. Those studies were run once, from fixed seeds and one thread, by ``python benchmarks/train_shipped.py``, and
saved by their own ``save`` (:meth:`SweepResult.save <attnwidgets.studies.sweeps.SweepResult.save>`,
:meth:`PruningCurve.save <attnwidgets.studies.pruning.PruningCurve.save>`: tagged with the model they came from) as
``attnwidgets/data/shipped_<name>.npz``, the same place as the trained runs of :mod:`attnwidgets.teaching.shipped`.

:func:`shipped_study` hands back the :class:`~attnwidgets.studies.sweeps.SweepResult` or
:class:`~attnwidgets.studies.pruning.PruningCurve` that the study's call returns. It loads the shipped one when the
runner is the bundled model and the task is the study's (:func:`~attnwidgets.studies.tasks.sts_sample` of 40 pairs,
the first task it returns); for another model or another task (a notebook's ``MODEL`` or ``FULL_TASK`` switch), or
with ``train=True``, it runs the study here and says so.

A shipped file is read as untrusted: through the checks of the objects' own ``load`` (shapes, the model's heads, the
metric's range, a frame that matches its arrays), then against the study as the code defines it today (the same
call, the same task, every head and layer swept, the pruning points the call makes); a mismatch is a
:class:`~attnwidgets.persist.SavedFileError` naming the file and how to make it again.
``tests/project/test_shipped_checkpoints.py`` re-runs a few heads and the first pruning points and compares them with
the stored numbers.

Examples
--------
>>> sorted(STUDIES)
['sts-pruning', 'sts-pruning-random', 'sts-sweep']
>>> STUDIES["sts-sweep"].call()
"sweep_heads(runner, sts_sample(40)[0], mode='uniform')"
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..persist import ModelMismatchError, SavedFileError, check_provenance, machine_description, read_tags
from ..runner import Runner
from .pruning import PruningCurve, pruning_steps
from .sweeps import SweepResult
from .tasks import Task, sts_sample

__all__ = ["SCRIPT", "STUDIES", "Study", "load_study", "make_study", "shipped_study", "study_path", "task_sha256"]

SCRIPT = "benchmarks/train_shipped.py"


@dataclass(frozen=True)
class Study:
    """One shipped study: which study function (``kind``), its arguments (JSON), the task (``sts_sample(n_pairs)``'s
    first), and what it is."""

    name: str
    kind: Literal["sweep", "pruning", "random-pruning"]
    kwargs: dict[str, Any] = field(default_factory=dict)
    n_pairs: int = 40
    what: str = ""

    def call(self, task: str | None = None) -> str:
        """The study's call, as code (``task``: how to write the task; default the study's own)."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        task = task or f"sts_sample({self.n_pairs})[0]"
        return f"{_function(self.kind).__name__}(runner, {task}" + (f", {args})" if args else ")")


STUDIES: dict[str, Study] = {s.name: s for s in [
    Study("sts-sweep", "sweep", {"mode": "uniform"},
          what="every head and every layer of the bundled model disabled (uniform attention), one at a time, on "
               "sentence similarity (notebook 04 §2)"),
    Study("sts-pruning", "pruning", {"step": 0.1, "max_share": 0.9, "mode": "zero"},
          what="the bundled model's heads pruned by Michel et al.'s importance, 10 % at a time (notebook 04 §4)"),
    Study("sts-pruning-random", "random-pruning", {"step": 0.1, "max_share": 0.9, "mode": "zero", "seed": 0},
          what="the same numbers of heads pruned in a random order, the baseline of the curve above (notebook 04 §4)"),
]}


def _function(kind: str) -> Any:
    from . import pruning, sweeps

    return {"sweep": sweeps.sweep_heads, "pruning": pruning.pruning_curve,
            "random-pruning": pruning.random_pruning_curve}[kind]


def _study(name: str) -> Study:
    if name not in STUDIES:
        raise ValueError(f"no shipped study {name!r}; the package ships {', '.join(sorted(STUDIES))}")
    return STUDIES[name]


def study_path(name: str) -> Path:
    """Where the shipped file of study ``name`` lives (``attnwidgets/data/shipped_<name>.npz``)."""
    from .. import data

    _study(name)
    return Path(data.__file__).resolve().parent / f"shipped_{name.replace('-', '_')}.npz"


def task_sha256(task: Task) -> str:
    """A fingerprint of what a task measures: its name, metric, texts, example groups, gold scores and stacks (its
    score function cannot be hashed: two tasks with these equal and different metrics would look the same).

    Examples
    --------
    >>> a, b = sts_sample(40), sts_sample(40)
    >>> task_sha256(a[0]) == task_sha256(b[0]) != task_sha256(a[1])
    True
    """
    gold = None if task.gold is None else np.asarray(task.gold).tolist()  # scores, or labels (text)
    text = json.dumps([task.name, task.metric, list(task.texts), np.asarray(task.groups).tolist(), gold,
                       list(task.stacks)])
    return hashlib.sha256(text.encode()).hexdigest()


def _remake(study: Study) -> str:
    return f"make it again with `python {SCRIPT} --only {study.name}` (or pass train=True to run it here)"


def _run(study: Study, runner: Runner, task: Task, progress: bool) -> SweepResult | PruningCurve:
    result: SweepResult | PruningCurve = _function(study.kind)(runner, task, progress=progress, **study.kwargs)
    return result


def _estimate(study: Study, same: bool) -> str:
    """What making the shipped copy took, as an estimate of running it here (``same``: on the same model and task;
    else only a scale: another model or task takes its own time)."""
    try:
        made = read_tags(study_path(study.name))["settings"]["shipped"]
        took = f"{float(made['cpu_seconds']):.0f} s of one CPU core on {made.get('machine', 'a CPU')}"
    except (OSError, SavedFileError, KeyError, TypeError, ValueError):
        return "time unknown (the shipped copy is missing)"
    if same:
        return f"about {took} (what it took to make the shipped copy); longer on a busy machine"
    return (f"the shipped copy, of the bundled model on {study.n_pairs} pairs, took {took}; a bigger model or task "
            "takes longer")


def shipped_study(name: str, runner: Runner | None = None, task: Task | None = None, *, train: bool = False,
                  progress: bool = True) -> Any:
    """The study ``name`` (one of :data:`STUDIES`) of ``runner`` on ``task``: the shipped copy, or run here.

    Parameters
    ----------
    name : str
        ``"sts-sweep"``, ``"sts-pruning"`` or ``"sts-pruning-random"``.
    runner : Runner, optional
        The model; default the bundled one. The shipped copy is of the bundled model: for another one the study
        runs here (and says why).
    task : Task, optional
        Default the study's, ``sts_sample(40)[0]``; another task (say all 152 pairs) runs the study here.
    train : bool
        Run the study here (its call as :attr:`Study.kwargs` gives it, with a progress bar; the time it took to
        make the shipped copy printed first as an estimate) instead of loading it.
    progress : bool
        Show the progress bar while it runs here.

    Returns
    -------
    SweepResult | PruningCurve
        What the study's function returns. A loaded one's ``settings["shipped"]`` says where and how it was made.
        One line is printed: where the result comes from and what it cost.
    """
    study = _study(name)
    if not isinstance(train, bool):
        raise TypeError(f"train must be True or False, got {train!r}")
    if runner is None:
        from ..runner import get_runner

        runner = get_runner()
    own = sts_sample(study.n_pairs)[0]
    task = own if task is None else task
    reason = None
    other_task = task_sha256(task) != task_sha256(own)
    if other_task:
        reason = f"the shipped copy is of the task {own.name!r}, this is {task.name!r}"
    if reason is None:
        try:
            check_provenance(read_tags(study_path(name)), runner, what=f"the shipped {name}")
        except ModelMismatchError:
            reason = f"the shipped copy is of the bundled model, this is {runner.info.name!r}"
        except FileNotFoundError:
            if not train:
                raise SavedFileError(f"the shipped study {name!r} is missing ({str(study_path(name))!r}): "
                                     f"{_remake(study)}") from None
    if train or reason is not None:
        print(f"running {name} here ({reason or 'train=True'}): {study.call('task' if other_task else None)}; "
              f"{_estimate(study, same=reason is None)}")
        start, cpu = time.perf_counter(), time.process_time()
        result = _run(study, runner, task, progress)
        print(f"{name}: {time.perf_counter() - start:.1f} s here ({time.process_time() - cpu:.1f} s of CPU)")
        return result
    result = load_study(name, model=runner)
    made = result.settings["shipped"]
    print(f"{name} shipped with attnwidgets: {study.call()} took {made['cpu_seconds']:.0f} s of one CPU core "
          f"({made['seconds']:.0f} s wall clock) on {made['machine']} when {SCRIPT} made it; train=True runs it here")
    return result


def make_study(name: str, path: str | os.PathLike[str] | None = None, *, progress: bool = True) -> Path:
    """Run study ``name`` on the bundled model and its task and write its shipped file (default
    :func:`study_path`), its settings extended by ``"shipped"``: the study's name and arguments, the task's
    fingerprint, the time it took and the machine."""
    from ..runner import get_runner

    study = _study(name)
    runner = get_runner()
    task = sts_sample(study.n_pairs)[0]
    start, cpu = time.perf_counter(), time.process_time()
    result = _run(study, runner, task, progress)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    result.settings = {**result.settings, "shipped": {
        "name": name, "study": study.kwargs, "n_pairs": study.n_pairs, "task_sha256": task_sha256(task),
        "seconds": seconds, "cpu_seconds": cpu_seconds, "machine": machine_description(), "script": SCRIPT}}
    return result.save(path or study_path(name))


def load_study(name: str, path: str | os.PathLike[str] | None = None, *, model: Any = None) -> Any:
    """Load the shipped study ``name`` from ``path`` (default :func:`study_path`): through its class's ``load``
    (checked against ``model``, a runner or ModelInfo, when given), then against the study as defined today (its
    arguments, its task, every head and layer swept, the pruning points its call makes).
    :class:`~attnwidgets.persist.SavedFileError` for a file that does not fit."""
    study = _study(name)
    file = Path(path) if path is not None else study_path(name)
    where = repr(str(file))
    if not file.is_file():
        raise SavedFileError(f"the shipped study {name!r} is missing ({where}): {_remake(study)}")
    cls = SweepResult if study.kind == "sweep" else PruningCurve
    result = cls.load(file, model=model)
    made = result.settings.get("shipped")
    if not isinstance(made, dict) or made.get("name") != name:
        got = made.get("name") if isinstance(made, dict) else None
        raise SavedFileError(f"{where} holds the study {got!r}, not {name!r}: {_remake(study)}")
    if made.get("study") != json.loads(json.dumps(study.kwargs)) or made.get("n_pairs") != study.n_pairs:
        raise SavedFileError(f"{where} was made by another call ({made.get('study')} on {made.get('n_pairs')} pairs) "
                             f"than {name!r}'s today ({study.call()}): {_remake(study)}")
    task = sts_sample(study.n_pairs)[0]
    if made.get("task_sha256") != task_sha256(task) or result.metric != task.metric:
        raise SavedFileError(f"{where} was made on another task than {task.name!r} as the shipped pairs give it "
                             f"today: {_remake(study)}")
    try:
        for key in ("seconds", "cpu_seconds"):
            value = made[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValueError(f"its {key} is {value!r}")
        if not isinstance(made["machine"], str):
            raise ValueError(f"its machine is {made['machine']!r}")
        if isinstance(result, SweepResult):
            _check_sweep(result, study)
        else:
            _check_curve(result, study)
    except (KeyError, ValueError) as exc:
        raise SavedFileError(f"{where} does not hold the study {name!r} ({exc}): {_remake(study)}") from exc
    return result


def _check_sweep(sweep: SweepResult, study: Study) -> None:
    if sweep.mode != str(study.kwargs["mode"]) or sweep.stack != "self":
        raise ValueError(f"it swept mode {sweep.mode!r} of the {sweep.stack!r} stack")
    if not (np.isfinite(sweep.heads).all() and np.isfinite(sweep.layers).all() and np.isfinite(sweep.baseline)):
        raise ValueError("it does not hold every head, every layer and the baseline")


def _check_curve(curve: PruningCurve, study: Study) -> None:
    settings = curve.settings
    for key, value in study.kwargs.items():
        if settings.get(key) != value:
            raise ValueError(f"its {key} is {settings.get(key)!r}, the study's {value!r}")
    info = curve.model
    if info is None:
        raise ValueError("it does not say which model it came from")
    total = info.n_layers * info.n_heads
    per_step, n_steps = pruning_steps(total, study.kwargs["step"], study.kwargs["max_share"])
    expected = [k * per_step for k in range(n_steps + 1)]
    if curve.frame["n_pruned"].tolist() != expected:
        raise ValueError(f"its points prune {curve.frame['n_pruned'].tolist()} heads, the study's {expected}")
    if not np.allclose(curve.frame["share"].to_numpy(np.float64), np.array(expected) / total):
        raise ValueError("its shares are not its numbers of heads pruned over the model's heads")
    if not np.isfinite(curve.frame["metric"].to_numpy(np.float64)).all():
        raise ValueError("it has a point without a metric")
    pruned = list(curve.frame["pruned"])
    if any(len(set(p)) != len(p) or list(p[:len(q)]) != list(q) for q, p in pairwise(pruned)):
        raise ValueError("each point does not prune the heads of the point before and more")
    n_importance = len(curve.importance)
    want = n_steps if study.kind == "pruning" else 0
    if n_importance != want:
        raise ValueError(f"it has {n_importance} importance maps, the study makes {want}")
