"""Static matplotlib/seaborn twins of the widgets, for slides, papers and PDFs. Each function returns a Figure."""

from .ablation import plot_head_grid, plot_pruning_curve, plot_sweep
from .ablation_panel import plot_ablation_panel
from .head_stats import plot_head_stats
from .heatmap import plot_heatmap
from .qk import plot_qk

__all__ = [
    "plot_ablation_panel", "plot_head_grid", "plot_head_stats", "plot_heatmap", "plot_pruning_curve", "plot_qk",
    "plot_sweep",
]
