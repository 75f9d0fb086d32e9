"""Value zeroing (Mohebbi et al. 2023): the context-mixing map from the distances a re-run layer gives.

Arrays in, arrays out.

Mohebbi, Zuidema, Chrupała and Alishahi (2023), *Quantifying Context Mixing in Transformers* (EACL), §2: in layer ℓ,
set token j's value vector to zero in every head (the attention weights as computed), run the layer again from the
same input, and take token i's new output x̃_i^{¬j}. The raw score is the cosine distance

    C_ij = 1 − cos(x̃_i^{¬j}, x_i)

and the context-mixing map is each row normalised to sum to 1, C_ij / Σ_k C_ik (their reference code,
hmohebbi/ValueZeroing, divides the score matrix by its sum over the last axis). A causal model's row i covers j ≤ i
only: zeroing a later token's value cannot change x_i, so its score is 0 (:func:`context_mixing` sets every (i, j)
that no head of the layer lets i see to exactly 0, whatever float rounding left there).

It is a measure per layer, not per head: one map (token x token) per layer. The views, which show heads, show a
layer's map in every head of that layer (:func:`per_head`).

The distances come from :func:`attnwidgets.runner.value_zeroing.value_zeroing_distances`; the tie to a result is
:mod:`attnwidgets.studies.zeroing`.
"""

from __future__ import annotations

import numpy as np

from .norms import norm_share

__all__ = ["context_mixing", "per_head"]


def context_mixing(distances: np.ndarray, visible: np.ndarray | None = None) -> np.ndarray:
    """Mohebbi et al.'s context-mixing map: ``distances`` (..., query i, key j) with the keys that ``visible`` marks
    False set to 0, each row divided by its sum (rows of zeros stay zero), float32.

    Examples
    --------
    Token 0 of a causal model sees only itself; token 1 moves 3 times as much when v_0 is zeroed as when v_1 is.

    >>> d = np.array([[0.2, 1e-9], [0.3, 0.1]])
    >>> vis = np.array([[True, False], [True, True]])
    >>> context_mixing(d, vis).tolist()
    [[1.0, 0.0], [0.75, 0.25]]
    """
    d = np.asarray(distances, dtype=np.float64)
    if visible is not None:
        v = np.asarray(visible, dtype=bool)
        if v.shape != d.shape:
            raise ValueError(f"visible has shape {v.shape}, the distances {d.shape}")
        d = np.where(v, d, 0.0)
    if d.ndim < 2 or d.shape[-1] != d.shape[-2]:
        raise ValueError(f"distances must be (..., n, n), got shape {d.shape}")
    return norm_share(np.clip(d, 0.0, None))


def per_head(maps: np.ndarray, n_heads: int) -> np.ndarray:
    """Per-layer maps [L, n, n] as [L, H, n, n], every head of a layer showing its layer's map (a view of ``maps``).

    Examples
    --------
    >>> per_head(np.zeros((2, 3, 3)), 4).shape
    (2, 4, 3, 3)
    """
    m = np.asarray(maps)
    if m.ndim != 3:
        raise ValueError(f"maps must be [layer, n, n], got shape {m.shape}")
    return np.broadcast_to(m[:, None], (m.shape[0], n_heads, *m.shape[1:]))
