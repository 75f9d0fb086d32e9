"""A selection of query tokens (a span, or any set) and their combined attention row: what the heatmap, the model
view and the attention profile show when several tokens are selected, and what their static twins draw.

A selection is a sorted list of distinct query positions (``[]``: nothing selected). Its combined row is, for each
key, the ``"mean"`` (default) or the ``"sum"`` over the selected rows of the attention they give that key. The mean
of softmax rows sums to 1 over the keys; the sum is the total attention the selected tokens give each key (it sums
to the number of selected tokens). Keys cannot be selected: a selection always picks query rows.

Rows are read with ``result.rows`` a run of contiguous positions at a time (through
:func:`~attnwidgets.viewdata.profile.query_profile`), so a selection in an 8,000-token result held as queries and
keys never builds its dense attention.

>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> a = np.zeros((1, 1, 3, 3), np.float32); a[0, 0] = [[1, 0, 0], [.5, .5, 0], [.2, .3, .5]]
>>> r = AttentionResult.from_arrays(a, list("abc"))
>>> [round(float(v), 2) for v in span_row(r, 0, [1, 2], head=0)]
[0.35, 0.4, 0.25]
>>> [round(float(v), 2) for v in span_row(r, 0, [1, 2], head=0, combine="sum")]
[0.7, 0.8, 0.5]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..generation_result import GenerationResult
from ..result import AttentionResult
from .checks import check_int
from .profile import query_profile

__all__ = ["COMBINE", "SHARE_BY", "check_combine", "check_selection", "one_query", "runs", "selection_share",
           "span_label", "span_row", "span_rows", "span_tokens"]

#: How the rows of a selection are combined: their mean (default) or their sum.
COMBINE = ("mean", "sum")

#: The lines of a generation's span-share panel: one per layer (its heads' mean) or one per head of one layer.
SHARE_BY = ("layer", "head", "role")


def check_combine(combine: Any) -> str:
    """One of :data:`COMBINE`.

    >>> check_combine("max")
    Traceback (most recent call last):
    ...
    ValueError: unknown combine 'max'; choose one of ('mean', 'sum')
    """
    if not isinstance(combine, str) or combine not in COMBINE:
        raise ValueError(f"unknown combine {combine!r}; choose one of {COMBINE}")
    return combine


def check_selection(selection: Any, n_queries: int) -> list[int]:
    """A selection of query positions, sorted: a list (or tuple) of distinct ints in 0..n_queries-1; ``[]`` is none.

    >>> check_selection((4, 2, 3), 5)
    [2, 3, 4]
    >>> check_selection([1, 1], 5)
    Traceback (most recent call last):
    ...
    ValueError: selection [1, 1] repeats a position; list each token once
    >>> check_selection([0, 5], 5)
    Traceback (most recent call last):
    ...
    ValueError: selection position 5 is out of range: there are 5 query tokens (0..4)
    >>> check_selection(3, 5)
    Traceback (most recent call last):
    ...
    TypeError: selection must be a list of token positions, got int 3
    """
    if not isinstance(selection, (list, tuple)):
        raise TypeError(f"selection must be a list of token positions, got {type(selection).__name__} {selection!r}")
    values = [check_int(p, "selection position") for p in selection]
    if len(set(values)) != len(values):
        raise ValueError(f"selection {values} repeats a position; list each token once")
    for p in values:
        if not 0 <= p < n_queries:
            raise ValueError(f"selection position {p} is out of range: there are {n_queries} query tokens "
                             f"(0..{n_queries - 1})")
    return sorted(values)


def one_query(selection: list[int], query: int) -> int:
    """The query a view that steps through one query at a time shows for a selection (QKStepThrough; the same rule
    as js/src/draw/span.ts oneQuery): ``query`` while it is selected or nothing is, else the first selected token.

    >>> one_query([4, 5], 5), one_query([4, 5], 2), one_query([], 2)
    (5, 4, 2)
    """
    return query if not selection or query in selection else int(selection[0])


def runs(selection: list[int]) -> list[tuple[int, int]]:
    """The contiguous runs ``(start, stop)`` (stop exclusive) of a sorted selection.

    >>> runs([1, 2, 3, 7, 9, 10])
    [(1, 4), (7, 8), (9, 11)]
    """
    out: list[tuple[int, int]] = []
    for p in selection:
        if out and out[-1][1] == p:
            out[-1] = (out[-1][0], p + 1)
        else:
            out.append((p, p + 1))
    return out


def span_row(result: AttentionResult, layer: int, selection: Any, head: Any = -1, kind: str = "self",
             combine: str = "mean") -> np.ndarray:
    """(key,) float32: the ``combine`` ("mean" or "sum") over the selected query rows of one head (``-1``: the mean
    of the layer's heads; a list: those heads' mean). An empty selection is refused (nothing to combine).

    >>> a = np.zeros((1, 2, 2, 2), np.float32); a[0, 0] = [[1, 0], [0, 1]]; a[0, 1] = .5
    >>> span_row(AttentionResult.from_arrays(a, list("ab")), 0, [0, 1]).tolist()
    [0.5, 0.5]
    """
    combine = check_combine(combine)
    n_queries = result.attention_shape(kind)[2]  # type: ignore[arg-type]
    sel = check_selection(selection, n_queries)
    if not sel:
        raise ValueError("selection is empty: select one or more query tokens to combine their rows")
    total = np.zeros(result.attention_shape(kind)[3], np.float64)  # type: ignore[arg-type]
    for start, stop in runs(sel):
        total += query_profile(result, layer, (start, stop), head, kind).astype(np.float64) * (stop - start)
    if combine == "mean":
        total /= len(sel)
    return total.astype(np.float32)


def span_rows(result: AttentionResult, selection: Any, kind: str = "self", combine: str = "mean") -> np.ndarray:
    """[layer, head, key] float32: :func:`span_row` of every head of every layer (what the model view's thumbnails
    show in span mode).

    >>> a = np.zeros((1, 2, 2, 2), np.float32); a[0, 0] = [[1, 0], [0, 1]]; a[0, 1] = .5
    >>> span_rows(AttentionResult.from_arrays(a, list("ab")), [0, 1], combine="sum").tolist()
    [[[1.0, 1.0], [1.0, 1.0]]]
    """
    n_layers, n_heads, n_queries, n_keys = result.attention_shape(kind)  # type: ignore[arg-type]
    sel = check_selection(selection, n_queries)
    combine = check_combine(combine)
    if not sel:
        raise ValueError("selection is empty: select one or more query tokens to combine their rows")
    out = np.zeros((n_layers, n_heads, n_keys), np.float64)
    for layer in range(n_layers):
        for start, stop in runs(sel):
            for a in range(start, stop, 256):  # a block of rows at a time: a long run never builds all its rows
                block = result.rows(layer, a, min(stop, a + 256), kind=kind)  # type: ignore[arg-type]
                out[layer] += block.sum(axis=1, dtype=np.float64)
    if combine == "mean":
        out /= len(sel)
    return out.astype(np.float32)


def span_tokens(tokens: list[str], selection: list[int], limit: int = 6) -> str:
    """The selected tokens (the first ``limit``, then "…"): one span joined by spaces with its positions, several
    joined by " · " (the tokens part of :func:`span_label`; js/src/draw/span.ts spanTokens).

    >>> span_tokens(["[CLS]", "New", "York", "is"], [1, 2]), span_tokens(list("abcdef"), [0, 2, 5])
    ('New York (1–2)', 'a · c · f')
    """
    shown = [tokens[p] if 0 <= p < len(tokens) else "?" for p in selection[:limit]]
    more = " …" if len(selection) > limit else ""
    if len(runs(selection)) == 1:
        where = f" ({selection[0]}–{selection[-1]})" if len(selection) > 1 else f" ({selection[0]})"
        return f"{' '.join(shown)}{more}{where}"
    return f"{' · '.join(shown)}{more}"


def span_label(tokens: list[str], selection: list[int], combine: str = "mean", limit: int = 6) -> str:
    """A caption for a selection: its combine and its tokens (a contiguous span read as one phrase), at most
    ``limit`` tokens shown.

    >>> span_label(["[CLS]", "New", "York", "is", "big"], [1, 2])
    'mean of 2 rows: New York (1–2)'
    >>> span_label(list("abcdef"), [0, 2, 5], "sum")
    'sum of 3 rows: a · c · f'
    """
    if not selection:
        return ""
    rows = "row" if len(selection) == 1 else "rows"
    return f"{combine} of {len(selection)} {rows}: {span_tokens(tokens, selection, limit)}"


def _role_share(gen: GenerationResult, combine: str, layer: int, kind: str | None) -> tuple[np.ndarray, list[str]]:
    """One line per role of ``gen.roles``: the share of each step's attention on its turns in ``layer`` (the mean of
    its heads), or with "mean" that share over the role's number of tokens."""
    names = gen.role_names
    if not names:
        raise ValueError("this generation has no roles: generate from attnwidgets.runner.chat_prompt(...).text and "
                         "call with_roles(chat) on the result, or choose share_by='layer'")
    lines = []
    for role in names:
        line = gen.span_share(role, layers=[layer], kind=kind)[:, 0, :].mean(-1, dtype=np.float64)
        if combine == "mean":
            line /= sum(s.stop - s.start for s in gen.roles if s.role == role)
        lines.append(line)
    return np.stack(lines, axis=1).astype(np.float32), list(names)


def selection_share(gen: GenerationResult, selection: Any, combine: str = "sum", by: str = "layer", layer: int = 0,
                    kind: str | None = None) -> tuple[np.ndarray, list[str]]:
    """What a generation's span-share panel draws: ``(lines, labels)``, ``lines`` (steps, n_lines) float32.

    The selected tokens are keys here (positions of ``gen.result.tokens``: the prompt of a decoder, the source of an
    encoder-decoder). With ``combine="sum"`` a line is the share of each step's attention on them
    (:meth:`GenerationResult.span_share`, summed over the selection's runs); ``"mean"`` divides it by the number of
    selected tokens (the mean weight one of them gets). ``by="layer"``: one line per layer, the mean over its heads;
    ``by="head"``: one line per head of ``layer``; ``by="role"``: one line per role of a chat prompt
    (``gen.roles``, the selection not used), the mean over the heads of ``layer``, labelled with the role's name.

    >>> import numpy as np
    >>> att = np.tril(np.ones((4, 4), np.float32)); att /= att.sum(1, keepdims=True)
    >>> r = AttentionResult.from_arrays(att, list("abcd"), kind="decoder")
    >>> g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d", "e"], np.array([2, 3, 4]),
    ...                      np.array([[2], [3], [4]]), np.ones((3, 1), np.float32), [["c"], ["d"], ["e"]])
    >>> lines, labels = selection_share(g, [1])
    >>> labels, [round(float(v), 3) for v in lines[:, 0]]
    (['layer 0'], [0.5, 0.333, 0.25])
    """
    combine = check_combine(combine)
    if by not in SHARE_BY:
        raise ValueError(f"unknown share_by {by!r}; choose 'layer' (a line per layer, the mean of its heads), "
                         "'head' (a line per head of one layer) or 'role' (a line per role of a chat prompt)")
    if by == "role":
        return _role_share(gen, combine, check_int(layer, "layer"), kind)
    sel = check_selection(selection, gen.result.n_tokens)
    if not sel:
        raise ValueError("selection is empty: select one or more tokens of the prompt to see the share of each "
                         "step's attention on them")
    n_layers, n_heads = gen.result.attention_shape(gen.default_kind if kind is None else kind)[:2]  # type: ignore
    layers = None if by == "layer" else check_int(layer, "layer")
    total: np.ndarray | None = None
    for start, stop in runs(sel):
        part = gen.span_share((start, stop), layers=layers, kind=kind).astype(np.float64)
        total = part if total is None else total + part
    assert total is not None
    if combine == "mean":
        total /= len(sel)
    if by == "layer":
        return total.mean(-1).astype(np.float32), [f"layer {i}" for i in range(n_layers)]
    assert layers is not None
    return total[:, 0, :].astype(np.float32), [f"head {layers % n_layers}-{h}" for h in range(n_heads)]
