"""Static twin of :class:`attnwidgets.QKSpaceView`: a head's queries (filled dots) and keys (rings) over a corpus,
embedded together, coloured as the view colours them."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..analysis.qk_space import check_color
from ..viewdata.labels import token_label, visible_text
from ..viewdata.qk_space import check_qk_space, check_view_color
from ..viewdata.selection import check_selection
from ..viewdata.views.qk_space import QKSpaceState, qk_space_state
from .head_view import HEAD_COLOURS
from .style import LECTURE_SCALE, SELECTED, colormap, lecture_fit, lecture_fonts, new_figure, resolve_theme

__all__ = ["paint_qk_space", "plot_qk_space"]

_OTHER = "#b4b4b4"  # js/src/views/qk_space/state.ts OTHER
_LABELS = {"position": "position in sentence (first … last)",
           "attention": "attention received (mean over the queries that see it)"}


@lecture_fit
def plot_qk_space(space: Any, color: str | None = None, *, theme: str | None = None, cmap: str | None = None,
                  sentence: int | None = None, selection: list[int] | None = None, ax: Any = None) -> Figure:
    """Queries (filled dots) and keys (rings) of one head over a corpus, as :class:`attnwidgets.QKSpaceView` draws
    them.

    Parameters
    ----------
    space : QKSpace
        From :func:`attnwidgets.studies.qk_space`.
    color : str, optional
        "position", "token", "pos" or "attention" (default: the space's own).
    theme, cmap : str, optional
        "light" or "lecture"; a matplotlib colour map for the continuous colourings (default viridis).
    sentence : int, optional
        Outline this sentence's points (what a click marks in the view).
    selection : list of int, optional
        Selected query tokens of ``sentence`` (as the view's ``selection``): their query points ringed in the
        selection's colour.
    ax : matplotlib Axes, optional
        Draw into it instead of a new figure.

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.analysis.qk_space import build_qk_space
    >>> import attnwidgets.plots as awp
    >>> rng = np.random.default_rng(0)
    >>> q = [rng.normal(size=(4, 8)) for _ in range(3)]
    >>> space = build_qk_space(q, q, [np.full((4, 4), 0.25)] * 3, [["[CLS]", "a", "b", "[SEP]"]] * 3)
    >>> fig = awp.plot_qk_space(space, "token")
    >>> " ".join(fig.axes[0].get_title().split())   # wrapped to the figure's width
    'model · layer 0 head 0 · queries and keys of 3 sentences (PCA), coloured by token'
    """
    space = check_qk_space(space, "plot_qk_space")
    color = check_view_color(space.color if color is None else color, space)
    # The page's own state (viewdata.views.qk_space): its points, category names and title are what is drawn.
    return _paint(qk_space_state(space), ax, color, theme, cmap, sentence, selection)


@lecture_fit
def paint_qk_space(state: QKSpaceState, ax: Any = None, *, color: str = "position", theme: str | None = None,
                   cmap: str | None = None, sentence: int | None = None, selection: list[int] | None = None
                   ) -> Figure:
    """Draw a QKSpaceView's state (:func:`~attnwidgets.viewdata.views.qk_space.qk_space_state`) as its page draws
    it: the state's points (queries filled, keys ringed) coloured by ``color``, its category names and its title.

    Parameters
    ----------
    state : QKSpaceState
    ax : matplotlib Axes, optional
        Draw into it instead of a new figure.
    color, theme, cmap, sentence, selection
        As :func:`plot_qk_space`'s (the widget's traits of those names; ``sentence`` -1 or None: none).

    Examples
    --------
    >>> from attnwidgets.analysis.qk_space import build_qk_space
    >>> from attnwidgets.viewdata.views.qk_space import qk_space_state
    >>> q = [np.eye(4)] * 2
    >>> space = build_qk_space(q, q, [np.full((4, 4), 0.25)] * 2, [["[CLS]", "a", "b", "[SEP]"]] * 2)
    >>> ax = paint_qk_space(qk_space_state(space), color="attention").axes[0]
    >>> " ".join(ax.get_title().split()), ax.collections[1].get_clim()
    ('model · layer 0 head 0 · queries and keys of 2 sentences (PCA), coloured by attention', (0.0, 0.25))
    """
    return _paint(state, ax, color, theme, cmap, sentence, selection)


def _picked(state: QKSpaceState, sentence: int | None, selection: list[int] | None) -> np.ndarray:
    """The rows of the query points of ``sentence``'s selected tokens, in token order, read from the state's
    points (:func:`attnwidgets.viewdata.qk_space.selected_points`' rule; js/src/views/qk_space/state.ts
    selectedPoints)."""
    n = len(state.meta.tokens)
    if sentence is None or sentence == -1:
        if selection:
            raise ValueError("no sentence is shown, so there are no tokens to select: click a point or set sentence "
                             "first")
        return np.zeros(0, np.int64)
    if isinstance(sentence, bool) or not isinstance(sentence, (int, np.integer)) or not 0 <= sentence < n:
        raise ValueError(f"sentence {sentence!r} is out of range: there are {n} sentences (0..{n - 1})")
    picked = check_selection(selection or [], len(state.meta.tokens[sentence]))
    points = state.payload.points
    rows = np.flatnonzero((points[:, 2] == 0) & (points[:, 3] == sentence) & np.isin(points[:, 4], picked))
    return rows[np.argsort(points[rows, 4], kind="stable")].astype(np.int64)


def _paint(state: QKSpaceState, ax: Any, color: str, theme: str | None, cmap: str | None, sentence: int | None,
           selection: list[int] | None) -> Figure:
    color = check_color(color, state.meta.has_pos)
    theme = resolve_theme(theme)
    picked = _picked(state, sentence, selection)
    sentence = None if sentence is None or sentence == -1 else int(sentence)
    points, meta = state.payload.points, state.meta
    names = {"token": meta.token_names, "pos": meta.pos_names}
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    if ax is None:
        fig = new_figure((scale * 7.5, scale * 6.0), layout="constrained")
        ax = fig.add_subplot(1, 1, 1)
    else:
        fig = ax.figure
    queries, keys = points[:, 2] == 0, points[:, 2] == 1
    size = 22 if theme == "lecture" else 12
    with lecture_fonts(theme):
        if color in ("token", "pos"):
            cats = points[:, 7 if color == "token" else 8].astype(int)
            labels = names["token" if color == "token" else "pos"]
            for k in [-1, *range(len(labels))]:
                c = _OTHER if k < 0 else HEAD_COLOURS[k % len(HEAD_COLOURS)]
                sel = cats == k
                name = None if k < 0 else token_label(labels[k]) if color == "token" else visible_text(labels[k])
                ax.scatter(points[sel & queries, 0], points[sel & queries, 1], s=size, color=c, linewidths=0,
                           label=name)   # U+202E and other invisible characters as markers, as on the page
                ax.scatter(points[sel & keys, 0], points[sel & keys, 1], s=size, facecolors="none", edgecolors=c,
                           linewidths=1.0)
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, markerscale=1.5,
                      title="token" if color == "token" else "part of speech")
        else:
            values = points[:, 5 if color == "position" else 6]
            vmax = float(np.nanmax(values)) if color == "attention" and np.isfinite(values).any() else 1.0
            vmax = vmax if vmax > 0 else 1.0  # as the page's pointColors: attention received nowhere is 0 of 1
            cm = colormap(cmap or "viridis")  # as the view: a map without a near-white end, for points on white
            grey = ~np.isfinite(values)
            ax.scatter(points[grey & queries, 0], points[grey & queries, 1], s=size, color=_OTHER, linewidths=0)
            ok = ~grey
            mappable = ax.scatter(points[ok & queries, 0], points[ok & queries, 1], s=size, c=values[ok & queries],
                                  cmap=cm, vmin=0, vmax=vmax, linewidths=0)
            ax.scatter(points[ok & keys, 0], points[ok & keys, 1], s=size, facecolors="none",
                       edgecolors=cm(np.clip(values[ok & keys] / vmax, 0, 1)), linewidths=1.0)
            if color == "attention":
                mappable.set_clim(0, vmax)
            fig.colorbar(mappable, ax=ax, label=_LABELS[color], shrink=0.8)
        if sentence is not None:
            sel = points[:, 3] == sentence
            ax.scatter(points[sel, 0], points[sel, 1], s=size * 2.2, facecolors="none", edgecolors="black",
                       linewidths=1.2)
        if len(picked):
            ax.scatter(points[picked, 0], points[picked, 1], s=size * 5, facecolors="none", edgecolors=SELECTED,
                       linewidths=2.5)
        ax.set_title(f"{meta.title}, coloured by {'part of speech' if color == 'pos' else color}")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("● query   ○ key" + (f"   (PCA: {100 * sum(meta.explained):.0f}% of the variance)"
                                             if meta.explained else ""))
    return fig
