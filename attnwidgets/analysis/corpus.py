"""Statistics over a corpus, aggregated as results or padded batches come in.

Only one batch of attention maps is alive at a time: each batch's statistics are added to running sums and the maps
are dropped, so memory does not grow with the corpus. :class:`CorpusStats` holds those running sums; its ``.frame()``
is the tidy pandas DataFrame with the columns ``layer, head, statistic, value`` (0-based layers and heads), the form
the plots and widgets take, and its ``.mean()`` a dict of (L, H) arrays.

This module never runs a model: :func:`aggregate_stats` takes results. Running texts through a model in padded batches
is :func:`attnwidgets.studies.corpus.corpus_stats` (``aw.studies.corpus_stats``), which feeds a :class:`CorpusStats`.

At any length: a long input's result (``result.is_lazy``) is not padded into a batch; it is measured on its own, a
block of rows at a time, surface statistics and pattern features in one pass over its attention
(:mod:`~attnwidgets.analysis.blocks`), and added to the same running sums.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..html_repr import repr_html
from ..result import AttentionResult, check_attention
from .batch import AttentionBatch
from .blocks import BlockAccumulator, run_blocks
from .clustering import HeadDistances
from .corpus_checks import check_sums, numbers_of
from .merging import check_same_model, check_same_settings
from .patterns import PATTERNS, PatternBlocks, pattern_features_batch, pattern_frame, patterns_from_features
from .surface import (
    STATISTICS,
    SurfaceBlocks,
    stats_to_frame,
    surface_from_summary,
    surface_stats_batch,
    uniform_entropy,
)
from .tokens import token_kinds

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CorpusStats", "aggregate_stats", "corpus_stats", "sum_sets"]


class CorpusStats:
    """Running means of per-head statistics over a corpus (and optionally head distances and pattern counts).

    Parameters
    ----------
    words : bool
        Measure word-level attention (:func:`~attnwidgets.analysis.words.word_level`) instead of pieces.
    smoothing : float
        Entropy smoothing (1e-4 reproduces Clark et al.'s code).
    distances : bool
        Also accumulate Jensen–Shannon distances between heads (costs about K² row comparisons per input).
    patterns : bool
        Also count Kovaleva pattern classes per head and average their features.

    Attributes
    ----------
    n_docs : int
        Inputs added so far.
    n_tokens : int
        Tokens (or words) added so far.
    model : ModelInfo | None
        The model of the first result added.

    Examples
    --------
    >>> from attnwidgets.result import AttentionResult
    >>> a = np.array([[0.5, 0.5], [0.0, 1.0]])
    >>> acc = CorpusStats(); acc.add(AttentionResult.from_arrays(a, ["[CLS]", "[SEP]"]))
    >>> float(acc.mean()["sep"][0, 0])
    0.75
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    def __init__(self, *, words: bool = False, smoothing: float = 0.0, distances: bool = False,
                 patterns: bool = True) -> None:
        self.words = words
        self.smoothing = smoothing
        self.n_docs = 0
        self.n_tokens = 0
        self.model: Any = None
        self._sums: dict[str, np.ndarray] = {}
        self._counts: dict[str, np.ndarray] = {}
        self._distances = HeadDistances() if distances else None
        self._patterns = patterns
        self.pattern_counts: np.ndarray | None = None  # (L, H, 5), classes in the order of PATTERNS

    # -- adding --------------------------------------------------------------------------------------------------

    def add(self, result: AttentionResult) -> None:
        """Add one result."""
        self.add_results([result])

    def add_results(self, results: Sequence[AttentionResult]) -> None:
        """Add a few results as one padded batch (faster than one by one); long inputs (lazy results) one at a time,
        a block of rows at a time."""
        if not results:
            return
        if self.model is None:
            self.model = results[0].model
        dense = [r for r in results if not r.is_lazy]
        if dense:
            self.add_batch(AttentionBatch.from_results(dense, words=self.words))
        for result in results:
            if result.is_lazy:
                self._add_blocks(result)

    def add_batch(self, batch: AttentionBatch) -> None:
        """Add a padded batch (already at word level if ``words`` is wanted)."""
        for part in batch.split():
            self._add(part)

    def add_sums(self, sums: Mapping[str, np.ndarray], sets: Sequence[Mapping[str, np.ndarray]], *,
                 causal: bool) -> None:
        """Add a batch from the sums the runner made in the forward (:mod:`attnwidgets.runner.corpus_sums`): the
        same statistics as :meth:`add_batch` of its padded weights, without them.

        ``sums`` are each (B, L, H), summed over each input's rows (the names of
        :data:`~attnwidgets.runner.corpus_sums.SUMS`); ``sets[i]`` is what :func:`sum_sets` gave input i. Not for
        word-level statistics or head distances (they need the maps).
        """
        if self.words or self._distances is not None:
            raise ValueError("word-level statistics and head distances need the attention maps: add_batch them")
        if not sets:
            return
        lengths = np.array([len(s["words"]) for s in sets], np.int64)
        n_sep = np.array([int(np.sum(s["sep"])) for s in sets], np.float64)[:, None, None]
        n_words = np.array([int(np.sum(s["words"])) for s in sets], np.float64)[:, None, None]
        is_pair = np.array([bool(np.any(np.asarray(s["segment"]) == 1)) for s in sets])[:, None, None]
        got = {k: np.asarray(v, np.float64) for k, v in sums.items()}
        n = np.maximum(lengths, 1).astype(np.float64)[:, None, None]
        nan = np.float64(np.nan)
        stats = {k: got[k] / n for k in ("cls", "sep", "punct", "first")}
        with np.errstate(invalid="ignore", divide="ignore"):
            stats["sep_sep"] = np.where(n_sep > 0, got["sep_from_sep"] / np.maximum(n_sep, 1), nan)
            rest = n - n_sep
            stats["rest_sep"] = np.where(rest > 0, (got["sep"] - got["sep_from_sep"]) / np.maximum(rest, 1), nan)
        for k in ("self", "prev", "next", "entropy"):
            stats[k] = got[k] / n
        stats["entropy_cls"] = got["entropy_first"]
        stats["entropy_last"] = got["entropy_last"]
        shape = got["entropy"].shape
        stats["entropy_uniform"] = np.broadcast_to(uniform_entropy(lengths, causal=causal)[:, None, None],
                                                   shape).astype(np.float64)
        features = None
        if self._patterns:
            features = {"vertical": got["sink"] / n,
                        "diagonal": (got["prev_words"] + got["next_words"]) / n,
                        "block": np.where(is_pair, got["own_segment"] / np.maximum(n_words, 1), nan),
                        "content": got["words"] / n}
        self._accumulate(stats, features, len(sets), int(lengths.sum()))

    def _add(self, batch: AttentionBatch) -> None:
        # NaN would be skipped below as "not defined for this input" (like sep_sep without a [SEP]): refuse it here.
        # ablated=True: rows of ablated results may sum to less than 1.
        check_attention(batch.attention, "CorpusStats got attention", ablated=True,
                        query_mask=batch.valid[:, None, None])
        stats = surface_stats_batch(batch, self.smoothing)
        features = pattern_features_batch(batch) if self._patterns else None
        self._accumulate(stats, features, int(batch.attention.shape[0]), int(batch.lengths.sum()))
        if self._distances is not None:
            self._distances.add_batch(batch)

    def _add_blocks(self, result: AttentionResult) -> None:
        """One long input, measured a block of rows at a time (one pass for statistics, patterns and the check)."""
        if self.words:
            from .words import word_level

            result = word_level(result)
        kept = self._from_summary(result)
        if kept is not None:  # the sums the runner made with the weights: no row is rebuilt
            stats, features = kept
            self._accumulate(stats, features, 1, result.n_tokens)
            if self._distances is not None:
                self._distances.add(result)
            return
        surface = SurfaceBlocks(result, self.smoothing)
        patterns = PatternBlocks(result) if self._patterns else None
        accs: list[BlockAccumulator] = [_Check(), surface]
        if patterns is not None:
            accs.append(patterns)
        run_blocks(result, accs)
        stats = {k: v[None] for k, v in surface.finish().items()}
        features = None if patterns is None else {k: v[None] for k, v in patterns.finish().items()}
        self._accumulate(stats, features, 1, result.n_tokens)
        if self._distances is not None:
            self._distances.add(result)

    def _from_summary(self, result: AttentionResult) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None
                                                             ] | None:
        """(stats, features), each value (1, L, H), from a long input's kept sums; None when they cannot answer or
        hold a non-finite number (then the block pass checks every row and says where)."""
        surface = surface_from_summary(result, self.smoothing)
        if surface is None:
            return None
        summary = result.stack("self").summary  # type: ignore[union-attr]
        if not (np.isfinite(summary["colsum"]).all() and np.isfinite(summary["entropy"]).all()):
            return None
        features = None
        if self._patterns:
            features = PatternBlocks.from_summary(result)
            if features is None:
                return None
            features = {k: v[None] for k, v in features.items()}
        return {k: v[None] for k, v in surface.items()}, features

    def _accumulate(self, stats: dict[str, np.ndarray], features: dict[str, np.ndarray] | None, n_docs: int,
                    n_tokens: int) -> None:
        """Add per-input statistics (each (B, L, H)) and pattern features to the running sums."""
        if features is not None:
            stats.update({f"pattern_{k}": v for k, v in features.items()})
            classes = patterns_from_features(features)  # (B, L, H)
            counts = np.stack([(classes == p).sum(0) for p in PATTERNS], axis=-1)
            self.pattern_counts = counts if self.pattern_counts is None else self.pattern_counts + counts
        for name, values in stats.items():
            finite = np.isfinite(values)
            total = np.where(finite, values, 0.0).sum(0)
            count = finite.sum(0)
            if name in self._sums:
                self._sums[name] += total
                self._counts[name] += count
            else:
                self._sums[name] = total.astype(np.float64)
                self._counts[name] = count.astype(np.int64)
        self.n_docs += n_docs
        self.n_tokens += n_tokens

    def update(self, results: Iterable[AttentionResult], batch_size: int = 32) -> CorpusStats:
        """Add results from any iterable, ``batch_size`` at a time, keeping no more than one batch alive."""
        chunk: list[AttentionResult] = []
        for result in results:
            chunk.append(result)
            if len(chunk) >= batch_size:
                self.add_results(chunk)
                chunk = []
        self.add_results(chunk)
        return self

    # -- merging -------------------------------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        """What the statistics were measured with; parts that differ in any of these do not merge."""
        return {"words": self.words, "smoothing": self.smoothing, "distances": self._distances is not None,
                "patterns": self._patterns,
                "distance_smoothing": None if self._distances is None else self._distances.smoothing,
                "distance_reduce": None if self._distances is None else self._distances.reduce}

    def merge(self, *others: CorpusStats) -> CorpusStats:
        """The statistics over this corpus and the others' together, as a new :class:`CorpusStats`.

        Every part is running sums and counts (of each statistic, of pattern classes, of head distances), so merging
        adds them: associative and independent of the order up to float rounding. Statistics of a corpus split into
        shards, merged, equal those of the whole corpus (this is how ``aw.studies.corpus_stats`` runs, in one process or
        on a Ray cluster). Neither part is changed.

        Raises
        ------
        ValueError
            When the parts come from different models, or were measured with different ``words``, ``smoothing``,
            ``distances`` or ``patterns``.

        Examples
        --------
        >>> from attnwidgets.result import AttentionResult
        >>> a = AttentionResult.from_arrays(np.array([[0.5, 0.5], [0.0, 1.0]]), ["[CLS]", "[SEP]"])
        >>> b = AttentionResult.from_arrays(np.array([[1.0, 0.0], [0.0, 1.0]]), ["[CLS]", "[SEP]"])
        >>> left, right, whole = CorpusStats(), CorpusStats(), CorpusStats()
        >>> left.add(a); right.add(b); whole.add_results([a, b])
        >>> merged = left.merge(right)
        >>> merged.n_docs, float(merged.mean()["sep"][0, 0]) == float(whole.mean()["sep"][0, 0])
        (2, True)
        """
        parts = [self, *others]
        for part in parts:
            if not isinstance(part, CorpusStats):
                raise TypeError(f"CorpusStats.merge takes CorpusStats, got {type(part).__name__}")
        check_same_settings("CorpusStats", [p.settings() for p in parts])
        model = check_same_model("CorpusStats", [p.model for p in parts])
        out = CorpusStats(words=self.words, smoothing=self.smoothing, distances=self._distances is not None,
                          patterns=self._patterns)
        if out._distances is not None and self._distances is not None:
            out._distances.smoothing = self._distances.smoothing
            out._distances.reduce = self._distances.reduce
        out.model = model
        for part in parts:
            out.n_docs += part.n_docs
            out.n_tokens += part.n_tokens
            for name, total in part._sums.items():
                if name in out._sums:
                    out._sums[name] = out._sums[name] + total
                    out._counts[name] = out._counts[name] + part._counts[name]
                else:
                    out._sums[name] = total.astype(np.float64, copy=True)
                    out._counts[name] = part._counts[name].astype(np.int64, copy=True)
            if part.pattern_counts is not None:
                out.pattern_counts = part.pattern_counts.copy() if out.pattern_counts is None else \
                    out.pattern_counts + part.pattern_counts
            theirs = part._distances
            if out._distances is not None and theirs is not None and theirs.total is not None:
                mine = out._distances
                if mine.total is None:
                    mine.total, mine.shape = theirs.total.copy(), theirs.shape
                elif mine.shape != theirs.shape:
                    raise ValueError(f"cannot merge head distances of {theirs.shape} and {mine.shape} heads")
                else:
                    mine.total = mine.total + theirs.total
                mine.n_docs += theirs.n_docs
        return out

    def to_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """(arrays, metadata): everything this holds, as numpy arrays and JSON-able values, for a file.

        :meth:`from_state` builds it back; ``merge`` of the rebuilt parts equals ``merge`` of the originals.
        """
        arrays: dict[str, np.ndarray] = {}
        for name in self._sums:
            arrays[f"sum/{name}"] = self._sums[name]
            arrays[f"count/{name}"] = self._counts[name]
        if self.pattern_counts is not None:
            arrays["pattern_counts"] = self.pattern_counts
        meta: dict[str, Any] = {"settings": self.settings(), "n_docs": self.n_docs, "n_tokens": self.n_tokens,
                                "model": None if self.model is None else dataclasses.asdict(self.model)}
        if self._distances is not None and self._distances.total is not None:
            arrays["distances_total"] = self._distances.total
            meta["distances_n_docs"] = self._distances.n_docs
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> CorpusStats:
        """The :class:`CorpusStats` that :meth:`to_state` described; ValueError when it fails :meth:`check` (a shard
        file changed on disk)."""
        from ..persist import info_from_tags

        st = meta["settings"]
        out = cls(words=st["words"], smoothing=st["smoothing"], distances=st["distances"], patterns=st["patterns"])
        out.model = None if meta["model"] is None else info_from_tags(meta["model"])
        if out._distances is not None:
            out._distances.smoothing = st["distance_smoothing"]
            out._distances.reduce = st["distance_reduce"]
            if "distances_total" in arrays:
                total = np.asarray(arrays["distances_total"], np.float64)
                out._distances.total = total.copy()
                n_heads = int(meta["model"]["n_heads"])
                out._distances.shape = (total.shape[0] // n_heads, n_heads)
                out._distances.n_docs = int(meta["distances_n_docs"])
        out.n_docs, out.n_tokens = meta["n_docs"], meta["n_tokens"]  # check() refuses what is not a count
        for key, value in arrays.items():
            if key.startswith("sum/"):
                out._sums[key[4:]] = numbers_of(value, f"sum of {key[4:]!r}", "f")
            elif key.startswith("count/"):
                out._counts[key[6:]] = numbers_of(value, f"count of {key[6:]!r}", "iu")
        if "pattern_counts" in arrays:
            out.pattern_counts = numbers_of(arrays["pattern_counts"], "pattern counts", "iu")
        out.check()
        return out

    def check(self) -> None:
        """Raise ValueError unless the running sums are ones that adding results can make: counts of 0 or more, none
        past the number of inputs; finite sums of shares between 0 and their count, of entropies between 0 and
        ln(tokens) + 1 per input; one (layers, heads) shape everywhere (the model's, when known); pattern classes
        counted once per input and head; head distances finite and not negative. Loading a file or a resumed shard
        calls it: a file changed by hand is refused rather than shown."""
        check_sums(self._sums, self._counts, self.n_docs, self.n_tokens, model=self.model,
                   pattern_counts=self.pattern_counts,
                   distances=None if self._distances is None or self._distances.total is None else (
                       self._distances.total, self._distances.n_docs, self._distances.shape))

    # -- reading -------------------------------------------------------------------------------------------------

    def mean(self) -> dict[str, np.ndarray]:
        """Mean over inputs of every statistic, each (L, H); NaN where no input defined it (e.g. no [SEP])."""
        if not self.n_docs:
            raise ValueError("no inputs were added")
        with np.errstate(invalid="ignore", divide="ignore"):
            return {k: np.where(self._counts[k] > 0, self._sums[k] / np.maximum(self._counts[k], 1), np.nan)
                    for k in self._sums}

    def frame(self) -> pd.DataFrame:
        """Tidy DataFrame with columns ``layer, head, statistic, value``: the means, plus pattern shares.

        Pattern shares are the statistics ``pattern_share_<class>``: the share of inputs on which the head's map
        fell in that class.
        """
        stats = self.mean()
        if self.pattern_counts is not None:
            share = self.pattern_counts / np.maximum(self.pattern_counts.sum(-1, keepdims=True), 1)
            for i, p in enumerate(PATTERNS):
                stats[f"pattern_share_{p}"] = share[..., i]
        return stats_to_frame(stats)

    def patterns(self) -> pd.DataFrame:
        """Tidy DataFrame (layer, head, pattern, share) of the pattern classes over the corpus."""
        if self.pattern_counts is None:
            raise ValueError("patterns were not counted: pass patterns=True")
        return pattern_frame(self.pattern_counts)

    def majority_pattern(self) -> np.ndarray:
        """(L, H) most frequent pattern class of each head."""
        if self.pattern_counts is None:
            raise ValueError("patterns were not counted: pass patterns=True")
        return np.asarray(PATTERNS, dtype=object)[self.pattern_counts.argmax(-1)]

    def distances(self) -> np.ndarray:
        """(K, K) mean Jensen–Shannon distances between heads (layer-major); needs ``distances=True``."""
        if self._distances is None:
            raise ValueError("head distances were not accumulated: pass distances=True")
        return self._distances.distances()

    def __repr__(self) -> str:
        name = self.model.name if self.model is not None else "no model yet"
        return f"CorpusStats({name!r}, {self.n_docs} inputs, {self.n_tokens} tokens, words={self.words})"

    # -- saving --------------------------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the running sums (and head distances, pattern counts) to ``path``, an ``.npz`` archive tagged with the
        model and the settings (:mod:`attnwidgets.persist`); :meth:`load` reads it back, and more inputs can then be
        added to it. Returns the path.

        Examples
        --------
        >>> import tempfile
        >>> from attnwidgets.result import AttentionResult
        >>> r = AttentionResult.from_arrays(np.array([[0.5, 0.5], [0.0, 1.0]]), ["[CLS]", "[SEP]"])
        >>> stats = aggregate_stats([r] * 3)
        >>> path = stats.save(tempfile.mkdtemp() + "/stats.npz")
        >>> back = CorpusStats.load(path, model=r.model)
        >>> back.n_docs, back.frame().equals(stats.frame())
        (3, True)
        """
        from ..persist import write

        arrays = {f"sum.{k}": v for k, v in self._sums.items()} | {f"count.{k}": v for k, v in self._counts.items()}
        if self.pattern_counts is not None:
            arrays["pattern_counts"] = self.pattern_counts
        distances = self._distances
        if distances is not None and distances.total is not None:
            arrays["distances.total"] = distances.total
        settings = {"words": self.words, "smoothing": float(self.smoothing), "distances": distances is not None,
                    "patterns": self._patterns}
        attrs = {"n_docs": self.n_docs, "n_tokens": self.n_tokens, "statistics": list(self._sums)}
        if distances is not None:
            attrs["head_distances"] = {"smoothing": distances.smoothing, "reduce": distances.reduce,
                                       "n_docs": distances.n_docs,
                                       "shape": None if distances.shape is None else list(distances.shape)}
        return write(path, "CorpusStats", arrays, model=self.model, settings=settings, attrs=attrs)

    @classmethod
    def load(cls, path: str | os.PathLike[str], model: Any = None) -> CorpusStats:
        """Load what :meth:`save` wrote. ``model`` (a runner, a ModelInfo, a model id or folder; None: no check) must
        be the model the statistics came from, else :class:`~attnwidgets.persist.ModelMismatchError` names both.
        A file whose sums fail :meth:`check` is a :class:`~attnwidgets.persist.SavedFileError`."""
        from ..persist import MAX_ELEMENTS, Saved, info_from_tags, load_checked

        def build(saved: Saved) -> CorpusStats:
            s, attrs = saved.settings, saved.attrs
            stats = cls(words=s["words"], smoothing=s["smoothing"], distances=s["distances"], patterns=s["patterns"])
            stats.n_docs, stats.n_tokens = attrs["n_docs"], attrs["n_tokens"]
            stats.model = info_from_tags(saved.model)
            info = stats.model
            shape = (None, None) if info is None else (info.n_layers, info.n_heads)
            names = attrs["statistics"]
            if not isinstance(names, list) or not all(isinstance(k, str) for k in names):
                raise ValueError("its list of statistics is not a list of names")
            stats._sums = {k: saved.array(f"sum.{k}", shape, "f") for k in names}
            stats._counts = {k: saved.array(f"count.{k}", shape, "iu") for k in names}
            if saved.has("pattern_counts"):
                stats.pattern_counts = saved.array("pattern_counts", (*shape, len(PATTERNS)), "iu")
            if stats._distances is not None:
                hd = attrs["head_distances"]
                stats._distances = HeadDistances(hd["smoothing"], hd["reduce"])
                stats._distances.n_docs = int(hd["n_docs"])
                stats._distances.shape = None if hd["shape"] is None else (int(hd["shape"][0]), int(hd["shape"][1]))
                if saved.has("distances.total"):
                    k = None if stats._distances.shape is None else int(np.prod(stats._distances.shape))
                    limit = MAX_ELEMENTS if k is None else k * k
                    stats._distances.total = saved.array("distances.total", (k, k), "f", limit=limit)
            stats.check()
            return stats

        return load_checked(path, "CorpusStats", build, model=model)


def sum_sets(tokens: Sequence[str], special_mask: np.ndarray, segment_ids: np.ndarray, *, causal: bool
             ) -> dict[str, np.ndarray]:
    """The key sets :meth:`CorpusStats.add_sums` reads, for one input of n tokens: ``cls``, ``sep``, ``punct``,
    ``first`` (:func:`~attnwidgets.analysis.tokens.token_kinds`), ``sink`` (special tokens, and the first token of a
    decoder: Kovaleva's vertical keys), ``words`` (the rest), each (n,) bool, and ``segment`` (n,) int.

    Examples
    --------
    >>> s = sum_sets(["[CLS]", "hi", ".", "[SEP]"], np.array([1, 0, 0, 1], bool), np.zeros(4, int), causal=False)
    >>> s["sink"].astype(int).tolist(), s["punct"].astype(int).tolist()
    ([1, 0, 0, 1], [0, 0, 1, 0])
    """
    kinds = token_kinds(tokens, special_mask)
    sink = kinds["special"] | (kinds["first"] if causal else np.zeros_like(kinds["first"]))
    return {"cls": kinds["cls"], "sep": kinds["sep"], "punct": kinds["punct"], "first": kinds["first"],
            "sink": sink, "words": ~sink, "segment": np.asarray(segment_ids, np.int64)}


def aggregate_stats(
    results: Iterable[AttentionResult],
    *,
    words: bool = False,
    smoothing: float = 0.0,
    distances: bool = False,
    patterns: bool = True,
    batch_size: int = 32,
) -> CorpusStats:
    """Aggregate per-head statistics over results already run, ``batch_size`` at a time.

    This is the results-only half: it never runs a model. To run texts (or sentence pairs) through a model and
    aggregate as the batches come, use :func:`attnwidgets.studies.corpus_stats`, which also takes results and hands them
    here.

    Parameters
    ----------
    results : iterable of AttentionResult
        A generator is fine: no more than ``batch_size`` results are held at a time.
    words, smoothing, distances, patterns
        See :class:`CorpusStats`.
    batch_size : int
        Results padded into one batch.

    Returns
    -------
    CorpusStats
        ``.frame()`` is the tidy DataFrame (layer, head, statistic, value); ``.mean()`` a dict of (L, H) arrays.

    Examples
    --------
    >>> from attnwidgets.result import AttentionResult
    >>> a = np.array([[0.5, 0.5], [0.0, 1.0]])
    >>> stats = aggregate_stats([AttentionResult.from_arrays(a, ["[CLS]", "[SEP]"])] * 3)
    >>> stats.n_docs, float(stats.mean()["sep"][0, 0])
    (3, 0.75)
    """
    if isinstance(results, str):
        raise TypeError("analysis.aggregate_stats takes AttentionResult objects; to run texts through a model use "
                        "attnwidgets.studies.corpus_stats(texts)")
    items = iter(results)
    first = next(items, None)
    if first is not None and not isinstance(first, AttentionResult):
        raise TypeError(f"analysis.aggregate_stats takes AttentionResult objects, got {type(first).__name__}; to run "
                        "texts through a model use attnwidgets.studies.corpus_stats(texts)")
    acc = CorpusStats(words=words, smoothing=smoothing, distances=distances, patterns=patterns)
    return acc.update(itertools.chain([first], items) if first is not None else (), batch_size=batch_size)


class _Check:
    """:func:`~attnwidgets.result.check_attention` of each block (what :meth:`CorpusStats._add` does to a batch)."""

    def add(self, layer: int, start: int, stop: int, block: np.ndarray) -> None:
        check_attention(block[None], f"CorpusStats got attention (layer {layer}, rows {start}..{stop - 1}, "
                                     "positions below counted from them)", ablated=True)

    def finish(self) -> None:
        return None


STATISTIC_LABELS: dict[str, str] = {
    **STATISTICS,
    "pattern_vertical": "mass on special tokens (Kovaleva vertical)",
    "pattern_diagonal": "mass on neighbouring tokens (Kovaleva diagonal)",
    "pattern_block": "within-segment share (Kovaleva block)",
    "pattern_content": "mass on non-special tokens",
    **{f"pattern_share_{p}": f"share of inputs with a {p} map" for p in PATTERNS},
}
"""Labels of every statistic a corpus frame holds, for axes and widget menus."""


def corpus_stats(results: Iterable[AttentionResult], **options: Any) -> CorpusStats:
    """Renamed :func:`aggregate_stats` (results in, statistics out): ``aw.studies.corpus_stats`` is the one that runs
    texts through a model, and two public functions of one name did different things. This name warns and calls
    :func:`aggregate_stats`; it goes in a later release."""
    warnings.warn("attnwidgets.analysis.corpus_stats is now attnwidgets.analysis.aggregate_stats (results in); "
                  "attnwidgets.studies.corpus_stats runs texts through a model", FutureWarning, stacklevel=2)
    return aggregate_stats(results, **options)
