"""The loss curve of a tiny BERT's pre-training (masked-LM and next-sentence prediction), static and live.

The numbers come from :func:`attnwidgets.teaching.pretrain.pretrain_bert`'s callback; this module only draws them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from .style import LECTURE_SCALE, LiveFigure, lecture_fit, lecture_fonts, new_figure, resolve_theme

__all__ = ["LivePretrainCurve", "plot_pretrain_curve"]


@lecture_fit
def plot_pretrain_curve(steps: Sequence[int], mlm_loss: Sequence[float], nsp_loss: Sequence[float], *,
                        total: int | None = None, vocab_size: int | None = None, theme: str | None = None,
                        ax: Any = None) -> Figure:
    """Masked-LM loss (left axis) and next-sentence loss (right axis) against the training step.

    Two dashed lines mark what guessing scores: ``ln 2`` for NSP (a coin) and, when ``vocab_size`` is given,
    ``ln vocab_size`` for the masked-LM (every piece equally likely).

    Examples
    --------
    >>> fig = plot_pretrain_curve([10, 20], [7.5, 6.0], [0.70, 0.66], total=100, vocab_size=3000)
    >>> fig.axes[0].get_title(), fig.axes[1].get_ylabel()
    ('step 20 of 100: MLM loss 6.00, NSP loss 0.66', 'NSP loss')
    """
    theme = resolve_theme(theme)
    s = np.asarray(steps, dtype=float)
    mlm = np.asarray(mlm_loss, dtype=float)
    nsp = np.asarray(nsp_loss, dtype=float)
    if not (s.shape == mlm.shape == nsp.shape) or s.ndim != 1:
        raise ValueError(f"steps, mlm_loss and nsp_loss need one entry per point, got shapes {s.shape}, {mlm.shape} "
                         f"and {nsp.shape}")
    if not (np.isfinite(mlm).all() and np.isfinite(nsp).all()):
        raise ValueError("the losses hold NaN or infinity: training diverged")
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        if ax is None:
            fig = new_figure((scale * 6.4, scale * 3.4))
            ax = fig.add_subplot()
        else:
            fig = ax.figure
        ax.plot(s, mlm, color="#1f6feb", linewidth=2, label="masked-LM loss")
        ax.set_xlabel("training step")
        ax.set_ylabel("masked-LM loss", color="#1f6feb")
        top = max([*mlm.tolist(), 1e-3])
        if vocab_size:
            chance = math.log(vocab_size)
            ax.axhline(chance, color="#1f6feb", linestyle=":", linewidth=1)
            ax.annotate(f"guessing: ln {vocab_size} = {chance:.1f}", (0.01, chance), xycoords=("axes fraction", "data"),
                        va="bottom", color="#1f6feb", fontsize="small")
            top = max(top, chance)
        ax.set_ylim(0, top * 1.08)
        right = ax.twinx()
        right.plot(s, nsp, color="#d1242f", linewidth=2, label="NSP loss")
        right.axhline(math.log(2), color="#d1242f", linestyle=":", linewidth=1)
        right.set_ylim(0, max([*nsp.tolist(), math.log(2)]) * 1.25)
        right.set_ylabel("NSP loss", color="#d1242f")
        if total is not None:
            ax.set_xlim(0, total)
        if len(s):
            of = f" of {total}" if total is not None else ""
            ax.set_title(f"step {int(s[-1])}{of}: MLM loss {mlm[-1]:.2f}, NSP loss {nsp[-1]:.2f}")
        fig.tight_layout()
    return fig


class LivePretrainCurve(LiveFigure):
    """A live :func:`plot_pretrain_curve` below a notebook cell: pass :meth:`update` as ``pretrain_bert``'s
    ``callback``; the figure redraws every ``every``-th call and once more at :meth:`finish`.

    Examples
    --------
    >>> live = LivePretrainCurve(total=100, display=False)
    >>> live.update(10, 7.9, 0.70); live.update(20, 7.0, 0.69)
    >>> live.steps, live.figure().axes[0].get_title()
    ([10, 20], 'step 20 of 100: MLM loss 7.00, NSP loss 0.69')
    """

    def __init__(self, total: int | None = None, *, every: int = 5, vocab_size: int | None = None,
                 theme: str | None = None, display: bool = True) -> None:
        super().__init__(total, every, theme, display)
        self.vocab_size = vocab_size
        self.mlm: list[float] = []
        self.nsp: list[float] = []
        self._show()

    def figure(self) -> Figure:
        """The curve so far."""
        return plot_pretrain_curve(self.steps, self.mlm, self.nsp, total=self.total, vocab_size=self.vocab_size,
                                   theme=self.theme)

    def update(self, step: int, mlm_loss: float, nsp_loss: float) -> None:
        """Record one point (``pretrain_bert``'s callback signature); redraw every ``every``-th."""
        self.steps.append(int(step))
        self.mlm.append(float(mlm_loss))
        self.nsp.append(float(nsp_loss))
        self._recorded()
