"""What a widget and its static twin both compute from a result: validation, display matrices, thumbnails,
head-view line sets, head-stat tables, token labels and the wire format. Pure numpy; imports no widget and no
matplotlib, so ``widgets/`` and ``plots/`` both build on it and never on each other."""

from .checks import (
    COLORMAPS,
    DIVERGING_COLORMAPS,
    KINDS,
    THEMES,
    check_colormap,
    check_head,
    check_int,
    check_kind,
    check_layer,
    check_theme,
    check_view,
)

__all__ = [
    "COLORMAPS",
    "DIVERGING_COLORMAPS",
    "KINDS",
    "THEMES",
    "check_colormap",
    "check_head",
    "check_int",
    "check_kind",
    "check_layer",
    "check_theme",
    "check_view",
]
