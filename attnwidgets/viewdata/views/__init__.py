"""One module per view: the view's state as a pure function of a result and the view's options, returning a frozen
dataclass of what the page draws (``payload`` → the ``_payload`` trait, ``meta`` → ``_meta``), and the answers to
the page's requests as pure functions too. Widgets hold traits and call these; static twins and saved pages read the
same functions. :func:`attnwidgets.viewdata.state.to_wire` turns a state into the traits' dicts, and
``js/scripts/wire_types.py`` writes the TypeScript interfaces of every state below into ``js/src/generated/wire.ts``.

A subpackage rather than ``viewdata/<view>.py``: several view names are already modules of shared computations
(``viewdata/compare.py``, ``profile.py``, ``positional.py``, ``qk_space.py``, ``roles.py``, which the static twins
use too), and one folder lets the type generator and its test find every view's state in :data:`STATES`. A module's
name is the view's front-end name (``js/src/views/<name>/`` or ``js/src/<name>.ts``).
"""

from __future__ import annotations

from . import (
    ablation,
    compare,
    entropy_bars,
    fill_mask,
    generation,
    head_cluster_map,
    head_stats_grid,
    head_view,
    heatmap,
    mask_explorer,
    model_view,
    positional,
    profile,
    qk,
    qk_space,
    routers,
)

#: view name -> its state dataclass (the generated TypeScript has ``Views[name] = {payload, meta?}``), and the
#: dataclasses of its requests' answers.
STATES: dict[str, type] = {"heatmap": heatmap.HeatmapState, "ablation": ablation.AblationState,
                           "head_view": head_view.HeadViewState, "qk": qk.QKState,
                           "model_view": model_view.ModelViewState, "compare": compare.CompareState,
                           "profile": profile.ProfileState, "generation": generation.GenerationState,
                           "qk_space": qk_space.QKSpaceState, "head_stats_grid": head_stats_grid.HeadStatsState,
                           "entropy_bars": entropy_bars.EntropyBarsState,
                           "head_cluster_map": head_cluster_map.HeadClusterMapState,
                           "fill_mask": fill_mask.FillMaskState, "mask_explorer": mask_explorer.MaskExplorerState,
                           "positional": positional.PositionalState, "routers": routers.RouterState}
REPLIES: dict[str, tuple[type, ...]] = {
    "heatmap": (heatmap.HeatmapMatrix, heatmap.HeatmapRegion, heatmap.LevelLabels),
    "head_view": (head_view.LineLabels,),
    "model_view": (model_view.ModelViewThumbs,),
    "profile": (profile.ProfileWeights,),
    "generation": (generation.GenerationMatrix,),
    "qk_space": (qk_space.QKSpaceWeights,),
}
#: view name -> the dataclasses of its other traits (GenerationView's ``_share``): interfaces, not replies.
TRAITS: dict[str, tuple[type, ...]] = {"generation": (generation.GenerationShare,)}

__all__ = ["REPLIES", "STATES", "TRAITS", "ablation", "compare", "entropy_bars", "fill_mask", "generation",
           "head_cluster_map", "head_stats_grid", "head_view", "heatmap", "mask_explorer", "model_view", "positional",
           "profile", "qk", "qk_space", "routers"]
