"""Token labels: how a token is written on an axis, and which tokens and sentence segments label the query and key
sides of each attention kind. The widgets send the tokens and segments; their static twins write the same labels.

For "self" and "encoder" attention both sides are the input's tokens; for "decoder" both are the target's; for
"cross" the queries are the target's tokens and the keys the source's. Only the input carries a sentence pair, so
target tokens are all segment 0.
"""

from __future__ import annotations

from ..result import AttentionResult
from ..token_text import INVISIBLE_RANGES, is_invisible, visible_text

__all__ = ["INVISIBLE_RANGES", "MEASURE_LABELS", "axis_segments", "axis_tokens", "is_invisible", "kind_tokens",
           "token_label",
           "visible_text"]

MEASURE_LABELS = {"weights": "", "norms": " · norms ‖αf(x)‖ (row share)",
                  "value_zeroing": " · value zeroing (per layer, row share)"}
"""What a view's title gets after the model's name for each ``measure``, so a screenshot says what it shows."""



def token_label(token: str, max_len: int = 14) -> str:
    """A token as an axis label: :func:`visible_text`, a leading space as "·", empty as "∅", at most ``max_len``
    characters (code points) with "…" where it was cut.

    The same rule as ``tokenLabel`` in js/src/shared/text.ts, so a figure labels a token as the widget does
    (tests/token_label_cases.json holds the cases both test suites check). Not bidi-isolated: matplotlib lays text
    out left to right as stored, and the widgets isolate where they draw.

    Examples
    --------
    >>> token_label(" cat"), token_label("\\n"), token_label(""), token_label("internationalisation", 8)
    ('·cat', '⏎', '∅', 'interna…')
    >>> token_label("\\u200b"), token_label("\\u202eevil")
    ('⟨U+200B⟩', '⟨U+202E⟩evil')
    """
    t = visible_text(token)
    if t.startswith(" "):
        t = "·" + t[1:]
    t = t or "∅"
    return t if len(t) <= max_len else t[: max_len - 1] + "…"


def axis_tokens(result: AttentionResult, kind: str) -> tuple[list[str], list[str]]:
    """(query tokens, key tokens) of ``kind`` attention.

    Examples
    --------
    >>> import numpy as np
    >>> r = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"])
    >>> axis_tokens(r, "self")
    (['a', 'b'], ['a', 'b'])
    """
    result.stack(kind)  # type: ignore[arg-type]  # the kind's error, without building a long input's attention
    if kind in ("self", "encoder"):
        return list(result.tokens), list(result.tokens)
    if kind not in ("decoder", "cross") or result.target_tokens is None:
        raise ValueError(f"unknown attention kind {kind!r}; choose one of 'self', 'encoder', 'decoder', 'cross'")
    return list(result.target_tokens), list(result.target_tokens if kind == "decoder" else result.tokens)


def kind_tokens(result: AttentionResult) -> dict[str, list[list[str]]]:
    """``{kind: [query tokens, key tokens]}`` for every attention kind of ``result`` (what a widget's page labels).

    Examples
    --------
    >>> import numpy as np
    >>> kind_tokens(AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"]))
    {'self': [['a', 'b'], ['a', 'b']]}
    """
    return {kind: list(axis_tokens(result, kind)) for kind in result.kinds}


def axis_segments(result: AttentionResult, kind: str) -> tuple[list[int], list[int]]:
    """(query segments, key segments) of ``kind`` attention: sentence A is 0, sentence B is 1.

    Target tokens carry no sentence pair (all 0); cross-attention keys are the source's tokens and keep theirs.

    Examples
    --------
    >>> import numpy as np
    >>> r = AttentionResult.from_arrays(np.eye(3, dtype=np.float32), ["a", "b", "c"], segment_ids=np.array([0, 0, 1]))
    >>> axis_segments(r, "self")
    ([0, 0, 1], [0, 0, 1])
    """
    queries, _ = axis_tokens(result, kind)
    source = [int(s) for s in result.segment_ids]
    if kind in ("self", "encoder"):
        return source, list(source)
    zeros = [0] * len(queries)
    return zeros, source if kind == "cross" else list(zeros)
