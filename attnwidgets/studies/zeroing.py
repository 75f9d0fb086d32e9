"""Value zeroing (Mohebbi, Zuidema, Chrupała and Alishahi 2023, *Quantifying Context Mixing in Transformers*, EACL)
of a run: how much each token's layer output changes when another token's value vectors are zeroed.

The definition, as the paper and its reference code (hmohebbi/ValueZeroing) compute it: for layer ℓ and token j, set
v_j, token j's value vector, to zero in **every head** of layer ℓ (the attention weights stay as computed), run layer
ℓ's whole block again from its original input (self-attention, output projection, residual and norm, and the
feed-forward with its residual and norm: the layer module's output, the next hidden state), and score each token i by
the cosine distance between its original output x_i and its new one x̃_i^{¬j}:

    C_ij = 1 − cos(x̃_i^{¬j}, x_i),        then each row normalised:  C_ij / Σ_k C_ik.

One map per layer, [layer, query i, key j], rows summing to 1. Causal models keep causality: row i covers j ≤ i
(a later token's value cannot reach x_i; its score is exactly 0), and likewise a sliding window's unseen keys. There
is no per-head variant here: the paper's measure zeroes v_j across the heads. What the forward passes do is in
:mod:`attnwidgets.runner.value_zeroing`, the normalisation in :mod:`attnwidgets.analysis.value_zeroing`.

In the views (``measure="value_zeroing"``) each head of a layer shows its layer's map, so a heatmap shows the same
map for every head of one layer and the entropy bars of one layer are equal.

Cost: one forward pass, then per layer one call of that layer for every token (batched), so about n times a forward
pass for n tokens: meant for sentences, not for long documents (a result kept as queries and keys is refused).

Examples
--------
>>> import attnwidgets as aw
>>> from attnwidgets.studies import value_zeroing
>>> res = aw.run("The cat sat on the mat.")
>>> C = value_zeroing(res)                       # [layer, query, key], each row sums to 1
>>> C.shape, bool(abs(C.sum(-1) - 1).max() < 1e-5)
((6, 9, 9), True)
"""

from __future__ import annotations

import os

import numpy as np

from ..analysis.value_zeroing import context_mixing, per_head
from ..attention_stack import AttentionTooLargeError, dense_budget, format_bytes
from ..result import AttentionResult
from ..runner import Runner
from ..runner.value_zeroing import ValueZeroingUnavailableError, value_zeroing_distances
from .norms import Source, resolve_source

__all__ = ["ValueZeroingUnavailableError", "value_zeroing", "value_zeroing_result"]

WHAT = "value zeroing"


def value_zeroing(source: Source, text_pair: str | None = None, *,
                  model: str | os.PathLike[str] | Runner | None = None, layer: int | None = None,
                  raw: bool = False) -> np.ndarray:
    """Mohebbi et al. 2023's value-zeroing context-mixing map, float32 [layer, query, key] (rows sum to 1).

    Parameters
    ----------
    source : AttentionResult or str
        A result of ``aw.run`` (its model is run again on its text; cached), or a text run with ``model`` (the
        bundled one by default).
    layer : int, optional
        One layer's map (query, key).
    raw : bool
        The cosine distances C_ij before the row normalisation (0 where token i cannot see token j).

    Raises
    ------
    ValueZeroingUnavailableError
        A NotImplementedError naming the model type, when its layers or value vectors cannot be reached (an
        encoder-decoder, a model whose attention does not run through attnwidgets' attention function).

    Examples
    --------
    >>> import attnwidgets as aw
    >>> from attnwidgets.studies import value_zeroing
    >>> res = aw.run("The cat sat.")
    >>> value_zeroing(res, layer=2).shape
    (6, 6)
    """
    result, runner = resolve_source(source, text_pair, model, what=WHAT)
    L, _H, T, _S = result.attention_shape()
    if layer is not None and not (isinstance(layer, (int, np.integer)) and 0 <= layer < L):
        raise ValueError(f"layer must be one of 0..{L - 1}, got {layer!r}")
    if result.is_lazy and result.dense_nbytes() > dense_budget():
        raise AttentionTooLargeError(
            f"this input ({T} tokens) is kept as queries and keys; value zeroing runs each layer once per token, "
            f"with attention of {format_bytes(result.dense_nbytes())}, more than the dense budget: use a shorter "
            "text")
    distances, visible = value_zeroing_distances(runner, result.text, result.text_pair)
    if distances.shape[1] != T:
        raise ValueError(f"running {result.model.name!r} again on this result's text gives {distances.shape[1]} "
                         f"tokens, not its {T}: the result does not come from this model and tokenizer")
    out = np.where(visible, distances, 0.0).astype(np.float32) if raw else context_mixing(distances, visible)
    return out[layer] if layer is not None else out


def value_zeroing_result(source: Source, text_pair: str | None = None, *,
                         model: str | os.PathLike[str] | Runner | None = None) -> AttentionResult:
    """The result with its weights replaced by the value-zeroing map, the same map in every head of a layer: what
    the views and their static twins show with ``measure="value_zeroing"``.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> from attnwidgets.studies import value_zeroing_result
    >>> vz = value_zeroing_result(aw.run("The cat sat."))
    >>> bool((vz.attention[1, 0] == vz.attention[1, 5]).all())     # every head shows its layer's map
    True
    """
    result, runner = resolve_source(source, text_pair, model, what=WHAT)
    maps = value_zeroing(result, model=runner)
    return result.replace(attention=np.ascontiguousarray(per_head(maps, result.attention_shape()[1])))
