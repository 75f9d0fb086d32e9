"""FillMask's state (front end: js/src/views/fill_mask/): the top-k fillers of every [MASK] and the attention of each
[MASK] position, as a pure function of what :func:`attnwidgets.studies.masked_lm.fill_mask_view` computed (the
static twin :func:`attnwidgets.plots.plot_fill_mask` reads the same dict).

Examples
--------
>>> import numpy as np
>>> view = {"tokens": ["[CLS]", "[MASK]", "[SEP]"], "positions": [1], "model": "toy", "head": "toy's own head.",
...         "fills": [{"tokens": ["a", "b"], "probs": [0.75, 0.25]}], "rows": np.full((1, 2, 3, 3), 1 / 3)}
>>> state = fill_mask_state(view, "[MASK]")
>>> state.meta.shape, state.meta.head, state.payload.fills[0].probs, state.payload.rows.dtype
((1, 2, 3, 3), "toy's own head.", [0.75, 0.25], dtype('float64'))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..checks import check_head, check_layer
from ..lens import BIAS, LensTable, lens_table
from ..selection import check_combine, check_selection
from ..state import OPTIONAL

__all__ = ["FillMaskMeta", "FillMaskPayload", "FillMaskState", "MaskFill", "fill_mask_lens_table", "fill_mask_row",
           "fill_mask_state"]


@dataclass(frozen=True)
class MaskFill:
    """One [MASK]'s top-k fillers and their probabilities, most probable first."""

    tokens: list[str]
    probs: list[float]


@dataclass(frozen=True)
class FillMaskMeta:
    """``_meta``: the model's name, the rows' shape (masks, layers, heads, tokens), and whose guesses the bars are
    (``head``: the shipped head and its measured top-1 against the word-frequency baseline, or the model's own head;
    the page and the static twin print it under the title). The bars are drawn on a fixed 0–100 % axis."""

    model: str
    shape: tuple[int, int, int, int]
    head: str = ""


@dataclass(frozen=True)
class FillMaskPayload:
    """``_payload``: the tokens, where the masks are, their fillers, each [MASK]'s attention (masks, layers, heads,
    tokens), the sentence they were made for, and every query row (layers, heads, tokens, tokens), which the page
    combines over a selection of query tokens (absent from a view made without it: then only [MASK] rows)."""

    tokens: list[str]
    positions: list[int]
    fills: list[MaskFill]
    rows: np.ndarray
    text: str
    attention: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    lens: LensTable | None = field(default=None, metadata=OPTIONAL)  # the logit lens, a table per [MASK]


@dataclass(frozen=True)
class FillMaskState:
    payload: FillMaskPayload
    meta: FillMaskMeta


def fill_mask_state(view: Mapping[str, Any], text: str) -> FillMaskState:
    """What the page draws for ``view`` (:func:`~attnwidgets.studies.masked_lm.fill_mask_view` of ``text``)."""
    rows = np.asarray(view["rows"])
    shape = tuple(int(s) for s in rows.shape)
    if len(shape) != 4:
        raise ValueError(f"the [MASK] rows must be (masks, layers, heads, tokens), got shape {shape}")
    fills = [MaskFill([str(t) for t in f["tokens"]], [float(p) for p in f["probs"]]) for f in view["fills"]]
    attention = view.get("attention")
    if attention is not None:
        attention = np.asarray(attention, np.float32)
        n = shape[3]
        if attention.shape != (shape[1], shape[2], n, n):
            raise ValueError(f"the attention must be (layers, heads, tokens, tokens) = {(shape[1], shape[2], n, n)}, "
                             f"got shape {attention.shape}")
    payload = FillMaskPayload(tokens=list(view["tokens"]), positions=[int(p) for p in view["positions"]],
                              fills=fills, rows=rows, text=text, attention=attention,
                              lens=fill_mask_lens_table(view))
    return FillMaskState(payload, FillMaskMeta(str(view["model"]), shape,  # type: ignore[arg-type]
                                               str(view.get("head", ""))))


def fill_mask_row(view: Mapping[str, Any], layer: int, head: int = -1, selection: Any = None, combine: str = "mean",
                  mask: int = 0) -> np.ndarray:
    """(tokens,) what the attention panel draws: the ``combine`` ("mean" or "sum") of the selected query rows at
    ``layer`` (``head=-1``: the mean of the heads), or, with nothing selected, [MASK] ``mask``'s row (js/src/views/
    fill_mask/state.ts selectionRow computes the same in the page).

    >>> a = np.zeros((1, 2, 3, 3), np.float32); a[0, 0] = np.eye(3); a[0, 1] = 1 / 3
    >>> view = {"tokens": list("abc"), "positions": [1], "rows": a[:, :, [1]].transpose(2, 0, 1, 3), "attention": a}
    >>> fill_mask_row(view, 0, 0, [0, 2], "sum").tolist(), fill_mask_row(view, 0, 0).tolist()
    ([1.0, 0.0, 1.0], [0.0, 1.0, 0.0])
    """
    rows = np.asarray(view["rows"])
    n_masks, n_layers, n_heads, n = rows.shape
    layer, head = check_layer(layer, n_layers), check_head(head, n_heads, allow_mean=True)
    combine = check_combine(combine)
    picked = check_selection([] if selection is None else selection, n)
    if not picked:
        if not 0 <= mask < n_masks:
            raise ValueError(f"mask {mask} is out of range: the text has {n_masks} [MASK] (0..{n_masks - 1})")
        pick = rows[mask, layer].astype(np.float64)
        return (pick.mean(0) if head == -1 else pick[head]).astype(np.float32)
    attention = view.get("attention")
    if attention is None:
        raise ValueError("this view has no attention beyond its [MASK] rows: make it with fill_mask_view (which keeps "
                         "every query row) to select other tokens")
    block = np.asarray(attention)[layer, :, picked].astype(np.float64)  # (selected, heads, tokens)
    per_head = block.mean(0) if combine == "mean" else block.sum(0)
    return (per_head.mean(0) if head == -1 else per_head[head]).astype(np.float32)


def fill_mask_lens_table(view: Mapping[str, Any]) -> LensTable | None:
    """The logit lens at each [MASK] of ``view`` (its ``"lens"``, :func:`~attnwidgets.studies.masked_lm.fill_mask_lens`)
    as tables, captioned with the head that reads the layers; None when the view has none."""
    lens = view.get("lens")
    if lens is None:
        return None
    k = np.asarray(lens["probs"]).shape[-1]
    return lens_table(lens["tokens"], lens["probs"],
                      f"Logit lens at the [MASK] (nostalgebraist 2020): the top {k} fillers of the stream after the "
                      f"embeddings and each layer, read through {lens['reader']} (the last row: the fill-in); "
                      f"{BIAS}.")
