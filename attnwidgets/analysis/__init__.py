"""What attention heads do, measured: pure numpy over :class:`~attnwidgets.result.AttentionResult` objects.

Importing this package imports neither torch, transformers, the runner nor any widget (a test checks
``sys.modules``), and nothing here ever runs a model: every function takes results or arrays. The experiments that
run a model over many texts and hand the results here (``aw.studies.corpus_stats(texts)``,
``aw.studies.dependency_scores(file)``) live in :mod:`attnwidgets.studies`.

Modules
-------
surface     shares of attention to [CLS], [SEP], punctuation, self, previous, next, first token; entropy
words       word-level attention (to a word: sum over pieces; from a word: mean over pieces)
conllu      reading CoNLL-U treebanks (sentences, gold heads and relations; ParseError for a bad file)
dependency  word alignment, scoring heads as dependency parsers (Clark et al. Table 1)
attention_probe  Clark et al.'s attention-based probing classifier (section 5): features, training, UAS, baselines
clustering  Jensen–Shannon distances between heads, MDS embedding
patterns    Kovaleva et al. pattern classes from measurable statistics
rollout     attention rollout and attention flow (Abnar & Zuidema)
corpus      running statistics over many results or padded batches, memory bounded, as tidy DataFrames

Importing this package imports none of them until a name is used (``from attnwidgets.analysis import surface_stats``
imports ``surface`` and what it needs, not the probe's or the coreference reader's modules).

>>> import attnwidgets.analysis as analysis
>>> analysis.surface_stats.__module__
'attnwidgets.analysis.surface'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..lazy import attach

if TYPE_CHECKING:  # what the names are, for type checkers and the API docs (at run time they load on first use)
    from .attention_probe import AttentionProbe, ProbeSentence, fit_attention_probe, probe_sentence
    from .batch import AttentionBatch
    from .clustering import HeadDistances, head_distances, head_embedding, js_divergence
    from .compare import align_tokens, compare_attention
    from .conllu import ParseError, Sentence, read_conllu
    from .coref import CorefScores, read_coref
    from .corpus import STATISTIC_LABELS, CorpusStats, aggregate_stats, corpus_stats
    from .dependency import DependencyScores, align_words, score_dependencies
    from .patterns import PATTERNS, classify_patterns, pattern_features, pattern_frame, patterns_from_features
    from .residual import ResidualContributions
    from .roles import HeadRoles, role_scores
    from .rollout import attention_flow, attention_rollout
    from .sinks import sink_frame, sink_shares
    from .surface import (
        STATISTICS,
        SurfaceStats,
        key_share,
        mean_entropy,
        offset_share,
        row_entropy,
        stats_to_frame,
        surface_stats,
        uniform_entropy,
    )
    from .tokens import KEY_KINDS, key_kind_index, token_kinds
    from .words import word_groups, word_level, word_matrices

# name -> module that defines it; resolved on first use.
_LAZY: dict[str, str] = {
    "AttentionProbe": "attnwidgets.analysis.attention_probe",
    "ProbeSentence": "attnwidgets.analysis.attention_probe",
    "fit_attention_probe": "attnwidgets.analysis.attention_probe",
    "probe_sentence": "attnwidgets.analysis.attention_probe",
    "AttentionBatch": "attnwidgets.analysis.batch",
    "HeadDistances": "attnwidgets.analysis.clustering",
    "head_distances": "attnwidgets.analysis.clustering",
    "head_embedding": "attnwidgets.analysis.clustering",
    "js_divergence": "attnwidgets.analysis.clustering",
    "align_tokens": "attnwidgets.analysis.compare",
    "compare_attention": "attnwidgets.analysis.compare",
    "ParseError": "attnwidgets.analysis.conllu",
    "Sentence": "attnwidgets.analysis.conllu",
    "read_conllu": "attnwidgets.analysis.conllu",
    "CorefScores": "attnwidgets.analysis.coref",
    "read_coref": "attnwidgets.analysis.coref",
    "STATISTIC_LABELS": "attnwidgets.analysis.corpus",
    "CorpusStats": "attnwidgets.analysis.corpus",
    "aggregate_stats": "attnwidgets.analysis.corpus",
    "corpus_stats": "attnwidgets.analysis.corpus",
    "DependencyScores": "attnwidgets.analysis.dependency",
    "align_words": "attnwidgets.analysis.dependency",
    "score_dependencies": "attnwidgets.analysis.dependency",
    "PATTERNS": "attnwidgets.analysis.patterns",
    "classify_patterns": "attnwidgets.analysis.patterns",
    "pattern_features": "attnwidgets.analysis.patterns",
    "pattern_frame": "attnwidgets.analysis.patterns",
    "patterns_from_features": "attnwidgets.analysis.patterns",
    "ResidualContributions": "attnwidgets.analysis.residual",
    "HeadRoles": "attnwidgets.analysis.roles",
    "role_scores": "attnwidgets.analysis.roles",
    "attention_flow": "attnwidgets.analysis.rollout",
    "attention_rollout": "attnwidgets.analysis.rollout",
    "sink_frame": "attnwidgets.analysis.sinks",
    "sink_shares": "attnwidgets.analysis.sinks",
    "STATISTICS": "attnwidgets.analysis.surface",
    "SurfaceStats": "attnwidgets.analysis.surface",
    "key_share": "attnwidgets.analysis.surface",
    "mean_entropy": "attnwidgets.analysis.surface",
    "offset_share": "attnwidgets.analysis.surface",
    "row_entropy": "attnwidgets.analysis.surface",
    "stats_to_frame": "attnwidgets.analysis.surface",
    "surface_stats": "attnwidgets.analysis.surface",
    "uniform_entropy": "attnwidgets.analysis.surface",
    "KEY_KINDS": "attnwidgets.analysis.tokens",
    "key_kind_index": "attnwidgets.analysis.tokens",
    "token_kinds": "attnwidgets.analysis.tokens",
    "word_groups": "attnwidgets.analysis.words",
    "word_level": "attnwidgets.analysis.words",
    "word_matrices": "attnwidgets.analysis.words",
}

__all__ = [
    "KEY_KINDS",
    "PATTERNS",
    "STATISTICS",
    "STATISTIC_LABELS",
    "AttentionBatch",
    "AttentionProbe",
    "CorefScores",
    "CorpusStats",
    "DependencyScores",
    "HeadDistances",
    "HeadRoles",
    "ParseError",
    "ProbeSentence",
    "ResidualContributions",
    "Sentence",
    "SurfaceStats",
    "aggregate_stats",
    "align_tokens",
    "align_words",
    "attention_flow",
    "attention_rollout",
    "classify_patterns",
    "compare_attention",
    "corpus_stats",
    "fit_attention_probe",
    "head_distances",
    "head_embedding",
    "js_divergence",
    "key_kind_index",
    "key_share",
    "mean_entropy",
    "offset_share",
    "pattern_features",
    "pattern_frame",
    "patterns_from_features",
    "probe_sentence",
    "read_conllu",
    "read_coref",
    "role_scores",
    "row_entropy",
    "score_dependencies",
    "sink_frame",
    "sink_shares",
    "stats_to_frame",
    "surface_stats",
    "token_kinds",
    "uniform_entropy",
    "word_groups",
    "word_level",
    "word_matrices",
]

_MODULES = ["attention_probe", "batch", "blocks", "clustering", "compare", "conllu", "coref", "coref_files",
            "corpus", "corpus_checks", "dependency", "intervals", "merging", "naming", "norms", "outputs", "patterns",
            "probe", "qk_space", "residual", "roles", "rollout", "sampling", "sinks", "surface", "tokens",
            "value_zeroing", "words"]

_name, __dir__ = attach("attnwidgets.analysis", _LAZY, _MODULES)


def __getattr__(name: str) -> Any:
    """A public name, or a submodule (``analysis.sampling``: the eager package had imported every module its names
    needed, so such attributes were there), imported on first use."""
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    return _name(name)
