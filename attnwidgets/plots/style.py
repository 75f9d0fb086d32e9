"""What every static twin shares: figures built as :class:`matplotlib.figure.Figure` (never through pyplot, so
returning one does not also display it, and a last-line call shows it once), and the theme, which follows
:func:`attnwidgets.set_theme` unless a plot is given ``theme=``.

>>> import matplotlib.pyplot as plt
>>> before = plt.get_fignums()
>>> fig = new_figure((3, 2))
>>> plt.get_fignums() == before, type(fig).__name__
(True, 'Figure')
"""

from __future__ import annotations

import functools
import re
import textwrap
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import pairwise
from typing import Any, Literal, TypeVar

from matplotlib import colormaps, rc_context
from matplotlib.colors import Colormap
from matplotlib.figure import Figure

from ..viewdata.theme import resolve_theme

__all__ = ["COLORBLIND", "LECTURE_BOX", "LECTURE_DPI", "LECTURE_MIN_FONT", "LECTURE_SCALE", "SELECTED", "LiveFigure",
           "cell_map", "colormap", "fit_lecture", "fit_panels", "lecture_fit", "lecture_fonts", "manual_layout",
           "new_figure", "panel_grid", "resolve_theme", "untangle"]

#: How much larger a lecture figure is than a light one (fonts are set separately).
#: The edge colour of a selection of query tokens (the selected rows' outline), in every twin that marks one.
SELECTED = "#d1242f"

LECTURE_SCALE = 1.3

_LECTURE_RC: dict[str, Any] = {"font.size": 14, "axes.titlesize": 16, "axes.labelsize": 15, "xtick.labelsize": 13,
               "ytick.labelsize": 13, "legend.fontsize": 13, "figure.titlesize": 17}


#: The smallest font (points) a lecture figure draws: at :data:`LECTURE_DPI` a point is 100/72 px, so 14 pt is about
#: 19 px, readable from the back of a room on a 1280 x 720 projector.
LECTURE_MIN_FONT = 14.0

#: Pixels per inch of a lecture figure (what a notebook shows it at, one figure pixel per screen pixel).
LECTURE_DPI = 100

#: The largest lecture figure, in inches at :data:`LECTURE_DPI`: 960 x 560 px, what a notebook's output area shows at
#: once on a 1280 x 720 screen (about 600 px of notebook below JupyterLab's bars; the side bar may be open).
LECTURE_BOX = (9.6, 5.6)

_NUMBER = re.compile(r"^[\s−+-]*[\d.,]+\s*[%×x]?$")
_F = TypeVar("_F", bound=Callable[..., Any])


def new_figure(figsize: tuple[float, float], **kwargs: Any) -> Figure:
    """A Figure that pyplot does not know about (it is shown where it is returned or displayed, once)."""
    return Figure(figsize=figsize, **kwargs)


def colormap(name: str) -> Colormap:
    """The registered matplotlib colour map ``name`` (what ``pyplot.get_cmap`` gives, without pyplot)."""
    return colormaps[name]


#: Ten colours told apart with the common colour-vision deficiencies (seaborn's "colorblind" palette, after Wong 2011).
COLORBLIND = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133",
              "#56b4e9")


def cell_map(ax: Any, values: Any, *, cmap: str, vmin: float, vmax: float, annotate: bool = False,
             fontsize: float = 7.0, xticklabels: Sequence[str] | bool = True,
             yticklabels: Sequence[str] | bool = True, linewidth: float = 0.0,
             colorbar: dict[str, Any] | None = None) -> Any:
    """Draw ``values`` (rows x columns; NaN cells left blank) as a grid of square coloured cells on ``ax``, row 0 at
    the top, with each value written in its cell (``annotate``, two decimals, dark on light cells and white on dark
    ones), tick labels at the cell centres (``True``: the indices, thinned to what the axis holds; ``False``: none)
    and a colour bar (``colorbar``: keyword arguments of ``Figure.colorbar``). Returns the cells (a QuadMesh).

    >>> import numpy as np
    >>> fig = new_figure((3, 2))
    >>> mesh = cell_map(fig.add_subplot(), np.array([[0.1, np.nan], [0.9, 0.5]]), cmap="Blues", vmin=0, vmax=1,
    ...                 annotate=True, colorbar={"label": "share"})
    >>> [t.get_text() for t in fig.axes[0].texts], [t.get_color() for t in fig.axes[0].texts]
    (['0.10', '0.90', '0.50'], ['.15', 'w', 'w'])
    >>> [float(y) for y in fig.axes[0].get_ylim()], fig.axes[1].get_ylabel()     # row 0 at the top; the colour bar
    ([2.0, 0.0], 'share')
    """
    import numpy as np
    from matplotlib.colors import to_rgba_array

    data = np.ma.masked_invalid(np.asarray(values, dtype=np.float64))
    rows, cols = data.shape
    for spine in ax.spines.values():
        spine.set_visible(False)
    mesh = ax.pcolormesh(data, cmap=cmap, vmin=vmin, vmax=vmax, linewidths=linewidth, edgecolor="white")
    ax.set(xlim=(0, cols), ylim=(0, rows))
    ax.invert_yaxis()
    if colorbar is not None:
        ax.figure.colorbar(mesh, ax=ax, **colorbar).outline.set_linewidth(0)
    box = ax.get_window_extent().transformed(ax.figure.dpi_scale_trans.inverted())
    for axis, labels, n, inches in ((ax.xaxis, xticklabels, cols, box.width),
                                    (ax.yaxis, yticklabels, rows, box.height)):
        if labels is False:
            ticks, texts = [], []
        elif labels is True:  # every k-th index: as many as the axis holds at its tick labels' font size
            (tick,) = axis.set_ticks([0])
            every = n // max(1, int(inches // (tick.label1.get_size() / 72))) + 1
            ticks, texts = list(np.arange(0, n, every) + 0.5), [str(i) for i in range(0, n, every)]
        else:
            ticks, texts = list(np.arange(n) + 0.5), list(labels)
        axis.set_ticks(ticks, texts)
    for label in ax.get_yticklabels():
        label.set_verticalalignment("center")
    if annotate:
        mesh.update_scalarmappable()
        rgb = to_rgba_array(mesh.get_facecolors())[:, :3]
        linear = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
        luminance = linear @ np.array([0.2126, 0.7152, 0.0722])
        blank = np.ma.getmaskarray(data)  # NaN cells: no number
        for (r, c), lum in zip(np.ndindex(rows, cols), luminance):
            if not blank[r, c]:
                ax.text(c + 0.5, r + 0.5, f"{data[r, c]:.2f}", color=".15" if lum > 0.408 else "w", ha="center",
                        va="center", fontsize=fontsize)
    ax.set_aspect("equal")
    return mesh


@contextmanager
def missing_glyphs_quiet() -> Iterator[None]:
    """Inside it, drawing text whose characters the font lacks (CJK, emoji where no such font is installed) does not
    warn once per character: the token's text is right, only the machine's fonts cannot draw it (boxes)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
        yield


@contextmanager
def lecture_fonts(theme: str) -> Iterator[None]:
    """Inside it, text made with the default sizes is projector-sized when ``theme`` is "lecture"."""
    with rc_context(_LECTURE_RC if theme == "lecture" else None):  # type: ignore[arg-type]
        yield


def manual_layout(fig: Figure) -> Figure:
    """Mark ``fig`` as placed by hand (``subplots_adjust``): :func:`fit_lecture` then leaves its layout alone."""
    fig._aw_manual_layout = True  # type: ignore[attr-defined]
    return fig


#: Marks a figure made by :func:`panel_grid`: its panels are laid out together by :func:`fit_panels`.
PANEL_GRID = "_aw_panel_grid"


def lecture_fit(plot: _F) -> _F:
    """Decorate a ``plot_*`` function: in the lecture theme its Figure goes through :func:`fit_lecture` (resized to
    fit :data:`LECTURE_BOX` unless drawn into the caller's ``ax``)."""

    @functools.wraps(plot)
    def fitted(*args: Any, **kwargs: Any) -> Any:
        fig = plot(*args, **kwargs)
        ax = kwargs.get("ax")
        if ax is not None and getattr(ax.figure, PANEL_GRID, False):
            # One panel of a panel_grid figure: fit_panels lays the whole figure out once, when every panel is
            # drawn (laying it out after each panel redrew every panel again: 8 heatmaps took 11.5 s instead of 2).
            return fig
        return untangle(fit_lecture(fig, kwargs.get("theme"), resize=ax is None))

    return fitted  # type: ignore[return-value]


def fit_lecture(fig: Figure, theme: str | None = None, *, resize: bool = True) -> Figure:
    """In the lecture theme (``theme``, or the current one), make ``fig`` projector-ready in place and return it:

    - every text at least :data:`LECTURE_MIN_FONT` points (titles, tick and token labels, colour-bar labels, legends);
    - the figure, as a notebook shows it (its tight bounding box at :data:`LECTURE_DPI`), inside :data:`LECTURE_BOX`
      (``resize=False``: the caller's figure keeps its size);
    - labels that would overlap at that size thinned (every k-th kept) rather than shrunk; numbers written in cells
      that no longer fit their cells dropped (the colour says it); long titles wrapped.

    Other themes: ``fig`` unchanged.

    >>> fig = new_figure((12, 9))
    >>> ax = fig.add_subplot()
    >>> _ = ax.set_xticks(range(40), [f"token{i}" for i in range(40)], fontsize=6)
    >>> fig = fit_lecture(fig, "lecture")
    >>> [float(x) for x in fig.get_size_inches()] <= [9.6, 5.6], min(t.get_fontsize() for t in ax.get_xticklabels())
    (True, 14.0)
    >>> 0 < len(ax.get_xticks()) < 40  # thinned, not shrunk
    True
    """
    if resolve_theme(theme) != "lecture":
        return fig
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.set_dpi(LECTURE_DPI)
    _raise_fonts(fig)
    box_w, box_h = LECTURE_BOX
    if resize:
        w, h = fig.get_size_inches()  # each side on its own: the fonts keep their size, so a wide figure keeps height
        fig.set_size_inches(min(w, box_w), min(h, box_h))
    _relayout(fig, resize)
    for _ in range(4):  # each pass draws the figure two or three times: stop as soon as nothing changes
        wrapped = _wrap_titles(fig)
        if _thin(fig) or wrapped:
            _relayout(fig, resize)
        if not resize:
            break
        bb = fig.get_tightbbox(_renderer(fig))
        over = max(bb.width / box_w, bb.height / box_h)
        if over <= 1.0:
            break
        w, h = fig.get_size_inches()
        fig.set_size_inches(w / over * 0.98, h / over * 0.98)
        _relayout(fig)
    return fig


def panel_grid(n: int, panel: tuple[float, float] = (4.0, 3.6), *, cols: int | None = None, lecture_width: float = 4.0,
               theme: str | None = None) -> tuple[Figure, list[Any]]:
    """A figure of ``n`` panels (axes, returned in reading order) that a projector can read: draw into them (a
    ``plot_*`` function's ``ax=``, titles), then pass the figure to :func:`fit_panels`.

    ``panel`` is one panel's size in inches and ``cols`` the panels per row (default all ``n`` in one row). In the
    lecture theme the panels wrap to rows of as many panels at least ``lecture_width`` inches wide as fit
    :data:`LECTURE_BOX`'s width (960 px: two per row by default; ``lecture_width=6``: one), each filling the width
    and keeping ``panel``'s shape up to the box's height (560 px, a screenful), so five checkpoint maps become three
    rows of two readable maps instead of five 20 px squares in one squashed row; the figure is as tall as its rows
    (a notebook scrolls). Laid out with constrained layout (colour bars, titles and tick labels of neighbouring
    panels kept apart).

    >>> fig, axes = panel_grid(5, (3.2, 3.2), theme="light")
    >>> len(axes), [float(v) for v in fig.get_size_inches()]
    (5, [16.0, 3.2])
    >>> fig, axes = panel_grid(5, (3.2, 3.2), theme="lecture")
    >>> len(axes), axes[0].get_subplotspec().get_gridspec().get_geometry(), [round(float(v), 2) for v in
    ...                                                                       fig.get_size_inches()]
    (5, (3, 2), [9.6, 14.4])
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"panel_grid needs at least one panel, got n={n!r}")
    w, h = (float(v) for v in panel)
    if not (w > 0 and h > 0 and lecture_width > 0):
        raise ValueError(f"panel_grid: sizes must be positive inches, got panel={panel!r}, "
                         f"lecture_width={lecture_width!r}")
    n = int(n)
    cols = n if cols is None else max(1, min(int(cols), n))
    lecture = resolve_theme(theme) == "lecture"
    if lecture:
        cols = max(1, min(cols, int(LECTURE_BOX[0] // lecture_width)))
        # Fill the width, keep the panel's shape, but no taller than the screen shows at once.
        w, h = LECTURE_BOX[0] / cols, min(h * LECTURE_BOX[0] / cols / w, LECTURE_BOX[1])
    rows = -(-n // cols)
    fig = new_figure((w * cols, h * rows), layout="constrained", dpi=LECTURE_DPI if lecture else None)
    grid = fig.add_gridspec(rows, cols)
    axes = [fig.add_subplot(grid[i // cols, i % cols]) for i in range(n)]
    setattr(fig, PANEL_GRID, True)
    return fig, axes


def fit_panels(fig: Figure, theme: str | None = None) -> Figure:
    """Finish a :func:`panel_grid` figure once its panels are drawn and titled, and return it (show it by leaving it
    on a cell's last line). In the lecture theme every text is raised to :data:`LECTURE_MIN_FONT`, titles wider than
    their panel wrap, crowded tick labels keep every k-th (as :func:`fit_lecture` does for one plot); the figure keeps
    the size :func:`panel_grid` gave it. Other themes: laid out again, unchanged otherwise."""
    if resolve_theme(theme) == "lecture":
        fit_lecture(fig, theme, resize=False)
    return untangle(fig)


def untangle(fig: Figure) -> Figure:
    """Keep texts off each other, in any theme, and return ``fig``: a title wider than its room is wrapped (as
    :func:`fit_lecture` does), then each tick label that still runs into another text (where an x and a y axis meet
    at a corner, a twin axis's labels meet the other's, a colour bar's ticks meet a title) is hidden; the tick is
    still drawn and its neighbours say the scale. The same text in the same place (twin axes sharing x) counts
    once."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    _measure(fig)
    if _wrap_titles(fig, labels=False):
        _measure(fig)
    renderer = _renderer(fig)
    ticks = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for t in axis.get_ticklabels() + axis.get_ticklabels(minor=True)}
    texts = [t for t in {id(t): t for t in fig.findobj(Text)}.values()
             if t.get_visible() and t.get_text().strip() and t.get_alpha() != 0]
    boxes = [t.get_window_extent(renderer) for t in texts]
    for a, box_a in zip(texts, boxes):
        if id(a) not in ticks or not a.get_visible():
            continue
        for b, box_b in zip(texts, boxes):
            if b is a or not b.get_visible():
                continue
            same = a.get_text() == b.get_text() and max(abs(box_a.x0 - box_b.x0), abs(box_a.y0 - box_b.y0)) <= 1
            if not same and min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0) > 1 and \
                    min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0) > 1:
                a.set_visible(False)
                break
    return fig


def _axes(ax: Any) -> list[tuple[Literal["x", "y"], Any]]:
    """The x and y axis of ``ax``, named as tick_params names them."""
    return [("x", ax.xaxis), ("y", ax.yaxis)]


def _renderer(fig: Figure) -> Any:
    """The Agg renderer of ``fit_lecture``'s canvas (measures text as the saved PNG draws it)."""
    return fig.canvas.get_renderer()  # type: ignore[attr-defined]


def _measure(fig: Figure) -> None:
    """Lay ``fig`` out and place every text as a draw does, without painting a pixel: the layout engine and each
    text's size are those of the saved PNG (the same Agg renderer), but no image is composited and no path
    rasterised (matplotlib's own ``draw_without_rendering``, on this canvas's renderer). Fitting a figure measured it
    3-4 times, and painting was most of a lecture twin's time."""
    renderer = _renderer(fig)
    disabled = getattr(renderer, "_draw_disabled", None)
    if disabled is None:  # a matplotlib without it: paint, as before
        fig.canvas.draw()
        return
    with disabled():
        fig.draw(renderer)


def _raise_fonts(fig: Figure) -> None:
    from matplotlib.text import Text

    for ax in fig.axes:
        for name, axis in _axes(ax):
            for which, ticks in (("major", axis.get_major_ticks()), ("minor", axis.get_minor_ticks())):
                if ticks and float(ticks[0].label1.get_fontsize()) < LECTURE_MIN_FONT:
                    ax.tick_params(axis=name, which=which, labelsize=LECTURE_MIN_FONT)
    for t in fig.findobj(Text):
        if float(t.get_fontsize()) < LECTURE_MIN_FONT:
            t.set_fontsize(LECTURE_MIN_FONT)


def _relayout(fig: Figure, own: bool = True) -> None:
    """Lay ``fig`` out again at its lecture size: constrained layout, which (unlike tight_layout) keeps colour bars,
    suptitles and side-by-side panels apart when the fonts grew; a figure placed by hand, or one with a layout engine
    already (a :func:`panel_grid`), keeps its placement. A caller's figure (``own=False``: a plot drawn into its
    ``ax``) without one gets tight_layout, which the caller may call again (constrained layout, once colour bars
    exist, would refuse the caller's later ``tight_layout``)."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine, PlaceHolderLayoutEngine

    engine = fig.get_layout_engine()
    if not getattr(fig, "_aw_manual_layout", False) and (engine is None or isinstance(engine, PlaceHolderLayoutEngine)):
        try:
            if not own:
                raise RuntimeError
            fig.set_layout_engine(ConstrainedLayoutEngine())
        except RuntimeError:  # colour bars made for a gridspec layout (seaborn's): the engine cannot change
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    fig.tight_layout()
                except RuntimeError:  # an engine that cannot become tight either: leave the placement
                    pass
    _measure(fig)


def _wrap_titles(fig: Figure, labels: bool = True) -> bool:
    """Wrap a title wider than it may be (the figure's width; beside other titled panels, about its own panel's) and
    (``labels``) an axis label (a colour bar's too) longer than its axes' side."""
    width = fig.get_size_inches()[0] * fig.dpi
    renderer = _renderer(fig)
    titled = [ax for ax in fig.axes if ax.title.get_text()]
    changed = False

    def title_room(ax: Any) -> float:
        box = ax.get_window_extent(renderer)
        centred = 2 * min(box.x0 + box.width / 2, width - box.x0 - box.width / 2) * 0.98  # a title is centred
        return centred if len(titled) < 2 else min(centred, box.width * 1.35)

    suptitle = getattr(fig, "_suptitle", None)
    for t, room, along in [(ax.title, title_room(ax), "x") for ax in titled] + \
            ([(suptitle, width * 0.98, "x")] if suptitle is not None else []) + \
            [(ax.xaxis.label, max(ax.get_window_extent(renderer).width * 1.1, 120), "x") for ax in fig.axes
             if labels] + \
            [(ax.yaxis.label, max(ax.get_window_extent(renderer).height * 1.1, 120), "y") for ax in fig.axes
             if labels]:
        text = t.get_text()
        if not text or not t.get_visible():
            continue
        e = t.get_window_extent(renderer)
        ext = e.width if along == "x" or t.get_rotation() == 0 else e.height
        if ext > room:
            longest = max(len(line) for line in text.split("\n"))
            chars = max(8, int(longest * room / ext))
            t.set_text("\n".join(_wrap_line(line, chars) for line in text.split("\n")))
            changed = True
    return changed


def _wrap_line(line: str, chars: int) -> str:
    """``line`` wrapped to ``chars`` columns as textwrap does, except that a number stays with its word ("layer 2",
    "head 1") and a `` · `` separator ends a line rather than starting one or standing alone: a title wrapped twice
    (fit_lecture wraps again after raising the fonts) had left "layer" and its number apart and a lone "·" on a
    line of its own.

    >>> print(_wrap_line("model · self attention · layer 2 · head 1", 30))
    model · self attention ·
    layer 2 · head 1
    """
    glued = _GLUED.sub("\\1\u00a0\\2", line)  # textwrap breaks at ASCII whitespace only
    lines: list[str] = []
    for one in textwrap.fill(glued, chars, break_on_hyphens=False).split("\n"):
        if lines and (one == "·" or one.startswith("· ")):
            lines[-1] += " ·"
            one = one[2:]
        if one:
            lines.append(one)
    return "\n".join(lines).replace("\u00a0", " ")


#: A word and the number it names, kept on one line by :func:`_wrap_line`.
_GLUED = re.compile(r"\b(layer|layers|head|heads|step|query|token|tokens|key|keys|row|rows|of) (\d+)")


def _overlap(extents: list[Any], along: str) -> bool:
    """Whether successive label boxes overlap along the axis (touching by a pixel is allowed)."""
    lo, hi = ("x0", "x1") if along == "x" else ("y0", "y1")
    spans = sorted((getattr(e, lo), getattr(e, hi)) for e in extents)
    return any(b0 < a1 - 1 for (_, a1), (b0, _) in pairwise(spans))


def _thin(fig: Figure) -> bool:
    """Keep every k-th tick label of an axis whose labels overlap; drop cell numbers that overlap. Whether it did."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    renderer = _renderer(fig)
    changed = False
    # and their insets (a heatmap's combined row of a selection is one, with its cell numbers)
    for ax in [a for top in fig.axes for a in (top, *top.child_axes)]:
        for along, axis in _axes(ax):
            labels = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text().strip()]
            if len(labels) < 2 or not _overlap([t.get_window_extent(renderer) for t in labels], along):
                continue
            changed = True
            ticks = list(axis.get_ticklocs())
            texts = [t.get_text() for t in axis.get_ticklabels()]
            if isinstance(axis.get_major_locator(), FixedLocator) and len(texts) == len(ticks):
                for k in range(2, len(ticks) + 1):
                    if not _overlap([t.get_window_extent(renderer) for t in labels[::k]], along):
                        break
                size = labels[0].get_fontsize()
                axis.set_ticks(ticks[::k], texts[::k])
                ax.tick_params(axis=along, labelsize=size)
            else:
                axis.set_major_locator(MaxNLocator(nbins=max(2, len(labels) // 2)))
        cells = [t for t in ax.texts if t.get_visible() and _NUMBER.match(t.get_text() or "")]
        if len(cells) > 1:
            boxes = [t.get_window_extent(renderer) for t in cells]
            if any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:i + 40]):
                for t in cells:
                    t.set_visible(False)
                changed = True
    return changed


class LiveFigure:
    """A figure below a notebook cell that redraws as a run reports: subclasses keep their points and draw them in
    :meth:`figure`; :meth:`_recorded` (after each point) redraws every ``every``-th, :meth:`finish` once at the end.
    ``display=False`` shows nothing (for tests and scripts)."""

    def __init__(self, total: int | None, every: int, theme: str | None, display: bool) -> None:
        self.total = total
        self.every = max(1, int(every))
        self.theme = theme
        self.steps: list[int] = []
        self._handle: Any = None
        self._display = display

    def _show(self) -> None:
        if self._display:
            from IPython.display import display as show

            self._handle = show(self._png(), display_id=True)

    def figure(self) -> Figure:
        raise NotImplementedError

    def _png(self) -> Any:
        from io import BytesIO

        from IPython.display import Image

        buf = BytesIO()
        self.figure().savefig(buf, format="png", dpi=80)
        return Image(data=buf.getvalue())

    def _recorded(self) -> None:
        if self._handle is not None and (len(self.steps) % self.every == 1 or self.every == 1):
            self._handle.update(self._png())

    def finish(self) -> None:
        """Draw the final curve."""
        if self._handle is not None:
            self._handle.update(self._png())
