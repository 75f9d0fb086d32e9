"""The "weights" / "norms" / "value_zeroing" switch that AttentionHeatmap, ModelView and EntropyBars share (front end:
js/src/draw/measure.ts).

``measure="norms"`` shows Kobayashi et al. 2020's norm-based attention instead of the weights: each row of
‖α^h_ij f_h(x_j)‖ divided by its sum, so a row still sums to 1 and colour scales, entropies and Clark-style shares
read the same way ("the share of the moved norm"). It needs a result of ``aw.run`` (the model is run once more to
read its value vectors; see :mod:`attnwidgets.studies.norms`). A source that cannot give norms (made with
``from_arrays``, ablated, an encoder-decoder, corpus statistics, a long input kept as queries and keys) keeps the
weights and says why in the widget's error box.

``measure="value_zeroing"`` shows Mohebbi et al. 2023's context-mixing map (:mod:`attnwidgets.studies.zeroing`):
how much each token's layer output moves when another token's value vectors are zeroed, rows summing to 1. It is one
map per layer, not per head, so every head of a layer shows its layer's map (the title says "per layer"). It needs
the same sources as norms.
"""

from __future__ import annotations

from typing import Any

import traitlets

from ..analysis.norms import MEASURES, can_norms
from ..viewdata.labels import MEASURE_LABELS

__all__ = ["MEASURES", "MEASURE_LABELS", "can_norms", "check_measure", "measure_trait", "shown", "try_shown"]


def measure_trait() -> Any:
    """The synced ``measure`` trait: "weights" (default) or "norms"."""
    return traitlets.Unicode("weights").tag(sync=True)


def check_measure(value: Any) -> str:
    """``value`` if it is a measure, else a TraitError listing them."""
    if value not in MEASURES:
        raise traitlets.TraitError(f"measure must be one of {list(MEASURES)}, got {value!r}")
    return str(value)


def shown(source: Any, measure: str) -> Any:
    """What a widget shows for ``measure``: the source itself for weights, its norm-share result(s) for norms."""
    if measure == "weights":
        return source
    from ..studies.measures import measured

    return measured(source, measure)


def try_shown(weights: Any, measure: str) -> tuple[Any, str]:
    """(what a widget shows for ``measure``, "") — or, where ``weights`` cannot give that measure, (None, the reason
    for the page's error box). The heatmap and the model view call it when their ``measure`` changes, keep the
    weights on an error and redraw otherwise."""
    try:
        return shown(weights, measure), ""
    except Exception as exc:  # any failure keeps the weights: the page's red box says why
        return None, f"{type(exc).__name__}: {exc}"
