"""The "weights" / "norms" switch that AttentionHeatmap, ModelView and EntropyBars share (front end:
js/src/shared/measure.ts).

``measure="norms"`` shows Kobayashi et al. 2020's norm-based attention instead of the weights: each row of
‖α^h_ij f_h(x_j)‖ divided by its sum, so a row still sums to 1 and colour scales, entropies and Clark-style shares
read the same way ("the share of the moved norm"). It needs a result of ``aw.run`` (the model is run once more to
read its value vectors; see :mod:`attnwidgets.studies.norms`). A source that cannot give norms (made with
``from_arrays``, ablated, an encoder-decoder, corpus statistics, a long input kept as queries and keys) keeps the
weights and says why in the widget's error box.
"""

from __future__ import annotations

from typing import Any

import traitlets

from ..analysis.norms import MEASURES, can_norms

__all__ = ["MEASURES", "MEASURE_LABELS", "can_norms", "check_measure", "measure_trait", "shown"]

MEASURE_LABELS = {"weights": "", "norms": " · norms ‖αf(x)‖ (row share)"}
"""What the title gets after the model's name, so a screenshot says what it shows."""


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
    from ..studies.norms import measured

    return measured(source, measure)
