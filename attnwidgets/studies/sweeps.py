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

from ..result import ModelInfo
from ..runner import Runner
from ..runner.ablation import Ablation, MeanPattern
from ..runner.partial import forward_ablated
from .importance import head_importance, least_important
from .tasks import Task, pooled_embedding

__all__ = ["PruningCurve", "SweepResult", "evaluate", "pooled_embeddings", "pruning_curve", "sweep_heads"]


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
        Wall time of the sweep.
    model : ModelInfo | None
        The model that was swept (what a saved file is tagged with).
    settings : dict
        The task's name, the stack, whether layers were swept, the batch size.
    """

    frame: pd.DataFrame
    heads: np.ndarray
    layers: np.ndarray
    baseline: float
    metric: str
    mode: str
    seconds: float
    model: ModelInfo | None = field(default=None, repr=False)
    settings: dict[str, Any] = field(default_factory=dict, repr=False)

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
    """
    start = time.perf_counter()
    L, H = task.check_stack(runner.info, stack)
    baseline = evaluate(runner, task, None, batch_size=batch_size)
    units: list[tuple[str, int, int]] = [("head", lay, h) for lay in range(L) for h in range(H)]
    if layers:
        units += [("layer", lay, -1) for lay in range(L)]
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(units), desc=f"sweep ({mode})", unit="ablation", delay=1.0)
    rows = []
    heads_arr = np.full((L, H), np.nan)
    layers_arr = np.full(L, np.nan)
    try:
        for unit, lay, h in units:
            ab = Ablation.heads({(stack, lay, h): mode}, reference=reference) if unit == "head" else \
                Ablation.layers([(stack, lay)], mode, reference=reference)
            value = evaluate(runner, task, ab, batch_size=batch_size)
            if unit == "head":
                heads_arr[lay, h] = value
            else:
                layers_arr[lay] = value
            rows.append(dict(unit=unit, layer=lay, head=h, metric=value, delta=value - baseline,
                             improves=value > baseline))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    frame = pd.DataFrame(rows, columns=["unit", "layer", "head", "metric", "delta", "improves"])
    return SweepResult(frame, heads_arr, layers_arr, baseline, task.metric, str(mode),
                       time.perf_counter() - start, runner.info,
                       {"task": task.name, "stack": stack, "layers": bool(layers), "batch_size": batch_size})


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
) -> PruningCurve:
    """Iteratively prune the least important heads (``step`` of all heads at a time, recomputing importance).

    Importance is Michel et al.'s, normalised per layer and compared across layers (as in their paper); pruned heads
    are gated to 0 while the next importance is computed, and the metric is measured with them ``mode``-ablated
    (``"zero"`` is the same as a zero gate). ``stack`` is "self", or "encoder" for an encoder-decoder (see
    :func:`~attnwidgets.studies.importance.head_importance`).
    """
    if not 0 < step <= 1 or not 0 < max_share <= 1:
        raise ValueError("step and max_share are shares of all heads, between 0 and 1")
    L, H = task.check_stack(runner.info, stack, needs_loss=True)
    total = L * H
    per_step = max(1, round(step * total))
    mask = np.ones((L, H), np.float32)
    pruned: list[tuple[int, int]] = []
    rows = [dict(share=0.0, n_pruned=0, metric=evaluate(runner, task, None, batch_size=batch_size), pruned=[])]
    importances = []
    n_steps = int(np.floor(max_share * total / per_step + 1e-9))
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_steps, desc="pruning", unit="step", delay=1.0)
    try:
        for _ in range(n_steps):
            imp = head_importance(runner, task, mask=mask, batch_size=batch_size, progress=False, stack=stack)
            importances.append(imp)
            chosen = least_important(imp, per_step, pruned)
            if not chosen:
                break
            pruned += chosen
            for lay, h in chosen:
                mask[lay, h] = 0
            value = evaluate(runner, task, Ablation.heads(pruned, mode, stack=stack), batch_size=batch_size)
            rows.append(dict(share=len(pruned) / total, n_pruned=len(pruned), metric=value, pruned=list(pruned)))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return PruningCurve(pd.DataFrame(rows), task.metric, importances, runner.info,
                        {"task": task.name, "step": step, "max_share": max_share, "mode": mode, "stack": stack,
                         "batch_size": batch_size})
