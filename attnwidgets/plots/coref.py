"""Static twin of :meth:`attnwidgets.HeadStatsGrid.from_coref`: antecedent selection accuracy per head, baselines
in the title."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from ..viewdata.coref import COREF_STATISTIC, coref_stats
from .head_stats import plot_head_stats
from .style import lecture_fit

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_coref"]


@lecture_fit
def plot_coref(scores: Any, *, selected: tuple[int, int] | bool | None = True, **kwargs: Any) -> Figure:
    """Draw every head's antecedent selection accuracy (:func:`attnwidgets.studies.coref_scores`) as a layers x heads
    grid, the baselines in the title, the best head outlined (``selected=False``: none; or a (layer, head) to outline).
    Other keyword arguments go to :func:`attnwidgets.plots.plot_head_stats` (``theme``, ``cmap``, ``ax``,
    ``annotate``).

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.analysis.coref import CorefScores
    >>> s = CorefScores(np.array([[[True, False], [True, True]]]), {b: np.array([True, False])
    ...                 for b in ("nearest", "same_head", "rules")}, [{"kind": "pronoun"}] * 2)
    >>> fig = plot_coref(s)
    >>> "baselines: nearest 0.50" in fig.axes[0].get_title()
    True
    """
    if selected is True:
        best = scores.best_heads(1).iloc[0]
        chosen: tuple[int, int] | None = (int(best["layer"]), int(best["head"]))
    elif selected is False:
        chosen = None
    else:
        chosen = selected
    fig = plot_head_stats(coref_stats(scores), COREF_STATISTIC, selected=chosen, **kwargs)
    ax = fig.axes[0]
    ax.set_title("\n".join(textwrap.wrap(ax.get_title(), 70)), fontsize=ax.title.get_fontsize())
    fig.tight_layout()
    return fig
