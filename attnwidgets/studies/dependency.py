"""Attention heads as dependency parsers, from a treebank: run its sentences through a model and score every head.

The scoring is :func:`attnwidgets.analysis.dependency.score_dependencies` (pure numpy, Clark et al. 2019 Table 1);
this module is the half that runs the model, one batch at a time with the result cache off, so a large treebank's
maps are scored and dropped as they come.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..analysis.conllu import Sentence, TextMode, read_conllu, words_text
from ..analysis.dependency import DependencyScores, score_dependencies
from ..analysis.words import RowMode
from . import shards

__all__ = ["DependencyWork", "dependency_scores"]


def dependency_scores(
    source: str | Path | Sequence[Sentence],
    model: Any = None,
    *,
    rows: RowMode = "mean",
    subtypes: bool = True,
    text: TextMode = "surface",
    batch_size: int = 32,
    progress: bool = True,
    truncation: Literal["warn", "error"] = "warn",
    backend: str = "local",
    ray_address: str | None = None,
    num_workers: int | None = None,
    num_gpus: float = 0,
    device: str | None = None,
    dtype: str | None = None,
    results_dir: str | os.PathLike[str] | None = None,
) -> DependencyScores:
    """Run a CoNLL-U treebank through a model and score its heads as dependency parsers.

    Parameters
    ----------
    source : path, CoNLL-U text, or list of Sentence
        E.g. :func:`attnwidgets.data.ud_sample_path`, or a UD treebank file.
    model : Runner, str or None
        A runner, a model id or folder, or None for the bundled model.
    rows, subtypes
        See :func:`~attnwidgets.analysis.dependency.score_dependencies` and
        :func:`~attnwidgets.analysis.conllu.read_conllu`.
    text : {"surface", "words"}
        What the model reads of each sentence. "surface" (default): its ``# text`` line, so a multiword token is read
        whole as written ("didn't") and its syntactic words ("did", "n't") share its pieces. "words": the syntactic
        words joined by spaces ("did n't"), each word with pieces of its own. The choice moves the scores of the
        relations multiword tokens carry (``aux`` in English); given sentences are re-read the same way.
    batch_size : int
        Sentences per forward pass.
    progress : bool
        Show a ``tqdm.auto`` progress bar (it counts finished sentences).
    backend, ray_address, num_workers, num_gpus, device, dtype, results_dir
        Where it runs: sentences sorted by length, cut into shards of ``batch_size``, scored in this process
        (``backend="local"``) or by Ray workers (``backend="ray"``) and merged (:meth:`DependencyScores.merge`);
        ``results_dir=`` keeps finished shards so that a rerun resumes. See :mod:`attnwidgets.studies.shards`.

    Returns
    -------
    DependencyScores
        ``.accuracy`` (direction, layer, head, relation); ``.table()`` Clark et al.'s Table 1; ``.frame()`` tidy.

    Examples
    --------
    >>> from attnwidgets.data import ud_sample_path
    >>> scores = dependency_scores(ud_sample_path(), progress=False)   # 45 hand-annotated sentences, bundled model
    >>> scores.accuracy.shape                                          # (direction, layer, head, relation)
    (2, 6, 12, 27)
    >>> table = scores.table()                                         # best head per relation, most frequent first
    >>> table.columns.tolist()                                         # doctest: +NORMALIZE_WHITESPACE
    ['relation', 'count', 'layer', 'head', 'label', 'direction', 'accuracy', 'tied', 'baseline_offset',
     'baseline_accuracy']
    >>> table[["relation", "count"]].head(3).to_dict("list")
    {'relation': ['det', 'punct', 'nsubj'], 'count': [67, 49, 47]}
    >>> all_relations = table.iloc[-1]                                 # the last row pools every relation
    >>> all_relations["relation"], bool(all_relations["accuracy"] > all_relations["baseline_accuracy"])
    ('all', True)
    """
    if text not in ("surface", "words"):
        raise ValueError(f"text must be 'surface' or 'words', got {text!r}")
    sentences = list(source) if not isinstance(source, str | Path) else read_conllu(source, subtypes=subtypes)
    if text == "words":
        sentences = [words_text(s) for s in sentences]
    if not sentences:
        raise ValueError("the treebank has no sentences")
    options = shards.Options(backend=backend, ray_address=ray_address, num_workers=num_workers, num_gpus=num_gpus,
                             device=device, dtype=dtype, results_dir=results_dir, progress=progress)
    plan = shards.plan(sentences, per_shard=max(1, batch_size), lengths=[len(s.words) for s in sentences])
    settings = {"study": "dependency_scores", "rows": rows, "subtypes": subtypes, "batch_size": batch_size,
                "truncation": truncation}
    if text != "surface":  # recorded only when not the default, so folders written before the option still resume
        settings["text"] = text
    work = DependencyWork(rows=rows, subtypes=subtypes, batch_size=batch_size, truncation=truncation)
    return shards.run(work, plan, model, options, kind=DependencyScores, settings=settings, desc="dependency scores",
                      unit="sentence")


@dataclass
class DependencyWork:
    """One shard of :func:`dependency_scores`: the :class:`DependencyScores` of some sentences."""

    rows: RowMode = "mean"
    subtypes: bool = True
    batch_size: int = 32
    truncation: Literal["warn", "error"] = "warn"

    def __call__(self, runner: Any, sentences: list[Sentence]) -> DependencyScores:
        results = runner.iter_results([s.text for s in sentences], batch_size=self.batch_size,
                                      truncation=self.truncation, cache=False, progress=False)
        return score_dependencies(results, sentences, rows=self.rows, progress=False, subtypes=self.subtypes)
