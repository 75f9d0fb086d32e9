"""Every figure the tutorial notebooks draw reads on a projector (issue 24 §2): no two text boxes overlap, no text is
under LECTURE_MIN_FONT (14 pt) in the lecture theme, and no figure is wider than the lecture box.

Before, the notebooks laid several panels out with ``plt.subplots`` at laptop sizes: in the lecture theme 01 §6's
five checkpoint maps were ~20 px squares with titles wrapped to four lines, 02's rollout / flow panels and the
tiny-vs-bundled comparison had ~8 px titles and a colour-bar label over the next panel's axis label, and 03's six
role maps were shrunk to ~95 px. ``aw.plots.panel_grid`` / ``aw.plots.fit_panels`` lay panels out for the theme (in the
lecture theme they wrap to rows inside 960 px).

Where each check runs:

- here (the unit tier, fast): the notebooks' multi-panel layouts built from hand-made attention, every static twin,
  and the checker itself (:func:`figure_problems`), in both themes;
- in the notebooks tier (tests/browser/test_notebooks_browser.py, with :data:`COLLECT` and :data:`REPORT` from here):
  every figure every notebook displays, collected at display time while JupyterLab runs the notebook top to bottom
  in the lecture theme, so a new figure cell is covered without being listed here. CI executes each notebook once,
  there, for that test, these checks, the widgets' layout checks and the docs' executed copies (this module's
  former nbclient run of every notebook in the lecture theme, ~220 s of the unit tier, is gone).

A widget's fallback picture (its static twin, in the display bundle for front ends without widgets) is left out: in
JupyterLab the room sees the live widget, and tests/plots/test_plot_lecture_sizes.py checks the twins.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

import attnwidgets as aw
from attnwidgets.plots.style import LECTURE_BOX, LECTURE_DPI, LECTURE_MIN_FONT, _measure

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def figure_problems(fig: Figure, theme: str) -> list[str]:
    """What a room could not read in ``fig`` as a notebook shows it: overlapping texts (either theme), texts under
    LECTURE_MIN_FONT and a figure wider than LECTURE_BOX (lecture theme). Empty when it reads."""
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    _measure(fig)  # laid out and every text placed as a draw does, no pixel painted (the saved PNG's own layout)
    renderer = fig.canvas.get_renderer()
    found = {id(t): t for t in fig.findobj(Text)}.values()  # findobj may reach a text twice (a tick and its axis)
    texts = [t for t in found if t.get_visible() and t.get_text().strip() and t.get_figure() is fig
             and t.get_alpha() != 0]
    problems = []
    if theme == "lecture":
        small = sorted({(t.get_text()[:24], round(float(t.get_fontsize()), 1)) for t in texts
                        if t.get_fontsize() < LECTURE_MIN_FONT})
        if small:
            problems.append(f"{len(small)} texts under {LECTURE_MIN_FONT} pt: {small[:4]}")
        width = fig.get_tightbbox(renderer).width * fig.dpi
        if width > LECTURE_BOX[0] * LECTURE_DPI + 1:
            problems.append(f"{width:.0f} px wide, more than {LECTURE_BOX[0] * LECTURE_DPI:.0f} px")
    lone = [t.get_text() for t in texts if any(line.strip() in {"·", "–", "—"} for line in t.get_text().split("\n"))]
    if lone:  # a title wrapped twice left its separator on a line of its own
        problems.append(f"{len(lone)} texts with a line that is only a separator: {lone[:2]}")
    boxes = np.array([tuple(t.get_window_extent(renderer).extents) for t in texts]).reshape(-1, 4)
    if len(boxes) > 1:
        x0, y0, x1, y1 = (boxes[:, k] for k in range(4))
        # Overlap by more than a pixel each way; a text with itself does not count.
        over = (np.minimum(x1[:, None], x1[None]) - np.maximum(x0[:, None], x0[None]) > 1) & \
               (np.minimum(y1[:, None], y1[None]) - np.maximum(y0[:, None], y0[None]) > 1)
        np.fill_diagonal(over, False)
        # The same text in the same place (a twin axes' shared ticks) reads as one.
        same = np.array([t.get_text() for t in texts], dtype=object)
        over &= ~((same[:, None] == same[None]) & (np.abs(boxes[:, None] - boxes[None]).max(-1) <= 1))
        pairs = [(texts[i].get_text()[:24], texts[j].get_text()[:24]) for i, j in zip(*np.nonzero(np.triu(over)))]
        if pairs:
            problems.append(f"{len(pairs)} overlapping text pairs: {pairs[:4]}")
    return problems


def _result(n: int, seed: int = 0, layers: int = 2, heads: int = 3, words: list[str] | None = None
            ) -> aw.AttentionResult:
    words = words or ["[CLS]", "the", "committee", "approved", "the", "new", "law", "on", "monday", ".", "critics",
                      "say", "its", "rules", "are", "strict", "[SEP]"]
    a = np.random.default_rng(seed).random((layers, heads, n, n), dtype=np.float32)
    tokens = (words * 2)[:n]
    return aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), tokens)


DIGITS = ["<s>", "3", "1", "4", "1", "5", "9", "2", "</s>"]  # the toy translator's probe


def _checkpoints(theme: str) -> Figure:
    """01 §6: five checkpoints of a toy translator's cross-attention, titled with step and accuracy."""
    fig, axes = aw.plots.panel_grid(5, (3.2, 3.2), theme=theme)
    for k, ax in enumerate(axes):
        aw.plots.plot_heatmap(_result(9, k, words=DIGITS), 1, 0, ax=ax, annotate=False, vmax=1.0, theme=theme)
        ax.set_title(f"step {k * 75}, accuracy {k * 0.24:.0%}")
    return aw.plots.fit_panels(fig, theme)


def _rollout(theme: str) -> Figure:
    """02: the last layer's mean, rollout and flow side by side."""
    fig, axes = aw.plots.panel_grid(3, (5.6, 5.4), lecture_width=6, theme=theme)  # one a row in the lecture
    for k, (ax, name) in enumerate(zip(axes, ["last layer, mean of heads", "rollout (all layers)",
                                               "flow (all layers)"])):
        aw.plots.plot_heatmap(_result(13, k, 1, 1), ax=ax, annotate=False, theme=theme)
        ax.set_title(name)
    return aw.plots.fit_panels(fig, theme)


def _tiny_vs_bundled(theme: str) -> Figure:
    """02: for each pattern, the tiny model's and the bundled model's most extreme head."""
    fig, axes = aw.plots.panel_grid(8, (4.0, 4.0), cols=4, theme=theme)  # in the lecture theme one pattern a row
    for j, pattern in enumerate(["to [CLS]", "to [SEP]", "to previous", "to next"]):
        for i, name in enumerate(["tiny", "bundled"]):
            ax = axes[2 * j + i]
            aw.plots.plot_heatmap(_result(13, j + 4 * i), 1, 2, ax=ax, annotate=False, vmax=1.0, theme=theme)
            ax.set_title(f"{name} L{i} H{j}: {pattern} 0.{37 + j}")
    return aw.plots.fit_panels(fig, theme)


def _roles(theme: str) -> Figure:
    """03: six heads with a role each, on a sentence pair."""
    fig, axes = aw.plots.panel_grid(6, (5.0, 4.75), cols=3, lecture_width=6, theme=theme)
    for k, ax in enumerate(axes):
        aw.plots.plot_heatmap(_result(17, k), k % 2, k % 3, ax=ax, annotate=False, theme=theme)
        ax.set_title(f"{['broad', 'previous', 'next', '[CLS]', '[SEP]', 'punctuation'][k]}: layer {k % 2}, "
                     f"head {k % 3}")
    return aw.plots.fit_panels(fig, theme)


LAYOUTS = {"01 checkpoints": _checkpoints, "02 rollout and flow": _rollout, "02 tiny vs bundled": _tiny_vs_bundled,
           "03 roles": _roles}


@pytest.mark.parametrize("theme", ["light", "lecture"])
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_multi_panel_layouts_read_in_both_themes(name, theme):
    fig = LAYOUTS[name](theme)
    assert figure_problems(fig, theme) == []
    if theme == "lecture":  # every cell of every map at least 12 px: a room sees the pattern
        maps = [ax for ax in fig.axes if ax.get_title()]
        cells = [min(ax.get_window_extent().width / abs(np.diff(ax.get_xlim())[0]),
                     ax.get_window_extent().height / abs(np.diff(ax.get_ylim())[0])) for ax in maps]
        assert min(cells) >= 12, cells


def test_every_static_twin_reads_in_the_light_theme():
    """The twins the notebooks draw (and every other), on the hand-made inputs of test_plot_lecture_sizes, in the
    light theme (test_plot_lecture_sizes checks each in the lecture theme with :func:`figure_problems`). Before,
    in the lecture theme the live curves' x ticks ran into the right axis's, the head view's colour-bar ticks into
    its token labels, plot_head_roles' colour-bar label into the map's axis label; in the light theme plot_sweep's
    and plot_coref's long titles ran over their colour bars, plot_norm_comparison's ticks met at a corner."""
    from tests.plots.test_plot_lecture_sizes import ALL

    bad = {name: figure_problems(ALL[name]("light"), "light") for name in sorted(ALL)}
    assert not {k: v for k, v in bad.items() if v}


def test_the_old_layout_fails_the_check():
    """The checker catches what the room saw: five panels in one 16-inch row, as 01 §6 drew them."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(16, 3.2))
    axes = fig.subplots(1, 5)
    for k, ax in enumerate(axes):
        aw.plots.plot_heatmap(_result(9, k), 1, 0, ax=ax, annotate=False, vmax=1.0, theme="lecture")
        ax.set_title(f"step {k * 75}, accuracy {k * 0.24:.0%}")
    problems = figure_problems(fig, "lecture")
    assert any("under 14" in p for p in problems) and any("px wide" in p for p in problems), problems


def test_panel_grid_wraps_to_the_lecture_width_and_checks_its_arguments():
    fig, axes = aw.plots.panel_grid(3, (5.6, 5.4), theme="lecture")  # two 4.8 in panels per row, the shape kept
    assert len(axes) == 3 and axes[0].get_subplotspec().get_gridspec().get_geometry() == (2, 2)
    assert tuple(np.round(fig.get_size_inches(), 2)) == (9.6, round(2 * 5.4 * 4.8 / 5.6, 2))
    assert len(fig.axes) == 3  # no empty fourth panel
    fig, axes = aw.plots.panel_grid(3, (5.6, 5.4), lecture_width=3.0, theme="lecture")
    assert axes[0].get_subplotspec().get_gridspec().get_geometry() == (1, 3)
    fig, axes = aw.plots.panel_grid(3, (5.6, 5.4), theme="light")
    assert axes[0].get_subplotspec().get_gridspec().get_geometry() == (1, 3)
    assert tuple(np.round(fig.get_size_inches(), 2)) == (16.8, 5.4)
    fig, axes = aw.plots.panel_grid(8, (4, 4), cols=4, theme="light")
    assert axes[0].get_subplotspec().get_gridspec().get_geometry() == (2, 4)
    with pytest.raises(ValueError, match="at least one panel"):
        aw.plots.panel_grid(0)
    with pytest.raises(ValueError, match="positive"):
        aw.plots.panel_grid(2, (0, 3))


# ---------------------------------------------------------------------------------------------------------------
# Every figure every notebook displays, collected in the kernel while the notebook runs top to bottom.

COLLECT = """
import json as _json
from matplotlib.backend_bases import FigureCanvasBase as _Canvas
from attnwidgets.viewdata.theme import current_theme as _theme
_aw_figures = []
_aw_print = _Canvas.print_figure
def _aw_record(canvas, *args, **kwargs):  # every figure shown (inline, display(), a live figure) is printed here
    _aw_figures.append((get_ipython().execution_count, canvas.figure, _theme()))  # with the theme it was drawn in
    return _aw_print(canvas, *args, **kwargs)
_Canvas.print_figure = _aw_record
"""

REPORT = """
import sys as _sys
_sys.path.insert(0, {root!r})
from tests.plots.test_notebook_figures import figure_problems as _problems
_seen = set()
_report = []
for _cell, _fig, _drawn in _aw_figures:
    if id(_fig) in _seen or any(t.get_text().startswith("Static picture of an interactive") for t in _fig.texts):
        continue  # a widget's fallback picture (where widgets cannot run): the room sees the live widget
    _seen.add(id(_fig))
    _report.append(dict(cell=_cell, title=" / ".join(a.get_title()[:30] for a in _fig.axes if a.get_title())[:90],
                        theme=_drawn, problems=_problems(_fig, _drawn)))
print("AW-FIGURES " + _json.dumps(_report))
"""
