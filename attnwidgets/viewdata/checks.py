"""One validator for every view and its static twin: layer, head and attention-kind arguments.

Widgets and plots call the same functions, so ``AttentionHeatmap(r, layer=6)`` and ``plot_heatmap(r, layer=6)`` fail
with the same message. Wrong types raise ``TypeError``; values out of range raise ``ValueError`` (a widget re-raises
either as a ``traitlets.TraitError`` with the same text). Negative layers are refused everywhere: ``head=-1`` already
means "the mean over the layer's heads", and reading ``layer=-1`` as "the last layer" in one place but not another
drew layer 5 under the title "layer -1".
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from ..result import AttentionResult

#: The attention stacks a result can hold: "self" for encoders and decoders, the other three for encoder-decoders.
KINDS = ("self", "encoder", "decoder", "cross")

#: Why ``words=True`` is refused for an encoder-decoder result (check_words).
WORDS_ENCODER_DECODER = ("word level is for self-attention of encoders and decoders, not encoder-decoders: show this "
                         "result with words=False")


def check_int(value: Any, name: str) -> int:
    """``value`` as a Python int; TypeError for bools, floats, strings, None and other non-integers.

    Examples
    --------
    >>> check_int(3, "layer")
    3
    >>> check_int(1.5, "layer")
    Traceback (most recent call last):
    ...
    TypeError: layer must be an integer, got float 1.5
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def check_layer(layer: Any, n_layers: int) -> int:
    """A layer index in 0..n_layers-1.

    Examples
    --------
    >>> check_layer(-1, 6)
    Traceback (most recent call last):
    ...
    ValueError: layer -1 is out of range: there are 6 layers (0..5)
    """
    value = check_int(layer, "layer")
    if not 0 <= value < n_layers:
        raise ValueError(f"layer {value} is out of range: there are {n_layers} layers (0..{n_layers - 1})")
    return value


def check_head(head: Any, n_heads: int, *, allow_mean: bool = True) -> int:
    """A head index in 0..n_heads-1, or -1 (the mean over the layer's heads) where ``allow_mean``.

    Examples
    --------
    >>> check_head(-1, 12)
    -1
    >>> check_head(12, 12)
    Traceback (most recent call last):
    ...
    ValueError: head 12 is out of range: each layer has 12 heads (0..11, or -1 for their mean)
    """
    value = check_int(head, "head")
    low = -1 if allow_mean else 0
    if not low <= value < n_heads:
        extra = ", or -1 for their mean" if allow_mean else ""
        raise ValueError(f"head {value} is out of range: each layer has {n_heads} heads (0..{n_heads - 1}{extra})")
    return value


def check_kind(result: AttentionResult, kind: Any) -> str:
    """An attention stack the result holds ("self" also names an encoder-decoder's "encoder").

    Examples
    --------
    >>> import numpy as np
    >>> r = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"])
    >>> check_kind(r, "cross")
    Traceback (most recent call last):
    ...
    ValueError: this result has no 'cross' attention; it has ['self']
    """
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a string, one of {KINDS}, got {type(kind).__name__} {kind!r}")
    if kind not in result.kinds and not (kind == "self" and "encoder" in result.kinds):
        raise ValueError(f"this result has no {kind!r} attention; it has {result.kinds}")
    return kind


def check_view(result: AttentionResult, kind: Any, layer: Any, head: Any = 0, *,
               allow_mean: bool = True) -> tuple[str, int, int]:
    """(kind, layer, head) checked against the result's shapes, in that order.

    Examples
    --------
    >>> import numpy as np
    >>> r = AttentionResult.from_arrays(np.ones((2, 3, 4, 4), dtype=np.float32) / 4, list("abcd"))
    >>> check_view(r, "self", 1, -1)
    ('self', 1, -1)
    """
    kind = check_kind(result, kind)
    n_layers, n_heads = result.attention_shape(kind)[:2]  # type: ignore[arg-type]  # no dense build at any length
    return kind, check_layer(layer, n_layers), check_head(head, n_heads, allow_mean=allow_mean)


def check_words(result: AttentionResult, words: Any) -> bool:
    """``words`` for ``result``: word level (pieces merged into words) is only for results with one token sequence.

    An encoder-decoder's decoder and cross attention have target tokens with no word ids, so ``words=True`` would
    show the encoder alone and a saved page could not be built. Every view with a ``words`` trait calls this when it
    is set, so the refusal reads the same everywhere.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.ones((1, 1, 2, 2), dtype=np.float32) / 2
    >>> r = AttentionResult.from_arrays(a, ["a", "b"], kind="encoder-decoder", target_tokens=["A", "B"],
    ...                                 decoder_attention=a, cross_attention=a)
    >>> check_words(r, False)
    False
    >>> check_words(r, True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: word level is for self-attention of encoders and decoders, not encoder-decoders: show this result ...
    """
    if words and result.cross_attention is not None:
        raise ValueError(WORDS_ENCODER_DECODER)
    return bool(words)


def check_query(query: Any, n_queries: int) -> int:
    """A query position in 0..n_queries-1 (a selected token, the query a step-through explains).

    Examples
    --------
    >>> check_query(5, 5)
    Traceback (most recent call last):
    ...
    ValueError: query 5 is out of range: there are 5 query tokens (0..4)
    """
    value = check_int(query, "query")
    if not 0 <= value < n_queries:
        raise ValueError(f"query {value} is out of range: there are {n_queries} query tokens (0..{n_queries - 1})")
    return value


#: The themes of every view and static twin: "light" (notebooks) and "lecture" (projector: large, high contrast).
THEMES = ("light", "lecture")

#: Colour maps of the views that draw non-negative values (attention weights, statistics); "" is the theme's.
COLORMAPS = ("blues", "viridis", "cividis", "greys", "reds")

#: Colour maps of the views that draw signed values (q/k components, positional encodings); "" is the theme's.
DIVERGING_COLORMAPS = ("rdbu", "puor")


def check_theme(theme: Any) -> str:
    """One of :data:`THEMES`.

    Examples
    --------
    >>> check_theme("nope")
    Traceback (most recent call last):
    ...
    ValueError: unknown theme 'nope'; choose one of ('light', 'lecture')
    """
    if not isinstance(theme, str) or theme not in THEMES:
        raise ValueError(f"unknown theme {theme!r}; choose one of {THEMES}")
    return theme


def check_colormap(colormap: Any, allowed: tuple[str, ...] = COLORMAPS) -> str:
    """A colour map name from ``allowed``, or "" (the theme's).

    Examples
    --------
    >>> check_colormap("")
    ''
    >>> check_colormap("jet", DIVERGING_COLORMAPS)
    Traceback (most recent call last):
    ...
    ValueError: unknown colormap 'jet'; choose one of ('rdbu', 'puor') or '' (the theme's)
    """
    if not isinstance(colormap, str):
        raise TypeError(f"colormap must be a string, got {type(colormap).__name__} {colormap!r}")
    if colormap and colormap not in allowed:
        raise ValueError(f"unknown colormap {colormap!r}; choose one of {allowed} or '' (the theme's)")
    return colormap


def check_vmax(vmax: Any) -> float | None:
    """A colour scale's fixed top: None (each map scaled to its own maximum) or a positive finite number.

    A fixed top (1.0 for attention weights) makes maps comparable: a near-uniform map (every weight about 1/n) then
    looks pale instead of as patterned as a sharp one. TypeError for a non-number, ValueError for 0, a negative
    number, NaN or infinity.

    Examples
    --------
    >>> check_vmax(None), check_vmax(1)
    (None, 1.0)
    >>> check_vmax(0)
    Traceback (most recent call last):
    ...
    ValueError: vmax must be None (each map scaled to its own maximum) or a positive finite number, got 0
    """
    if vmax is None:
        return None
    if isinstance(vmax, bool) or not isinstance(vmax, numbers.Real):
        raise TypeError(f"vmax must be None or a number, got {type(vmax).__name__} {vmax!r}")
    if not (math.isfinite(float(vmax)) and float(vmax) > 0):
        raise ValueError("vmax must be None (each map scaled to its own maximum) or a positive finite number, "
                         f"got {vmax!r}")
    return float(vmax)


def scale_note(vmax: float | None, top: float) -> str:
    """How a colour scale was chosen, in words, for a colour bar or legend: fixed (the same for every map) or per
    map (topped at this map's own maximum ``top``).

    Examples
    --------
    >>> scale_note(1.0, 1.0)
    'fixed scale 0–1'
    >>> scale_note(None, 0.1934)
    'per-map scale 0–0.193'
    """
    if vmax is not None:
        return f"fixed scale 0–{vmax:g}"
    return f"per-map scale 0–{top:.3f}"
def check_fit(fit: Any) -> str | bool | list[float]:
    """The ``fit`` of a view: ``"auto"`` (fit in the lecture theme only), ``True``, ``False``, or a
    ``(width, height)`` box in CSS pixels (each at least 100), returned as a list (what the page gets).

    Examples
    --------
    >>> check_fit("auto"), check_fit(False), check_fit((1200, 640))
    ('auto', False, [1200.0, 640.0])
    >>> check_fit((1200, 40))
    Traceback (most recent call last):
    ...
    ValueError: fit height must be at least 100 CSS pixels, got 40
    >>> check_fit("yes")
    Traceback (most recent call last):
    ...
    ValueError: fit must be "auto", True, False or a (width, height) in CSS pixels, got str 'yes'
    """
    if fit == "auto" or isinstance(fit, bool):
        return fit  # type: ignore[no-any-return]
    if isinstance(fit, (tuple, list)) and len(fit) == 2:
        box: list[float] = []
        for name, v in zip(("width", "height"), fit, strict=True):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"fit {name} must be a number of CSS pixels, got {type(v).__name__} {v!r}")
            if not math.isfinite(float(v)) or v < 100:
                raise ValueError(f"fit {name} must be at least 100 CSS pixels, got {v!r}")
            box.append(float(v))
        return box
    raise ValueError(f'fit must be "auto", True, False or a (width, height) in CSS pixels, got '
                     f"{type(fit).__name__} {fit!r}")
