"""What the per-head widgets share: turning a result, results or corpus statistics into (layer, head) arrays, and a
base class with the synced ``layer``/``head`` selection (EntropyBars, HeadStatsGrid, HeadClusterMap).

Every source ends up as a dict of (L, H) float arrays keyed by the statistic names of
:data:`attnwidgets.analysis.STATISTICS`; the widget packs them as one (S, L, H) float32 buffer, so switching the
statistic in the page needs no round trip to the kernel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import traitlets

from ..analysis import STATISTIC_LABELS, CorpusStats, surface_stats
from ..result import AttentionResult
from ..viewdata.checks import check_head, check_layer
from ._base import MISSING, AttnWidget, Index, checked, pack, renamed_argument

__all__ = ["HeadStats", "HeadWidget", "head_stats"]

STAT_ORDER = ("cls", "sep", "punct", "self", "prev", "next", "first", "entropy", "entropy_cls", "entropy_last",
              "sep_sep", "rest_sep")
"""Statistics first in the widgets' menus, in this order; any others follow in the order the source gives them."""

HIDDEN = ("entropy_uniform",)
"""Statistics the menus leave out (the uniform entropy is the same for every head; EntropyBars draws it as a line)."""


@dataclass
class HeadStats:
    """Per-head statistics of one source.

    Attributes
    ----------
    values : dict[str, np.ndarray]
        Statistic name -> (L, H) float64 array (layers and heads 0-based).
    title : str
        What the statistics were measured on, for the widget's title.
    words : bool
        Whether they are word-level.
    causal : bool
        True for decoder self-attention (the first row sees one key; the last row is the interesting one).
    n_tokens : int
        Tokens (or words) of a single result; 0 for a corpus.
    """

    values: dict[str, np.ndarray]
    title: str
    words: bool = False
    causal: bool = False
    n_tokens: int = 0

    @property
    def shape(self) -> tuple[int, int]:
        first = next(iter(self.values.values()))
        return int(first.shape[0]), int(first.shape[1])

    def names(self) -> list[str]:
        """Statistic names in menu order (see :data:`STAT_ORDER`)."""
        ordered = [k for k in STAT_ORDER if k in self.values]
        return ordered + [k for k in self.values if k not in ordered and k not in HIDDEN]

    def stacked(self, names: Sequence[str]) -> np.ndarray:
        """(S, L, H) float32 array of ``names``, the layout the front end decodes."""
        if not names:
            return np.zeros((0, *self.shape), dtype=np.float32)
        return np.stack([np.asarray(self.values[k], dtype=np.float32) for k in names])


def _is_results(source: Any) -> bool:
    return (isinstance(source, Sequence) and not isinstance(source, str) and len(source) > 0
            and all(isinstance(r, AttentionResult) for r in source))


def takes_attention(source: Any) -> bool:
    """True when ``source`` holds attention maps, so a word-level switch can recompute from them."""
    return isinstance(source, AttentionResult) or _is_results(source)


def _snippet(text: str, n: int = 48) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _from_frame(frame: Any) -> dict[str, np.ndarray]:
    need = {"layer", "head", "statistic", "value"}
    missing = need - set(frame.columns)
    if missing:
        raise ValueError(f"a statistics DataFrame needs the tidy columns {sorted(need)} (as CorpusStats.frame() and "
                         f"stats_to_frame() give); it lacks {sorted(missing)}")
    n_layers = int(frame["layer"].max()) + 1
    n_heads = int(frame["head"].max()) + 1
    out: dict[str, np.ndarray] = {}
    for name, part in frame.groupby("statistic", sort=False):
        arr = np.full((n_layers, n_heads), np.nan)
        arr[part["layer"].to_numpy(int), part["head"].to_numpy(int)] = part["value"].to_numpy(float)
        out[str(name)] = arr
    return out


def _corpus_values(stats: CorpusStats) -> dict[str, np.ndarray]:
    values = dict(stats.mean())
    if stats.pattern_counts is not None:
        values.update({k: v for k, v in _from_frame(stats.frame()).items() if k.startswith("pattern_share_")})
    return values


def head_stats(source: Any, *, words: bool = False, smoothing: float = 0.0, who: str = "this widget") -> HeadStats:
    """Per-head statistics from any source the widgets take.

    Parameters
    ----------
    source : AttentionResult, list of AttentionResult, CorpusStats, DataFrame or dict
        One result (:func:`attnwidgets.run`), several (averaged as a corpus), a
        :class:`~attnwidgets.analysis.CorpusStats` (from :func:`~attnwidgets.analysis.corpus_stats`), its tidy
        ``.frame()`` (columns layer, head, statistic, value) or a dict of (L, H) arrays.
    words : bool
        Word-level statistics; only sources that hold attention can be converted.
    smoothing : float
        Entropy smoothing passed to :func:`~attnwidgets.analysis.surface_stats` (1e-4 is Clark et al.'s).
    who : str
        Name of the caller for error messages.

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.result import AttentionResult
    >>> r = AttentionResult.from_arrays(np.full((1, 2, 3, 3), 1 / 3, np.float32), ["[CLS]", "hi", "[SEP]"])
    >>> s = head_stats(r)
    >>> s.shape, round(float(s.values["sep"][0, 1]), 4)
    ((1, 2), 0.3333)
    """
    import pandas as pd

    if isinstance(source, AttentionResult):
        src = source
        values = surface_stats(src, words=words, smoothing=smoothing)
        n = len(src.tokens) if not words else int(_n_words(src))
        title = f"{src.model.name} · {_snippet(src.text)}" if src.text else src.model.name
        return HeadStats(values, title, words, src.model.kind == "decoder", n)
    if _is_results(source):
        acc = CorpusStats(words=words, smoothing=smoothing, patterns=False)
        acc.update(list(source))
        model = source[0].model
        return HeadStats(acc.mean(), f"{model.name} · mean of {acc.n_docs} inputs", words, model.kind == "decoder")
    if words:
        raise ValueError(f"{who} can switch to word level only when given attention (an AttentionResult or a list "
                         "of them); for corpus statistics pass words=True to corpus_stats() instead")
    if isinstance(source, CorpusStats):
        if not source.n_docs:
            raise ValueError("these CorpusStats hold no inputs yet: add results, or use corpus_stats(texts)")
        name = source.model.name if source.model is not None else "corpus"
        causal = source.model is not None and source.model.kind == "decoder"
        return HeadStats(_corpus_values(source), f"{name} · mean of {source.n_docs} inputs", source.words, causal)
    if isinstance(source, pd.DataFrame):
        return HeadStats(_from_frame(source), "statistics")
    if isinstance(source, Mapping) and source:
        values = {str(k): np.asarray(v, dtype=np.float64) for k, v in source.items()}
        shapes = {v.shape for v in values.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != 2:
            raise ValueError(f"a dict of statistics must hold (layers, heads) arrays of one shape, got {shapes}")
        return HeadStats(values, "statistics")
    raise TypeError(
        f"{who} takes an AttentionResult (from attnwidgets.run), a list of them, CorpusStats (from "
        f"attnwidgets.analysis.corpus_stats), a tidy statistics DataFrame or a dict of (layers, heads) arrays; "
        f"got {type(source).__name__}"
    )


def _n_words(result: AttentionResult) -> int:
    from ..analysis import word_groups

    units = word_groups(result.word_ids, result.special_mask)
    return int(units.max()) + 1 if units.size else 0


def stat_labels(names: Sequence[str]) -> dict[str, str]:
    """Menu and axis label of each statistic (its name when the analysis layer has no label for it)."""
    return {k: STATISTIC_LABELS.get(k, k.replace("_", " ")) for k in names}


class HeadWidget(AttnWidget):
    """Base of the widgets that show one number per head and select a head by click.

    The first argument, ``result``, is what they show: an AttentionResult, a list of them, CorpusStats, a tidy
    statistics DataFrame or a dict of (layers, heads) arrays (see :func:`head_stats`). ``source=`` is its old
    name, accepted with a DeprecationWarning for one release.

    They have no ``kind``: the statistics are of a result's self-attention (an encoder-decoder's encoder), as
    :func:`~attnwidgets.analysis.surface_stats` measures them.

    Subclasses call ``super().__init__`` and implement :meth:`_extra_meta` (extra ``_meta`` entries and
    ``_payload`` parts to send when the statistics change).
    """

    layer = Index(0).tag(sync=True)
    """int, default 0: the selected head's layer. Clicking a head in the page sets it; setting it here moves the
    highlight. Link it to other widgets with :func:`attnwidgets.link_selection`."""

    head = Index(0).tag(sync=True)
    """int, default 0: the selected head; -1 selects the whole layer (the heatmap's "mean of heads"). Two-way like
    ``layer``."""

    words = traitlets.Bool(False).tag(sync=True)
    """bool, default False: word-level statistics (to a word: sum over its pieces; from a word: mean over its
    pieces). Only for attention sources; the page shows the switch when it can be used and the widget recomputes
    in Python when it changes."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {stats}: the statistics as one packed (S, L, H) float32 buffer, in the order of ``_meta["names"]``;
    widgets add their own parts (HeadClusterMap: ``points``)."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, names and labels of the statistics, [layers, heads], whether the words switch applies, and
    widget-specific entries."""

    def __init__(self, result: Any = MISSING, *, smoothing: float = 0.0, **kwargs: Any) -> None:
        result = renamed_argument(type(self).__name__, "result", result, kwargs, "source")
        self._source = result
        self._smoothing = float(smoothing)
        self._can_words = takes_attention(result)
        words = kwargs.get("words", False)  # a bad value is refused by the trait, with its message
        self.stats = self._load_stats(result, isinstance(words, (bool, int, np.bool_)) and bool(words))
        super().__init__(**kwargs)
        self._publish()

    @property
    def result(self) -> Any:
        """What the widget shows, as given (read-only; make a new widget for another input)."""
        return self._source

    # -- selection -----------------------------------------------------------------------------------------------

    @property
    def selection_shape(self) -> tuple[int, int]:
        """(layers, heads) of the statistics, what :func:`attnwidgets.link_selection` checks linked widgets by."""
        return self.stats.shape

    @traitlets.validate("layer", "head")
    def _valid_selection(self, proposal: dict[str, Any]) -> int:
        value = int(proposal["value"])
        if hasattr(self, "stats"):
            n_layers, n_heads = self.stats.shape
            if proposal["trait"].name == "layer":
                checked(check_layer, value, n_layers)
            else:
                checked(check_head, value, n_heads)
        return value

    @traitlets.validate("words")
    def _valid_words(self, proposal: dict[str, Any]) -> bool:
        if proposal["value"] and hasattr(self, "_can_words") and not self._can_words:
            raise traitlets.TraitError(f"{type(self).__name__} can switch to word level only when given attention; "
                                       "for corpus statistics pass words=True to corpus_stats() instead")
        return bool(proposal["value"])

    @traitlets.observe("words")
    def _on_words(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "stats") or not self._meta:
            return
        try:
            self._recompute(bool(change["new"]))
        except Exception as exc:  # shown in the page's red box; the trait stays as the user set it
            self._error = f"{type(exc).__name__}: {exc}"
            return
        self._error = ""
        self._publish()

    # -- hooks for subclasses ------------------------------------------------------------------------------------

    def _load_stats(self, source: Any, words: bool) -> HeadStats:
        return head_stats(source, words=words, smoothing=self._smoothing, who=type(self).__name__)

    def _recompute(self, words: bool) -> None:
        """Recompute what the page shows for the words switch (subclasses add their own state)."""
        self.stats = self._load_stats(self._source, words)

    # -- what the page gets --------------------------------------------------------------------------------------

    def _names(self) -> list[str]:
        return self.stats.names()

    def _extra_meta(self) -> dict[str, Any]:
        """Extra ``_meta`` entries (subclasses)."""
        return {}

    def _extra_payload(self) -> dict[str, Any]:
        """Extra ``_payload`` parts (subclasses)."""
        return {}

    def _publish(self) -> None:
        names = self._names()
        n_layers, n_heads = self.stats.shape
        extra = self._extra_meta()
        with self.hold_sync():
            self._payload = {"stats": pack(self.stats.stacked(names)), **self._extra_payload()}
            self._meta = {
                "title": self.stats.title + (" · words" if self.stats.words else ""),
                "names": names,
                "labels": stat_labels(names),
                "shape": [n_layers, n_heads],
                "can_words": self._can_words,
                "causal": self.stats.causal,
                **extra,
            }

    def values(self, statistic: str) -> np.ndarray:
        """(L, H) values of one statistic as the widget shows them (float64).

        Examples
        --------
        >>> import numpy as np, attnwidgets as aw
        >>> r = aw.AttentionResult.from_arrays(np.full((1, 2, 3, 3), 1 / 3, np.float32), ["[CLS]", "hi", "[SEP]"])
        >>> aw.HeadStatsGrid(r).values("sep").round(4).tolist()
        [[0.3333, 0.3333]]
        """
        if statistic not in self.stats.values:
            raise ValueError(f"unknown statistic {statistic!r}; this widget has {self._names()}")
        return np.asarray(self.stats.values[statistic], dtype=np.float64)
