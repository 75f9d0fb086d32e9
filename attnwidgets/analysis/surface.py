"""Surface statistics of attention heads (Clark et al. 2019, section 3): where the mass goes, and how spread it is.

Every function here takes attention ``(..., query, key)`` with any leading axes, so it serves one map, a
``[layer, head, query, key]`` result, or a padded ``(batch, layer, head, query, key)`` batch. Maps need not be
square (cross-attention is target x source).

Conventions (they follow Clark et al.'s released code, and are tested):

- **Share of attention to a kind of key** (e.g. [SEP]): per query row, the sum over keys of that kind; then the mean
  over all valid rows, the [CLS] and [SEP] rows included. ``sep_sep`` averages over the [SEP] rows only and
  ``rest_sep`` over all other rows, so ``sep = (n_sep * sep_sep + (n - n_sep) * rest_sep) / n``.
- **Sentence pairs**: both segments and all their [SEP] tokens count alike; ``sep`` is attention to any [SEP].
- **Previous / next / self**: mean over all n valid rows of ``A[i, i-1]``, ``A[i, i+1]``, ``A[i, i]``; a row without
  such a neighbour (the first row for "previous") contributes 0, as in Clark et al.'s code.
- **Entropy** in nats, mean over rows of ``-sum_j A[i, j] ln A[i, j]`` over the keys row i may see. ``smoothing=1e-4``
  reproduces Clark et al.'s code (A <- 0.9999 A + 0.0001 / n); the default 0 is the exact entropy of the map.
  ``entropy_cls`` is row 0 (the [CLS] row; always 0 in a decoder, whose first row sees one key) and
  ``entropy_last`` the last row (the row that predicts the next token in a decoder). The uniform baseline is ln n
  for an encoder, and the mean over rows of ln(i + 1) for a causal decoder.
- **Decoders**: ``first`` (attention to position 0, the "attention sink") plays the part of [CLS]/[SEP]; ``cls``,
  ``sep`` are 0 and ``sep_sep``/``rest_sep`` are NaN when the input has no such tokens.
- Padding never counts: padded rows and keys are zero and every mean divides by valid counts.

At any length: :func:`surface_stats` of a long input (``result.is_lazy``) goes through its attention a block of rows at
a time (:class:`SurfaceBlocks`), never building the ``[layer, head, query, key]`` array; the numbers are those of the
dense computation up to float32 summation order (about 1e-7).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..html_repr import repr_html
from ..result import AttentionResult
from .batch import AttentionBatch
from .blocks import is_causal, kept_summary, run_blocks, visible_keys
from .tokens import token_kinds

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "STATISTICS",
    "SurfaceBlocks",
    "SurfaceStats",
    "key_share",
    "mean_entropy",
    "offset_share",
    "row_entropy",
    "stats_to_frame",
    "surface_stats",
    "surface_stats_batch",
    "uniform_entropy",
]

STATISTICS: dict[str, str] = {
    "cls": "attention to [CLS]",
    "sep": "attention to [SEP]",
    "sep_sep": "attention to [SEP], from [SEP] rows",
    "rest_sep": "attention to [SEP], from the other rows",
    "punct": 'attention to "." and ","',
    "first": "attention to the first token",
    "self": "attention to the token itself",
    "prev": "attention to the previous token",
    "next": "attention to the next token",
    "entropy": "entropy of the rows (nats)",
    "entropy_cls": "entropy of the first ([CLS]) row (nats)",
    "entropy_last": "entropy of the last row (nats)",
    "entropy_uniform": "entropy of uniform attention (nats)",
}
"""Every statistic :func:`surface_stats` returns, with a label for axes and widgets."""


def _rows(query_mask: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """(..., q) float32 weights of the rows to average over (1 for valid rows)."""
    if query_mask is None:
        return np.ones(shape, dtype=np.float32)
    return np.broadcast_to(np.asarray(query_mask, dtype=np.float32), shape)


def _mean_rows(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    count = rows.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, (values * rows).sum(-1) / np.maximum(count, 1), np.nan)


def key_share(attention: np.ndarray, key_mask: np.ndarray, query_mask: np.ndarray | None = None) -> np.ndarray:
    """Mean over query rows of the attention each row puts on the keys in ``key_mask``.

    Parameters
    ----------
    attention : np.ndarray
        (..., q, k) attention, rows summing to 1.
    key_mask : np.ndarray
        (..., k) bool, broadcastable: the keys to count.
    query_mask : np.ndarray, optional
        (..., q) bool, broadcastable: the rows to average over (default all). NaN where no row is selected.

    Returns
    -------
    np.ndarray
        (...) shares in [0, 1].

    Examples
    --------
    >>> a = np.array([[0.5, 0.5, 0.0], [0.1, 0.2, 0.7]])   # 2 queries x 3 keys
    >>> float(key_share(a, np.array([False, False, True])))
    0.35
    """
    a = np.asarray(attention)
    keys = np.asarray(key_mask, dtype=a.dtype if a.dtype.kind == "f" else np.float64)
    per_row = np.matmul(a, keys[..., :, None])[..., 0]  # (..., q)
    return _mean_rows(per_row, _rows(query_mask, per_row.shape))


def offset_share(attention: np.ndarray, offset: int, query_mask: np.ndarray | None = None) -> np.ndarray:
    """Mean over query rows i of ``A[i, i + offset]`` (-1: previous token, 0: itself, +1: next token).

    Rows without a key at ``i + offset`` contribute 0 and still count in the mean.

    Parameters
    ----------
    attention : np.ndarray
        (..., q, k).
    offset : int
    query_mask : np.ndarray, optional
        (..., q) bool: the rows to average over (default all).

    Examples
    --------
    >>> a = np.array([[1.0, 0.0], [0.6, 0.4], [0.0, 0.0]])   # 3 queries x 2 keys
    >>> round(float(offset_share(a, -1)), 6)   # (0 + 0.6 + 0) / 3
    0.2
    """
    a = np.asarray(attention)
    per_row = np.zeros(a.shape[:-1], dtype=np.float64)  # (..., q)
    diag = np.diagonal(a, offset=offset, axis1=-2, axis2=-1)  # A[i, i + offset] for the rows that have one
    start = max(0, -offset)
    per_row[..., start : start + diag.shape[-1]] = diag
    return _mean_rows(per_row, _rows(query_mask, per_row.shape))


def _entropy_mask(key_mask: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """The keys each row may see, as a bool array that broadcasts to the attention's ``shape`` (..., q, k).

    A 1-D mask is one flag per key, the same for every row. Any other mask is read as (..., q, k) under numpy's
    broadcasting rules, never as (..., k): a (q, k) causal mask on an (H, q, k) map must mean "row i sees keys j",
    not "head h sees the keys of row h", which is what guessing from the number of dimensions did when H == q.
    """
    if key_mask is None:
        return np.ones(shape[-1:], dtype=bool)
    mask = np.asarray(key_mask, dtype=bool)
    try:
        fits = np.broadcast_shapes(mask.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if mask.ndim == 0 or not fits:
        raise ValueError(
            f"key_mask of shape {mask.shape} does not fit attention of shape {tuple(shape)}: pass one flag per key "
            "(k,), or a mask that broadcasts as (..., q, k); for a per-map key mask (..., k), add the query axis "
            "with key_mask[..., None, :]"
        )
    return mask


def row_entropy(attention: np.ndarray, smoothing: float = 0.0, key_mask: np.ndarray | None = None) -> np.ndarray:
    """Entropy in nats of each query row, ``-sum_j A[i, j] ln A[i, j]`` over the keys the row may see.

    Computed in float64 whatever the input's dtype (float32 loses about 5e-5 of a smoothed one-hot row's entropy).

    Parameters
    ----------
    attention : np.ndarray
        (..., q, k).
    smoothing : float
        ε in ``A <- (1 - ε) A + ε / m`` (m = keys the row may see) before the entropy; Clark et al.'s code uses 1e-4.
    key_mask : np.ndarray, optional
        bool, the keys each row may see (default all): either (k,), one flag per key for every row, or a mask that
        broadcasts to the attention as (..., q, k), e.g. a (q, k) causal mask. A mask of any other shape is refused
        rather than guessed at; a per-map key mask (..., k) needs its query axis, ``key_mask[..., None, :]``.

    Returns
    -------
    np.ndarray
        (..., q) float64; NaN for a row with a NaN, infinite or negative weight among the keys it may see (such a
        row has no entropy, and 0 would call it perfectly focused).

    Examples
    --------
    >>> a = np.array([[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    >>> np.round(row_entropy(a) / np.log(2), 6).tolist()
    [1.0, 2.0]
    >>> causal = np.tril(np.ones((3, 3), bool))              # (q, k): row i sees keys 0..i
    >>> maps = np.stack([np.eye(3)] * 3)                     # 3 heads x 3 queries x 3 keys, each row on itself
    >>> np.round(row_entropy(maps, 0.1, causal)[:, 0], 6).tolist()   # row 0 sees one key in every head
    [0.0, 0.0, 0.0]
    """
    a = np.asarray(attention)
    mask = np.broadcast_to(_entropy_mask(key_mask, a.shape), a.shape)  # a view: no copy of a broadcast mask
    out = np.empty(a.shape[:-1], dtype=np.float64)  # (..., q)
    _entropy_chunks(a, mask, smoothing, out)
    return out


_CHUNK = 1 << 18
"""Attention weights per float64 block in :func:`row_entropy`: its temporaries stay near 2 MiB each whatever the
batch, instead of several float64 copies of the whole batch."""


def _entropy_chunks(a: np.ndarray, mask: np.ndarray, smoothing: float, out: np.ndarray) -> None:
    """Fill ``out`` (..., q) with the entropy of ``a`` (..., q, k), a block of leading indices at a time."""
    if a.ndim <= 2 or a.size <= _CHUNK:
        out[...] = _entropy_block(a, mask, smoothing)
        return
    step = _CHUNK // a[0].size
    if step == 0:  # one index of the first axis is already too big: split the next axis
        for i in range(a.shape[0]):
            _entropy_chunks(a[i], mask[i], smoothing, out[i])
        return
    for start in range(0, a.shape[0], step):
        block = slice(start, start + step)
        out[block] = _entropy_block(a[block], mask[block], smoothing)


def _entropy_block(a: np.ndarray, mask: np.ndarray, smoothing: float) -> np.ndarray:
    p = a.astype(np.float64)  # a copy: changed in place below
    if smoothing:
        m = np.maximum(mask.sum(-1, keepdims=True), 1)
        p *= 1.0 - smoothing
        p += smoothing / m
    x = np.where(mask & (p != 0), p, 1.0)  # not p > 0: a NaN or negative weight must make the entropy NaN, not 0
    with np.errstate(invalid="ignore"):
        plogp = np.log(x)
    plogp *= x
    return 0.0 - plogp.sum(-1)  # not -sum: an empty or one-hot row is 0.0, not -0.0


def mean_entropy(
    attention: np.ndarray,
    smoothing: float = 0.0,
    key_mask: np.ndarray | None = None,
    query_mask: np.ndarray | None = None,
) -> np.ndarray:
    """Mean over query rows of :func:`row_entropy` (nats); ``query_mask`` (..., q) selects the rows.

    ``key_mask`` is as in :func:`row_entropy`: (k,) for every row alike, or broadcasting as (..., q, k).

    Examples
    --------
    >>> a = np.full((3, 4), 0.25)
    >>> round(float(mean_entropy(a)), 6) == round(float(np.log(4)), 6)
    True
    """
    h = row_entropy(attention, smoothing, key_mask)
    return _mean_rows(h, _rows(query_mask, h.shape))


def uniform_entropy(n: int | np.ndarray, causal: bool = False) -> np.ndarray:
    """Entropy of uniform attention: ln n, or for a causal decoder the mean over rows of ln(i + 1).

    Examples
    --------
    >>> round(float(uniform_entropy(4)), 4), round(float(uniform_entropy(3, causal=True)), 4)
    (1.3863, 0.5973)
    """
    n_arr = np.asarray(n)
    if not causal:
        return np.log(np.maximum(n_arr, 1).astype(np.float64))
    # mean_{i=1..n} ln i = ln(n!) / n
    from scipy.special import gammaln

    return gammaln(n_arr + 1.0) / np.maximum(n_arr, 1)


def surface_stats_batch(batch: AttentionBatch, smoothing: float = 0.0) -> dict[str, np.ndarray]:
    """Every statistic of :data:`STATISTICS` for each input of a padded batch, each (B, L, H).

    This is what :func:`surface_stats` and the corpus runner call; see the module docstring for the conventions.
    """
    a = batch.attention  # (B, L, H, T, T)
    valid = batch.valid  # (B, T)
    kinds = batch.kinds
    n = batch.lengths.astype(np.float64)[:, None, None]  # (B, 1, 1)
    b, n_layers, n_heads = a.shape[:3]
    rows = valid[:, None, None, :].astype(np.float32)  # (B, 1, 1, T)
    names = ("cls", "sep", "punct", "first")
    keys = np.stack([kinds[k] for k in names], axis=-1).astype(np.float32)  # (B, T, 4)
    per_row = np.matmul(a, keys[:, None, None])  # (B, L, H, T, 4): mass each row puts on each kind
    out: dict[str, np.ndarray] = {}
    totals = per_row.sum(-2, dtype=np.float64) / n[..., None]  # (B, L, H, 4); padded rows are zero
    for i, name in enumerate(names):
        out[name] = totals[..., i]
    sep_rows = kinds["sep"][:, None, None, :].astype(np.float32)
    out["sep_sep"] = _mean_rows(per_row[..., 1], np.broadcast_to(sep_rows, per_row.shape[:-1]))
    out["rest_sep"] = _mean_rows(per_row[..., 1], np.broadcast_to(rows - sep_rows, per_row.shape[:-1]))
    for name, offset in (("self", 0), ("prev", -1), ("next", 1)):
        diag = np.diagonal(a, offset=offset, axis1=-2, axis2=-1)  # padded rows are zero
        out[name] = diag.sum(-1, dtype=np.float64) / n
    key_mask = batch.key_mask()  # (B, 1, 1, T, T)
    h = row_entropy(a, smoothing, key_mask)  # (B, L, H, T)
    out["entropy"] = (h * rows).sum(-1) / n
    out["entropy_cls"] = h[..., 0]
    last = np.maximum(batch.lengths - 1, 0)
    out["entropy_last"] = np.take_along_axis(h, last[:, None, None, None], axis=-1)[..., 0]
    uniform = uniform_entropy(batch.lengths, causal=batch.causal)  # (B,)
    out["entropy_uniform"] = np.broadcast_to(uniform[:, None, None], (b, n_layers, n_heads)).astype(np.float64)
    return out


class SurfaceStats(dict):  # type: ignore[type-arg]
    """Per-head surface statistics of one result (what :func:`surface_stats` returns): a dict of (L, H) arrays, keys
    as in :data:`STATISTICS`, read the way :class:`~attnwidgets.analysis.CorpusStats` is read.

    It is a ``dict`` (``stats["sep"]``, ``.items()``, ``**stats`` work as before) with CorpusStats' readers:
    :meth:`mean` (the dict itself: one input is its own mean) and :meth:`frame` (tidy ``layer, head, statistic,
    value``), and ``model``, ``n_docs`` (1), ``n_tokens`` and ``words``. In a notebook it shows as a table.

    Examples
    --------
    >>> from attnwidgets.result import AttentionResult
    >>> s = surface_stats(AttentionResult.from_arrays(np.eye(2), ["[CLS]", "[SEP]"]))
    >>> float(s["sep"][0, 0]), s.frame().columns.tolist(), s.n_docs
    (0.5, ['layer', 'head', 'statistic', 'value'], 1)
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    def __init__(self, values: Mapping[str, np.ndarray], *, model: object = None, n_tokens: int = 0,
                 words: bool = False) -> None:
        super().__init__(values)
        self.model = model
        self.n_docs = 1
        self.n_tokens = int(n_tokens)
        self.words = bool(words)

    def mean(self) -> dict[str, np.ndarray]:
        """Every statistic, each (L, H), as a plain dict (one input is its own mean; as CorpusStats.mean)."""
        return dict(self)

    def frame(self) -> pd.DataFrame:
        """Tidy DataFrame with columns ``layer, head, statistic, value`` (as CorpusStats.frame, without patterns)."""
        return stats_to_frame(self)

    def __repr__(self) -> str:
        name = getattr(self.model, "name", None) or "no model"
        return f"SurfaceStats({name!r}, {self.n_tokens} tokens, words={self.words}, statistics: {', '.join(self)})"


def surface_stats(result: AttentionResult, *, words: bool = False, smoothing: float = 0.0,
                  rows: Sequence[int] | None = None) -> SurfaceStats:
    """Per-head surface statistics of one result: a :class:`SurfaceStats` (a dict of (L, H) arrays, keys as in
    :data:`STATISTICS`, with ``.frame()`` and ``.mean()`` as :func:`~attnwidgets.analysis.aggregate_stats` returns).

    Parameters
    ----------
    result : AttentionResult
        Its self-attention (the encoder's, for encoder-decoders) is measured.
    words : bool
        Measure word-level attention instead of pieces (:func:`~attnwidgets.analysis.words.word_level`).
    smoothing : float
        Entropy smoothing; 1e-4 reproduces Clark et al.'s code.
    rows : list of int, optional
        Only these query rows (positions at the level measured: words with ``words=True``): every mean over rows is
        over them (``sep_sep``/``rest_sep`` over the selected [SEP] / other rows, ``entropy_cls`` and
        ``entropy_last`` NaN unless row 0 / the last row is selected, the uniform baseline over the same rows).
        Default: every row.

    Examples
    --------
    >>> from attnwidgets.result import AttentionResult
    >>> a = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    >>> s = surface_stats(AttentionResult.from_arrays(a, ["[CLS]", "hi", "[SEP]"]))
    >>> round(float(s["sep"][0, 0]), 4), round(float(s["prev"][0, 0]), 4)
    (0.6667, 0.0)
    >>> s = surface_stats(AttentionResult.from_arrays(a, ["[CLS]", "hi", "[SEP]"]), rows=[0, 1])
    >>> round(float(s["sep"][0, 0]), 4), round(float(s["self"][0, 0]), 4)
    (0.5, 0.25)
    """
    source = result
    if words:
        from .words import word_level

        result = word_level(result)
    kept = surface_from_summary(result, smoothing) if rows is None and result.is_lazy else None
    if rows is not None:
        acc = SurfaceBlocks(result, smoothing, rows=rows)
        n_layers, n_heads, _n, n_keys = result.attention_shape()
        step = max(1, (32 << 20) // max(1, n_heads * n_keys * 4))
        for layer in range(n_layers):
            for start, stop in acc.runs():
                for a in range(start, stop, step):
                    b = min(stop, a + step)
                    acc.add(layer, a, b, result.rows(layer, a, b))
        values = acc.finish()
    elif kept is not None:  # a long input: from the sums made with its weights (runner/headstats.py)
        values = kept
    elif result.is_lazy:  # a long input without them: a block of rows at a time
        acc = SurfaceBlocks(result, smoothing)
        run_blocks(result, [acc])
        values = acc.finish()
    else:
        batch = AttentionBatch.from_results([result])
        values = {k: v[0] for k, v in surface_stats_batch(batch, smoothing).items()}
    return SurfaceStats(values, model=source.model, n_tokens=result.n_tokens, words=words)


def surface_from_summary(result: AttentionResult, smoothing: float = 0.0) -> dict[str, np.ndarray] | None:
    """:func:`surface_stats` of a long input from the sums its runner made with the weights (``stack.summary``, see
    :mod:`attnwidgets.runner.headstats`): no weight is rebuilt. None when the result has no such sums, or when they
    cannot answer (entropy smoothing, more [SEP] rows than were kept): then :class:`SurfaceBlocks` does it.
    The same numbers as :class:`SurfaceBlocks` to float32 rounding (tests hold them to 1e-5)."""
    summary = kept_summary(result) if not smoothing else None
    if summary is None:
        return None
    kinds = token_kinds(result.tokens, result.special_mask)
    sep_rows = np.flatnonzero(kinds["sep"])
    kept_rows = summary["special_rows"]
    if not np.isin(sep_rows, kept_rows).all():
        return None
    n = result.n_tokens
    keys = np.stack([kinds[k] for k in SurfaceBlocks._KEYS], axis=-1).astype(np.float64)  # (n, 4)
    totals = summary["colsum"] @ keys  # (L, H, 4)
    out = {name: totals[..., i] / max(n, 1) for i, name in enumerate(SurfaceBlocks._KEYS)}
    at = np.searchsorted(kept_rows, sep_rows)
    sep_sep = summary["special_weights"][:, :, at].astype(np.float64) @ keys[:, 1]  # (L, H, n_sep)
    sep_sep = sep_sep.sum(-1)
    n_sep = sep_rows.size
    nan = np.full(sep_sep.shape, np.nan)
    out["sep_sep"] = sep_sep / n_sep if n_sep else nan
    out["rest_sep"] = (totals[..., 1] - sep_sep) / (n - n_sep) if n - n_sep else nan
    diag = summary["diag"].sum(-1, dtype=np.float64)  # (L, H, 3): previous, self, next
    out["self"], out["prev"], out["next"] = diag[..., 1] / max(n, 1), diag[..., 0] / max(n, 1), diag[..., 2] / max(n, 1)
    entropy = summary["entropy"]
    out["entropy"] = entropy.sum(-1) / max(n, 1)
    out["entropy_cls"] = entropy[..., 0].copy() if n else np.full(nan.shape, np.nan)
    out["entropy_last"] = entropy[..., -1].copy() if n else np.full(nan.shape, np.nan)
    out["entropy_uniform"] = np.full(nan.shape, float(uniform_entropy(n, causal=is_causal(result))))
    return out  # the order of surface_stats_batch


class SurfaceBlocks:
    """:func:`surface_stats` of one result, accumulated over blocks of rows (see :mod:`~attnwidgets.analysis.blocks`).

    The same statistics and conventions as :func:`surface_stats_batch`; memory is one block and a few (L, H) sums.

    Examples
    --------
    >>> from attnwidgets.result import AttentionResult
    >>> r = AttentionResult.from_arrays(np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
    ...                                 ["[CLS]", "hi", "[SEP]"])
    >>> acc = SurfaceBlocks(r)
    >>> for layer, start, stop, block in r.iter_blocks(rows=2): acc.add(layer, start, stop, block)
    >>> round(float(acc.finish()["sep"][0, 0]), 4)
    0.6667
    """

    _KEYS = ("cls", "sep", "punct", "first")

    def __init__(self, result: AttentionResult, smoothing: float = 0.0, rows: Sequence[int] | None = None) -> None:
        n_layers, n_heads, n, _ = result.attention_shape()
        kinds = token_kinds(result.tokens, result.special_mask)
        self.n = n
        self.rows = None if rows is None else _check_rows(rows, n)
        self.count = n if self.rows is None else int(self.rows.size)
        self.smoothing = smoothing
        self.causal = is_causal(result)
        self.keys = np.stack([kinds[k] for k in self._KEYS], axis=-1).astype(np.float32)  # (n, 4)
        self.sep_rows = kinds["sep"]  # (n,)
        shape = (n_layers, n_heads)
        self.totals = np.zeros((*shape, len(self._KEYS)))
        self.sep_sep = np.zeros(shape)
        self.offsets = {name: np.zeros(shape) for name in ("self", "prev", "next")}
        self.entropy = np.zeros(shape)
        self.entropy_cls = np.full(shape, np.nan)
        self.entropy_last = np.full(shape, np.nan)

    def runs(self) -> list[tuple[int, int]]:
        """The contiguous runs ``(start, stop)`` of the rows measured (every row: one run)."""
        if self.rows is None:
            return [(0, self.n)] if self.n else []
        cuts = np.flatnonzero(np.diff(self.rows) != 1) + 1
        return [(int(r[0]), int(r[-1]) + 1) for r in np.split(self.rows, cuts) if r.size]

    def add(self, layer: int, start: int, stop: int, block: np.ndarray) -> None:
        """Add rows ``start..stop`` of ``layer``: ``block`` (head, rows, key)."""
        per_row = np.matmul(block, self.keys)  # (H, r, 4): mass each row puts on each kind
        self.totals[layer] += per_row.sum(-2, dtype=np.float64)
        sep = self.sep_rows[start:stop]
        self.sep_sep[layer] += per_row[..., sep, 1].sum(-1, dtype=np.float64)
        rows = np.arange(start, stop)
        for name, offset in (("self", 0), ("prev", -1), ("next", 1)):
            keys = rows + offset
            ok = (keys >= 0) & (keys < block.shape[-1])
            self.offsets[name][layer] += block[:, np.flatnonzero(ok), keys[ok]].sum(-1, dtype=np.float64)
        h = row_entropy(block, self.smoothing, visible_keys(self.causal, start, stop, block.shape[-1]))  # (H, r)
        self.entropy[layer] += h.sum(-1)
        if start == 0 and stop > 0:
            self.entropy_cls[layer] = h[:, 0]
        if stop == self.n and stop > start:
            self.entropy_last[layer] = h[:, -1]

    def finish(self) -> dict[str, np.ndarray]:
        """Every statistic of :data:`STATISTICS`, each (L, H)."""
        n = max(self.count, 1)
        out = {name: self.totals[..., i] / n for i, name in enumerate(self._KEYS)}
        n_sep = int(self.sep_rows.sum() if self.rows is None else self.sep_rows[self.rows].sum())
        nan = np.full(self.sep_sep.shape, np.nan)
        out["sep_sep"] = self.sep_sep / n_sep if n_sep else nan
        rest = self.totals[..., 1] - self.sep_sep
        out["rest_sep"] = rest / (self.count - n_sep) if self.count - n_sep else nan
        for name, total in self.offsets.items():
            out[name] = total / n
        out["entropy"] = self.entropy / n
        out["entropy_cls"] = self.entropy_cls
        out["entropy_last"] = self.entropy_last
        if self.rows is None or not self.causal:
            uniform = float(uniform_entropy(self.n, causal=self.causal))
        else:  # the mean over the selected rows of ln(i + 1)
            uniform = float(np.log(self.rows + 1.0).mean())
        out["entropy_uniform"] = np.full(self.entropy.shape, uniform)
        return out  # the order of surface_stats_batch


def _check_rows(rows: Sequence[int], n: int) -> np.ndarray:
    """Query rows as a sorted int array: a non-empty list of distinct integers in ``0..n-1``."""
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__len__"):
        raise TypeError(f"rows must be a list of query positions, got {type(rows).__name__} {rows!r}")
    if not len(rows):
        raise ValueError("rows is empty: give one or more query positions, or None for every row")
    for r in rows:
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, np.integer)):
            raise TypeError(f"a query row must be an integer, got {type(r).__name__} {r!r}")
        if not 0 <= int(r) < n:
            raise ValueError(f"query row {int(r)} is out of range: there are {n} query rows (0..{n - 1})")
    out = np.array(sorted(int(r) for r in rows), dtype=np.int64)
    if np.any(np.diff(out) == 0):
        raise ValueError("rows repeats a position: give each query row once")
    return out


def stats_to_frame(stats: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Tidy DataFrame (columns layer, head, statistic, value) from a dict of (L, H) arrays; layers and heads 0-based.

    Examples
    --------
    >>> stats_to_frame({"cls": np.array([[0.1, 0.2]])}).shape
    (2, 4)
    """
    import pandas as pd

    frames = []
    for name, values in stats.items():
        v = np.asarray(values, dtype=np.float64)
        layer, head = np.meshgrid(np.arange(v.shape[0]), np.arange(v.shape[1]), indexing="ij")
        frames.append(pd.DataFrame({"layer": layer.ravel(), "head": head.ravel(), "statistic": name,
                                    "value": v.ravel()}))
    return pd.concat(frames, ignore_index=True)
