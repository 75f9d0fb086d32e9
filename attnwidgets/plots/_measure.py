"""The ``measure`` parameter the static twins share with their views (AttentionHeatmap, ModelView, EntropyBars)."""

from __future__ import annotations

from typing import Any

from ..analysis.norms import MEASURES

__all__ = ["MEASURE_SUFFIX", "measured"]

MEASURE_SUFFIX = {"weights": "", "norms": " · norms ‖αf(x)‖"}
"""What a figure's title gets, so a saved picture says what it shows (the views' titles say the same)."""


def measured(source: Any, measure: str) -> Any:
    """``source`` for "weights"; its norm-share result(s) for "norms" (:func:`attnwidgets.studies.norms.measured`,
    imported only then: it runs the model once more to read the value vectors)."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {list(MEASURES)}, got {measure!r}")
    if measure == "weights":
        return source
    from ..studies.norms import measured as norms

    return norms(source, measure)
