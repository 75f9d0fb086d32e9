"""How a head is named where a paper's numbering meets ours: Clark et al. (2019) write heads 1-based as
"layer-head" ("8-10"); every view, trait and array here counts layers and heads from 0. Where both appear, a head is
named both ways, so "8-10" in a table is findable as layer 7, head 9 in a widget.

>>> paper_label(7, 9), both_names(7, 9)
('8-10', '8-10 (layer 7, head 9 counted from 0)')
"""

from __future__ import annotations

__all__ = ["both_names", "paper_label"]


def paper_label(layer: int, head: int) -> str:
    """The paper's 1-based "layer-head" label of the 0-based ``layer``, ``head``."""
    return f"{int(layer) + 1}-{int(head) + 1}"


def both_names(layer: int, head: int) -> str:
    """The paper's label followed by the 0-based layer and head the widgets show."""
    return f"{paper_label(layer, head)} (layer {int(layer)}, head {int(head)} counted from 0)"
