"""The rest of the Transformer block, as numbers: how much each sublayer writes into the residual stream, and the
log-log slope that turns measured times into a cost exponent.

Arrays in, arrays out (numpy only). The forward passes that produce the vectors live in
:mod:`attnwidgets.runner.residual` (a Hugging Face model) and :mod:`attnwidgets.teaching.block` (the toy model).

Every block of a Transformer adds its sublayers' outputs to a running sum, the residual stream:
pre-LN ``x ← x + f(norm(x))``, post-LN ``x ← norm(x + f(x))``. For one sublayer and token i, with ``x_i`` the stream
the sublayer reads from (what it is added to) and ``f_i`` what it writes, the **write ratio** is ``‖f_i‖ / ‖x_i‖``.
A ratio of 0.1 means the sublayer nudges the token's vector; 1 or more means it rewrites it.

Examples
--------
>>> import numpy as np
>>> stream = np.array([[3.0, 4.0], [0.0, 2.0]])        # two tokens, ‖x‖ = 5 and 2
>>> write = np.array([[0.0, 1.0], [1.0, 0.0]])         # ‖f‖ = 1 and 1
>>> float(write_ratio(write, stream))                  # mean of 1/5 and 1/2
0.35
>>> round(loglog_slope([1, 2, 4, 8], [3, 12, 48, 192]), 6)  # y = 3 x²
2.0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..html_repr import repr_html

__all__ = ["ResidualContributions", "loglog_slope", "write_ratio"]


def write_ratio(write: np.ndarray, stream: np.ndarray, valid: np.ndarray | None = None) -> float:
    """Mean over tokens of ``‖write_i‖ / ‖stream_i‖``: how much a sublayer changes the residual stream it is added to.

    Parameters
    ----------
    write : (n, d) what the sublayer adds, per token.
    stream : (n, d) the residual stream it is added to, per token.
    valid : (n,) bool, optional
        Tokens to average over (padding left out); default all.
    """
    write, stream = np.asarray(write, dtype=np.float64), np.asarray(stream, dtype=np.float64)
    if write.ndim != 2 or write.shape != stream.shape:
        raise ValueError(f"write and stream must both be (tokens, width) of the same shape, got {write.shape} and "
                         f"{stream.shape}")
    keep = np.ones(len(write), bool) if valid is None else np.asarray(valid, dtype=bool)
    if keep.shape != (len(write),):
        raise ValueError(f"valid must be ({len(write)},) booleans, got shape {keep.shape}")
    if not keep.any():
        raise ValueError("no tokens to average over")
    num = np.linalg.norm(write[keep], axis=-1)
    den = np.linalg.norm(stream[keep], axis=-1)
    if (den == 0).any():
        raise ValueError("the residual stream is zero at some token: the ratio is undefined there")
    return float(np.mean(num / den))


def loglog_slope(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Least-squares slope of ``log y`` against ``log x``: the exponent k in ``y ≈ c · x^k``.

    Raises ValueError for fewer than two distinct x, or any x or y that is not positive and finite.
    """
    xa, ya = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    if not (np.isfinite(xa).all() and np.isfinite(ya).all() and (xa > 0).all() and (ya > 0).all()):
        raise ValueError("a log-log fit needs positive, finite x and y")
    if np.unique(xa).size < 2:
        raise ValueError("a slope needs at least two distinct x values")
    return float(np.polyfit(np.log(xa), np.log(ya), 1)[0])


@dataclass(frozen=True)
class ResidualContributions:
    """How much each sublayer of each layer writes into the residual stream, for one input.

    Attributes
    ----------
    ratio : (rows, sublayers) float64
        Mean over tokens of ``‖sublayer output‖ / ‖residual stream it is added to‖``; NaN where a layer has no such
        sublayer (an encoder layer has no cross-attention).
    write_norm, stream_norm : (rows, sublayers) float64
        Mean over tokens of ``‖sublayer output‖`` and of ``‖stream‖``, for reading the ratio.
    layers : list[str]
        Row labels (``"L0"``, or ``"enc 0"`` / ``"dec 0"`` for an encoder-decoder).
    sublayers : list[str]
        Column labels, e.g. ``["attention", "feed-forward"]``.
    model : str
        Which model.
    norm_first : bool | None
        Pre-LN (True), post-LN (False), or unknown (None).
    tokens : list[str]
        The tokens averaged over.
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    ratio: np.ndarray
    write_norm: np.ndarray
    stream_norm: np.ndarray
    layers: list[str]
    sublayers: list[str]
    model: str
    norm_first: bool | None
    tokens: list[str]

    def table(self):  # pragma: no cover - exercised by the notebook
        """The ratios as a pandas DataFrame (rows: layers, columns: sublayers)."""
        import pandas as pd

        return pd.DataFrame(self.ratio, index=self.layers, columns=self.sublayers)

    @classmethod
    def from_vectors(cls, writes: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]], layers: Sequence[str],
                     sublayers: Sequence[str], *, model: str, norm_first: bool | None, tokens: Sequence[str],
                     valid: np.ndarray | None = None) -> ResidualContributions:
        """Reduce ``{(row, sublayer): (write (n, d), stream (n, d))}`` to the per-layer ratios (missing: NaN)."""
        shape = (len(layers), len(sublayers))
        ratio, wn, sn = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
        col = {name: j for j, name in enumerate(sublayers)}
        for (row, name), (write, stream) in writes.items():
            j = col[name]
            ratio[row, j] = write_ratio(write, stream, valid)
            keep = slice(None) if valid is None else np.asarray(valid, bool)
            wn[row, j] = float(np.linalg.norm(np.asarray(write, np.float64)[keep], axis=-1).mean())
            sn[row, j] = float(np.linalg.norm(np.asarray(stream, np.float64)[keep], axis=-1).mean())
        return cls(ratio, wn, sn, list(layers), list(sublayers), model, norm_first, list(tokens))
