"""AttentionCompare's state (front end: js/src/views/compare/): the head on screen of A and B, their aligned difference,
every head's summaries and the selection's combined rows, as pure functions of an
:class:`~attnwidgets.analysis.compare.AttentionComparison` (the maps themselves come from
:func:`attnwidgets.viewdata.compare.compare_head`, which the static twin draws too).

Examples
--------
>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> from attnwidgets.viewdata.compare import make_comparison
>>> a = AttentionResult.from_arrays(np.array([[1.0, 0.0], [0.5, 0.5]], np.float32), ["x", "y"])
>>> c = make_comparison(a, a)
>>> state = compare_state(c, (a, a), CompareOptions(selection=(1,)))
>>> state.payload.key, state.payload.dmax, state.payload.span_a.tolist(), state.meta.shape
('0/0/t', 0.0, [0.5, 0.5], (1, 1))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...analysis.compare import SUMMARIES, AttentionComparison
from ...result import AttentionResult
from ..compare import compare_head, compare_labels
from ..selection import span_row
from ..state import OPTIONAL

__all__ = ["CompareLabels", "CompareMeta", "CompareOptions", "ComparePayload", "CompareState", "compare_meta",
           "compare_sides", "compare_span", "compare_state", "compare_title", "result_name", "summary_stack"]


@dataclass(frozen=True)
class CompareOptions:
    """What the widget's traits choose: the head, the level, the selected query rows of A and how they combine."""

    layer: int = 0
    head: int = 0
    words: bool = False
    selection: tuple[int, ...] = ()
    combine: str = "mean"
    extra: Mapping[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    """Signed per-head summaries beside js and cosine, {name: (label, [layer, head] values)}, drawn on a diverging
    scale centred on 0 (a PatchingView's patching effect)."""


@dataclass(frozen=True)
class CompareLabels:
    """Token labels and which are aligned (each [query side, key side])."""

    a: tuple[list[str], list[str]]
    b: tuple[list[str], list[str]]
    a_matched: tuple[list[bool], list[bool]]
    b_matched: tuple[list[bool], list[bool]]
    aligned: tuple[list[str], list[str]]  # the difference's labels: A's text, "A/B" where they differ


@dataclass(frozen=True)
class CompareMeta:
    """``_meta``: names, labels, the [layers, heads] shape, the summaries and how tokens were aligned."""

    title: str
    a_name: str
    b_name: str
    labels: CompareLabels
    shape: tuple[int, int]
    summaries: list[str]
    summary_labels: dict[str, str]
    method: str
    identity: bool
    query_map: tuple[list[int], list[int]]  # [A's query rows, their B partners]
    can_words: bool
    signed: list[str] = field(default_factory=list)  # summaries drawn on a diverging scale centred on 0


@dataclass(frozen=True)
class ComparePayload:
    """``_payload``: the head on screen (both maps whole and the aligned difference), every head's summaries as one
    (2, L, H) array (js, cosine), and the selection's combined rows when something is selected."""

    key: str  # layer/head/t or w
    a: np.ndarray
    b: np.ndarray
    diff: np.ndarray
    vmax: float
    dmax: float
    summary: np.ndarray
    span_key: str | None = field(default=None, metadata=OPTIONAL)
    span_a: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    span_b: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    span_diff: np.ndarray | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class CompareState:
    payload: ComparePayload
    meta: CompareMeta


def result_name(result: AttentionResult) -> str:
    """A side's name in the page: the model's last path part, "· ablated" when it is."""
    name = result.model.name.rsplit("/", 1)[-1]
    return name + (" · ablated" if result.ablation is not None else "")


def compare_span(c: AttentionComparison, layer: int, head: int, selection: Sequence[int],
                 combine: str) -> dict[str, np.ndarray]:
    """The combined rows drawn under the maps: ``a`` the ``combine`` of A's selected rows, ``b`` of the B rows aligned
    with them (NaN everywhere when none is), ``diff`` b − a over the aligned keys. ValueError when nothing is
    selected."""
    sel = list(selection)
    if not sel:
        raise ValueError("selection is empty: select one or more query tokens of A to combine their rows")
    row_a = span_row(c.a, layer, sel, head, c.kind, combine)
    partner = dict(zip(c.queries.a_index.tolist(), c.queries.b_index.tolist(), strict=True))
    sel_b = sorted(partner[q] for q in sel if q in partner)
    if sel_b:
        row_b = span_row(c.b, layer, sel_b, head, c.kind, combine)
    else:
        row_b = np.full(c.b.attention_shape(c.kind)[3], np.nan, np.float32)  # type: ignore[arg-type]
    diff = (row_b[c.keys.b_index] - row_a[c.keys.a_index]).astype(np.float32)
    return {"a": row_a, "b": row_b, "diff": diff}


def compare_meta(c: AttentionComparison, inputs: Sequence[AttentionResult],
                 extra: Mapping[str, tuple[str, np.ndarray]] | None = None) -> CompareMeta:
    labels = compare_labels(c)
    q = c.queries
    extra = dict(extra or {})
    return CompareMeta(
        title="A vs B", a_name=result_name(c.a), b_name=result_name(c.b),
        labels=CompareLabels(**{k: (list(v[0]), list(v[1])) for k, v in labels.items()}),
        shape=(int(c.shape[0]), int(c.shape[1])), summaries=[*SUMMARIES, *extra],
        summary_labels={**SUMMARIES, **{k: v[0] for k, v in extra.items()}}, signed=list(extra),
        method=str(q.method), identity=bool(q.identity and c.keys.identity),
        query_map=(q.a_index.tolist(), q.b_index.tolist()),
        can_words=c.kind in ("self", "encoder") and all(
            bool((r.word_ids >= 0).any()) and r.cross_attention is None for r in inputs))


def compare_state(c: AttentionComparison, inputs: Sequence[AttentionResult], options: CompareOptions) -> CompareState:
    """What the page draws for ``options``' head; ``inputs`` are the two results as given (before word level)."""
    v = compare_head(c, options.layer, options.head)
    span: dict[str, np.ndarray] = {}
    span_key = None
    if options.selection:
        span = compare_span(c, options.layer, options.head, options.selection, options.combine)
        span_key = f"{options.layer}/{options.head}/{','.join(map(str, options.selection))}/{options.combine}"
    payload = ComparePayload(
        key=f"{options.layer}/{options.head}/{'w' if options.words else 't'}", a=v.a, b=v.b, diff=v.diff,
        vmax=float(v.vmax), dmax=float(v.dmax), summary=summary_stack(c, options.extra),
        span_key=span_key, span_a=span.get("a"), span_b=span.get("b"), span_diff=span.get("diff"))
    return CompareState(payload, compare_meta(c, inputs, options.extra))


def summary_stack(c: AttentionComparison, extra: Mapping[str, tuple[str, np.ndarray]]) -> np.ndarray:
    """Every head's summaries as one (S, L, H) float32 array: js, cosine, then the extra ones (each checked to be
    [layer, head] of the comparison)."""
    blocks = [c.js, c.cosine]
    for name, (_label, values) in extra.items():
        values = np.asarray(values, dtype=np.float64)
        if values.shape != tuple(c.shape):
            raise ValueError(f"summary {name!r} is {values.shape}, not the comparison's [layer, head] {tuple(c.shape)}")
        blocks.append(values)
    return np.stack(blocks).astype(np.float32)


def compare_title(state: CompareState) -> str:
    """The title over the state's maps, as the page writes it (``titleText`` in js/src/views/compare/state.ts): the
    two results (named once when they share a name) and the head on screen. The static twin writes this one.

    >>> a = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["x", "y"])
    >>> from attnwidgets.viewdata.compare import make_comparison
    >>> compare_title(compare_state(make_comparison(a, a), (a, a), CompareOptions(head=-1)))
    'arrays: A vs B · head 0/mean'
    """
    meta = state.meta
    layer, head = (int(x) for x in state.payload.key.split("/")[:2])
    names = f"{meta.a_name}: A vs B" if meta.a_name == meta.b_name else f"A: {meta.a_name} · B: {meta.b_name}"
    return f"{names} · head {layer}/{'mean' if head < 0 else head}"


def compare_sides(state: CompareState, show: str) -> list[tuple[str, str]]:
    """The maps of a show, as (which, panel name) (``sides`` in js/src/views/compare/state.ts): B − A over the aligned
    tokens, or A and B (named "A · <name>" unless both results have one name)."""
    meta = state.meta
    if show == "diff":
        return [("diff", "B − A")]
    same = meta.a_name == meta.b_name
    return [("a", "A" if same else f"A · {meta.a_name}"), ("b", "B" if same else f"B · {meta.b_name}")]
