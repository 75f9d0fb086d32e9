"""Attention heads as dependency parsers, from a treebank: run its sentences through a model and score every head.

The scoring is :func:`attnwidgets.analysis.dependency.score_dependencies` (pure numpy, Clark et al. 2019 Table 1);
this module is the half that runs the model, one batch at a time with the result cache off, so a large treebank's
maps are scored and dropped as they come.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from ..analysis.dependency import DependencyScores, Sentence, read_conllu, score_dependencies
from ..analysis.words import RowMode
from ..runner import get_runner

__all__ = ["dependency_scores"]


def dependency_scores(
    source: str | Path | Sequence[Sentence],
    model: Any = None,
    *,
    rows: RowMode = "mean",
    subtypes: bool = True,
    batch_size: int = 32,
    progress: bool = True,
    truncation: Literal["warn", "error"] = "warn",
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
        :func:`~attnwidgets.analysis.dependency.read_conllu`.
    batch_size : int
        Sentences per forward pass.
    progress : bool
        Show a ``tqdm.auto`` progress bar.

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
    sentences = list(source) if not isinstance(source, str | Path) else read_conllu(source, subtypes=subtypes)
    if not sentences:
        raise ValueError("the treebank has no sentences")
    runner = get_runner(model)
    results = runner.iter_results([s.text for s in sentences], batch_size=batch_size, truncation=truncation,
                                  cache=False, progress=False)  # score_dependencies' bar counts these
    return score_dependencies(results, sentences, rows=rows, progress=progress, subtypes=subtypes)
