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

from ..lens import BIAS, LensTable, lens_table
from ..state import OPTIONAL

__all__ = ["FillMaskMeta", "FillMaskPayload", "FillMaskState", "MaskFill", "fill_mask_lens_table", "fill_mask_state"]


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
    tokens) and the sentence they were made for."""

    tokens: list[str]
    positions: list[int]
    fills: list[MaskFill]
    rows: np.ndarray
    text: str
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
    payload = FillMaskPayload(tokens=list(view["tokens"]), positions=[int(p) for p in view["positions"]],
                              fills=fills, rows=rows, text=text, lens=fill_mask_lens_table(view))
    return FillMaskState(payload, FillMaskMeta(str(view["model"]), shape,  # type: ignore[arg-type]
                                               str(view.get("head", ""))))


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
