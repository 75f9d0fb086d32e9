"""Attention rollout (Abnar & Zuidema 2020): how much each input token reaches each position, through all layers.

Per layer the heads are fused (mean by default), the residual connection is added as the identity and the rows are
renormalised: ``Ã_l = rownorm(mean_h A_l + I)``, the same as ``0.5 A + 0.5 I`` when rows of A sum to 1. Then
``R_1 = Ã_1`` and ``R_l = Ã_l R_{l-1}``; ``R_L[i, j]`` is how much input token j reaches output position i.
(Attention flow, the max-flow variant of the same paper, is not implemented: it is exponential in practice for all
but short inputs.)
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..result import AttentionResult

__all__ = ["attention_rollout"]

HeadFusion = Literal["mean", "max", "min"]


def attention_rollout(
    attention: np.ndarray | AttentionResult,
    *,
    residual: bool = True,
    head_fusion: HeadFusion = "mean",
    start_layer: int = 0,
    all_layers: bool = False,
    words: bool = False,
) -> np.ndarray:
    """Roll attention out through the layers.

    Parameters
    ----------
    attention : np.ndarray or AttentionResult
        [layer, head, query, key] (L, H, n, n), or a result (its self-attention is used).
    residual : bool
        Add the identity for the residual stream and renormalise (the paper's method). Without it, plain products
        of head-fused attention.
    head_fusion : {"mean", "max", "min"}
        How heads are combined in a layer; the paper uses the mean.
    start_layer : int
        First layer to include (0-based).
    all_layers : bool
        Return every partial product, (L - start_layer, n, n), instead of the last one.
    words : bool
        Roll out word-level attention (:func:`~attnwidgets.analysis.words.word_level`) of a result instead.

    Returns
    -------
    np.ndarray
        (n, n) float64 rollout ``R[i, j]`` (rows sum to 1), or (layers, n, n) with ``all_layers``.

    Examples
    --------
    >>> a = np.zeros((2, 1, 2, 2)); a[:, 0, :, 0] = 1.0      # both layers: everything attends to token 0
    >>> attention_rollout(a).round(3).tolist()                # (0.5 A + 0.5 I) twice
    [[1.0, 0.0], [0.75, 0.25]]
    """
    if words:
        if not isinstance(attention, AttentionResult):
            raise TypeError("words=True needs an AttentionResult (it knows which pieces form a word)")
        from .words import word_level

        attention = word_level(attention)
    a = attention.attention if isinstance(attention, AttentionResult) else np.asarray(attention)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"rollout needs square self-attention [layer, head, query, key], got shape {a.shape}")
    if not 0 <= start_layer < a.shape[0]:
        raise ValueError(f"start_layer must be in 0..{a.shape[0] - 1}, got {start_layer}")
    if head_fusion == "mean":
        fused = a.mean(1, dtype=np.float64)
    elif head_fusion == "max":
        fused = a.max(1).astype(np.float64)
    elif head_fusion == "min":
        fused = a.min(1).astype(np.float64)
    else:
        raise ValueError(f"head_fusion must be 'mean', 'max' or 'min', got {head_fusion!r}")
    n = a.shape[-1]
    eye = np.eye(n)
    out = []
    rolled = eye
    for layer in range(start_layer, a.shape[0]):
        step = fused[layer]
        if residual:
            step = step + eye
            step = step / step.sum(-1, keepdims=True)
        rolled = step @ rolled
        out.append(rolled)
    return np.stack(out) if all_layers else rolled
