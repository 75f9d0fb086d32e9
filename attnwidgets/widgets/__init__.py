"""The anywidget views. Each takes a result (or arrays), never a model; each has a ``js/src/<name>.ts``."""

from ..result import head_matrix
from ..viewdata.wire import pack
from ._base import AttnWidget, set_theme
from .ablation import AblationWidget
from .entropy_bars import EntropyBars
from .fill_mask import FillMask
from .generation import GenerationView
from .head_cluster_map import HeadClusterMap
from .head_stats_grid import HeadStatsGrid, sink_grid
from .head_view import HeadView
from .heatmap import AttentionHeatmap
from .linking import SelectionLink, link_selection
from .mask_explorer import MaskExplorer
from .model_view import ModelView
from .positional import PositionalExplorer
from .profile import AttentionProfile, ProfileLink
from .qk import QKStepThrough

__all__ = [
    "AblationWidget",
    "AttentionHeatmap",
    "AttentionProfile",
    "AttnWidget",
    "EntropyBars",
    "FillMask",
    "GenerationView",
    "HeadClusterMap",
    "HeadStatsGrid",
    "HeadView",
    "MaskExplorer",
    "ModelView",
    "PositionalExplorer",
    "ProfileLink",
    "QKStepThrough",
    "SelectionLink",
    "head_matrix",
    "link_selection",
    "pack",
    "set_theme",
    "sink_grid",
]
