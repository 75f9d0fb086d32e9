"""Static twin of the AblationWidget's output panel: the watched numbers before and after an ablation, as bars.

Takes a :class:`~attnwidgets.studies.watch.WatchResult`, its ``frame``, or an :class:`AblationWidget` (duck-typed:
no torch or widget import here) and returns a matplotlib Figure.

Examples
--------
>>> import pandas as pd
>>> frame = pd.DataFrame({"item": ["pair 0", "pair 1"], "name": ["cosine", "cosine"], "before": [0.9, 0.2],
...                       "after": [0.7, 0.25], "delta": [-0.2, 0.05]})
>>> fig = plot_ablation_panel(frame, title="layer 5 disabled")
>>> len(fig.axes), len(fig.axes[0].patches)
(1, 4)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..viewdata.labels import token_label
from ..viewdata.selection import span_tokens
from ..viewdata.views.ablation import AblationView, Outcome, ablation_map, ablation_span
from .style import LECTURE_SCALE, SELECTED, lecture_fit, lecture_fonts, new_figure, resolve_theme

__all__ = ["plot_ablation_panel", "plot_ablation_rows"]

BEFORE, AFTER = "#b6bcc4", "#2f81f7"


def _frame(source: Any) -> pd.DataFrame:
    if isinstance(source, pd.DataFrame):
        frame = source
    elif isinstance(getattr(source, "frame", None), pd.DataFrame):
        frame = source.frame
    else:
        raise TypeError("plot_ablation_panel takes a WatchResult (watch_ablation), its .frame, or an AblationWidget; "
                        f"got {type(source).__name__}")
    missing = {"item", "name", "before", "after"} - set(frame.columns)
    if missing:
        raise ValueError(f"the frame needs the columns item, name, before, after; missing {sorted(missing)}")
    return frame


@lecture_fit
def plot_ablation_panel(source: Any, *, title: str | None = None, decimals: int = 3, ax: Any = None,
                        theme: str | None = None) -> Figure:
    """Horizontal bars of each watched value before (grey) and after (blue) the ablation, with the numbers.

    Parameters
    ----------
    source : WatchResult, DataFrame or AblationWidget
        The tidy ``item``, ``name``, ``before``, ``after`` table of :func:`attnwidgets.studies.watch_ablation`.
    title : str, optional
        Default: the ablation of the widget or result, when known.
    decimals : int
        Digits of the printed numbers.
    ax : matplotlib Axes, optional
        Draw into it; the Figure of that axes is returned.
    theme : str, optional
        "light" or "lecture" (larger); default the one :func:`attnwidgets.set_theme` chose.
    """
    theme = resolve_theme(theme)
    with lecture_fonts(theme):
        return _panel(source, title, decimals, ax, theme)


def _panel(source: Any, title: str | None, decimals: int, ax: Any, theme: str) -> Figure:
    frame = _frame(source)
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    labels = [f"{i} · {n}" if n not in ("", "value") else str(i) for i, n in zip(frame["item"], frame["name"])]
    before = frame["before"].to_numpy(dtype=float)
    after = frame["after"].to_numpy(dtype=float)
    n = len(frame)
    if ax is None:
        fig = new_figure((7.0 * scale, scale * max(1.8, 0.55 * n + 1.0)), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    y = np.arange(n)
    ax.barh(y - 0.2, np.nan_to_num(before), height=0.38, color=BEFORE, label="before")
    ax.barh(y + 0.2, np.nan_to_num(after), height=0.38, color=AFTER, label="after")
    finite = np.concatenate([before[np.isfinite(before)], after[np.isfinite(after)], [0.0]])
    lo, hi = float(finite.min()), float(finite.max())
    pad = 0.3 * (hi - lo or 1.0)
    ax.set_xlim(min(lo, 0.0) - (pad if lo < 0 else 0), hi + pad)
    for i, (b, a) in enumerate(zip(before, after)):
        for v, dy in ((b, -0.2), (a, 0.2)):
            if np.isfinite(v):
                ax.text(max(v, 0.0) + 0.01 * (hi - lo or 1.0), i + dy, f"{v:.{decimals}f}", va="center",
                        fontsize=8 * scale)
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel("value")
    ax.legend(loc="lower right", fontsize=8 * scale, frameon=False)
    if title is None:
        ab = getattr(source, "spec", None)  # a DataFrame's "after" is a column, not the ablated runs
        if ab is None and not isinstance(source, pd.DataFrame) and getattr(source, "after", None):
            ab = getattr(source.after[0], "ablation", None)
        title = f"before and after {ab!r}" if ab else "before and after the ablation"
    ax.set_title(title)
    return fig


@lecture_fit
def plot_ablation_rows(source: Any, selection: list[int] | None = None, combine: str | None = None, *,
                       kind: str | None = None, layer: int | None = None, head: int | None = None,
                       item: int | None = None, ax: Any = None, theme: str | None = None) -> Figure:
    """The selected query rows of one head compared before and after an ablation, as the widget draws them under
    its maps: their ``combine`` over the keys (bars, before grey and after blue) and, in the title, how much of their
    attention moved, ``½ Σ |after − before|`` (:func:`attnwidgets.viewdata.views.ablation.ablation_span`).

    Parameters
    ----------
    source : AblationWidget or WatchResult
        A widget (its ``selection``, ``combine``, ``kind``, ``layer``, ``head`` and ``item`` are the defaults) or
        what :func:`attnwidgets.studies.watch_ablation` returned (then pass ``selection``, ``layer``, ``head``).
    selection : list of int, optional
        Query rows of text ``item`` (default: the widget's).
    combine : str, optional
        "mean" (default) or "sum".
    kind, layer, head, item : optional
        The stack, head and text (default: the widget's; "self", 0, 0, 0 for a WatchResult).
    ax : matplotlib Axes, optional
        Draw into it.
    theme : str, optional
        "light" or "lecture".
    """
    watch = getattr(source, "watch_result", source)
    if not (hasattr(watch, "before") and hasattr(watch, "after") and hasattr(watch, "frame")):
        raise TypeError(f"plot_ablation_rows takes an AblationWidget or a WatchResult, got {type(source).__name__}")
    widget = source if hasattr(source, "watch_result") else None  # a WatchResult's "kind" is the watched output

    def pick(given: Any, name: str, default: Any) -> Any:
        """What was given, else the widget's trait, else the default."""
        return given if given is not None else getattr(widget, name, default)

    view = AblationView(pick(kind, "kind", "self"), pick(layer, "layer", 0), pick(head, "head", 0),
                        pick(item, "item", 0))
    hm = ablation_map(Outcome(watch.kind, watch.frame, watch.before, watch.after), view)
    selection = pick(selection, "selection", [])
    combine = pick(combine, "combine", "mean")
    before, after, moved = ablation_span(hm, selection, combine)
    theme = resolve_theme(theme)
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        if ax is None:
            fig = new_figure((scale * max(6.0, 0.45 * len(hm.keys) + 2.0), scale * 3.2), layout="constrained")
            ax = fig.add_subplot()
        else:
            fig = ax.figure
        x = np.arange(len(hm.keys))
        ax.bar(x - 0.2, before, width=0.38, color=BEFORE, label="before")
        ax.bar(x + 0.2, after, width=0.38, color=AFTER, label="after")
        ax.set_xticks(x, [token_label(k) for k in hm.keys], rotation=45, ha="right")
        ax.set_ylabel(f"attention ({combine} of the rows)")
        ax.legend(loc="upper right", frameon=False)
        rows = span_tokens([token_label(q) for q in hm.queries], sorted(selection))
        where = f"{'' if view.kind == 'self' else view.kind + ' · '}layer {view.layer} · head {view.head}"
        ax.set_title(f"rows {rows} · {where}: ½ Σ |after − before| = {moved:.3f}", color=SELECTED)
    return fig
