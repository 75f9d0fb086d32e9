"""Corpus statistics from texts: many inputs through a model in padded batches, aggregated as they go.

The aggregation is :class:`attnwidgets.analysis.corpus.CorpusStats` (pure numpy); this module is the half that runs
the model. Each batch's weights are summed in the forward, on the model's device, as each layer makes them
(:func:`attnwidgets.runner.batches.iter_sums`): no layer's weights outlive the layer, and only (B, L, H) sums come
back to numpy (:meth:`CorpusStats.add_sums`). Word-level statistics and head distances need the maps themselves: for
those each padded batch comes from :func:`attnwidgets.runner.batches.iter_padded` (no per-input result is built), is
added to the running sums and dropped, so only one batch of maps is alive at a time.

Long texts: a padded batch is a dense (B, L, H, T, T) array, so texts whose share of it would break the dense budget
(``L · H · n² · 4 · batch_size > aw.runner.dense_budget()``) are run as results instead (:meth:`Runner.iter_results`,
which keeps a long input's attention as queries and keys) and measured a block of rows at a time
(:meth:`~attnwidgets.analysis.corpus.CorpusStats.add_results`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..analysis.batch import AttentionBatch
from ..analysis.corpus import CorpusStats, aggregate_stats, sum_sets
from ..attention_stack import dense_budget
from ..data import load_corpus
from ..result import AttentionResult
from ..runner import batches
from . import shards

__all__ = ["CorpusWork", "corpus_stats"]

Texts = Sequence[str] | Sequence[tuple[str, str]]


def _split(texts: Texts | None, pairs: Sequence[str | None] | None) -> tuple[list[str], list[str | None] | None]:
    """Segments A and (when there are pairs) B, from a list of texts or of (A, B) tuples; the bundled corpus if None."""
    if texts is None:
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
    texts: Texts | Iterable[AttentionResult] | None = None,
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
    backend: str = "local",
    ray_address: str | None = None,
    num_workers: int | None = None,
    num_gpus: float = 0,
    device: str | None = None,
    dtype: str | None = None,
    results_dir: str | os.PathLike[str] | None = None,
) -> CorpusStats:
    """Run texts (or sentence pairs) through a model and aggregate per-head statistics as they go.

    Returns a :class:`~attnwidgets.analysis.corpus.CorpusStats`, not a DataFrame: call ``.frame()`` on it for the
    tidy DataFrame. Given results already run instead of texts, it runs nothing and aggregates them
    (:func:`attnwidgets.analysis.corpus.aggregate_stats`).

    Parameters
    ----------
    texts : list of str, list of (A, B) tuples, or iterable of AttentionResult, optional
        The inputs; default the bundled corpus (:func:`attnwidgets.data.load_corpus`). Tuples are sentence pairs,
        e.g. :func:`attnwidgets.data.load_pairs`.
    pairs : list of str, optional
        Segment B of each text, as an alternative to tuples.
    model : Runner, str or None
        A runner, a model id or folder, or None for the bundled all-MiniLM-L6-v2.
    words : bool
        Word-level statistics.
    batch_size : int
        Inputs per forward pass; also the most maps alive at a time (one layer's, except with ``words`` or
        ``distances``, whose batches hold every layer's).
    progress : bool
        Show a ``tqdm.auto`` progress bar.
    smoothing, distances, patterns
        See :class:`~attnwidgets.analysis.corpus.CorpusStats`.
    truncation : {"warn", "error"}
        What the runner does with texts longer than the model accepts.
    backend, ray_address, num_workers, num_gpus, device, dtype, results_dir
        Where it runs: the texts are sorted by length and cut into shards of ``batch_size``, each shard's statistics
        are computed in this process (``backend="local"``) or by Ray workers that load the model once and are kept
        for the next call (``backend="ray"``, see :mod:`attnwidgets.studies.pool`; ``ray_address=`` for an existing
        cluster, ``num_gpus=`` per worker, ``device=`` and ``dtype=`` of each worker's model), and merged
        (:meth:`CorpusStats.merge`): the same numbers either way, to float rounding. ``results_dir=`` keeps finished
        shards so that a rerun resumes. See :mod:`attnwidgets.studies.shards`.

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
    inputs: Texts | None = texts if texts is None or isinstance(texts, str) else None  # a str: _split says why not
    if texts is not None and not isinstance(texts, str):
        items: Iterator[Any] = iter(texts)
        first = next(items, None)
        if isinstance(first, AttentionResult):
            if pairs is not None or model is not None:
                raise ValueError("results were already run: pass neither pairs nor model with them")
            return aggregate_stats(itertools.chain([first], items), words=words, smoothing=smoothing,
                                           distances=distances, patterns=patterns, batch_size=batch_size)
        inputs = [] if first is None else [first, *items]
    options = shards.Options(backend=backend, ray_address=ray_address, num_workers=num_workers, num_gpus=num_gpus,
                             device=device, dtype=dtype, results_dir=results_dir, progress=progress)
    firsts, seconds = _split(inputs, pairs)
    todo: list[tuple[str, str | None]] = list(zip(firsts, seconds if seconds is not None else [None] * len(firsts)))
    work = CorpusWork(words=words, smoothing=smoothing, distances=distances, patterns=patterns,
                      batch_size=batch_size, truncation=truncation)
    if not todo:
        with shards.Pool(model, options) as pool:
            return work(pool.runner(), [])
    plan = shards.plan(todo, per_shard=max(1, batch_size), lengths=[len(a) + len(b or "") for a, b in todo])
    settings = {"study": "corpus_stats", "words": words, "smoothing": smoothing, "distances": distances,
                "patterns": patterns, "batch_size": batch_size, "truncation": truncation}
    return shards.run(work, plan, model, options, kind=CorpusStats, settings=settings, desc="corpus statistics",
                      unit="text")


@dataclass
class CorpusWork:
    """One shard of :func:`corpus_stats`: the :class:`CorpusStats` of some (text, pair) items, a padded batch at a
    time (texts too long to pad one at a time, as results)."""

    words: bool = False
    smoothing: float = 0.0
    distances: bool = False
    patterns: bool = True
    batch_size: int = 32
    truncation: Literal["warn", "error"] = "warn"
    in_forward: bool = True
    """Sum the weights in the forward (:func:`~attnwidgets.runner.batches.iter_sums`); False: pad each batch's maps
    and measure them in numpy, as word-level statistics and head distances always do (the same numbers)."""

    def __call__(self, runner: Any, items: list[tuple[str, str | None]]) -> CorpusStats:
        firsts = [a for a, _ in items]
        seconds = None if all(b is None for _, b in items) else [b for _, b in items]
        return _run_texts(runner, firsts, seconds, words=self.words, batch_size=self.batch_size,
                          smoothing=self.smoothing, distances=self.distances, patterns=self.patterns,
                          truncation=self.truncation, in_forward=self.in_forward)


def _run_texts(runner: Any, firsts: list[str], seconds: list[str | None] | None, *, words: bool, batch_size: int,
               smoothing: float, distances: bool, patterns: bool, truncation: Literal["warn", "error"],
               in_forward: bool = True) -> CorpusStats:
    acc = CorpusStats(words=words, smoothing=smoothing, distances=distances, patterns=patterns)
    acc.model = runner.info
    causal = runner.info.kind == "decoder"
    summed = in_forward and not words and not distances
    long = _too_long_to_pad(runner, firsts, seconds, batch_size, layers=1 if summed else runner.info.n_layers)
    short = np.flatnonzero(~long)
    if short.size:
        texts_short = [firsts[i] for i in short] if long.any() else firsts
        pairs_short = None if seconds is None else [seconds[i] for i in short] if long.any() else seconds
        if summed:
            def sets_of(fields: dict[str, Any]) -> dict[str, np.ndarray]:
                return sum_sets(fields["tokens"], fields["special_mask"], fields["segment_ids"], causal=causal)

            for part in batches.iter_sums(runner, texts_short, pairs_short, sets_of=sets_of, smoothing=smoothing,
                                          batch_size=batch_size, truncation=truncation):
                acc.add_sums(part.sums, part.sets, causal=causal)
        else:
            _add_padded(acc, runner, texts_short, pairs_short, words=words, batch_size=batch_size, causal=causal,
                        truncation=truncation)
    if long.any():  # one at a time, as results (queries and keys above the dense budget)
        idx = np.flatnonzero(long)
        results = runner.iter_results([firsts[i] for i in idx],
                                      None if seconds is None else [seconds[i] for i in idx],
                                      batch_size=1, truncation=truncation, progress=False, cache=False)
        for result in results:
            acc.add_results([result])
            del result
    return acc


def _add_padded(acc: CorpusStats, runner: Any, texts: list[str], pairs: list[str | None] | None, *, words: bool,
                batch_size: int, causal: bool, truncation: Literal["warn", "error"]) -> None:
    """Each padded batch's maps, measured in numpy (word level and head distances need them)."""
    for padded in batches.iter_padded(runner, texts, pairs, batch_size=batch_size,
                                      truncation=truncation):
        batch = AttentionBatch.from_padded(padded.attention, padded.valid, padded.tokens,
                                           padded.special_mask, padded.segment_ids, causal=causal)
        if words:
            batch = batch.to_words(padded.word_ids)
        acc.add_batch(batch)
        del padded, batch  # only one batch of maps alive at a time


def _too_long_to_pad(runner: Any, firsts: list[str], seconds: list[str | None] | None, batch_size: int, *,
                     layers: int) -> np.ndarray:
    """(N,) bool: texts whose attention in ``layers`` layers (all of them for padded maps, one when the sums are made
    in the forward), times ``batch_size``, is more than the dense budget (counted in tokens after truncation to the
    model's length)."""
    info = runner.info
    per_token2 = layers * info.n_heads * 4 * max(batch_size, 1)
    tokenizer = getattr(runner, "tokenizer", None)
    limit = int(info.max_length)
    if tokenizer is None or per_token2 * limit * limit <= dense_budget():  # nothing can be too long
        return np.zeros(len(firsts), bool)
    n = np.zeros(len(firsts), np.int64)
    pairs = [None] * len(firsts) if seconds is None else seconds
    for paired in (False, True):  # one tokenizer call for the single texts, one for the pairs
        rows = [i for i, b in enumerate(pairs) if (b is not None) == paired]
        if rows:
            args = ([firsts[i] for i in rows],) + (([pairs[i] for i in rows],) if paired else ())
            ids = tokenizer(*args, truncation=True, max_length=limit)["input_ids"]
            n[rows] = [len(row) for row in ids]
    return per_token2 * n * n > dense_budget()
