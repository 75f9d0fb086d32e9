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

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    """One view in :data:`VIEWS`, named only (this layer imports no widget and no plot, and a view's state module
    is imported when first used): its front-end name, the widget class that shows it, its state's dataclasses (by
    name, in its module ``viewdata.views.<name>``) and, where it has them, its static twin and CLI name.

    Attributes
    ----------
    name : str
        The front end's name (``js/src/views/<name>/``, the widget's ``_bundle``, the key of ``Views`` in
        ``js/src/generated/wire.ts`` and of ``MODULES`` in ``js/src/lab/modules.ts``), and its state's module.
    widget : str
        The widget class's name in :mod:`attnwidgets.widgets`.
    state_class : str
        The frozen dataclass its state function returns (``payload``, ``meta``); :attr:`state` is the class.
    reply_classes, trait_classes : tuple of str
        The dataclasses of its requests' answers, and of its other synced traits (GenerationView's ``_share``:
        interfaces, not replies); :attr:`replies` and :attr:`traits` are the classes.
    twin : str or None
        The name of its static twin in :mod:`attnwidgets.plots`, which :mod:`attnwidgets.fallback` draws where no
        widget runs; None for a view without one.
    paint : str or None
        The name of its painter in :mod:`attnwidgets.plots`, ``paint_<view>(state, ax=None, **page)``: the twin drawn
        from the view's own state (what :func:`attnwidgets.plots.paint` dispatches to; keyword arguments named as
        the widget's traits the page reads, such as ``rows`` or ``color``); None while the twin still re-reads the
        widget's traits (issue 33 §4).
    cli : str or None
        Its name for ``attnwidgets show --view`` and ``%attention --view``; None for a view the command line does
        not build (it needs more than a text).
    """

    name: str
    widget: str
    state_class: str
    reply_classes: tuple[str, ...] = ()
    trait_classes: tuple[str, ...] = ()
    twin: str | None = None
    cli: str | None = None
    paint: str | None = None

    def _module(self) -> Any:
        return importlib.import_module(f"{__name__}.{self.name}")

    @property
    def state(self) -> type:
        return getattr(self._module(), self.state_class)  # type: ignore[no-any-return]

    @property
    def replies(self) -> tuple[type, ...]:
        return tuple(getattr(self._module(), c) for c in self.reply_classes)

    @property
    def traits(self) -> tuple[type, ...]:
        return tuple(getattr(self._module(), c) for c in self.trait_classes)


#: Every view, once: what the wire-type generator (js/scripts/wire_types.py), the pictures of
#: :mod:`attnwidgets.fallback`, the command line (:mod:`attnwidgets.cli`, :mod:`attnwidgets.magics`) and the
#: extension's module list (js/src/lab/modules.ts, by a test) read. tests/project/test_view_registry.py keeps each
#: consumer to it. Naming the classes keeps this list free of imports: showing a heatmap imports the heatmap's state
#: module, not the fifteen others (benchmarks/bench_import.py).
VIEWS: tuple[ViewSpec, ...] = (
    ViewSpec("heatmap", "AttentionHeatmap", "HeatmapState", ("HeatmapMatrix", "HeatmapRegion", "LevelLabels"),
             twin="plot_heatmap", cli="heatmap", paint="paint_heatmap"),
    ViewSpec("model_view", "ModelView", "ModelViewState", ("ModelViewThumbs",), twin="plot_model_view", cli="model",
             paint="paint_model_view"),
    ViewSpec("ablation", "AblationWidget", "AblationState", twin="plot_ablation_panel", paint="paint_ablation"),
    ViewSpec("head_view", "HeadView", "HeadViewState", ("LineLabels",), twin="plot_head_view", cli="head",
             paint="paint_head_view"),
    ViewSpec("qk", "QKStepThrough", "QKState", twin="plot_qk", cli="qk", paint="paint_qk"),
    ViewSpec("compare", "AttentionCompare", "CompareState", twin="plot_compare", paint="paint_compare"),
    ViewSpec("profile", "AttentionProfile", "ProfileState", ("ProfileWeights",), twin="plot_profile",
             paint="paint_profile"),
    ViewSpec("generation", "GenerationView", "GenerationState", ("GenerationMatrix",), ("GenerationShare",),
             twin="plot_generation", paint="paint_generation"),
    ViewSpec("qk_space", "QKSpaceView", "QKSpaceState", ("QKSpaceWeights",), twin="plot_qk_space",
             paint="paint_qk_space"),
    ViewSpec("head_stats_grid", "HeadStatsGrid", "HeadStatsState", twin="plot_head_stats",
             paint="paint_head_stats_grid"),
    ViewSpec("entropy_bars", "EntropyBars", "EntropyBarsState", twin="plot_entropy_by_layer",
             paint="paint_entropy_bars"),
    ViewSpec("head_cluster_map", "HeadClusterMap", "HeadClusterMapState", twin="plot_head_clusters",
             paint="paint_head_cluster_map"),
    ViewSpec("fill_mask", "FillMask", "FillMaskState", twin="plot_fill_mask", paint="paint_fill_mask"),
    ViewSpec("mask_explorer", "MaskExplorer", "MaskExplorerState"),
    ViewSpec("positional", "PositionalExplorer", "PositionalState"),
    ViewSpec("routers", "RouterView", "RouterState", twin="plot_routers", paint="paint_routers"),
)

#: view name -> its :class:`ViewSpec`.
BY_NAME: dict[str, ViewSpec] = {v.name: v for v in VIEWS}
#: ``--view`` name -> its :class:`ViewSpec`, for the views the command line builds.
BY_CLI: dict[str, ViewSpec] = {v.cli: v for v in VIEWS if v.cli is not None}

#: view name -> its state dataclass (the generated TypeScript has ``Views[name] = {payload, meta?}``), and the
#: dataclasses of its requests' answers; read from :data:`VIEWS` (importing every view's module) when first used.
STATES: dict[str, type]
REPLIES: dict[str, tuple[type, ...]]
#: view name -> the dataclasses of its other traits (GenerationView's ``_share``): interfaces, not replies.
TRAITS: dict[str, tuple[type, ...]]


def _tables() -> dict[str, Any]:
    return {"STATES": {v.name: v.state for v in VIEWS},
            "REPLIES": {v.name: v.replies for v in VIEWS if v.reply_classes},
            "TRAITS": {v.name: v.traits for v in VIEWS if v.trait_classes}}


def __getattr__(name: str) -> Any:
    if name in BY_NAME:  # a view's state module, imported when first named
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("STATES", "REPLIES", "TRAITS"):
        tables = _tables()
        globals().update(tables)  # resolved once
        return tables[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BY_CLI", "BY_NAME", "REPLIES", "STATES", "TRAITS", "VIEWS", "ViewSpec", "ablation", "compare",
           "entropy_bars", "fill_mask", "generation", "head_cluster_map", "head_stats_grid", "head_view", "heatmap",
           "mask_explorer", "model_view", "positional", "profile", "qk", "qk_space", "routers"]
