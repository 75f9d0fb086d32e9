"""Per-head statistics from any source the per-head views take: one result, several, corpus statistics, their tidy
frame or a dict of (layer, head) arrays. EntropyBars, HeadStatsGrid and HeadClusterMap show them, and
:func:`attnwidgets.plots.plot_head_stats` draws the same table.

Every source ends up as a dict of (L, H) float arrays keyed by the statistic names of
:data:`attnwidgets.analysis.STATISTICS`; a widget packs them as one (S, L, H) float32 buffer
(:meth:`HeadStats.stacked`), so switching the statistic in the page needs no round trip to the kernel.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.roles import ROLE_LABELS
from ..analysis.surface import surface_stats, uniform_entropy
from ..result import AttentionResult

if TYPE_CHECKING:
    from ..analysis.corpus import CorpusStats

__all__ = ["HIDDEN", "STAT_ORDER", "HeadStats", "embedding_frame", "entropy_baseline", "head_points", "head_stats",
           "sink_stats", "stat_labels", "takes_attention"]

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
    signed : tuple[str, ...]
        Statistics that take both signs (a head's share of a logit): drawn on a diverging scale centred on 0.
    """

    values: dict[str, np.ndarray]
    title: str
    words: bool = False
    causal: bool = False
    n_tokens: int = 0
    signed: tuple[str, ...] = ()

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
    """True when ``source`` holds attention maps, so a word-level switch can recompute from them.

    Examples
    --------
    >>> r = AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["a", "b"])
    >>> takes_attention(r), takes_attention([r, r]), takes_attention({"sep": np.zeros((1, 2))})
    (True, True, False)
    """
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


#: The statistics that are a share of each row's attention (a sum over keys), which ``combine="sum"`` adds up over
#: selected rows; the others (entropies) stay means.
SHARE_STATISTICS = ("cls", "sep", "punct", "first", "self", "prev", "next", "sep_sep", "rest_sep")


def head_stats(source: Any, *, words: bool = False, smoothing: float = 0.0, who: str = "this widget",
               rows: Any = None, combine: str = "mean") -> HeadStats:
    """Per-head statistics from any source the widgets take.

    Parameters
    ----------
    source : AttentionResult, list of AttentionResult, CorpusStats, DataFrame, dict or HeadStats
        One result (:func:`attnwidgets.run`), several (averaged as a corpus), a
        :class:`~attnwidgets.analysis.CorpusStats` (from :func:`~attnwidgets.studies.corpus_stats`), its tidy
        ``.frame()`` (columns layer, head, statistic, value) or a dict of (L, H) arrays.
    words : bool
        Word-level statistics; only sources that hold attention can be converted.
    smoothing : float
        Entropy smoothing passed to :func:`~attnwidgets.analysis.surface_stats` (1e-4 is Clark et al.'s).
    who : str
        Name of the caller for error messages.
    rows : list of int, optional
        Only these query rows (a selection, at the level measured), for one AttentionResult:
        :func:`~attnwidgets.analysis.surface_stats`'s ``rows``.
    combine : str
        With ``rows``: "mean" (default) over the selected rows, or "sum": the share statistics (attention to
        [CLS], [SEP], ..., previous, next; :data:`SHARE_STATISTICS`) added up over them, the total the selection
        gives; entropies stay means.

    Examples
    --------
    >>> import numpy as np
    >>> from attnwidgets.result import AttentionResult
    >>> r = AttentionResult.from_arrays(np.full((1, 2, 3, 3), 1 / 3, np.float32), ["[CLS]", "hi", "[SEP]"])
    >>> s = head_stats(r)
    >>> s.shape, round(float(s.values["sep"][0, 1]), 4)
    ((1, 2), 0.3333)
    """
    if isinstance(source, HeadStats):  # already a table (a widget's ``stats``): taken as it is
        if words and not source.words:
            raise ValueError(f"{who}: these statistics are not word-level; make them from attention with words=True")
        return source
    if rows is not None and not isinstance(source, AttentionResult):
        raise ValueError(f"{who}: statistics of selected query rows need one result's attention (an AttentionResult)"
                         f", not {type(source).__name__}")
    if isinstance(source, AttentionResult):
        src = source
        values: dict[str, np.ndarray] = surface_stats(src, words=words, smoothing=smoothing, rows=rows)
        n = len(src.tokens) if not words else int(_n_words(src))
        title = f"{src.model.name} · {_snippet(src.text)}" if src.text else src.model.name
        if rows is not None:
            if combine not in ("mean", "sum"):
                raise ValueError(f"unknown combine {combine!r}; choose 'mean' or 'sum'")
            if combine == "sum":
                values = {k: v * len(rows) if k in SHARE_STATISTICS else v for k, v in values.items()}
            title += f" · {combine} of {len(rows)} selected {'row' if len(rows) == 1 else 'rows'}"
        return HeadStats(values, title, words, src.model.kind == "decoder", n)
    if _is_results(source):
        from ..analysis.corpus import CorpusStats

        acc = CorpusStats(words=words, smoothing=smoothing, patterns=False)
        acc.update(list(source))
        model = source[0].model
        return HeadStats(acc.mean(), f"{model.name} · mean of {acc.n_docs} inputs", words, model.kind == "decoder")
    if words:
        raise ValueError(f"{who} can switch to word level only when given attention (an AttentionResult or a list "
                         "of them); for corpus statistics pass words=True to corpus_stats() instead")
    if _is_corpus_stats(source):
        if not source.n_docs:
            raise ValueError("these CorpusStats hold no inputs yet: add results, or use corpus_stats(texts)")
        name = source.model.name if source.model is not None else "corpus"
        causal = source.model is not None and source.model.kind == "decoder"
        return HeadStats(_corpus_values(source), f"{name} · mean of {source.n_docs} inputs", source.words, causal)
    if _is_frame(source):
        return HeadStats(_from_frame(source), "statistics")
    if isinstance(source, Mapping) and source:
        values = {str(k): np.asarray(v, dtype=np.float64) for k, v in source.items()}
        shapes = {v.shape for v in values.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != 2:
            raise ValueError(f"a dict of statistics must hold (layers, heads) arrays of one shape, got {shapes}")
        return HeadStats(values, "statistics")
    raise TypeError(
        f"{who} takes an AttentionResult (from attnwidgets.run), a list of them, CorpusStats (from "
        f"attnwidgets.studies.corpus_stats), a tidy statistics DataFrame or a dict of (layers, heads) arrays; "
        f"got {type(source).__name__}"
    )


def _is_corpus_stats(source: Any) -> bool:
    """Whether ``source`` is a :class:`~attnwidgets.analysis.CorpusStats`, without importing its module (and the
    pattern and clustering modules it needs) when nothing has: then it is not one."""
    corpus = sys.modules.get("attnwidgets.analysis.corpus")
    return corpus is not None and isinstance(source, corpus.CorpusStats)


def _is_frame(source: Any) -> bool:
    """Whether ``source`` is a pandas DataFrame, without importing pandas (0.5 s) when nothing has: then it is not."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(source, pd.DataFrame)


def _n_words(result: AttentionResult) -> int:
    from ..analysis import word_groups

    units = word_groups(result.word_ids, result.special_mask)
    return int(units.max()) + 1 if units.size else 0


def stat_labels(names: Sequence[str]) -> dict[str, str]:
    """Menu and axis label of each statistic (its name when the analysis layer has no label for it).

    Examples
    --------
    >>> stat_labels(["sep", "my_stat"])
    {'sep': 'attention to [SEP]', 'my_stat': 'my stat'}
    """
    from ..analysis.corpus import STATISTIC_LABELS

    return {k: {**STATISTIC_LABELS, **_MORE_LABELS}.get(k, k.replace("_", " ")) for k in names}


_MORE_LABELS = {"sink": "share of attention on the sink", "logit_share": "direct share of the logit", **ROLE_LABELS}


def sink_stats(result: AttentionResult, keys: Any = (0,), kind: str = "self") -> HeadStats:
    """The sink share of every head (:func:`~attnwidgets.analysis.sink_shares`) as a one-statistic table, named
    "sink", for HeadStatsGrid and plot_head_stats.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[1, 0, 0], [.8, .2, 0], [.5, .25, .25]], np.float32)
    >>> s = sink_stats(AttentionResult.from_arrays(a, ["<s>", "a", "b"], kind="decoder"))
    >>> s.names(), round(float(s.values["sink"][0, 0]), 3), s.title
    (['sink'], 0.65, 'arrays · share of attention on key 0 (<s>)')
    """
    from ..analysis.sinks import sink_shares

    shares = sink_shares(result, keys, kind)
    marked = sorted({int(k) for k in ([keys] if isinstance(keys, (int, np.integer)) else keys)})
    names = result.target_tokens if kind in ("decoder", "cross") and result.target_tokens else result.tokens
    named = ", ".join(f"{k} ({names[k]})" if kind != "cross" and k < len(names) else str(k) for k in marked[:4])
    more = ", …" if len(marked) > 4 else ""
    title = f"{result.model.name} · share of attention on key{'s' if len(marked) > 1 else ''} {named}{more}"
    causal = kind == "decoder" or (kind == "self" and result.model.kind == "decoder")
    return HeadStats({"sink": shares}, title, False, causal, result.n_tokens)


def embedding_frame(source: Any) -> Any:
    """``source`` when it is an embedding DataFrame (columns layer, head, x, y), else None."""
    import pandas as pd

    if isinstance(source, pd.DataFrame) and {"layer", "head", "x", "y"} <= set(source.columns):
        return source
    return None


def head_points(source: Any, *, words: bool = False, seed: int = 0, who: str = "this view") -> Any:
    """The heads in 2-D (metric MDS of Jensen–Shannon distances): a DataFrame layer, head, x, y sorted by head, from
    what HeadClusterMap and :func:`attnwidgets.plots.plot_head_clusters` take.

    Parameters
    ----------
    source : AttentionResult, list of AttentionResult, CorpusStats or DataFrame
        One result or several (distances averaged over them), CorpusStats made with ``distances=True``, or an
        embedding DataFrame (taken as it is).
    words : bool
        Word-level distances (attention sources only).
    seed : int
        MDS random state.
    who : str
        Name of the caller for error messages.

    Examples
    --------
    >>> r = AttentionResult.from_arrays(np.random.default_rng(0).dirichlet(np.ones(4), (1, 3, 4)), list("abcd"))
    >>> head_points(r).shape
    (3, 4)
    """
    from ..analysis.clustering import head_distances, head_embedding

    frame = embedding_frame(source)
    if frame is not None:
        if words:
            raise ValueError("an embedding DataFrame is fixed; pass attention (results) to switch to word level")
        return frame.sort_values(["layer", "head"]).reset_index(drop=True)
    if isinstance(source, AttentionResult):
        results: Sequence[AttentionResult] = [source]
    elif _is_results(source):
        results = list(source)
    elif _is_corpus_stats(source):
        if words:
            raise ValueError("CorpusStats are fixed at word or piece level; pass words=True to corpus_stats()")
        try:
            distances = source.distances()
        except ValueError:
            raise ValueError(f"{who} needs head distances: make the CorpusStats with "
                             "corpus_stats(texts, distances=True)") from None
        return head_embedding(distances, source.mean()["entropy"].shape[1], seed=seed)
    else:
        raise TypeError(f"{who} takes an AttentionResult, a list of them, CorpusStats made with "
                        "distances=True, or an embedding DataFrame (layer, head, x, y); "
                        f"got {type(source).__name__}")
    return head_embedding(head_distances(results, words=words), results[0].n_heads, seed=seed)


def entropy_baseline(stats: HeadStats, rows: str = "all") -> float | None:
    """Entropy of uniform attention (nats) for the rows EntropyBars and
    :func:`attnwidgets.plots.plot_entropy_by_layer` show ("all", "cls" or "last"), or None when the source does not
    give it.

    Examples
    --------
    >>> s = HeadStats({"entropy": np.ones((1, 2)), "entropy_uniform": np.full((1, 2), 1.5)}, "demo")
    >>> entropy_baseline(s), entropy_baseline(HeadStats(s.values, "demo", causal=True), "cls")
    (1.5, 0.0)
    """
    if stats.causal and rows == "cls":
        return 0.0
    if stats.causal and rows == "last":  # the last row sees all n keys
        return float(uniform_entropy(stats.n_tokens)) if stats.n_tokens else None
    uniform = stats.values.get("entropy_uniform")
    if uniform is None or not np.isfinite(uniform).any():
        return None
    return float(np.nanmean(uniform))
