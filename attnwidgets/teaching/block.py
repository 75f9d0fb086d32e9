"""The rest of the block, live on the toy Transformer: where the norm goes and which norm, what each sublayer writes
into the residual stream, and what attention costs.

- :func:`compare_norms` trains the same model on the same data from the same initial weights, changing only the norm:
  pre-LN ``x + f(norm(x))`` or post-LN ``norm(x + f(x))`` (Xiong et al. 2020, *On Layer Normalization in the
  Transformer Architecture*), LayerNorm or RMSNorm (Zhang & Sennrich 2019). It records the loss and the gradient norm
  (before clipping) at every step.
- :func:`toy_residual_contributions` measures ``‖sublayer output‖ / ‖residual stream‖`` per layer (the reduction is
  :func:`attnwidgets.analysis.residual.write_ratio`; ``aw.studies.residual_contributions`` does the same for a Hugging
  Face model).
- :func:`attention_cost` times scaled dot-product attention against the sequence length n and the head width d on
  this machine and fits the log-log slopes (the O(n² · d) of the paper's Table 1).

Examples
--------
>>> cost = attention_cost(ns=(64, 128), ds=(16, 32), repeats=1)
>>> cost.weight_bytes.tolist()                        # one n x n float32 weight matrix per head
[16384, 65536]
>>> cmp = compare_norms(steps=2, variants=("pre-LN", "post-LN"), n_held_out=5, progress=False)
>>> cmp.losses.shape, cmp.grad_norms.shape
((2, 2), (2, 2))
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from ..analysis.residual import ResidualContributions, loglog_slope
from .tasks import Task, get_task
from .training import TrainingRun, attention_result, train
from .transformer import (
    DecoderLayer,
    DecoderOnlyTransformer,
    EncoderDecoderTransformer,
    EncoderLayer,
    scaled_dot_product_attention,
)

__all__ = ["VARIANTS", "AttentionCost", "NormComparison", "attention_cost", "compare_norms",
           "toy_residual_contributions"]

# name -> the two TransformerConfig fields a variant changes; nothing else differs.
VARIANTS: dict[str, dict[str, Any]] = {
    "pre-LN": {"norm_first": True, "norm": "layer"},
    "post-LN": {"norm_first": False, "norm": "layer"},
    "pre-RMSNorm": {"norm_first": True, "norm": "rms"},
    "post-RMSNorm": {"norm_first": False, "norm": "rms"},
}

# A smaller toy than train()'s default, so four variants fit in a notebook cell.
SMALL: dict[str, Any] = {"d_model": 32, "d_ff": 64}


@dataclass(eq=False)
class NormComparison:
    """What :func:`compare_norms` hands back: one row per variant.

    Attributes
    ----------
    variants : list[str]
    losses : (variants, steps) float32 training loss per step.
    grad_norms : (variants, steps) float32 global gradient norm per step, before clipping.
    accuracy : (variants,) held-out exact-match accuracy at the end.
    settings : dict
        task, steps, lr, warmup, clip, seed, batch_size, config.
    runs : list[TrainingRun]
        The runs themselves (their models too).
    seconds, cpu_seconds : float
        Wall-clock and CPU time of the whole comparison.
    """

    variants: list[str]
    losses: np.ndarray
    grad_norms: np.ndarray
    accuracy: np.ndarray
    settings: dict[str, Any]
    runs: list[TrainingRun] = field(repr=False)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def final_loss(self, last: int = 10) -> np.ndarray:
        """(variants,) mean loss over the last ``last`` steps (NaN if any of them is not finite)."""
        tail = self.losses[:, -last:]
        return np.where(np.isfinite(tail).all(1), tail.mean(1), np.nan)

    def table(self, last: int = 10):
        """A DataFrame per variant: final loss, max and median gradient norm, accuracy."""
        import pandas as pd

        return pd.DataFrame({
            "final loss": self.final_loss(last),
            "max grad norm": np.nanmax(np.where(np.isfinite(self.grad_norms), self.grad_norms, np.nan), axis=1),
            "median grad norm": np.nanmedian(self.grad_norms, axis=1),
            "held-out accuracy": self.accuracy,
        }, index=pd.Index(self.variants, name="variant"))

    def __repr__(self) -> str:
        s = self.settings
        return (f"NormComparison({self.variants}, {s['steps']} steps, lr={s['lr']}, warmup={s['warmup']}, "
                f"clip={s['clip']}, final loss={np.round(self.final_loss(), 3).tolist()}, "
                f"{self.cpu_seconds:.1f} s CPU)")


def compare_norms(
    task: str | Task = "reverse",
    *,
    variants: Sequence[str] = tuple(VARIANTS),
    steps: int = 150,
    lr: float = 3e-3,
    warmup: int = 50,
    clip: float | None = 1.0,
    seed: int = 0,
    batch_size: int = 32,
    config: dict[str, Any] | None = None,
    architecture: str = "encoder-decoder",
    n_held_out: int = 100,
    progress: bool = True,
) -> NormComparison:
    """Train the same toy Transformer once per norm variant: same seed (so the same initial weights), same batches.

    Parameters
    ----------
    task : str | Task
        The task (default ``"reverse"``).
    variants : Sequence[str]
        Names from :data:`VARIANTS`: ``"pre-LN"``, ``"post-LN"``, ``"pre-RMSNorm"``, ``"post-RMSNorm"``.
    steps, lr, warmup, seed, batch_size : as in :func:`~attnwidgets.teaching.training.train`
        ``warmup=0`` starts at the full learning rate: the setting where Xiong et al. (2020) find post-LN fragile.
    clip : float | None
        Gradient-norm clipping (default 1.0 as in ``train``); None turns it off, so a spike reaches the weights.
    config : dict, optional
        TransformerConfig overrides shared by every variant (default ``{"d_model": 32, "d_ff": 64}``: small enough
        for four runs in a notebook cell). ``norm_first`` and ``norm`` are what the variants set; giving them here is
        an error.
    architecture : {"encoder-decoder", "decoder"}
    n_held_out : int
        Held-out sources for the final accuracy.
    progress : bool
        One ``tqdm`` bar over all variants' steps.
    """
    names = [variants] if isinstance(variants, str) else list(variants)
    unknown = [v for v in names if v not in VARIANTS]
    if unknown or not names:
        raise ValueError(f"unknown variant(s) {unknown or names}: choose from {list(VARIANTS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"each variant once, got {names}")
    shared = dict(SMALL if config is None else config)
    clash = sorted(set(shared) & {"norm_first", "norm"})
    if clash:
        raise ValueError(f"config must not set {clash}: that is what the variants change")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if not (isinstance(lr, (int, float)) and np.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer, got {warmup!r}")
    task = get_task(task)
    start, cpu_start = time.perf_counter(), time.process_time()
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps * len(names), desc="norm variants", unit="step", delay=1.0)
    runs = []
    try:
        for name in names:
            if bar is not None:
                bar.set_postfix(variant=name, refresh=False)
            runs.append(train(task, architecture=architecture,  # type: ignore[arg-type]
                              steps=steps, lr=lr, warmup=warmup, clip=clip, seed=seed,
                              batch_size=batch_size, n_held_out=n_held_out, config={**shared, **VARIANTS[name]},
                              callback=(lambda *_: bar.update(1)) if bar is not None else None, progress=False))
    finally:
        if bar is not None:
            bar.close()
    settings = dict(task=task.name, steps=steps, lr=lr, warmup=warmup, clip=clip, seed=seed, batch_size=batch_size,
                    config=shared, architecture=architecture)
    return NormComparison(names, np.stack([r.losses for r in runs]), np.stack([r.grad_norms for r in runs]),
                          np.array([r.accuracy for r in runs]), settings, runs,
                          time.perf_counter() - start, time.process_time() - cpu_start)


def _sublayers(model: nn.Module) -> list[tuple[str, str, nn.Module, nn.Module]]:
    """(row label, sublayer name, residual wrapper, sublayer module) for every sublayer of the toy model, in order."""
    out: list[tuple[str, str, nn.Module, nn.Module]] = []
    if not isinstance(model, (DecoderOnlyTransformer, EncoderDecoderTransformer)):
        raise TypeError(f"expected a toy Transformer, got {type(model).__name__}")
    if isinstance(model, DecoderOnlyTransformer):
        for i, block in enumerate(cast(nn.ModuleList, model.blocks)):
            assert isinstance(block, EncoderLayer)
            out += [(f"L{i}", "attention", block.res1, block.self_attn),
                    (f"L{i}", "feed-forward", block.res2, block.ff)]
        return out
    for i, layer in enumerate(cast(nn.ModuleList, model.encoder)):
        assert isinstance(layer, EncoderLayer)
        out += [(f"enc {i}", "attention", layer.res1, layer.self_attn),
                (f"enc {i}", "feed-forward", layer.res2, layer.ff)]
    for i, layer in enumerate(cast(nn.ModuleList, model.decoder)):
        assert isinstance(layer, DecoderLayer)
        out += [(f"dec {i}", "attention", layer.res1, layer.self_attn),
                (f"dec {i}", "cross-attention", layer.res2, layer.cross_attn),
                (f"dec {i}", "feed-forward", layer.res3, layer.ff)]
    return out


@torch.no_grad()
def toy_residual_contributions(
    run: TrainingRun | nn.Module, source: str | Sequence[str] | None = None, target: str | Sequence[str] | None = None,
    *, task: str | Task | None = None,
) -> ResidualContributions:
    """Per layer and sublayer of the toy model, mean over tokens of ``‖sublayer output‖ / ‖residual stream‖``.

    The stream is what the sublayer's output is added to: the block's input for the first sublayer, and so on (pre-LN
    ``x + f(norm(x))``; post-LN ``norm(x + f(x))``, where ``x`` is the previous norm's output).

    Parameters
    ----------
    run : TrainingRun | EncoderDecoderTransformer | DecoderOnlyTransformer
        A run of :func:`~attnwidgets.teaching.training.train` (its task and probe are the defaults), or a model
        (then give ``task``).
    source, target : optional
        The input (default: the run's probe) and a teacher-forced target (default: the correct one).
    """
    if isinstance(run, TrainingRun):
        model, the_task = run.model, get_task(task) if task is not None else run.task
        source = run.probe if source is None else source
    elif isinstance(run, (DecoderOnlyTransformer, EncoderDecoderTransformer)):
        if task is None:
            raise ValueError("a bare model needs task= (for its vocabulary)")
        model, the_task = run, get_task(task)
        if source is None:
            raise ValueError("a bare model needs a source")
    else:
        raise TypeError(f"expected a TrainingRun or a toy Transformer, got {type(run).__name__}")
    src = the_task.parse(source)
    tgt = the_task.target(src) if target is None else target
    sites = _sublayers(model)
    seen: dict[int, list[torch.Tensor]] = {}
    handles = []
    for k, (_, _, wrapper, module) in enumerate(sites):
        handles.append(wrapper.register_forward_pre_hook(
            lambda _m, args, k=k: seen.__setitem__(k, [args[0].detach()])))
        handles.append(module.register_forward_hook(
            lambda _m, _args, out, k=k: seen[k].append(out.detach())))
    try:
        res = attention_result(model, the_task, src, tgt)  # one teacher-forced forward pass
    finally:
        for h in handles:
            h.remove()
    rows = list(dict.fromkeys(label for label, *_ in sites))
    present = {name for _, name, *_ in sites}
    names = [n for n in ("attention", "cross-attention", "feed-forward") if n in present]
    writes: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    tokens = list(res.tokens) + list(res.target_tokens or [])
    for k, (label, name, _, _) in enumerate(sites):
        stream, write = seen[k][0][0].double().numpy(), seen[k][-1][0].double().numpy()  # batch of one
        writes[(rows.index(label), name)] = (write, stream)
    cfg = model.cfg
    label = f"toy {the_task.name} ({'pre' if cfg.norm_first else 'post'}-LN, "\
            f"{'RMSNorm' if cfg.norm == 'rms' else 'LayerNorm'})"
    return ResidualContributions.from_vectors(writes, rows, names, model=label,
                                              norm_first=cfg.norm_first, tokens=tokens)


@dataclass(frozen=True)
class AttentionCost:
    """Measured time of scaled dot-product attention against n (d fixed) and against d (n fixed), with the fits.

    Attributes
    ----------
    ns, seconds_n : the lengths and the best time per call at ``d_fixed``.
    ds, seconds_d : the head widths and the best time per call at ``n_fixed``.
    weight_bytes : (len(ns),) bytes of one n x n float32 weight matrix (per head, per layer).
    slope_n, slope_d : log-log slopes (about 2 and 1 if the cost is n² · d).
    n_fixed, d_fixed, threads : the settings.
    """

    ns: np.ndarray
    seconds_n: np.ndarray
    ds: np.ndarray
    seconds_d: np.ndarray
    weight_bytes: np.ndarray
    slope_n: float
    slope_d: float
    n_fixed: int
    d_fixed: int
    threads: int

    def table(self):
        """Two DataFrames: time (ms) and weight memory (MiB) against n, and time against d."""
        import pandas as pd

        by_n = pd.DataFrame({"n": self.ns, "ms": self.seconds_n * 1e3, "weights MiB": self.weight_bytes / 2**20})
        by_d = pd.DataFrame({"d": self.ds, "ms": self.seconds_d * 1e3})
        return by_n, by_d


def _check_sizes(values: Sequence[int], what: str) -> np.ndarray:
    arr = np.asarray(list(values))
    if arr.ndim != 1 or arr.size < 2 or arr.dtype.kind not in "iu" or (arr < 1).any() or np.unique(arr).size < 2:
        raise ValueError(f"{what} must be at least two distinct positive integers, got {list(values)!r}")
    return arr.astype(np.int64)


def _best_times(shapes: list[tuple[int, int]], repeats: int, gen: torch.Generator) -> np.ndarray:
    """Best time per (n, d), the sizes taken in turn within each round, so a burst of load elsewhere on the machine
    slows one round of every size rather than all rounds of one size (which would bend the slope)."""
    inputs = [tuple(torch.randn(1, 1, n, d, generator=gen) for _ in range(3)) for n, d in shapes]
    for q, k, v in inputs:
        scaled_dot_product_attention(q, k, v)  # warm-up (allocations, kernels)
    best = np.full(len(shapes), np.inf)
    for _ in range(repeats):
        for j, (q, k, v) in enumerate(inputs):
            t = time.perf_counter()
            scaled_dot_product_attention(q, k, v)
            best[j] = min(best[j], time.perf_counter() - t)
    return best


@torch.no_grad()
def attention_cost(
    ns: Sequence[int] = (256, 512, 1024, 2048),
    ds: Sequence[int] = (64, 128, 256, 512, 1024),
    *,
    n_fixed: int = 512,
    d_fixed: int = 64,
    repeats: int = 5,
    threads: int = 1,
    seed: int = 0,
) -> AttentionCost:
    """Time ``softmax(q kᵀ / √d) v`` (the toy's :func:`~attnwidgets.teaching.transformer.scaled_dot_product_attention`,
    which builds the full n x n weights) for one head, against n and against d, and fit the log-log slopes.

    Each point is the best of ``repeats`` calls after a warm-up call, on ``threads`` torch CPU threads (1 by default:
    steadier than several, and what a slope needs). Both matrix products cost n² · d; the softmax costs n², so at
    small d it hides the d in the timing and the slope in d comes out below 1.
    """
    n_arr, d_arr = _check_sizes(ns, "ns"), _check_sizes(ds, "ds")
    for value, what in ((n_fixed, "n_fixed"), (d_fixed, "d_fixed"), (repeats, "repeats"), (threads, "threads")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{what} must be a positive integer, got {value!r}")
    largest = int(max(n_arr.max(), n_fixed)) ** 2 * 4
    if largest > 1 << 30:
        raise ValueError(f"n up to {int(max(n_arr.max(), n_fixed))} needs {largest / 2**30:.1f} GiB for one weight "
                         "matrix: keep n at or below 16384")
    gen = torch.Generator().manual_seed(seed)
    previous = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        t_n = _best_times([(int(n), int(d_fixed)) for n in n_arr], repeats, gen)
        t_d = _best_times([(int(n_fixed), int(d)) for d in d_arr], repeats, gen)
    finally:
        torch.set_num_threads(previous)
    return AttentionCost(n_arr, t_n, d_arr, t_d, n_arr**2 * 4, loglog_slope(n_arr, t_n), loglog_slope(d_arr, t_d),
                         int(n_fixed), int(d_fixed), int(threads))
