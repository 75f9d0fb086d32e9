"""PositionalExplorer: positional encodings as pictures, and why relative distance emerges (front end:
js/src/views/positional/).

Two panels per encoding, computed in numpy by :mod:`attnwidgets.viewdata.positional`: on the left the encoding itself
(``[position, dim]`` for sinusoidal, learned and RoPE; ``[head, distance]`` or ``[head, offset]`` for the biases of
ALiBi and T5), on the right what attention sees across positions (``[query_pos, key_pos]``: the similarity of two
positions' vectors, RoPE's score of one q/k pair placed at every position, or the bias a head adds to the logits).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..viewdata.checks import DIVERGING_COLORMAPS, check_head
from ..viewdata.views.positional import (
    ENCODINGS,
    MAX_D_MODEL,
    MAX_LENGTH,
    SIMILARITIES,
    PositionalOptions,
    positional_panels,
    positional_state,
)
from ._base import AttnWidget, Colormap, Index, checked


class PositionalExplorer(AttnWidget):
    """Positional encodings as heatmaps, and the position-to-position matrix that shows why distance emerges.

    Pick the encoding in the page (or set ``encoding``); sliders change the length, the width (where it means
    something) and, for ALiBi and T5, the number of heads and the head shown. Hover a cell for its value.

    Parameters
    ----------
    encoding : str
        "sinusoidal", "learned", "rope", "alibi" or "t5".
    table : np.ndarray, optional
        A learned ``[position, dim]`` table shown for "learned", e.g. ``aw.runner.position_embeddings()`` (the bundled
        model's 512 x 384 table). Without one, "learned" shows a random table (a learned table before training).
    table_name : str, optional
        What to call the table in the title.
    length, d_model, n_heads, head, causal, similarity, colormap, theme
        See the traits.

    Notes
    -----
    The first argument is what the view shows, an encoding (it draws no model's attention, so it takes no
    result). No ``layer``, ``kind`` or ``words``: the encodings are computed, not read from a model's layers or
    tokens. ``head`` is the ALiBi / T5 head, checked like every view's (0..n_heads-1; no mean).

    Examples
    --------
    >>> w = PositionalExplorer(encoding="rope", length=32, d_model=16)
    >>> w.panels()[1]["matrix"].shape
    (32, 32)
    >>> w.encoding = "alibi"; w.panels()[0]["matrix"].shape        # [head, distance]
    (8, 32)
    """

    _bundle = "positional"

    encoding = traitlets.Unicode("sinusoidal").tag(sync=True)
    """str, default "sinusoidal": which encoding is drawn ("sinusoidal", "learned", "rope", "alibi", "t5"). Two-way:
    choosing one in the page's menu sets it; setting it here redraws."""

    length = traitlets.Int(64).tag(sync=True)
    """int, default 64: number of positions (2 .. 512; at most the table's rows for a given learned table). A slider
    in the page; two-way."""

    d_model = traitlets.Int(64).tag(sync=True)
    """int, default 64: width of the encoding (even, 2 .. 512), for sinusoidal, RoPE (the head width) and a random
    learned table; a given table fixes it. A slider in the page; two-way."""

    n_heads = traitlets.Int(8).tag(sync=True)
    """int, default 8: heads of ALiBi (slopes 2^(-8h/H)) and T5. A slider in the page; two-way."""

    head = Index(0).tag(sync=True)
    """int, default 0: the ALiBi / T5 head whose bias fills the right panel. A slider in the page; two-way."""

    causal = traitlets.Bool(False).tag(sync=True)
    """bool, default False: ALiBi and T5 as in a decoder (future keys masked; T5's one-sided buckets) rather than an
    encoder. A checkbox in the page; two-way."""

    similarity = traitlets.Unicode("cosine").tag(sync=True)
    """str, default "cosine": the sinusoidal / learned similarity, "cosine" or "dot" (peaks at d/2 for sinusoidal).
    A menu in the page; two-way."""

    per_head_scale = traitlets.Bool(False).tag(sync=True)
    """bool, default False: ALiBi's heads on one shared colour scale (head 0's), so a far head's 128 times smaller
    slope shows as a paler picture; True gives each head its own scale (every head's shape visible, the sizes not).
    Two-way."""

    colormap = Colormap(DIVERGING_COLORMAPS).tag(sync=True)
    """str, default "" (the theme's: "rdbu", "puor" in the lecture theme): the diverging scale of both panels."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {panels}: two dicts of title, axis names, first column number, note and the matrix (and T5 buckets) as
    binary float32 buffers; recomputed in Python whenever a trait above changes."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: caption of the encoding, table name, whether a table is given, its rows and width, slider limits."""

    def __init__(self, encoding: str = "sinusoidal", *, table: np.ndarray | None = None,
                 table_name: str | None = None, **kwargs: Any) -> None:
        self._table = None if table is None else np.asarray(table, dtype=np.float32)
        if self._table is not None and (self._table.ndim != 2 or self._table.shape[0] < 2):
            raise ValueError(f"table must be [position, dim] with at least 2 rows, got shape {self._table.shape}")
        self._table_name = table_name or ("given table" if table is not None else "random table (before training)")
        if self._table is not None:
            kwargs.setdefault("length", min(64, self._table.shape[0]))
        super().__init__(encoding=encoding, **kwargs)
        self._refresh()

    @classmethod
    def from_model(cls, model: Any = None, **kwargs: Any) -> PositionalExplorer:
        """The explorer on a model's learned table (the bundled model by default), starting on "learned".

        Loads the model through the runner (:func:`attnwidgets.runner.positions.position_embeddings`).
        """
        from ..runner.positions import position_embeddings

        table = position_embeddings(model)
        name = "bundled all-MiniLM-L6-v2" if model is None else str(model)
        kwargs.setdefault("encoding", "learned")
        return cls(table=table, table_name=f"{name}: {table.shape[0]} × {table.shape[1]} learned table", **kwargs)

    def panels(self) -> list[dict[str, Any]]:
        """The two panels as drawn (numpy), for the current traits."""
        o = self._options()
        return positional_panels(o.encoding, length=o.length, d_model=o.d_model, n_heads=o.n_heads, head=o.head,
                                 causal=o.causal, similarity=o.similarity,
                                 table=self._table if o.encoding == "learned" else None,
                                 per_head_scale=o.per_head_scale)

    @traitlets.validate("encoding")
    def _valid_encoding(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in ENCODINGS:
            raise traitlets.TraitError(f"unknown encoding {proposal['value']!r}; choose one of {ENCODINGS}")
        return str(proposal["value"])

    @traitlets.validate("similarity")
    def _valid_similarity(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in SIMILARITIES:
            raise traitlets.TraitError(f"similarity must be one of {SIMILARITIES}, got {proposal['value']!r}")
        return str(proposal["value"])

    @traitlets.validate("length")
    def _valid_length(self, proposal: dict[str, Any]) -> int:
        v = int(proposal["value"])
        top = MAX_LENGTH if self._table is None else min(MAX_LENGTH, self._table.shape[0])
        if not 2 <= v <= top:
            raise traitlets.TraitError(f"length must lie in 2..{top}, got {v}")
        return v

    @traitlets.validate("d_model")
    def _valid_d_model(self, proposal: dict[str, Any]) -> int:
        v = int(proposal["value"])
        if v < 2 or v > MAX_D_MODEL or v % 2:
            raise traitlets.TraitError(f"d_model must be an even number in 2..{MAX_D_MODEL}, got {v}")
        return v

    @traitlets.validate("n_heads", "head")
    def _valid_heads(self, proposal: dict[str, Any]) -> int:
        v = int(proposal["value"])
        if proposal["trait"].name == "n_heads":
            if not 1 <= v <= 64:
                raise traitlets.TraitError(f"n_heads must lie in 1..64, got {v}")
            if self.head >= v:  # keep the shown head valid
                self.set_trait("head", v - 1)
        else:
            checked(check_head, v, self.n_heads, allow_mean=False)
        return v

    @traitlets.observe("encoding", "length", "d_model", "n_heads", "head", "causal", "similarity", "theme",
                       "per_head_scale")
    def _on_change(self, change: dict[str, Any]) -> None:
        if change["name"] != "theme":
            self._refresh()

    def _options(self) -> PositionalOptions:
        return PositionalOptions(encoding=self.encoding, length=self.length, d_model=self.d_model,
                                 n_heads=self.n_heads, head=self.head, causal=self.causal, similarity=self.similarity,
                                 per_head_scale=self.per_head_scale)

    def _refresh(self) -> None:
        try:
            state = positional_state(self._options(), self._table, self._table_name)
        except ValueError as exc:
            self._error = f"{exc}"
            return
        with self.hold_sync():
            self._error = ""
            self._show(state)
