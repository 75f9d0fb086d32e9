"""Static matplotlib/seaborn twins of the widgets, for slides, papers and PDFs. Each function returns a Figure."""

from .heatmap import plot_heatmap

__all__ = ["plot_heatmap"]
