"""EntropyBars: the entropy of every head's attention, bars grouped by layer, with the uniform baseline
(front end: js/src/views/entropy_bars/). The widget form of Clark et al. 2019, Figure 4."""

from __future__ import annotations

from typing import Any

import traitlets

from ..viewdata.head_stats import entropy_baseline
from ..viewdata.views.entropy_bars import ROWS, EntropyBarsState, available_rows, entropy_bars_state
from ..viewdata.views.head_stats_grid import query_labels
from ._headstats import HeadWidget
from ._measure import can_norms, check_measure, measure_trait, shown

__all__ = ["EntropyBars"]

class EntropyBars(HeadWidget):
    """Per-head attention entropy (nats) as bars grouped by layer, with the entropy of uniform attention as a line.

    Low bars are focused heads (a few keys take the mass); bars near the line attend broadly. A switch in the page
    chooses the mean over all query rows or the [CLS] row alone (the last row for decoders). Hovering a bar shows its
    value; clicking it selects that head (``layer``, ``head``), which :func:`attnwidgets.widgets.link_selection` passes
    on to a heatmap.

    Parameters
    ----------
    result : AttentionResult, list of AttentionResult, CorpusStats, DataFrame or dict
        One result (:func:`attnwidgets.run`), several (averaged), corpus statistics
        (:func:`attnwidgets.studies.corpus_stats`, or its tidy ``.frame()``), or a dict of (layers, heads) arrays
        with the keys ``entropy`` (and optionally ``entropy_cls``, ``entropy_last``, ``entropy_uniform``).
    rows : {"all", "cls", "last"}
        Which rows' entropy to show first.
    words : bool
        Word-level attention (attention sources only).
    smoothing : float
        Entropy smoothing, A <- (1 - ε) A + ε / n; 1e-4 reproduces Clark et al.'s code, 0 (default) is exact.
    layer, head : int
        The selected head (``head=-1``: the whole layer).
    measure : {"weights", "norms", "value_zeroing"}
        Entropy of the attention weights, of Kobayashi et al. 2020's norms ‖α_ij f(x_j)‖ as a share of each row, or
        of Mohebbi et al. 2023's value-zeroing map (one per layer: a layer's bars are then equal). Results of
        :func:`attnwidgets.run` only; the page's switch sets it.
    theme : str
        "light" or "lecture".

    Notes
    -----
    No ``colormap``: the bars are coloured by layer (a categorical palette), not on a continuous scale.

    The baseline is ln n for one input and, for a corpus, the mean of ln n over its inputs (what
    :func:`attnwidgets.analysis.uniform_entropy` gives, and the mean over rows of ln(i + 1) for a causal decoder's
    "all rows"). The [CLS] row of an encoder sees all n keys, so its baseline is ln n as well.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> bars = aw.EntropyBars(aw.run("The cat sat on the mat."), rows="cls")
    >>> bars.values("entropy_cls").shape
    (6, 12)
    """

    _bundle = "entropy_bars"

    rows = traitlets.Unicode("all").tag(sync=True)
    """str, default "all": "all" (mean entropy over the query rows), "cls" (the [CLS] row) or "last" (the last row,
    for decoders). The page's switch sets it; the bars and the baseline redraw at once, without a round trip."""

    measure = measure_trait()
    """str, default "weights": the entropy of the weights, of the norm share (Kobayashi et al. 2020) of each row, or
    of the value-zeroing map ("value_zeroing", Mohebbi et al. 2023). Two-way: the page's switch sets it. A source
    that cannot give them keeps the weights and the error box says why."""

    def __init__(self, result: Any, *, smoothing: float = 0.0, **kwargs: Any) -> None:
        self._measure_now = check_measure(kwargs.pop("measure", "weights"))
        super().__init__(result, smoothing=smoothing, **kwargs)
        self.measure = self._measure_now
        if "entropy" not in self.stats.values:
            raise ValueError("EntropyBars needs the statistic 'entropy' (mean row entropy per head); this source has "
                             f"{self.stats.names()}")
        self._check_rows(self.rows)

    def _available_rows(self) -> list[str]:
        return available_rows(self.stats)

    def _check_rows(self, rows: str) -> None:
        if rows not in ROWS:
            raise ValueError(f"rows must be one of {list(ROWS)}, got {rows!r}")
        if hasattr(self, "stats") and rows not in self._available_rows():
            raise ValueError(f"this source has no {ROWS[rows]!r} statistic, so rows={rows!r} cannot be shown; "
                             f"choose one of {self._available_rows()}")

    def _load_stats(self, source: Any, words: bool) -> Any:
        return super()._load_stats(shown(source, getattr(self, "_measure_now", "weights")), words)

    @traitlets.validate("measure")
    def _valid_measure(self, proposal: dict[str, Any]) -> str:
        return check_measure(proposal["value"])

    @traitlets.observe("measure")
    def _on_measure(self, change: dict[str, Any]) -> None:
        if not self._meta or change["new"] == self._measure_now:
            return
        old, self._measure_now = self._measure_now, change["new"]
        try:
            self.stats = self._load_stats(self._source, self.words)
        except Exception as exc:  # the weights stay; the page's red box says why
            self._measure_now = old
            self.measure = old
            self._error = f"{type(exc).__name__}: {exc}"
            return
        self._error = ""
        self._publish()

    @traitlets.validate("rows")
    def _valid_rows(self, proposal: dict[str, Any]) -> str:
        self._check_rows(str(proposal["value"]))
        return str(proposal["value"])

    def baseline(self, rows: str | None = None) -> float | None:
        """Entropy of uniform attention for the rows shown (nats), or None when the source does not give it."""
        return entropy_baseline(self.stats, self.rows if rows is None else rows)

    def _state(self) -> EntropyBarsState:
        return entropy_bars_state(self.stats, measure=self._measure_now, can_norms=can_norms(self._source),
                                  can_words=self._can_words, tokens=query_labels(self._source, self.stats.words))
