"""The logit lens as the tables a view draws (GenerationView per step, FillMask per [MASK]) and their static twins
paint (``attnwidgets.plots.lens``): one table per step or [MASK], a row per read-out (the embeddings, then each
layer), the top-k tokens of each row with their probabilities, and the caption that says what reads the rows.

The lens itself (nostalgebraist 2020) is computed by the runner (``generate(..., lens_k=k)``) and the studies
(:func:`attnwidgets.studies.masked_lm.fill_mask_lens`); this module only checks and labels it.

Examples
--------
>>> import numpy as np
>>> t = lens_table([[["a", "b"], ["b", "a"]]], np.array([[[0.5, 0.2], [0.7, 0.1]]]), "read by a toy head")
>>> t.rows, t.probs.shape, t.caption
(['embeddings', 'layer 1'], (1, 2, 2), 'read by a toy head')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..generation_result import GenerationResult

__all__ = ["LensTable", "generation_lens", "lens_rows", "lens_table"]

#: The lens's known bias, said under every table.
BIAS = ("a read-out trained on the last layer reads the earlier ones: the lens's known bias (the tuned lens, Belrose "
        "et al. 2023, learns a map per layer; left for later)")


@dataclass(frozen=True)
class LensTable:
    """The logit lens as tables: ``tokens[table][row][j]`` and ``probs`` float32 (tables, rows, k), most probable
    first; ``rows`` labels each row ("embeddings", "layer 1", ...); ``caption`` says what reads the rows."""

    rows: list[str]
    tokens: list[list[list[str]]]
    probs: np.ndarray
    caption: str


def lens_rows(n: int) -> list[str]:
    """The labels of ``n`` read-outs: the embeddings, then layers 1..n-1."""
    return ["embeddings"] + [f"layer {i}" for i in range(1, n)]


def lens_table(tokens: Any, probs: Any, caption: str) -> LensTable:
    """A checked :class:`LensTable`: ValueError when the tokens and probabilities disagree in shape or a
    probability is outside [0, 1]."""
    p = np.asarray(probs, dtype=np.float32)
    if p.ndim != 3 or p.shape[1] < 1 or p.shape[2] < 1:
        raise ValueError(f"the lens's probabilities must be (tables, rows, k), got shape {p.shape}")
    if len(tokens) != p.shape[0] or any(len(t) != p.shape[1] or any(len(r) != p.shape[2] for r in t) for t in tokens):
        raise ValueError(f"the lens's tokens must be {p.shape[0]} x {p.shape[1]} rows of {p.shape[2]}")
    if not (np.isfinite(p).all() and (p >= 0).all() and (p <= 1 + 1e-6).all()):
        raise ValueError("the lens's probabilities must be finite numbers in [0, 1]")
    return LensTable(lens_rows(p.shape[1]), [[[str(x) for x in r] for r in t] for t in tokens], p, caption)


def generation_lens(g: GenerationResult) -> LensTable | None:
    """The logit lens of every step of ``g`` as tables (None when it kept none)."""
    if g.lens_tokens is None or g.lens_probs is None:
        return None
    k = g.lens_probs.shape[2]
    return lens_table(g.lens_tokens, g.lens_probs,
                      f"Logit lens (nostalgebraist 2020): the top {k} next tokens of this step's stream after the "
                      "embeddings and each layer, through the final norm and unembedding (last row: the model's "
                      f"own). {BIAS[0].upper()}{BIAS[1:]}.")
