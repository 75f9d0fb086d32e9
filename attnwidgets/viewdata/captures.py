"""The QK captures QKStepThrough and :func:`attnwidgets.plots.plot_qk` both take: one
:class:`~attnwidgets.qk_result.QKCapture` (from ``capture_qk``) or a list of them (``capture_qk_layers``), one per
layer, and the check of a ``layer`` against the captured ones.

>>> import numpy as np
>>> from attnwidgets.qk_result import QKCapture
>>> v = np.zeros((2, 3, 4))
>>> caps = captures_by_layer(QKCapture.from_vectors(v, v, v, list("abc")), "plot_qk")
>>> sorted(caps), check_captured(0, caps)
([0], 0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..qk_result import QKCapture
from .checks import check_int

__all__ = ["captures_by_layer", "check_captured"]


def captures_by_layer(capture: Any, who: str) -> dict[int, QKCapture]:
    """{layer: capture} from one capture or a list of them; TypeError naming ``who`` for anything else."""
    caps = [capture] if isinstance(capture, QKCapture) else list(capture) if isinstance(capture, Sequence) else []
    if not caps or not all(isinstance(c, QKCapture) for c in caps):
        raise TypeError(f"{who} takes a QKCapture or a list of them (from attnwidgets.runner.capture_qk or "
                        f"capture_qk_layers), got {type(capture).__name__}")
    return {c.layer: c for c in caps}


def check_captured(layer: Any, captures: Mapping[int, QKCapture]) -> int:
    """``layer`` when it is one of the captured layers; TypeError for a non-integer, ValueError otherwise.

    >>> import numpy as np
    >>> v = np.zeros((2, 3, 4))
    >>> check_captured(3, {0: QKCapture.from_vectors(v, v, v, list("abc"))})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: layer 3 was not captured; captured layers: [0]. Capture it with ...
    """
    value = check_int(layer, "layer")
    if value not in captures:
        raise ValueError(f"layer {value} was not captured; captured layers: {sorted(captures)}. "
                         "Capture it with attnwidgets.runner.capture_qk_layers(text, layers=[...])")
    return value
