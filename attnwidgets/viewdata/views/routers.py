"""RouterView's state (front end: js/src/views/routers/): a mixture-of-experts decoder's routing as pure functions of a
:class:`~attnwidgets.router_result.RouterResult`: every token's chosen experts and gate weights in every MoE layer
(the token x layer strip), the palette and fade both painters colour a cell with, and the load per expert of one
layer over a selection of tokens (the bars), which the static twin draws and the page recomputes from the same arrays
when a click changes the layer or the selection.

Examples
--------
>>> import numpy as np
>>> from attnwidgets.router_result import RouterResult
>>> r = RouterResult(["a", "b", "c"], [0, 2], np.zeros((2, 3, 4), np.float32),
...                  np.array([[[0, 1], [2, 3], [0, 2]], [[3, 0], [3, 1], [1, 2]]]),
...                  np.full((2, 3, 2), 0.5, np.float32))
>>> state = router_state(r)
>>> state.meta.layers, state.meta.n_experts, state.payload.experts.shape
([0, 2], 4, (2, 3, 2))
>>> shown = router_load(r, RouterOptions(layer=2, selection=(0, 1)))
>>> shown.load.tolist(), shown.title
([0.25, 0.25, 0.0, 0.5], 'load per expert, layer 2, tokens 0–1')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...router_result import RouterResult
from ..checks import check_int

__all__ = ["EXPERT_PALETTE", "FADE_FLOOR", "RouterLoad", "RouterMeta", "RouterOptions", "RouterPayload", "RouterState",
           "check_router_layer", "expert_rgb", "load_title", "router_load", "router_state"]

#: One colour per expert (cycled past ten; the cell's number tells experts of one colour apart): colour-blind-safe
#: hues that stay distinct on the white ground of both themes.
EXPERT_PALETTE = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133",
                  "#56b4e9")

#: A cell's strength at gate weight 0: the colour is mixed with white as floor + (1 - floor) x weight, so a weak
#: gate (a 64-expert router's top-1 may hold 0.1) still shows its hue.
FADE_FLOOR = 0.3


@dataclass(frozen=True)
class RouterOptions:
    """What the view shows besides the strip: the layer whose load the bars draw (the model's layer number), the
    selected tokens (none: every token) and whether the load counts gate weight instead of assignments."""

    layer: int
    selection: tuple[int, ...] = ()
    weighted: bool = False


@dataclass(frozen=True)
class RouterPayload:
    """``_payload``: the chosen experts (L, T, k; exact as float32 below 2**24) and their gate weights (L, T, k)."""

    experts: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True)
class RouterMeta:
    """``_meta``: the title, the tokens, the model's layer number of each row, the experts and how cells are
    coloured (the palette and the fade floor)."""

    title: str
    tokens: list[str]
    layers: list[int]
    n_experts: int
    top_k: int
    renormalised: bool  # the k gate weights of every token sum to 1 (Mixtral; Qwen2-MoE / OLMoE by norm_topk_prob)
    palette: list[str]
    fade_floor: float


@dataclass(frozen=True)
class RouterState:
    payload: RouterPayload
    meta: RouterMeta


@dataclass(frozen=True)
class RouterLoad:
    """The bars: the load per expert of one layer over the selection, (E,) float32 summing to 1, and their title."""

    load: np.ndarray
    title: str


def check_router_layer(layer: Any, layers: Sequence[int]) -> int:
    """``layer`` as a layer with a router (the model's layer number).

    >>> check_router_layer(1, [1, 2])
    1
    >>> check_router_layer(0, [1, 2])
    Traceback (most recent call last):
    ...
    ValueError: layer 0 has no router: the mixture-of-experts layers are [1, 2]
    """
    value = check_int(layer, "layer")
    if value not in layers:
        raise ValueError(f"layer {value} has no router: the mixture-of-experts layers are {list(layers)}")
    return value


def expert_rgb(palette: Sequence[str], fade_floor: float, expert: int, weight: float) -> tuple[float, float, float]:
    """RGB (0..1) of ``expert``'s cell at gate ``weight``: its palette colour mixed with white, the strength
    ``fade_floor + (1 - fade_floor) * weight`` (js/src/views/routers/state.ts ``expertRgb`` is the same rule).

    >>> expert_rgb(EXPERT_PALETTE, 0.0, 0, 1.0), expert_rgb(EXPERT_PALETTE, 0.0, 10, 0.0)
    ((0.00392156862745098, 0.45098039215686275, 0.6980392156862745), (1.0, 1.0, 1.0))
    """
    hex_ = palette[int(expert) % len(palette)]
    base = [int(hex_[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    s = fade_floor + (1.0 - fade_floor) * float(np.clip(weight, 0.0, 1.0))
    r, g, b = (c * s + (1.0 - s) for c in base)
    return r, g, b


def router_state(result: RouterResult) -> RouterState:
    """What RouterView's page draws whatever is selected: the strip's arrays and the labels."""
    if not isinstance(result, RouterResult):
        raise TypeError(f"RouterView takes a RouterResult (from attnwidgets.runner.route), got {type(result).__name__}")
    name = result.model.name if result.model is not None else "arrays"
    renormalised = bool(np.allclose(result.weights.sum(-1), 1.0, atol=1e-3))
    meta = RouterMeta(title=f"{name} · top-{result.top_k} of {result.n_experts} experts", tokens=list(result.tokens),
                      layers=[int(x) for x in result.layers], n_experts=result.n_experts, top_k=result.top_k,
                      renormalised=renormalised, palette=list(EXPERT_PALETTE), fade_floor=FADE_FLOOR)
    return RouterState(RouterPayload(result.experts.astype(np.float32), result.weights.astype(np.float32)), meta)


def load_title(layer: int, selection: Sequence[int], weighted: bool) -> str:
    """The bars' title (js/src/views/routers/state.ts ``loadTitle`` writes the same).

    >>> load_title(1, [], False), load_title(1, [3], True)
    ('load per expert, layer 1, all tokens', 'gate weight per expert, layer 1, token 3')
    >>> load_title(0, [2, 3, 4], False), load_title(0, [2, 5], False)
    ('load per expert, layer 0, tokens 2–4', 'load per expert, layer 0, 2 tokens')
    """
    sel = list(selection)
    contiguous = bool(sel) and sel == list(range(sel[0], sel[-1] + 1))
    where = ("all tokens" if not sel else f"token {sel[0]}" if len(sel) == 1
             else f"tokens {sel[0]}–{sel[-1]}" if contiguous else f"{len(sel)} tokens")
    return f"{'gate weight' if weighted else 'load'} per expert, layer {layer}, {where}"


def router_load(result: RouterResult, options: RouterOptions) -> RouterLoad:
    """The bars of ``options.layer`` over ``options.selection`` (every token when empty):
    :meth:`RouterResult.load`'s row of that layer."""
    layer = check_router_layer(options.layer, result.layers)
    sel = sorted(options.selection)
    load = result.load(weighted=options.weighted, positions=sel or None)[result.layers.index(layer)]
    return RouterLoad(load, load_title(layer, sel, options.weighted))

