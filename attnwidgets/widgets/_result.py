"""What the widgets that show one AttentionResult share (AttentionHeatmap, HeadView, ModelView).

Each takes a result, never a model: these helpers check that it is one, choose the attention ``kind`` shown first,
check a kind a user asks for, and work out the (kind, layer, head) a trait change proposes.
"""

from __future__ import annotations

from typing import Any

from ..attention_stack import LazyStack
from ..result import AttentionResult


def take_result(widget: str, result: Any, kwargs: dict[str, Any]) -> AttentionResult:
    """Check that ``result`` is an AttentionResult and default ``kwargs["kind"]`` to its first attention.

    Examples
    --------
    >>> take_result("HeadView", "some text", {})
    Traceback (most recent call last):
    ...
    TypeError: HeadView takes an AttentionResult (from attnwidgets.run), got str
    """
    if not isinstance(result, AttentionResult):
        raise TypeError(f"{widget} takes an AttentionResult (from attnwidgets.run), got {type(result).__name__}")
    kwargs.setdefault("kind", "self" if result.cross_attention is None else "encoder")
    for kind in result.kinds:  # a long input's overviews and sums: made in the background while the first map shows
        stack = result.stack(kind)  # type: ignore[arg-type]
        if isinstance(stack, LazyStack):
            stack.warm_summary()
    return result


def proposed_view(widget: Any, proposal: dict[str, Any]) -> tuple[str, int, int]:
    """(kind, layer, head) once the trait change ``proposal`` is accepted: a new kind starts at layer 0, head 0."""
    name = proposal["trait"].name
    values = {"kind": widget.kind, "layer": widget.layer, "head": widget.head, name: proposal["value"]}
    if name == "kind" and values["kind"] != widget.kind:
        values["layer"], values["head"] = 0, 0
    return values["kind"], values["layer"], values["head"]


class ShowsResult:
    """Mixin: the read-only ``result`` property of a widget built on one AttentionResult."""

    _result: AttentionResult

    @property
    def result(self) -> AttentionResult:
        """The result shown (read-only; make a new widget for another input)."""
        return self._result
