"""AblationWidget's state (front end: js/src/views/ablation/): what the page draws once the model has run clean and
ablated, as pure functions of the watched outputs and the view's choices. The widget runs the model (through
:func:`attnwidgets.studies.watch.watch_ablation`) and hands the outcome here; nothing here runs a model.

The watched numbers go from the outcome's table (columns of arrays,
:class:`~attnwidgets.analysis.outputs.ValueChanges`) straight into :class:`OutputRow` (one change of form: columns to
rows), the selected head's maps stay arrays until :func:`~attnwidgets.viewdata.state.to_wire` packs them.

Examples
--------
>>> import numpy as np, pandas as pd
>>> from attnwidgets.result import AttentionResult
>>> clean = AttentionResult.from_arrays(np.full((1, 2, 2, 2), 0.5, np.float32), ["a", "b"])
>>> setup = ablation_setup("m", {"self": (1, 2)}, {"self": 0}, ["a b"], None, "drift")
>>> outcome = Outcome("drift", pd.DataFrame({"item": ["text 0"], "name": ["cosine"], "before": [1.0],
...                   "after": [float("nan")], "delta": [float("nan")]}), [clean], [clean])
>>> state = ablation_state(setup, outcome, AblationView(), {"edits": []}, seconds=0.5, seq=3)
>>> state.payload.rows
[OutputRow(item='text 0', label='text 0: a b', name='cosine', before=1.0, after=None, delta=None)]
>>> state.payload.map.key, state.payload.map.after.shape
('self/0/0/0', (2, 2))
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from ...analysis.outputs import ValueChanges
from ...result import AttentionResult
from ..selection import check_combine, check_selection

__all__ = ["NO_CHANGE", "AblationEdit", "AblationMap", "AblationPayload", "AblationSetup", "AblationSpec",
           "AblationState", "AblationView", "HeadLook", "Outcome", "OutputRow", "ablation_map", "ablation_rows",
           "ablation_setup", "ablation_span", "ablation_state", "bar_range", "delta_axis_text", "delta_ranges",
           "format_delta", "format_value",
           "head_look", "item_label", "map_title", "map_top", "shown_map", "with_map", "with_seq"]


class Outcome(NamedTuple):
    """What a run of the model gave (the fields of :class:`~attnwidgets.studies.watch.WatchResult`)."""

    kind: str
    frame: Any  # the watched table, columns item, name, before, after, delta: a ValueChanges (or a DataFrame)
    before: Sequence[AttentionResult]
    after: Sequence[AttentionResult]


@dataclass(frozen=True)
class AblationView:
    """The widget's view traits: the stack, the selected head and the text its maps show."""

    kind: str = "self"
    layer: int = 0
    head: int = 0
    item: int = 0


@dataclass(frozen=True)
class AblationSetup:
    """What stays while the widget lives: the model's stacks and the texts (made once, in ``__init__``)."""

    title: str
    stacks: dict[str, tuple[int, int]]
    kv_heads: dict[str, int]
    texts: tuple[str, ...]
    pairs: tuple[str, ...] | None
    watch: str


@dataclass(frozen=True)
class OutputRow:
    item: str
    label: str  # what the item is (the texts of a pair, a candidate, ...)
    name: str  # "cosine", a token, a class, ...
    before: float | None
    after: float | None
    delta: float | None


@dataclass(frozen=True)
class AblationMap:
    """The selected head's map before and after, for one text."""

    key: str  # kind/item/layer/head
    queries: list[str]
    keys: list[str]
    before: np.ndarray
    after: np.ndarray


@dataclass(frozen=True)
class AblationEdit:
    stack: str
    layer: int
    head: int | None  # None: the whole layer
    mode: str  # "zero" | "uniform" | "mean" | "scale"
    scale: float


@dataclass(frozen=True)
class AblationSpec:
    """An ablation in its dict form (``Ablation.to_dict``)."""

    edits: list[AblationEdit]


@dataclass(frozen=True)
class AblationPayload:
    """``_payload``: what the page draws, all of it computed in Python."""

    title: str
    watch: str  # what is watched, in words
    stacks: dict[str, tuple[int, int]]  # [layers, heads] per stack
    kv_heads: dict[str, int]  # GQA: key/value heads per stack (0: none shared)
    items: list[str]  # a short label per text
    output: str  # the watched kind: "pairs", "ranking", ...
    rows: list[OutputRow]
    seconds: float
    ablation: AblationSpec  # the ablation the rows belong to
    seq: int  # the last page change answered (its _page_seq)
    map: AblationMap


@dataclass(frozen=True)
class AblationState:
    payload: AblationPayload


def ablation_setup(title: str, stacks: Mapping[str, Sequence[int]], kv_heads: Mapping[str, int],
                   texts: Sequence[str], pairs: Sequence[str] | None, watch: str) -> AblationSetup:
    return AblationSetup(title, {k: (int(v[0]), int(v[1])) for k, v in stacks.items()}, dict(kv_heads),
                         tuple(texts), None if pairs is None else tuple(pairs), watch)


def item_label(item: str, texts: Sequence[str], pairs: Sequence[str] | None) -> str:
    """What a watched item is, for the panel: "pair 2" → both sentences, "text 0 ..." → the text.

    >>> item_label("pair 0", ["a"], ["b"]), item_label("text 0 [MASK] 1", ["a"], None), item_label("x", [], None)
    ('pair 0: a  ↔  b', 'text 0 [MASK] 1: a', 'x')
    """
    words = item.split()
    if len(words) >= 2 and words[0] in ("pair", "text") and words[1].isdigit() and int(words[1]) < len(texts):
        i = int(words[1])
        if words[0] == "pair" and pairs is not None:
            return f"{item}: {texts[i]}  ↔  {pairs[i]}"
        return f"{item}: {texts[i]}"
    return item


def _number(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def ablation_rows(frame: Any, setup: AblationSetup) -> list[OutputRow]:
    """The watched numbers as rows, read column by column from the outcome's table (a
    :class:`~attnwidgets.analysis.outputs.ValueChanges`, or a DataFrame with its columns; NaN → None: JSON has no
    NaN)."""
    if isinstance(frame, ValueChanges):  # its columns are its fields: read as they are
        columns = [frame.item, frame.name, frame.before, frame.after, frame.delta]
    else:
        columns = [frame[c] for c in ("item", "name", "before", "after", "delta")]
    return [OutputRow(str(item), item_label(str(item), setup.texts, setup.pairs), str(name), _number(b), _number(a),
                      _number(d)) for item, name, b, a, d in zip(*columns, strict=True)]


def ablation_map(outcome: Outcome, view: AblationView) -> AblationMap:
    """The selected head's map (``view``) before and after, for the text ``view.item``."""
    before, queries, keys = outcome.before[view.item].attention_of(view.kind)  # type: ignore[arg-type]
    after, _, _ = outcome.after[view.item].attention_of(view.kind)  # type: ignore[arg-type]
    return AblationMap(f"{view.kind}/{view.item}/{view.layer}/{view.head}", list(queries), list(keys),
                       before[view.layer, view.head], after[view.layer, view.head])


def ablation_state(setup: AblationSetup, outcome: Outcome, view: AblationView, ablation: Mapping[str, Any], *,
                   seconds: float, seq: int) -> AblationState:
    """What the page draws after a run: ``ablation`` is the run's ablation in its dict form."""
    spec = AblationSpec([AblationEdit(str(e["stack"]), int(e["layer"]), None if e.get("head") is None else
                                      int(e["head"]), str(e["mode"]), float(e["scale"]))
                         for e in ablation.get("edits", [])])
    items = [t if len(t) <= 48 else t[:45] + "..." for t in setup.texts]
    return AblationState(AblationPayload(
        title=setup.title, watch=setup.watch, stacks=setup.stacks, kv_heads=setup.kv_heads, items=items,
        output=outcome.kind, rows=ablation_rows(outcome.frame, setup), seconds=float(seconds), ablation=spec,
        seq=int(seq), map=ablation_map(outcome, view)))


def with_map(state: AblationState, outcome: Outcome, view: AblationView) -> AblationState:
    """``state`` showing another head or text (no run: the maps come from the outcome)."""
    return AblationState(replace(state.payload, map=ablation_map(outcome, view)))


def with_seq(state: AblationState, seq: int) -> AblationState:
    """``state`` answering the page's change ``seq``."""
    return AblationState(replace(state.payload, seq=int(seq)))


def ablation_span(hm: AblationMap, selection: Any, combine: str = "mean") -> tuple[np.ndarray, np.ndarray, float]:
    """The selected query rows of the maps compared: their ``combine`` ("mean" or "sum") before and after, (keys,)
    float32 each, and how much of their attention the ablation moved, ``½ Σ |after − before|`` over the keys (for a
    mean: the share of the rows' attention that went to other keys, 0 none, 1 all; for a sum, that times the number
    of rows). What the page draws under the maps (js/src/views/ablation/state.ts spanCompare). Masked keys (NaN)
    count as 0. An empty selection is refused.

    >>> hm = AblationMap("self/0/0/0", list("ab"), list("ab"), np.array([[1.0, 0.0], [0.5, 0.5]]),
    ...                  np.array([[0.5, 0.5], [0.5, 0.5]]))
    >>> before, after, moved = ablation_span(hm, [0, 1])
    >>> before.tolist(), after.tolist(), moved
    ([0.75, 0.25], [0.5, 0.5], 0.25)
    """
    combine = check_combine(combine)
    picked = check_selection(selection, len(hm.queries))
    if not picked:
        raise ValueError("selection is empty: select one or more query tokens to compare their rows")
    rows = [np.nan_to_num(np.asarray(m, np.float64)[picked]) for m in (hm.before, hm.after)]
    before, after = ((r.mean(0) if combine == "mean" else r.sum(0)) for r in rows)
    return before.astype(np.float32), after.astype(np.float32), float(0.5 * np.abs(after - before).sum())


# -- what the page makes of the state (js/src/views/ablation/state.ts), for the static twin --------------------------

def shown_map(state: AblationState) -> AblationView:
    """The stack, head and text whose maps a state holds, read from the map's key (kind/item/layer/head)."""
    kind, item, layer, head = state.payload.map.key.split("/")
    return AblationView(kind, int(layer), int(head), int(item))


class HeadLook(NamedTuple):
    """A grid cell as the page draws it (state.ts headState, cellText): its layer disabled, its own edit's mode
    (None: none), the share of its output kept (1 untouched, 0 off) and its short text."""

    layer_off: bool
    mode: str | None
    scale: float
    text: str


def head_look(spec: AblationSpec, stack: str, layer: int, head: int) -> HeadLook:
    """How the grid shows one head under ``spec``: a layer's edit applies after its heads' (a scaled layer scales a
    scaled head; a disabled layer turns every head off).

    >>> spec = AblationSpec([AblationEdit("self", 0, 1, "scale", 0.5), AblationEdit("self", 1, None, "zero", 0.0)])
    >>> head_look(spec, "self", 0, 1), head_look(spec, "self", 1, 0).text
    (HeadLook(layer_off=False, mode='scale', scale=0.5, text='.50'), '')
    """
    def edit(h: int | None) -> AblationEdit | None:
        return next((e for e in spec.edits if (e.stack, e.layer, e.head) == (stack, layer, h)), None)

    whole, own = edit(None), edit(head)
    scale = 1.0 if own is None else own.scale if own.mode == "scale" else 0.0
    if whole is not None:
        scale = scale * whole.scale if whole.mode == "scale" else 0.0
    mode = None if own is None else own.mode
    text = {"zero": "×", "uniform": "U", "mean": "M"}.get(mode or "", "")
    if mode == "scale":
        text = f"{scale:.2f}".removeprefix("0")
    return HeadLook(whole is not None, mode, scale, "" if whole is not None else text)


def bar_range(values: Sequence[float | None]) -> tuple[float, float]:
    """The [lo, hi] a watched number's bars span: 0 and every value (state.ts barRange; hi = lo + 1 when equal)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    lo, hi = min([0.0, *finite]), max([0.0, *finite])
    return (lo, lo + 1.0) if lo == hi else (lo, hi)


NO_CHANGE = 5e-5
"""A change smaller than this is none (state.ts NO_CHANGE): it prints as ±0.0000, is drawn muted, and sets no change
axis (a float32 replay's 6e-8 filled half a track, beside a number that read ±0.0000)."""


def delta_ranges(rows: Sequence[OutputRow]) -> dict[str, float]:
    """Each watched name's change axis half-width (state.ts deltaRanges): its rows' largest |after - before|, so the
    biggest change fills half the track however small; 0 (no axis) when none reaches :data:`NO_CHANGE`.

    >>> rows = [OutputRow("t", "", "cosine", 0.979, 0.9767, -0.0023), OutputRow("t", "", "loss", 2.0, 2.0, 6e-8)]
    >>> {k: round(v, 6) for k, v in delta_ranges(rows).items()}
    {'cosine': 0.0023, 'loss': 0.0}
    """
    ranges: dict[str, float] = {}
    for r in rows:
        d = 0.0 if r.delta is None or not math.isfinite(r.delta) else abs(r.delta)
        ranges[r.name] = max(ranges.get(r.name, 0.0), d if d >= NO_CHANGE else 0.0)
    return ranges


def delta_axis_text(half: float) -> str:
    """The change axis's label for a half-width ``half`` (state.ts deltaAxisText).

    >>> delta_axis_text(0.0023), delta_axis_text(0)
    ('change, axis ±0.0023', 'change: none')
    """
    if not half > 0:
        return "change: none"
    digits = max(2, min(6, 1 - math.floor(math.log10(half))))
    return f"change, axis ±{half:.{digits}f}"


def format_value(v: float | None) -> str:
    """A watched number as the panel prints it (state.ts formatValue): 4 decimals, whole numbers as they are."""
    if v is None or not math.isfinite(v):
        return "–"
    return str(int(v)) if float(v).is_integer() and abs(v) >= 1 else f"{v:.4f}"


def format_delta(v: float | None) -> str:
    """A change as the panel prints it (state.ts formatDelta): signed, "" when missing."""
    if v is None or not math.isfinite(v):
        return ""
    return ("+" if v > 0 else "−" if v < 0 else "±") + format_value(abs(v))


def map_top(hm: AblationMap) -> float:
    """The maps' one colour scale's top (paint.ts paintMaps): the larger map's maximum, 1 when both are 0."""
    return max(float(np.nan_to_num(m, nan=0.0).max(initial=0.0)) for m in (hm.before, hm.after)) or 1.0


def map_title(state: AblationState, selection: Sequence[int] = (), combine: str = "mean") -> str:
    """The maps' caption as the page writes it (state.ts mapTitleText and movedText): stack, layer and head, the
    shared colour scale's top, and for selected rows (clamped to the text's queries) how much attention moved."""
    from ..labels import visible_text
    from ..selection import span_tokens

    hm, view = state.payload.map, shown_map(state)
    top = map_top(hm)
    where = f"{'' if view.kind == 'self' else view.kind + ' · '}layer {view.layer} · head {view.head}"
    text = f"{where}, same colour scale (max {top:.3f})"
    picked = [q for q in selection if q < len(hm.queries)]
    if picked:
        moved = ablation_span(hm, picked, combine)[2]
        text += f" · rows {span_tokens([visible_text(q) for q in hm.queries], picked)}: ½ Σ |after − before| = " \
                f"{moved:.3f}"
    return text
