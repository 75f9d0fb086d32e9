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

from dataclasses import dataclass

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


@dataclass(frozen=True)
class ViewSpec:
    """One view in :data:`VIEWS`, named only (this layer imports no widget and no plot): its front-end name, the
    widget class that shows it, its state's dataclasses and, where it has them, its static twin and CLI name.

    Attributes
    ----------
    name : str
        The front end's name (``js/src/views/<name>/``, the widget's ``_bundle``, the key of ``Views`` in
        ``js/src/generated/wire.ts`` and of ``MODULES`` in ``js/src/lab/modules.ts``).
    widget : str
        The widget class's name in :mod:`attnwidgets.widgets`.
    state : type
        The frozen dataclass its state function returns (``payload``, ``meta``).
    replies : tuple of type
        The dataclasses of its requests' answers.
    traits : tuple of type
        The dataclasses of its other synced traits (GenerationView's ``_share``): interfaces, not replies.
    twin : str or None
        The name of its static twin in :mod:`attnwidgets.plots`, which :mod:`attnwidgets.fallback` draws where no
        widget runs; None for a view without one.
    cli : str or None
        Its name for ``attnwidgets show --view`` and ``%attention --view``; None for a view the command line does
        not build (it needs more than a text).
    """

    name: str
    widget: str
    state: type
    replies: tuple[type, ...] = ()
    traits: tuple[type, ...] = ()
    twin: str | None = None
    cli: str | None = None


#: Every view, once: what the wire-type generator (js/scripts/wire_types.py), the pictures of
#: :mod:`attnwidgets.fallback`, the command line (:mod:`attnwidgets.cli`, :mod:`attnwidgets.magics`) and the
#: extension's module list (js/src/lab/modules.ts, by a test) read. tests/project/test_view_registry.py keeps each
#: consumer to it.
VIEWS: tuple[ViewSpec, ...] = (
    ViewSpec("heatmap", "AttentionHeatmap", heatmap.HeatmapState,
             (heatmap.HeatmapMatrix, heatmap.HeatmapRegion, heatmap.LevelLabels), twin="plot_heatmap", cli="heatmap"),
    ViewSpec("model_view", "ModelView", model_view.ModelViewState, (model_view.ModelViewThumbs,),
             twin="plot_model_view", cli="model"),
    ViewSpec("ablation", "AblationWidget", ablation.AblationState, twin="plot_ablation_panel"),
    ViewSpec("head_view", "HeadView", head_view.HeadViewState, (head_view.LineLabels,), twin="plot_head_view",
             cli="head"),
    ViewSpec("qk", "QKStepThrough", qk.QKState, twin="plot_qk", cli="qk"),
    ViewSpec("compare", "AttentionCompare", compare.CompareState, twin="plot_compare"),
    ViewSpec("profile", "AttentionProfile", profile.ProfileState, (profile.ProfileWeights,), twin="plot_profile"),
    ViewSpec("generation", "GenerationView", generation.GenerationState, (generation.GenerationMatrix,),
             (generation.GenerationShare,), twin="plot_generation"),
    ViewSpec("qk_space", "QKSpaceView", qk_space.QKSpaceState, (qk_space.QKSpaceWeights,), twin="plot_qk_space"),
    ViewSpec("head_stats_grid", "HeadStatsGrid", head_stats_grid.HeadStatsState, twin="plot_head_stats"),
    ViewSpec("entropy_bars", "EntropyBars", entropy_bars.EntropyBarsState, twin="plot_entropy_by_layer"),
    ViewSpec("head_cluster_map", "HeadClusterMap", head_cluster_map.HeadClusterMapState, twin="plot_head_clusters"),
    ViewSpec("fill_mask", "FillMask", fill_mask.FillMaskState, twin="plot_fill_mask"),
    ViewSpec("mask_explorer", "MaskExplorer", mask_explorer.MaskExplorerState),
    ViewSpec("positional", "PositionalExplorer", positional.PositionalState),
    ViewSpec("routers", "RouterView", routers.RouterState, twin="plot_routers"),
)

#: view name -> its :class:`ViewSpec`.
BY_NAME: dict[str, ViewSpec] = {v.name: v for v in VIEWS}
#: ``--view`` name -> its :class:`ViewSpec`, for the views the command line builds.
BY_CLI: dict[str, ViewSpec] = {v.cli: v for v in VIEWS if v.cli is not None}

#: view name -> its state dataclass (the generated TypeScript has ``Views[name] = {payload, meta?}``), and the
#: dataclasses of its requests' answers; read from :data:`VIEWS`.
STATES: dict[str, type] = {v.name: v.state for v in VIEWS}
REPLIES: dict[str, tuple[type, ...]] = {v.name: v.replies for v in VIEWS if v.replies}
#: view name -> the dataclasses of its other traits (GenerationView's ``_share``): interfaces, not replies.
TRAITS: dict[str, tuple[type, ...]] = {v.name: v.traits for v in VIEWS if v.traits}

__all__ = ["BY_CLI", "BY_NAME", "REPLIES", "STATES", "TRAITS", "VIEWS", "ViewSpec", "ablation", "compare",
           "entropy_bars", "fill_mask", "generation", "head_cluster_map", "head_stats_grid", "head_view", "heatmap",
           "mask_explorer", "model_view", "positional", "profile", "qk", "qk_space", "routers"]
