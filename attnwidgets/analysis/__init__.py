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
"""

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
