"""Static twins of what a head does: the patching grid (:func:`attnwidgets.studies.patch_heads`, the grid of a
:class:`~attnwidgets.widgets.PatchingView`) and each head's direct share of a logit
(:func:`attnwidgets.studies.logit_attribution`), both layers x heads on a diverging scale centred on 0."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .style import lecture_fit, lecture_fonts, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_logit_attribution", "plot_patching", "plot_sampling"]

#: The same scales as the compare view's difference and the PatchingView's grid (blue/purple below 0).
_DIVERGING = {"light": "RdBu_r", "lecture": "PuOr_r"}


def _signed_grid(values: np.ndarray, title: str, label: str, theme: str, cmap: str | None,
                 selected: tuple[int, int] | None, side: Any = None) -> Figure:
    big = theme == "lecture"
    font = 15 if big else 9
    L, H = values.shape
    width = min(9.0, max(3.0, 0.42 * H + 1.8)) * (1.25 if big else 1.0)
    height = max(2.2, width * L / max(H, 1) * 0.85) + 0.9
    if side is not None:  # each part's name on its own line at the theme's size
        height = max(height, 0.3 * len(side[0]) * font / 10 + 1.6)
    extra = 1.6 if side is not None else 0.0
    fig = new_figure((width + extra * 1.6, height), layout="constrained")
    if side is not None:
        ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [width, extra * 1.6]})
    else:
        ax, bx = fig.subplots(), None
    half = float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 0.0
    half = max(half, 1e-12)
    img = ax.imshow(np.ma.masked_invalid(values), cmap=cmap or _DIVERGING[theme], vmin=-half, vmax=half,
                    aspect="equal")
    ax.set_xlabel("head", fontsize=font)
    ax.set_ylabel("layer", fontsize=font)
    ax.set_xticks(range(H))
    ax.set_yticks(range(L))
    ax.tick_params(labelsize=font)
    if selected is not None:
        from matplotlib.patches import Rectangle

        layer, head = selected
        ax.add_patch(Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, edgecolor="#e08000", linewidth=2.5))
    bar = fig.colorbar(img, ax=ax, shrink=0.8)
    if bx is None:
        bar.set_label(label, fontsize=font)
    else:  # beside the colour bar the label would meet the bars' axis: it goes above the grid instead
        ax.set_title(f"colour: {label}", fontsize=font)
    bar.ax.tick_params(labelsize=font)
    if bx is not None:
        names, shares = side
        y = np.arange(len(names))
        bx.barh(y, shares, color=["#4878a8" if v < 0 else "#c0504d" for v in shares])
        bx.set_yticks(y, names, fontsize=font)
        bx.invert_yaxis()
        bx.axvline(0, color="#57606a", linewidth=1)
        bx.tick_params(labelsize=font)
        bx.set_title("the other parts", fontsize=font)
    fig.suptitle(title, fontsize=font + 1)
    return fig


@lecture_fit
def plot_patching(patching: Any, *, normalised: bool = False, theme: str | None = None, cmap: str | None = None,
                  selected: tuple[int, int] | None = None) -> Figure:
    """Each head's patching effect as a layers x heads grid (over positions: the largest change at any position).

    Parameters
    ----------
    patching : PatchingResult
        From :func:`attnwidgets.studies.patch_heads`.
    normalised : bool
        (patched − corrupted) / (clean − corrupted) instead of the raw change.
    theme, cmap : str, optional
    selected : (layer, head), optional
        A head to outline.

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.studies.patching import PatchingResult
    >>> p = PatchingResult(np.array([[0.9, 0.2]]), 1.0, 0.0, "noising", "output", "logit difference", ["a"], ["b"],
    ...                    "toy")
    >>> fig = plot_patching(p)
    >>> fig.axes[0].get_images()[0].get_array().tolist()
    [[-0.09999999999999998, -0.8]]
    """
    theme = resolve_theme(theme)
    values = np.asarray(patching.normalised if normalised else patching.effect, dtype=np.float64)
    if values.ndim == 3:
        values = np.take_along_axis(values, np.nanargmax(np.abs(np.nan_to_num(values)), -1)[..., None], -1)[..., 0]
    way = "noising" if patching.direction == "noising" else "denoising"
    title = f"{patching.model} · patching each head's {patching.what} ({way})"
    label = "fraction of the clean − corrupted gap" if normalised else "change in the metric"
    with lecture_fonts(theme):
        fig = _signed_grid(values, title, label, theme, cmap, selected)
        fig.axes[0].set_title(patching.metric, fontsize=9 if theme != "lecture" else 13)
    return fig


@lecture_fit
def plot_logit_attribution(attribution: Any, *, theme: str | None = None, cmap: str | None = None,
                           selected: tuple[int, int] | None = None) -> Figure:
    """Each head's direct share of the logit as a layers x heads grid, with the other parts (embeddings, MLPs,
    attention biases, the norm's offset) as bars beside it; the title gives the logit and what the parts sum to.

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.studies.logits import LogitAttribution
    >>> a = LogitAttribution(np.array([[1.0, -0.5]]), np.zeros(1), np.array([0.25]), 0.5, 0.0, 1.25, ("x",), 2,
    ...                      ["a", "b", "c"], "toy")
    >>> fig = plot_logit_attribution(a)
    >>> fig.axes[0].get_images()[0].get_array().tolist(), "sum of parts 1.250" in fig._suptitle.get_text()
    ([[1.0, -0.5]], True)
    """
    theme = resolve_theme(theme)
    a = attribution
    names = ["embeddings", *[f"MLP {i}" for i in range(len(a.mlp))],
             *[f"attn bias {i}" for i in range(len(a.attention_bias))], "norm offset"]
    shares = [a.embeddings, *a.mlp.tolist(), *a.attention_bias.tolist(), a.offset]
    answer = " − ".join(repr(t) for t in a.answer)
    title = (f"{a.model} · direct share of logit({answer}) at position {a.position} · logit {a.logit:.3f}, "
             f"sum of parts {a.total():.3f}")
    with lecture_fonts(theme):
        return _signed_grid(np.asarray(a.heads, dtype=np.float64), title, "share of the logit", theme, cmap,
                            selected, side=(names, shares))


@lecture_fit
def plot_sampling(generation: Any, step: int = 0, *, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float = 1.0, min_p: float = 0.0, theme: str | None = None) -> Figure:
    """Static twin of the GenerationView's sampling playground: one step's candidates with the model's probability
    (outlined) and the sampler's after temperature, top-k, top-p and min-p (filled), on one 0-100 % axis; a token a
    rule cut is greyed and named (:func:`attnwidgets.analysis.sampling.reshape`).

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> g = SimpleNamespace(topk_probs=np.array([[0.5, 0.3, 0.1]]), topk_tokens=[["a", "b", "c"]], n_steps=1,
    ...                     generated_tokens=["a"])
    >>> fig = plot_sampling(g, 0, top_p=0.8)
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()], tuple(map(float, fig.axes[0].get_xlim()))
    (['a', 'b', 'c (cut by top-p)'], (0.0, 100.0))
    """
    from ..analysis.sampling import reshape
    from ..viewdata.labels import token_label

    theme = resolve_theme(theme)
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not 0 <= step < generation.n_steps:
        raise ValueError(f"step must be one of 0..{generation.n_steps - 1}, got {step!r}")
    probs = np.asarray(generation.topk_probs[step], dtype=np.float64)
    after, cut = reshape(probs, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p)
    tokens = list(generation.topk_tokens[step])
    chosen = generation.generated_tokens[step]
    big = theme == "lecture"
    font = 15 if big else 9
    with lecture_fonts(theme):
        fig = new_figure((7.5 if big else 5.5, 0.45 * len(tokens) + 1.4), layout="constrained")
        ax = fig.subplots()
        y = np.arange(len(tokens))
        accent = "#e08000" if big else "#1f6feb"
        ax.barh(y, after * 100, height=0.6, color=[("#c8c8c8" if c else accent) for c in cut], label="sampler")
        ax.barh(y, probs * 100, height=0.8, fill=False, edgecolor="#57606a", linewidth=1.2, label="model")
        labels = [token_label(t) + (f" (cut by {c})" if c else "") for t, c in zip(tokens, cut)]
        ax.set_yticks(y, labels, fontsize=font)
        for tick, t in zip(ax.get_yticklabels(), tokens):
            if t == chosen:
                tick.set_fontweight("bold")
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("probability (%)", fontsize=font)
        ax.legend(fontsize=font - 1, loc="lower right")
        settings = (f"T = {temperature:g}, top-k = {top_k or len(tokens)}, top-p = {top_p:g}, min-p = {min_p:g}")
        ax.set_title(f"step {step}: the sampler's next-token distribution ({settings})", fontsize=font)
    return fig
