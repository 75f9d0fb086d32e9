"""Statistics over a corpus: many texts through a model in batches, aggregated as they go.

Only one batch of attention maps is alive at a time: each batch's statistics are added to running sums and the maps
are dropped, so memory does not grow with the corpus. :func:`corpus_stats` hands back those running sums as a
:class:`CorpusStats`; its ``.frame()`` is the tidy pandas DataFrame with the columns ``layer, head, statistic, value``
(0-based layers and heads), the form the plots and widgets take, and its ``.mean()`` a dict of (L, H) arrays.

The runner (and with it torch) is imported only when :func:`corpus_stats` is called with texts, never on import.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..result import AttentionResult, check_attention
from .batch import AttentionBatch
from .clustering import HeadDistances
from .patterns import PATTERNS, pattern_features_batch, pattern_frame, patterns_from_features
from .surface import STATISTICS, stats_to_frame, surface_stats_batch

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CorpusStats", "corpus_stats"]


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
        """Add a few results as one padded batch (faster than one by one)."""
        if not results:
            return
        if self.model is None:
            self.model = results[0].model
        self.add_batch(AttentionBatch.from_results(results, words=self.words))

    def add_batch(self, batch: AttentionBatch) -> None:
        """Add a padded batch (already at word level if ``words`` is wanted)."""
        for part in batch.split():
            self._add(part)

    def _add(self, batch: AttentionBatch) -> None:
        # NaN would be skipped below as "not defined for this input" (like sep_sep without a [SEP]): refuse it here.
        # ablated=True: rows of ablated results may sum to less than 1.
        check_attention(batch.attention, "CorpusStats got attention", ablated=True,
                        query_mask=batch.valid[:, None, None])
        stats = surface_stats_batch(batch, self.smoothing)
        if self._patterns:
            features = pattern_features_batch(batch)
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
        if self._distances is not None:
            self._distances.add_batch(batch)
        self.n_docs += int(batch.attention.shape[0])
        self.n_tokens += int(batch.lengths.sum())

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


def _split(texts: Sequence[str] | Sequence[tuple[str, str]] | None,
           pairs: Sequence[str | None] | None) -> tuple[list[str], list[str | None] | None]:
    if texts is None:
        from ..data import load_corpus

        texts = load_corpus()
    if isinstance(texts, str):
        raise TypeError("corpus_stats takes a list of texts (or of (A, B) pairs), not one string")
    items = list(texts)
    if items and all(isinstance(t, tuple | list) for t in items):
        if pairs is not None:
            raise ValueError("give pairs either as (A, B) tuples in texts or as a separate pairs list, not both")
        return [str(t[0]) for t in items], [str(t[1]) for t in items]
    return [str(t) for t in items], (list(pairs) if pairs is not None else None)


def corpus_stats(
    texts: Sequence[str] | Sequence[tuple[str, str]] | None = None,
    pairs: Sequence[str | None] | None = None,
    *,
    model: Any = None,
    words: bool = False,
    batch_size: int = 32,
    progress: bool = True,
    smoothing: float = 0.0,
    distances: bool = False,
    patterns: bool = True,
    truncation: Literal["warn", "error"] = "warn",
) -> CorpusStats:
    """Run texts (or sentence pairs) through a model and aggregate per-head statistics as they go.

    Returns a :class:`CorpusStats`, not a DataFrame: call ``.frame()`` on it for the tidy DataFrame.

    Parameters
    ----------
    texts : list of str, or list of (A, B) tuples, optional
        The inputs; default the bundled corpus (:func:`attnwidgets.data.load_corpus`). Tuples are sentence pairs,
        e.g. :func:`attnwidgets.data.load_pairs`.
    pairs : list of str, optional
        Segment B of each text, as an alternative to tuples.
    model : Runner, str or None
        A runner, a model id or folder, or None for the bundled all-MiniLM-L6-v2.
    words : bool
        Word-level statistics.
    batch_size : int
        Inputs per forward pass; also the most maps alive at a time.
    progress : bool
        Show a ``tqdm.auto`` progress bar.
    smoothing, distances, patterns
        See :class:`CorpusStats`.
    truncation : {"warn", "error"}
        What the runner does with texts longer than the model accepts.

    Returns
    -------
    CorpusStats
        The running means. ``.frame()`` is the tidy DataFrame (layer, head, statistic, value); ``.mean()`` a dict of
        (L, H) arrays; ``.patterns()`` and ``.distances()`` what ``patterns`` and ``distances`` asked for.

    Examples
    --------
    >>> from attnwidgets.data import load_corpus
    >>> stats = corpus_stats(load_corpus()[:8], progress=False)     # 8 sentences of the bundled corpus, bundled model
    >>> stats                                                       # a CorpusStats, not yet a DataFrame
    CorpusStats('all-MiniLM-L6-v2 (bundled)', 8 inputs, 111 tokens, words=False)
    >>> df = stats.frame()                                          # the tidy DataFrame: layer, head, statistic
    >>> df.columns.tolist()
    ['layer', 'head', 'statistic', 'value']
    >>> df.query("statistic == 'sep'").shape                        # 6 layers x 12 heads
    (72, 4)
    >>> stats.mean()["sep"].shape                                   # the same means as (L, H) arrays
    (6, 12)
    """
    from ..runner import get_runner
    from ..runner.batches import iter_padded

    runner = get_runner(model)
    firsts, seconds = _split(texts, pairs)
    acc = CorpusStats(words=words, smoothing=smoothing, distances=distances, patterns=patterns)
    acc.model = runner.info
    causal = runner.info.kind == "decoder"
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(firsts), desc="corpus statistics", unit="text")
    try:
        for padded in iter_padded(runner, firsts, seconds, batch_size=batch_size, truncation=truncation):
            batch = AttentionBatch.from_padded(padded.attention, padded.valid, padded.tokens, padded.special_mask,
                                               padded.segment_ids, causal=causal)
            if words:
                batch = batch.to_words(padded.word_ids)
            acc.add_batch(batch)
            if bar is not None:
                bar.update(batch.attention.shape[0])
            del padded, batch  # only one batch of maps alive at a time
    finally:
        if bar is not None:
            bar.close()
    return acc


STATISTIC_LABELS: dict[str, str] = {
    **STATISTICS,
    "pattern_vertical": "mass on special tokens (Kovaleva vertical)",
    "pattern_diagonal": "mass on neighbouring tokens (Kovaleva diagonal)",
    "pattern_block": "within-segment share (Kovaleva block)",
    "pattern_content": "mass on non-special tokens",
    **{f"pattern_share_{p}": f"share of inputs with a {p} map" for p in PATTERNS},
}
"""Labels of every statistic a corpus frame holds, for axes and widget menus."""
