"""The tests of tests/result/test_html_repr.py that import the studies layer (and so torch): study results show the
same compact table."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd

from attnwidgets.html_repr import repr_html
from attnwidgets.result import AttentionResult
from tests.result.test_html_repr import parsed


def test_dataclass_with_a_long_repr_shows_its_short_fields():
    from attnwidgets.studies.pruning import PruningCurve

    frame = pd.DataFrame({"share": np.linspace(0, 1, 40), "n_pruned": range(40), "metric": np.zeros(40),
                          "pruned": [[]] * 40})
    curve = PruningCurve(frame, "accuracy", [np.zeros((2, 3))])
    assert "\n" in repr(curve)  # the generated repr prints the frame
    head = parsed(curve._repr_html_()).text[1]
    assert head.strip() == "frame: shape (40, 4), metric='accuracy'"


def test_every_public_result_with_a_frame_shows_as_a_table():
    """A public class of the result, analysis or studies layers that has a frame (attribute or method) has the table."""
    import attnwidgets.analysis as analysis
    import attnwidgets.studies as studies

    classes = [AttentionResult]
    for module in (analysis, studies):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and ("frame" in dir(obj) or "frame" in getattr(obj, "__dataclass_fields__", {})):
                classes.append(obj)
    assert len(classes) >= 6
    missing = [c.__name__ for c in classes if getattr(c, "_repr_html_", None) is not repr_html]
    assert not missing, f"no _repr_html_ table: {missing}"
