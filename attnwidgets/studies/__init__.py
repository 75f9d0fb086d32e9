"""Studies: experiments that run a model many times and analyse what comes back.

They sit above the runner (torch mechanics: load, encode, forward, hooks, ablation edits) and analysis (pure numpy
over results): a study drives the runner over many inputs or many ablations and hands the results, or the pooled
embeddings, to analysis. Nothing below imports this package.

Modules
-------
tasks       a Task: texts, a metric over their results, a differentiable loss (shipped sentiment and STS tasks)
sweeps      ablate each head in turn and score a task (Michel et al., Kovaleva et al.)
pruning     pruning curves: the task with more and more heads pruned, by importance or at random (Michel et al.)
shipped     the sweep and pruning curves of the bundled model that notebook 04 shows, shipped: loaded, or run here
importance  Michel et al. head importance from gradients of gates on every head
finetune    fine-tune a copy of a model on a classifier task and compare its attention with the original
gradients   mean |∂L/∂A| per head by key kind (Clark et al.)
watch       what an ablation does to a model's outputs (masked-token predictions, classes, similarities)
corpus      corpus statistics from texts, one padded batch alive at a time
dependency  heads as dependency parsers, from a CoNLL-U treebank
probing     attention_probe: Clark et al.'s attention-based probing classifier (a parser reading every head),
            trained on a treebank
padding     the padding mask, live: a padded batch with the mask and with it forgotten
saved       aw.save / aw.load: any analysis to a tagged file and back (the format is attnwidgets.persist)
norms       norm-based attention (Kobayashi et al. 2020) and the mixing ratio (2021) of a run
zeroing     value zeroing (Mohebbi et al. 2023): how each token's layer output moves when a token's values are zeroed
shards      the one route of every study over many inputs: plan shards, run them here or on Ray, merge
pool        Ray workers that load a model once and are kept for the session (shutdown_pool, worker_pool)
results_folder  a sharded study's results_dir: finished shards kept, checked and read back on a rerun
residual    how much each sublayer (attention, feed-forward) writes into the residual stream, per layer
qk_corpus   a head's queries and keys across a corpus, embedded together (AttentionViz)
coref       coref_scores: does a mention attend to its antecedent (Clark et al. section 4.3), from a CorefUD file
roles       head_roles (previous-token, duplicate-token, induction scores of a decoder) and confirm_role
masked_lm   the bundled model's masked-LM head: fill_mask, its held-out accuracy, a frequency baseline
logits      logit_attribution (each head's direct push on a token's logit) and logit_lens
patching    patch_heads: activation patching per head between a clean and a corrupted input

Importing this package imports none of them (and so neither torch) until a name is used.

>>> import attnwidgets.studies as studies
>>> studies.sweep_heads.__module__
'attnwidgets.studies.sweeps'
"""

from __future__ import annotations

from ..lazy import attach

# name -> module that defines it; resolved on first use.
_LAZY: dict[str, str] = {
    "Task": "attnwidgets.studies.tasks",
    "sentiment_task": "attnwidgets.studies.tasks",
    "sts_task": "attnwidgets.studies.tasks",
    "sts_sample": "attnwidgets.studies.tasks",
    "pooled_embedding": "attnwidgets.studies.tasks",
    "padding_check": "attnwidgets.studies.padding",
    "evaluate": "attnwidgets.studies.sweeps",
    "pooled_embeddings": "attnwidgets.studies.sweeps",
    "sweep_heads": "attnwidgets.studies.sweeps",
    "pruning_curve": "attnwidgets.studies.pruning",
    "random_pruning_curve": "attnwidgets.studies.pruning",
    "shipped_study": "attnwidgets.studies.shipped",
    "SweepResult": "attnwidgets.studies.sweeps",
    "PruningCurve": "attnwidgets.studies.pruning",
    "head_importance": "attnwidgets.studies.importance",
    "normalize_importance": "attnwidgets.studies.importance",
    "compare_finetuning": "attnwidgets.studies.finetune",
    "finetune_classifier": "attnwidgets.studies.finetune",
    "FinetuneComparison": "attnwidgets.studies.finetune",
    "attention_gradients": "attnwidgets.studies.gradients",
    "embedding_similarity": "attnwidgets.studies.gradients",
    "GradientStats": "attnwidgets.studies.gradients",
    "watch_ablation": "attnwidgets.studies.watch",
    "WatchResult": "attnwidgets.studies.watch",
    "corpus_stats": "attnwidgets.studies.corpus",
    "dependency_scores": "attnwidgets.studies.dependency",
    "attention_probe": "attnwidgets.studies.probing",
    "ProbeResult": "attnwidgets.studies.probing",
    "save": "attnwidgets.studies.saved",
    "load": "attnwidgets.studies.saved",
    "norm_attention": "attnwidgets.studies.norms",
    "value_norms": "attnwidgets.studies.norms",
    "mixing_ratio": "attnwidgets.studies.norms",
    "norm_result": "attnwidgets.studies.norms",
    "norm_results": "attnwidgets.studies.norms",
    "value_zeroing": "attnwidgets.studies.zeroing",
    "value_zeroing_result": "attnwidgets.studies.zeroing",
    "ImportanceSums": "attnwidgets.studies.importance",
    "merge": "attnwidgets.studies.shards",
    "shutdown_pool": "attnwidgets.studies.pool",
    "worker_pool": "attnwidgets.studies.shards",
    "residual_contributions": "attnwidgets.studies.residual",
    "qk_space": "attnwidgets.studies.qk_corpus",
    "coref_scores": "attnwidgets.studies.coref",
    "head_roles": "attnwidgets.studies.roles",
    "confirm_role": "attnwidgets.studies.roles",
    "induction_loss": "attnwidgets.studies.roles",
    "fill_mask": "attnwidgets.studies.masked_lm",
    "fill_mask_accuracy": "attnwidgets.studies.masked_lm",
    "fill_mask_lens": "attnwidgets.studies.masked_lm",
    "frequency_baseline": "attnwidgets.studies.masked_lm",
    "patch_heads": "attnwidgets.studies.patching",
    "PatchingResult": "attnwidgets.studies.patching",
    "logit_attribution": "attnwidgets.studies.logits",
    "logit_lens": "attnwidgets.studies.logits",
    "LogitAttribution": "attnwidgets.studies.logits",
    "LogitLens": "attnwidgets.studies.logits",
}

__all__ = [*_LAZY]

_MODULES = ["coref", "corpus", "dependency", "finetune", "gradients", "importance", "logits", "masked_lm", "measures",
            "local_pool", "norms", "padding", "patching", "pool", "probing", "pruning", "qk_corpus", "residual",
            "results_folder", "roles", "saved", "shards", "shipped", "sweeps", "tasks", "watch", "zeroing"]


__getattr__, __dir__ = attach("attnwidgets.studies", _LAZY, _MODULES)
