"""The ``measure`` parameter the static twins share with their views (AttentionHeatmap, ModelView, EntropyBars)."""

from __future__ import annotations

from typing import Any

from ..analysis.norms import MEASURES

__all__ = ["MEASURE_SUFFIX", "MEASURE_VALUE", "measured"]

MEASURE_SUFFIX = {"weights": "", "norms": " · norms ‖αf(x)‖", "value_zeroing": " · value zeroing (per layer)"}
"""What a figure's title gets, so a saved picture says what it shows (the views' titles say the same)."""

MEASURE_VALUE = {"weights": "attention weight", "norms": "share of the row's ‖αf(x)‖",
                 "value_zeroing": "value zeroing, share of the row"}
"""What one cell's number is, for a colour bar or an axis."""


def measured(source: Any, measure: str) -> Any:
    """``source`` for "weights"; its norm-share result(s) for "norms", its value-zeroing result(s) for "value_zeroing"
    (:func:`attnwidgets.studies.measures.measured`, imported only then: it runs the model again)."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {list(MEASURES)}, got {measure!r}")
    if measure == "weights":
        return source
    from ..studies.measures import measured as norms

    return norms(source, measure)
