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

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from matplotlib import colormaps, rc_context
from matplotlib.colors import Colormap
from matplotlib.figure import Figure

from ..viewdata.theme import resolve_theme

__all__ = ["LECTURE_SCALE", "colormap", "lecture_fonts", "new_figure", "resolve_theme"]

#: How much larger a lecture figure is than a light one (fonts are set separately).
LECTURE_SCALE = 1.3

_LECTURE_RC: dict[str, Any] = {"font.size": 14, "axes.titlesize": 16, "axes.labelsize": 15, "xtick.labelsize": 13,
               "ytick.labelsize": 13, "legend.fontsize": 13, "figure.titlesize": 17}


def new_figure(figsize: tuple[float, float], **kwargs: Any) -> Figure:
    """A Figure that pyplot does not know about (it is shown where it is returned or displayed, once)."""
    return Figure(figsize=figsize, **kwargs)


def colormap(name: str) -> Colormap:
    """The registered matplotlib colour map ``name`` (what ``pyplot.get_cmap`` gives, without pyplot)."""
    return colormaps[name]


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
