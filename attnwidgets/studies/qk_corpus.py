"""A head's query–key space across a corpus (AttentionViz, Yeh et al. 2023): run the texts, keep one head's queries
and keys, embed them together.

The model runs in padded batches through the runner's capture path (:mod:`attnwidgets.runner.capture`, the one
long inputs take), and only up to the chosen layer: the first attention module above it stops the forward pass.
Each layer's queries (after RoPE) and keys are kept, nothing n × n is built during the forward, and only the chosen
head's weights are rebuilt per sentence (:meth:`~attnwidgets.attention_stack.LayerQK.rows`). The normalisation and
the 2-D embedding are :mod:`attnwidgets.analysis.qk_space` (numpy).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..analysis.conllu import Sentence, read_conllu
from ..analysis.dependency import piece_word_matrix
from ..analysis.qk_space import QKSpace, build_qk_space, check_color, check_method
from ..runner import get_runner
from ..runner.capture import Capture

__all__ = ["qk_space"]


def _count(value: Any, what: str, n: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} {value!r}")
    if not 0 <= int(value) < n:
        raise IndexError(f"{what} {int(value)} is out of range: the model has {n} {what}s (0..{n - 1}) "
                         f"{'per layer' if what == 'head' else ''}".rstrip())
    return int(value)


def _sentences(texts: Any) -> tuple[list[str], list[Sentence] | None]:
    """The texts to run and, for a CoNLL-U source, its sentences (for parts of speech)."""
    if isinstance(texts, Path) or (isinstance(texts, str) and (texts.endswith((".conllu", ".conll")) or "\n" in texts)):
        sentences = read_conllu(texts)
        return [s.text for s in sentences], sentences
    if isinstance(texts, str):
        raise TypeError("qk_space takes a list of texts (or a CoNLL-U file path ending in .conllu), not one string: "
                        "its point is to compare tokens across sentences")
    items = list(texts)
    if items and all(isinstance(s, Sentence) for s in items):
        return [s.text for s in items], items
    bad = [i for i, t in enumerate(items) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts[{bad[0]}] is a {type(items[bad[0]]).__name__}, not a str")
    return items, None


def _upos(sentence: Sentence, tokens: list[str], special: np.ndarray) -> list[str]:
    """Each token's part of speech: its word's UPOS ("special" for special tokens, "" for a piece of no word)."""
    owner = piece_word_matrix(sentence, tokens, special)
    out = []
    for k in range(len(tokens)):
        words = np.flatnonzero(owner[k])
        out.append("special" if special[k] else (sentence.upos[words[0]] if len(words) and sentence.upos else ""))
    return out


def qk_space(
    texts: Sequence[str] | Sequence[Sentence] | str | Path,
    layer: int,
    head: int,
    *,
    method: str = "pca",
    color: str = "position",
    model: Any = None,
    batch_size: int = 16,
    seed: int = 0,
    truncation: Literal["warn", "error"] = "warn",
) -> QKSpace:
    """One head's queries and keys over a corpus, normalised and embedded together in 2-D (AttentionViz).

    Parameters
    ----------
    texts : list of str, CoNLL-U path, or list of Sentence
        At least 2 sentences. A CoNLL-U file (a path ending in ``.conllu``) or sentences from
        :func:`attnwidgets.analysis.read_conllu` also give each token's part of speech (``color="pos"``).
    layer, head : int
        The head (of the self-attention stack; an encoder-decoder's encoder).
    method : {"pca", "tsne", "umap"}
        The 2-D embedding: PCA (numpy SVD, default), t-SNE (scikit-learn) or UMAP (umap-learn); a method whose
        package is missing raises ImportError saying what to install.
    color : {"position", "token", "pos", "attention"}
        What :class:`~attnwidgets.QKSpaceView` and :func:`attnwidgets.plots.plot_qk_space` colour by first.
    model : Runner, str or None
        A runner, a hub id or a folder; the bundled all-MiniLM-L6-v2 by default.
    batch_size : int
        Texts per forward pass.
    seed : int
        Random state of t-SNE and UMAP.

    Returns
    -------
    QKSpace
        Per point (queries first, then keys): kind, sentence, token index, token text, relative position, x, y and
        the attention a key receives; each sentence's weights for the heatmap of a clicked sentence.
        The normalisation (AttentionViz's): :func:`attnwidgets.analysis.qk_space.normalise_qk`.

    Examples
    --------
    >>> from attnwidgets.studies import qk_space
    >>> from attnwidgets.data import load_corpus
    >>> space = qk_space(load_corpus()[:6], layer=2, head=0)
    >>> space
    QKSpace('all-MiniLM-L6-v2 (bundled)', layer 2 head 0, 6 sentences, 83 queries + 83 keys, pca)
    >>> space.frame().columns.tolist()
    ['kind', 'sentence', 'token', 'text', 'position', 'x', 'y', 'received']
    >>> qk_space(["only one sentence"], layer=0, head=0)
    Traceback (most recent call last):
    ...
    ValueError: a QK space needs at least 2 sentences, got 1: ...
    """
    items, sentences = _sentences(texts)
    if len(items) < 2:
        raise ValueError(f"a QK space needs at least 2 sentences, got {len(items)}: its point is to compare tokens "
                         "across sentences (pass a list of texts)")
    method = check_method(method)
    check_color(color, sentences is not None)
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer of at least 1, got {batch_size!r}")
    runner = get_runner(model)
    info = runner.info
    layer = _count(layer, "layer", info.n_layers)
    head = _count(head, "head", info.n_heads)
    stack = "encoder" if info.kind == "encoder-decoder" else "self"
    queries: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    tokens: list[list[str]] = []
    upos: list[list[str]] | None = [] if sentences is not None else None
    for start in range(0, len(items), int(batch_size)):
        batch = items[start:start + int(batch_size)]
        enc = runner.encode(batch, [None] * len(batch), [None] * len(batch), truncation)
        held = Capture()
        runner.forward(enc, capture=held, stop_after=(stack, layer))
        for row in range(len(batch)):
            fields = runner.token_fields(enc, row)
            keep = np.flatnonzero(fields["valid"].numpy())
            lazy = held.stack(stack, row, keep, keep)
            if lazy is None or layer >= len(lazy.layers):
                raise RuntimeError(f"{info.name!r} made no {stack} attention call at layer {layer} through "
                                   "attnwidgets' attention function; a QK space needs a model whose attention goes "
                                   "through transformers' attention interface (BERT, GPT-2, BART, Llama, ...)")
            qk = lazy.layers[layer]
            n = qk.n_queries
            queries.append(qk.query[head])
            keys.append(qk.key[head // (qk.n_heads // qk.n_kv_heads)])
            weights.append(qk.rows(0, n, np.array([head]))[0])
            masks.append(np.asarray(qk.mask.rows(0, n, n), bool))
            tokens.append(list(fields["tokens"]))
            if upos is not None and sentences is not None:
                upos.append(_upos(sentences[start + row], tokens[-1], np.asarray(fields["special_mask"], bool)))
    return build_qk_space(queries, keys, weights, tokens, layer=layer, head=head, method=method, texts=items,
                          upos=upos, masks=masks, model=info.name, color=color, seed=seed)
