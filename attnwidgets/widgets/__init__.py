"""The anywidget views. Each takes a result (or arrays), never a model; each has a ``js/src/<name>.ts``."""

from typing import TYPE_CHECKING

from ..lazy import attach
from ._base import AttnWidget, set_theme
from .boxes import box_state, install_box_formatter

if TYPE_CHECKING:  # what the names are, for type checkers (at run time they load on first use)
    from .ablation import AblationWidget
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

# name -> module that defines it, imported on first use: a notebook that shows a heatmap imports the heatmap's module
# (and what it needs), not the other twenty views' (their view-state modules, analysis, IPython display helpers).
_LAZY: dict[str, str] = {
    "AblationWidget": "attnwidgets.widgets.ablation",
    "AttentionCompare": "attnwidgets.widgets.compare",
    "AttentionHeatmap": "attnwidgets.widgets.heatmap",
    "AttentionProfile": "attnwidgets.widgets.profile",
    "EntropyBars": "attnwidgets.widgets.entropy_bars",
    "FillMask": "attnwidgets.widgets.fill_mask",
    "GenerationView": "attnwidgets.widgets.generation",
    "HeadClusterMap": "attnwidgets.widgets.head_cluster_map",
    "HeadRolesView": "attnwidgets.widgets.roles",
    "HeadStatsGrid": "attnwidgets.widgets.head_stats_grid",
    "HeadView": "attnwidgets.widgets.head_view",
    "MaskExplorer": "attnwidgets.widgets.mask_explorer",
    "ModelView": "attnwidgets.widgets.model_view",
    "PatchingView": "attnwidgets.widgets.patching",
    "PositionalExplorer": "attnwidgets.widgets.positional",
    "ProfileLink": "attnwidgets.widgets.profile",
    "QKSpaceView": "attnwidgets.widgets.qk_space",
    "QKStepThrough": "attnwidgets.widgets.qk",
    "RouterView": "attnwidgets.widgets.routers",
    "SelectionLink": "attnwidgets.widgets.linking",
    "SideBySide": "attnwidgets.widgets.side_by_side",
    "link_selection": "attnwidgets.widgets.linking",
    "link_span": "attnwidgets.widgets.linking",
}

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

__getattr__, __dir__ = attach("attnwidgets.widgets", _LAZY, __all__)


# A box holding a view (HBox([grid, heat])) saves its views' states too (boxes.py); nothing outside IPython.
install_box_formatter()
