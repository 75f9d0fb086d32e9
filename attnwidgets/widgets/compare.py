"""AttentionCompare: two results' attention side by side, or as a signed difference, with a per-head summary grid
(front end: js/src/views/compare/). The numbers are :func:`attnwidgets.analysis.compare.compare_attention`'s; the static
twin is :func:`attnwidgets.plots.plot_compare`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..analysis.compare import SUMMARIES, AttentionComparison
from ..result import AttentionResult
from ..viewdata.checks import DIVERGING_COLORMAPS, check_head, check_layer
from ..viewdata.compare import COMPARE_SHOW, CompareHead, compare_head, make_comparison
from ..viewdata.views.compare import CompareOptions, compare_span, compare_state
from ._base import AttnWidget, Colormap, Index, checked
from ._span import SpanSelection

__all__ = ["AttentionCompare"]


class AttentionCompare(SpanSelection, AttnWidget):
    """Compare two results head by head: A | B side by side, or B − A on a diverging scale centred on 0.

    Tokens are aligned by text (difflib's SequenceMatcher over token texts, see
    :func:`~attnwidgets.analysis.align_tokens`), so the two may be different inputs ("The cat sat" vs "The cats
    sat"), two models on one input (base vs fine-tuned), or a clean and an ablated run. Unaligned tokens are greyed
    in the side-by-side maps; the difference covers the aligned tokens only. A grid of every head's summary
    (Jensen–Shannon divergence in bits or cosine similarity, over the aligned rows) sits beside the maps: click a
    cell to open that head.

    Select query tokens as in the heatmap (click a row, shift-click to extend to a span, ctrl/cmd-click to add or
    remove one, Escape clears): ``selection`` holds positions of A's queries (so :func:`attnwidgets.link_span`
    links it with a heatmap of A), the rows are outlined in A and, where aligned, in B, and each map gets the
    ``combine`` ("mean" or "sum") of its selected rows drawn under it: A's, B's over the aligned partners, and in
    ``show="diff"`` B − A of those two over the aligned keys (:meth:`span_weights`).

    Parameters
    ----------
    a, b : AttentionResult
        What to compare (A is the reference: the difference is B − A).
    layer, head : int
        The head shown first (``head=-1``: the mean of the layer's heads).
    kind : str
        "self", or "encoder" / "decoder" / "cross" for encoder-decoders.
    words : bool
        Compare word-level attention (pieces merged), so that two tokenizers meet at whole words.
    selection : list of int
        Selected query rows of A (at the level shown: tokens, or words with ``words=True``).
    combine : str
        "mean" (default) or "sum" of the selected rows.
    show : str
        "side" (both maps) or "diff" (B − A).
    summary : str
        What colours the grid: "js" or "cosine".
    colormap : str
        The maps' colour map ("blues", ...); "" the theme's.
    diverging : str
        The difference's scale, "rdbu" or "puor"; "" the theme's (RdBu, PuOr in the lecture theme).
    theme : str
        "light" or "lecture".

    Examples
    --------
    >>> import attnwidgets as aw
    >>> w = aw.AttentionCompare(aw.run("The cat sat on the mat."), aw.run("The cats sat on the mat."), show="diff")
    >>> w.comparison.queries.a_index.tolist()
    [0, 1, 3, 4, 5, 6, 7, 8]
    >>> w.summary_values("js").shape
    (6, 12)
    """

    _bundle = "compare"

    layer = Index(0).tag(sync=True)
    """int, default 0: the layer shown. A click in the grid or the page's menu sets it; setting it here redraws."""

    head = Index(0).tag(sync=True)
    """int, default 0: the head shown; -1 the mean over the layer's heads. Two-way like ``layer``."""

    kind = traitlets.Unicode("self").tag(sync=True)
    """str, default "self": the attention compared (fixed when the widget is made)."""

    words = traitlets.Bool(False).tag(sync=True)
    """bool, default False: compare at word level (to a word: sum over its pieces; from a word: mean), so two
    tokenizers that cut a word differently meet at it. Setting it recomputes the comparison."""

    show = traitlets.Unicode("side").tag(sync=True)
    """str, default "side": "side" draws A and B whole, side by side; "diff" draws B − A over the aligned tokens
    on a symmetric diverging scale. The page's menu sets it."""

    summary = traitlets.Unicode("js").tag(sync=True)
    """str, default "js": what colours the per-head grid, "js" (Jensen–Shannon divergence, bits) or "cosine"."""

    colormap = Colormap().tag(sync=True)
    """str, default "" (the theme's): the maps' colour map, "blues", "viridis", "cividis", "greys" or "reds"."""

    diverging = Colormap(DIVERGING_COLORMAPS).tag(sync=True)
    """str, default "" (the theme's: "rdbu", "puor" in the lecture theme): the difference's colour scale."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, names of A and B, labels (``compare_labels``), [layers, heads], summary names and labels, how
    tokens were aligned."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {key, a, b, diff, vmax, dmax, summary}: key "layer/head/t" ("/w" at word level); the shown head's two
    whole maps and their aligned difference as float32 buffers, the maps' colour-scale top and the difference's
    half-width, and every head's summaries as one (2, L, H) float32 buffer (js, cosine). A head chosen in the page
    sets ``layer``/``head``; the kernel answers with a new payload."""

    def __init__(self, a: AttentionResult, b: AttentionResult, **kwargs: Any) -> None:
        kind = kwargs.get("kind", "self" if getattr(a, "cross_attention", None) is None else "encoder")
        kwargs["kind"] = kind
        self._inputs = (a, b)
        self._comparison = make_comparison(a, b, kind, words=bool(kwargs.get("words", False)))
        self._result = self._comparison.a
        super().__init__(**kwargs)
        self._check(self.layer, self.head)
        self._publish()

    @property
    def comparison(self) -> AttentionComparison:
        """The numbers behind the view (:class:`~attnwidgets.analysis.compare.AttentionComparison`)."""
        return self._comparison

    @property
    def result(self) -> AttentionResult:
        """A, the reference."""
        return self._comparison.a

    @property
    def selection_shape(self) -> tuple[int, int]:
        """(layers, heads), what :func:`attnwidgets.widgets.link_selection` checks linked widgets by."""
        return self._comparison.shape

    def summary_values(self, summary: str | None = None) -> np.ndarray:
        """[layer, head] float64 of a summary ("js" or "cosine", or a view's own; default the one shown)."""
        name = self.summary if summary is None else summary
        extra = self.extra_summaries()
        if name in extra:
            return np.asarray(extra[name][1], dtype=np.float64)
        return self._comparison.summary(name)

    def extra_summaries(self) -> dict[str, tuple[str, np.ndarray]]:
        """Signed per-head summaries a subclass adds to the grid's menu, {name: (label, [layer, head])}."""
        return {}

    def shown(self) -> CompareHead:
        """What the page draws for the current head."""
        return compare_head(self._comparison, self.layer, self.head)

    def _span_source(self, words: bool | None = None) -> AttentionResult:
        return self._comparison.a

    def _span_view(self) -> tuple[str, int, int]:
        return self.kind, self.layer, self.head

    def span_weights(self, combine: str | None = None) -> dict[str, np.ndarray]:  # type: ignore[override]
        """The combined rows drawn under the maps: {"a": (A's keys,), "b": (B's keys,), "diff": (aligned keys,)}
        float32. "a" is the ``combine`` of A's selected rows; "b" of the B rows aligned with them (NaN everywhere
        when none is aligned); "diff" is b − a over the aligned keys. ValueError when nothing is selected."""
        return compare_span(self._comparison, self.layer, self.head, list(self.selection),
                            self.combine if combine is None else combine)

    def _check(self, layer: int, head: int) -> None:
        n_layers, n_heads = self._comparison.shape
        checked(check_layer, layer, n_layers)
        checked(check_head, head, n_heads)

    @traitlets.validate("layer", "head")
    def _valid_head_pick(self, proposal: dict[str, Any]) -> int:
        value = int(proposal["value"])
        if hasattr(self, "_comparison"):
            n_layers, n_heads = self._comparison.shape
            if proposal["trait"].name == "layer":
                checked(check_layer, value, n_layers)
            else:
                checked(check_head, value, n_heads)
        return value

    @traitlets.validate("kind")
    def _valid_kind(self, proposal: dict[str, Any]) -> str:
        if hasattr(self, "_comparison") and proposal["value"] != self._comparison.kind:
            raise traitlets.TraitError(f"kind is fixed when an AttentionCompare is made ({self._comparison.kind!r});"
                                       " make a new one for another kind")
        return str(proposal["value"])

    @traitlets.validate("show")
    def _valid_show(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in COMPARE_SHOW:
            raise traitlets.TraitError(f"show must be one of {list(COMPARE_SHOW)}, got {proposal['value']!r}")
        return str(proposal["value"])

    @traitlets.validate("summary")
    def _valid_summary(self, proposal: dict[str, Any]) -> str:
        names = [*SUMMARIES, *self.extra_summaries()]
        if proposal["value"] not in names:
            raise traitlets.TraitError(f"summary must be one of {names}, got {proposal['value']!r}")
        return str(proposal["value"])

    @traitlets.observe("layer", "head", "selection", "combine")
    def _on_head(self, _change: dict[str, Any]) -> None:
        if self._meta:
            self._publish()

    @traitlets.observe("words")
    def _on_words(self, change: dict[str, Any]) -> None:
        if not self._meta:
            return
        try:
            self._comparison = make_comparison(*self._inputs, self.kind, words=bool(change["new"]))
        except ValueError as exc:  # shown in the page's red box; the view keeps the comparison it had
            self._error = str(exc)
            return
        self._error = ""
        with self.hold_sync():
            self._result = self._comparison.a
            self._meta = {}  # the selection indexes other rows now: cleared without publishing the old level
            self.selection = []
            self._publish()

    def _publish(self) -> None:
        """Publish the state (meta and the head on screen, with the selection's rows) in one sync."""
        options = CompareOptions(self.layer, self.head, self.words, tuple(self.selection), self.combine,
                                 self.extra_summaries())
        self._show(compare_state(self._comparison, self._inputs, options))
