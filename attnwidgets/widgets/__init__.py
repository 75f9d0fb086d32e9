"""The anywidget views. Each takes a result (or arrays), never a model; each has a ``js/src/<name>.ts``."""

from ._base import AttnWidget, set_theme
from .ablation import AblationWidget
from .boxes import box_state, install_box_formatter
from .compare import AttentionCompare
from .entropy_bars import EntropyBars
from .fill_mask import FillMask
from .generation import GenerationView
from .head_cluster_map import HeadClusterMap
from .head_stats_grid import HeadStatsGrid
from .head_view import HeadView
from .heatmap import AttentionHeatmap
from .linking import SelectionLink, link_selection, link_span
from .mask_explorer import MaskExplorer
from .model_view import ModelView
from .patching import PatchingView
from .positional import PositionalExplorer
from .profile import AttentionProfile, ProfileLink
from .qk import QKStepThrough
from .qk_space import QKSpaceView
from .roles import HeadRolesView
from .routers import RouterView
from .side_by_side import SideBySide

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
    "PatchingView",
    "PositionalExplorer",
    "ProfileLink",
    "QKSpaceView",
    "QKStepThrough",
    "RouterView",
    "SelectionLink",
    "SideBySide",
    "box_state",
    "link_selection",
    "link_span",
    "set_theme",
]

# A box holding a view (HBox([grid, heat])) saves its views' states too (boxes.py); nothing outside IPython.
install_box_formatter()
