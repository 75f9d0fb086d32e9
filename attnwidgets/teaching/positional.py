"""Positional encodings for the teaching kit: sinusoidal, learned, RoPE, ALiBi and T5-style relative buckets.

The functions live in :mod:`attnwidgets.viewdata.positional`, below the widgets and the teaching kit alike, so that
a widget never imports the teaching kit; this module keeps the name lecture notebooks import
(``from attnwidgets.teaching import positional``). numpy only: importing it imports no torch.

Examples
--------
>>> sinusoidal(4, 8).shape, alibi_slopes(2).tolist()
((4, 8), [0.0625, 0.00390625])
"""

from __future__ import annotations

from ..viewdata.positional import *  # noqa: F403  (the teaching kit's name for the same functions)
from ..viewdata.positional import __all__ as __all__
