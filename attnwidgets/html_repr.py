"""How a result or an analysis shows itself in a notebook: one compact HTML table (``_repr_html_``).

Each result and analysis type sets ``_repr_html_ = repr_html``, so they all look alike: the type's name and its
one-line ``repr`` (model, sizes, the headline number), the first tokens where it has tokens, and the first rows of
its ``frame`` (a DataFrame attribute, or a ``frame()`` method) with how many rows there are in all. Plain ``repr``
stays what it was (the terminal and doctests read it).

Every string that goes in (the repr, token text, column names, index labels, cell values) is escaped, so a token
that reads ``<img src=x onerror=alert(1)>`` shows as that text and never becomes markup.

Pure Python (the result layer): a frame is read through its own methods (``head``, ``columns``, ``itertuples``), so
pandas is never imported here.

>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> r = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["<b>hi</b>", "there"])
>>> html = r._repr_html_()
>>> "<b>hi</b>" in html, "&lt;b&gt;hi&lt;/b&gt;" in html
(False, True)
"""

from __future__ import annotations

import dataclasses
import html
import numbers
from typing import Any

from .token_text import visible_text

__all__ = ["ROWS", "TOKENS", "cell_text", "repr_html", "summary"]

#: Rows of an object's frame shown (the rest are counted, not shown).
ROWS = 8

#: Tokens shown in the token row (the rest are counted).
TOKENS = 24

_STYLE = ("font-size:12px;border-collapse:collapse;margin:2px 0;")
_NOTE = "font-size:11px;color:#666"
_CELL = "padding:1px 6px;border:1px solid #ddd;text-align:left;font-family:monospace;white-space:pre"


def cell_text(value: Any, limit: int = 60) -> str:
    """One value as the escaped text of a table cell: floats to 4 significant digits, long text cut at ``limit``,
    invisible characters shown as markers (a right-to-left override U+202E would otherwise reverse what follows it
    in the notebook, the same rule as the views' labels).

    >>> cell_text(0.123456), cell_text(3), cell_text('<script>'), cell_text("x" * 70)[-3:]
    ('0.1235', '3', '&lt;script&gt;', 'xx…')
    >>> cell_text("\u202eevil")
    '⟨U+202E⟩evil'
    """

    if isinstance(value, bool) or value is None:
        text = str(value)
    elif isinstance(value, numbers.Integral):
        text = str(int(value))
    elif isinstance(value, numbers.Real):
        text = f"{float(value):.4g}"
    else:
        text = str(value)
    text = visible_text(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=True)


def _row(cells: list[str], tag: str = "td") -> str:
    return "<tr>" + "".join(f'<{tag} style="{_CELL}">{c}</{tag}>' for c in cells) + "</tr>"


def _tokens_html(tokens: Any) -> str:
    """A one-row table of the first :data:`TOKENS` tokens (escaped), with how many there are."""
    try:
        toks = [str(t) for t in tokens]
    except TypeError:
        return ""
    if not toks:
        return ""
    shown = [cell_text(t, 30) for t in toks[:TOKENS]]
    more = f"<td>… {len(toks) - TOKENS} more</td>" if len(toks) > TOKENS else ""
    return (f'<table style="{_STYLE}"><tr><th style="{_CELL}">tokens ({len(toks)})</th>'
            + "".join(f'<td style="{_CELL}">{t}</td>' for t in shown) + more + "</tr></table>")


def _frame_of(obj: Any) -> Any:
    """``obj.frame`` (an attribute, or a method called with no argument), if it reads like a DataFrame; else None."""
    frame = getattr(obj, "frame", None)
    if callable(frame):
        try:
            frame = frame()
        except (ValueError, TypeError):  # e.g. CorpusStats with no input added yet: nothing to show
            return None
    return frame if hasattr(frame, "columns") and hasattr(frame, "itertuples") and hasattr(frame, "head") else None


def _frame_html(frame: Any, rows: int) -> str:
    """The first ``rows`` rows of a DataFrame as an escaped table, with the total row count."""
    with_index = type(frame.index).__name__ != "RangeIndex"
    head = frame.head(rows)
    names = ([cell_text(frame.index.name or "")] if with_index else []) + [cell_text(c) for c in frame.columns]
    body = [_row(names, "th")]
    for tup in head.itertuples(index=True, name=None):
        cells = list(tup) if with_index else list(tup[1:])
        body.append(_row([cell_text(c) for c in cells]))
    n = len(frame)
    shown = min(rows, n)
    note = f"{n} rows × {len(frame.columns)} columns" + (f", first {shown} shown (all: .frame)" if n > shown else "")
    return f'<table style="{_STYLE}">' + "".join(body) + f'</table><div style="{_NOTE}">{note}</div>'


def summary(obj: Any, limit: int = 400) -> str:
    """The object's one-line ``repr``; where that is long or spans lines (a dataclass's generated repr prints whole
    frames and arrays), its model's name and its short fields instead: numbers and text as they are, arrays by shape.

    >>> from dataclasses import dataclass
    >>> import numpy as np
    >>> @dataclass
    ... class Toy:
    ...     metric: str
    ...     values: np.ndarray
    >>> summary(Toy("accuracy", np.zeros((200, 3))))
    "metric='accuracy', values: shape (200, 3)"
    """
    text = repr(obj)
    if "\n" not in text and len(text) <= limit:
        return text
    parts = []
    name = getattr(getattr(obj, "model", None), "name", None)
    if isinstance(name, str):
        parts.append(f"model {name!r}")
    for f in dataclasses.fields(obj) if dataclasses.is_dataclass(obj) else ():
        value = getattr(obj, f.name, None)
        shape = getattr(value, "shape", None)
        if isinstance(value, (str, numbers.Number)):
            parts.append(f"{f.name}={value!r}")
        elif shape is not None:
            parts.append(f"{f.name}: shape {tuple(shape)}")
    out = ", ".join(parts) or text.split("\n", 1)[0]
    return out if len(out) <= limit else out[: limit - 1] + "…"


def repr_html(obj: Any, rows: int = ROWS) -> str:
    """The compact HTML table of a result or an analysis: its name, its ``repr``, its tokens, its frame's first rows.

    Set as ``_repr_html_ = repr_html`` on a class. Every string in it is escaped.
    """
    name = html.escape(type(obj).__name__)
    parts = [f'<div class="aw-repr"><div style="font-family:monospace;font-size:12px"><b>{name}</b> '
             f"{html.escape(visible_text(summary(obj)), quote=True)}</div>"]
    tokens = getattr(obj, "tokens", None)
    if isinstance(tokens, (list, tuple)):
        parts.append(_tokens_html(tokens))
    frame = _frame_of(obj)
    if frame is not None:
        parts.append(_frame_html(frame, rows))
    parts.append("</div>")
    return "".join(parts)
