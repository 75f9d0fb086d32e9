"""What the compare view and its static twin draw for one head: both maps whole (unaligned tokens marked), the
signed difference B − A over the aligned tokens, its symmetric colour scale, and the per-head summaries.

Pure numpy over an :class:`~attnwidgets.analysis.compare.AttentionComparison`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.compare import AttentionComparison, compare_attention
from ..result import AttentionResult
from .checks import check_head, check_layer
from .display import is_causal, mask_future
from .labels import axis_tokens

__all__ = ["COMPARE_MAX_TOKENS", "COMPARE_SHOW", "CompareHead", "compare_head", "compare_labels", "make_comparison"]

#: Most tokens a side the compare view draws (two whole maps travel for every head shown).
COMPARE_MAX_TOKENS = 1024

#: What the compare view shows (its ``show``): both maps side by side, or their signed difference.
COMPARE_SHOW = ("side", "diff")


def make_comparison(a: Any, b: Any, kind: str = "self", *, words: bool = False,
                    who: str = "AttentionCompare") -> AttentionComparison:
    """Check the two results and compare them (:func:`~attnwidgets.analysis.compare.compare_attention`); the
    view and its twin call this, so their errors read the same.

    Examples
    --------
    >>> import numpy as np
    >>> r = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"])
    >>> make_comparison(r, "b")
    Traceback (most recent call last):
    ...
    TypeError: AttentionCompare compares two AttentionResults (from attnwidgets.run), got AttentionResult and str
    """
    if not (isinstance(a, AttentionResult) and isinstance(b, AttentionResult)):
        raise TypeError(f"{who} compares two AttentionResults (from attnwidgets.run), got {type(a).__name__} and "
                        f"{type(b).__name__}")
    for side, r in (("A", a), ("B", b)):
        n = max(r.attention_shape(kind)[2:])  # type: ignore[arg-type]
        if n > COMPARE_MAX_TOKENS:
            raise ValueError(f"{who} draws up to {COMPARE_MAX_TOKENS} tokens a side; {side} has {n}: compare a "
                             "shorter passage (aw.analysis.compare_attention gives the numbers at any length within "
                             "the dense budget)")
    return compare_attention(a, b, kind, words=bool(words))  # type: ignore[arg-type]


@dataclass(frozen=True)
class CompareHead:
    """One head as the compare view draws it.

    Attributes
    ----------
    a, b : np.ndarray
        (n_a, n_a) and (n_b, n_b) float32: each result's whole map (NaN where a causal head cannot look).
    diff : np.ndarray
        (m_q, m_k) float32: B − A at the aligned queries and keys (NaN where causal).
    vmax : float
        Top of both maps' colour scale (the larger of their maxima).
    dmax : float
        Half-width of the symmetric difference scale, [-dmax, dmax]; 0 when A and B agree everywhere.
    """

    a: np.ndarray
    b: np.ndarray
    diff: np.ndarray
    vmax: float
    dmax: float


def compare_head(c: AttentionComparison, layer: int, head: int) -> CompareHead:
    """The maps of one head (``head=-1``: the mean of the layer) for drawing.

    Examples
    --------
    >>> import numpy as np
    >>> a = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"])
    >>> v = compare_head(make_comparison(a, a), 0, 0)
    >>> v.dmax, v.diff.tolist()
    (0.0, [[0.0, 0.0], [0.0, 0.0]])
    """
    L, H = c.shape
    check_layer(layer, L)
    check_head(head, H)
    kind = c.kind
    ma = np.asarray(c.a.head(layer, head, kind), np.float32)
    mb = np.asarray(c.b.head(layer, head, kind), np.float32)
    pa, pb = c.pair(layer, head)
    diff = (pb - pa).astype(np.float32)
    if is_causal(c.a, kind):
        ma = mask_future(ma)
        diff = mask_future(diff)  # the aligned positions keep their order, so the future stays the future
    if is_causal(c.b, kind):
        mb = mask_future(mb)
    vmax = float(max(np.nanmax(ma, initial=0.0), np.nanmax(mb, initial=0.0)))
    dmax = float(np.nanmax(np.abs(diff), initial=0.0))
    return CompareHead(ma, mb, diff, vmax if vmax > 0 else 1.0, dmax)


def compare_labels(c: AttentionComparison) -> dict[str, Any]:
    """Token labels and which are aligned: ``a``/``b`` as [query labels, key labels], ``a_matched``/``b_matched``
    as [query flags, key flags], and ``aligned`` the [query, key] labels of the difference (A's text, "A/B" where
    the two differ beyond case and piece markers)."""
    qa, ka = axis_tokens(c.a, c.kind)
    qb, kb = axis_tokens(c.b, c.kind)

    def joined(ta: list[str], tb: list[str], ia: np.ndarray, ib: np.ndarray) -> list[str]:
        return [ta[i] if ta[i].strip() == tb[j].strip() else f"{ta[i].strip()}/{tb[j].strip()}"
                for i, j in zip(ia.tolist(), ib.tolist())]

    q, k = c.queries, c.keys
    return {
        "a": [qa, ka],
        "b": [qb, kb],
        "a_matched": [q.matched_a.tolist(), k.matched_a.tolist()],
        "b_matched": [q.matched_b.tolist(), k.matched_b.tolist()],
        "aligned": [joined(qa, qb, q.a_index, q.b_index), joined(ka, kb, k.a_index, k.b_index)],
    }

