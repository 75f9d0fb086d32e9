"""Static twin of the logit-lens panel of GenerationView and FillMask: one table of the lens (a step, or a [MASK]),
a row per read-out (the embeddings, then each layer), each row's top-k tokens in cells shaded by their probability,
the same :class:`~attnwidgets.viewdata.lens.LensTable` the page draws (js/src/draw/lens.ts)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np

from ..generation_result import GenerationResult
from ..viewdata.checks import check_int
from ..viewdata.labels import token_label
from ..viewdata.lens import LensTable, generation_lens
from ..viewdata.views.fill_mask import fill_mask_lens_table
from .style import lecture_fit, lecture_fonts, missing_glyphs_quiet, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["paint_lens", "plot_fill_mask_lens", "plot_generation_lens"]

_CMAPS = {"light": "Blues", "lecture": "Oranges"}


def paint_lens(ax: Axes, table: LensTable, index: int, *, highlight: int | None = None,
               theme: str = "light") -> None:
    """Draw table ``index`` of ``table`` on ``ax``: rows x k cells, each with its token, shaded by its probability
    on a fixed 0–1 scale; ``highlight`` outlines a row."""
    from matplotlib.patches import Rectangle

    probs = np.asarray(table.probs[index], dtype=np.float64)
    rows, k = probs.shape
    ax.imshow(probs, cmap=_CMAPS.get(theme, "Blues"), vmin=0, vmax=1.4, aspect="auto", interpolation="nearest")
    for r in range(rows):
        for j in range(k):
            ax.text(j, r, f"{token_label(table.tokens[index][r][j])}\n{100 * probs[r, j]:.0f}%", ha="center",
                    va="center", fontsize="small")
    ax.set_yticks(range(rows), table.rows)
    ax.set_xticks(range(k), [str(j + 1) for j in range(k)])
    ax.set_xlabel("rank")
    ax.tick_params(length=0)
    if highlight is not None:
        ax.add_patch(Rectangle((-0.5, highlight - 0.5), k, 1, fill=False, lw=2.5,
                               edgecolor="#d55e00" if theme == "lecture" else "#d1242f"))


def _figure(table: LensTable, index: int, title: str, theme: str, highlight: int | None = None) -> Figure:
    rows, k = table.probs.shape[1:]
    with lecture_fonts(theme), missing_glyphs_quiet():
        fig = new_figure((max(6.0, 1.3 * k + 2.0), max(3.0, 0.45 * rows + 2.2)), layout="constrained")
        ax = fig.add_subplot()
        paint_lens(ax, table, index, highlight=highlight, theme=theme)
        ax.set_title(title)
        fig.supxlabel("\n".join(textwrap.wrap(table.caption, 90)), fontsize="x-small")
    return fig


@lecture_fit
def plot_generation_lens(gen: GenerationResult, step: int = 0, *, theme: str | None = None) -> Figure:
    """The logit lens of one step of a generation (``aw.generate(..., lens_k=k)``), as GenerationView's lens panel
    draws it.

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.result import AttentionResult
    >>> att = np.tril(np.ones((3, 3), np.float32)); att /= att.sum(1, keepdims=True)
    >>> r = AttentionResult.from_arrays(att, ["a", "b", "c"], kind="decoder")
    >>> g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d"], np.array([2, 3]),
    ...                      np.array([[2], [3]]), np.array([[0.9], [0.8]], np.float32), [["c"], ["d"]],
    ...                      lens_ids=np.zeros((2, 2, 1), np.int64), lens_probs=np.full((2, 2, 1), 0.5, np.float32),
    ...                      lens_tokens=[[["a"], ["c"]], [["b"], ["d"]]])
    >>> plot_generation_lens(g, step=1).axes[0].get_yticklabels()[1].get_text()
    'layer 1'
    """
    if not isinstance(gen, GenerationResult):
        raise TypeError(f"plot_generation_lens takes a GenerationResult, got {type(gen).__name__}")
    table = generation_lens(gen)
    if table is None:
        raise ValueError("this generation kept no logit lens: generate with lens_k, e.g. aw.generate(prompt, model, "
                         "lens_k=5)")
    step = check_int(step, "step")
    if not -gen.n_steps <= step < gen.n_steps:
        raise ValueError(f"step {step} is out of range: {gen.n_steps} tokens were generated (0..{gen.n_steps - 1})")
    step %= gen.n_steps
    return _figure(table, step, f"{gen.model.name} · step {step}: logit lens (wrote "
                   f"{token_label(gen.generated_tokens[step])!s})", resolve_theme(theme))


@lecture_fit
def plot_fill_mask_lens(view: Any, mask: int = 0, layer: int = -1, *, theme: str | None = None) -> Figure:
    """The logit lens at one [MASK] of a FillMask view (``FillMask(...).view`` or the widget), ``layer``'s row
    (the stream after it) outlined, as the page's lens panel draws it."""
    v = getattr(view, "view", view)
    if not isinstance(v, dict) or "lens" not in v:
        raise TypeError("plot_fill_mask_lens takes what fill_mask_view returns (or a FillMask widget), got "
                        f"{type(view).__name__}")
    table = fill_mask_lens_table(v)
    if table is None:
        raise ValueError("this view has no logit lens")
    n_masks, rows = table.probs.shape[:2]
    mask, layer = check_int(mask, "mask"), check_int(layer, "layer")
    if not 0 <= mask < n_masks:
        raise ValueError(f"mask {mask} is out of range: the text has {n_masks} [MASK] (0..{n_masks - 1})")
    if not -1 <= layer < rows - 1:
        raise ValueError(f"layer {layer} is out of range: there are {rows - 1} layers (0..{rows - 2}, or -1)")
    layer %= rows - 1
    return _figure(table, mask, f"{v.get('model', '')} · logit lens at [MASK] #{mask + 1}", resolve_theme(theme),
                   highlight=layer + 1)
