"""AttentionProfile's state (front end: js/src/views/profile/): the document of every attention kind and the first
profile (the attention each key receives from the selected query tokens), and the answer to the page's "profile"
request, as pure functions of the result (the numbers come from :mod:`attnwidgets.viewdata.profile` and
:mod:`attnwidgets.viewdata.selection`, which the static twin reads too).

Examples
--------
>>> import numpy as np
>>> from attnwidgets.result import AttentionResult
>>> r = AttentionResult.from_arrays(np.array([[1.0, 0.0], [0.25, 0.75]], np.float32), ["Hi", "."])
>>> state = profile_state(r, ProfileOptions(selection=(0, 1)))
>>> state.payload.key, state.payload.weights.tolist(), state.payload.docs["self"].sentence
('self/0/-1/0:2/mean', [0.625, 0.375], [0])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...result import AttentionResult
from ..profile import document_pieces, key_side, query_profile, query_tokens, unit_starts
from ..selection import runs, span_row

__all__ = ["ProfileDoc", "ProfileOptions", "ProfilePayload", "ProfileState", "ProfileWeights", "profile_doc",
           "profile_key", "profile_selection", "profile_state", "profile_title", "profile_weights"]


@dataclass(frozen=True)
class ProfileOptions:
    """What the widget's traits choose: the head (or the mean, -1) and the query tokens, combined by ``combine``."""

    kind: str = "self"
    layer: int = 0
    head: int | tuple[int, ...] = -1  # a tuple: the mean of those heads (plot_profile's list of heads)
    selection: tuple[int, ...] = ()
    combine: str = "mean"


@dataclass(frozen=True)
class ProfileDoc:
    """One kind's document: each key token as it reads in running text, the query tokens, and the first token of
    each sentence and paragraph."""

    pieces: list[str]
    queries: list[str]
    sentence: list[int]
    paragraph: list[int]


@dataclass(frozen=True)
class ProfileWeights:
    """A "profile" request's answer: (key,) the attention each key receives."""

    weights: np.ndarray


@dataclass(frozen=True)
class ProfilePayload:
    """``_payload``: every kind's document and the first profile, so the first paint needs no round trip."""

    title: str
    kinds: list[str]
    shapes: dict[str, tuple[int, int]]
    docs: dict[str, ProfileDoc]
    key: str  # kind/layer/head/runs/combine (profile.ts profileKey)
    weights: np.ndarray


@dataclass(frozen=True)
class ProfileState:
    payload: ProfilePayload


def profile_doc(result: AttentionResult, kind: str) -> ProfileDoc:
    keys, special, words = key_side(result, kind)
    return ProfileDoc(document_pieces(keys, words, special), query_tokens(result, kind),
                      unit_starts(keys, "sentence", special).tolist(), unit_starts(keys, "paragraph", special).tolist())


def profile_key(options: ProfileOptions) -> str:
    """The page's name for a profile (js/src/views/profile/state.ts profileKey): the selection as runs "a:b,c:d"."""
    spans = ",".join(f"{a}:{b}" for a, b in runs(list(options.selection)))
    return f"{options.kind}/{options.layer}/{options.head}/{spans}/{options.combine}"


def profile_weights(result: AttentionResult, layer: int, head: Any, kind: str, *,
                    selection: Sequence[int] | None = None, combine: str = "mean",
                    query: Any = None) -> ProfileWeights:
    """The attention each key receives: from ``selection`` (any set of query tokens, combined by ``combine``), else
    from the ``query`` token or (start, stop) span (its mean)."""
    if selection is not None:
        return ProfileWeights(span_row(result, layer, list(selection), head, kind, combine))
    return ProfileWeights(query_profile(result, layer, query, head, kind))


def profile_state(result: AttentionResult, options: ProfileOptions, *,
                  docs: Mapping[str, ProfileDoc] | None = None) -> ProfileState:
    """What the page draws; ``docs`` are documents already made (by kind), the rest are made here."""
    kinds: list[str] = list(result.kinds)
    made = {k: docs[k] if docs is not None and k in docs else profile_doc(result, k) for k in kinds}
    shapes = {k: result.attention_shape(k) for k in kinds}  # type: ignore[arg-type]
    weights = profile_weights(result, options.layer, options.head, options.kind, selection=options.selection,
                              combine=options.combine).weights
    return ProfileState(ProfilePayload(result.model.name, kinds, {k: (int(s[0]), int(s[1])) for k, s in
                                                                   shapes.items()}, made, profile_key(options),
                                       weights))


def profile_selection(state: ProfileState) -> list[int]:
    """The query tokens the state's profile is read from (its key's runs "a:b,c:d"), in order."""
    spans = state.payload.key.split("/")[3]
    return [q for run in spans.split(",") if run for q in range(*map(int, run.split(":")))]


def profile_title(state: ProfileState) -> str:
    """The title over the state's profile, as the page writes it (``titleText`` in js/src/views/profile/state.ts):
    the document, the attention, the layer, the head and how many key tokens. The static twin writes this one.

    >>> r = AttentionResult.from_arrays(np.eye(3, dtype=np.float32), ["a", "b", "c"])
    >>> state = profile_state(r, ProfileOptions(layer=0, head=-1, selection=(0, 2)))
    >>> profile_title(state), profile_selection(state)
    ('arrays · self attention · layer 0 · mean of heads · 3 tokens', [0, 2])
    """
    kind, layer, head = state.payload.key.split("/")[:3]
    which = "mean of heads" if head == "-1" else f"head {head}" if head.isdigit() else f"heads [{head.strip('()')}]"
    n_tokens = len(state.payload.docs[kind].pieces)
    return f"{state.payload.title} · {kind} attention · layer {layer} · {which} · {n_tokens} tokens"
