"""Head importance as in Michel, Levy, Neubig 2019: I_h = E_x |∂L(x)/∂ξ_h| with a gate ξ_h = 1 on each head.

Each head's output is multiplied by a gate (``A_h ← ξ_h A_h``, so ``ξ_h A_h V_h``). Every batch row gets its own
copy of the gates, so one backward pass gives the gradient of each example's own loss, and the absolute value is
taken per example before averaging: exactly ``E_x |∂L(x)/∂ξ_h|`` (their released code takes it per batch instead).
Normalisation, as in the paper: divide each layer's importances by their L2 norm.

Examples
--------
>>> import numpy as np
>>> normalize_importance(np.array([[3.0, 4.0], [1.0, 0.0]])).tolist()
[[0.6, 0.8], [1.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..analysis.merging import check_same_model, check_same_settings
from ..runner import Runner
from ..runner.control import AttentionCall
from .tasks import Task, pooled_embedding

__all__ = ["ImportanceSums", "ImportanceWork", "head_importance", "importance_sums", "normalize_importance"]


def normalize_importance(imp: np.ndarray, how: str | None = "layer") -> np.ndarray:
    """Normalise (L, H) importances: ``"layer"`` divides each row by its L2 norm; ``"global"`` also min-max scales
    the whole array to 0..1 afterwards (the option in Michel et al.'s code); None leaves it."""
    imp = np.asarray(imp, dtype=np.float64)
    if how is None:
        return imp
    if how not in ("layer", "global"):
        raise ValueError(f"normalize must be 'layer', 'global' or None, got {how!r}")
    norm = np.linalg.norm(np.nan_to_num(imp), axis=1, keepdims=True)
    out = imp / np.where(norm == 0, 1.0, norm)
    if how == "global":
        lo, hi = np.nanmin(out), np.nanmax(out)
        out = (out - lo) / (hi - lo) if hi > lo else np.zeros_like(out)
    return out


@dataclass
class ImportanceSums:
    """Michel et al. importance before it is averaged and normalised: the sums and the count it comes from.

    ``head_importance`` returns ``sums.importance(normalize)``; keeping the sums makes importance over shards of a
    task's examples mergeable (:meth:`merge`), which is how it runs in one process or on a Ray cluster.

    Attributes
    ----------
    total : np.ndarray
        (L, H) float64 sum over examples of ``|∂L(x)/∂ξ_h|``.
    n_examples : int
        Examples summed (a sentence pair is one example).
    mask : np.ndarray or None
        (L, H) gate values the gradients were taken at (0 for heads already pruned), None for all ones.
    model, task, stack : str
        What was measured: the model's name, the task's name and the gated stack.

    Examples
    --------
    >>> a = ImportanceSums(np.array([[3.0, 4.0]]), 1, None, "m", "t", "self")
    >>> b = ImportanceSums(np.array([[3.0, 4.0]]), 3, None, "m", "t", "self")
    >>> merged = a.merge(b)
    >>> merged.n_examples, merged.importance(None).tolist(), merged.importance().tolist()
    (4, [[1.5, 2.0]], [[0.6, 0.8]])
    """

    total: np.ndarray
    n_examples: int
    mask: np.ndarray | None = None
    model: str = ""
    task: str = ""
    stack: str = "self"

    def importance(self, normalize: str | None = "layer") -> np.ndarray:
        """(L, H) mean importance per example, NaN for masked heads, normalised (see :func:`normalize_importance`)."""
        imp = self.total / max(self.n_examples, 1)
        if self.mask is not None:
            imp = imp.copy()
            imp[np.asarray(self.mask).reshape(imp.shape) == 0] = np.nan
        return normalize_importance(imp, normalize)

    def settings(self) -> dict[str, Any]:
        """What the sums were measured with; parts that differ in any of these do not merge."""
        return {"task": self.task, "stack": self.stack, "shape": tuple(self.total.shape),
                "mask": None if self.mask is None else np.asarray(self.mask, np.float64).ravel().tolist()}

    def merge(self, *others: ImportanceSums) -> ImportanceSums:
        """The sums over this part's examples and the others' together (associative, order-independent up to float
        rounding). ValueError when the parts come from different models, tasks, stacks or masks."""
        parts = [self, *others]
        for part in parts:
            if not isinstance(part, ImportanceSums):
                raise TypeError(f"ImportanceSums.merge takes ImportanceSums, got {type(part).__name__}")
        check_same_settings("ImportanceSums", [p.settings() for p in parts])
        model = check_same_model("ImportanceSums", [p.model for p in parts]) or ""
        total = np.zeros_like(self.total, dtype=np.float64)
        for p in parts:
            total = total + p.total
        return ImportanceSums(total, sum(p.n_examples for p in parts), self.mask, model, self.task, self.stack)

    def to_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """(arrays, metadata) for a file; :meth:`from_state` builds the sums back."""
        arrays = {"total": self.total} if self.mask is None else {"total": self.total, "mask": self.mask}
        return arrays, {"n_examples": self.n_examples, "model": self.model, "task": self.task, "stack": self.stack}

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> ImportanceSums:
        """The :class:`ImportanceSums` that :meth:`to_state` described; ValueError for sums no run can make (a shard
        file changed on disk): a total that is not a finite (layers, heads) array of 0 or more, a negative count, a
        mask of another shape or outside 0..1."""
        total = np.asarray(arrays["total"])
        mask = np.asarray(arrays["mask"]) if "mask" in arrays else None
        n = meta["n_examples"]
        if total.dtype.kind not in "iuf" or total.ndim != 2 or not np.isfinite(total).all() or (total < 0).any():
            raise ValueError(f"its total ({total.dtype} {total.shape}) is not a (layers, heads) array of sums of "
                             "absolute gradients, finite and 0 or more")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"its n_examples is {n!r}, not a count")
        if mask is not None and (mask.dtype.kind not in "biuf" or mask.shape != total.shape
                                 or not ((mask >= 0) & (mask <= 1)).all()):
            raise ValueError(f"its mask ({mask.dtype} {mask.shape}) is not gate values 0..1 shaped as the total")
        return cls(total.astype(np.float64), n, mask, str(meta["model"]), str(meta["task"]), str(meta["stack"]))


def importance_sums(runner: Runner, task: Task, batches: Sequence[np.ndarray], *, mask: np.ndarray | None = None,
                    stack: str = "self") -> ImportanceSums:
    """The :class:`ImportanceSums` over some of a task's batches of rows (from :meth:`Task.batches`).

    This is the work of one shard of :func:`head_importance`; merged over all the task's batches it is the whole.
    """
    if task.loss is None:
        raise ValueError(f"task {task.name!r} has no differentiable loss; head importance needs one "
                         "(use sentiment_task or sts_task, or give Task(loss=...))")
    L, H = task.check_stack(runner.info, stack, needs_loss=True)
    base = torch.ones(L, H) if mask is None else torch.as_tensor(np.asarray(mask, np.float32)).reshape(L, H)
    total = np.zeros((L, H))
    n_examples = 0
    for rows in batches:
        gates = base.unsqueeze(0).repeat(len(rows), 1, 1).requires_grad_(True)  # (B, L, H)

        def hook(call: AttentionCall, weights: torch.Tensor, g: torch.Tensor = gates) -> torch.Tensor | None:
            if call.site.stack != stack:
                return None
            return weights * g[:, call.site.layer].to(weights)[:, :, None, None]  # weights' device and dtype

        enc = runner.encode([task.texts[i] for i in rows])
        mask_t = enc.inputs.get("attention_mask", torch.ones_like(enc.inputs["input_ids"]))
        out = runner.forward(enc, [hook], grad=True)
        loss = task.loss(pooled_embedding(out, mask_t), rows)
        (grad,) = torch.autograd.grad(loss, gates)
        per_row = grad.detach().double().numpy()  # (B, L, H), float64 whatever the model's dtype
        groups = task.groups[rows]
        for g in np.unique(groups):
            total += np.abs(per_row[groups == g].sum(0))
            n_examples += 1
    return ImportanceSums(total, n_examples, None if mask is None else np.asarray(mask, np.float32).reshape(L, H),
                          runner.info.name, task.name, stack)


@dataclass
class ImportanceWork:
    """One shard of :func:`head_importance`: the :class:`ImportanceSums` over some batches of the task's rows."""

    task: Task
    mask: np.ndarray | None
    stack: str

    def __call__(self, runner: Runner, batches: list[np.ndarray]) -> ImportanceSums:
        return importance_sums(runner, self.task, batches, mask=self.mask, stack=self.stack)


def head_importance(
    runner: Runner,
    task: Task,
    *,
    mask: np.ndarray | None = None,
    normalize: str | None = "layer",
    batch_size: int = 32,
    progress: bool = True,
    stack: str = "self",
    backend: str = "local",
    ray_address: str | None = None,
    num_workers: int | None = None,
    num_gpus: float = 0,
    device: str | None = None,
    dtype: str | None = None,
    results_dir: str | None = None,
) -> np.ndarray:
    """Michel et al. importance of every head for a task's loss, (L, H) float64.

    Parameters
    ----------
    runner : Runner
    task : Task
        Needs a ``loss`` (see :mod:`attnwidgets.studies.tasks`).
    mask : np.ndarray, optional
        (L, H) gate values to start from (0 for heads already pruned); their importance comes back as NaN.
    normalize : {"layer", "global", None}
        See :func:`normalize_importance`.
    batch_size : int
        Texts per forward/backward pass (the result does not depend on it).
    progress : bool
        Show a tqdm bar.
    stack : str
        Which attention stack to gate: "self" for encoders and decoders, "encoder" for encoder-decoders (the loss is
        on the pooled encoder embedding, so decoder and cross-attention heads have no importance for it).
    backend, ray_address, num_workers, num_gpus, device, dtype, results_dir
        Where the batches run: ``"local"`` (this process) or ``"ray"``; see :func:`attnwidgets.studies.shards.run`.
        The sums behind the array are :class:`ImportanceSums` (:func:`importance_sums`), merged over the batches.
    """
    from . import shards

    if task.loss is None:
        raise ValueError(f"task {task.name!r} has no differentiable loss; head importance needs one "
                         "(use sentiment_task or sts_task, or give Task(loss=...))")
    task.check_stack(runner.info, stack, needs_loss=True)
    batches = task.batches(batch_size)
    plan = shards.plan(batches, sizes=[len(b) for b in batches])
    options = shards.Options(backend=backend, ray_address=ray_address, num_workers=num_workers, num_gpus=num_gpus,
                             device=device, dtype=dtype, results_dir=results_dir, progress=progress)
    settings = {"study": "head_importance", "task": task.name, "stack": stack, "batch_size": batch_size,
                "mask": None if mask is None else np.asarray(mask, np.float64).ravel().tolist()}
    sums = shards.run(ImportanceWork(task, mask, stack), plan, runner, options, kind=ImportanceSums,
                      settings=settings, desc="head importance", unit="text")
    return sums.importance(normalize)


def least_important(imp: np.ndarray, n: int, exclude: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """The ``n`` heads with the lowest importance (NaN and ``exclude`` skipped), lowest first."""
    flat = [(float(v), (int(l_), int(h))) for (l_, h), v in np.ndenumerate(imp)
            if not np.isnan(v) and (l_, h) not in set(exclude)]
    flat.sort()
    return [lh for _, lh in flat[:n]]
