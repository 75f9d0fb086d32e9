"""Which experts a mixture-of-experts decoder routes each token to, layer by layer: the plain result (numpy, no
torch) of :func:`attnwidgets.runner.route` (``runner/routers.py``).

Notation: T tokens, L mixture-of-experts layers (a model may keep dense MLPs in some layers: ``layers`` says which
layer each row is), E experts, k experts per token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .html_repr import repr_html
from .result import ModelInfo

__all__ = ["RouterResult"]


@dataclass(frozen=True, eq=False)
class RouterResult:
    """Each token's experts and gate weights in each mixture-of-experts layer.

    Attributes
    ----------
    tokens : list[str]
        (T,) display text of the tokens.
    layers : list[int]
        (L,) the model's layer index of each row (the layers with a router).
    logits : np.ndarray
        (L, T, E) float32: the router's logits, as the model computed them.
    experts : np.ndarray
        (L, T, k) int64: the experts each token was sent to, highest gate first (the model's own choice).
    weights : np.ndarray
        (L, T, k) float32: the gate weight of each chosen expert, as the model mixed their outputs (renormalised over
        the k when the model does so: Mixtral; Qwen2-MoE and OLMoE by their ``norm_topk_prob``).
    model : ModelInfo | None

    Examples
    --------
    >>> import numpy as np
    >>> r = RouterResult(["a", "b"], [0], np.zeros((1, 2, 3), np.float32), np.array([[[0, 2], [2, 1]]]),
    ...                  np.full((1, 2, 2), 0.5, np.float32))
    >>> r.load().tolist()   # expert 2 takes both tokens, experts 0 and 1 one each, of 2 x 2 assignments
    [[0.25, 0.25, 0.5]]
    >>> r.load(weighted=True).tolist()
    [[0.25, 0.25, 0.5]]
    >>> r.load(positions=[1]).tolist()   # token "b" alone: experts 2 and 1
    [[0.0, 0.5, 0.5]]
    """

    tokens: list[str]
    layers: list[int]
    logits: np.ndarray
    experts: np.ndarray
    weights: np.ndarray
    model: ModelInfo | None = field(default=None)

    def __post_init__(self) -> None:
        n_l, n_t = len(self.layers), len(self.tokens)
        if self.logits.ndim != 3 or self.logits.shape[:2] != (n_l, n_t):
            raise ValueError(f"logits must be (layers, tokens, experts) = ({n_l}, {n_t}, E), got {self.logits.shape}")
        if self.experts.shape != self.weights.shape or self.experts.shape[:2] != (n_l, n_t):
            raise ValueError(f"experts and weights must both be ({n_l}, {n_t}, k); got {self.experts.shape} and "
                             f"{self.weights.shape}")
        if self.experts.size and not 0 <= int(self.experts.min()) <= int(self.experts.max()) < self.n_experts:
            raise ValueError(f"expert indices must be in 0..{self.n_experts - 1}")

    @property
    def n_experts(self) -> int:
        return int(self.logits.shape[-1])

    @property
    def top_k(self) -> int:
        return int(self.experts.shape[-1])

    def probs(self) -> np.ndarray:
        """(L, T, E) float32 softmax of the router logits (before the top-k and any renormalisation)."""
        z = self.logits.astype(np.float64)
        e = np.exp(z - z.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)).astype(np.float32)

    def span_rows(self, span: Any) -> slice:
        """The token rows of ``span`` ((start, stop), a range or a slice; None: all), checked."""
        if span is None:
            return slice(0, len(self.tokens))
        start, stop = (int(span.start or 0), int(len(self.tokens) if span.stop is None else span.stop)) \
            if isinstance(span, (slice, range)) else (int(span[0]), int(span[1]))
        if not 0 <= start < stop <= len(self.tokens):
            raise ValueError(f"span ({start}, {stop}) is not a non-empty range of the {len(self.tokens)} tokens "
                             f"(stop exclusive)")
        return slice(start, stop)

    def position_rows(self, positions: Sequence[int]) -> np.ndarray:
        """The token rows of ``positions`` (distinct token indices, any order; a view's ``selection``), checked."""
        rows = np.asarray(list(positions))
        if rows.size == 0 or rows.dtype.kind not in "iu":
            raise ValueError(f"positions must be a non-empty list of token indices, got {list(positions)!r}")
        if len(set(rows.tolist())) != rows.size or not 0 <= int(rows.min()) <= int(rows.max()) < len(self.tokens):
            raise ValueError(f"positions {rows.tolist()} must be distinct token indices in 0..{len(self.tokens) - 1}")
        return np.sort(rows)

    def load(self, span: Any = None, weighted: bool = False, *, positions: Sequence[int] | None = None
             ) -> np.ndarray:
        """(L, E) float32: each expert's share of the routing in each layer, over the tokens of ``span``
        ((start, stop), a range or a slice; default all) or of ``positions`` (token indices, not necessarily
        contiguous: a view's selection): the fraction of the T x k (token, slot) assignments it got, or with
        ``weighted`` its share of the gate weight. Rows sum to 1; a perfectly balanced router gives 1/E
        everywhere."""
        if positions is not None and span is not None:
            raise ValueError("give span or positions, not both")
        rows = self.span_rows(span) if positions is None else self.position_rows(positions)
        ex, w = self.experts[:, rows], self.weights[:, rows].astype(np.float64)
        out = np.zeros((len(self.layers), self.n_experts), np.float64)
        for i in range(len(self.layers)):
            np.add.at(out[i], ex[i].ravel(), w[i].ravel() if weighted else 1.0)
        total = out.sum(-1, keepdims=True)
        return (out / np.where(total > 0, total, 1.0)).astype(np.float32)

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    def __repr__(self) -> str:
        name = self.model.name if self.model is not None else "arrays"
        return (f"RouterResult({name!r}, {len(self.tokens)} tokens x {len(self.layers)} MoE layers, "
                f"{self.n_experts} experts, top-{self.top_k})")
