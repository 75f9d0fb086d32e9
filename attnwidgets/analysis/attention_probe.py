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
           "probe_sentence", "score_heads", "split_sentences", "weight_frame"]

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

    ``vectors`` (n_pieces, d), when given, are averaged over each word's pieces into the word vectors.
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
    return ProbeSentence(words, special, np.asarray(sentence.heads, dtype=np.int64), punct, present, word_vectors)


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


# ---------------------------------------------------------------------------------------------------- the model

@dataclass
class _Batch:
    """Sentences padded to M words: pair features F (S, 2K, M, M), root features (S, K, M), targets, masks."""

    pair: np.ndarray
    root: np.ndarray
    cand: np.ndarray    # (S, M, 1 + M) valid candidates per dependent; column 0 the root
    target: np.ndarray  # (S, M) gold column (0 = root, 1 + i = word i); -1 where not a dependent
    vectors: np.ndarray | None  # (S, M, d)


def _batch(sentences: Sequence[ProbeSentence], project: Any = None) -> _Batch:
    n_layers, n_heads = sentences[0].attention.shape[:2]
    k = n_layers * n_heads
    big = max(s.n_words for s in sentences)
    n = len(sentences)
    pair = np.zeros((n, 2 * k, big, big))
    root = np.zeros((n, k, big))
    cand = np.zeros((n, big, 1 + big), bool)
    target = np.full((n, big), -1, np.int64)
    vectors = None if project is None else np.zeros((n, big, project(None)))
    for b, s in enumerate(sentences):
        if s.attention.shape[:2] != (n_layers, n_heads):
            raise ValueError(f"sentence {b} has attention of {s.attention.shape[:2]} (layers, heads), the first "
                             f"{(n_layers, n_heads)}: every sentence must come from the same model")
        m = s.n_words
        a = np.asarray(s.attention, np.float64).reshape(k, m, m)
        pair[b, :k, :m, :m] = a
        pair[b, k:, :m, :m] = a.transpose(0, 2, 1)
        root[b, :, :m] = np.asarray(s.special, np.float64).reshape(k, m)
        ok = s.mask
        cand[b, :m, 0] = ok
        cand[b, :m, 1:m + 1] = ok[:, None] & ok[None, :] & ~np.eye(m, dtype=bool)
        gold = s.heads
        valid = ok & ((gold < 0) | ok[np.maximum(gold, 0)])
        target[b, :m] = np.where(valid, gold + 1, -1)
        if vectors is not None:
            if s.vectors is None:
                raise ValueError(f"sentence {b} has no word vectors: the attention + words probe needs them")
            vectors[b, :m] = project(s.vectors)
    return _Batch(pair, root, cand, target, vectors)


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


def _logits(p: dict[str, np.ndarray], batch: _Batch) -> np.ndarray:
    """(S, M dependent, 1 + M candidate) logits; invalid candidates -inf."""
    f, root = batch.pair, batch.root
    pair_score = np.einsum("f,sfij->sji", p["pair"], f, optimize=True)  # (S, j dependent, i candidate)
    root_w = np.broadcast_to(p["root"][None, :, None], root.shape)
    extra = np.zeros(root.shape[::2])  # (S, M): c·v_j
    if batch.vectors is not None:
        vi = np.einsum("smd,fd->sfm", batch.vectors, p["pair_i"], optimize=True)  # (S, 2K, M): A_f·v_i
        vj = np.einsum("smd,fd->sfm", batch.vectors, p["pair_j"], optimize=True)
        pair_score = pair_score + np.einsum("sfi,sfij->sji", vi, f, optimize=True) \
            + np.einsum("sfj,sfij->sji", vj, f, optimize=True)
        root_w = root_w + np.einsum("smd,kd->skm", batch.vectors, p["root_j"], optimize=True)
        extra = batch.vectors @ p["word_j"]
    root_score = np.einsum("skj,skj->sj", root_w, root) + p["bias"][0] + extra
    z = np.concatenate([root_score[..., None], pair_score], -1)
    return np.where(batch.cand, z, -np.inf)


def _loss_grad(theta: np.ndarray, shape: _Params, batch: _Batch, l2: float) -> tuple[float, np.ndarray]:
    p = shape.unpack(theta)
    z = _logits(p, batch)
    dep = batch.target >= 0
    n_dep = max(int(dep.sum()), 1)
    zmax = np.max(np.where(batch.cand, z, -np.inf), -1, keepdims=True)
    zmax = np.where(np.isfinite(zmax), zmax, 0.0)
    ez = np.where(batch.cand, np.exp(np.where(batch.cand, z - zmax, 0.0)), 0.0)
    total = ez.sum(-1, keepdims=True)
    logp = np.where(batch.cand, z - zmax - np.log(np.maximum(total, 1e-300)), 0.0)
    gold = np.take_along_axis(logp, np.maximum(batch.target, 0)[..., None], -1)[..., 0]
    loss = -float(gold[dep].sum()) / n_dep
    g = ez / np.maximum(total, 1e-300)  # softmax
    onehot = np.zeros_like(g)
    np.put_along_axis(onehot, np.maximum(batch.target, 0)[..., None], 1.0, -1)
    g = (g - onehot) * dep[..., None] / n_dep  # dL/dz, (S, M dependent, 1 + M)
    g_root, g_pair = g[..., 0], g[..., 1:].transpose(0, 2, 1)  # g_pair[s, i, j]: candidate i of dependent j
    f, root = batch.pair, batch.root
    gf = g_pair[:, None] * f  # (S, 2K, M, M): dL/d(weight of feature f for pair i, j)
    grads = {"pair": gf.sum((0, 2, 3)), "root": np.einsum("sj,skj->k", g_root, root),
             "bias": np.array([g_root.sum()])}
    if batch.vectors is not None:
        v = batch.vectors
        grads["pair_i"] = np.einsum("sfi,sid->fd", gf.sum(3), v, optimize=True)
        grads["pair_j"] = np.einsum("sfj,sjd->fd", gf.sum(2), v, optimize=True)
        grads["root_j"] = np.einsum("skj,sjd->kd", g_root[:, None] * root, v, optimize=True)
        grads["word_j"] = np.einsum("sj,sjd->d", g_root, v)
    penalised = theta.copy()
    penalised[shape.unpack(np.arange(theta.size))["bias"].astype(int)] = 0.0  # the root bias is not penalised
    loss += 0.5 * l2 * float(penalised @ penalised)
    return loss, shape.pack(grads) + l2 * penalised


@dataclass
class AttentionProbe:
    """A trained probe. ``weights`` (2, L, H): w (``head->dependent``: the candidate head's row, α_ij) and u
    (``dependent->head``: the dependent's row, α_ji) per head; with words, the constant part of each weight."""

    params: dict[str, np.ndarray]
    n_layers: int
    n_heads: int
    words: bool = False
    projection: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    loss: float = float("nan")
    iterations: int = 0
    converged: bool = False

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

    def loss_and_gradient(self, sentences: Sequence[ProbeSentence], l2: float = 0.0
                          ) -> tuple[float, dict[str, np.ndarray]]:
        """The training objective at the current ``params`` (mean cross-entropy per dependent + ``l2`` penalty) and
        its gradient, one array per entry of ``params``: what L-BFGS follows."""
        shape = self._shape()
        loss, grad = _loss_grad(shape.pack(self.params), shape, _batch(sentences, self._project if self.words
                                                                         else None), l2)
        return loss, shape.unpack(grad)

    def predict(self, sentences: Sequence[ProbeSentence]) -> list[np.ndarray]:
        """Each sentence's predicted heads, (m,) int (-1: the root)."""
        if not sentences:
            return []
        batch = _batch(sentences, self._project if self.words else None)
        z = _logits(self.params, batch)
        best = z.argmax(-1) - 1
        return [best[b, :s.n_words] for b, s in enumerate(sentences)]

    def uas(self, sentences: Sequence[ProbeSentence], punct: bool = False) -> float:
        """Share of the sentences' dependents whose predicted head is the gold head (punctuation left out)."""
        right, total = score_heads(self.predict(sentences), sentences, punct)
        return right / total if total else float("nan")


def fit_attention_probe(sentences: Sequence[ProbeSentence], *, words: bool = False, dims: int = 16, l2: float = 1e-3,
                        max_iter: int = 200) -> AttentionProbe:
    """Train the probe on ``sentences`` (module docstring): L-BFGS from zeros, at most ``max_iter`` iterations.

    Parameters
    ----------
    words : bool
        The attention + words probe (each sentence needs ``vectors``); False: attention only.
    dims : int
        With words: principal components of the training words' vectors kept (each scaled to unit variance).
    l2 : float
        L2 penalty on every weight but the root bias (the loss is the mean cross-entropy per dependent).
    """
    from scipy.optimize import minimize

    if not sentences:
        raise ValueError("no sentences to train the probe on")
    if max_iter < 1 or l2 < 0:
        raise ValueError(f"max_iter must be at least 1 and l2 at least 0, got {max_iter!r} and {l2!r}")
    n_layers, n_heads = sentences[0].attention.shape[:2]
    probe = AttentionProbe({}, n_layers, n_heads, words)
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
    batch = _batch(sentences, probe._project if words else None)
    if not (batch.target >= 0).any():
        raise ValueError("the training sentences have no dependent with a gold head to learn from")
    fit = minimize(_loss_grad, np.zeros(shape.size()), args=(shape, batch, l2), jac=True, method="L-BFGS-B",
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
