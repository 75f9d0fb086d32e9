"""Sweeps: disable each head and each layer and measure a task (Kovaleva et al. 2019). Michel et al.'s pruning curve,
which measures the same task with more and more heads pruned, is :mod:`attnwidgets.studies.pruning`.

Every evaluation goes through :meth:`Runner.iter_results` with ``cache=False`` (a sweep would otherwise fill the
result cache with thousands of ablated results) and so through partial recomputation: disabling a head in layer l
re-runs layers ≥ l only, replaying the clean run below.

Examples
--------
>>> import attnwidgets as aw
>>> from attnwidgets.studies.tasks import sts_task
>>> sweep = sweep_heads(aw.runner.get_runner(), sts_task(), progress=False)     # doctest: +SKIP
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
from ..html_repr import repr_html
from ..result import ModelInfo
from ..runner import Runner
from ..runner.ablation import Ablation, MeanPattern
from ..runner.partial import forward_ablated
from .tasks import Task, pooled_embedding

__all__ = ["METRIC_RANGES", "SweepResult", "SweepWork", "check_heads", "check_metric", "evaluate", "head_limit",
           "pooled_embeddings", "sweep_frame", "sweep_heads"]


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

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

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
        return SweepResult(sweep_frame(heads, layers, baseline, seen), heads, layers, baseline, self.metric,
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
        """The :class:`SweepResult` that :meth:`to_state` described; ValueError when it fails :meth:`check` (a shard
        file changed on disk)."""
        heads, layers = _floats(arrays["heads"], "heads"), _floats(arrays["layers"], "layers")
        units = {(str(u), int(lay), int(h)) for u, lay, h in
                 zip(arrays["units"], arrays["unit_layer"], arrays["unit_head"])}
        _check_units(units, heads.shape)
        baseline = float(meta["baseline"])
        out = cls(sweep_frame(heads, layers, baseline, units), heads, layers, baseline, str(meta["metric"]),
                  str(meta["mode"]), float(meta["seconds"]), str(meta["model"]), stack=str(meta["stack"]))
        out.check()
        return out

    def check(self) -> None:
        """Raise ValueError unless this is a sweep that :func:`sweep_heads` can make: heads (layers, heads) and
        layers (layers,) of the model's stack when it is known, values only for the units in ``frame`` (NaN for the
        others), the frame's metric, delta and improves those of ``heads``, ``layers`` and ``baseline``, every value
        within the range of the metric (:data:`METRIC_RANGES`). Loading a file or a resumed shard calls it."""
        heads, layers = self.heads, self.layers
        if heads.ndim != 2 or layers.shape != heads.shape[:1]:
            raise ValueError(f"its heads and layers are shaped {heads.shape} and {layers.shape}, not (layers, heads) "
                             "and (layers,)")
        if isinstance(self.model, ModelInfo):
            check_heads(heads.shape, self.model, "its heads")
        frame = self.frame
        if list(frame.columns) != ["unit", "layer", "head", "metric", "delta", "improves"]:
            raise ValueError(f"its frame has the columns {list(frame.columns)}")
        units = {(str(u), int(lay), int(h)) for u, lay, h in zip(frame["unit"], frame["layer"], frame["head"])}
        if len(units) != len(frame):
            raise ValueError("its frame lists a unit twice")
        _check_units(units, heads.shape)
        swept = np.zeros(heads.shape, bool)
        swept_layers = np.zeros(layers.shape, bool)
        for unit, lay, h in units:
            if unit == "head":
                swept[lay, h] = True
            else:
                swept_layers[lay] = True
        if not np.isnan(heads[~swept]).all() or not np.isnan(layers[~swept_layers]).all():
            raise ValueError("it holds values for heads or layers its frame does not list as swept")
        want = sweep_frame(heads, layers, float(self.baseline), units)
        for col in ("metric", "delta"):
            got = frame[col].to_numpy(np.float64)
            if not np.allclose(got, want[col].to_numpy(np.float64), rtol=1e-9, atol=1e-12, equal_nan=True):
                raise ValueError(f"its frame's {col!r} column is not that of its heads, layers and baseline")
        if not (frame["improves"].to_numpy(bool) == want["improves"].to_numpy(bool)).all():
            raise ValueError("its frame's 'improves' column is not that of its heads, layers and baseline")
        check_metric(self.metric, np.concatenate([heads.ravel(), layers, [self.baseline]]))
        if not np.isfinite(self.seconds) or self.seconds < 0:
            raise ValueError(f"its time is {self.seconds!r} seconds")

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
        from ..persist import Saved, frame_from_arrays, info_from_tags, load_checked

        def build(saved: Saved) -> SweepResult:
            a, info = saved.attrs, info_from_tags(saved.model)
            limit = head_limit(info)
            heads = saved.array("heads", (None, None), "f", limit=limit)
            layers = saved.array("layers", heads.shape[:1], "f")
            frame = frame_from_arrays(saved, "frame", a["frame"], limit=heads.size + len(layers))
            for key in ("metric", "mode"):
                if not isinstance(a[key], str):
                    raise ValueError(f"its {key} is {a[key]!r}, not text")
            sweep = cls(frame, heads, layers, _number(a["baseline"], "baseline"), a["metric"], a["mode"],
                        _number(a["seconds"], "time"), info, saved.settings, stack=str(saved.settings.get("stack",
                                                                                                           "self")))
            sweep.check()
            return sweep

        return load_checked(path, "SweepResult", build, model=model)


METRIC_RANGES: dict[str, tuple[float, float]] = {"accuracy": (0.0, 1.0), "spearman": (-1.0, 1.0),
                                                 "log_likelihood": (-np.inf, 0.0)}
"""The values each shipped task's metric can take (:mod:`~attnwidgets.studies.tasks`); a saved sweep or curve holding
others is refused. Another task's metric is only checked to be a number (NaN: not measured, or undefined)."""


def check_metric(metric: str, values: np.ndarray) -> None:
    lo, hi = METRIC_RANGES.get(metric, (-np.inf, np.inf))
    values = np.asarray(values, np.float64)
    known = values[~np.isnan(values)]
    if metric in METRIC_RANGES and known.size and (known.min() < lo - 1e-9 or known.max() > hi + 1e-9):
        raise ValueError(f"its {metric} values go from {known.min():.4g} to {known.max():.4g}, outside {lo}..{hi}")
    if np.isinf(known).any() and metric not in ("log_likelihood",):
        raise ValueError(f"its {metric} values include infinity")


def _floats(value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"its {what} is an array of {arr.dtype}, not of numbers")
    return arr.astype(np.float64)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"its {what} is {value!r}, not a number")
    return float(value)


def head_limit(info: ModelInfo | None) -> int:
    from ..persist import MAX_ELEMENTS

    return MAX_ELEMENTS if info is None else max(info.n_layers * info.n_heads,
                                                 info.n_decoder_layers * info.n_decoder_heads)


def check_heads(shape: tuple[int, ...], info: ModelInfo, what: str) -> None:
    if shape not in {(info.n_layers, info.n_heads), (info.n_decoder_layers, info.n_decoder_heads)}:
        raise ValueError(f"{what} are shaped {shape}, but its model {info.name!r} has {info.n_layers} layers x "
                         f"{info.n_heads} heads")


def _check_units(units: set[tuple[str, int, int]], shape: tuple[int, ...]) -> None:
    L, H = shape
    bad = next((u for u in units if not (u[0] == "head" and 0 <= u[1] < L and 0 <= u[2] < H)
                and not (u[0] == "layer" and 0 <= u[1] < L and u[2] == -1)), None)
    if bad is not None:
        raise ValueError(f"it lists a unit {bad} outside its {L} layers x {H} heads")


def sweep_frame(heads: np.ndarray, layers: np.ndarray, baseline: float, units: set[tuple[str, int, int]]
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
        return SweepResult(sweep_frame(heads, layers, baseline, swept), heads, layers, baseline, self.task.metric,
                           str(self.mode), time.perf_counter() - start, runner.info.name,
                           stack=self.stack)


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
        once and are kept for the next call (``backend="ray"``; :mod:`attnwidgets.studies.pool`); each head is a
        shard, merged with :meth:`SweepResult.merge`; ``results_dir=`` keeps finished heads so that a rerun resumes.
        See :mod:`attnwidgets.studies.shards`.
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
    result: SweepResult = shards.run(work, shards.plan(units), runner, options, kind=SweepResult,
                                     settings=settings, desc=f"sweep ({mode})", unit="ablation")
    result.seconds = time.perf_counter() - start
    result.model, result.settings = runner.info, settings
    return result
