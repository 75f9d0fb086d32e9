"""Colour scales that say what they do: a diverging scale clipped at a percentile, or one per row.

A diverging colour scale topped at the largest |value| lets one outlier decide it: the bundled model's learned
position table has one entry of 1.87 where 99 % of |values| are under 0.07, so the whole panel is drawn within a
few per cent of white. ALiBi's penalty, −slope_h · distance, reaches −31.5 for the steepest of 8 heads and −0.25 for
the shallowest on 64 positions: on one shared scale the shallow heads are blank. These functions choose the scale in
numpy and return the shade each cell is drawn with (in −1..1, 0 white) together with the words the legend shows, so
the page only paints and the scale is tested here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: |shade| under this is drawn within 10 % of white: what "near white" means in the tests and the report.
NEAR_WHITE = 0.1


def near_white_share(shade: np.ndarray) -> float:
    """Share of the finite cells whose |shade| is under :data:`NEAR_WHITE` (drawn almost white).

    Examples
    --------
    >>> near_white_share(np.array([0.0, 0.05, 0.5, np.nan]))
    0.6666666666666666
    """
    s = np.abs(np.asarray(shade, dtype=np.float64))
    s = s[np.isfinite(s)]
    return float((s < NEAR_WHITE).mean()) if s.size else 0.0


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def symmetric_scale(matrix: np.ndarray, top: float | None = None) -> dict[str, Any]:
    """The plain scale: −max |value| to +max |value| (white at 0), for panels where no outlier sets it; ``top``: a
    given end instead (a scale shared with other panels; larger values take the end colours).

    Examples
    --------
    >>> s = symmetric_scale(np.array([[-2.0, 1.0]]))
    >>> s["shade"].tolist(), s["legend"]
    ([[-1.0, 0.5]], ['-2', '2'])
    """
    m = np.asarray(matrix, dtype=np.float32)
    if top is None or not (np.isfinite(top) and top > 0):
        finite = np.abs(m[np.isfinite(m)])
        top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        note = f"scale {_fmt(-top)} to {_fmt(top)} (the largest |value|)"
    else:
        note = f"scale {_fmt(-top)} to {_fmt(top)} (shared)"
    return {"shade": np.clip(m / top, -1, 1).astype(np.float32), "legend": [_fmt(-top), _fmt(top)], "vmax": top,
            "scale_note": note}


def clipped_scale(matrix: np.ndarray, percentile: float = 99.0) -> dict[str, Any]:
    """A diverging scale topped at the ``percentile``-th percentile of |value|; larger values take the end colours.

    When the percentile is not below the maximum (no outlier) it is :func:`symmetric_scale`. The legend and note say
    that the scale is clipped, where, and what the largest value is.

    Examples
    --------
    >>> m = np.array([0.1] * 199 + [1.87])
    >>> s = clipped_scale(m)
    >>> round(s["vmax"], 3), float(s["shade"].max())
    (0.1, 1.0)
    >>> s["scale_note"]
    'clipped at the 99th percentile of |value| (0.1); max |value| 1.87, drawn in the end colour'
    """
    if not 0 < percentile <= 100:
        raise ValueError(f"percentile must lie in (0, 100], got {percentile}")
    m = np.asarray(matrix, dtype=np.float32)
    finite = np.abs(m[np.isfinite(m)])
    if not finite.size:
        return symmetric_scale(m)
    biggest = float(finite.max())
    top = float(np.percentile(finite, percentile))
    if top <= 0 or top >= biggest * 0.999:
        return symmetric_scale(m)
    shade = np.clip(m / top, -1.0, 1.0).astype(np.float32)
    return {"shade": shade, "legend": [f"≤ {_fmt(-top)}", f"≥ {_fmt(top)}"], "vmax": top,
            "scale_note": f"clipped at the {percentile:g}th percentile of |value| ({_fmt(top)}); "
                          f"max |value| {_fmt(biggest)}, drawn in the end colour"}


def row_scale(matrix: np.ndarray, row_name: str = "row") -> dict[str, Any]:
    """Each row on its own scale, −max to +max |value| of that row, so rows of very different size all show their shape.

    Examples
    --------
    >>> s = row_scale(np.array([[0.0, -30.0], [0.0, -0.25]]), "head")
    >>> s["shade"].tolist(), s["row_vmax"]
    ([[0.0, -1.0], [0.0, -1.0]], [30.0, 0.25])
    >>> s["scale_note"]
    'one scale per head (each head to its own largest |value|: 30 for head 0 … 0.25 for head 1)'
    """
    m = np.asarray(matrix, dtype=np.float32)
    with np.errstate(invalid="ignore"):
        tops = np.nanmax(np.abs(np.where(np.isfinite(m), m, np.nan)), axis=1) if m.size else np.zeros(0)
    tops = np.where(np.isfinite(tops) & (tops > 0), tops, 1.0)
    shade = (m / tops[:, None]).astype(np.float32)
    first, last = 0, len(tops) - 1
    return {"shade": shade, "legend": [f"−max of each {row_name}", f"+max of each {row_name}"],
            "vmax": 1.0, "row_vmax": [float(t) for t in tops],
            "scale_note": f"one scale per {row_name} (each {row_name} to its own largest |value|: "
                          f"{_fmt(float(tops[first]))} for {row_name} {first} … {_fmt(float(tops[last]))} for "
                          f"{row_name} {last})"}


def stat_range(values: Any) -> tuple[float, float]:
    """The colour scale of a per-head statistic, as the page sets it (``statRange`` in js/src/draw/heads.ts): from 0
    to the largest finite value (1 when none is above 0) when none is negative, else the finite range.

    >>> stat_range(np.array([0.2, 0.5, np.nan])), stat_range(np.array([-1.0, 2.0])), stat_range(np.array([0.0]))
    ((0.0, 0.5), (-1.0, 2.0), (0.0, 1.0))
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    if not len(v):
        return 0.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        lo, hi = (0.0, 1.0) if lo == 0 else (min(0.0, lo), max(0.0, hi))
    return (0.0, hi if hi > 0 else 1.0) if lo >= 0 else (lo, hi)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Roughly ``count`` round ticks covering [lo, hi], 1, 2 or 5 times a power of ten apart (``niceTicks`` in
    js/src/draw/heads.ts).

    >>> nice_ticks(0, 2.2)
    [0.0, 0.5, 1.0, 1.5, 2.0]
    """
    if not hi > lo:
        return [float(lo)]
    raw = (hi - lo) / max(1, count)
    p = 10.0 ** np.floor(np.log10(raw))
    step = next((m * p for m in (1, 2, 5, 10) if (hi - lo) / (m * p) <= count + 0.5), 10 * p)
    out, v = [], np.ceil(lo / step) * step
    while v <= hi + step * 1e-9:
        out.append(round(float(v), 10))
        v += step
    return out
