"""QKSpaceView's state (front end: js/src/views/qk_space/): the queries and keys of many sentences as points in one
plane, and the answer to the page's "sentence" request (that sentence's attention map), as pure functions of a
:class:`~attnwidgets.analysis.qk_space.QKSpace` (the columns come from
:func:`attnwidgets.viewdata.qk_space.qk_space_columns`, which the static twin reads too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...analysis.qk_space import QKSpace
from ..qk_space import qk_space_columns

__all__ = ["QKSpaceMeta", "QKSpacePayload", "QKSpaceState", "QKSpaceWeights", "qk_space_state", "sentence_weights"]

METHODS = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}


@dataclass(frozen=True)
class QKSpaceMeta:
    """``_meta``: the title, the projection, each sentence's tokens and the category names."""

    title: str
    method: str
    layer: int
    head: int
    tokens: list[list[str]]
    token_names: list[str]
    pos_names: list[str]
    has_pos: bool
    explained: list[float]  # the variance each PCA axis explains ([] for t-SNE and UMAP)


@dataclass(frozen=True)
class QKSpacePayload:
    """``_payload``: (N, 9) float32 points: x, y, kind (0 query, 1 key), sentence, token, relative position,
    attention received (NaN for queries), token category, part-of-speech category."""

    points: np.ndarray


@dataclass(frozen=True)
class QKSpaceWeights:
    """A "sentence" request's answer: that sentence's attention map of the head."""

    weights: np.ndarray


@dataclass(frozen=True)
class QKSpaceState:
    payload: QKSpacePayload
    meta: QKSpaceMeta


def qk_space_state(space: QKSpace) -> QKSpaceState:
    points, names = qk_space_columns(space)
    meta = QKSpaceMeta(
        title=f"{space.model or 'model'} · layer {space.layer} head {space.head} · queries and keys of "
              f"{space.n_sentences} sentences ({METHODS[space.method]})",
        method=space.method, layer=int(space.layer), head=int(space.head),
        tokens=[list(t) for t in space.tokens], token_names=list(names["token"]), pos_names=list(names["pos"]),
        has_pos=space.upos is not None,
        explained=[] if space.explained is None else [float(x) for x in space.explained])
    return QKSpaceState(QKSpacePayload(points), meta)


def sentence_weights(space: QKSpace, sentence: int) -> QKSpaceWeights:
    """The attention map of ``sentence``; ValueError when there is no such sentence."""
    if not 0 <= sentence < space.n_sentences:
        raise ValueError(f"sentence {sentence} is out of range: there are {space.n_sentences} sentences")
    return QKSpaceWeights(np.asarray(space.weights[sentence]))
