"""Attention masks and key/value-head sharing for the teaching kit: full, causal, sliding window, global + local,
padding; MQA/GQA.

The functions live in :mod:`attnwidgets.viewdata.masks`, below the widgets and the teaching kit alike, so that
a widget never imports the teaching kit; this module keeps the name lecture notebooks import
(``from attnwidgets.teaching import masks``). numpy only: importing it imports no torch.

Examples
--------
>>> causal_mask(3).astype(int).tolist()
[[1, 0, 0], [1, 1, 0], [1, 1, 1]]
"""

from __future__ import annotations

from ..viewdata.masks import *  # noqa: F403  (the teaching kit's name for the same functions)
from ..viewdata.masks import __all__ as __all__
