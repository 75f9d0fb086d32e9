"""PositionalExplorer's state (front end: js/src/views/positional/): the two panels of an encoding (numpy, from
:mod:`attnwidgets.viewdata.positional`) with their colour scales (:mod:`attnwidgets.viewdata.scales`), and what the
page's controls need, as pure functions of the view's options.

Examples
--------
>>> state = positional_state(PositionalOptions("alibi", length=5, n_heads=4, head=1, causal=True))
>>> [p.matrix.shape for p in state.payload.panels], state.payload.panels[0].note, state.meta.max_length
([(4, 5), (5, 5)], None, 512)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import positional as P
from ..scales import clipped_scale, row_scale, symmetric_scale
from ..state import OPTIONAL

__all__ = ["CAPTIONS", "ENCODINGS", "MAX_D_MODEL", "MAX_LENGTH", "SIMILARITIES", "PositionalMeta", "PositionalOptions",
           "PositionalPanel", "PositionalPayload", "PositionalState", "positional_panels", "positional_state"]

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
    """The two panels :class:`~attnwidgets.widgets.PositionalExplorer` draws, as numpy arrays with titles.

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


@dataclass(frozen=True)
class PositionalOptions:
    """What the widget's traits choose."""

    encoding: str = "sinusoidal"
    length: int = 64
    d_model: int = 64
    n_heads: int = 8
    head: int = 0
    causal: bool = False
    similarity: str = "cosine"
    per_head_scale: bool = False


@dataclass(frozen=True)
class PositionalPanel:
    """One panel as drawn: its (rows, cols) matrix (NaN: masked), axis names, the number of the first column, what a
    cell holds, and the colour scale chosen in Python (the shade each cell is drawn with in -1..1, the legend's end
    texts, the top, the scale in words; ``row_vmax`` with one scale per row); ``extra`` (T5's bucket per cell) and
    ``note`` (the diagonals' spread, on the position-to-position panel) where they apply."""

    title: str
    rows: str
    cols: str
    col_start: int
    value: str
    matrix: np.ndarray
    shade: np.ndarray
    legend: tuple[str, str]
    vmax: float
    scale_note: str
    note: str | None = field(default=None, metadata=OPTIONAL)
    extra: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    extra_name: str | None = field(default=None, metadata=OPTIONAL)
    row_vmax: list[float] | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class PositionalPayload:
    """``_payload``: the two panels, [encoding, position-to-position]."""

    panels: list[PositionalPanel]


@dataclass(frozen=True)
class PositionalMeta:
    """``_meta``: the caption, the learned table's name and shape (None: a random one) and the sliders' limits."""

    caption: str
    table_name: str
    has_table: bool
    table_shape: tuple[int, int] | None
    max_length: int
    max_d_model: int


@dataclass(frozen=True)
class PositionalState:
    payload: PositionalPayload
    meta: PositionalMeta


def _panel(p: dict[str, Any]) -> PositionalPanel:
    return PositionalPanel(
        title=p["title"], rows=p["rows"], cols=p["cols"], col_start=int(p["col_start"]), value=p["value"],
        matrix=p["matrix"], shade=p["shade"], legend=(p["legend"][0], p["legend"][1]), vmax=float(p["vmax"]),
        scale_note=p["scale_note"], note=p.get("note"), extra=p.get("extra"), extra_name=p.get("extra_name"),
        row_vmax=p.get("row_vmax"))


def positional_state(options: PositionalOptions, table: np.ndarray | None = None,
                     table_name: str = "random table (before training)") -> PositionalState:
    """What the page draws for ``options``; ``table`` is the learned table ([position, dim]; None: a random one).
    ValueError (from :func:`positional_panels`) for options the panels cannot be made for."""
    panels = positional_panels(
        options.encoding, length=options.length, d_model=options.d_model, n_heads=options.n_heads,
        head=options.head, causal=options.causal, similarity=options.similarity,
        table=table if options.encoding == "learned" else None, per_head_scale=options.per_head_scale)
    meta = PositionalMeta(
        caption=CAPTIONS[options.encoding], table_name=table_name, has_table=table is not None,
        table_shape=None if table is None else (int(table.shape[0]), int(table.shape[1])),
        max_length=MAX_LENGTH if table is None else min(MAX_LENGTH, int(table.shape[0])), max_d_model=MAX_D_MODEL)
    return PositionalState(PositionalPayload([_panel(p) for p in panels]), meta)
