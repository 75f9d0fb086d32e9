"""Pruning curves: the task's metric as more and more heads are pruned (Michel et al. 2019, Fig. 2), the least
important first (:func:`pruning_curve`, importance recomputed after each step) or in a random order
(:func:`random_pruning_curve`, what the first is measured against).

Each point is measured as a sweep measures one ablation (:func:`attnwidgets.studies.sweeps.evaluate`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..html_repr import repr_html
from ..result import ModelInfo
from ..runner import Runner
from ..runner.ablation import Ablation
from .importance import ImportanceSums, ImportanceWork, least_important
from .sweeps import SweepResult, check_heads, check_metric, evaluate, head_limit, sweep_frame
from .tasks import Task

__all__ = ["PrunedWork", "PruningCurve", "pruning_curve", "pruning_steps", "random_pruning_curve"]


@dataclass
class PrunedWork:
    """One shard of :func:`pruning_curve`: the task's metric with some heads pruned, as a one-unit
    :class:`~attnwidgets.studies.sweeps.SweepResult` whose baseline is that metric."""

    task: Task
    mode: str
    stack: str
    batch_size: int

    def __call__(self, runner: Runner, pruned: list[list[tuple[int, int]]]) -> SweepResult:
        ab = Ablation.heads(pruned[0], self.mode, stack=self.stack) if pruned[0] else None
        value = evaluate(runner, self.task, ab, batch_size=self.batch_size)
        L, H = self.task.check_stack(runner.info, self.stack)
        return SweepResult(sweep_frame(np.full((L, H), np.nan), np.full(L, np.nan), value, set()),
                           np.full((L, H), np.nan), np.full(L, np.nan), value, self.task.metric, self.mode, 0.0,
                           runner.info.name, stack=self.stack)


@dataclass
class PruningCurve:
    """Metric against the share of heads pruned (Michel et al. Fig. 2-style).

    Attributes
    ----------
    frame : pandas.DataFrame
        ``share`` (pruned share of heads), ``n_pruned``, ``metric``, ``pruned`` (list of (layer, head) so far).
    metric : str
    importance : list[np.ndarray]
        The (L, H) normalised importance used at each step (NaN for heads already pruned).
    model : ModelInfo | None
        The model that was pruned (what a saved file is tagged with).
    settings : dict
        The task's name, step, max_share, mode, stack and batch size.
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    frame: pd.DataFrame
    metric: str
    importance: list[np.ndarray]
    model: ModelInfo | None = field(default=None, repr=False)
    settings: dict[str, Any] = field(default_factory=dict, repr=False)

    # -- saving --------------------------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the curve to ``path``, an ``.npz`` archive tagged with the model and the settings
        (:mod:`attnwidgets.persist`); :meth:`load` reads it back (``pruned`` as lists of (layer, head) tuples).

        Examples
        --------
        >>> import tempfile
        >>> frame = pd.DataFrame(dict(share=[0.0, 0.5], n_pruned=[0, 1], metric=[0.8, 0.7], pruned=[[], [(0, 1)]]))
        >>> curve = PruningCurve(frame, "accuracy", [np.array([[0.6, 0.8]])])
        >>> back = PruningCurve.load(curve.save(tempfile.mkdtemp() + "/curve.npz"))
        >>> back.frame.equals(curve.frame), back.frame["pruned"].tolist()
        (True, [[], [(0, 1)]])
        """
        from ..persist import frame_arrays, write

        pruned = [list(p) for p in self.frame["pruned"]] if "pruned" in self.frame else None
        arrays, spec = frame_arrays(self.frame.drop(columns="pruned") if pruned is not None else self.frame, "frame")
        if pruned is not None:
            arrays["pruned"] = np.array([lh for step in pruned for lh in step], dtype=np.int64).reshape(-1, 2)
            arrays["pruned_lengths"] = np.array([len(step) for step in pruned], dtype=np.int64)
            spec["pruned_at"] = list(self.frame.columns).index("pruned")
        for i, imp in enumerate(self.importance):
            arrays[f"importance.{i}"] = imp
        attrs = {"frame": spec, "metric": self.metric, "n_importance": len(self.importance)}
        return write(path, "PruningCurve", arrays, model=self.model, settings=self.settings, attrs=attrs)

    @classmethod
    def load(cls, path: str | os.PathLike[str], model: Any = None) -> PruningCurve:
        """Load what :meth:`save` wrote; ``model`` (a runner, a ModelInfo, a model id or folder; None: no check) must
        be the model that was pruned, else :class:`~attnwidgets.persist.ModelMismatchError` names both."""
        from ..persist import Saved, frame_from_arrays, info_from_tags, load_checked

        def build(saved: Saved) -> PruningCurve:
            a, info = saved.attrs, info_from_tags(saved.model)
            limit = head_limit(info)
            n_imp = a["n_importance"]
            if isinstance(n_imp, bool) or not isinstance(n_imp, int) or not 0 <= n_imp <= limit:
                raise ValueError(f"its number of importance steps is {n_imp!r}")
            frame = frame_from_arrays(saved, "frame", a["frame"], limit=limit + 1)
            if "pruned_at" in a["frame"]:
                lengths = saved.array("pruned_lengths", (len(frame),), "iu")
                if lengths.min(initial=0) < 0 or lengths.max(initial=0) > limit:
                    raise ValueError("its numbers of pruned heads are outside 0..the model's heads")
                flat = saved.array("pruned", (int(lengths.sum()), 2), "iu")
                ends = np.cumsum(lengths)
                steps = [[(int(lay), int(h)) for lay, h in flat[end - n:end]] for n, end in zip(lengths, ends)]
                at = a["frame"]["pruned_at"]
                if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at <= len(frame.columns):
                    raise ValueError(f"its column position of 'pruned' is {at!r}")
                frame.insert(at, "pruned", pd.Series(steps, dtype=object, index=frame.index))
            importance = [saved.array(f"importance.{i}", (None, None), "f", limit=limit) for i in range(n_imp)]
            if not isinstance(a["metric"], str):
                raise ValueError(f"its metric is {a['metric']!r}, not text")
            curve = cls(frame, a["metric"], importance, info, saved.settings)
            curve.check()
            return curve

        return load_checked(path, "PruningCurve", build, model=model)

    def check(self) -> None:
        """Raise ValueError unless this is a curve :func:`pruning_curve` can make: importance maps of one (layers,
        heads) shape (the model's when known), 0 or more or NaN; ``share`` between 0 and 1, ``n_pruned`` whole
        numbers of 0 or more, ``pruned`` that many heads inside the model, and the metric within its range
        (:data:`~attnwidgets.studies.sweeps.METRIC_RANGES`). Loading a file calls it."""
        shapes = {imp.shape for imp in self.importance}
        if self.model is not None:
            for each in shapes:
                check_heads(each, self.model, "its importance maps")
        if len(shapes) > 1 or any(len(s) != 2 for s in shapes):
            raise ValueError(f"its importance maps are shaped {sorted(shapes)}, not one (layers, heads) shape")
        for imp in self.importance:
            if imp.dtype.kind != "f" or np.isinf(imp).any() or (imp < 0).any():
                raise ValueError("its importance maps hold values that are not numbers of 0 or more (or NaN)")
        frame = self.frame
        if "share" in frame:
            share = frame["share"].to_numpy(np.float64)
            if not ((share >= 0) & (share <= 1)).all():
                raise ValueError("its shares of heads pruned are outside 0..1")
        if "n_pruned" in frame:
            n = frame["n_pruned"].to_numpy()
            if n.dtype.kind not in "iu" or n.min(initial=0) < 0:
                raise ValueError("its numbers of heads pruned are not whole numbers of 0 or more")
            if "pruned" in frame and [len(p) for p in frame["pruned"]] != n.tolist():
                raise ValueError("its lists of pruned heads are not n_pruned long")
        if "metric" in frame:
            check_metric(self.metric, frame["metric"].to_numpy(np.float64))
        if "pruned" in frame:
            shape = next(iter(shapes), None)
            if shape is None and self.model is not None:
                shape = (self.model.n_layers, self.model.n_heads)
            for step in frame["pruned"]:
                for lay, h in step:
                    if lay < 0 or h < 0 or (shape is not None and (lay >= shape[0] or h >= shape[1])):
                        raise ValueError(f"it lists pruned head ({lay}, {h}) outside the model's heads {shape}")


def pruning_curve(
    runner: Runner,
    task: Task,
    *,
    step: float = 0.1,
    max_share: float = 0.9,
    mode: str = "zero",
    batch_size: int = 32,
    progress: bool = True,
    stack: str = "self",
    backend: str = "local",
    ray_address: str | None = None,
    num_workers: int | None = None,
    num_gpus: float = 0,
    device: str | None = None,
    dtype: str | None = None,
) -> PruningCurve:
    """Iteratively prune the least important heads (``step`` of all heads at a time, recomputing importance).

    Importance is Michel et al.'s, normalised per layer and compared across layers (as in their paper); pruned heads
    are gated to 0 while the next importance is computed, and the metric is measured with them ``mode``-ablated
    (``"zero"`` is the same as a zero gate). ``stack`` is "self", or "encoder" for an encoder-decoder (see
    :func:`~attnwidgets.studies.importance.head_importance`).

    ``backend="ray"`` (with ``ray_address``, ``num_workers``, ``num_gpus``, ``device``, ``dtype``; see
    :mod:`attnwidgets.studies.shards`) spreads each step's importance over the workers, a batch of examples per
    shard, merged as :class:`~attnwidgets.studies.importance.ImportanceSums`. A curve itself has no ``merge``:
    each step depends on the heads the step before pruned, so the steps run one after another.
    """
    from . import shards

    L, H = task.check_stack(runner.info, stack, needs_loss=True)
    total = L * H
    per_step, n_steps = pruning_steps(total, step, max_share)
    mask = np.ones((L, H), np.float32)
    pruned: list[tuple[int, int]] = []
    options = shards.Options(backend=backend, ray_address=ray_address, num_workers=num_workers, num_gpus=num_gpus,
                             device=device, dtype=dtype, progress=False)
    batches = task.batches(batch_size)
    importance_plan = shards.plan(batches, sizes=[len(b) for b in batches])
    measure = PrunedWork(task, mode, stack, batch_size)
    settings = {"study": "pruning_curve", "task": task.name, "mode": mode, "stack": stack}
    importances = []
    bar: Any = None
    with shards.Pool(runner, options) as pool:

        def metric(heads: list[tuple[int, int]]) -> float:
            (part,) = pool.map(measure, shards.plan([list(heads)]), kind=SweepResult, settings=settings, desc="",
                               unit="")
            return float(part.baseline)

        rows = [dict(share=0.0, n_pruned=0, metric=metric([]), pruned=[])]
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=n_steps, desc="pruning", unit="step", delay=1.0)
        try:
            for _ in range(n_steps):
                parts = pool.map(ImportanceWork(task, mask.copy(), stack), importance_plan, kind=ImportanceSums,
                                 settings=settings, desc="", unit="")
                imp = shards.merge(parts).importance("layer")
                importances.append(imp)
                chosen = least_important(imp, per_step, pruned)
                if not chosen:
                    break
                pruned += chosen
                for lay, h in chosen:
                    mask[lay, h] = 0
                rows.append(dict(share=len(pruned) / total, n_pruned=len(pruned), metric=metric(pruned),
                                 pruned=list(pruned)))
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
    return PruningCurve(pd.DataFrame(rows), task.metric, importances, runner.info,
                        {"task": task.name, "step": step, "max_share": max_share, "mode": mode, "stack": stack,
                         "batch_size": batch_size})


def pruning_steps(total: int, step: float, max_share: float) -> tuple[int, int]:
    """(heads pruned per step, number of steps) of a pruning curve over ``total`` heads that prunes ``step`` of them
    at a time up to ``max_share`` (shares of all heads): the curve has a point at 0 and after each step.

    >>> pruning_steps(72, 0.1, 0.9)
    (7, 9)
    """
    if not 0 < step <= 1 or not 0 < max_share <= 1:
        raise ValueError("step and max_share are shares of all heads, between 0 and 1")
    per_step = max(1, round(step * total))
    return per_step, int(np.floor(max_share * total / per_step + 1e-9))


def random_pruning_curve(
    runner: Runner,
    task: Task,
    *,
    step: float = 0.1,
    max_share: float = 0.9,
    mode: str = "zero",
    seed: int = 0,
    batch_size: int = 32,
    stack: str = "self",
    progress: bool = True,
) -> PruningCurve:
    """What :func:`pruning_curve` is measured against: the same numbers of heads pruned in a random order.

    One seeded permutation of all heads (``numpy.random.default_rng(seed).permutation`` of the (layer, head) pairs in
    layer-major order); the point after k steps prunes its first k · ``step`` · heads, ``mode``-ablated, and measures
    the task. The points are the ones :func:`pruning_curve` with the same ``step`` and ``max_share`` has, so the two
    curves overlay. A :class:`PruningCurve` with no importance maps; its settings say ``"order": "random"`` and the
    seed.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> from attnwidgets.studies.tasks import sts_sample
    >>> curve = random_pruning_curve(aw.runner.get_runner(), sts_sample(40)[0], progress=False)    # doctest: +SKIP
    >>> curve.frame[["share", "n_pruned", "metric"]]                                        # doctest: +SKIP
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be a whole number, got {seed!r}")
    L, H = task.check_stack(runner.info, stack)
    total = L * H
    per_step, n_steps = pruning_steps(total, step, max_share)
    order = [(int(lay), int(h)) for lay, h in
             np.random.default_rng(seed).permutation([(lay, h) for lay in range(L) for h in range(H)])]
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_steps + 1, desc="random pruning", unit="point", delay=1.0)
    rows = []
    try:
        for k in range(n_steps + 1):
            pruned = order[:k * per_step]
            ab = Ablation.heads(pruned, mode, stack=stack) if pruned else None
            rows.append(dict(share=len(pruned) / total, n_pruned=len(pruned),
                             metric=evaluate(runner, task, ab, batch_size=batch_size), pruned=list(pruned)))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return PruningCurve(pd.DataFrame(rows), task.metric, [], runner.info,
                        {"task": task.name, "step": step, "max_share": max_share, "mode": mode, "stack": stack,
                         "batch_size": batch_size, "order": "random", "seed": int(seed)})
