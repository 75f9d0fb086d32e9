"""Static twins of the AblationWidget: :func:`paint_ablation` draws the view's state (its grid of heads, the watched
numbers before and after, the selected head's maps); :func:`plot_ablation_panel` draws the watched numbers alone, as
the same bars, from a :class:`~attnwidgets.studies.watch.WatchResult`, its ``frame``, or an :class:`AblationWidget`
(duck-typed: no torch or widget import here); :func:`plot_ablation_rows` compares selected rows of the maps. Each
returns a matplotlib Figure.

Examples
--------
>>> import pandas as pd
>>> frame = pd.DataFrame({"item": ["pair 0", "pair 1"], "name": ["cosine", "cosine"], "before": [0.9, 0.2],
...                       "after": [0.7, 0.25], "delta": [-0.2, 0.05]})
>>> fig = plot_ablation_panel(frame, title="layer 5 disabled")
>>> len(fig.axes), len(fig.axes[0].patches), [t.get_text() for t in fig.axes[1].texts]
(2, 4, ['0.9000 → 0.7000  −0.2000', '0.2000 → 0.2500  +0.0500'])
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import rcParams
from matplotlib.figure import Figure

from ..viewdata.labels import token_label, visible_text
from ..viewdata.selection import runs, span_tokens
from ..viewdata.views.ablation import (
    NO_CHANGE,
    AblationState,
    AblationView,
    Outcome,
    OutputRow,
    ablation_map,
    ablation_rows,
    ablation_setup,
    ablation_span,
    bar_range,
    delta_axis_text,
    delta_ranges,
    format_delta,
    format_value,
    head_look,
    map_title,
    map_top,
    shown_map,
)
from .style import (
    LECTURE_SCALE,
    SELECTED,
    cell_map,
    fit_lecture,
    lecture_fit,
    lecture_fonts,
    new_figure,
    resolve_theme,
)

__all__ = ["paint_ablation", "plot_ablation_panel", "plot_ablation_rows"]

BEFORE, AFTER = "#b6bcc4", "#2f81f7"

#: The page's ablation colours by theme (js/src/views/ablation/state.ts ablationColours): a head kept, a head off,
#: before, after; and its colour maps and accent (js/src/shared/theme.ts).
_LOOK = {"light": {"on": "#6baed6", "off": "#3d4450", "before": BEFORE, "after": AFTER, "cmap": "Blues",
                   "accent": SELECTED},
         "lecture": {"on": "#0072b2", "off": "#000000", "before": "#999999", "after": "#d55e00", "cmap": "viridis",
                     "accent": "#d55e00"}}


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
def plot_ablation_panel(source: Any, *, title: str | None = None, decimals: int | None = None, ax: Any = None,
                        theme: str | None = None) -> Figure:
    """The watched values before and after the ablation, as the widget's output panel draws them (and
    :func:`paint_ablation` in the whole view's picture): each number's before (grey) and after (colour) bars on the
    number's own axis, its change on one axis of ± the largest change, and the numbers.

    Parameters
    ----------
    source : WatchResult, DataFrame or AblationWidget
        The tidy ``item``, ``name``, ``before``, ``after`` (and ``delta``) table of
        :func:`attnwidgets.studies.watch_ablation`; a widget's rows as its page shows them (headed by its texts).
    title : str, optional
        Default: the ablation of the widget or result, when known.
    decimals : int, optional
        Digits of the printed numbers (default: the page's, 4 and whole numbers as they are).
    ax : matplotlib Axes, optional
        Draw into it (split in two: values and changes); the Figure of that axes is returned.
    theme : str, optional
        "light" or "lecture" (larger); default the one :func:`attnwidgets.set_theme` chose.
    """
    theme = resolve_theme(theme)
    with lecture_fonts(theme):
        return _panel(source, title, decimals, ax, theme)


def _panel(source: Any, title: str | None, decimals: int | None, ax: Any, theme: str) -> Figure:
    frame = _frame(source)
    page = getattr(source, "page_state", None)
    state = page() if callable(page) else None
    if state is not None:
        rows = state.payload.rows
    else:
        if "delta" not in frame.columns:
            frame = frame.assign(delta=frame["after"] - frame["before"])
        rows = ablation_rows(frame, ablation_setup("", {}, {}, [], None, ""))
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    n = len(rows) + len({r.item for r in rows})
    if ax is None:
        fig = new_figure((8.0 * scale, scale * max(1.8, 0.4 * n + 1.0)), layout="constrained")
        cells = fig.add_gridspec(1, 2, width_ratios=[1.6, 1.0])
    else:
        fig = ax.figure
        cells = ax.get_subplotspec().subgridspec(1, 2, width_ratios=[1.6, 1.0])
        ax.remove()
    value_ax, change_ax = fig.add_subplot(cells[0, 0]), fig.add_subplot(cells[0, 1])
    _outputs(value_ax, change_ax, rows, _LOOK.get(theme, _LOOK["light"]), decimals)
    if title is None:
        ab = getattr(source, "spec", None)  # a DataFrame's "after" is a column, not the ablated runs
        if ab is None and not isinstance(source, pd.DataFrame) and getattr(source, "after", None):
            ab = getattr(source.after[0], "ablation", None)
        title = f"before and after {ab!r}" if ab else "before and after the ablation"
    value_ax.set_title(title, loc="left")
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


def paint_ablation(state: AblationState, ax: Any = None, *, theme: str | None = None, cmap: str | None = None,
                   selection: Sequence[int] = (), combine: str = "mean") -> Figure:
    """Draw an AblationWidget state (:func:`attnwidgets.viewdata.views.ablation.ablation_state`) as the page draws
    it, under its title ("<model> · ablation"): the grid of heads of the stack shown (each head's kept share filled
    from the bottom, × zero, U uniform, M mean, .50 a scale; a disabled layer dark; the selected head outlined),
    the watched numbers (before and after on each number's own axis,
    :func:`~attnwidgets.viewdata.views.ablation.bar_range`, and their change on one axis of ± the largest change),
    and the selected head's maps before and after on one colour scale, captioned as the page captions them
    (:func:`~attnwidgets.viewdata.views.ablation.map_title`); the ``selection`` rows (the widget's trait) outlined
    and their ``combine`` drawn under each map.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from attnwidgets.result import AttentionResult
    >>> from attnwidgets.viewdata.views.ablation import ablation_setup, ablation_state
    >>> r = AttentionResult.from_arrays(np.full((1, 2, 2, 2), 0.5, np.float32), ["a", "b"], name="toy")
    >>> frame = pd.DataFrame({"item": ["text 0"], "name": ["cosine"], "before": [1.0], "after": [0.8],
    ...                       "delta": [-0.2]})
    >>> state = ablation_state(ablation_setup("toy", {"self": (1, 2)}, {"self": 0}, ["a b"], None, "drift"),
    ...                        Outcome("drift", frame, [r], [r]), AblationView(head=1),
    ...                        {"edits": [{"stack": "self", "layer": 0, "head": 1, "mode": "zero", "scale": 0}]},
    ...                        seconds=0.1, seq=1)
    >>> fig = paint_ablation(state)
    >>> fig.get_suptitle(), [t.get_text() for t in fig.axes[0].texts]
    ('toy · ablation', ['×'])
    """
    theme = resolve_theme(theme)
    with lecture_fonts(theme):
        fig = _paint(state, ax, theme, cmap, list(selection), combine)
    # Not fitted to the lecture box: like the page, which in the lecture theme is never zoomed out but wraps to the
    # width and scrolls, the picture keeps the room's font size and grows down (its parts stacked).
    return fit_lecture(fig, theme, resize=False)


def _paint(state: AblationState, ax: Any, theme: str, cmap: str | None, selection: list[int],
           combine: str) -> Figure:
    payload = state.payload
    look = _LOOK.get(theme, _LOOK["light"])
    n_layers = payload.stacks[shown_map(state).kind][0]
    n_rows = len(payload.rows) + len({r.item for r in payload.rows})
    heights = [0.3 * n_layers + 0.9, 0.3 * n_rows + 0.9, 0.25 * len(payload.map.queries) + 2.4]
    lecture = theme == "lecture"
    if lecture:  # one part under another, 14 pt text: the grid, the watched numbers, the maps
        heights = [1.3 * h for h in heights]
    else:  # the grid beside the watched numbers, the maps under them
        heights = [max(heights[:2]), heights[2]]
    if ax is None:
        fig = new_figure((9.4 if lecture else 11.0, sum(heights) + 0.8), layout="constrained")
        cells = fig.add_gridspec(len(heights), 1, height_ratios=heights)
    else:
        fig = ax.figure
        cells = ax.get_subplotspec().subgridspec(len(heights), 1, height_ratios=heights)
        ax.remove()
    if lecture:
        grid_ax = fig.add_subplot(cells[0].subgridspec(1, 2, width_ratios=[1, 1.2])[0, 0])
        top = cells[1].subgridspec(1, 2, width_ratios=[1.6, 1.0])
        value_ax, change_ax = fig.add_subplot(top[0, 0]), fig.add_subplot(top[0, 1])
    else:
        top = cells[0].subgridspec(1, 3, width_ratios=[1.2, 1.6, 1.0])
        grid_ax, value_ax, change_ax = (fig.add_subplot(top[0, i]) for i in range(3))
    _heads(grid_ax, state, look)
    _outputs(value_ax, change_ax, payload.rows, look)
    value_ax.set_title(f"watching: {visible_text(payload.watch)}", loc="left")
    bottom = cells[-1].subgridspec(1, 2)
    maps = [fig.add_subplot(bottom[0, i]) for i in range(2)]
    _maps(maps, state, cmap or look["cmap"], selection, combine, look["accent"])
    fig.suptitle(f"{visible_text(payload.title)} · ablation")
    fig.supxlabel("\n".join(textwrap.wrap(map_title(state, selection, combine), 64 if lecture else 110)))
    return fig


def _heads(ax: Any, state: AblationState, look: dict[str, str]) -> None:
    """The grid of the stack shown: a cell per head, its kept share filled from the bottom, its edit's letter."""
    from matplotlib.patches import Rectangle

    view = shown_map(state)
    n_layers, n_heads = state.payload.stacks[view.kind]
    spec = state.payload.ablation
    for layer in range(n_layers):
        for head in range(n_heads):
            cell = head_look(spec, view.kind, layer, head)
            ax.add_patch(Rectangle((head, layer), 1, 1, facecolor=look["off"], edgecolor="white", linewidth=1))
            if cell.scale > 0:
                ax.add_patch(Rectangle((head, layer + 1 - cell.scale), 1, cell.scale, facecolor=look["on"],
                                       edgecolor="white", linewidth=1))
            if cell.text:
                ax.text(head + 0.5, layer + 0.5, cell.text, ha="center", va="center", color="white")
    ax.add_patch(Rectangle((view.head, view.layer), 1, 1, fill=False, edgecolor=look["accent"], linewidth=2.5))
    off = [head_look(spec, view.kind, layer, 0).layer_off for layer in range(n_layers)]
    ax.set(xlim=(0, n_heads), ylim=(n_layers, 0), aspect="equal")
    ax.set_xticks([h + 0.5 for h in range(n_heads)], [str(h) for h in range(n_heads)])
    ax.set_yticks([lay + 0.5 for lay in range(n_layers)],
                  [f"layer {lay}{' off' if off[lay] else ''}" for lay in range(n_layers)])
    ax.tick_params(length=0)
    ax.set_xlabel("head")
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(f"{'' if view.kind == 'self' else view.kind + ' · '}heads", loc="left")


def _outputs(value_ax: Any, change_ax: Any, rows: list[OutputRow], look: dict[str, str],
             decimals: int | None = None) -> None:
    """The watched numbers, one line each under its item's heading: before and after as bars on the number's own
    axis (state.ts barSpan over barRange of its name), the change as a bar from the centre on ± the largest change
    (deltaSpan, deltaRanges), the numbers beside it (formatValue, formatDelta; ``decimals`` digits instead)."""
    def number(v: float | None) -> str:
        return format_value(v) if decimals is None or v is None or not math.isfinite(v) else f"{v:.{decimals}f}"

    def change(v: float | None) -> str:
        if decimals is None or v is None or not math.isfinite(v):
            return format_delta(v)
        return ("+" if v > 0 else "−" if v < 0 else "±") + f"{abs(v):.{decimals}f}"

    ranges = {name: bar_range([v for r in rows if r.name == name for v in (r.before, r.after)])
              for name in dict.fromkeys(r.name for r in rows)}
    changes = delta_ranges(rows)  # each watched name's own change axis, as the page zooms them
    widest = max(changes.values(), default=0.0)
    y, group = 0, None
    ticks: list[int] = []
    labels: list[str] = []
    for r in rows:
        if r.item != group:
            group = r.item
            # the item's heading over its rows and the change axis (the page's cuts with an ellipsis), no room of its
            # own in the layout
            limit = 72 if rcParams["font.size"] < 12 else 44  # lecture_fonts' larger text
            heading = visible_text(r.label or r.item)
            heading = heading if len(heading) <= limit else heading[:limit - 1] + "…"
            value_ax.text(0, y, heading, fontweight="bold", va="center", clip_on=False).set_in_layout(False)
            y += 1
        lo, hi = ranges[r.name]
        if lo < 0:
            value_ax.plot([-lo / (hi - lo)] * 2, [y - 0.4, y + 0.4], color="0.4", lw=0.8)
        for v, dy, which in ((r.before, -0.18, "before"), (r.after, 0.18, "after")):
            if v is not None:
                at = (max(lo, min(hi, v)) - lo) / (hi - lo)
                zero = -lo / (hi - lo)
                value_ax.barh(y + dy, max(abs(at - zero), 0.004), left=min(zero, at), height=0.34,
                              color=look[which])
        span = changes[r.name]
        half = 0.0 if r.delta is None or not span > 0 else max(-1.0, min(1.0, r.delta / span)) / 2
        d = r.delta or 0.0  # state.ts deltaClass: green up, red down, muted for (nearly) none
        change_ax.barh(y, abs(half), left=min(0.5, 0.5 + half), height=0.7,
                       color="0.5" if abs(d) < NO_CHANGE else "#1a7f37" if d > 0 else "#cf222e")
        change_ax.text(1.04, y, f"{number(r.before)} → {number(r.after)}  {change(r.delta)}", va="center",
                       clip_on=False)
        ticks.append(y)
        labels.append(visible_text(r.name))
        y += 1
    for ax in (value_ax, change_ax):
        ax.set(xlim=(0, 1), ylim=(max(y, 1) - 0.5, -0.5))
        ax.set_xticks([])
        for spine in ("top", "right", "left"):
            ax.spines[spine].set_visible(False)
    change_ax.axvline(0.5, color="0.4", lw=0.8)
    change_ax.patch.set_visible(False)  # the headings run on over it
    value_ax.set_yticks(ticks, labels)
    change_ax.set_yticks([])
    value_ax.set_xlabel("value: before / after")
    change_ax.set_xlabel(delta_axis_text(widest))


def _maps(axes: list[Any], state: AblationState, cmap: str, selection: list[int], combine: str, accent: str) -> None:
    """The selected head's map before and after on one colour scale; selected rows outlined, their combine under
    each map (paint.ts paintMaps, draw/span.ts)."""
    from matplotlib.patches import Rectangle

    hm = state.payload.map
    top = map_top(hm)
    n_q, n_k = len(hm.queries), len(hm.keys)
    picked = [q for q in selection if q < n_q]
    rows = ablation_span(hm, picked, combine)[:2] if picked else None
    for i, (ax, m, caption) in enumerate(zip(axes, (hm.before, hm.after), ("before", "after ablation"))):
        few = max(n_q, n_k) <= 40
        cell_map(ax, m, cmap=cmap, vmin=0.0, vmax=top, xticklabels=[token_label(k) for k in hm.keys] if few else
                 False, yticklabels=[token_label(q) for q in hm.queries] if few else False,
                 colorbar={"shrink": 0.8} if i == 1 else None)
        ax.xaxis.tick_top()
        ax.tick_params(axis="x", rotation=90)
        ax.set_xlabel(caption)
        if rows is None:
            continue
        for a, b in runs(sorted(picked)):
            ax.add_patch(Rectangle((0, a), n_k, b - a, fill=False, edgecolor=accent, linewidth=2.5, clip_on=False))
        row = rows[i]
        row_top = top if combine == "mean" else max(float(rows[0].max()), float(rows[1].max())) or 1.0
        inset = ax.inset_axes((0, -1.8 / n_q, 1, 1 / n_q))
        inset.imshow(row[None, :], cmap=cmap, vmin=0, vmax=row_top, aspect="auto", interpolation="nearest",
                     extent=(0, n_k, 1, 0))
        inset.set_xticks([])
        inset.set_yticks([0.5], [combine], color=accent)
        for spine in inset.spines.values():
            spine.set_edgecolor(accent)
            spine.set_linewidth(2)
