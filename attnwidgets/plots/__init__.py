"""Static matplotlib twins of the widgets, for slides, papers and PDFs. Each function returns a Figure.

``paint_<view>(state, ax=None, ...)`` draws a view's own state (what its page draws); :func:`paint` finds the painter
of any view, or of any view's state, through the registry of views."""

from .ablation import plot_head_grid, plot_pruning_curve, plot_sweep
from .ablation_panel import paint_ablation, plot_ablation_panel, plot_ablation_rows
from .block import plot_attention_cost, plot_norm_comparison, plot_residual_contributions
from .clark import (
    paint_entropy_bars,
    paint_head_cluster_map,
    plot_entropy_by_layer,
    plot_head_clusters,
    plot_token_attention,
)
from .compare import paint_compare, plot_compare
from .coref import plot_coref
from .embeddings import plot_input_embeddings
from .extrapolation import plot_extrapolation
from .fill_mask import paint_fill_mask, plot_fill_mask
from .generation import paint_generation, plot_generation, plot_span_share
from .head_stats import paint_head_stats_grid, plot_head_stats, plot_sinks
from .head_view import paint_head_view, plot_head_view
from .heatmap import paint_heatmap, plot_heatmap
from .lens import plot_fill_mask_lens, plot_generation_lens
from .model_view import paint_model_view, plot_model_view
from .painting import paint
from .patching import plot_logit_attribution, plot_patching, plot_sampling
from .pretrain import LivePretrainCurve, plot_pretrain_curve
from .profile import paint_profile, plot_profile
from .qk import paint_qk, plot_qk
from .qk_space import paint_qk_space, plot_qk_space
from .roles import LiveInductionCurve, plot_head_roles, plot_induction_curve, plot_role_check
from .routers import paint_routers, plot_routers
from .style import fit_panels, panel_grid

__all__ = [
    "LiveInductionCurve",
    "LivePretrainCurve",
    "fit_panels",
    "paint",
    "paint_ablation",
    "paint_compare",
    "paint_entropy_bars",
    "paint_fill_mask",
    "paint_generation",
    "paint_head_cluster_map",
    "paint_head_stats_grid",
    "paint_head_view",
    "paint_heatmap",
    "paint_model_view",
    "paint_profile",
    "paint_qk",
    "paint_qk_space",
    "paint_routers",
    "panel_grid",
    "plot_ablation_panel",
    "plot_ablation_rows",
    "plot_attention_cost",
    "plot_compare",
    "plot_coref",
    "plot_entropy_by_layer",
    "plot_extrapolation",
    "plot_fill_mask",
    "plot_fill_mask_lens",
    "plot_generation",
    "plot_generation_lens",
    "plot_head_clusters",
    "plot_head_grid",
    "plot_head_roles",
    "plot_head_stats",
    "plot_head_view",
    "plot_heatmap",
    "plot_induction_curve",
    "plot_input_embeddings",
    "plot_logit_attribution",
    "plot_model_view",
    "plot_norm_comparison",
    "plot_patching",
    "plot_pretrain_curve",
    "plot_profile",
    "plot_pruning_curve",
    "plot_qk",
    "plot_qk_space",
    "plot_residual_contributions",
    "plot_role_check",
    "plot_routers",
    "plot_sampling",
    "plot_sinks",
    "plot_span_share",
    "plot_sweep",
    "plot_token_attention",
]
