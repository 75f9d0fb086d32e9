"""Norm-based attention (Kobayashi et al. 2020; 2021): weights times the norm of what they move. Arrays in, arrays out.

Kobayashi, Kuribayashi, Yokoi and Inui (2020), *Attention is Not Only a Weight: Analyzing Transformers with Vector
Norms* (EMNLP), write head h's contribution of token j to token i as α^h_ij f_h(x_j), with

    f_h(x) = (x W_V^h + b_V^h) W_O^h

(the value projection, then head h's rows of the output projection; the output bias b_O is the same for every j and h
and is left out, as in the paper and its reference code). Their measure is the norm of that vector,

    N^h_ij = ‖α^h_ij f_h(x_j)‖ = α^h_ij ‖f_h(x_j)‖            (α ≥ 0),

so a norm map is the weight map with each key column scaled by that key's ‖f_h(x_j)‖ (:func:`norm_map`); their
whole-layer map sums the heads' vectors before the norm, ‖Σ_h α^h_ij f_h(x_j)‖ (:func:`layer_norm_map`).

The mixing ratio is the layer-level measure of Kobayashi et al. 2021 (*Incorporating Residual and Normalization
Layers into Analysis of Masked Language Models*, EMNLP; the reference code's "Attn-N mixing ratio"): with
F_ij = Σ_h α^h_ij f_h(x_j), for each token i

    r_i = ‖Σ_{j≠i} F_ij‖ / (‖Σ_{j≠i} F_ij‖ + ‖F_ii‖)

the share of the layer's attention output that comes from the other tokens ("mixing") rather than from i itself
("preserving"). Its weight-based twin ("Attn-W") is 1 − ᾱ_ii, ᾱ the mean over heads. :func:`mixing_ratio` computes
r_i from the attention diagonal and three small per-token statistics (``gram``, ``dot``, ``out_sq``, see
:func:`attnwidgets.runner.norms.norm_inputs`), so nothing n x n is needed.

For the views, :func:`norm_share` turns N into rows that sum to 1 (N_ij / Σ_k N_ik): "the share of the moved norm",
comparable with a weight row (Clark et al.'s "share of attention to [SEP]" becomes "share of the norm moved from
[SEP]").
"""

from __future__ import annotations

import numpy as np

from ..result import AttentionResult

__all__ = ["MEASURES", "can_norms", "layer_norm_map", "mixing_ratio", "norm_map", "norm_share", "weight_mixing_ratio"]

MEASURES = ("weights", "norms", "value_zeroing")
"""What the views and their static twins can show: the attention weights, the norm share of each row, or Mohebbi et
al. 2023's value-zeroing context-mixing map (:mod:`attnwidgets.analysis.value_zeroing`; one map per layer)."""


def norm_map(weights: np.ndarray, value_norms: np.ndarray) -> np.ndarray:
    """‖α_ij f(x_j)‖ = α_ij ‖f(x_j)‖: ``weights`` (..., query, key), key columns scaled by ``value_norms`` (..., key).

    ``value_norms`` broadcasts against ``weights`` with a query axis inserted: (H, key) for (H, query, key) weights,
    (key,) for one head.

    Examples
    --------
    >>> norm_map(np.array([[0.5, 0.5], [0.75, 0.25]]), np.array([2.0, 10.0])).tolist()
    [[1.0, 5.0], [1.5, 2.5]]
    """
    w = np.asarray(weights, dtype=np.float32)
    v = np.asarray(value_norms, dtype=np.float32)
    if v.shape[-1] != w.shape[-1]:
        raise ValueError(f"value_norms has {v.shape[-1]} keys but the weights have {w.shape[-1]}")
    return w * v[..., None, :]


def norm_share(norms: np.ndarray) -> np.ndarray:
    """Each row of a norm map divided by its sum (rows of zeros stay zero): rows that sum to 1, like weights.

    Examples
    --------
    >>> norm_share(np.array([[1.0, 3.0], [0.0, 0.0]])).tolist()
    [[0.25, 0.75], [0.0, 0.0]]
    """
    n = np.asarray(norms, dtype=np.float32)
    total = np.nansum(n, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, n / np.where(total > 0, total, 1.0), 0.0).astype(np.float32)


def layer_norm_map(weights: np.ndarray, gram: np.ndarray) -> np.ndarray:
    """‖Σ_h α^h_ij f_h(x_j)‖ for one layer: ``weights`` (H, query, key), ``gram`` (key, H, H) = ⟨f_h(x_j), f_g(x_j)⟩.

    Examples
    --------
    Two heads whose vectors at the one key are orthogonal, of norms 3 and 4, with weights 1: ‖(3, 4)‖ = 5.

    >>> float(layer_norm_map(np.ones((2, 1, 1)), np.array([[[9.0, 0.0], [0.0, 16.0]]]))[0, 0])
    5.0
    """
    w = np.asarray(weights, dtype=np.float64)
    g = np.asarray(gram, dtype=np.float64)
    sq = np.einsum("hqk,khg,gqk->qk", w, g, w)
    return np.sqrt(np.clip(sq, 0.0, None)).astype(np.float32)


def mixing_ratio(diagonal: np.ndarray, gram: np.ndarray, dot: np.ndarray, out_sq: np.ndarray) -> np.ndarray:
    """Kobayashi et al. 2021's Attn-N mixing ratio r_i per token, from the attention diagonal α^h_ii.

    Parameters
    ----------
    diagonal : (..., n, H)
        α^h_ii for each token i and head h.
    gram : (..., n, H, H)
        ⟨f_h(x_i), f_g(x_i)⟩, so ‖F_ii‖² = αᵀ G α.
    dot : (..., n, H)
        ⟨y_i, f_h(x_i)⟩, y_i = Σ_j F_ij the layer's attention output before its bias.
    out_sq : (..., n)
        ‖y_i‖², so ‖Σ_{j≠i} F_ij‖² = ‖y_i − F_ii‖² = ‖y_i‖² − 2 α·dot + αᵀ G α.

    Examples
    --------
    One head, the token keeps half its weight on itself: F_ii = 0.5 f(x_i) with f(x_i) = (2, 0); the other half
    brings (0, 3), so y_i = (1, 3): mixing ‖(0, 3)‖ = 3, preserving ‖(1, 0)‖ = 1, r = 3 / 4.

    >>> float(mixing_ratio(np.array([[0.5]]), np.array([[[4.0]]]), np.array([[2.0]]), np.array([10.0]))[0])
    0.75
    """
    a = np.asarray(diagonal, dtype=np.float64)
    preserving_sq = np.einsum("...h,...hg,...g->...", a, np.asarray(gram, np.float64), a)
    mixing_sq = np.asarray(out_sq, np.float64) - 2 * np.einsum("...h,...h->...", a, np.asarray(dot, np.float64)) \
        + preserving_sq
    preserving = np.sqrt(np.clip(preserving_sq, 0.0, None))
    mixing = np.sqrt(np.clip(mixing_sq, 0.0, None))
    total = mixing + preserving
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, mixing / np.where(total > 0, total, 1.0), np.nan).astype(np.float32)


def weight_mixing_ratio(diagonal: np.ndarray) -> np.ndarray:
    """The weight-based twin of :func:`mixing_ratio` ("Attn-W"): 1 − ᾱ_ii, ᾱ the mean over heads of (..., n, H).

    Examples
    --------
    >>> weight_mixing_ratio(np.array([[0.2, 0.6]])).tolist()
    [0.6000000238418579]
    """
    return (1.0 - np.asarray(diagonal, dtype=np.float32).mean(-1)).astype(np.float32)


def can_norms(source: object) -> bool:
    """Whether norms can be computed for ``source``: results of ``aw.run`` (one or a list), not ablated, not of an
    encoder-decoder (what the views check before they offer their "norms" switch).

    Examples
    --------
    >>> r = AttentionResult.from_arrays(np.full((1, 1, 2, 2), 0.5, np.float32), ["a", "b"])
    >>> can_norms(r), can_norms("text"), can_norms([])
    (False, False, False)
    """
    results = source if isinstance(source, (list, tuple)) else [source]
    return bool(results) and all(
        isinstance(r, AttentionResult) and bool(r.text) and r.ablation is None and r.model.kind != "encoder-decoder"
        for r in results)
