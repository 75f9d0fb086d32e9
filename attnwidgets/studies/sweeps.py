"""Sweeps: disable each head and each layer and measure a task (Kovaleva et al. 2019), and Michel et al.'s pruning.

Every evaluation goes through :meth:`Runner.iter_results` with ``cache=False`` (a sweep would otherwise fill the
result cache with thousands of ablated results) and so through partial recomputation: disabling a head in layer l
re-runs layers ≥ l only, replaying the clean run below.

Examples
--------
>>> import attnwidgets as aw
>>> from attnwidgets.studies.tasks import sts_task
>>> sweep = sweep_heads(aw.get_runner(), sts_task(), progress=False)     # doctest: +SKIP
>>> sweep.heads.shape, sweep.improving.sum()                              # doctest: +SKIP
((6, 12), ...)
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..analysis.merging import check_same_model, check_same_settings
from ..result import ModelInfo
from ..runner import Runner
from ..runner.ablation import Ablation, MeanPattern
from ..runner.partial import forward_ablated
from .importance import ImportanceWork, least_important
from .tasks import Task, pooled_embedding

__all__ = ["PrunedWork", "PruningCurve", "SweepResult", "SweepWork", "evaluate", "pooled_embeddings", "pruning_curve",
           "sweep_heads"]


def evaluate(runner: Runner, task: Task, ablation: Ablation | None = None, *, batch_size: int = 64) -> float:
    """The task's metric with the ablation applied (None: the clean model).

    Tasks scored from pooled embeddings alone take a fast path: texts sorted by length (less padding), no
    :class:`~attnwidgets.result.AttentionResult` built, partial recomputation as in :meth:`Runner.run`. An ablation
    of a decoder or cross-attention stack is scored from full results (the pooled embedding cannot see it).
    """
    on_decoder = ablation is not None and any(e.stack in ("decoder", "cross") for e in ablation.edits)
    if task.score_embeddings is not None and not on_decoder:
        return float(task.score_embeddings(pooled_embeddings(runner, task.texts, ablation, batch_size=batch_size)))
    results = list(runner.iter_results(task.texts, ablation=ablation, batch_size=batch_size,
                                       cache=ablation is None, progress=False))  # one step of a sweep's bar
    return float(task.score(results))


def pooled_embeddings(runner: Runner, texts: Sequence[str], ablation: Ablation | None = None, *,
                      batch_size: int = 64) -> np.ndarray:
    """(N, d) mean-pooled last hidden states of ``texts`` under an ablation, the same as ``outputs["embedding"]``."""
    # Sorting by length only: verbose=False keeps transformers from logging about texts the model will truncate.
    lengths = [len(ids) for ids in runner.tokenizer(list(texts), verbose=False)["input_ids"]]
    order = np.argsort(lengths, kind="stable")
    hooks = list(ablation.hooks(runner.info)) if ablation else []
    out_rows: list[np.ndarray] = []
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = [texts[i] for i in idx]
        enc = runner.encode(batch)
        if hooks:
            keys = [runner.cache_key(t) for t in batch]
            out = forward_ablated(runner, enc, hooks, ablation, keys, fill_attention=False)
        else:
            out = runner.forward(enc)
        mask = enc.inputs.get("attention_mask", torch.ones_like(enc.inputs["input_ids"]))
        out_rows.append(pooled_embedding(out, mask).float().numpy())
    E = np.concatenate(out_rows)
    result = np.empty_like(E)
    result[order] = E
    return result


@dataclass
class SweepResult:
    """The metric with each single head, and each whole layer, disabled.

    Attributes
    ----------
    frame : pandas.DataFrame
        Tidy: ``unit`` ("head" or "layer"), ``layer``, ``head`` (-1 for a layer), ``metric``, ``delta``
        (metric − baseline), ``improves`` (delta > 0).
    heads : np.ndarray
        (L, H) metric with that head disabled.
    layers : np.ndarray
        (L,) metric with that layer disabled (NaN when layers were not swept).
    baseline : float
        The clean model's metric.
    metric, mode : str
        The task's metric name and how heads were disabled.
    seconds : float
        Wall time of the sweep (of a merged sweep: the sum of its parts' times).
    model : ModelInfo | str | None
        The model that was swept (what a saved file is tagged with; a name, or None, when unknown).
    settings : dict
        The task's name, the stack, whether layers were swept, the batch size.
    stack : str
        The stack that was swept.

    A sweep over some heads only (a shard of a bigger sweep) holds NaN for the others and only their rows in
    ``frame``; :meth:`merge` puts sweeps over disjoint heads together.
    """

    frame: pd.DataFrame
    heads: np.ndarray
    layers: np.ndarray
    baseline: float
    metric: str
    mode: str
    seconds: float
    model: ModelInfo | str | None = field(default=None, repr=False)
    settings: dict[str, Any] = field(default_factory=dict, repr=False)
    stack: str = "self"

    def merge(self, *others: SweepResult) -> SweepResult:
        """The sweep over this part's heads and layers and the others' together (partial sweeps over disjoint units).

        Raises
        ------
        ValueError
            When the parts swept the same head or layer twice, come from different models, or differ in metric,
            mode, stack or shape, or in their clean baseline.

        Examples
        --------
        >>> def part(lay, value, baseline):
        ...     heads = np.full((2, 1), np.nan); heads[lay, 0] = value
        ...     rows = [dict(unit="head", layer=lay, head=0, metric=value, delta=np.nan, improves=False)]
        ...     return SweepResult(pd.DataFrame(rows), heads, np.full(2, np.nan), baseline, "acc", "zero", 1.0, "m")
        >>> whole = part(1, 0.7, np.nan).merge(part(0, 0.9, 0.8))
        >>> whole.heads.ravel().tolist(), whole.baseline, whole.frame["delta"].round(2).tolist()
        ([0.9, 0.7], 0.8, [0.1, -0.1])
        """
        parts = [self, *others]
        for part in parts:
            if not isinstance(part, SweepResult):
                raise TypeError(f"SweepResult.merge takes SweepResult, got {type(part).__name__}")
        check_same_settings("SweepResult", [{"metric": p.metric, "mode": p.mode, "stack": p.stack,
                                             "shape": p.heads.shape} for p in parts])
        model = check_same_model("SweepResult", [p.model for p in parts]) or ""
        baselines = [float(p.baseline) for p in parts if np.isfinite(p.baseline)]
        baseline = baselines[0] if baselines else float("nan")
        if baselines and not np.allclose(baselines, baseline, rtol=1e-6, atol=1e-9):
            raise ValueError(f"cannot merge SweepResult parts whose clean baselines differ ({min(baselines)} vs "
                             f"{max(baselines)}): the model or the task differs between them")
        heads = np.full(self.heads.shape, np.nan)
        layers = np.full(self.layers.shape, np.nan)
        seen: set[tuple[str, int, int]] = set()
        for p in parts:
            for unit, lay, h in zip(p.frame["unit"], p.frame["layer"], p.frame["head"]):
                key = (str(unit), int(lay), int(h))
                if key in seen:
                    raise ValueError(f"cannot merge SweepResult parts that both swept {unit} {lay}" +
                                     (f"-{h}" if unit == "head" else "") + ": partial sweeps must cover disjoint "
                                     "heads and layers")
                seen.add(key)
                if unit == "head":
                    heads[lay, h] = p.heads[lay, h]
                else:
                    layers[lay] = p.layers[lay]
        return SweepResult(_sweep_frame(heads, layers, baseline, seen), heads, layers, baseline, self.metric,
                           self.mode, float(sum(p.seconds for p in parts)), model,
                           stack=self.stack)

    def to_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """(arrays, metadata) for a file; :meth:`from_state` builds the sweep back."""
        arrays = {"heads": self.heads, "layers": self.layers,
                  "units": np.array([str(u) for u in self.frame["unit"]], dtype=str),
                  "unit_layer": self.frame["layer"].to_numpy(np.int64),
                  "unit_head": self.frame["head"].to_numpy(np.int64)}
        meta = {"baseline": float(self.baseline), "metric": self.metric, "mode": self.mode,
                "seconds": float(self.seconds), "model": self.model, "stack": self.stack}
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> SweepResult:
        """The :class:`SweepResult` that :meth:`to_state` described."""
        heads, layers = np.asarray(arrays["heads"], np.float64), np.asarray(arrays["layers"], np.float64)
        units = {(str(u), int(lay), int(h)) for u, lay, h in
                 zip(arrays["units"], arrays["unit_layer"], arrays["unit_head"])}
        baseline = float(meta["baseline"])
        return cls(_sweep_frame(heads, layers, baseline, units), heads, layers, baseline, str(meta["metric"]),
                   str(meta["mode"]), float(meta["seconds"]), str(meta["model"]),
                   stack=str(meta["stack"]))

    @property
    def delta(self) -> np.ndarray:
        """(L, H) metric change when the head is disabled (positive: removing it helps)."""
        return self.heads - self.baseline

    @property
    def improving(self) -> np.ndarray:
        """(L, H) bool: heads whose removal improves the metric."""
        return self.delta > 0

    @property
    def seconds_per_head(self) -> float:
        return self.seconds / max(1, self.heads.size + int(np.isfinite(self.layers).sum()))

    # -- saving --------------------------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the sweep to ``path``, an ``.npz`` archive tagged with the model and the settings
        (:mod:`attnwidgets.persist`); :meth:`load` reads it back. Returns the path.

        Examples
        --------
        >>> import tempfile
        >>> from attnwidgets.result import ModelInfo
        >>> frame = pd.DataFrame(dict(unit=["head"], layer=[0], head=[0], metric=[0.5], delta=[-0.25],
        ...                           improves=[False]))
        >>> sweep = SweepResult(frame, np.array([[0.5]]), np.array([np.nan]), 0.75, "spearman", "zero", 1.0,
        ...                     ModelInfo("tiny", "encoder", 1, 1, 8))
        >>> back = SweepResult.load(sweep.save(tempfile.mkdtemp() + "/sweep.npz"), model=sweep.model)
        >>> back.frame.equals(sweep.frame), back.baseline, back.delta.tolist()
        (True, 0.75, [[-0.25]])
        """
        from ..persist import frame_arrays, write

        arrays, spec = frame_arrays(self.frame, "frame")
        arrays |= {"heads": self.heads, "layers": self.layers}
        attrs = {"frame": spec, "baseline": float(self.baseline), "metric": self.metric, "mode": self.mode,
                 "seconds": float(self.seconds)}
        return write(path, "SweepResult", arrays, model=self.model, settings=self.settings, attrs=attrs)

    @classmethod
    def load(cls, path: str | os.PathLike[str], model: Any = None) -> SweepResult:
        """Load what :meth:`save` wrote; ``model`` (a runner, a ModelInfo, a model id or folder; None: no check) must
        be the model that was swept, else :class:`~attnwidgets.persist.ModelMismatchError` names both."""
        from ..persist import frame_from_arrays, info_from_tags, read

        saved = read(path, "SweepResult", model=model)
        a = saved.attrs
        return cls(frame_from_arrays(saved, "frame", a["frame"]), saved.array("heads"), saved.array("layers"),
                   a["baseline"], a["metric"], a["mode"], a["seconds"], info_from_tags(saved.model), saved.settings)


def _sweep_frame(heads: np.ndarray, layers: np.ndarray, baseline: float, units: set[tuple[str, int, int]]
                 ) -> pd.DataFrame:
    """The tidy frame of the units swept: heads in layer-major order, then layers."""
    rows = []
    for lay, h in np.ndindex(*heads.shape):
        if ("head", lay, h) in units:
            v = float(heads[lay, h])
            rows.append(dict(unit="head", layer=lay, head=h, metric=v, delta=v - baseline, improves=v > baseline))
    for lay in range(len(layers)):
        if ("layer", lay, -1) in units:
            v = float(layers[lay])
            rows.append(dict(unit="layer", layer=lay, head=-1, metric=v, delta=v - baseline, improves=v > baseline))
    return pd.DataFrame(rows, columns=["unit", "layer", "head", "metric", "delta", "improves"])


@dataclass
class SweepWork:
    """One shard of :func:`sweep_heads`: the task's metric with each of some units disabled, as a partial
    :class:`SweepResult` (the unit ``("baseline", -1, -1)`` measures the clean model)."""

    task: Task
    shape: tuple[int, int]
    mode: str | float
    stack: str = "self"
    reference: MeanPattern | None = None
    batch_size: int = 64

    def __call__(self, runner: Runner, units: list[tuple[str, int, int]]) -> SweepResult:
        start = time.perf_counter()
        L, H = self.shape
        heads, layers, baseline = np.full((L, H), np.nan), np.full(L, np.nan), float("nan")
        swept: set[tuple[str, int, int]] = set()
        for unit, lay, h in units:
            if unit == "baseline":
                baseline = evaluate(runner, self.task, None, batch_size=self.batch_size)
                continue
            ab = Ablation.heads({(self.stack, lay, h): self.mode}, reference=self.reference) if unit == "head" else \
                Ablation.layers([(self.stack, lay)], self.mode, reference=self.reference)
            value = evaluate(runner, self.task, ab, batch_size=self.batch_size)
            if unit == "head":
                heads[lay, h] = value
            else:
                layers[lay] = value
            swept.add((unit, lay, h))
        return SweepResult(_sweep_frame(heads, layers, baseline, swept), heads, layers, baseline, self.task.metric,
                           str(self.mode), time.perf_counter() - start, runner.info.name,
                           stack=self.stack)


@dataclass
class PrunedWork:
    """One shard of :func:`pruning_curve`: the task's metric with some heads pruned, as a one-unit
    :class:`SweepResult` whose baseline is that metric."""

    task: Task
    mode: str
    stack: str
    batch_size: int

    def __call__(self, runner: Runner, pruned: list[list[tuple[int, int]]]) -> SweepResult:
        ab = Ablation.heads(pruned[0], self.mode, stack=self.stack) if pruned[0] else None
        value = evaluate(runner, self.task, ab, batch_size=self.batch_size)
        L, H = self.task.check_stack(runner.info, self.stack)
        return SweepResult(_sweep_frame(np.full((L, H), np.nan), np.full(L, np.nan), value, set()),
                           np.full((L, H), np.nan), np.full(L, np.nan), value, self.task.metric, self.mode, 0.0,
                           runner.info.name, stack=self.stack)


def sweep_heads(
    runner: Runner,
    task: Task,
    *,
    mode: str | float = "uniform",
    layers: bool = True,
    stack: str = "self",
    reference: MeanPattern | None = None,
    batch_size: int = 64,
    progress: bool = True,
    backend: str = "local",
    ray_address: str | None = None,
    num_workers: int | None = None,
    num_gpus: float = 0,
    device: str | None = None,
    dtype: str | None = None,
    results_dir: str | os.PathLike[str] | None = None,
) -> SweepResult:
    """Disable every head on its own (and every layer), measuring the task each time.

    Parameters
    ----------
    runner : Runner
    task : Task
        E.g. :func:`~attnwidgets.studies.tasks.sts_task` or :func:`~attnwidgets.studies.tasks.sentiment_task`.
    mode : str or float
        How to disable: ``"uniform"`` (default, as Kovaleva et al.), ``"zero"``, ``"mean"`` (needs ``reference``),
        or a scale.
    layers : bool
        Also disable each whole layer.
    stack : str
        Which attention to sweep ("self"; "encoder"/"decoder"/"cross" for encoder-decoders). The task must be able to
        see it (:attr:`Task.stacks`): the shipped tasks score the pooled encoder embedding, so "encoder" only.
    backend, ray_address, num_workers, num_gpus, device, dtype, results_dir
        Where the ablations run: in this process (``backend="local"``) or spread over Ray workers that load the model
        once (``backend="ray"``); each head is a shard, merged with :meth:`SweepResult.merge`; ``results_dir=``
        keeps finished heads so that a rerun resumes. See :mod:`attnwidgets.studies.shards`.
    """
    from . import shards

    start = time.perf_counter()
    L, H = task.check_stack(runner.info, stack)
    units: list[tuple[str, int, int]] = [("baseline", -1, -1)]
    units += [("head", lay, h) for lay in range(L) for h in range(H)]
    if layers:
        units += [("layer", lay, -1) for lay in range(L)]
    options = shards.Options(backend=backend, ray_address=ray_address, num_workers=num_workers, num_gpus=num_gpus,
                             device=device, dtype=dtype, results_dir=results_dir, progress=progress)
    settings = {"study": "sweep_heads", "task": task.name, "metric": task.metric, "mode": mode, "layers": layers,
                "stack": stack, "batch_size": batch_size, "reference": reference is not None}
    work = SweepWork(task, (L, H), mode, stack, reference, batch_size)
    result: SweepResult = shards.run(work, shards.plan(units), runner, options, settings=settings,
                                     desc=f"sweep ({mode})", unit="ablation")
    result.seconds = time.perf_counter() - start
    result.model, result.settings = runner.info, settings
    return result


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
        from ..persist import frame_from_arrays, info_from_tags, read

        saved = read(path, "PruningCurve", model=model)
        a = saved.attrs
        frame = frame_from_arrays(saved, "frame", a["frame"])
        if "pruned_at" in a["frame"]:
            flat = saved.array("pruned")
            ends = np.cumsum(saved.array("pruned_lengths"))
            steps = [[(int(lay), int(h)) for lay, h in flat[end - n:end]]
                     for n, end in zip(saved.array("pruned_lengths"), ends)]
            frame.insert(int(a["frame"]["pruned_at"]), "pruned", pd.Series(steps, dtype=object, index=frame.index))
        return cls(frame, a["metric"], [saved.array(f"importance.{i}") for i in range(int(a["n_importance"]))],
                   info_from_tags(saved.model), saved.settings)


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

    if not 0 < step <= 1 or not 0 < max_share <= 1:
        raise ValueError("step and max_share are shares of all heads, between 0 and 1")
    L, H = task.check_stack(runner.info, stack, needs_loss=True)
    total = L * H
    per_step = max(1, round(step * total))
    mask = np.ones((L, H), np.float32)
    pruned: list[tuple[int, int]] = []
    options = shards.Options(backend=backend, ray_address=ray_address, num_workers=num_workers, num_gpus=num_gpus,
                             device=device, dtype=dtype, progress=False)
    batches = task.batches(batch_size)
    importance_plan = shards.plan(batches, sizes=[len(b) for b in batches])
    measure = PrunedWork(task, mode, stack, batch_size)
    settings = {"study": "pruning_curve", "task": task.name, "mode": mode, "stack": stack}
    importances = []
    n_steps = int(np.floor(max_share * total / per_step + 1e-9))
    bar: Any = None
    with shards.Pool(runner, options) as pool:

        def metric(heads: list[tuple[int, int]]) -> float:
            (part,) = pool.map(measure, shards.plan([list(heads)]), settings=settings, desc="", unit="")
            return float(part.baseline)

        rows = [dict(share=0.0, n_pruned=0, metric=metric([]), pruned=[])]
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=n_steps, desc="pruning", unit="step", delay=1.0)
        try:
            for _ in range(n_steps):
                parts = pool.map(ImportanceWork(task, mask.copy(), stack), importance_plan, settings=settings,
                                 desc="", unit="")
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
