"""Static twins for head roles: the per-head role grid beside one head's pattern on the repeated sequence, the ablation
check, and the induction curve of the teaching kit's training run (also drawn live while it trains)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..analysis.roles import ROLE_LABELS, ROLES
from ..viewdata.checks import check_head, check_layer
from ..viewdata.roles import check_roles, role_stats
from .head_stats import plot_head_stats
from .heatmap import plot_heatmap
from .style import LECTURE_SCALE, LiveFigure, lecture_fit, lecture_fonts, new_figure, resolve_theme

__all__ = ["LiveInductionCurve", "plot_head_roles", "plot_induction_curve", "plot_role_check"]


@lecture_fit
def plot_head_roles(roles: Any, role: str = "induction", *, layer: int | None = None, head: int | None = None,
                    selection: list[int] | None = None, theme: str | None = None, cmap: str | None = None) -> Figure:
    """Static twin of :class:`attnwidgets.HeadRolesView`: the layers x heads grid of one role's score (left) and
    one head's attention on the repeated sequence (right; default the role's best head, outlined in the grid).

    On an induction head the right panel shows the induction stripe: in the second copy's rows, a diagonal
    ``seq_len - 1`` below the main one (each token attends to the token after its earlier occurrence).

    ``selection`` (query rows of the example, as the view's heatmap's): the map outlines them and the grid shows
    the role scores of those rows of the example alone, as the view does.

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> from attnwidgets.analysis.roles import HeadRoles, ROLES
    >>> a = np.tril(np.ones((7, 7), np.float32)); a /= a.sum(1, keepdims=True)
    >>> ex = aw.AttentionResult.from_arrays(np.stack([a, a])[None], list("^abcabc"), kind="decoder")
    >>> roles = HeadRoles({k: np.array([[0.1, 0.7]]) for k in ROLES}, ex, 3, 1, 1, 0, "toy")
    >>> fig = aw.plots.plot_head_roles(roles)
    >>> [ax.get_title() for ax in fig.axes if ax.get_title()][1]
    'head 0.1 on the repeated tokens'
    """
    roles = check_roles(roles, "plot_head_roles")
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; choose one of {list(ROLES)}")
    theme = resolve_theme(theme)
    n_layers, n_heads = roles.shape
    best = roles.top(role, 1)[0]
    layer = best[0] if layer is None else check_layer(layer, n_layers)
    head = best[1] if head is None else check_head(head, n_heads)
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    # Constrained layout: the grid's colour-bar label and the map's axis label beside it stay apart.
    fig = new_figure((scale * (max(4.0, 0.55 * n_heads + 2) + 6.0), scale * max(4.5, 0.45 * n_layers + 1.5)),
                     layout="constrained")
    grid_ax, map_ax = fig.subplots(1, 2, gridspec_kw={"width_ratios": [max(4.0, 0.55 * n_heads + 2), 6.0]})
    stats = role_stats(roles, "plot_head_roles", rows=selection or None)
    plot_head_stats(stats, role, theme=theme, cmap=cmap, ax=grid_ax, selected=(layer, head))
    plot_heatmap(roles.example, layer, head, theme=theme, cmap=cmap, ax=map_ax, annotate=False,
                 selection=selection or None)
    with lecture_fonts(theme):
        grid_ax.set_title(ROLE_LABELS[role])  # the grid's own title (source · label) is too long beside a map
        map_ax.set_title(f"head {layer}.{head} on the repeated tokens")
        fig.suptitle(stats.title)
    return fig


@lecture_fit
def plot_role_check(check: Any, *, theme: str | None = None) -> Figure:
    """Bars of the induction loss: nothing ablated, the role's best heads ablated, and each random set ablated
    (:func:`attnwidgets.studies.confirm_role`).

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.analysis.roles import RoleCheck
    >>> fig = plot_role_check(RoleCheck("induction", [(1, 2)], 0.5, 3.0, [[(0, 0)], [(1, 1)]], np.array([0.6, 0.5])))
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['clean', 'top 1\\ninduction', 'random\\n#1', 'random\\n#2']
    """
    theme = resolve_theme(theme)
    labels = ["clean", f"top {len(check.heads)}\n{check.role}",
              *[f"random\n#{i + 1}" for i in range(len(check.random))]]
    values = [check.clean, check.ablated, *np.asarray(check.random, dtype=float).tolist()]
    colors = ["#8c8c8c", "#d1242f", *["#4c78a8"] * len(check.random)]
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        fig = new_figure((scale * max(4.5, 0.8 * len(values) + 2), scale * 3.4))
        ax = fig.add_subplot()
        ax.bar(range(len(values)), values, color=colors)
        ax.set_xticks(range(len(values)), labels)
        ax.set_ylabel("loss on the second copy")
        ax.set_title(f"ablating {check.heads}: {check.rise:+.2f}; random sets: {check.random_rise:+.2f}")
        fig.tight_layout()
    return fig


@lecture_fit
def plot_induction_curve(steps: Sequence[int], loss: Sequence[float], induction: Any, *, total: int | None = None,
                         theme: str | None = None, ax: Any = None) -> Figure:
    """The induction score rising while the loss drops: second-copy loss (left axis) and each head's induction
    score (right axis; the best head thick) against the training step.

    ``induction`` is (K, layers, heads) or (K,) per evaluation; ``total`` fixes the x range (for a live plot).

    Examples
    --------
    >>> fig = plot_induction_curve([0, 10, 20], [3.4, 3.3, 1.0], np.array([[[0.05, 0.1]], [[0.1, 0.2]], [[0.1, 0.9]]]))
    >>> len(fig.axes), fig.axes[1].get_ylabel()
    (2, 'induction score')
    """
    theme = resolve_theme(theme)
    steps_a = np.asarray(steps, dtype=float)
    loss_a = np.asarray(loss, dtype=float)
    ind = np.asarray(induction, dtype=float)
    ind = ind.reshape(len(ind), int(np.prod(ind.shape[1:]))) if ind.ndim > 1 else ind[:, None]
    if not (len(steps_a) == len(loss_a) == len(ind)):
        raise ValueError(f"steps, loss and induction need one entry per evaluation, got {len(steps_a)}, "
                         f"{len(loss_a)} and {len(ind)}")
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        if ax is None:
            fig = new_figure((scale * 6.4, scale * 3.4))
            ax = fig.add_subplot()
        else:
            fig = ax.figure
        ax.plot(steps_a, loss_a, color="#8c8c8c", linewidth=2, label="loss on the second copy")
        ax.set_xlabel("training step")
        ax.set_ylabel("loss", color="#555555")
        right = ax.twinx()
        best = int(np.argmax(ind[-1])) if len(ind) else 0
        for j in range(ind.shape[1]):
            right.plot(steps_a, ind[:, j], color="#d1242f" if j == best else "#f0a3a3",
                       linewidth=2.5 if j == best else 0.8)
        right.set_ylim(0, 1)
        right.set_ylabel("induction score", color="#d1242f")
        if total is not None:
            ax.set_xlim(0, total)
        if len(loss_a):
            ax.set_ylim(0, max(float(np.nanmax(loss_a)) * 1.05, 1e-3))
        now = f"step {int(steps_a[-1])}: loss {loss_a[-1]:.2f}, max induction {ind[-1].max():.2f}" if len(ind) else ""
        ax.set_title(now)
        fig.tight_layout()
    return fig


class LiveInductionCurve(LiveFigure):
    """A live :func:`plot_induction_curve` for a notebook: pass its :meth:`update` as ``train_induction``'s
    ``callback`` and the figure below the cell redraws every ``every``-th evaluation (and once at the end with
    :meth:`finish`).

    Examples
    --------
    >>> live = LiveInductionCurve(total=20, display=False)
    >>> live.update(0, 3.4, np.zeros((2, 4))); live.update(10, 3.0, np.full((2, 4), 0.3))
    >>> len(live.steps), live.figure().axes[0].get_title()
    (2, 'step 10: loss 3.00, max induction 0.30')
    """

    def __init__(self, total: int | None = None, *, every: int = 5, theme: str | None = None,
                 display: bool = True) -> None:
        super().__init__(total, every, theme, display)
        self.loss: list[float] = []
        self.induction: list[np.ndarray] = []
        self._show()

    def figure(self) -> Figure:
        """The curve so far."""
        ind = np.stack(self.induction) if self.induction else np.zeros((0, 1))
        return plot_induction_curve(self.steps, self.loss, ind, total=self.total, theme=self.theme)

    def update(self, step: int, loss: float, induction: Any) -> None:
        """Record one evaluation (``train_induction``'s callback signature); redraw every ``every``-th."""
        self.steps.append(int(step))
        self.loss.append(float(loss))
        self.induction.append(np.asarray(induction, dtype=float))
        self._recorded()
