"""What a view shows for its measure switch: the weights, the norm-based shares (Kobayashi et al. 2020), or value
zeroing (Mohebbi et al. 2023). The one place that dispatches on ``measure``; it sits above :mod:`.norms` and
:mod:`.zeroing` (value zeroing reads the norms module's source resolution, so the dispatcher cannot live in either)."""

from __future__ import annotations

from ..analysis.norms import MEASURES, can_norms
from ..result import AttentionResult
from .norms import norm_result, norm_results
from .zeroing import value_zeroing_result

__all__ = ["measured"]


def measured(source: object, measure: str) -> object:
    """What a view (and its static twin) shows for ``measure``: ``source`` itself for "weights"; for "norms" its
    :func:`~attnwidgets.studies.norms.norm_result`, for "value_zeroing" its
    :func:`~attnwidgets.studies.zeroing.value_zeroing_result` (each of a list). ValueError for a measure or a source
    that cannot be shown so."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {list(MEASURES)}, got {measure!r}")
    if measure == "weights":
        return source
    if not can_norms(source):
        what = "norms" if measure == "norms" else "value zeroing"
        raise ValueError(f"{what} need results of aw.run (not ablated, not an encoder-decoder, not corpus "
                         "statistics): the model is run again on each text to read its value vectors")
    if measure == "value_zeroing":
        if isinstance(source, (list, tuple)):
            return [value_zeroing_result(r) for r in source]
        assert isinstance(source, AttentionResult)
        return value_zeroing_result(source)
    if isinstance(source, (list, tuple)):
        return norm_results(list(source))
    assert isinstance(source, AttentionResult)
    return norm_result(source)
