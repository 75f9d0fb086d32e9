"""Static twin of AttentionProfile: the attention a query span pays along the document, as a matplotlib Figure.

:func:`paint_profile` draws the view's state (:func:`attnwidgets.viewdata.views.profile.profile_state`, what the page
draws); :func:`plot_profile` builds that state from a result and the view's options, then paints it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..result import AttentionResult
from ..viewdata.labels import token_label
from ..viewdata.profile import check_span, check_unit, default_query, unit_sums, view_shape
from ..viewdata.selection import check_combine, check_selection, runs, span_label
from ..viewdata.views.profile import ProfileOptions, ProfileState, profile_selection, profile_state, profile_title
from .style import colormap, lecture_fit, lecture_fonts, new_figure, resolve_theme

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["paint_profile", "plot_profile"]

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
    >>> fig.axes[0].get_title()                  # the page's title
    'arrays · self attention · layer 0 · mean of heads · 4 tokens'
    >>> fig.axes[1].get_xlabel()
    'key position in the document · attention per sentence from the mean of 1 row: ! (3)'
    """
    kind, layer, heads = view_shape(result, kind, layer, head)
    unit = check_unit(unit)
    n_queries = result.attention_shape(kind)[2]  # type: ignore[arg-type]
    combine = check_combine(combine)
    picked = check_selection([] if selection is None else selection, n_queries)
    if not picked:
        q0, q1 = check_span(default_query(result, kind) if query is None else query, n_queries)
        picked = list(range(q0, q1))
    # The page's own state (viewdata.views.profile): its weights, document and title are what the picture draws.
    state = profile_state(result, ProfileOptions(kind, layer, heads, tuple(picked), combine))
    return _draw(state, ax, unit, top_k, theme, cmap)


@lecture_fit
def paint_profile(state: ProfileState, ax: Any = None, *, unit: str = "token", top_k: int = 5,
                  theme: str | None = None, cmap: str | None = None) -> Figure:
    """Draw a profile's state (:func:`attnwidgets.viewdata.views.profile.profile_state`) as the page draws it: the
    weight of each ``unit`` along the document on the page's colour scale (0 to the heaviest unit), the query
    tokens shaded, the page's title (:func:`~attnwidgets.viewdata.views.profile.profile_title`) and its caption.

    Parameters
    ----------
    state : ProfileState
    ax : matplotlib Axes, optional
        Draw the bars into it (no colour strip then).
    unit, top_k, theme, cmap
        As :func:`plot_profile`'s (``unit`` is the widget's trait of that name).

    Examples
    --------
    >>> from attnwidgets.viewdata.views.profile import ProfileOptions, profile_state
    >>> r = AttentionResult.from_arrays(np.eye(3, dtype=np.float32), ["a", "b", "c"])
    >>> fig = paint_profile(profile_state(r, ProfileOptions(selection=(2,))))
    >>> fig.axes[0].get_title(), fig.axes[1].get_images()[0].get_clim()
    ('arrays · self attention · layer 0 · mean of heads · 3 tokens', (0.0, 1.0))
    """
    return _draw(state, ax, unit, top_k, theme, cmap)


def _draw(state: ProfileState, ax: Any, unit: str, top_k: int, theme: str | None, cmap: str | None) -> Figure:
    unit = check_unit(unit)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be a non-negative integer, got {top_k!r}")
    theme = resolve_theme(theme)
    kind = state.payload.key.split("/")[0]
    doc, weights, picked = state.payload.docs[kind], state.payload.weights, profile_selection(state)
    n_keys = len(weights)
    starts = np.asarray(range(n_keys) if unit == "token" else doc.sentence if unit == "sentence" else doc.paragraph,
                        dtype=np.int64)
    values = unit_sums(weights, starts)
    edges = np.append(starts, n_keys)
    vmax = float(values.max()) if len(values) and values.max() > 0 else 1.0  # the page's unitScale
    cm = colormap(cmap or "Blues")  # as in the widget: the lowest weights look like the page in both themes
    with lecture_fonts(theme):
        if ax is None:
            big = 1.3 if theme == "lecture" else 1.0
            fig = new_figure((11 * big, 3.6 * big))
            ax, strip = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [6, 1], "hspace": 0.05})
        else:
            fig, strip = ax.figure, None
        _bars(ax, values, edges, cm, vmax)
        if kind != "cross":  # the query span is among the keys
            for i, (a, b) in enumerate(runs(picked)):
                ax.axvspan(a, b, color=_ACCENT.get(theme, "#d1242f"), alpha=0.25, linewidth=0,
                           label="query" if i == 0 else None)
        if 1 < len(doc.sentence) <= 300:
            ax.vlines(doc.sentence[1:], 0, vmax * 1.12, colors="#8c959f", linewidth=0.5, alpha=0.7)
        _top_units(ax, doc.pieces, weights, values, edges, top_k)
        ax.set_xlim(0, n_keys)
        ax.set_ylabel(f"attention per {unit}")
        ax.set_title(profile_title(state))
        combine = state.payload.key.split("/")[-1]
        caption = f"attention per {unit} from the {span_label([q.strip() for q in doc.queries], picked, combine)}"
        if strip is not None:
            colours = np.repeat(values, np.diff(edges))[None, :]
            strip.imshow(colours, aspect="auto", cmap=cm, vmin=0, vmax=vmax, extent=(0, n_keys, 0, 1),
                         interpolation="nearest")
            strip.set_yticks([])
            strip.set_xlabel(f"key position in the document · {caption}")
        else:
            ax.set_xlabel(f"key position in the document · {caption}")
    return fig


def _bars(ax: Any, values: np.ndarray, edges: np.ndarray, cm: Any, vmax: float) -> None:
    ax.stairs(values, edges, fill=True, color=cm(0.75), linewidth=0)
    ax.stairs(values, edges, color=cm(1.0), linewidth=0.8)
    ax.set_ylim(0, vmax * 1.18)  # room for the labels over the heaviest units


def _top_units(ax: Any, pieces: list[str], weights: np.ndarray, values: np.ndarray, edges: np.ndarray,
               top_k: int) -> None:
    """Label the ``top_k`` heaviest units with their heaviest token and weight."""
    for u in np.argsort(-values, kind="stable")[:top_k]:
        if values[u] <= 0:
            continue
        k0, k1 = int(edges[u]), int(edges[u + 1])
        first = int(k0 + np.argmax(weights[k0:k1]))
        ax.annotate(f"{token_label(pieces[first])} {values[u]:.3f}", ((k0 + k1) / 2, values[u]),
                    xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize="small",
                    rotation=0 if top_k <= 8 else 45)
