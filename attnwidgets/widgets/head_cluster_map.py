"""HeadClusterMap: heads placed by how alike their attention is, as a 2-D MDS scatter
(front end: js/src/views/head_cluster_map/). The widget form of Clark et al. 2019, Figure 6."""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..viewdata.head_stats import HeadStats, embedding_frame, head_points, head_stats
from ..viewdata.views.head_cluster_map import HeadClusterMapState, cluster_names, head_cluster_map_state
from ..viewdata.views.head_stats_grid import query_labels
from ._base import Colormap
from ._headstats import HeadWidget

__all__ = ["HeadClusterMap"]


class HeadClusterMap(HeadWidget):
    """Every head as a point, placed by metric MDS on the Jensen–Shannon distances between heads' attention.

    Heads that attend alike land close together. Points are coloured by layer or by any per-head statistic (a menu in
    the page); hovering a point shows "layer-head" and its values; clicking it selects that head (``layer``,
    ``head``).

    Parameters
    ----------
    result : AttentionResult, list of AttentionResult, CorpusStats or DataFrame
        One result or several (distances averaged over them), :class:`~attnwidgets.analysis.CorpusStats` made with
        ``distances=True``, or an embedding DataFrame with columns layer, head, x, y
        (:func:`attnwidgets.analysis.head_embedding`).
    stats : CorpusStats, DataFrame or dict, optional
        Per-head statistics to colour by, when ``result`` is an embedding DataFrame (attention sources and
        CorpusStats bring their own).
    color : str
        "layer" (default) or a statistic name ("sep", "entropy", ...): what colours the points first.
    words : bool
        Word-level attention for distances and statistics (attention sources only).
    seed : int
        MDS random state (the map is the same for the same seed).
    layer, head : int
        The selected head (``head=-1``: the whole layer).
    colormap : str
        "blues", "viridis", "cividis", "greys" or "reds" for statistics; "" (default) the theme's.
    theme : str
        "light" or "lecture".

    Notes
    -----
    Distances are :func:`attnwidgets.analysis.head_distances` (JS divergence, averaged over query rows and inputs,
    rows smoothed A <- 0.999 A + 0.001 / n as in Clark et al.'s code); the map is
    :func:`attnwidgets.analysis.head_embedding`. MDS places points up to rotation and reflection: only distances
    between points mean anything, not the axes.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> m = aw.HeadClusterMap(aw.run("The cat sat on the mat."), color="entropy")
    >>> m.embedding.shape
    (72, 4)
    """

    _bundle = "head_cluster_map"

    color = traitlets.Unicode("layer").tag(sync=True)
    """str, default "layer": "layer" colours points by layer (categorical); a statistic name colours them on a
    continuous scale with a colour bar. The page's menu sets it and repaints at once."""

    colormap = Colormap().tag(sync=True)
    """str, default "" (the theme's): the continuous colour map for statistics."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {stats, points}: the statistics as one packed (S, L, H) float32 buffer (as every HeadWidget) and the
    MDS coordinates as a packed (K, 2) float32 buffer, heads in layer-major order (k = layer * H + h)."""

    def __init__(self, result: Any, *, stats: Any = None, seed: int = 0, **kwargs: Any) -> None:
        self._seed = int(seed)
        self._extra_stats = stats
        words = kwargs.get("words", False)
        self.embedding = self._embed(result, isinstance(words, (bool, int, np.bool_)) and bool(words))
        super().__init__(result, **kwargs)

    # -- where the points come from ------------------------------------------------------------------------------

    def _embed(self, source: Any, words: bool) -> Any:
        return head_points(source, words=words, seed=self._seed, who="HeadClusterMap")

    def _load_stats(self, source: Any, words: bool) -> HeadStats:
        frame = embedding_frame(source)
        if frame is None:
            return super()._load_stats(source, words)  # with the selected rows, if any
        n_layers, n_heads = int(frame["layer"].max()) + 1, int(frame["head"].max()) + 1
        if self._extra_stats is None:
            return HeadStats({"layer": np.repeat(np.arange(n_layers, dtype=float)[:, None], n_heads, 1)}, "heads")
        got = head_stats(self._extra_stats, who="HeadClusterMap (stats=)")
        if got.shape != (n_layers, n_heads):
            raise ValueError(f"stats are {got.shape[0]} layers x {got.shape[1]} heads but the embedding has "
                             f"{n_layers} x {n_heads}")
        return got

    # -- what the page gets --------------------------------------------------------------------------------------

    def _state(self) -> HeadClusterMapState:
        return head_cluster_map_state(self.stats, self.embedding, can_words=self._can_words,
                                      tokens=query_labels(self._source, self.stats.words))

    @traitlets.validate("color")
    def _valid_color(self, proposal: dict[str, Any]) -> str:
        value = str(proposal["value"])
        if value != "layer" and hasattr(self, "stats") and value not in cluster_names(self.stats):
            raise ValueError(f"color must be 'layer' or one of {cluster_names(self.stats)}, got {value!r}")
        return value

    @traitlets.observe("words")
    def _on_words(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "stats") or not self._meta:
            return
        try:
            self.embedding = self._embed(self._source, change["new"])
            self.stats = self._load_stats(self._source, change["new"])
        except Exception as exc:  # shown in the page's red box
            self._error = f"{type(exc).__name__}: {exc}"
            return
        self._error = ""
        if self.color != "layer" and self.color not in cluster_names(self.stats):
            self.color = "layer"
        self._publish()

    def xy(self) -> np.ndarray:
        """(K, 2) MDS coordinates of the heads, layer-major (k = layer * heads + head)."""
        return self.embedding[["x", "y"]].to_numpy(np.float64)
