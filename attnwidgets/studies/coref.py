"""Attention heads as coreference resolvers, from a coreference file: cut its documents into inputs, run them through
a model and score every head's antecedent selection against the baselines (Clark et al. 2019, section 4.3, Table 2).

The definitions (mention heads, antecedents, segments, baselines) are stated in :mod:`attnwidgets.analysis.coref`,
which does the scoring in numpy; this module is the half that runs the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from ..analysis.conllu import TextMode
from ..analysis.coref import (
    CorefDocument,
    CorefScores,
    NoSameHead,
    Order,
    check_coref_options,
    coref_segments,
    read_coref,
    score_coref,
)
from ..analysis.coref_files import document_words_text
from ..analysis.words import RowMode
from ..runner import get_runner

__all__ = ["coref_scores"]


def coref_scores(
    source: str | Path | Sequence[CorefDocument],
    model: Any = None,
    *,
    max_tokens: int = 128,
    window: Literal["segments", "truncate", "document"] = "segments",
    rows: RowMode = "mean",
    format: Literal["auto", "corefud", "conll2012"] = "auto",
    singletons: bool = False,
    order: Order = "inner_first",
    no_same_head: NoSameHead = "nearest",
    text: TextMode = "surface",
    batch_size: int = 32,
    progress: bool = True,
) -> CorefScores:
    """Run a coreference file through a model and score every head's antecedent selection.

    Parameters
    ----------
    source : path, file text, or list of CorefDocument
        A CorefUD CoNLL-U file (``Entity=`` in MISC) or a CoNLL-2012 file, e.g.
        :func:`attnwidgets.data.coref_sample_path`; or documents from :func:`attnwidgets.analysis.coref.read_coref`.
    model : Runner, str or None
        A runner, a model id or folder, or None for the bundled model.
    max_tokens : int
        Word pieces per input with the special tokens (128, Clark et al.'s). Each document is cut into segments of
        whole sentences that fit (the model's tokenizer counts the pieces); antecedents are looked for within a
        segment.
    window : {"segments", "truncate", "document"}
        Every segment (default), only each document's first, or each whole document as one input.
    rows : {"mean", "first"}
        A word's attention row: the mean of its pieces' rows (paper) or its first piece's.
    format : {"auto", "corefud", "conll2012"}
    singletons : bool
        Offer mentions of entities mentioned once as baseline candidates (default False: the paper's CoNLL-2012 data
        annotates no singletons).
    order : {"inner_first", "outer_first"}
        Mentions in (start, end) order (default: of two mentions starting at the same word, the inner one first) or
        in (start, -end) order (the outer one first). Antecedents and baseline candidates are the mentions before a
        mention in this order.
    no_same_head : {"nearest", "wrong"}
        The same-head-word baseline looks for the nearest earlier mention with the same head word; when there is
        none it falls back to the nearest earlier mention (default, "nearest"), or counts the mention wrong
        ("wrong"). The paper's "most recent mention with the same head word" allows either reading.
    text : {"surface", "words"}
        What the model reads of each sentence (:func:`~attnwidgets.analysis.coref_files.read_coref`'s ``text``): its
        ``# text`` line, multiword tokens whole (default), or its syntactic words joined by spaces.
    batch_size : int
        Segments per forward pass.
    progress : bool
        Show a ``tqdm.auto`` progress bar.

    Returns
    -------
    CorefScores
        ``.accuracy`` (layer, head); ``.table()`` every head; ``.best_heads()``; ``.baseline_accuracy()``;
        ``.summary()`` Clark et al.'s Table 2 (all / pronoun / proper / nominal).

    Examples
    --------
    >>> from attnwidgets.data import coref_sample_path
    >>> scores = coref_scores(coref_sample_path(), progress=False)    # 29 hand-annotated sentences, bundled model
    >>> scores.accuracy.shape, scores.n_mentions
    ((6, 12), 43)
    >>> {k: round(v, 2) for k, v in scores.baseline_accuracy().items()}   # same_head: nearest when no head matches
    {'nearest': 0.35, 'same_head': 0.7, 'rules': 0.77}
    >>> scores.best_heads(3)[["label", "accuracy"]].round(2).to_dict("list")    # 1-based "layer-head" labels
    {'label': ['3-5', '2-2', '3-10'], 'accuracy': [0.53, 0.49, 0.47]}
    """
    check_coref_options(order, no_same_head)  # before a model is loaded
    if text not in ("surface", "words"):
        raise ValueError(f"text must be 'surface' or 'words', got {text!r}")
    if isinstance(source, str | Path):
        documents = read_coref(source, format=format, text=text)
    else:
        documents = [document_words_text(d) for d in source] if text == "words" else list(source)
    if not documents:
        raise ValueError("no documents to score")
    runner = get_runner(model)
    tokenizer = runner.tokenizer
    special = int(tokenizer.num_special_tokens_to_add()) if hasattr(tokenizer, "num_special_tokens_to_add") else 2

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    segments = coref_segments(documents, count, max_tokens, special=special, window=window,
                              singletons=singletons)
    texts = [s.text for s in segments]
    results = runner.iter_results(texts, batch_size=batch_size, truncation="warn", cache=False, progress=progress)
    return score_coref(results, segments, rows=rows, max_tokens=max_tokens, order=order, no_same_head=no_same_head)
