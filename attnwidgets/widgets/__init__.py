"""The anywidget views. Each takes a result (or arrays), never a model; each has a ``js/src/<name>.ts``."""

from ..result import head_matrix
from ._base import AttnWidget, pack, set_theme
from .heatmap import AttentionHeatmap

__all__ = ["AttentionHeatmap", "AttnWidget", "head_matrix", "pack", "set_theme"]
