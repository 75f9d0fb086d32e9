"""The probe's training objective as it was before issue 33 §6: every sentence padded to the longest, float64, both
directions stored (S, 2K, M, M), the gradient as large again. Kept here, and only here, as the reference the packed
implementation (attnwidgets/analysis/attention_probe.py) is checked against (tests/analysis/test_attention_probe.py)
and measured against (benchmarks/bench_probe.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidgets.analysis.attention_probe import ProbeSentence


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


def padded_projection(sentences: Sequence[ProbeSentence], dims: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The word-vector projection fit_attention_probe made (principal components, unit variance)."""
    all_vectors = np.concatenate([np.asarray(s.vectors, np.float64)[s.mask] for s in sentences])
    mean = all_vectors.mean(0)
    _, sing, vt = np.linalg.svd(all_vectors - mean, full_matrices=False)
    keep = max(1, min(dims, vt.shape[0], int((sing > 1e-9 * max(sing.max(initial=0), 1e-300)).sum()) or 1))
    basis = vt[:keep].T
    scale = ((all_vectors - mean) @ basis).std(0) + 1e-12
    return mean, basis, scale


def projector(projection: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> Any:
    if projection is None:
        return None
    mean, basis, scale = projection

    def project(vectors: np.ndarray | None) -> Any:
        if vectors is None:
            return basis.shape[1]
        return (np.asarray(vectors, np.float64) - mean) @ basis / scale

    return project


def padded_fit(sentences: Sequence[ProbeSentence], *, words: bool = False, dims: int = 16, l2: float = 1e-3,
               max_iter: int = 200) -> tuple[dict[str, np.ndarray], Any]:
    """The old fit_attention_probe: (params, projection) after L-BFGS from zeros on the padded batch."""
    from scipy.optimize import minimize

    n_layers, n_heads = sentences[0].attention.shape[:2]
    projection = padded_projection(sentences, dims) if words else None
    shape = _Params(n_layers * n_heads, projection[1].shape[1] if projection else 0)
    batch = _batch(sentences, projector(projection))
    fit = minimize(_loss_grad, np.zeros(shape.size()), args=(shape, batch, l2), jac=True, method="L-BFGS-B",
                   options={"maxiter": int(max_iter)})
    return shape.unpack(fit.x), projection


def padded_loss_grad(params: dict[str, np.ndarray], sentences: Sequence[ProbeSentence], projection: Any,
                     l2: float) -> tuple[float, dict[str, np.ndarray]]:
    """The old objective and gradient at ``params``."""
    n_layers, n_heads = sentences[0].attention.shape[:2]
    shape = _Params(n_layers * n_heads, projection[1].shape[1] if projection else 0)
    loss, grad = _loss_grad(shape.pack(params), shape, _batch(sentences, projector(projection)), l2)
    return loss, shape.unpack(grad)


def padded_predict(params: dict[str, np.ndarray], sentences: Sequence[ProbeSentence], projection: Any
                   ) -> list[np.ndarray]:
    """The old AttentionProbe.predict."""
    batch = _batch(sentences, projector(projection))
    best = _logits(params, batch).argmax(-1) - 1
    return [best[b, :s.n_words] for b, s in enumerate(sentences)]
