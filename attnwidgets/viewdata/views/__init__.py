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

#: The views' modules. Each is imported when first used (a widget imports its own view's module), so showing a
#: heatmap does not import the fifteen other views' states; :data:`STATES`, :data:`REPLIES` and :data:`TRAITS` import
#: them all when first read.
VIEWS = ("ablation", "compare", "entropy_bars", "fill_mask", "generation", "head_cluster_map", "head_stats_grid",
         "head_view", "heatmap", "mask_explorer", "model_view", "positional", "profile", "qk", "qk_space", "routers")


def _tables() -> dict[str, Any]:
    """STATES, REPLIES and TRAITS (importing every view's module)."""
    m = {name: importlib.import_module(f"{__name__}.{name}") for name in VIEWS}
    heatmap, head_view, model_view, profile = m["heatmap"], m["head_view"], m["model_view"], m["profile"]
    generation, qk_space = m["generation"], m["qk_space"]
    return {
        #: view name -> its state dataclass (the generated TypeScript has ``Views[name] = {payload, meta?}``)
        "STATES": {"heatmap": heatmap.HeatmapState, "ablation": m["ablation"].AblationState,
                   "head_view": head_view.HeadViewState, "qk": m["qk"].QKState,
                   "model_view": model_view.ModelViewState, "compare": m["compare"].CompareState,
                   "profile": profile.ProfileState, "generation": generation.GenerationState,
                   "qk_space": qk_space.QKSpaceState, "head_stats_grid": m["head_stats_grid"].HeadStatsState,
                   "entropy_bars": m["entropy_bars"].EntropyBarsState,
                   "head_cluster_map": m["head_cluster_map"].HeadClusterMapState,
                   "fill_mask": m["fill_mask"].FillMaskState, "mask_explorer": m["mask_explorer"].MaskExplorerState,
                   "positional": m["positional"].PositionalState, "routers": m["routers"].RouterState},
        #: and the dataclasses of its requests' answers
        "REPLIES": {
            "heatmap": (heatmap.HeatmapMatrix, heatmap.HeatmapRegion, heatmap.LevelLabels),
            "head_view": (head_view.LineLabels,),
            "model_view": (model_view.ModelViewThumbs,),
            "profile": (profile.ProfileWeights,),
            "generation": (generation.GenerationMatrix,),
            "qk_space": (qk_space.QKSpaceWeights,),
        },
        #: view name -> the dataclasses of its other traits (GenerationView's ``_share``): interfaces, not replies.
        "TRAITS": {"generation": (generation.GenerationShare,)},
    }


STATES: dict[str, type]
REPLIES: dict[str, tuple[type, ...]]
TRAITS: dict[str, tuple[type, ...]]


def __getattr__(name: str) -> Any:
    if name in VIEWS:
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("STATES", "REPLIES", "TRAITS"):
        tables = _tables()
        globals().update(tables)  # resolved once
        return tables[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["REPLIES", "STATES", "TRAITS", "VIEWS", "ablation", "compare", "entropy_bars", "fill_mask", "generation",
           "head_cluster_map", "head_stats_grid", "head_view", "heatmap", "mask_explorer", "model_view", "positional",
           "profile", "qk", "qk_space", "routers"]
