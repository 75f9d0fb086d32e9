"""Static twins in the lecture theme are projector-sized (issue 15 §3): every text at least LECTURE_MIN_FONT points
and the figure, as a notebook shows it (tight bounding box at LECTURE_DPI), inside LECTURE_BOX (960 x 560 px, what
a 1280 x 720 screen shows of a notebook's output). Long token lists keep every k-th label rather than shrinking.

Before, a 16-token heatmap in the lecture theme was an 11 x 9.9 in figure (1021 x 915 px, taller than the screen)
whose colour-bar label was 10 pt, cell numbers 14 pt squeezed into 24 px cells; plot_head_grid / plot_sweep wrote
7.8 pt numbers, and plot_qk was 17 in (1394 px) wide.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

import attnwidgets as aw
from attnwidgets import plots
from attnwidgets.plots.style import LECTURE_BOX, LECTURE_DPI, LECTURE_MIN_FONT, _measure, fit_lecture, new_figure
from tests.plots.test_notebook_figures import figure_problems
from tests.plots.test_plot_figures import CALLS

N = 16
LONG = 60


def _uniform(n: int, layers: int = 1, heads: int = 1) -> aw.AttentionResult:
    a = np.random.default_rng(n).random((layers, heads, n, n), dtype=np.float32)
    return aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), [f"token{i}" for i in range(n)])


def _named(r: aw.AttentionResult, name: str) -> aw.AttentionResult:
    return aw.AttentionResult.from_arrays(r.attention, r.tokens, name=name)


MORE = {
    "heatmap 16 tokens": lambda theme: plots.plot_heatmap(_uniform(N), theme=theme),
    "heatmap 60 tokens": lambda theme: plots.plot_heatmap(_uniform(LONG), theme=theme),
    # a long title (the selection's caption) that fit_lecture wraps, raises the fonts of, and wraps again
    "heatmap a selection": lambda theme: aw.plots.paint(aw.AttentionHeatmap(
        _named(_uniform(9, 2, 3), "all-MiniLM-L6-v2 (bundled)"), layer=1, head=1, selection=[2, 3], theme=theme)),
    "head stats 12 x 12": lambda theme: plots.plot_head_stats(_uniform(6, 12, 12), "sep", theme=theme),
    "model view 12 x 12": lambda theme: plots.plot_model_view(_uniform(6, 12, 12), theme=theme),
    "head view 16 tokens": lambda theme: plots.plot_head_view(_uniform(N), theme=theme),
}
ALL = {**CALLS, **MORE}
#: Teaching figures taller than one screen at lecture size, on purpose: their text is held to LECTURE_MIN_FONT here
#: and to no overlap by tests/plots/test_notebook_figures.py, but they scroll. The input-embeddings picture (notebook 02
#: §2b) is six strips of a sentence pair's tokens: at 14 pt labels it is two screens tall (951 x 1272 px).
#: The ablation explorer's picture (its grid, the watched numbers, the maps, one under another) scrolls as its page
#: does: in the lecture theme the page is never zoomed out but wraps to the width and scrolls.
SCROLLS = {"plot_input_embeddings", "paint_ablation"}


def _drawn_texts(fig) -> list[Text]:
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    _measure(fig)  # the layout and text sizes of a draw, no pixel painted
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _shown_px(fig) -> tuple[float, float]:
    """The figure's size in px as a notebook shows it (IPython saves with bbox_inches="tight" at the figure's dpi)."""
    bb = fig.get_tightbbox(fig.canvas.get_renderer())
    return bb.width * fig.dpi, bb.height * fig.dpi


@pytest.mark.parametrize("name", sorted(ALL))
def test_lecture_figure_is_readable_and_fits(name):
    fig = ALL[name]("lecture")
    texts = _drawn_texts(fig)
    small = [(t.get_text()[:20], t.get_fontsize()) for t in texts if t.get_fontsize() < LECTURE_MIN_FONT]
    assert not small, f"{name}: text below {LECTURE_MIN_FONT} pt: {small[:5]}"
    assert fig.dpi == LECTURE_DPI
    w, h = _shown_px(fig)
    assert w <= LECTURE_BOX[0] * LECTURE_DPI, f"{name}: shown at {w:.0f}x{h:.0f}"
    if name not in SCROLLS:
        assert h <= LECTURE_BOX[1] * LECTURE_DPI, f"{name}: shown at {w:.0f}x{h:.0f}"
    # and it reads in the room (no overlapping texts: tests/plots/test_notebook_figures.py), on the figure drawn here
    # rather than drawing every lecture twin a second time there
    assert not figure_problems(fig, "lecture"), name


def test_long_token_lists_are_thinned_not_shrunk():
    fig = MORE["heatmap 60 tokens"]("lecture")
    _drawn_texts(fig)
    ax = fig.axes[0]
    for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
        shown = [t for t in labels if t.get_text()]
        assert 3 <= len(shown) < LONG  # thinned...
        assert min(t.get_fontsize() for t in shown) >= LECTURE_MIN_FONT  # ...not shrunk
        step = int(shown[1].get_text().removeprefix("token")) - int(shown[0].get_text().removeprefix("token"))
        assert [t.get_text() for t in shown] == [f"token{i}" for i in range(0, LONG, step)]  # every k-th, in order


def test_cell_numbers_that_no_longer_fit_are_dropped_not_overlapping():
    fig = MORE["head stats 12 x 12"]("lecture")
    texts = _drawn_texts(fig)
    assert not [t for t in texts if t.get_text().startswith("0.")and t in fig.axes[0].texts]
    few = plots.plot_head_stats(_uniform(6, 2, 3), "sep", theme="lecture")  # big cells keep their numbers
    assert len([t for t in _drawn_texts(few) if t in few.axes[0].texts]) == 6


def test_light_theme_unchanged():
    """Sizes as measured before the lecture fit (light figures are not touched)."""
    expected = {"plot_heatmap": (5.2, 4.0), "plot_qk": (13.0, 3.4), "plot_head_roles": (10.0, 4.5),
                "plot_generation": (7.0, 6.5), "heatmap 16 tokens": (8.78, 7.58)}
    for name, size in expected.items():
        fig = ALL[name]("light")
        assert tuple(np.round(fig.get_size_inches(), 2)) == size, name
    fig = MORE["heatmap 16 tokens"]("light")
    texts = _drawn_texts(fig)
    assert min(t.get_fontsize() for t in texts) == 7  # the cell numbers, as before
    assert len(fig.axes[0].get_xticklabels()) == N


def test_a_caller_axes_keeps_its_figure_size():
    fig = new_figure((12, 9))
    ax = fig.add_subplot()
    plots.plot_heatmap(_uniform(N), ax=ax, theme="lecture")
    assert tuple(fig.get_size_inches()) == (12, 9)
    assert min(t.get_fontsize() for t in _drawn_texts(fig)) >= LECTURE_MIN_FONT


def test_fit_lecture_follows_set_theme():
    fig = new_figure((14, 10))
    fig.add_subplot().set_title("t", fontsize=6)
    assert fit_lecture(fig) is fig and tuple(fig.get_size_inches()) == (14, 10)  # light (the default) leaves it
    aw.set_theme("lecture")
    try:
        fit_lecture(fig)
    finally:
        aw.set_theme("light")
    assert fig.axes[0].title.get_fontsize() == LECTURE_MIN_FONT
    assert tuple(fig.get_size_inches()) <= LECTURE_BOX


def test_a_wrapped_title_keeps_its_numbers_and_separators_in_place():
    """fit_lecture wraps a long title, raises the fonts and wraps it again: a number stays with its word and a
    `` · `` ends a line, never starts one (textwrap had left "layer" and its number on two lines, and a lone "·" on
    a line of its own)."""
    fig = MORE["heatmap a selection"]("lecture")
    lines = fig.axes[0].get_title().split("\n")
    assert len(lines) > 1
    assert not any(line.startswith("·") or line.endswith(("layer", "head", "of")) for line in lines), lines
    assert " ".join(lines).startswith("all-MiniLM-L6-v2 (bundled) · self attention · layer 1 · head 1 · mean of 2 ")
