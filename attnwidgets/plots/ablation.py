"""Static twins of the ablation views: the head-disabling sweep heatmap, the pruning curve, a layers × heads grid.

Each function takes plain arrays or the dataclasses of :mod:`attnwidgets.studies.sweeps` (duck-typed: no torch is
imported here) and returns a matplotlib Figure.

Examples
--------
>>> import numpy as np
>>> fig = plot_head_grid(np.arange(12.0).reshape(3, 4), title="demo")
>>> len(fig.axes)
2
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from .style import LECTURE_SCALE, lecture_fit, lecture_fonts, new_figure, resolve_theme

__all__ = ["plot_head_grid", "plot_pruning_curve", "plot_sweep"]


@lecture_fit
def plot_head_grid(values: np.ndarray, *, title: str = "", cmap: str = "viridis", center: float | None = None,
                   marks: np.ndarray | None = None, label: str = "", annotate: bool = True,
                   layer_values: np.ndarray | None = None, theme: str | None = None,
                   limits: tuple[float, float] | None = None) -> Figure:
    """A layers × heads heatmap (rows = layers, 0 at the top), optional marks on some cells and a per-layer column.

    The colour bar's label says what its range is: the grid's own range (the default: a spread of 0.98–1.00 then
    fills every colour, so a < 2 % change looks dramatic), centred on ``center``, or a fixed ``limits`` axis.

    Parameters
    ----------
    values : np.ndarray
        (L, H).
    center : float, optional
        Centre a diverging colour map on this value (e.g. 0 for metric changes).
    marks : np.ndarray, optional
        (L, H) bool: cells outlined (e.g. heads whose removal improves the metric).
    layer_values : np.ndarray, optional
        (L,) shown as an extra column "layer" on the right (e.g. the whole layer disabled).
    theme : str, optional
        "light" or "lecture" (larger); default the one :func:`attnwidgets.set_theme` chose.
    limits : (float, float), optional
        A fixed colour axis (low, high), e.g. (0, 10) for a change in %: values outside take the end colours.

    Examples
    --------
    >>> fig = plot_head_grid(np.array([[0.98, 1.0]]), label="cosine")
    >>> print(fig.axes[1].get_ylabel())
    cosine
    colours span this grid's range 0.98–1
    >>> fig = plot_head_grid(np.array([[2.0, 0.0]]), label="1 − cosine (%)", limits=(0, 10))
    >>> print(fig.axes[1].get_ylabel()); fig.axes[1].get_ylim()
    1 − cosine (%)
    fixed axis 0–10
    (np.float64(0.0), np.float64(10.0))
    """
    theme = resolve_theme(theme)
    if limits is not None:
        lo, hi = (float(x) for x in limits)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"limits must be two finite numbers (low, high) with low < high, got {limits!r}")
    with lecture_fonts(theme):
        return _head_grid(values, title, cmap, center, marks, label, annotate, layer_values, theme, limits)


def _head_grid(values: np.ndarray, title: str, cmap: str, center: float | None, marks: np.ndarray | None,
               label: str, annotate: bool, layer_values: np.ndarray | None, theme: str,
               limits: tuple[float, float] | None = None) -> Figure:
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    v = np.asarray(values, dtype=np.float64)
    L, H = v.shape
    grid = v if layer_values is None else np.column_stack([v, np.full(L, np.nan), layer_values])
    fig = new_figure((scale * max(4.0, 0.55 * grid.shape[1] + 2), scale * max(2.5, 0.45 * L + 1.2)),
                     layout="constrained")
    ax = fig.add_subplot()
    finite = grid[np.isfinite(grid)]
    if limits is not None:
        vmin, vmax = (float(x) for x in limits)
        cm = "RdBu" if center is not None else cmap
        how = f"fixed axis {vmin:g}–{vmax:g}"
    elif center is not None and finite.size:
        span = max(float(np.max(np.abs(finite - center))), 1e-12)
        vmin, vmax, cm = center - span, center + span, "RdBu"
        how = f"centred on {center:g}, colours span ±{span:.2g}"
    else:
        vmin, vmax, cm = (float(finite.min()), float(finite.max()), cmap) if finite.size else (0.0, 1.0, cmap)
        how = f"colours span this grid's range {vmin:.3g}–{vmax:.3g}"
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cm, vmin=vmin, vmax=vmax, aspect="auto")
    fig.colorbar(im, ax=ax, label=f"{label}\n{how}" if label else how)
    ax.set_yticks(range(L))
    ax.set_ylabel("layer")
    ticks = [str(h) for h in range(H)] + ([] if layer_values is None else ["", "layer"])
    ax.set_xticks(range(len(ticks)), ticks)
    ax.set_xlabel("head")
    if annotate and grid.size <= 400:
        for (i, j), x in np.ndenumerate(grid):
            if np.isfinite(x):
                ax.text(j, i, f"{x:.2g}", ha="center", va="center", fontsize=6 * scale,
                        color="white" if center is None and x < (vmin + vmax) / 2 else "black")
    if marks is not None:
        from matplotlib.patches import Rectangle

        for i, j in zip(*np.nonzero(np.asarray(marks, bool))):
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2))
    if title:
        ax.set_title(title)
    return fig


@lecture_fit
def plot_sweep(sweep: Any, *, title: str | None = None, theme: str | None = None) -> Figure:
    """Heatmap of the metric change when each head (and layer) is disabled; outlined: removal improves the metric.

    Parameters
    ----------
    sweep : SweepResult
        From :func:`attnwidgets.studies.sweeps.sweep_heads`.
    theme : str, optional
        "light" or "lecture" (larger); default the one :func:`attnwidgets.set_theme` chose.
    """
    delta = np.asarray(sweep.heads) - sweep.baseline
    layers = np.asarray(sweep.layers) - sweep.baseline
    n_up = int(np.nansum(delta > 0))
    t = title or (f"{sweep.metric} change with one head disabled ({sweep.mode}); baseline {sweep.baseline:.3f}, "
                  f"{n_up} heads improve it (outlined)")
    return plot_head_grid(delta, title=t, center=0.0, marks=delta > 0, label=f"Δ {sweep.metric}",
                          layer_values=None if np.all(np.isnan(layers)) else layers, theme=theme)


@lecture_fit
def plot_pruning_curve(curve: Any, *, ax: Any = None, label: str | None = None, theme: str | None = None) -> Figure:
    """The metric against the share of heads pruned (Michel et al.), one marker per step.

    Parameters
    ----------
    curve : PruningCurve or pandas.DataFrame
        With columns ``share`` and ``metric``.
    ax : matplotlib Axes, optional
        Draw into it (to overlay several curves); the Figure of that axes is returned.
    theme : str, optional
        "light" or "lecture" (larger); default the one :func:`attnwidgets.set_theme` chose.
    """
    theme = resolve_theme(theme)
    with lecture_fonts(theme):
        return _pruning_curve(curve, ax, label, theme)


def _pruning_curve(curve: Any, ax: Any, label: str | None, theme: str) -> Figure:
    is_frame = hasattr(curve, "columns")  # a DataFrame's "metric" column is not the metric's name
    frame = curve if is_frame else curve.frame
    metric = "metric" if is_frame else getattr(curve, "metric", "metric")
    if ax is None:
        scale = LECTURE_SCALE if theme == "lecture" else 1.0
        fig = new_figure((5 * scale, 3.5 * scale), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    ax.plot(100 * frame["share"], frame["metric"], marker="o", label=label)
    ax.axhline(float(frame["metric"].iloc[0]), color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("heads pruned (%)")
    if not (is_frame and ax.get_ylabel()):  # overlaying a bare frame keeps the curve's metric name
        ax.set_ylabel(metric)
    ax.set_title("iterative pruning by head importance")
    if label:
        ax.legend()
    return fig
