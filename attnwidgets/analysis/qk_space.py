"""A head's query–key space across a corpus (AttentionViz, Yeh et al. 2023): queries and keys of many sentences,
normalised and embedded together in 2-D. Arrays in, arrays out (numpy; scikit-learn or umap-learn only when asked).

The study that runs a model over a corpus is :func:`attnwidgets.studies.qk_space`; this module is the half that
needs no model: :func:`normalise_qk` (the key normalisation), :func:`pca_2d`, :func:`embed_2d` and
:func:`build_qk_space`, which turns one head's per-sentence queries, keys and weights into a :class:`QKSpace`.

Key normalisation (what :func:`normalise_qk` does, exactly)
-----------------------------------------------------------
Attention only sees ``softmax_j(q_i · k_j · s)``. Two changes of the vectors leave every weight as it is, and
AttentionViz (Yeh et al. 2023, §4.1, "vector normalization") uses both so that distance in the picture follows
attention:

1. **scaling**: ``q -> c·q`` and ``k -> k / c`` keep every ``q · k``. We take ``c = sqrt(mean‖k‖ / mean‖q‖)``
   (means over all queries and all keys of the corpus), so that afterwards the mean query norm equals the mean key
   norm (both ``sqrt(mean‖q‖ · mean‖k‖)``);
2. **key translation**: ``k -> k + v`` for one vector ``v`` adds ``q_i · v`` to every logit of row ``i``, which the
   softmax over ``j`` cancels. We take ``v = mean(c·q) - mean(k / c)``, so that afterwards the keys' mean equals
   the queries' mean.

Scaling comes first (translating first and scaling after would move the two means apart again). The weights of
the normalised vectors equal the model's to float rounding; ``tests/studies/test_qk_space.py`` checks both steps on a
hand computed case and that the weights are unchanged. The reference repository (catherinesyeh/attention-viz) ships
precomputed coordinates and no normalisation code, so this follows the paper's description; the order of the two
steps and the choice of ``c`` from mean norms are ours, stated here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["METHODS", "QKSpace", "build_qk_space", "embed_2d", "normalise_qk", "pca_2d"]

#: The 2-D embeddings :func:`embed_2d` knows: "pca" (numpy SVD, always there), "tsne" (scikit-learn), "umap"
#: (umap-learn).
METHODS = ("pca", "tsne", "umap")


def normalise_qk(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Queries (N, d) and keys (M, d) scaled and translated as AttentionViz does (see the module's docstring).

    Returns ``(q', k', c, v)`` with ``q' = c·q`` and ``k' = k / c + v``: the mean norm of ``c·q`` equals that of
    ``k / c``, and ``mean(k') == mean(q')``. Every ``q'_i · k'_j`` is ``q_i · k_j + q'_i · v``: a constant per
    query, which the softmax over keys cancels.

    Examples
    --------
    >>> q = np.array([[1.0, 0.0], [3.0, 0.0]])            # mean norm 2
    >>> k = np.array([[0.0, 8.0], [0.0, 8.0]])            # mean norm 8: c = sqrt(8 / 2) = 2
    >>> q2, k2, c, v = normalise_qk(q, k)
    >>> c, q2.tolist(), v.tolist(), k2.tolist()
    (2.0, [[2.0, 0.0], [6.0, 0.0]], [4.0, -4.0], [[4.0, 0.0], [4.0, 0.0]])
    """
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1]:
        raise ValueError(f"queries {q.shape} and keys {k.shape} must be (N, d) and (M, d) with the same d")
    if not len(q) or not len(k):
        raise ValueError("normalise_qk needs at least one query and one key")
    if not (np.isfinite(q).all() and np.isfinite(k).all()):
        raise ValueError("the queries or keys hold NaN or infinity: the model's forward pass went wrong")
    nq, nk = float(np.linalg.norm(q, axis=1).mean()), float(np.linalg.norm(k, axis=1).mean())
    c = float(np.sqrt(nk / nq)) if nq > 0 and nk > 0 else 1.0
    qs, ks = q * c, k / c
    v = qs.mean(0) - ks.mean(0)
    return qs, ks + v, c, v


def pca_2d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first two principal components of the rows of ``x`` (N, d): (coords (N, 2), explained variance ratio (2,)).

    Centred, then numpy's SVD; each axis's sign is fixed so that the row with the largest |coordinate| on it is
    positive (the same input gives the same picture). With d = 1 the second axis is 0.

    Examples
    --------
    A 6 x 2 rectangle: the long side is the first axis: 3² / (3² + 1²) = 0.9 of the variance.

    >>> xy, ratio = pca_2d(np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 2.0], [6.0, 2.0]]))
    >>> np.abs(xy).round(6).tolist(), np.round(ratio, 6).tolist()
    ([[3.0, 1.0], [3.0, 1.0], [3.0, 1.0], [3.0, 1.0]], [0.9, 0.1])
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"PCA needs at least 2 points as an (N, d) array, got shape {x.shape}")
    centred = x - x.mean(0)
    u, s, _vt = np.linalg.svd(centred, full_matrices=False)
    coords = np.zeros((len(x), 2))
    r = min(2, len(s))
    coords[:, :r] = u[:, :r] * s[:r]
    for a in range(r):
        top = int(np.argmax(np.abs(coords[:, a])))
        if coords[top, a] < 0:
            coords[:, a] *= -1
    total = float((s ** 2).sum())
    ratio = np.zeros(2)
    if total > 0:
        ratio[:r] = s[:r] ** 2 / total
    return coords, ratio


def _needs(module: str, package: str, method: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"method={method!r} needs the {package!r} package, which is not installed here. Install it "
                          f"with `pip install {package}` (and restart the kernel), or use method='pca' (numpy only)"
                          ) from None


def check_method(method: Any) -> str:
    """The embedding method, checked: one of :data:`METHODS`, and its package importable."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: use 'pca' (default), 'tsne' (scikit-learn) or 'umap' "
                         "(umap-learn)")
    if method == "tsne":
        _needs("sklearn.manifold", "scikit-learn", method)
    elif method == "umap":
        _needs("umap", "umap-learn", method)
    return str(method)


def embed_2d(x: np.ndarray, method: str = "pca", *, seed: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows of ``x`` (N, d) in 2-D: (coords (N, 2) float64, PCA's explained variance ratio or None).

    "pca": :func:`pca_2d`. "tsne": scikit-learn's ``TSNE(init="pca", random_state=seed)`` (perplexity 30, or
    ``(N - 1) / 3`` for small N). "umap": ``umap.UMAP(random_state=seed)``. A method whose package is missing raises
    ImportError saying what to install.
    """
    method = check_method(method)
    x = np.asarray(x, dtype=np.float64)
    if method == "pca":
        return pca_2d(x)
    if len(x) < 4:
        raise ValueError(f"method={method!r} needs at least 4 points; got {len(x)} (use method='pca')")
    if method == "tsne":
        manifold = _needs("sklearn.manifold", "scikit-learn", method)
        perplexity = float(min(30.0, (len(x) - 1) / 3))
        tsne = manifold.TSNE(n_components=2, init="pca", random_state=seed, perplexity=perplexity)
        return np.asarray(tsne.fit_transform(x), dtype=np.float64), None
    umap = _needs("umap", "umap-learn", method)
    return np.asarray(umap.UMAP(n_components=2, random_state=seed).fit_transform(x), dtype=np.float64), None


@dataclass(frozen=True, eq=False)
class QKSpace:
    """One head's queries and keys over a corpus, embedded together in 2-D; one row per point (query or key).

    Attributes
    ----------
    layer, head : int
        The head.
    method : str
        "pca", "tsne" or "umap".
    xy : np.ndarray
        (N, 2) float32 coordinates.
    kind : np.ndarray
        (N,) int8: 0 a query, 1 a key. Queries of all sentences come first, then the keys.
    sentence : np.ndarray
        (N,) int32: which sentence (index into ``texts``).
    token : np.ndarray
        (N,) int32: the token's index in its sentence's ``tokens`` (padding removed, so also its position in the
        model's input, specials counted).
    text : list[str]
        (N,) the token's display text.
    position : np.ndarray
        (N,) float32: the relative position ``token / (n - 1)`` in its sentence (0 first, 1 last; 0 for a one-token
        sentence), what "colour by position" shows.
    received : np.ndarray
        (N,) float32: for a key, the mean weight it gets from the queries of its sentence that may see it (NaN for
        queries).
    upos : list[str] | None
        (N,) part of speech of the word the token belongs to (from a CoNLL-U file; "special" for special tokens,
        "" when a piece matched no word), or None.
    tokens : list[list[str]]
        Each sentence's tokens.
    texts : list[str]
        Each sentence's text.
    weights : list[np.ndarray]
        Each sentence's (n, n) float32 attention of this head (query rows, key columns): what the heatmap of a
        clicked sentence shows.
    vectors : np.ndarray
        (N, d) float32 the normalised query and key vectors that were embedded.
    scale : float
        The ``c`` of :func:`normalise_qk` (queries were multiplied by it, keys divided).
    shift : np.ndarray
        (d,) the vector added to every key after scaling.
    explained : np.ndarray | None
        (2,) PCA's explained variance ratio (None for t-SNE and UMAP).
    model : str
        The model's name.
    color : str
        What the view colours by first: "position", "token", "pos" or "attention".
    """

    layer: int
    head: int
    method: str
    xy: np.ndarray
    kind: np.ndarray
    sentence: np.ndarray
    token: np.ndarray
    text: list[str]
    position: np.ndarray
    received: np.ndarray
    upos: list[str] | None
    tokens: list[list[str]]
    texts: list[str]
    weights: list[np.ndarray]
    vectors: np.ndarray
    scale: float
    shift: np.ndarray
    explained: np.ndarray | None = None
    model: str = ""
    color: str = "position"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_points(self) -> int:
        return len(self.kind)

    @property
    def n_sentences(self) -> int:
        return len(self.tokens)

    def frame(self) -> Any:
        """One row per point: kind ("query"/"key"), sentence, token, text, position, x, y, received (and upos)."""
        import pandas as pd

        data: dict[str, Any] = {
            "kind": np.where(self.kind == 0, "query", "key"), "sentence": self.sentence, "token": self.token,
            "text": self.text, "position": self.position, "x": self.xy[:, 0], "y": self.xy[:, 1],
            "received": self.received,
        }
        if self.upos is not None:
            data["upos"] = self.upos
        return pd.DataFrame(data)

    def __repr__(self) -> str:
        n_q = int((self.kind == 0).sum())
        return (f"QKSpace({self.model!r}, layer {self.layer} head {self.head}, {self.n_sentences} sentences, "
                f"{n_q} queries + {self.n_points - n_q} keys, {self.method})")


COLORS = ("position", "token", "pos", "attention")


def check_color(color: Any, has_pos: bool) -> str:
    """What a QK space is coloured by, checked ("pos" needs parts of speech from a CoNLL-U file)."""
    if color not in COLORS:
        raise ValueError(f"unknown color {color!r}: use 'position', 'token', 'pos' (part of speech, with a CoNLL-U "
                         "file) or 'attention' (attention each key receives)")
    if color == "pos" and not has_pos:
        raise ValueError("color='pos' needs parts of speech: give qk_space a CoNLL-U file (a path, or sentences "
                         "from attnwidgets.analysis.read_conllu) instead of plain texts")
    return str(color)


def build_qk_space(
    queries: Sequence[np.ndarray],
    keys: Sequence[np.ndarray],
    weights: Sequence[np.ndarray],
    tokens: Sequence[Sequence[str]],
    *,
    layer: int = 0,
    head: int = 0,
    method: str = "pca",
    texts: Sequence[str] | None = None,
    upos: Sequence[Sequence[str]] | None = None,
    masks: Sequence[np.ndarray] | None = None,
    model: str = "",
    color: str = "position",
    seed: int = 0,
) -> QKSpace:
    """A :class:`QKSpace` from one head's per-sentence queries (n_i, d), keys (n_i, d) and weights (n_i, n_i).

    Queries and keys of every sentence are normalised together (:func:`normalise_qk`) and embedded together
    (:func:`embed_2d`). ``masks`` (n_i, n_i) bool say which keys each query may see (default all), for the
    attention a key receives; ``upos`` gives each token's part of speech.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> q = [rng.normal(size=(3, 4)), rng.normal(size=(2, 4))]
    >>> w = [np.full((3, 3), 1 / 3), np.full((2, 2), 0.5)]
    >>> s = build_qk_space(q, q, w, [["a", "b", "c"], ["d", "e"]])
    >>> s.n_points, s.kind.tolist(), s.sentence.tolist()
    (10, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0, 0, 1, 1])
    """
    n_s = len(tokens)
    if n_s < 2:
        raise ValueError(f"a QK space needs at least 2 sentences, got {n_s}: its point is to compare tokens across "
                         "sentences (pass a list of texts)")
    if not (len(queries) == len(keys) == len(weights) == n_s):
        raise ValueError(f"got {len(queries)} query sets, {len(keys)} key sets and {len(weights)} weight maps for "
                         f"{n_s} sentences")
    method = check_method(method)
    color = check_color(color, upos is not None)
    for i, (q, k, w, t) in enumerate(zip(queries, keys, weights, tokens, strict=True)):
        n = len(t)
        if np.shape(q)[0] != n or np.shape(k)[0] != n or np.shape(w) != (n, n):
            raise ValueError(f"sentence {i}: {n} tokens but queries {np.shape(q)}, keys {np.shape(k)}, weights "
                             f"{np.shape(w)}")
    q_all = np.concatenate([np.asarray(q, np.float64) for q in queries])
    k_all = np.concatenate([np.asarray(k, np.float64) for k in keys])
    qn, kn, scale, shift = normalise_qk(q_all, k_all)
    vectors = np.concatenate([qn, kn])
    xy, explained = embed_2d(vectors, method, seed=seed)
    lengths = np.array([len(t) for t in tokens])
    sent = np.repeat(np.arange(n_s, dtype=np.int32), lengths)
    tok = np.concatenate([np.arange(n, dtype=np.int32) for n in lengths])
    rel = np.concatenate([np.arange(n) / max(n - 1, 1) for n in lengths]).astype(np.float32)
    received = []
    for i, w in enumerate(weights):
        w = np.asarray(w, np.float64)
        seen = np.ones(w.shape, bool) if masks is None else np.asarray(masks[i], bool)
        count = seen.sum(0)
        received.append(np.where(count > 0, (w * seen).sum(0) / np.maximum(count, 1), np.nan))
    text = [str(x) for t in tokens for x in t]
    pos = None if upos is None else [str(x) for u in upos for x in u]
    if pos is not None and len(pos) != len(text):
        raise ValueError(f"upos has {len(pos)} tags for {len(text)} tokens")
    return QKSpace(
        layer=int(layer), head=int(head), method=method, xy=xy.astype(np.float32),
        kind=np.repeat(np.array([0, 1], np.int8), len(text)), sentence=np.concatenate([sent, sent]),
        token=np.concatenate([tok, tok]), text=text + text, position=np.concatenate([rel, rel]),
        received=np.concatenate([np.full(len(text), np.nan, np.float32), np.concatenate(received).astype(np.float32)]),
        upos=None if pos is None else pos + pos, tokens=[list(map(str, t)) for t in tokens],
        texts=list(texts) if texts is not None else [" ".join(t) for t in tokens],
        weights=[np.asarray(w, np.float32) for w in weights], vectors=vectors.astype(np.float32), scale=scale,
        shift=shift.astype(np.float32), explained=explained, model=model, color=color,
    )
