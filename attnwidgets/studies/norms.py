"""Norm-based attention of a run: Kobayashi et al. 2020's ‖α_ij f(x_j)‖ maps and Kobayashi et al. 2021's mixing ratio.

The definitions (and where the output bias goes) are in :mod:`attnwidgets.analysis.norms`; what the forward pass
records is in :mod:`attnwidgets.runner.norms`. This module ties them to a result: it runs the model once more on the
result's input (one extra forward pass, cached) to read the value vectors and the output projection, and combines
the per-key norms with the result's weights a block of rows at a time, so it works for long (lazy) results too.

Examples
--------
>>> import attnwidgets as aw
>>> res = aw.run("The cat sat on the mat.")
>>> N = aw.studies.norm_attention(res, layer=0)            # (head, query, key): ‖α^h_ij f_h(x_j)‖
>>> N.shape, bool((N >= 0).all())
((12, 9, 9), True)
>>> import numpy as np
>>> v = aw.studies.value_norms(res)                        # (layer, head, key): ‖f_h(x_j)‖
>>> bool(np.allclose(N, res.attention[0] * v[0][:, None, :]))    # α^h_ij ‖f_h(x_j)‖
True
>>> aw.studies.mixing_ratio(res).shape                     # (layer, token)
(6, 9)
"""

from __future__ import annotations

import os
from typing import Literal

import numpy as np

from ..analysis import norms as norm_math
from ..analysis.norms import MEASURES, can_norms, layer_norm_map, norm_map, norm_share, weight_mixing_ratio
from ..attention_stack import AttentionTooLargeError, dense_budget, format_bytes
from ..result import AttentionResult
from ..runner import Runner, get_runner
from ..runner.norms import NormInputsUnavailableError, norm_inputs, norm_inputs_batch
from ..runner.runner import runner_for

__all__ = ["MEASURES", "NormInputsUnavailableError", "can_norms", "mixing_ratio", "norm_attention",
           "norm_result", "norm_results", "resolve_source", "value_norms"]

Source = AttentionResult | str
Measure = Literal["weights", "norms"]


def resolve_source(source: Source, text_pair: str | None, model: str | os.PathLike[str] | Runner | None, *,
                   what: str = "norm-based attention") -> tuple[AttentionResult, Runner]:
    """The result and the runner whose model made it (the text is run first when a text is given), for a measure
    (``what``, for the messages) that runs the model again on the result's input: results of ``aw.run`` only, not
    ablated, not of an encoder-decoder."""
    if isinstance(source, str):
        runner = get_runner(model)
        return runner.run(source, text_pair), runner
    if not isinstance(source, AttentionResult):
        raise TypeError(f"expected an AttentionResult or a text, got {type(source).__name__}")
    if text_pair is not None:
        raise ValueError("text_pair goes with a text; a result already holds its pair")
    if source.ablation is not None:
        raise ValueError(f"this result is ablated: {what} describes the model's own (clean) forward pass; "
                         "pass the clean result (aw.run(text) without ablation=)")
    if not source.text:
        raise ValueError(f"this result was not made by running a model (AttentionResult.from_arrays has no text to run "
                         f"again), and {what} needs the model's value vectors: pass a text, or a result of aw.run")
    if source.model.kind == "encoder-decoder":
        raise NotImplementedError(f"{what} of encoder-decoder results is not supported yet (the encoder's "
                                  "self-attention would be the natural first step); use an encoder or a decoder")
    runner = runner_for(source.model) if model is None else get_runner(model)
    if runner.info.name != source.model.name or runner.info.n_layers != source.model.n_layers:
        raise ValueError(f"this result is of {source.model.name!r}, not of {runner.info.name!r}")
    return source, runner


def _inputs(result: AttentionResult, runner: Runner) -> dict[str, np.ndarray]:
    found = norm_inputs(runner, result.text, result.text_pair)
    n = found["value_norms"].shape[-1]
    if n != result.n_tokens:
        raise ValueError(f"running {result.model.name!r} again on this result's text gives {n} tokens, not its "
                         f"{result.n_tokens}: the result does not come from this model and tokenizer")
    return found


def value_norms(source: Source, text_pair: str | None = None, *,
                model: str | os.PathLike[str] | Runner | None = None) -> np.ndarray:
    """‖f_h(x_j)‖ per layer, head and key, float32 [layer, head, key]: the length of what head h moves from token j.

    f_h(x) = (x W_V^h + b_V^h) W_O^h, the output bias left out (Kobayashi et al. 2020). ``source`` is a result of
    ``aw.run`` (its model is run once more; cached) or a text (run with ``model``, the bundled one by default).
    """
    result, runner = resolve_source(source, text_pair, model)
    return _inputs(result, runner)["value_norms"]


def norm_attention(source: Source, text_pair: str | None = None, *,
                   model: str | os.PathLike[str] | Runner | None = None, layer: int | None = None,
                   head: int | None = None, rows: tuple[int, int] | None = None, share: bool = False,
                   heads: Literal["each", "sum"] = "each") -> np.ndarray:
    """Kobayashi et al. 2020's norm map N^h_ij = ‖α^h_ij f_h(x_j)‖ (float32).

    Parameters
    ----------
    source : AttentionResult or str
        A result of ``aw.run`` (its model is run once more on its text; cached), or a text run with ``model``.
    layer : int, optional
        One layer: (head, query, key). Default every layer: [layer, head, query, key], built only if it fits
        :func:`~attnwidgets.attention_stack.dense_budget` (else :class:`AttentionTooLargeError`: ask for a layer and
        ``rows``).
    head : int, optional
        One head of ``layer``: (query, key).
    rows : (start, stop), optional
        Only these queries (any length: the weights are read a block of rows at a time).
    share : bool
        Divide each row by its sum (the share of the moved norm; rows sum to 1 like weights).
    heads : {"each", "sum"}
        ``"sum"``: the whole layer's map ‖Σ_h α^h_ij f_h(x_j)‖ (the paper's layer-level analysis) instead of one map
        per head: (query, key) per layer.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> res = aw.run("The cat sat.")
    >>> aw.studies.norm_attention(res, layer=2, head=3).shape, aw.studies.norm_attention(res).shape
    ((6, 6), (6, 12, 6, 6))
    >>> aw.studies.norm_attention(res, layer=1, heads="sum", rows=(0, 2)).shape
    (2, 6)
    """
    result, runner = resolve_source(source, text_pair, model)
    found = _inputs(result, runner)
    L, H, T, _S = result.attention_shape()
    if heads not in ("each", "sum"):
        raise ValueError(f"heads must be 'each' or 'sum', not {heads!r}")
    if head is not None and (layer is None or heads == "sum"):
        raise ValueError("head= picks one head of one layer: give layer= too (and heads='each')")
    if head is not None and not (isinstance(head, (int, np.integer)) and 0 <= head < H):
        raise ValueError(f"head must be one of 0..{H - 1}, got {head!r}")
    start, stop = (0, T) if rows is None else rows
    layers = range(L) if layer is None else [layer]
    if layer is not None and not (isinstance(layer, (int, np.integer)) and 0 <= layer < L):
        raise ValueError(f"layer must be one of 0..{L - 1}, got {layer!r}")
    per = (1 if heads == "sum" or head is not None else H) * max(0, stop - start) * T * 4
    if layer is None and per * L > dense_budget():
        raise AttentionTooLargeError(
            f"the norm maps of all {L} layers would take {format_bytes(per * L)}, more than the dense budget "
            f"({format_bytes(dense_budget())}): ask for one layer= and rows=(start, stop)")
    out = []
    for lay in layers:
        w = result.rows(lay, start, stop)  # (H, rows, key); checks the row range
        if heads == "sum":
            n = layer_norm_map(w, found["gram"][lay])
        else:
            n = norm_map(w, found["value_norms"][lay])
            if head is not None:
                n = n[head]
        out.append(norm_share(n) if share else n)
    return out[0] if layer is not None else np.stack(out)


def mixing_ratio(source: Source, text_pair: str | None = None, *,
                 model: str | os.PathLike[str] | Runner | None = None, measure: Measure = "norms") -> np.ndarray:
    """Kobayashi et al. 2021's mixing ratio per layer and token, float32 [layer, token].

    ``measure="norms"`` (their Attn-N): r_i = ‖Σ_{j≠i} F_ij‖ / (‖Σ_{j≠i} F_ij‖ + ‖F_ii‖), F_ij = Σ_h α^h_ij
    f_h(x_j). ``measure="weights"`` (Attn-W): 1 − ᾱ_ii, ᾱ the mean of the heads' weights. The layer-level number the
    paper reports is the mean over tokens (``.mean(-1)``).
    """
    if measure not in ("norms", "weights"):
        raise ValueError(f"measure must be 'norms' or 'weights', not {measure!r}")
    result, runner = (resolve_source(source, text_pair, model) if measure == "norms" else
                      (source if isinstance(source, AttentionResult) else get_runner(model).run(source, text_pair),
                       None))
    L, H, T, _S = result.attention_shape()
    diag = np.empty((L, T, H), dtype=np.float32)
    for lay, start, stop, block in result.iter_blocks():
        idx = np.arange(start, stop)
        diag[lay, start:stop] = block[:, idx - start, idx].T
    if measure == "weights":
        return weight_mixing_ratio(diag)
    assert runner is not None
    found = _inputs(result, runner)
    return norm_math.mixing_ratio(diag, found["gram"], found["dot"], found["out_sq"])


def norm_results(results: list[AttentionResult], *, model: str | os.PathLike[str] | Runner | None = None,
                 batch_size: int = 16) -> list[AttentionResult]:
    """:func:`norm_result` of many results of one model, their extra forward passes ``batch_size`` inputs at a time.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> rs = aw.run_batch(["The cat sat.", "A dog barked at the moon."], progress=False)
    >>> [r.attention.shape for r in aw.studies.norm_results(rs)] == [r.attention.shape for r in rs]
    True
    """
    resolved = [resolve_source(r, None, model) for r in results]
    if resolved:
        runner = resolved[0][1]
        if any(rn is not runner for _, rn in resolved):
            raise ValueError("norm_results takes results of one model; call it once per model")
        norm_inputs_batch(runner, [r.text for r, _ in resolved], [r.text_pair for r, _ in resolved],
                          batch_size=batch_size)  # fills the cache that norm_result reads
    return [norm_result(r, model=rn) for r, rn in resolved]


def norm_result(source: Source, text_pair: str | None = None, *,
                model: str | os.PathLike[str] | Runner | None = None) -> AttentionResult:
    """The result with its weights replaced by the norm share N_ij / Σ_k N_ik (rows sum to 1): what the views show
    with ``measure="norms"``, and what :func:`attnwidgets.analysis.surface_stats` turns into Clark et al.'s shares of
    the moved norm. Dense results only (a long input: use :func:`norm_attention` with ``layer`` and ``rows``)."""
    result, runner = resolve_source(source, text_pair, model)
    if result.is_lazy and result.dense_nbytes() > dense_budget():
        raise AttentionTooLargeError(
            f"this input's attention is kept as queries and keys ({result.n_tokens} tokens); its norm maps would "
            f"take {format_bytes(result.dense_nbytes())}, more than the dense budget: use "
            "aw.studies.norm_attention(result, layer=..., rows=(start, stop))")
    shared = norm_attention(result, model=runner, share=True)
    return result.replace(attention=shared)
