"""Compare the attention of two results (before and after fine-tuning, clean and ablated, two inputs). numpy only.

:func:`compare_attention` aligns the two token lists by text (:func:`align_tokens`, difflib's SequenceMatcher) and
compares every head on the aligned queries and keys: the pair of maps, the signed difference B − A, and per head the
Jensen–Shannon divergence of the renormalised rows and the cosine similarity (:class:`AttentionComparison`).

Kovaleva et al. 2019 measured how much fine-tuning changed each head by the cosine similarity between the flattened
attention maps of the pre-trained and the fine-tuned model on the same input, averaged over inputs.

Examples
--------
>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> a = AttentionResult.from_arrays(np.eye(3, dtype=np.float32)[None, None], ["[CLS]", "hi", "[SEP]"])
>>> b = a.with_attention(np.full((1, 1, 3, 3), 1 / 3, np.float32))
>>> round(head_similarity(a, a).item(), 3), round(head_similarity(a, b).item(), 3)
(1.0, 0.577)
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..attention_stack import AttentionTooLargeError, dense_budget, format_bytes
from ..html_repr import repr_html
from ..result import AttentionKind, AttentionResult

if TYPE_CHECKING:  # pandas loads when a table is asked for: importing the views stays light
    import pandas as pd

__all__ = ["SUMMARIES", "AttentionComparison", "TokenAlignment", "align_tokens", "compare_attention",
           "head_similarity", "mean_head_similarity", "similarity_by_layer", "token_key"]


def head_similarity(a: AttentionResult, b: AttentionResult, kind: AttentionKind = "self",
                    measure: str = "cosine") -> np.ndarray:
    """Per-head similarity of two results' maps over the same tokens, (L, H) float64.

    Parameters
    ----------
    a, b : AttentionResult
        Same tokens and the same number of layers and heads.
    kind : {"self", "encoder", "decoder", "cross"}
    measure : {"cosine", "l1"}
        ``"cosine"``: cosine similarity of the flattened (n × n) maps, as Kovaleva et al.; ``"l1"``: 1 − half the
        mean over rows of the L1 distance between rows (1 = identical, 0 = disjoint rows).
    """
    if a.tokens != b.tokens:
        raise ValueError("the two results have different tokens; compare results of the same text (and tokenizer)")
    A, _, _ = a.attention_of(kind)
    B, _, _ = b.attention_of(kind)
    if A.shape != B.shape:
        raise ValueError(f"attention shapes differ: {A.shape} vs {B.shape}; compare models of the same shape")
    A = A.astype(np.float64)
    B = B.astype(np.float64)
    if measure == "cosine":
        fa, fb = A.reshape(*A.shape[:2], -1), B.reshape(*B.shape[:2], -1)
        num = (fa * fb).sum(-1)
        den = np.linalg.norm(fa, axis=-1) * np.linalg.norm(fb, axis=-1)
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    if measure == "l1":
        return 1.0 - 0.5 * np.abs(A - B).sum(-1).mean(-1)
    raise ValueError(f"measure must be 'cosine' or 'l1', got {measure!r}")


def mean_head_similarity(before: Sequence[AttentionResult], after: Sequence[AttentionResult],
                         kind: AttentionKind = "self", measure: str = "cosine") -> np.ndarray:
    """(L, H) head similarity averaged over pairs of results (``before[i]`` with ``after[i]``)."""
    if len(before) != len(after) or not before:
        raise ValueError(f"need two equally long, non-empty lists of results, got {len(before)} and {len(after)}")
    return np.mean([head_similarity(a, b, kind, measure) for a, b in zip(before, after)], axis=0)


def similarity_by_layer(similarity: np.ndarray) -> pd.DataFrame:
    """Per-layer summary of an (L, H) similarity: ``layer, mean, min, max, least_similar_head``."""
    s = np.asarray(similarity, dtype=np.float64)
    import pandas as pd

    return pd.DataFrame({
        "layer": np.arange(s.shape[0]),
        "mean": s.mean(1),
        "min": s.min(1),
        "max": s.max(1),
        "least_similar_head": s.argmin(1),
    })


# -- comparing two results whose tokens may differ ----------------------------------------------------------------

#: Markers a tokenizer puts on a piece that a text comparison ignores (WordPiece's continuation, BPE's space).
_PIECE_MARKS = ("##", "Ġ", "▁")


def token_key(token: str) -> str:
    """What a token is compared by when two token lists are aligned: its text without surrounding whitespace and
    without a piece marker ("##", "Ġ", "▁"), case-folded (an uncased and a cased tokenizer still meet).

    Examples
    --------
    >>> token_key(" The"), token_key("##s"), token_key("[CLS]")
    ('the', 's', '[cls]')
    """
    text = token.strip()
    for mark in _PIECE_MARKS:
        if text.startswith(mark) and len(text) > len(mark):
            text = text[len(mark):]
    return text.casefold()


@dataclass(frozen=True)
class TokenAlignment:
    """Which position of A stands for which of B: ``a_index[i]`` ↔ ``b_index[i]``, in order.

    Attributes
    ----------
    a_index, b_index : np.ndarray
        (m,) int64 positions in A and in B of the m matched tokens, both increasing.
    n_a, n_b : int
        Tokens of A and of B.
    method : str
        How the match was made (a sentence a caption can show).
    """

    a_index: np.ndarray
    b_index: np.ndarray
    n_a: int
    n_b: int
    method: str = "difflib.SequenceMatcher over token texts (case-folded, piece markers removed)"

    def __len__(self) -> int:
        return int(self.a_index.size)

    @property
    def matched_a(self) -> np.ndarray:
        """(n_a,) bool: True where A's token has a partner in B."""
        out = np.zeros(self.n_a, bool)
        out[self.a_index] = True
        return out

    @property
    def matched_b(self) -> np.ndarray:
        """(n_b,) bool: True where B's token has a partner in A."""
        out = np.zeros(self.n_b, bool)
        out[self.b_index] = True
        return out

    @property
    def identity(self) -> bool:
        """Every token of each side matched, in the same places (clean vs ablated, the same text twice)."""
        return self.n_a == self.n_b == len(self)


def align_tokens(a_tokens: Sequence[str], b_tokens: Sequence[str]) -> TokenAlignment:
    """Align two token lists by text: the matching blocks of :class:`difflib.SequenceMatcher` (Ratcliff/Obershelp,
    the longest common runs first; ``autojunk=False``) over :func:`token_key` of each token.

    Tokens outside a matching run stay unaligned, whether they were changed ("cat" vs "cats"), inserted or deleted.
    Two results of different tokenizers align where their pieces happen to agree (whole words mostly).

    Examples
    --------
    >>> al = align_tokens(["[CLS]", "The", "cat", "sat", "[SEP]"], ["[CLS]", "The", "cats", "sat", "[SEP]"])
    >>> al.a_index.tolist(), al.b_index.tolist(), al.matched_a.tolist()
    ([0, 1, 3, 4], [0, 1, 3, 4], [True, True, False, True, True])
    """
    ka = [token_key(t) for t in a_tokens]
    kb = [token_key(t) for t in b_tokens]
    blocks = difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_matching_blocks()
    ai = [blk.a + i for blk in blocks for i in range(blk.size)]
    bi = [blk.b + i for blk in blocks for i in range(blk.size)]
    return TokenAlignment(np.asarray(ai, np.int64), np.asarray(bi, np.int64), len(ka), len(kb))


def _axis_tokens(result: AttentionResult, kind: AttentionKind) -> tuple[list[str], list[str]]:
    result.stack(kind)  # the kind's own error for a kind the result does not have
    if kind in ("self", "encoder"):
        return list(result.tokens), list(result.tokens)
    target = list(result.target_tokens or [])
    return target, (target if kind == "decoder" else list(result.tokens))


def _described(result: AttentionResult) -> str:
    what = f"model {result.model.name!r}"
    return what + (" (ablated)" if result.ablation is not None else "")


def _aligned_maps(result: AttentionResult, kind: AttentionKind, q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """(L, H, len(q), len(k)) float32: the result's weights at aligned queries q and keys k, read a block of rows
    at a time (a long input's attention is never built whole)."""
    L, H, _T, _S = result.attention_shape(kind)
    out = np.zeros((L, H, q.size, k.size), np.float32)
    for layer, start, stop, block in result.iter_blocks(kind):
        inside = (q >= start) & (q < stop)
        if inside.any():
            out[layer][:, inside] = block[:, q[inside] - start][:, :, k]
    return out


def _js_bits(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen–Shannon divergence in bits (0..1) between the rows of p and q along the last axis, each row
    renormalised first; NaN where either row has no mass."""
    p = p.astype(np.float64)
    q = q.astype(np.float64)
    sp, sq = p.sum(-1, keepdims=True), q.sum(-1, keepdims=True)
    ok = (sp > 0) & (sq > 0)
    p = np.where(ok, p / np.where(ok, sp, 1.0), 0.0)
    q = np.where(ok, q / np.where(ok, sq, 1.0), 0.0)
    m = 0.5 * (p + q)

    def kl(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, x * np.log2(np.where(x > 0, x, 1.0) / np.where(m > 0, m, 1.0)), 0.0).sum(-1)

    js = np.maximum(0.5 * (kl(p) + kl(q)), 0.0)
    return np.where(ok[..., 0], js, np.nan)


@dataclass(frozen=True, eq=False)
class AttentionComparison:
    """Two results' attention over the tokens they share, and how far apart each head is.

    Made by :func:`compare_attention`. ``a_maps``/``b_maps`` hold every head's weights at the aligned queries and
    keys (not renormalised); ``diff`` is B − A there. The per-head summaries are over the aligned query rows:

    - ``js``: Jensen–Shannon divergence in bits (0 = the same, 1 = disjoint), each aligned row renormalised over
      the aligned keys first, averaged over the rows where both have mass (NaN when none has: a zeroed head);
    - ``cosine``: cosine similarity of the flattened aligned maps (Kovaleva et al.; 0 when either is all zero);
    - ``mass_a``/``mass_b``: the mean share of a row's attention that falls on aligned keys (1 when nothing was
      left out; the renormalisation above rescales by it).
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    a: AttentionResult
    b: AttentionResult
    kind: AttentionKind
    queries: TokenAlignment
    keys: TokenAlignment
    a_maps: np.ndarray  # [layer, head, aligned query, aligned key] float32
    b_maps: np.ndarray  # [layer, head, aligned query, aligned key] float32

    @property
    def shape(self) -> tuple[int, int]:
        """(layers, heads)."""
        return int(self.a_maps.shape[0]), int(self.a_maps.shape[1])

    @property
    def diff(self) -> np.ndarray:
        """[layer, head, aligned query, aligned key] float32: B − A."""
        return self.b_maps - self.a_maps

    def pair(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        """(A, B) aligned maps of one head (``head=-1``: the mean over the layer's heads), float32."""
        L, H = self.shape
        if not (0 <= layer < L and -1 <= head < H):
            raise IndexError(f"layer {layer}, head {head} is outside the {L} layers x {H} heads")
        if head < 0:
            return self.a_maps[layer].mean(0), self.b_maps[layer].mean(0)
        return self.a_maps[layer, head], self.b_maps[layer, head]

    @property
    def js(self) -> np.ndarray:
        """[layer, head] float64: mean Jensen–Shannon divergence (bits) over the aligned rows (see the class)."""
        rows = _js_bits(self.a_maps, self.b_maps)  # (L, H, mq)
        finite = np.isfinite(rows)
        total = np.where(finite, rows, 0.0).sum(-1)
        count = finite.sum(-1)
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)

    @property
    def cosine(self) -> np.ndarray:
        """[layer, head] float64: cosine similarity of the flattened aligned maps."""
        fa = self.a_maps.reshape(*self.shape, -1).astype(np.float64)
        fb = self.b_maps.reshape(*self.shape, -1).astype(np.float64)
        den = np.linalg.norm(fa, axis=-1) * np.linalg.norm(fb, axis=-1)
        return np.where(den > 0, (fa * fb).sum(-1) / np.where(den > 0, den, 1.0), 0.0)

    @property
    def mass_a(self) -> np.ndarray:
        """[layer, head]: mean share of A's aligned rows on the aligned keys."""
        return self._mass(self.a_maps)

    @property
    def mass_b(self) -> np.ndarray:
        """[layer, head]: mean share of B's aligned rows on the aligned keys."""
        return self._mass(self.b_maps)

    @staticmethod
    def _mass(maps: np.ndarray) -> np.ndarray:
        if maps.shape[2] == 0:
            return np.zeros(maps.shape[:2])
        return maps.astype(np.float64).sum(-1).mean(-1)

    def summary(self, measure: str) -> np.ndarray:
        """[layer, head] of ``"js"`` or ``"cosine"``."""
        if measure not in SUMMARIES:
            raise ValueError(f"summary must be one of {list(SUMMARIES)}, got {measure!r}")
        return np.asarray(getattr(self, measure), dtype=np.float64)

    def frame(self) -> pd.DataFrame:
        """One row per head: ``layer, head, js, cosine, mass_a, mass_b``."""
        L, H = self.shape
        layer, head = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
        import pandas as pd

        return pd.DataFrame({"layer": layer.ravel(), "head": head.ravel(), "js": self.js.ravel(),
                             "cosine": self.cosine.ravel(), "mass_a": self.mass_a.ravel(),
                             "mass_b": self.mass_b.ravel()})


#: The per-head summaries a comparison offers, and what each is called on screen.
SUMMARIES: dict[str, str] = {"js": "Jensen–Shannon divergence (bits)", "cosine": "cosine similarity"}


def compare_attention(a: AttentionResult, b: AttentionResult, kind: AttentionKind = "self", *,
                      words: bool = False) -> AttentionComparison:
    """Compare two results' attention over the tokens they share (:func:`align_tokens`).

    Three uses, one function: two inputs on one model (different lengths: "The cat sat" vs "The cats sat" compare
    at The, sat and the special tokens), two models on one input (base vs fine-tuned; different tokenizers meet
    where their pieces agree, or with ``words=True`` where their words agree), and a clean vs an ablated run (the
    same tokens: every position aligned).

    With ``words=True`` both results are first made word level (:func:`~attnwidgets.analysis.words.word_level`: to
    a word, the sum over its pieces; from a word, the mean), so two tokenizers that cut "cat" differently ("cat" vs
    " c" + "at") still meet at "cat". Self-attention (or an encoder's) only.

    Raises
    ------
    ValueError
        When the two have different numbers of layers or heads (naming both), or when no token aligns.
    AttentionTooLargeError
        When the aligned maps of both would pass :func:`~attnwidgets.attention_stack.dense_budget`.

    Examples
    --------
    >>> import numpy as np
    >>> a = AttentionResult.from_arrays(np.eye(3, dtype=np.float32), ["The", "cat", "sat"])
    >>> b = AttentionResult.from_arrays(np.full((3, 3), 1 / 3, np.float32), ["The", "cats", "sat"])
    >>> c = compare_attention(a, b)
    >>> c.queries.a_index.tolist(), [round(float(v), 3) for v in c.diff[0, 0].ravel()]
    ([0, 2], [-0.667, 0.333, 0.333, -0.667])
    >>> round(float(c.js[0, 0]), 4), round(float(c.cosine[0, 0]), 4)
    (0.3113, 0.7071)
    """
    if words:
        from .words import word_level

        if kind not in ("self", "encoder"):
            raise ValueError(f"words=True compares self-attention (an encoder's); {kind!r} attention has no words")
        a, b = word_level(a), word_level(b)
    La, Ha = a.attention_shape(kind)[:2]
    Lb, Hb = b.attention_shape(kind)[:2]
    if (La, Ha) != (Lb, Hb):
        raise ValueError(f"cannot compare {kind} attention of {La} layers x {Ha} heads (A: {_described(a)}) with "
                         f"{Lb} layers x {Hb} heads (B: {_described(b)}); compare models of the same shape")
    qa, ka = _axis_tokens(a, kind)
    qb, kb = _axis_tokens(b, kind)
    queries = align_tokens(qa, qb)
    keys = queries if (qa, qb) == (ka, kb) else align_tokens(ka, kb)
    if not len(queries) or not len(keys):
        raise ValueError(f"no token of A ({_described(a)}: {_preview(qa)}) matches a token of B ({_described(b)}: "
                         f"{_preview(qb)}); compare inputs that share words, or models whose tokenizers share pieces"
                         + ("" if words else " (words=True aligns whole words)"))
    need = 2 * La * Ha * len(queries) * len(keys) * 4
    if need > dense_budget():
        raise AttentionTooLargeError(
            f"comparing {len(queries)} x {len(keys)} aligned tokens over {La} x {Ha} heads needs {format_bytes(need)}, "
            f"more than the dense budget {format_bytes(dense_budget())}; compare a shorter window of the inputs or "
            "raise aw.runner.set_dense_budget()")
    return AttentionComparison(
        a, b, kind, queries, keys,
        _aligned_maps(a, kind, queries.a_index, keys.a_index),
        _aligned_maps(b, kind, queries.b_index, keys.b_index),
    )


def _preview(tokens: Sequence[str], n: int = 6) -> str:
    shown = " ".join(repr(t) for t in tokens[:n])
    return shown + (" ..." if len(tokens) > n else "")
