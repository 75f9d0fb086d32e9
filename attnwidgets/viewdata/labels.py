"""Token labels: how a token is written on an axis, and which tokens and sentence segments label the query and key
sides of each attention kind. The widgets send the tokens and segments; their static twins write the same labels.

For "self" and "encoder" attention both sides are the input's tokens; for "decoder" both are the target's; for
"cross" the queries are the target's tokens and the keys the source's. Only the input carries a sentence pair, so
target tokens are all segment 0.
"""

from __future__ import annotations

from ..result import AttentionResult

__all__ = ["axis_segments", "axis_tokens", "kind_tokens", "token_label"]


def token_label(token: str, max_len: int = 14) -> str:
    """A token as an axis label: newline and tab made visible, a leading space as "·", at most ``max_len`` characters.

    The same rule as ``tokenLabel`` in js/src/shared/layout.ts, so a figure labels a token as the widget does.

    Examples
    --------
    >>> token_label(" cat"), token_label("\\n"), token_label(""), token_label("internationalisation", 8)
    ('·cat', '⏎', '∅', 'interna…')
    """
    t = token.replace("\n", "⏎").replace("\t", "⇥")
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
    _, queries, keys = result.attention_of(kind)  # type: ignore[arg-type]
    return list(queries), list(keys)


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
    _, queries, _ = result.attention_of(kind)  # type: ignore[arg-type]
    source = [int(s) for s in result.segment_ids]
    if kind in ("self", "encoder"):
        return source, list(source)
    zeros = [0] * len(queries)
    return zeros, source if kind == "cross" else list(zeros)
