"""GenerationView's state (front end: js/src/views/generation/): a generation's steps x keys matrix of one head, its
tokens and top-k, the "matrix" request's answer and the span-share panel of a selection (the ``_share`` trait), as
pure functions of a :class:`~attnwidgets.generation_result.GenerationResult`.

Examples
--------
>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> att = np.tril(np.ones((4, 4), np.float32)); att /= att.sum(1, keepdims=True)
>>> r = AttentionResult.from_arrays(att, ["a", "b", "c", "d"], kind="decoder")
>>> g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d", "e"], np.array([2, 3, 4]),
...                      np.array([[2], [3], [4]]), np.array([[0.9], [0.8], [0.7]], np.float32),
...                      [["c"], ["d"], ["e"]], text="c d e")
>>> state = generation_state(g, GenerationOptions())
>>> state.payload.key, state.payload.matrix[0].tolist(), state.meta.generated
('self/0/0', [0.5, 0.5, nan, nan], ['c', 'd', 'e'])
>>> generation_share(g, [0], "mean", "layer", 0).lines.shape  # (steps, a line per layer)
(3, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ...generation_result import GenerationResult
from ..lens import LensTable, generation_lens
from ..selection import runs, selection_share
from ..state import OPTIONAL, packed_as

__all__ = ["GenerationMatrix", "GenerationMeta", "GenerationOptions", "GenerationPayload", "GenerationShare",
           "GenerationState", "generation_matrix", "generation_share", "generation_state", "share_key"]


@dataclass(frozen=True)
class GenerationOptions:
    kind: str = "self"
    layer: int = 0
    head: int = 0


@dataclass(frozen=True)
class GenerationMatrix:
    """A "matrix" request's answer: (steps, keys) float16, NaN for keys not yet written."""

    matrix: np.ndarray = field(metadata=packed_as("float16"))


@dataclass(frozen=True)
class GenerationPayload:
    """``_payload``: the first view's steps x keys matrix, the top-k probabilities of every step and, when the
    generation kept it, the logit lens of every step."""

    key: str  # kind/layer/head
    matrix: np.ndarray = field(metadata=packed_as("float16"))
    topk_probs: np.ndarray
    lens: LensTable | None = field(default=None, metadata=OPTIONAL)  # a table per step, when the generation kept one


@dataclass(frozen=True)
class GenerationMeta:
    """``_meta``: the tokens (prompt, generated, keys of each kind), shapes and the top-k tokens of every step."""

    title: str
    kinds: list[str]
    shapes: dict[str, tuple[int, int]]
    prompt: list[str]
    generated: list[str]
    keys: dict[str, list[str]]
    first_row: int
    encoder_decoder: bool
    topk_tokens: list[list[str]]
    text: str
    n_selectable: int
    roles: list[tuple[str, int, int]]  # a chat prompt's role spans (role, start, stop): the "a line per role" menu


@dataclass(frozen=True)
class GenerationShare:
    """``_share``: the span-share panel of the selection, (steps, lines) float32 and a label per line, or why not."""

    key: str
    error: str
    lines: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    labels: list[str] | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class GenerationState:
    payload: GenerationPayload
    meta: GenerationMeta


def generation_matrix(g: GenerationResult, options: GenerationOptions) -> GenerationMatrix:
    return GenerationMatrix(g.steps_matrix(options.layer, options.head, options.kind))  # type: ignore[arg-type]


def generation_state(g: GenerationResult, options: GenerationOptions) -> GenerationState:
    kinds: list[str] = list(g.kinds)
    shapes = {kind: g.result.attention_shape(kind) for kind in kinds}  # type: ignore[arg-type]
    meta = GenerationMeta(
        title=g.model.name, kinds=kinds, shapes={k: (int(s[0]), int(s[1])) for k, s in shapes.items()},
        prompt=list(g.prompt_tokens), generated=list(g.generated_tokens),
        keys={kind: g.key_tokens(kind) for kind in kinds}, first_row=int(g.first_row),
        encoder_decoder=bool(g.is_encoder_decoder), topk_tokens=[list(row) for row in g.topk_tokens], text=g.text,
        n_selectable=int(g.result.n_tokens), roles=[(r.role, r.start, r.stop) for r in g.roles])
    payload = GenerationPayload(f"{options.kind}/{options.layer}/{options.head}",
                                generation_matrix(g, options).matrix, np.asarray(g.topk_probs),
                                generation_lens(g))
    return GenerationState(payload, meta)


def share_key(selection: Sequence[int], combine: str, share_by: str, layer: int) -> str:
    sel = "roles" if share_by == "role" else ",".join(f"{a}:{b}" for a, b in runs(list(selection)))
    return f"{sel}/{combine}/{share_by}" + (f"/{layer}" if share_by in ("head", "role") else "")


def generation_share(g: GenerationResult, selection: Sequence[int], combine: str, share_by: str,
                     layer: int) -> GenerationShare | None:
    """The span-share panel of ``selection`` (None when nothing is selected; ``error`` says why it cannot be drawn
    when the selection reaches into the generated tokens). ``share_by="role"`` draws a line per role of a chat prompt
    whatever is selected."""
    if not selection and share_by != "role":
        return None
    key = share_key(selection, combine, share_by, layer)
    try:
        lines, labels = selection_share(g, list(selection), combine, share_by, layer)
    except (ValueError, IndexError) as exc:
        return GenerationShare(key, str(exc))
    return GenerationShare(key, "", lines, list(labels))
