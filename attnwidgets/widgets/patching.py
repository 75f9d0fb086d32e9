"""PatchingView: head patching (:func:`attnwidgets.studies.patch_heads`) as a layers x heads grid on a diverging
scale, beside the clicked head's attention on the clean and the corrupted input (front end: the compare view's,
js/src/views/compare/; static twin: :func:`attnwidgets.plots.plot_compare` with the same grid, and
:func:`attnwidgets.plots.plot_patching` for the grid alone).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .compare import AttentionCompare

__all__ = ["PatchingView"]


class PatchingView(AttentionCompare):
    """Which heads carry what separates two inputs: each cell is the change in the metric when that head is patched
    (blue/purple below 0, red/orange above, white at 0), and a click opens that head's attention on both inputs, A
    the clean one and B the corrupted one, side by side or as B − A.

    The grid's menu also offers the two inputs' attention summaries (Jensen–Shannon divergence, cosine), so a head
    that looks different and a head that matters can be told apart.

    Parameters
    ----------
    patching : PatchingResult
        What :func:`attnwidgets.studies.patch_heads` returned (over positions: the largest change at any position).
    normalised : bool
        Colour by (patched − corrupted) / (clean − corrupted) instead of the raw change.
    **kwargs
        As :class:`AttentionCompare` (``layer``, ``head``, ``show``, ``theme`` ...). Without ``layer`` and ``head``
        the head whose patch changed the metric most is opened.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> from attnwidgets.studies import patch_heads
    >>> view = aw.widgets.PatchingView(patch_heads("The cat sat on the mat.", "The dog sat on the mat."))
    >>> view.summary, view.summary_values().shape, (view.layer, view.head) == view.patching.top(1)[0][:2]
    ('patching', (6, 12), True)
    """

    def __init__(self, patching: Any, *, normalised: bool = False, **kwargs: Any) -> None:
        runner = getattr(patching, "runner", None)
        if runner is None or not getattr(patching, "clean_text", ""):
            raise ValueError("PatchingView needs a result of attnwidgets.studies.patch_heads made in this session "
                             "(it runs both inputs again on the same model)")
        self._patching = patching
        self._normalised = bool(normalised)
        a, b = runner.run(patching.clean_text), runner.run(patching.corrupted_text)
        if "layer" not in kwargs and "head" not in kwargs:
            layer, head, _ = patching.top(1)[0]
            kwargs.update(layer=layer, head=head)
        kwargs.setdefault("summary", "patching")
        super().__init__(a, b, **kwargs)

    @property
    def patching(self) -> Any:
        """The :class:`~attnwidgets.studies.PatchingResult` shown."""
        return self._patching

    def extra_summaries(self) -> dict[str, tuple[str, np.ndarray]]:
        p = getattr(self, "_patching", None)
        if p is None:
            return {}
        values = p.normalised if self._normalised else p.effect
        if values.ndim == 3:  # over positions: the largest change at any position
            values = np.take_along_axis(values, np.nanargmax(np.abs(np.nan_to_num(values)), -1)[..., None], -1)[..., 0]
        label = ("fraction of the clean − corrupted gap: " + p.metric) if self._normalised else p.label
        return {"patching": (label, np.asarray(values, dtype=np.float64))}
