"""attnwidgets: see, measure, ablate and probe what a transformer's attention heads do.

>>> import attnwidgets as aw
>>> result = aw.run("The cat sat on the mat because it was tired.")   # bundled all-MiniLM-L6-v2
>>> aw.AttentionHeatmap(result)                                        # doctest: +SKIP

The package is split the way data flows: ``runner`` (torch) -> ``AttentionResult`` (numpy) -> ``analysis`` (numpy)
-> ``widgets`` (anywidget) and ``plots`` (matplotlib); ``studies`` (sweeps, head importance, fine-tuning, gradients,
corpus runs) drive the runner many times and hand what comes back to analysis. Importing ``attnwidgets`` itself
imports neither torch nor the widgets; they load when first used.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__
from .lazy import attach
from .result import AttentionResult, ModelInfo

# name -> module that defines it; resolved on first use so `import attnwidgets` stays light.
_LAZY: dict[str, str] = {
    "run": "attnwidgets.runner",
    "run_batch": "attnwidgets.runner",
    "get_runner": "attnwidgets.runner",
    "Runner": "attnwidgets.runner",
    "ModelLoadError": "attnwidgets.runner",
    "AttentionUnavailableError": "attnwidgets.runner",
    "AttentionHeatmap": "attnwidgets.widgets",
    "AttentionProfile": "attnwidgets.widgets",
    "plot_profile": "attnwidgets.plots",
    "ModelView": "attnwidgets.widgets",
    "HeadView": "attnwidgets.widgets",
    "plot_model_view": "attnwidgets.plots",
    "plot_head_view": "attnwidgets.plots",
    "EntropyBars": "attnwidgets.widgets",
    "HeadStatsGrid": "attnwidgets.widgets",
    "HeadClusterMap": "attnwidgets.widgets",
    "link_selection": "attnwidgets.widgets",
    "plot_heatmap": "attnwidgets.plots",
    "panel_grid": "attnwidgets.plots.style",
    "fit_panels": "attnwidgets.plots.style",
    "plot_head_stats": "attnwidgets.plots",
    "plot_sinks": "attnwidgets.plots",
    "sink_shares": "attnwidgets.analysis",
    "Ablation": "attnwidgets.runner.ablation",
    "mean_pattern": "attnwidgets.runner.ablation",
    "watch_ablation": "attnwidgets.studies.watch",
    "AblationWidget": "attnwidgets.widgets",
    "plot_ablation_panel": "attnwidgets.plots",
    "sweep_heads": "attnwidgets.studies.sweeps",
    "pruning_curve": "attnwidgets.studies.sweeps",
    "head_importance": "attnwidgets.studies.importance",
    "compare_finetuning": "attnwidgets.studies.finetune",
    "plot_sweep": "attnwidgets.plots",
    "plot_pruning_curve": "attnwidgets.plots",
    "set_theme": "attnwidgets.widgets",
    "set_static_fallback": "attnwidgets.fallback",
    "QKCapture": "attnwidgets.qk_result",
    "capture_qk": "attnwidgets.runner.qk",
    "capture_qk_layers": "attnwidgets.runner.qk",
    "QKStepThrough": "attnwidgets.widgets",
    "plot_qk": "attnwidgets.plots",
    "save_html": "attnwidgets.export",
    "PositionalExplorer": "attnwidgets.widgets",
    "MaskExplorer": "attnwidgets.widgets",
    "position_embeddings": "attnwidgets.runner.positions",
    "padding_check": "attnwidgets.studies.padding",
    "corpus_stats": "attnwidgets.studies.corpus",
    "surface_stats": "attnwidgets.analysis",
    "word_level": "attnwidgets.analysis",
    "dependency_scores": "attnwidgets.studies.dependency",
    "attention_probe": "attnwidgets.studies.attention_probe",
    "attention_flow": "attnwidgets.analysis",
    "attention_rollout": "attnwidgets.analysis",
    "attention_gradients": "attnwidgets.studies.gradients",
    "plot_token_attention": "attnwidgets.plots",
    "plot_entropy_by_layer": "attnwidgets.plots",
    "plot_head_clusters": "attnwidgets.plots",
    "set_dense_budget": "attnwidgets.attention_stack",
    "dense_budget": "attnwidgets.attention_stack",
    "AttentionTooLargeError": "attnwidgets.attention_stack",
    "generate": "attnwidgets.runner.generation",
    "GenerationResult": "attnwidgets.generation_result",
    "GenerationView": "attnwidgets.widgets",
    "plot_generation": "attnwidgets.plots",
    "save": "attnwidgets.studies.saved",
    "load": "attnwidgets.studies.saved",
    "AttentionCompare": "attnwidgets.widgets",
    "plot_compare": "attnwidgets.plots",
    "compare_attention": "attnwidgets.analysis.compare",
    "align_tokens": "attnwidgets.analysis.compare",
    "coref_scores": "attnwidgets.studies.coref",
    "read_coref": "attnwidgets.analysis.coref",
    "ParseError": "attnwidgets.analysis",
    "CorefScores": "attnwidgets.analysis.coref",
    "plot_coref": "attnwidgets.plots",
    "head_roles": "attnwidgets.studies.roles",
    "confirm_role": "attnwidgets.studies.roles",
    "induction_loss": "attnwidgets.studies.roles",
    "HeadRoles": "attnwidgets.analysis.roles",
    "role_scores": "attnwidgets.analysis.roles",
    "plot_head_roles": "attnwidgets.plots.roles",
    "plot_role_check": "attnwidgets.plots.roles",
    "plot_induction_curve": "attnwidgets.plots.roles",
    "LiveInductionCurve": "attnwidgets.plots.roles",
    "HeadRolesView": "attnwidgets.widgets.roles",
    "link_span": "attnwidgets.widgets",
    "norm_attention": "attnwidgets.studies.norms",
    "value_norms": "attnwidgets.studies.norms",
    "mixing_ratio": "attnwidgets.studies.norms",
    "norm_result": "attnwidgets.studies.norms",
    "norm_results": "attnwidgets.studies.norms",
    "merge": "attnwidgets.studies.shards",
    "residual_contributions": "attnwidgets.studies.residual",
    "ResidualContributions": "attnwidgets.analysis.residual",
    "plot_norm_comparison": "attnwidgets.plots",
    "plot_residual_contributions": "attnwidgets.plots",
    "plot_attention_cost": "attnwidgets.plots",
    "fill_mask": "attnwidgets.studies.masked_lm",
    "FillMask": "attnwidgets.widgets",
    "plot_fill_mask": "attnwidgets.plots",
    "fill_mask_accuracy": "attnwidgets.studies.masked_lm",
    "frequency_baseline": "attnwidgets.studies.masked_lm",
    "plot_pretrain_curve": "attnwidgets.plots.pretrain",
    "LivePretrainCurve": "attnwidgets.plots.pretrain",
}

__all__ = ["AttentionResult", "ModelInfo", "__version__", *_LAZY]


__getattr__, __dir__ = attach("attnwidgets", _LAZY, ["AttentionResult", "ModelInfo", "__version__"])


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext attnwidgets``: the ``%attention``, ``%%attention`` and ``%attention_model`` magics."""
    from .magics import load_ipython_extension as load

    load(ipython)
