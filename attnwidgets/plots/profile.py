"""Static twin of AttentionProfile: the attention a query span pays along the document, as a matplotlib Figure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..result import AttentionResult
from ..viewdata.labels import token_label
from ..viewdata.profile import (
    check_span,
    check_unit,
    default_query,
    key_side,
    query_profile,
    unit_starts,
    unit_sums,
    view_shape,
)
from ..viewdata.selection import check_combine, check_selection, runs, span_row
from .style import colormap, lecture_fit, lecture_fonts, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_ACCENT = {"light": "#d1242f", "lecture": "#d55e00"}


@lecture_fit
def plot_profile(
    result: AttentionResult,
    layer: int = 0,
    head: Any = -1,
    *,
    query: Any = None,
    unit: str = "token",
    kind: str = "self",
    top_k: int = 5,
    theme: str | None = None,
    cmap: str | None = None,
    ax: Any = None,
    selection: list[int] | None = None,
    combine: str = "mean",
) -> Figure:
    """The attention each key token (or sentence, or paragraph) receives from a query span, along the document:
    bars of the weight per unit over key positions, a colour strip under them (the widget's colours), sentence
    boundaries as thin lines, the query span shaded, and the ``top_k`` units labelled with their first token.

    Parameters
    ----------
    result : AttentionResult
        Dense or held as queries and keys (read a block of rows at a time).
    layer : int
    head : int or list of int
        One head, -1 (default) for the mean of the layer's heads, or a list of heads (their mean).
    query : int or (start, stop), optional
        The query token or span; default the last token that is not a special token (as in the widget).
    unit : str
        "token", "sentence" or "paragraph".
    kind : str
        "self", or "encoder" / "decoder" / "cross" for encoder-decoder results.
    top_k : int
        How many of the heaviest units to label.
    theme : str, optional
        "light" or "lecture"; default the one :func:`attnwidgets.set_theme` chose.
    cmap : str, optional
        A matplotlib colour map name; default "Blues" in both themes, as in the widget (text is read on its
        colour, so the lowest weights must look like the white page).
    ax : matplotlib Axes, optional
        Draw the bars into it (no colour strip then).
    selection : list of int, optional
        Query tokens, any set (as the widget's ``selection``); overrides ``query``.
    combine : str
        "mean" (default) or "sum" of the query rows (a ``query`` span is always their mean).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, attnwidgets as aw
    >>> a = np.tril(np.ones((1, 1, 4, 4), np.float32)); a /= a.sum(-1, keepdims=True)
    >>> r = aw.AttentionResult.from_arrays(a, ["Hi", ".", " Yes", "!"], kind="decoder")
    >>> fig = aw.plots.plot_profile(r, query=3, unit="sentence")
    >>> fig.axes[0].get_title()
    'arrays · self attention · layer 0 · mean of heads · query token 3 · per sentence'
    """
    kind, layer, heads = view_shape(result, kind, layer, head)
    unit = check_unit(unit)
    n_queries, n_keys = result.attention_shape(kind)[2:]  # type: ignore[arg-type]
    combine = check_combine(combine)
    picked = check_selection([] if selection is None else selection, n_queries)
    if not picked:
        q0, q1 = check_span(default_query(result, kind) if query is None else query, n_queries)
        picked = list(range(q0, q1))
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be a non-negative integer, got {top_k!r}")
    theme = resolve_theme(theme)
    keys, special, _ = key_side(result, kind)
    weights = span_row(result, layer, picked, heads, kind, combine) if selection or combine != "mean" else \
        query_profile(result, layer, (picked[0], picked[-1] + 1), heads, kind)
    starts = unit_starts(keys, unit, special)
    values = unit_sums(weights, starts)
    edges = np.append(starts, n_keys)
    vmax = float(values.max()) if len(values) and values.max() > 0 else 1.0
    cm = colormap(cmap or "Blues")  # as in the widget: the lowest weights look like the page in both themes
    accent = _ACCENT.get(theme, "#d1242f")
    with lecture_fonts(theme):
        if ax is None:
            fig = new_figure((11 * (1.3 if theme == "lecture" else 1.0), 3.6 * (1.3 if theme == "lecture" else 1.0)))
            ax, strip = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [6, 1], "hspace": 0.05})
        else:
            fig, strip = ax.figure, None
        ax.stairs(values, edges, fill=True, color=cm(0.75), linewidth=0)
        ax.stairs(values, edges, color=cm(1.0), linewidth=0.8)
        if kind != "cross":  # the query span is among the keys
            for i, (a, b) in enumerate(runs(picked)):
                ax.axvspan(a, b, color=accent, alpha=0.25, linewidth=0, label="query" if i == 0 else None)
        sentences = unit_starts(keys, "sentence", special)
        if 1 < len(sentences) <= 300:
            ax.vlines(sentences[1:], 0, vmax * 1.12, colors="#8c959f", linewidth=0.5, alpha=0.7)
        for u in np.argsort(-values, kind="stable")[:top_k]:
            if values[u] <= 0:
                continue
            k0, k1 = int(edges[u]), int(edges[u + 1])
            first = int(k0 + np.argmax(weights[k0:k1]))
            ax.annotate(f"{token_label(keys[first])} {values[u]:.3f}", ((k0 + k1) / 2, values[u]),
                        xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize="small",
                        rotation=0 if top_k <= 8 else 45)
        ax.set_xlim(0, n_keys)
        ax.set_ylim(0, vmax * 1.18)
        ax.set_ylabel(f"attention per {unit}")
        which = "mean of heads" if heads == -1 else (f"heads {list(heads)}" if isinstance(heads, tuple)
                                                     else f"head {heads}")
        spans = runs(picked)
        if len(picked) == 1:
            span = f"query token {picked[0]}"
        elif len(spans) == 1:
            span = f"query tokens {picked[0]}–{picked[-1]}"
        else:
            span = f"{len(picked)} query tokens"
        span += f" ({combine})" if combine != "mean" or len(spans) > 1 else ""
        ax.set_title(f"{result.model.name} · {'self' if kind == 'self' else kind} attention · layer {layer} · "
                     f"{which} · {span} · per {unit}")
        if strip is not None:
            colours = np.repeat(values, np.diff(edges))[None, :] / vmax
            strip.imshow(colours, aspect="auto", cmap=cm, vmin=0, vmax=1, extent=(0, n_keys, 0, 1),
                         interpolation="nearest")
            strip.set_yticks([])
            strip.set_xlabel("key position in the document")
        else:
            ax.set_xlabel("key position in the document")
    return fig
