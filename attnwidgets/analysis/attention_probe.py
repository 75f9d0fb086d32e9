"""Clark et al.'s attention-based probing classifier (2019, section 5): a dependency parser that reads only attention.

Every head's word-level attention map is a fixed feature. For a dependent j, the probe gives each candidate head a
score and takes a softmax over the candidates (every other word of the sentence, and the root):

- **attention only**: ``s(i, j) = Σ_k w_k α^k_ij + u_k α^k_ji``, with α^k_ij the word-level attention *from* word i
  *to* word j in head k (so ``w`` reads the candidate head's row, ``u`` the dependent's row);
- **attention + words**: each weight becomes a linear function of the two words' vectors,
  ``(w_k + W_k·(v_i ⊕ v_j)) α^k_ij + (u_k + U_k·(v_i ⊕ v_j)) α^k_ji``. The paper uses GloVe vectors and writes
  ``W_k·(v_i ⊕ v_j)`` alone; we keep the constant ``w_k`` beside it (the linear map's bias), so that the
  attention-only probe is the special case W = U = 0. The vectors are whatever the caller hands in
  (:func:`attnwidgets.studies.attention_probe` uses the model's own input embeddings averaged over a word's pieces, in
  place of GloVe), reduced to ``dims`` principal components of the training words and scaled to unit variance.

The root is not a word, so it has no attention of its own; the paper does not say how it was scored. Here the root's
score for dependent j is ``b + Σ_k r_k σ^k_j`` (plus ``c·v_j`` with words), where σ^k_j is the share of word j's row
that goes to the special tokens ([CLS], [SEP]) in head k. Trained with cross-entropy on the gold heads plus an L2
penalty (``l2``, on every weight but the root bias), by L-BFGS (``scipy.optimize``), from zeros: deterministic.
Evaluated by UAS, the share of dependents whose highest-scoring candidate is their gold head, leaving punctuation
out (UPOS ``PUNCT``) as the paper's Penn Treebank evaluation does; ``punct=True`` counts it. Each word's head is
chosen on its own (no tree constraint), as in the paper.

Baselines: right-branching (every word's head is the next word; the last word's is the root) and left-branching (the
previous word; the first word's is the root), scored on the same words.

Word-level attention is made as in :mod:`attnwidgets.analysis.dependency`: pieces are matched to the treebank's
words by characters (:func:`~attnwidgets.analysis.dependency.piece_word_matrix`); attention to a word is the sum
over its pieces, from a word the mean of its pieces' rows (``rows="first"``: the first piece's, as Clark et al.'s
code does). A word with no pieces (truncated away) is neither scored nor a candidate.

Examples
--------
A head whose rows point each word at its gold head is all the probe needs:

>>> heads = np.array([1, -1, 1])                      # "the cat sat": the -> cat, cat = root, sat -> cat
>>> alpha = np.zeros((1, 2, 3, 3)); alpha[0, 0, [0, 2], [1, 1]] = 1   # head 0: each row points at the word's head
>>> special = np.zeros((1, 2, 3)); special[0, 0, 1] = 1                # ... and the root's row at [CLS]
>>> alpha[0, 1] = 1 / 3                                                # head 1: uniform
>>> data = ProbeSentence(alpha, special, heads, np.zeros(3, bool))
>>> probe = fit_attention_probe([data] * 4)
>>> probe.uas([data])
1.0
>>> d, layer, head = np.unravel_index(probe.weights.argmax(), probe.weights.shape)
>>> DIRECTIONS[d], int(layer), int(head)
('dependent->head', 0, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..result import AttentionResult
from .conllu import Sentence
from .dependency import sentence_word_matrices
from .words import RowMode

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DIRECTIONS", "AttentionProbe", "ProbeSentence", "branching_heads", "fit_attention_probe",
           "probe_sentence", "score_heads", "single_head_counts", "split_sentences", "weight_frame"]

DIRECTIONS = ("head->dependent", "dependent->head")  # w reads α_ij (candidate head's row), u reads α_ji


@dataclass(frozen=True)
class ProbeSentence:
    """The probe's view of one sentence: word-level attention, attention to the special tokens, gold heads.

    Attributes
    ----------
    attention : np.ndarray
        (L, H, m, m) word-level attention between the sentence's words (row: from, column: to).
    special : np.ndarray
        (L, H, m) share of each word's row that goes to the special tokens.
    heads : np.ndarray
        (m,) gold head of each word, 0-based; -1 for the root.
    punct : np.ndarray
        (m,) True for punctuation (left out of UAS unless ``punct=True``).
    present : np.ndarray | None
        (m,) False for words with no pieces (neither scored nor candidates); None: every word.
    vectors : np.ndarray | None
        (m, d) word vectors for the attention + words probe.
    """

    attention: np.ndarray
    special: np.ndarray
    heads: np.ndarray
    punct: np.ndarray
    present: np.ndarray | None = None
    vectors: np.ndarray | None = None

    def __post_init__(self) -> None:
        a = np.asarray(self.attention)
        if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
            raise ValueError(f"attention must be (layers, heads, words, words), got shape {a.shape}")
        m = a.shape[-1]
        if np.shape(self.special) != a.shape[:3]:
            raise ValueError(f"special must be (layers, heads, words) = {a.shape[:3]}, got {np.shape(self.special)}")
        heads = np.asarray(self.heads)
        if heads.shape != (m,) or heads.dtype.kind not in "iu" or (heads < -1).any() or (heads >= m).any():
            raise ValueError(f"heads must be {m} word indices (0..{m - 1}, -1 for the root), got {heads.tolist()}")
        if np.shape(self.punct) != (m,) or (self.present is not None and np.shape(self.present) != (m,)):
            raise ValueError(f"punct and present must hold one flag per word ({m})")
        if self.vectors is not None and (np.ndim(self.vectors) != 2 or len(self.vectors) != m):
            raise ValueError(f"vectors must be (words, dim) with {m} words, got shape {np.shape(self.vectors)}")

    @property
    def n_words(self) -> int:
        return int(self.attention.shape[-1])

    @property
    def mask(self) -> np.ndarray:
        """(m,) words that are present."""
        return np.ones(self.n_words, bool) if self.present is None else np.asarray(self.present, bool)


def probe_sentence(result: AttentionResult, sentence: Sentence, rows: RowMode = "mean",
                   vectors: np.ndarray | None = None) -> ProbeSentence:
    """The :class:`ProbeSentence` of a treebank sentence from the model's result on ``sentence.text``.

    ``vectors`` (n_pieces, d), when given, are averaged over each word's pieces into the word vectors. The word-level
    attention is summed in float64 and kept in float32, the precision the model's attention came in (and the
    probe's features': half the memory of a treebank's sentences).
    """
    r, c, present = sentence_word_matrices(sentence, result.tokens, result.special_mask, rows)
    from_words = np.matmul(r, np.asarray(result.attention, dtype=np.float64))  # (L, H, m, n)
    special = from_words[..., np.asarray(result.special_mask, bool)].sum(-1)
    words = np.matmul(from_words, c)
    word_vectors = None
    if vectors is not None:
        word_vectors = (c / np.maximum(c.sum(0), 1)).T @ np.asarray(vectors, dtype=np.float64)
    upos = sentence.upos or [""] * len(sentence.words)
    punct = np.array([u == "PUNCT" or (not u and rel == "punct") for u, rel in zip(upos, sentence.relations)])
    heads = np.asarray(sentence.heads, dtype=np.int64)
    return ProbeSentence(words.astype(np.float32), special.astype(np.float32), heads, punct, present, word_vectors)


def split_sentences(n: int, test_share: float = 0.25, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) indices of ``n`` sentences: a fixed shuffle by ``seed``, the last ``test_share`` held out.

    >>> train, test = split_sentences(10, 0.3, seed=0)
    >>> len(train), len(test), sorted([*train, *test]) == list(range(10))
    (7, 3, True)
    """
    if not 0 < test_share < 1:
        raise ValueError(f"test_share must be between 0 and 1, got {test_share!r}")
    if n < 2:
        raise ValueError(f"a train/test split needs at least 2 sentences, got {n}: give the probe a treebank with "
                         "more sentences")
    order = np.random.default_rng(seed).permutation(n)
    n_test = min(n - 1, max(1, round(n * test_share)))
    return np.sort(order[:n - n_test]), np.sort(order[n - n_test:])


def branching_heads(n_words: int, direction: Literal["right", "left"] = "right") -> np.ndarray:
    """(m,) heads of the branching baseline: the next word (the last word: root, -1), or the previous one.

    >>> branching_heads(3).tolist(), branching_heads(3, "left").tolist()
    ([1, 2, -1], [-1, 0, 1])
    """
    idx = np.arange(n_words)
    if direction == "right":
        return np.where(idx + 1 < n_words, idx + 1, -1)
    if direction == "left":
        return idx - 1
    raise ValueError(f"direction must be 'right' or 'left', got {direction!r}")


def score_heads(predicted: Sequence[np.ndarray], sentences: Sequence[ProbeSentence], punct: bool = False
                ) -> tuple[int, int]:
    """(right, scored): dependents whose predicted head is the gold head, and dependents scored."""
    right = total = 0
    for pred, s in zip(predicted, sentences):
        keep = s.mask & (punct | ~np.asarray(s.punct, bool))
        keep &= (s.heads < 0) | s.mask[np.maximum(s.heads, 0)]  # a gold head with no pieces cannot be predicted
        right += int((np.asarray(pred)[keep] == s.heads[keep]).sum())
        total += int(keep.sum())
    return right, total


def single_head_counts(sentences: Sequence[ProbeSentence], punct: bool = False) -> tuple[np.ndarray, int]:
    """((L, H) right, scored) of every head read as a parser on its own: each word's head is the word its row attends
    to most (itself and words with no pieces left out; the special tokens are not words, so a single head never
    predicts the root and the root word counts as a miss), scored on the dependents :func:`score_heads` scores.

    The best of them is the paper's "best single head" row (Clark et al. 2019, Table 1, "All"), here with the root's
    dependent counted as the probe's and the baselines' are, so that the rows can be read against each other.

    "the cat sat" (the -> cat, cat = root, sat -> cat): head 0 points each word at its head, head 1 at the next word
    (the last word at the first):

    >>> a = np.zeros((1, 2, 3, 3)); a[0, 0, [0, 2], [1, 1]] = 1; a[0, 1, [0, 1, 2], [1, 2, 0]] = 1
    >>> s = ProbeSentence(a, np.zeros((1, 2, 3)), np.array([1, -1, 1]), np.zeros(3, bool))
    >>> right, scored = single_head_counts([s])
    >>> right.tolist(), scored                      # the root word "cat" is a miss for both
    ([[2, 1]], 3)
    """
    if not sentences:
        raise ValueError("no sentences to score the heads on")
    right = np.zeros(sentences[0].attention.shape[:2], np.int64)
    total = 0
    for b, s in enumerate(sentences):
        if s.attention.shape[:2] != right.shape:
            raise ValueError(f"sentence {b} has attention of {s.attention.shape[:2]} (layers, heads), the first "
                             f"{right.shape}: every sentence must come from the same model")
        m, ok = s.n_words, s.mask
        rows = np.array(s.attention, np.float64)  # (L, H, m, m), a copy: one sentence at a time
        rows[..., np.arange(m), np.arange(m)] = -np.inf
        rows[..., ~ok] = -np.inf
        pred = rows.argmax(-1)  # (L, H, m)
        keep = ok & (punct | ~np.asarray(s.punct, bool))
        keep &= (s.heads < 0) | ok[np.maximum(s.heads, 0)]
        right += (pred[..., keep] == s.heads[keep]).sum(-1)
        total += int(keep.sum())
    return right, total


# ---------------------------------------------------------------------------------------------------- the model

#: the rows of the pair table one step of the objective works on at a time: whole sentences, their float64 copy at most
#: this many bytes (a sentence longer than that is a chunk of its own)
CHUNK_BYTES = 16 * 2**20
FEATURE_DTYPES = ("float32", "float64")


@dataclass
class _Params:
    """Flat parameter vector <-> named blocks."""

    k: int
    d: int  # 0: attention only

    def shapes(self) -> dict[str, tuple[int, ...]]:
        out: dict[str, tuple[int, ...]] = {"pair": (2 * self.k,), "root": (self.k,), "bias": (1,)}
        if self.d:
            out |= {"pair_i": (2 * self.k, self.d), "pair_j": (2 * self.k, self.d), "root_j": (self.k, self.d),
                    "word_j": (self.d,)}
        return out

    def size(self) -> int:
        return sum(int(np.prod(s)) for s in self.shapes().values())

    def unpack(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        out, at = {}, 0
        for name, shape in self.shapes().items():
            size = int(np.prod(shape))
            out[name] = theta[at:at + size].reshape(shape)
            at += size
        return out

    def pack(self, parts: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(parts[name], np.float64).ravel() for name in self.shapes()])


@dataclass
class _Packed:
    """Every sentence's word pairs in one table, unpadded: memory linear in Σ m² (see fit_attention_probe).

    Row p is the pair (dependent j, candidate head i) of one sentence; a dependent's m candidates are m consecutive
    rows, starting at ``start[j]``, and a sentence's m² rows are consecutive. N is the number of words, P = Σ m².
    """

    pair: np.ndarray    # (P, K) α^k_ij, in the features' dtype
    flip: np.ndarray    # (P,) the row of the same sentence's pair (dependent i, candidate j): α^k_ji = pair[flip]
    cand: np.ndarray    # (P,) candidate i is a valid head of dependent j (both present, i ≠ j)
    owner: np.ndarray   # (P,) the dependent of each row (a word index, 0..N-1)
    head: np.ndarray    # (P,) the candidate of each row (a word index)
    start: np.ndarray   # (N,) each word's first row as a dependent
    root: np.ndarray    # (N, K) σ^k_j, float64
    root_ok: np.ndarray  # (N,) the root is a candidate (the word is present)
    target: np.ndarray  # (N,) gold: 0 the root, 1 + i word i of the sentence; -1 not a dependent
    offsets: np.ndarray  # (S + 1,) each sentence's first word
    chunks: list[tuple[int, int]]  # row ranges of whole sentences
    vectors: np.ndarray | None  # (N, d) projected word vectors


def _pack(sentences: Sequence[ProbeSentence], project: Any = None, dtype: str = "float32") -> _Packed:
    n_layers, n_heads = sentences[0].attention.shape[:2]
    k = n_layers * n_heads
    sizes = np.array([s.n_words for s in sentences], np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    row_offsets = np.concatenate([[0], np.cumsum(sizes ** 2)])
    n_words, n_rows = int(offsets[-1]), int(row_offsets[-1])
    pair = np.empty((n_rows, k), dtype)
    flip = np.empty(n_rows, np.int64)
    cand = np.empty(n_rows, bool)
    root = np.empty((n_words, k))
    root_ok = np.empty(n_words, bool)
    target = np.empty(n_words, np.int64)
    vectors = None if project is None else np.empty((n_words, project(None)))
    chunks: list[tuple[int, int]] = []
    chunk_rows = max(1, CHUNK_BYTES // (8 * k))
    for b, s in enumerate(sentences):
        if s.attention.shape[:2] != (n_layers, n_heads):
            raise ValueError(f"sentence {b} has attention of {s.attention.shape[:2]} (layers, heads), the first "
                             f"{(n_layers, n_heads)}: every sentence must come from the same model")
        m, w0, r0 = s.n_words, int(offsets[b]), int(row_offsets[b])
        rows = slice(r0, r0 + m * m)
        # row (j, i) of the sentence holds α^k_ij: attention (k, i, j) read as (j, i, k)
        pair[rows] = np.asarray(s.attention).reshape(k, m, m).transpose(2, 1, 0).reshape(m * m, k)
        flip[rows] = r0 + np.arange(m * m).reshape(m, m).T.ravel()
        ok = s.mask
        cand[rows] = (ok[:, None] & ok[None, :] & ~np.eye(m, dtype=bool)).ravel()
        root[w0:w0 + m] = np.asarray(s.special, np.float64).reshape(k, m).T
        root_ok[w0:w0 + m] = ok
        gold = s.heads
        target[w0:w0 + m] = np.where(ok & ((gold < 0) | ok[np.maximum(gold, 0)]), gold + 1, -1)
        if vectors is not None:
            if s.vectors is None:
                raise ValueError(f"sentence {b} has no word vectors: the attention + words probe needs them")
            vectors[w0:w0 + m] = project(s.vectors)
        if chunks and chunks[-1][1] - chunks[-1][0] + m * m <= chunk_rows:
            chunks[-1] = (chunks[-1][0], r0 + m * m)
        else:
            chunks.append((r0, r0 + m * m))
    owner = np.repeat(np.arange(n_words), np.repeat(sizes, sizes))
    start = row_offsets[:-1].repeat(sizes) + (np.arange(n_words) - offsets[:-1].repeat(sizes)) * sizes.repeat(sizes)
    head = offsets[:-1].repeat(sizes)[owner] + (np.arange(n_rows) - start[owner])
    return _Packed(pair, flip, cand, owner, head, start, root, root_ok, target, offsets, chunks, vectors)


def _matrices(p: dict[str, np.ndarray], k: int, d: int) -> np.ndarray:
    """(2, 1 + 2d, K): per direction (w: α_ij, u: α_ji), the constant weights and the maps of v_i and v_j."""
    pair = p["pair"].reshape(2, k)
    if not d:
        return pair[:, None, :]
    return np.concatenate([pair[:, None, :], p["pair_i"].reshape(2, k, d).transpose(0, 2, 1),
                           p["pair_j"].reshape(2, k, d).transpose(0, 2, 1)], 1)


def _word_terms(data: _Packed, rows: slice, flipped: bool) -> np.ndarray:
    """(rows, 1 + 2d) what each row's (1, v_i, v_j) is for a direction's weight maps; ``flipped``: of the row's own
    pair read as (dependent i, candidate j), which is what the α_ji direction's row holds."""
    n = rows.stop - rows.start
    if data.vectors is None:
        return np.ones((n, 1))
    i, j = data.head[rows], data.owner[rows]
    if flipped:
        i, j = j, i
    return np.concatenate([np.ones((n, 1)), data.vectors[i], data.vectors[j]], 1)


def _root_scores(p: dict[str, np.ndarray], data: _Packed) -> np.ndarray:
    """(N,) the root's score for each dependent; -inf where the root is not a candidate."""
    weights = np.broadcast_to(p["root"], data.root.shape)
    z = p["bias"][0] + np.zeros(len(data.root))
    if data.vectors is not None:
        weights = weights + data.vectors @ p["root_j"].T
        z = z + data.vectors @ p["word_j"]
    z = z + np.einsum("jk,jk->j", weights, data.root)
    return np.where(data.root_ok, z, -np.inf)


def _pair_scores(p: dict[str, np.ndarray], data: _Packed) -> np.ndarray:
    """(P,) each row's score; -inf where the candidate is not valid. Works through the table a chunk at a time."""
    k, d = data.pair.shape[1], 0 if data.vectors is None else data.vectors.shape[1]
    mats = _matrices(p, k, d)
    z = np.empty(len(data.pair))
    for a, b in data.chunks:
        rows = slice(a, b)
        c = np.asarray(data.pair[rows], np.float64) @ mats.reshape(-1, k).T  # (rows, 2 (1 + 2d))
        c = c.reshape(b - a, 2, -1)
        z[rows] = (c[:, 0] * _word_terms(data, rows, False)).sum(1)
        own = data.flip[rows] - a  # the α_ji direction: the flipped row's products, which lie in the same chunk
        z[rows] += (c[own, 1] * _word_terms(data, rows, False)).sum(1)
    return np.where(data.cand, z, -np.inf)


def _softmax(zp: np.ndarray, zr: np.ndarray, data: _Packed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each dependent's softmax over its candidates and the root: (pair probabilities (P,), root probability (N,),
    log normaliser (N,))."""
    zmax = np.maximum(np.maximum.reduceat(zp, data.start), zr)
    zmax = np.where(np.isfinite(zmax), zmax, 0.0)
    ep, er = np.exp(zp - zmax[data.owner]), np.exp(zr - zmax)
    total = np.maximum(np.add.reduceat(ep, data.start) + er, 1e-300)
    return ep / total[data.owner], er / total, zmax + np.log(total)


def _loss_grad(theta: np.ndarray, shape: _Params, data: _Packed, l2: float) -> tuple[float, np.ndarray]:
    p = shape.unpack(theta)
    zp, zr = _pair_scores(p, data), _root_scores(p, data)
    prob_pair, prob_root, log_z = _softmax(zp, zr, data)
    dep = data.target >= 0
    n_dep = max(int(dep.sum()), 1)
    words = np.flatnonzero(dep)
    gold_row = data.start[words] + data.target[words] - 1
    at_root = data.target[words] == 0
    gold = np.where(at_root, zr[words], zp[np.where(at_root, 0, gold_row)])
    loss = -float((gold - log_z[words]).sum()) / n_dep
    # dL/dz: (softmax - one-hot) / n_dep for the dependents, 0 elsewhere
    g_root = np.where(dep, prob_root, 0.0)
    g_root[words[at_root]] -= 1.0
    g_root /= n_dep
    g_pair = np.where(dep[data.owner], prob_pair, 0.0)
    g_pair[gold_row[~at_root]] -= 1.0
    g_pair /= n_dep
    k, d = shape.k, shape.d
    g_mats = np.zeros((2, 1 + 2 * d, k))
    for a, b in data.chunks:
        rows = slice(a, b)
        f = np.asarray(data.pair[rows], np.float64)
        g_mats[0] += (g_pair[rows, None] * _word_terms(data, rows, False)).T @ f
        # row q's α_ji products were scored for the pair flip[q], whose (1, v_i, v_j) are row q's read flipped
        g_mats[1] += (g_pair[data.flip[rows], None] * _word_terms(data, rows, True)).T @ f
    grads = {"pair": g_mats[:, 0].ravel(), "root": data.root.T @ g_root, "bias": np.array([g_root.sum()])}
    if data.vectors is not None:
        v = data.vectors
        grads["pair_i"] = g_mats[:, 1:1 + d].transpose(0, 2, 1).reshape(2 * k, d)
        grads["pair_j"] = g_mats[:, 1 + d:].transpose(0, 2, 1).reshape(2 * k, d)
        grads["root_j"] = data.root.T @ (g_root[:, None] * v)
        grads["word_j"] = v.T @ g_root
    penalised = theta.copy()
    penalised[shape.unpack(np.arange(theta.size))["bias"].astype(int)] = 0.0  # the root bias is not penalised
    loss += 0.5 * l2 * float(penalised @ penalised)
    return loss, shape.pack(grads) + l2 * penalised


def _predict(p: dict[str, np.ndarray], data: _Packed) -> np.ndarray:
    """(N,) each word's highest-scoring head (-1: the root; ties go to the root, then the first word)."""
    zp, zr = _pair_scores(p, data), _root_scores(p, data)
    best = np.maximum.reduceat(zp, data.start)
    local = np.arange(len(zp)) - data.start[data.owner]
    first = np.minimum.reduceat(np.where(zp == best[data.owner], local, np.iinfo(np.int64).max), data.start)
    return np.where(zr >= best, -1, first)


@dataclass
class AttentionProbe:
    """A trained probe. ``weights`` (2, L, H): w (``head->dependent``: the candidate head's row, α_ij) and u
    (``dependent->head``: the dependent's row, α_ji) per head; with words, the constant part of each weight.
    ``features``: the dtype the attention features are held in while it scores (see :func:`fit_attention_probe`)."""

    params: dict[str, np.ndarray]
    n_layers: int
    n_heads: int
    words: bool = False
    projection: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    loss: float = float("nan")
    iterations: int = 0
    converged: bool = False
    features: str = "float32"

    @property
    def weights(self) -> np.ndarray:
        return self.params["pair"].reshape(2, self.n_layers, self.n_heads)

    @property
    def root_weights(self) -> np.ndarray:
        """(L, H) weight of each head's attention to the special tokens in the root's score."""
        return self.params["root"].reshape(self.n_layers, self.n_heads)

    def _project(self, vectors: np.ndarray | None) -> Any:
        if self.projection is None:
            return None
        mean, basis, scale = self.projection
        if vectors is None:
            return basis.shape[1]
        return (np.asarray(vectors, np.float64) - mean) @ basis / scale

    def _shape(self) -> _Params:
        return _Params(self.n_layers * self.n_heads, self.projection[1].shape[1] if self.projection else 0)

    def _pack(self, sentences: Sequence[ProbeSentence]) -> _Packed:
        return _pack(sentences, self._project if self.words else None, self.features)

    def loss_and_gradient(self, sentences: Sequence[ProbeSentence], l2: float = 0.0
                          ) -> tuple[float, dict[str, np.ndarray]]:
        """The training objective at the current ``params`` (mean cross-entropy per dependent + ``l2`` penalty) and
        its gradient, one array per entry of ``params``: what L-BFGS follows."""
        shape = self._shape()
        loss, grad = _loss_grad(shape.pack(self.params), shape, self._pack(sentences), l2)
        return loss, shape.unpack(grad)

    def predict(self, sentences: Sequence[ProbeSentence]) -> list[np.ndarray]:
        """Each sentence's predicted heads, (m,) int (-1: the root). Memory as in :func:`fit_attention_probe`."""
        if not sentences:
            return []
        data = self._pack(sentences)
        best = _predict(self.params, data)
        return [best[a:b] for a, b in zip(data.offsets[:-1], data.offsets[1:])]

    def uas(self, sentences: Sequence[ProbeSentence], punct: bool = False) -> float:
        """Share of the sentences' dependents whose predicted head is the gold head (punctuation left out)."""
        right, total = score_heads(self.predict(sentences), sentences, punct)
        return right / total if total else float("nan")


def fit_attention_probe(sentences: Sequence[ProbeSentence], *, words: bool = False, dims: int = 16, l2: float = 1e-3,
                        max_iter: int = 200, features: str = "float32") -> AttentionProbe:
    """Train the probe on ``sentences`` (module docstring): L-BFGS from zeros, at most ``max_iter`` iterations.

    Parameters
    ----------
    words : bool
        The attention + words probe (each sentence needs ``vectors``); False: attention only.
    dims : int
        With words: principal components of the training words' vectors kept (each scaled to unit variance).
    l2 : float
        L2 penalty on every weight but the root bias (the loss is the mean cross-entropy per dependent).
    features : {"float32", "float64"}
        The dtype the attention features are held in. Every sum is taken in float64 (each chunk of the table is read
        into float64 before it is multiplied), so float32 only rounds the attention values themselves (by at most
        6e-8 of each); the tests check that the weights match float64's to 1e-4 and the predicted heads are the same.

    Notes
    -----
    **Memory is linear in the words.** The sentences are packed, not padded: a sentence of m words contributes its
    m² (dependent, candidate) pairs and no more. With K = layers x heads, N words and P = Σ m² pairs over the
    sentences, the probe holds the attention once, P x K values (4 bytes each in float32: as much as the sentences'
    own float32 attention from :func:`probe_sentence`), the other direction (α_ji) being read from the same table,
    plus about 60 bytes per pair and 8K bytes per word of indices, scores and gradients, and a float64 working copy
    of at most ``CHUNK_BYTES`` (16 MiB) of the table at a time. Padding every sentence to the longest, M words, would
    take S x 2K x M² values instead, and as many again for the gradient (1,000 sentences of up to 81 words, 12 x 12
    heads: 15.1 GB twice in float64; ``benchmarks/bench_probe.py`` measures both). :meth:`AttentionProbe.predict`
    and :meth:`AttentionProbe.uas` pack the same way.
    """
    from scipy.optimize import minimize

    if not sentences:
        raise ValueError("no sentences to train the probe on")
    if max_iter < 1 or l2 < 0:
        raise ValueError(f"max_iter must be at least 1 and l2 at least 0, got {max_iter!r} and {l2!r}")
    if features not in FEATURE_DTYPES:
        raise ValueError(f"features must be one of {FEATURE_DTYPES}, got {features!r}")
    n_layers, n_heads = sentences[0].attention.shape[:2]
    probe = AttentionProbe({}, n_layers, n_heads, words, features=features)
    if words:
        missing = [i for i, s in enumerate(sentences) if s.vectors is None]
        if missing:
            raise ValueError(f"the attention + words probe needs word vectors; sentences {missing[:5]} have none")
        all_vectors = np.concatenate([np.asarray(s.vectors, np.float64)[s.mask] for s in sentences])
        mean = all_vectors.mean(0)
        _, sing, vt = np.linalg.svd(all_vectors - mean, full_matrices=False)
        keep = max(1, min(dims, vt.shape[0], int((sing > 1e-9 * max(sing.max(initial=0), 1e-300)).sum()) or 1))
        basis = vt[:keep].T
        scale = ((all_vectors - mean) @ basis).std(0) + 1e-12
        probe.projection = (mean, basis, scale)
    shape = probe._shape()
    data = probe._pack(sentences)
    if not (data.target >= 0).any():
        raise ValueError("the training sentences have no dependent with a gold head to learn from")
    fit = minimize(_loss_grad, np.zeros(shape.size()), args=(shape, data, l2), jac=True, method="L-BFGS-B",
                   options={"maxiter": int(max_iter)})
    probe.params = shape.unpack(fit.x)
    probe.loss, probe.iterations, probe.converged = float(fit.fun), int(fit.nit), bool(fit.success)
    return probe


def weight_frame(probe: AttentionProbe) -> pd.DataFrame:
    """Tidy (layer, head, label, direction, weight) of the probe's per-head weights, largest first."""
    import pandas as pd

    w = probe.weights
    d, layer, head = np.meshgrid(*(np.arange(s) for s in w.shape), indexing="ij")
    frame = pd.DataFrame({"layer": layer.ravel(), "head": head.ravel(),
                          "label": [f"{a + 1}-{b + 1}" for a, b in zip(layer.ravel(), head.ravel())],
                          "direction": np.asarray(DIRECTIONS, dtype=object)[d.ravel()], "weight": w.ravel()})
    return frame.sort_values("weight", ascending=False, kind="stable").reset_index(drop=True)
