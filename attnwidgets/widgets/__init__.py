"""The anywidget views. Each takes a result (or arrays), never a model; each has a ``js/src/<name>.ts``."""

from ..result import head_matrix
from ..viewdata.wire import pack
from ._base import AttnWidget, set_theme
from .ablation import AblationWidget
from .compare import AttentionCompare
from .coref import coref_grid
from .entropy_bars import EntropyBars
from .fill_mask import FillMask
from .generation import GenerationView
from .head_cluster_map import HeadClusterMap
from .head_stats_grid import HeadStatsGrid, sink_grid
from .head_view import HeadView
from .heatmap import AttentionHeatmap
from .linking import SelectionLink, link_selection, link_span
from .mask_explorer import MaskExplorer
from .model_view import ModelView
from .positional import PositionalExplorer
from .profile import AttentionProfile, ProfileLink
from .qk import QKStepThrough
from .qk_space import QKSpaceView
from .roles import HeadRolesView, head_roles_view

__all__ = [
    "AblationWidget",
    "AttentionCompare",
    "AttentionHeatmap",
    "AttentionProfile",
    "AttnWidget",
    "EntropyBars",
    "FillMask",
    "GenerationView",
    "HeadClusterMap",
    "HeadRolesView",
    "HeadStatsGrid",
    "HeadView",
    "MaskExplorer",
    "ModelView",
    "PositionalExplorer",
    "ProfileLink",
    "QKSpaceView",
    "QKStepThrough",
    "SelectionLink",
    "coref_grid",
    "head_matrix",
    "head_roles_view",
    "link_selection",
    "link_span",
    "pack",
    "set_theme",
    "sink_grid",
]
