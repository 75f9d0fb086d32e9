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

from ..viewdata.positional import (
    alibi_bias,
    alibi_slopes,
    apply_rope,
    learned,
    position_similarity,
    relative_positions,
    rope_angles,
    rope_frequencies,
    rope_relative_scores,
    rope_scores,
    sinusoidal,
    sinusoidal_dot_product,
    sinusoidal_frequencies,
    t5_bias,
    t5_relative_position_bucket,
)

__all__ = [
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "learned",
    "position_similarity",
    "relative_positions",
    "rope_angles",
    "rope_frequencies",
    "rope_relative_scores",
    "rope_scores",
    "sinusoidal",
    "sinusoidal_dot_product",
    "sinusoidal_frequencies",
    "t5_bias",
    "t5_relative_position_bucket",
]
