"""Static figures for the rest of the Transformer block: norm variants in training, what each sublayer writes into
the residual stream, and the measured cost of attention against n and d.

The figures take the objects of :mod:`attnwidgets.teaching.block` (``NormComparison``, ``AttentionCost``) by their
attributes (plots never import the teaching kit) and :class:`~attnwidgets.analysis.residual.ResidualContributions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..analysis.residual import ResidualContributions, loglog_slope
from ..viewdata.theme import resolve_theme
from .style import LECTURE_SCALE, lecture_fit, lecture_fonts, new_figure

__all__ = ["plot_attention_cost", "plot_norm_comparison", "plot_residual_contributions"]

_COLOURS = {"pre-LN": "#1f77b4", "post-LN": "#d62728", "pre-RMSNorm": "#17becf", "post-RMSNorm": "#ff7f0e"}
_SUBLAYER_COLOURS = {"attention": "#1f77b4", "cross-attention": "#9467bd", "feed-forward": "#ff7f0e"}


def _smooth(y: np.ndarray, window: int) -> np.ndarray:
    if window <= 1 or len(y) < window:
        return y
    kernel = np.ones(window) / window
    return np.convolve(y, kernel, mode="valid")


@lecture_fit
def plot_norm_comparison(comparison: Any, *, smooth: int = 5, theme: str | None = None) -> Figure:
    """Loss (left) and gradient norm before clipping (right, log scale) per step, one line per norm variant.

    ``comparison`` is a :class:`~attnwidgets.teaching.block.NormComparison` (anything with ``variants``,
    ``losses`` and ``grad_norms`` of shape (variants, steps) and a ``settings`` dict). ``smooth`` averages the loss
    over that many steps (1: raw).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> c = SimpleNamespace(variants=["pre-LN", "post-LN"], losses=np.ones((2, 8)), grad_norms=np.ones((2, 8)),
    ...                     settings={"lr": 0.01, "warmup": 0, "clip": None})
    >>> fig = plot_norm_comparison(c)
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['training loss', 'gradient norm (before clipping)']
    """
    variants = list(comparison.variants)
    losses = np.asarray(comparison.losses, dtype=float)
    grads = np.asarray(comparison.grad_norms, dtype=float)
    if losses.ndim != 2 or losses.shape != grads.shape or losses.shape[0] != len(variants):
        raise ValueError(f"losses and grad_norms must be (variants={len(variants)}, steps), got {losses.shape} and "
                         f"{grads.shape}")
    if isinstance(smooth, bool) or not isinstance(smooth, int) or smooth < 1:
        raise ValueError(f"smooth must be a positive integer, got {smooth!r}")
    theme = resolve_theme(theme)
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    s = getattr(comparison, "settings", {}) or {}
    with lecture_fonts(theme):
        fig = new_figure((scale * 9.6, scale * 3.4))
        left, right = fig.subplots(1, 2)
        steps = np.arange(1, losses.shape[1] + 1)
        for k, name in enumerate(variants):
            colour = _COLOURS.get(name)
            dashed = "--" if name.startswith("post") else "-"
            y = _smooth(losses[k], smooth)
            left.plot(steps[len(steps) - len(y):], y, dashed, color=colour, linewidth=2, label=name)
            right.plot(steps, grads[k], dashed, color=colour, linewidth=1.2, label=name)
        left.set_xlabel("training step")
        left.set_ylabel("training loss")
        left.set_ylim(bottom=0)
        left.legend(frameon=False)
        right.set_xlabel("training step")
        right.set_ylabel("gradient norm (before clipping)")
        if np.isfinite(grads).any() and np.nanmin(np.where(np.isfinite(grads), grads, np.nan)) > 0:
            right.set_yscale("log")
        title = ", ".join(f"{k} {s[k]}" for k in ("lr", "warmup", "clip") if k in s)
        if title:
            fig.suptitle(title)
        fig.tight_layout()
    return fig


@lecture_fit
def plot_residual_contributions(contributions: ResidualContributions | Sequence[ResidualContributions], *,
                                theme: str | None = None) -> Figure:
    """Bars per layer: ``‖sublayer output‖ / ‖residual stream‖`` (mean over tokens), one colour per sublayer; one
    panel per model when given several.

    Examples
    --------
    >>> rc = ResidualContributions(np.array([[0.2, 0.5]]), np.ones((1, 2)), np.ones((1, 2)), ["L0"],
    ...                            ["attention", "feed-forward"], "toy", True, ["a"])
    >>> fig = plot_residual_contributions(rc)
    >>> len(fig.axes[0].patches)
    2
    """
    items = [contributions] if isinstance(contributions, ResidualContributions) else list(contributions)
    if not items or not all(isinstance(c, ResidualContributions) for c in items):
        raise TypeError("expected a ResidualContributions or a list of them (aw.studies.residual_contributions, "
                        "teaching.toy_residual_contributions)")
    theme = resolve_theme(theme)
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        fig = new_figure((scale * (0.6 + 4.2 * len(items)), scale * 3.4))
        axes = np.atleast_1d(fig.subplots(1, len(items), squeeze=False)[0])
        for ax, rc in zip(axes, items):
            x = np.arange(len(rc.layers))
            width = 0.8 / max(len(rc.sublayers), 1)
            for j, name in enumerate(rc.sublayers):
                ax.bar(x + (j - (len(rc.sublayers) - 1) / 2) * width, np.nan_to_num(rc.ratio[:, j]), width,
                       color=_SUBLAYER_COLOURS.get(name), label=name)
            ax.set_xticks(x, rc.layers)
            ax.set_ylabel("‖sublayer output‖ / ‖stream‖")
            kind = {True: "pre-LN", False: "post-LN", None: ""}[rc.norm_first]
            ax.set_title(f"{rc.model}" + (f" · {kind}" if kind and kind not in rc.model else ""), fontsize="medium")
            ax.legend(frameon=False, fontsize="small")
        fig.tight_layout()
    return fig


@lecture_fit
def plot_attention_cost(cost: Any, *, theme: str | None = None) -> Figure:
    """Measured time of one attention call against n (left) and d (right), log-log, with the fitted slopes and the
    reference slopes 2 and 1 through the first point.

    ``cost`` is an :class:`~attnwidgets.teaching.block.AttentionCost` (``ns``, ``seconds_n``, ``ds``, ``seconds_d``,
    ``n_fixed``, ``d_fixed``).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> c = SimpleNamespace(ns=np.array([1, 2, 4]), seconds_n=np.array([1.0, 4, 16]), ds=np.array([1, 2]),
    ...                     seconds_d=np.array([1.0, 2]), n_fixed=8, d_fixed=4)
    >>> fig = plot_attention_cost(c)
    >>> fig.axes[0].get_title()
    'time ∝ n^2.00 (d = 4)'
    """
    ns, tn = np.asarray(cost.ns, dtype=float), np.asarray(cost.seconds_n, dtype=float)
    ds, td = np.asarray(cost.ds, dtype=float), np.asarray(cost.seconds_d, dtype=float)
    slope_n, slope_d = loglog_slope(ns, tn), loglog_slope(ds, td)
    theme = resolve_theme(theme)
    scale = LECTURE_SCALE if theme == "lecture" else 1.0
    with lecture_fonts(theme):
        fig = new_figure((scale * 9.6, scale * 3.4))
        left, right = fig.subplots(1, 2)
        for ax, x, t, slope, ref, var, fixed in ((left, ns, tn, slope_n, 2, "n", f"d = {cost.d_fixed}"),
                                                 (right, ds, td, slope_d, 1, "d", f"n = {cost.n_fixed}")):
            ax.loglog(x, t * 1e3, "o-", color="#1f77b4", linewidth=2, label="measured")
            ax.loglog(x, t[0] * 1e3 * (x / x[0]) ** ref, ":", color="#8c8c8c", label=f"slope {ref}")
            ax.set_xticks(x, [str(int(v)) for v in x])
            ax.minorticks_off()
            ax.set_xlabel(var)
            ax.set_ylabel("ms per call")
            ax.set_title(f"time ∝ {var}^{slope:.2f} ({fixed})")
            ax.legend(frameon=False)
        fig.tight_layout()
    return fig
