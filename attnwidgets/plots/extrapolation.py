"""Length extrapolation as a picture: accuracy against the length of the input, one line per position scheme, the
longest training input marked.

The figure takes an :class:`~attnwidgets.teaching.extrapolation.ExtrapolationRun` by its attributes (plots never
import the teaching kit).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..viewdata.theme import resolve_theme
from .style import LECTURE_SCALE, lecture_fit, lecture_fonts, new_figure

__all__ = ["plot_extrapolation"]

_STYLE = {"sinusoidal": ("#1f77b4", "o", "-"), "learned": ("#d62728", "s", "-"), "rope": ("#2ca02c", "^", "-"),
          "alibi": ("#9467bd", "D", "-")}
_NAMES = {"sinusoidal": "sinusoidal (added)", "learned": "learned table (added)", "rope": "RoPE (rotates q, k)",
          "alibi": "ALiBi (bias by distance)"}


@lecture_fit
def plot_extrapolation(run: Any, *, theme: str | None = None) -> Figure:
    """Accuracy (share of copied symbols right, teacher-forced) against the number of symbols copied, per scheme.

    ``run`` is an :class:`~attnwidgets.teaching.extrapolation.ExtrapolationRun` (anything with ``schemes``,
    ``test_lengths``, ``accuracy`` (schemes, lengths), ``train_max`` and ``limit(scheme)``). The shaded band is the
    training range; a scheme that cannot read longer inputs (the learned table) ends with an × at its last row.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> run = SimpleNamespace(schemes=("rope", "learned"), test_lengths=np.array([4, 8, 16]), train_max=8,
    ...                       accuracy=np.array([[1.0, 1.0, 0.5], [1.0, 1.0, np.nan]]),
    ...                       limit=lambda s: 8 if s == "learned" else None)
    >>> fig = plot_extrapolation(run, theme="light")
    >>> fig.axes[0].get_xlabel(), [line.get_label() for line in fig.axes[0].get_lines()][1:3]
    ('symbols copied (input length)', ['RoPE (rotates q, k)', 'learned table (added): no row past 8'])
    """
    schemes = list(run.schemes)
    lengths = np.asarray(run.test_lengths, dtype=float)
    acc = np.asarray(run.accuracy, dtype=float)
    if acc.shape != (len(schemes), lengths.size):
        raise ValueError(f"accuracy must be (schemes={len(schemes)}, lengths={lengths.size}), got {acc.shape}")
    theme = resolve_theme(theme)
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        fig = new_figure((scale * 7.4, scale * 4.2))
        ax = fig.add_subplot()
        ax.axvspan(0, run.train_max, color="0.9", zorder=0)
        ax.axvline(run.train_max, color="0.4", linestyle="--", linewidth=1.2, zorder=1)
        ax.text(run.train_max * 0.5, 0.04, "trained", ha="center", va="bottom", color="0.35")
        for k, scheme in enumerate(schemes):
            colour, marker, line = _STYLE.get(scheme, ("0.3", "o", "-"))
            ok = np.isfinite(acc[k])
            limit = run.limit(scheme)
            name = _NAMES.get(scheme, scheme) + (f": no row past {limit}" if limit is not None else "")
            ax.plot(lengths[ok], acc[k][ok], line, marker=marker, color=colour, linewidth=2, markersize=7,
                    label=name)
            if limit is not None and (~ok).any():  # cannot run past its table: an x at the last length it can read
                last = int(np.flatnonzero(ok)[-1]) if ok.any() else None
                if last is not None:
                    ax.plot(lengths[last], acc[k][last], "x", color=colour, markersize=16, markeredgewidth=3)
        symbols = (getattr(run, "settings", None) or {}).get("n_symbols")
        if symbols:
            ax.axhline(1 / symbols, color="0.5", linestyle=":", linewidth=1.5, label="guessing a symbol")
        ax.set_xlim(0, lengths.max() * 1.03)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("symbols copied (input length)")
        ax.set_ylabel("accuracy (teacher-forced)")
        ax.legend(frameon=False, loc="upper right")
        ax.set_title(f"copy: trained on 1-{run.train_max} symbols, tested longer")
    return fig
