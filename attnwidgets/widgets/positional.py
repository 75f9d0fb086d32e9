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

from ..viewdata import positional as P
from ..viewdata.checks import DIVERGING_COLORMAPS, check_head
from ..viewdata.scales import clipped_scale, row_scale, symmetric_scale
from ..viewdata.wire import pack
from ._base import AttnWidget, Colormap, Index, checked

ENCODINGS = ("sinusoidal", "learned", "rope", "alibi", "t5")
SIMILARITIES = ("cosine", "dot")
MAX_LENGTH = 512
MAX_D_MODEL = 512

CAPTIONS = {
    "sinusoidal": (
        "Vaswani et al. 2017: PE(m, 2i) = sin(m·ω_i), PE(m, 2i+1) = cos(m·ω_i), ω_i = 1/10000^(2i/d). Fast "
        "waves on the left columns, slow ones on the right. PE(m)·PE(n) = Σ cos((m−n)·ω_i): every diagonal of the "
        "similarity matrix is constant, so it depends on the distance m − n only, and peaks at m = n."
    ),
    "learned": (
        "A learned table (BERT, GPT-2): one trained vector per position, added to the token embedding. A random "
        "table (how training starts) has no structure; a trained one shows whatever structure training put in, "
        "often a band around the diagonal (nearby positions look alike) but diagonals are not exactly constant."
    ),
    "rope": (
        "RoPE (Su et al. 2021): rotate each pair (q_2i, q_2i+1) and (k_2i, k_2i+1) by m·θ_i. Left: cos and sin of "
        "the rotation angles (the same frequencies as the sinusoidal table). Right: one fixed q and k placed at "
        "every pair of positions; rotations compose, so q_m·k_n depends on m − n only: constant diagonals."
    ),
    "alibi": (
        "ALiBi (Press et al. 2022): no position vectors at all; each head adds −slope·|i − j| to its logits, with "
        "slopes 1/2, 1/4, ... 1/256 for 8 heads. Steep heads look nearby, shallow heads far. Left: the penalty by "
        "distance for every head; right: the chosen head's bias (tick \"causal\" for a decoder: grey cells are then "
        "hidden by the mask)."
    ),
    "t5": (
        "T5 (Raffel et al. 2020): one learned scalar per (distance bucket, head) added to the logits. Half the "
        "buckets are exact distances, the rest grow logarithmically up to 128. Left: the bias by offset j − i for "
        "every head (a seeded random table stands in for a trained one); right: the chosen head's bias."
    ),
}


def _diagonal_spread(matrix: np.ndarray) -> float:
    """Largest (max − min) along any diagonal of ``matrix`` ``[query_pos, key_pos]``, over its finite range.

    0 means the matrix is Toeplitz: its value depends on ``j − i`` only.

    Examples
    --------
    >>> _diagonal_spread(P.position_similarity(P.sinusoidal(8, 16))) < 1e-5
    True
    """
    m = np.asarray(matrix, dtype=np.float64)
    finite = m[np.isfinite(m)]
    span = float(finite.max() - finite.min()) if finite.size else 0.0
    if span == 0:
        return 0.0
    worst = 0.0
    for off in range(-m.shape[0] + 1, m.shape[1]):
        d = np.diagonal(m, off)
        d = d[np.isfinite(d)]
        if d.size > 1:
            worst = max(worst, float(d.max() - d.min()))
    return worst / span


def positional_panels(
    encoding: str,
    *,
    length: int = 64,
    d_model: int = 64,
    n_heads: int = 8,
    head: int = 0,
    causal: bool = False,
    similarity: str = "cosine",
    table: np.ndarray | None = None,
    seed: int = 0,
    per_head_scale: bool = False,
) -> list[dict[str, Any]]:
    """The two panels :class:`PositionalExplorer` draws, as numpy arrays with titles.

    Returns
    -------
    list of dict
        ``[encoding panel, position-to-position panel]``; each has ``matrix`` (rows, cols) float32 (NaN: masked),
        ``title``, ``rows`` / ``cols`` (axis names), ``col_start`` (the number of the first column), ``value``
        (what a cell holds), the colour scale (:mod:`attnwidgets.viewdata.scales`: ``shade`` in −1..1 as drawn,
        ``legend`` [low, high] texts, ``vmax``, ``scale_note``; a learned table clipped at the 99th percentile of
        |value|; ALiBi's heads on one shared scale, head 0's, so the 128-fold slope differences show, or
        ``per_head_scale=True``: one scale each, every head's shape visible) and optionally ``extra`` (e.g. T5's
        bucket per cell) and ``note``.

    Examples
    --------
    >>> a, b = positional_panels("sinusoidal", length=10, d_model=8)
    >>> a["matrix"].shape, b["matrix"].shape
    ((10, 8), (10, 10))
    >>> a, b = positional_panels("alibi", length=5, n_heads=4, head=1, causal=True)
    >>> a["matrix"].shape, bool(np.isnan(b["matrix"][0, 1]))
    ((4, 5), True)
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}; choose one of {ENCODINGS}")
    if similarity not in SIMILARITIES:
        raise ValueError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
    pos = {"rows": "position m", "cols": "dimension", "col_start": 0}
    pair = {"rows": "query position m", "cols": "key position n", "col_start": 0}
    first: dict[str, Any]
    second: dict[str, Any]
    if encoding in ("sinusoidal", "learned"):
        pe = P.sinusoidal(length, d_model) if encoding == "sinusoidal" else P.learned(
            length, d_model if table is None else int(np.shape(table)[1]), table=table, seed=seed)
        sim = P.position_similarity(pe, normalize=similarity == "cosine")  # (L, L)
        what = "cosine similarity" if similarity == "cosine" else "dot product"
        first = {**pos, "matrix": pe, "title": "encoding PE[m, i]", "value": "PE"}
        second = {**pair, "matrix": sim, "title": f"{what} PE(m)·PE(n)", "value": what}
    elif encoding == "rope":
        angles = P.rope_angles(length, d_model)  # (L, d/2)
        picture = np.empty((length, d_model), dtype=np.float32)
        picture[:, 0::2], picture[:, 1::2] = np.cos(angles), np.sin(angles)
        rng = np.random.default_rng(seed)
        q = rng.standard_normal(d_model)
        scores = P.rope_relative_scores(q, q, length) / d_model  # the same vector as query and key: (L, L)
        first = {**pos, "matrix": picture, "title": "cos / sin of rotation angle m·θ_i", "value": "cos/sin"}
        second = {**pair, "matrix": scores.astype(np.float32), "title": "q_m·k_n / d for one fixed q = k",
                  "value": "score"}
    elif encoding == "alibi":
        slopes = P.alibi_slopes(n_heads)  # (H,)
        by_distance = (-slopes[:, None] * np.arange(length)[None, :] + 0.0).astype(np.float32)  # (H, L)
        bias = P.alibi_bias(length, n_heads=n_heads, causal=causal)[head]  # (L, L), -inf when masked
        first = {"matrix": by_distance, "title": "bias −slope_h · distance", "rows": "head", "cols": "distance",
                 "col_start": 0, "value": "bias"}
        second = {**pair, "matrix": np.where(np.isfinite(bias), bias, np.nan).astype(np.float32),
                  "title": f"head {head} (slope 1/{1 / slopes[head]:g}): bias added to the logits", "value": "bias"}
    else:  # t5
        offsets = np.arange(-(length - 1), length)  # (2L-1,)
        buckets = P.t5_relative_position_bucket(offsets, bidirectional=not causal)
        table_t5 = np.random.default_rng(seed).standard_normal((32, n_heads)).astype(np.float32)
        by_offset = table_t5[buckets].T.copy()  # (H, 2L-1)
        bias = P.t5_bias(length, n_heads=n_heads, bidirectional=not causal, table=table_t5)[head]  # (L, L)
        rel = P.relative_positions(length)
        if causal:
            bias = np.where(rel > 0, np.nan, bias)
            by_offset[:, offsets > 0] = np.nan
        first = {"matrix": by_offset, "title": "bias of each offset j − i, per head", "rows": "head",
                 "cols": "offset j − i", "col_start": -(length - 1), "value": "bias",
                 "extra": np.broadcast_to(buckets, by_offset.shape).astype(np.float32), "extra_name": "bucket"}
        second = {**pair, "matrix": bias.astype(np.float32), "title": f"head {head}: bias added to the logits",
                  "value": "bias", "extra": P.t5_relative_position_bucket(rel, bidirectional=not causal)
                  .astype(np.float32), "extra_name": "bucket"}
    spread = _diagonal_spread(second["matrix"])
    second["note"] = (f"constant along diagonals (depends on m − n only): spread {spread:.3f}" if spread < 1e-3 else
                      f"not a function of m − n alone: values along a diagonal differ by up to {spread:.0%} "
                      "of the range")
    second["spread"] = spread
    # The colour scale, chosen here: a learned table's one outlier (1.87 in the bundled model, 99 % of |values| under
    # 0.07) would leave the panel white, so it is clipped at the 99th percentile. ALiBi's heads differ 128-fold in
    # slope: that difference is the lesson, so by default every head (both panels) shares head 0's scale and the far
    # heads stay pale; per_head_scale=True gives each head (row) its own scale to show its shape. The notes say so.
    alibi_shared = encoding == "alibi" and not per_head_scale
    first.update(clipped_scale(first["matrix"]) if encoding == "learned" else
                 row_scale(first["matrix"], "head") if encoding == "alibi" and per_head_scale else
                 symmetric_scale(first["matrix"]))
    second.update(symmetric_scale(second["matrix"], top=float(np.abs(first["matrix"]).max()) if alibi_shared
                                  else None))
    if alibi_shared:
        for panel in (first, second):
            panel["scale_note"] = "one scale for every head (per_head_scale=True: one each)"
    return [first, second]


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
        return positional_panels(
            self.encoding, length=self.length, d_model=self.d_model, n_heads=self.n_heads, head=self.head,
            causal=self.causal, similarity=self.similarity, table=self._table if self.encoding == "learned" else None,
            per_head_scale=self.per_head_scale,
        )

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

    def _refresh(self) -> None:
        try:
            panels = self.panels()
        except ValueError as exc:
            self._error = f"{exc}"
            return
        out = []
        for p in panels:
            q = {k: v for k, v in p.items() if k not in ("matrix", "extra", "spread", "shade")}
            q["matrix"] = pack(p["matrix"])
            q["shade"] = pack(p["shade"])
            if "extra" in p:
                q["extra"] = pack(p["extra"])
            out.append(q)
        with self.hold_sync():
            self._error = ""
            self._meta = {
                "caption": CAPTIONS[self.encoding],
                "table_name": self._table_name,
                "has_table": self._table is not None,
                "table_shape": list(self._table.shape) if self._table is not None else None,
                "max_length": MAX_LENGTH if self._table is None else min(MAX_LENGTH, self._table.shape[0]),
                "max_d_model": MAX_D_MODEL,
            }
            self._payload = {"panels": out}
