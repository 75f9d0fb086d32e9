"""The checks a result's arrays pass before a result holds them: attention that is probabilities, token lists, ids.

:func:`check_attention` is the one check of attention maps, shared by the runner (a model's output) and
:meth:`attnwidgets.result.AttentionResult.from_arrays` (arrays from anywhere), so both refuse the same things with the
same words (:class:`InvalidAttentionError`). The smaller checks here turn what a caller gives ``from_arrays`` (lists,
arrays of any dtype) into the typed copies a frozen result keeps, or say what is wrong with it, and
:func:`check_layer_head` is the bounds check every ``result.head`` / ``result.rows`` makes.

Plain numpy, nothing else of ours: :mod:`attnwidgets.result` imports this module and re-exports its public names
(``from attnwidgets.result import check_attention, InvalidAttentionError`` keeps working).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["SPECIAL_TEXT", "InvalidAttentionError", "check_attention", "check_layer_head", "id_array",
           "real_array", "token_list"]


def check_layer_head(layer: Any, head: Any, n_layers: int, n_heads: int) -> None:
    """Raise :class:`IndexError` unless ``layer`` is one of ``n_layers`` and ``head`` one of ``n_heads`` (or -1, the
    heads' mean); booleans are not indices.

    >>> check_layer_head(1, -1, 2, 4)
    >>> check_layer_head(0, 4, 2, 4)
    Traceback (most recent call last):
    ...
    IndexError: head 4 is out of range: layers have 4 heads (0..3, -1 = mean)
    """
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < n_layers:
        raise IndexError(f"layer {layer!r} is out of range: the model has {n_layers} layers (0..{n_layers - 1})")
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not -1 <= head < n_heads:
        raise IndexError(f"head {head!r} is out of range: layers have {n_heads} heads (0..{n_heads - 1}, -1 = mean)")


def real_array(values: Any, what: str, copy: bool = True) -> np.ndarray:
    """A float32 copy of ``values``, refusing what is not real numbers (complex, strings, objects); with
    ``copy=False`` float32 ``values`` themselves (another dtype is still converted)."""
    a = np.asarray(values)
    if a.dtype.kind not in "biuf":
        kinds = {"c": "complex numbers", "U": "strings", "S": "bytes", "O": "Python objects", "M": "dates"}
        raise ValueError(f"{what} must be real numbers (attention weights 0..1), got an array of "
                         f"{kinds.get(a.dtype.kind, str(a.dtype))} (dtype {a.dtype})")
    if a.ndim > 4:
        raise ValueError(f"{what} must be [layer, head, query, key] (at most 4 axes), got shape {a.shape}")
    if not copy:
        return np.asarray(a, dtype=np.float32)
    return np.array(a, dtype=np.float32)  # a copy: the result is frozen, the caller's array is not


def token_list(tokens: Any, what: str) -> list[str]:
    """``tokens`` as a new list of str, refusing one string, an empty list and anything that is not a string."""
    if isinstance(tokens, str):
        raise TypeError(f"{what} must be a list of strings, one per token, not one string")
    out = list(tokens)
    if not out:
        raise ValueError(f"{what} is empty: a result needs at least one token")
    bad = next((k for k, t in enumerate(out) if not isinstance(t, str)), None)
    if bad is not None:
        raise TypeError(f"{what}[{bad}] is {type(out[bad]).__name__} {out[bad]!r}, not str: give each token's text")
    return out


def id_array(values: Any, what: str, n: int, dtype: Any) -> np.ndarray:
    """A copy of ``values`` as ``dtype`` with shape (n,), refusing non-integers where integers belong."""
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"{what} must have shape ({n},), one per token, got {arr.shape}")
    if dtype is not bool and arr.size and arr.dtype.kind not in "biu":
        if arr.dtype.kind != "f" or not np.all(np.isfinite(arr) & (arr == np.round(arr))):
            raise ValueError(f"{what} must be whole numbers, got {arr.dtype} values such as {arr.ravel()[0]!r}")
    return np.array(arr, dtype=dtype)


class InvalidAttentionError(ValueError):
    """Attention that is not a map of probabilities: weights that are not finite, negative weights, or rows whose
    weights do not sum to 1. ``problem`` says which ("not finite", "negative", "rows"); ``where`` is the index of
    the first place found, as ``[..., layer, head, query]``."""

    def __init__(self, message: str, problem: str, where: tuple[int, ...]) -> None:
        super().__init__(message)
        self.problem = problem
        self.where = where


def _place(index: Sequence[int]) -> str:
    """``(b, l, h, q)`` -> "input b, layer l, head h, query q" (the leading axes of a batch are inputs)."""
    names = ["input"] * (len(index) - 3) + ["layer", "head", "query"]
    return ", ".join(f"{name} {int(i)}" for name, i in zip(names, index))


def check_attention(attention: np.ndarray, what: str = "attention", *, sinks: bool = False, ablated: bool = False,
                    tol: float = 1e-3, query_mask: np.ndarray | None = None) -> None:
    """Raise :class:`InvalidAttentionError` unless ``attention`` (..., layer, head, query, key) is probabilities.

    The one check of attention maps, shared by the runner (a model's output) and :meth:`AttentionResult.from_arrays`
    (arrays from anywhere), so both refuse the same things with the same words:

    - every weight finite (a NaN weight in the model makes NaN maps, and entropy, shares and rollout quietly wrong);
    - each row's weights sum to 1 (within ``tol``) over the keys. With ``sinks`` (learned attention sinks, as in
      gpt-oss) a row may keep less: more than 0 and at most 1. With ``ablated`` (heads zeroed or scaled on purpose)
      at most 1, down to 0;
    - no weight below 0.

    Parameters
    ----------
    attention : np.ndarray
        (..., L, H, q, k); leading axes (a batch) are allowed.
    what : str
        How the message starts ("from_arrays got attention", "'bert' returned self-attention").
    query_mask : np.ndarray, optional
        Bool, broadcasting to (..., L, H, q): the rows to check (padding rows are left out).

    The cost is one sum over the last axis and one minimum: the runner calls it on every result.

    Examples
    --------
    >>> check_attention(np.full((1, 2, 3, 3), 1 / 3))
    >>> bad = np.full((2, 2, 3, 3), 1 / 3); bad[1, 0, 2, 0] = np.nan
    >>> check_attention(bad)
    Traceback (most recent call last):
    ...
    attnwidgets.result_checks.InvalidAttentionError: attention weights that are not finite (NaN or inf): layer 1, \
head 0 (query 2; 1 of 36 weights). The maps, entropies and shares of that head would be wrong numbers
    """
    a = np.asarray(attention)
    sums = a.sum(-1)  # (..., q): NaN or inf wherever a row holds one (float32 is exact enough for a 1e-3 tolerance)
    rows = np.ones(sums.shape, bool) if query_mask is None else np.broadcast_to(np.asarray(query_mask, bool),
                                                                                 sums.shape)
    broken = ~np.isfinite(sums) & rows
    if broken.any():
        heads = np.argwhere(broken.any(-1))  # (..., layer, head) with at least one broken row
        first = tuple(int(x) for x in np.argwhere(broken)[0])
        count = int((~np.isfinite(a) & rows[..., None]).sum())
        names = "; ".join(_place((*h, 0)).rsplit(", query", 1)[0] for h in heads[:6])
        more = f" and {len(heads) - 6} more heads" if len(heads) > 6 else ""
        raise InvalidAttentionError(
            f"{what} weights that are not finite (NaN or inf): {names}{more} (query {first[-1]}; {count} of "
            f"{int(rows.sum()) * a.shape[-1]} weights). The maps, entropies and shares of "
            f"{'that head' if len(heads) == 1 else 'those heads'} would be wrong numbers",
            "not finite", first,
        )
    if ablated:
        bad = (sums > 1.0 + tol) & rows
    elif sinks:  # a learned sink takes part of every row (gpt-oss): the shown keys get the rest
        bad = ~((sums > 0) & (sums <= 1.0 + tol)) & rows
    else:
        bad = ~(np.abs(sums - 1.0) <= tol) & rows
    if bad.any():
        where = tuple(int(x) for x in np.argwhere(bad)[0])
        raise InvalidAttentionError(
            f"{what} weights that are not probabilities: in {_place(where)}'s weights sum to {sums[where]:.4g} over "
            f"the keys, and {int(bad.sum())} of {int(rows.sum())} rows do not sum to "
            f"{'at most 1' if ablated else '1 (or less, more than 0, with attention sinks)' if sinks else '1'}",
            "rows", where,
        )
    if a.size and a.min() < 0:
        neg = (a < 0) & rows[..., None]
        if neg.any():
            where = tuple(int(x) for x in np.argwhere(neg)[0])
            raise InvalidAttentionError(
                f"{what} weights below 0: in {_place(where[:-1])}, key {where[-1]} has weight {a[where]:.4g} "
                f"({int(neg.sum())} of {neg.size} weights are negative). Attention weights are probabilities, 0..1",
                "negative", where[:-1],
            )


#: Token texts :meth:`~attnwidgets.result.AttentionResult.from_arrays` marks as special by default.
SPECIAL_TEXT = {"[CLS]", "[SEP]", "[PAD]", "[MASK]", "<s>", "</s>", "<pad>", "<|endoftext|>", "<bos>", "<eos>"}
