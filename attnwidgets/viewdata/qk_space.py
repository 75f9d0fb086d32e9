"""What :class:`~attnwidgets.widgets.QKSpaceView` and :func:`~attnwidgets.plots.plot_qk_space` both draw from a
:class:`~attnwidgets.analysis.qk_space.QKSpace`: one row of numbers per point, and the categories of the token and
part-of-speech colourings."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..analysis.qk_space import COLORS, QKSpace, check_color
from .selection import check_selection

__all__ = ["COLORS", "COLUMNS", "MAX_CATEGORIES", "check_qk_space", "check_space_selection", "check_view_color",
           "qk_space_columns", "selected_points"]

#: The columns of :func:`qk_space_columns`' point table, in order (js/src/views/qk_space/state.ts reads them so).
COLUMNS = ("x", "y", "kind", "sentence", "token", "position", "received", "token_cat", "pos_cat")

#: The most categories a colouring names (the categorical palette's size); the rarer ones are "other" (grey).
MAX_CATEGORIES = 12


def check_qk_space(space: Any, who: str) -> QKSpace:
    """``space`` if it is a :class:`QKSpace`, else a TypeError saying where one comes from."""
    if not isinstance(space, QKSpace):
        raise TypeError(f"{who} shows a QKSpace (from attnwidgets.studies.qk_space(texts, layer, head)), got "
                        f"{type(space).__name__}")
    return space


def _categories(labels: list[str], skip: tuple[str, ...] = ()) -> tuple[np.ndarray, list[str]]:
    """(index of each label among the most frequent MAX_CATEGORIES, or -1) and those names, most frequent first."""
    counts = Counter(x for x in labels if x not in skip)
    names = [name for name, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_CATEGORIES]]
    index = {name: i for i, name in enumerate(names)}
    return np.array([index.get(x, -1) for x in labels], dtype=np.float32), names


def qk_space_columns(space: QKSpace) -> tuple[np.ndarray, dict[str, list[str]]]:
    """(points (N, 9) float32 in :data:`COLUMNS` order, {"token": names, "pos": names}).

    ``token_cat`` is the index of the point's token text among the :data:`MAX_CATEGORIES` most frequent ones (-1:
    another token); ``pos_cat`` the same for parts of speech (all -1 without them).

    Examples
    --------
    >>> from attnwidgets.analysis.qk_space import build_qk_space
    >>> q = [np.eye(3), np.eye(3)[:2]]
    >>> s = build_qk_space(q, q, [np.full((3, 3), 1 / 3), np.full((2, 2), 0.5)], [["a", "b", "a"], ["b", "b"]])
    >>> points, names = qk_space_columns(s)
    >>> points.shape, names["token"], points[:5, 7].tolist()
    ((10, 9), ['b', 'a'], [1.0, 0.0, 1.0, 0.0, 0.0])
    """
    space = check_qk_space(space, "qk_space_columns")
    token_cat, token_names = _categories(space.text)
    if space.upos is not None:
        pos_cat, pos_names = _categories(space.upos, skip=("",))
    else:
        pos_cat, pos_names = np.full(space.n_points, -1, np.float32), []
    points = np.column_stack([
        space.xy[:, 0], space.xy[:, 1], space.kind, space.sentence, space.token, space.position, space.received,
        token_cat, pos_cat,
    ]).astype(np.float32)
    return points, {"token": token_names, "pos": pos_names}


def check_view_color(color: Any, space: QKSpace) -> str:
    """A colouring the view can show for ``space`` (:data:`COLORS`; "pos" only with parts of speech)."""
    return check_color(color, space.upos is not None)


def check_space_selection(space: QKSpace, sentence: int, selection: Any) -> list[int]:
    """A selection of query tokens of ``sentence`` (positions in ``space.tokens[sentence]``, sorted); with no
    sentence (-1) only ``[]``.

    >>> from attnwidgets.analysis.qk_space import build_qk_space
    >>> s = build_qk_space([np.eye(3)] * 2, [np.eye(3)] * 2, [np.full((3, 3), 1 / 3)] * 2, [["a", "b", "c"]] * 2)
    >>> check_space_selection(s, 0, [2, 0])
    [0, 2]
    >>> check_space_selection(s, -1, [1])
    Traceback (most recent call last):
    ...
    ValueError: no sentence is shown, so there are no tokens to select: click a point or set sentence first
    """
    if sentence < 0:
        if selection:
            raise ValueError("no sentence is shown, so there are no tokens to select: click a point or set sentence "
                             "first")
        return []
    return check_selection(selection, len(space.tokens[sentence]))


def selected_points(space: QKSpace, sentence: int, selection: Any) -> np.ndarray:
    """(k,) int64: the rows of the query points of the selected tokens of ``sentence``, in token order (what the view
    and its twin mark; js/src/views/qk_space/state.ts selectedPoints).

    >>> from attnwidgets.analysis.qk_space import build_qk_space
    >>> s = build_qk_space([np.eye(3), np.eye(3)], [np.eye(3), np.eye(3)], [np.full((3, 3), 1 / 3)] * 2,
    ...                    [["a", "b", "c"], ["d", "e", "f"]])
    >>> selected_points(s, 1, [0, 2]).tolist()        # queries come first: sentence 1's are rows 3..5
    [3, 5]
    """
    picked = check_space_selection(space, sentence, selection)
    hit = (space.kind == 0) & (space.sentence == sentence) & np.isin(space.token, picked)
    rows = np.flatnonzero(hit)
    return rows[np.argsort(space.token[rows], kind="stable")].astype(np.int64)
