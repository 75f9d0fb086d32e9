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

import numpy as np
import torch

from ..runner import Runner
from ..runner.control import AttentionCall
from .tasks import Task, pooled_embedding

__all__ = ["head_importance", "normalize_importance"]


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


def head_importance(
    runner: Runner,
    task: Task,
    *,
    mask: np.ndarray | None = None,
    normalize: str | None = "layer",
    batch_size: int = 32,
    progress: bool = True,
    stack: str = "self",
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
    """
    if task.loss is None:
        raise ValueError(f"task {task.name!r} has no differentiable loss; head importance needs one "
                         "(use sentiment_task or sts_task, or give Task(loss=...))")
    L, H = task.check_stack(runner.info, stack, needs_loss=True)
    base = torch.ones(L, H) if mask is None else torch.as_tensor(np.asarray(mask, np.float32)).reshape(L, H)
    total = np.zeros((L, H))
    n_examples = 0
    batches = task.batches(batch_size)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(task.texts), desc="head importance", unit="text", delay=1.0)
    try:
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
            per_row = grad.detach().double().numpy()  # (B, L, H)
            groups = task.groups[rows]
            for g in np.unique(groups):
                total += np.abs(per_row[groups == g].sum(0))
                n_examples += 1
            if bar is not None:
                bar.update(len(rows))
    finally:
        if bar is not None:
            bar.close()
    imp = total / max(n_examples, 1)
    if mask is not None:
        imp[np.asarray(mask).reshape(L, H) == 0] = np.nan
    return normalize_importance(imp, normalize)


def least_important(imp: np.ndarray, n: int, exclude: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """The ``n`` heads with the lowest importance (NaN and ``exclude`` skipped), lowest first."""
    flat = [(float(v), (int(l_), int(h))) for (l_, h), v in np.ndenumerate(imp)
            if not np.isnan(v) and (l_, h) not in set(exclude)]
    flat.sort()
    return [lh for _, lh in flat[:n]]
