"""AblationWidget: disable or scale heads and layers and watch an output change, live (front end:
js/src/views/ablation/).

The one widget that takes a model rather than a result: every change re-runs it. The torch work stays in the runner
(:func:`attnwidgets.studies.watch.watch_ablation`, which recomputes only the layers at and above the first edited one);
this module holds the state and turns it into what the page draws.

State and how a change travels. ``ablation`` (an :class:`~attnwidgets.runner.ablation.Ablation`), ``mode``,
``kind``, ``layer``, ``head`` and ``item`` are state: Python reads and sets them, and setting ``ablation`` or ``mode``
re-runs the model. ``_payload`` is what the page draws (the watched numbers, the selected head's maps, the ablation
those numbers belong to and the last page change answered). A click or (debounced) slider move in the page sets the
``ablation`` and ``mode`` traits itself, with ``_page_seq`` numbering the change, in one state update: so the edit is
the widget's state in every host (marimo's ``mo.ui.anywidget`` reads a widget's value from the page's trait changes
only, never from custom messages). :meth:`AblationWidget.set_state`, where every host hands the page's changes to
the kernel, reads the ablation into an ``Ablation`` once, sets the state, re-runs, and the page gets one state update
(``_payload`` with that seq, ``_error``, and ``ablation`` or ``mode`` only where Python's differ from the page's) and
nothing else. The kernel never sets the page's edit back in a way the page would save again: the page saves only on
a user's action, so no change can loop. While one change is unanswered the page saves nothing more and remembers only
its latest state, which it saves when the update arrives, so no backlog can build up. The kernel ignores a change
older than one it has already applied (two pages on one kernel; marimo hands each change to ``set_state`` twice).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import traitlets

from ..result import AttentionResult
from ..viewdata.checks import check_head, check_int, check_layer
from ..viewdata.selection import check_combine, check_selection
from ..viewdata.views.ablation import (
    AblationState,
    AblationView,
    Outcome,
    ablation_setup,
    ablation_span,
    ablation_state,
    with_map,
    with_seq,
)
from ._base import AttnWidget, Colormap, Index, checked
from ._span import Selection

if TYPE_CHECKING:
    import pandas as pd

    from ..runner.ablation import Ablation

__all__ = ["AblationWidget", "remode"]

DISABLE_MODES = ("zero", "uniform", "mean")
#: What ``watch=`` may name (or a callable ``fn(result) -> float | dict``).
WATCHES = ("auto", "mlm", "probs", "pairs", "ranking", "drift")


def remode(ablation: Any, mode: str) -> dict[str, Any]:
    """The ablation (a dict or an ``Ablation``) as a dict with every disabled head or layer switched to ``mode``;
    scaled heads keep their scale.

    Examples
    --------
    >>> remode({"edits": [{"stack": "self", "layer": 1, "head": 2, "mode": "zero", "scale": 0.0},
    ...                   {"stack": "self", "layer": 1, "head": 3, "mode": "scale", "scale": 0.5}]}, "uniform")
    {'edits': [{'stack': 'self', 'layer': 1, 'head': 2, 'mode': 'uniform', 'scale': 1.0}, \
{'stack': 'self', 'layer': 1, 'head': 3, 'mode': 'scale', 'scale': 0.5}]}
    """
    if mode not in DISABLE_MODES:
        raise ValueError(f"unknown mode {mode!r}: use 'zero', 'uniform' or 'mean'")
    if hasattr(ablation, "to_dict"):
        ablation = ablation.to_dict()
    edits = []
    for e in ablation.get("edits", []):
        if e.get("mode") in DISABLE_MODES:
            e = {**e, "mode": mode, "scale": 0.0 if mode == "zero" else 1.0}
        edits.append(dict(e))
    return {"edits": edits}


class _AblationTrait(traitlets.TraitType[Any, Any]):
    """An :class:`~attnwidgets.runner.ablation.Ablation`; a dict in :meth:`Ablation.to_dict` form (or None) is turned
    into one here, once, by the widget (which knows the model and the mean reference)."""

    info_text = "an Ablation or its dict form {'edits': [{stack, layer, head, mode, scale}, ...]}"

    def validate(self, obj: Any, value: Any) -> Any:
        return obj._to_ablation(value)


def _ablation_json(ablation: Any, _widget: Any) -> dict[str, Any]:
    return ablation.to_dict()


class AblationWidget(AttnWidget):
    """A layers x heads grid of toggles that re-runs the model and shows what the ablation does to an output.

    Click a head to disable it (and select it); "off" at the start of a row disables the whole layer; the slider
    scales the selected head's output from 0 to 1; the menu picks how a disabled head is replaced (zero output,
    uniform attention, or its mean pattern over a reference corpus); "reset" clears everything. The panel shows the
    watched numbers before and after (bars with the values) and the selected head's attention map before and after.

    Parameters
    ----------
    texts : list of str, or AttentionResult(s), optional
        What is shown: the texts run clean and ablated. A result from :func:`attnwidgets.run` (or a list of them)
        stands for its text and its model: the runner that made it, found by the model's ``source``, revision,
        device and dtype (:func:`attnwidgets.runner.runner.runner_for`), not by its display name. For sentence
        pairs, the first sentence of each; for a ranking, the candidates. Default: three pairs of the shipped
        similarity set (:func:`attnwidgets.data.labelled.load_sts_pairs`). (Texts, not a result: every change re-runs
        the model.)
    text_pairs : list of str, optional
        Second sentences: watch the cosine similarity of each pair's pooled embeddings.
    query : str, optional
        Watch the ranking of ``texts`` against this query.
    watch : str or callable
        The watched output: "auto" (pairs / ranking / MLM top-k / class probabilities / embedding drift, by what is
        given and what the model has), one of those names, or ``fn(result) -> float | dict`` evaluated before and
        after on each text.
    model : str or Runner, optional
        Hub id, local folder or runner; the bundled all-MiniLM-L6-v2 by default.
    reference : "corpus", "texts" or MeanPattern
        What "mean" mode averages over: the shipped sentences (default), the watched texts, or a ready pattern.
        Computed once, the first time "mean" is used.
    k : int
        Top-k for masked-LM predictions.
    ablation, kind, layer, head, mode, item, colormap, theme
        Initial trait values (see the traits). ``kind`` is the attention stack, as in every view.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> w = aw.AblationWidget(["A man plays the guitar."], text_pairs=["A man is playing a guitar."])
    >>> w.ablation = aw.runner.Ablation.heads({(5, 3): "zero"})
    >>> list(w.frame.columns), w.result.ablation
    (['item', 'name', 'before', 'after', 'delta'], Ablation(5.3=zero))
    >>> w.reset(); w.ablation
    Ablation()
    """

    _bundle = "ablation"

    ablation = _AblationTrait().tag(sync=True, to_json=_ablation_json)
    """Ablation, default ``Ablation()`` (nothing edited): what is ablated. A dict in :meth:`Ablation.to_dict` form
    may be assigned too; it is read as an ``Ablation`` once, here. The page's toggles, layer buttons and slider set
    it; setting it here re-runs the model and redraws the grid. Invalid layers or heads raise a TraitError."""

    mode = traitlets.Unicode("zero").tag(sync=True)
    """str, default "zero": how a disabled head is replaced: "zero" (output removed), "uniform" (1/n over the valid
    keys) or "mean" (its mean pattern over ``reference``). Changing it switches every disabled head and layer to the
    new mode and re-runs; scaled heads keep their scale. The page's menu sets it."""

    kind = traitlets.Unicode("self").tag(sync=True)
    """str, default "self" ("encoder" for encoder-decoders): the attention stack the grid edits and the maps show;
    "encoder", "decoder" or "cross" for encoder-decoders (a menu in the page)."""

    layer = Index(0).tag(sync=True)
    """int, default 0: the selected head's layer (outlined in the grid; the slider and the maps are for it)."""

    head = Index(0).tag(sync=True)
    """int, default 0: the selected head. Two-way like ``layer``: clicking a cell selects it."""

    item = Index(0).tag(sync=True)
    """int, default 0: which text the attention maps show (a menu in the page)."""

    colormap = Colormap().tag(sync=True)
    """str, default "" (the theme's): the colour map of the before/after maps: "blues", "viridis", "cividis",
    "greys" or "reds"."""

    selection = Selection().tag(sync=True)
    """list[int], default []: the query rows compared (positions in text ``item``'s tokens, sorted), as the
    heatmap's ``selection`` and linked to it by :func:`attnwidgets.widgets.link_span` (a heatmap of that text).
    Click a row of either map to select it, shift-click to extend to a span, ctrl/cmd-click to add or remove one,
    Escape clears. The maps outline those rows and draw their ``combine`` before and after under each, and the
    caption says how much of their attention the ablation moved (:meth:`span_change`). The watched numbers above
    stay what the watch measures of the whole input. Choosing another text or stack clears it. A position out of
    range, a repeat or a non-integer is a TraitError."""

    combine = traitlets.Unicode("mean").tag(sync=True)
    """str, default "mean": how the selected rows are combined, "mean" or "sum"."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: what the page draws: ``{title, watch (its description), stacks ({stack: [layers, heads]}), items
    (a short label per text), output (the watched kind), rows: [{item, label, name, before, after, delta}],
    seconds, ablation (the one the rows belong to), seq (the last page message answered), map: {key, queries, keys,
    before, after}}``; the maps cross as float32 binary buffers, the rest is small JSON."""

    _page_seq = traitlets.Int(0).tag(sync=True)
    """int, default 0: the number of the page's latest change of ``ablation`` / ``mode``, set by the page beside them
    (increasing); the ``_payload`` whose ``seq`` reaches it answers that change. Python never sets it."""

    _running = traitlets.Bool(False).tag(sync=True)
    """bool: True while the kernel runs the model for a change made in Python (the page shows "running…"; for its
    own changes the page knows it is waiting)."""

    def __init__(
        self,
        texts: Sequence[str] | None = None,
        *,
        text_pairs: Sequence[str] | None = None,
        query: str | None = None,
        watch: str | Callable[[AttentionResult], Any] = "auto",
        model: Any = None,
        reference: Any = "corpus",
        k: int = 5,
        **kwargs: Any,
    ) -> None:
        from ..runner import get_runner

        texts, text_pairs, model = _from_results(texts, text_pairs, model)
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings; wrap a single text in a list")
        if texts is None:
            if text_pairs is not None or query is not None:
                raise ValueError("text_pairs and query need texts= (the first sentences / the candidates)")
            from ..data.labelled import load_sts_pairs

            pairs = load_sts_pairs().head(3)
            texts, text_pairs = list(pairs.sentence_a), list(pairs.sentence_b)
        texts = [str(t) for t in texts]
        if not texts:
            raise ValueError("texts is empty: give at least one text to watch")
        if isinstance(text_pairs, str):
            raise TypeError("text_pairs must be a list of strings, one per text")
        if text_pairs is not None and len(text_pairs) != len(texts):
            raise ValueError(
                f"text_pairs needs one second sentence per text: got {len(text_pairs)} for {len(texts)} texts"
            )
        if not (callable(watch) or watch in WATCHES):
            raise ValueError(
                f"unknown watch {watch!r}: use 'auto', 'mlm', 'probs', 'pairs', 'ranking', 'drift' or "
                "a callable result -> float | dict"
            )
        if not (isinstance(reference, str) and reference in ("corpus", "texts")) and not hasattr(reference, "digest"):
            raise ValueError("reference is 'corpus', 'texts' or a MeanPattern from attnwidgets.runner.mean_pattern")
        self._runner = get_runner(model)
        self._texts = texts
        self._pairs = None if text_pairs is None else [str(t) for t in text_pairs]
        self._query = query
        self._watch_spec = watch
        self._k = int(k)
        self._reference_spec = reference
        self._reference: Any = None if isinstance(reference, str) else reference
        self._watch: Any = None  # the latest WatchResult; None until the first run, at the end of __init__
        self._seq = 0
        info = self._runner.info
        encdec = info.kind == "encoder-decoder"
        self._shapes = (
            {
                "encoder": [info.n_layers, info.n_heads],
                "decoder": [info.n_decoder_layers, info.n_decoder_heads],
                "cross": [info.n_decoder_layers, info.n_decoder_heads],
            }
            if encdec
            else {"self": [info.n_layers, info.n_heads]}
        )
        kwargs.setdefault("kind", "encoder" if encdec else "self")
        super().__init__(**kwargs)
        # GQA: heads sharing a key/value head are grouped in the grid (decoder-only models; 0 = unknown).
        kv_heads = {} if encdec else {"self": int(getattr(info, "n_kv_heads", 0) or 0)}
        self._setup = ablation_setup(info.name, self._shapes, kv_heads, texts, self._pairs, self._describe())
        self._state: AblationState | None = None
        self._rerun()

    # -- reading -------------------------------------------------------------------------------------------------

    @property
    def runner(self) -> Any:
        """The runner that re-runs the model."""
        return self._runner

    @property
    def spec(self) -> Ablation:
        """The current ablation (the same object as :attr:`ablation`)."""
        return self.ablation  # type: ignore[no-any-return]

    @property
    def result(self) -> AttentionResult:
        """The :class:`~attnwidgets.result.AttentionResult` the "after" map shows: the selected text (``item``) run
        with the current ablation (its ``.ablation`` says which). The clean run is ``watch_result.before[item]``."""
        return self._watch.after[self.item]  # type: ignore[no-any-return]

    @property
    def watch_result(self) -> Any:
        """The latest :class:`~attnwidgets.studies.watch.WatchResult`: the watched numbers and the before/after
        results of every text."""
        return self._watch

    @property
    def frame(self) -> pd.DataFrame:
        """The latest watched numbers: ``item``, ``name``, ``before``, ``after``, ``delta``."""
        return self._watch.frame.copy()

    def span_change(self) -> dict[str, Any]:
        """The selected rows of the selected head's maps (text ``item``) compared: ``before`` and ``after``, their
        ``combine`` over the keys, and ``moved``, ``½ Σ |after − before|``
        (:func:`attnwidgets.viewdata.views.ablation.ablation_span`). ValueError when nothing is selected."""
        before, after, moved = ablation_span(
            self._state.payload.map,  # type: ignore[union-attr]
            self.selection,
            self.combine,
        )
        return {"before": before, "after": after, "moved": moved}

    def _n_queries(self) -> int:
        """Query tokens of the maps on screen (text ``item``, stack ``kind``): what ``selection`` indexes."""
        return len(self._state.payload.map.queries) if self._state is not None else 0

    def reset(self) -> None:
        """Enable every head again (re-runs, which is a cache hit: the clean run is kept)."""
        self.ablation = None

    # -- validation ----------------------------------------------------------------------------------------------

    def _to_ablation(self, value: Any) -> Ablation:
        """The one place a page's or a user's ablation becomes an ``Ablation``, checked against the model.

        A dict is parsed once (with the mean reference when it has a "mean" edit: computed the first time); an
        ``Ablation`` is only checked.
        """
        from ..runner.ablation import Ablation

        try:
            if value is None:
                return Ablation()
            if not isinstance(value, Ablation):
                if not isinstance(value, Mapping) or not isinstance(value.get("edits", []), list):
                    raise TypeError(
                        "an ablation looks like {'edits': [{stack, layer, head, mode, scale}, ...]} "
                        "or is an attnwidgets.runner.Ablation"
                    )
                needs_mean = any(isinstance(e, Mapping) and e.get("mode") == "mean" for e in value["edits"])
                value = Ablation.from_dict(value, reference=self._mean_reference() if needs_mean else None)
            value.validate(self._runner.info)
        except (KeyError, TypeError, ValueError) as exc:
            raise traitlets.TraitError(f"invalid ablation: {exc}") from exc
        return value

    @traitlets.default("ablation")
    def _default_ablation(self) -> Ablation:
        from ..runner.ablation import Ablation

        return Ablation()

    @traitlets.validate("mode")
    def _valid_mode(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in DISABLE_MODES:
            raise traitlets.TraitError(f"unknown mode {proposal['value']!r}: use 'zero', 'uniform' or 'mean'")
        return str(proposal["value"])

    @traitlets.validate("selection")
    def _valid_selection(self, proposal: dict[str, Any]) -> list[int]:
        if getattr(self, "_state", None) is None:
            return list(proposal["value"])
        return checked(check_selection, proposal["value"], self._n_queries())

    @traitlets.validate("combine")
    def _valid_combine(self, proposal: dict[str, Any]) -> str:
        return checked(check_combine, proposal["value"])

    @traitlets.validate("kind", "layer", "head", "item")
    def _valid_view(self, proposal: dict[str, Any]) -> Any:
        name, value = proposal["trait"].name, proposal["value"]
        if name == "kind":
            if value == "self" and "encoder" in self._shapes:
                return "encoder"  # "self" also names an encoder-decoder's encoder, as in every view
            if value not in self._shapes:
                raise traitlets.TraitError(f"this model has no {value!r} attention; it has {sorted(self._shapes)}")
            return value
        n_layers, n_heads = self._shapes[self.kind]
        if name == "layer":
            return checked(check_layer, value, n_layers)
        if name == "head":
            return checked(check_head, value, n_heads, allow_mean=False)
        value = checked(check_int, value, "item")
        if not 0 <= value < len(self._texts):
            raise traitlets.TraitError(
                f"item {value} is out of range: there are {len(self._texts)} texts (0..{len(self._texts) - 1})"
            )
        return value

    # -- running -------------------------------------------------------------------------------------------------

    def _describe(self) -> str:
        watch = "callable" if callable(self._watch_spec) else self._watch_spec
        if watch == "auto":
            watch = "pairs" if self._pairs is not None else "ranking" if self._query is not None else "auto"
        return {
            "pairs": "cosine similarity of each pair's pooled embeddings",
            "ranking": f"cosine similarity and rank against the query {self._query!r}",
            "mlm": "masked-LM probabilities at each [MASK]",
            "probs": "class probabilities",
            "drift": "cosine of each text's pooled embedding to the clean one",
            "callable": f"{getattr(self._watch_spec, '__name__', 'fn')}(result) before and after",
        }.get(watch, "the model's output")

    def _mean_reference(self) -> Any:
        if self._reference is None:
            from ..runner.ablation import mean_pattern

            if self._reference_spec == "texts":
                texts = self._texts + (self._pairs or []) + ([self._query] if self._query else [])
            else:
                from ..data import load_corpus

                texts = load_corpus("sentences")
            self._reference = mean_pattern(self._runner, texts)
        return self._reference

    def _rerun(self) -> None:
        """Run the current ablation and publish the numbers and the selected head's maps in ``_payload``."""
        from ..studies.watch import watch_ablation

        self._running = True
        try:
            start = time.perf_counter()
            watch = watch_ablation(
                self._runner,
                self._texts,
                self.ablation,
                kind=self._watch_spec,
                text_pairs=self._pairs,
                query=self._query,
                k=self._k,
            )
            seconds = time.perf_counter() - start
        except Exception as exc:
            self._error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._running = False
        self._watch = watch
        state = ablation_state(
            self._setup, self._outcome(), self._view(), self.ablation.to_dict(), seconds=seconds, seq=self._seq
        )
        with self.hold_sync():
            self._publish(state)
            self._error = ""

    def _outcome(self) -> Outcome:
        return Outcome(self._watch.kind, self._watch.table, self._watch.before, self._watch.after)

    def _view(self) -> AblationView:
        return AblationView(self.kind, self.layer, self.head, self.item)

    def _publish(self, state: AblationState) -> None:
        self._state = state
        self._show(state)

    @traitlets.observe("ablation")
    def _on_ablation(self, _change: dict[str, Any]) -> None:
        if self._watch is not None:  # before the first run (in __init__) there is nothing to redraw
            self._rerun()

    @traitlets.observe("mode")
    def _on_mode(self, change: dict[str, Any]) -> None:
        current = self.ablation.to_dict()
        new = remode(current, change["new"])
        if new != current:  # the page sends edits already in the new mode: then there is nothing to do
            self.ablation = new

    @traitlets.observe("layer", "head", "item", "kind")
    def _on_view(self, change: dict[str, Any]) -> None:
        if self._watch is None:
            return
        n_layers, n_heads = self._shapes[self.kind]
        with self.hold_sync():
            if change["name"] in ("item", "kind"):
                self.selection = []  # positions of one text's (or stack's) queries mean nothing in another
            # A new stack may have fewer layers or heads: clamp the selection; that change draws the map.
            if self.layer >= n_layers:
                self.layer = n_layers - 1
            elif self.head >= n_heads:
                self.head = n_heads - 1
            elif self._state is not None:
                self._publish(with_map(self._state, self._outcome(), self._view()))

    # -- changes from the page ------------------------------------------------------------------------------------

    def set_state(self, sync_data: dict[str, Any]) -> None:
        """The page's trait changes (ipywidgets' comm and marimo both hand them here).

        A change numbered ``_page_seq`` (of ``ablation`` and ``mode``, those that differ) is applied once and
        answered by one state update (``_payload`` with that seq, ``_error``), an invalid ablation or a failing run
        included; one older than a change already applied is ignored (its newer one's update answers it). Other
        traits are set as in every widget."""
        edits = ("ablation", "mode", "_page_seq")
        if "_page_seq" not in sync_data:  # hosts send only what changed: a change may carry its seq alone
            super().set_state(sync_data)
            return
        seq = int(sync_data["_page_seq"])
        if seq <= self._seq:  # stale, or marimo's second hand-over of the same change
            super().set_state({k: v for k, v in sync_data.items() if k not in edits})
            return
        self._seq = seq
        with self.hold_sync():
            try:
                super().set_state(sync_data)  # the ablation is read once (the trait); its observer re-runs
            except traitlets.TraitError as exc:  # nothing was set; the page holds what it set: hand it Python's
                self._error = str(exc)
                self.send_state(["ablation", "mode"])  # first, so the update answering the change finds it
            except Exception:  # a failing run has written its error to _error already; the page shows it
                pass
            if self._state is not None and self._state.payload.seq != seq:  # no run answered it (an error, no change)
                self._publish(with_seq(self._state, seq))


def _from_results(texts: Any, text_pairs: Any, model: Any) -> tuple[Any, Any, Any]:
    """(texts, text_pairs, model) when ``texts`` is an AttentionResult or a list of them: their texts and the model
    they came from (one model for all: its runner, found by the result's model info, never by its display name, unless
    ``model=`` names one). Anything else passes through unchanged."""
    results = [texts] if isinstance(texts, AttentionResult) else texts
    if not (isinstance(results, (list, tuple)) and results and all(isinstance(r, AttentionResult) for r in results)):
        return texts, text_pairs, model
    models = {r.model for r in results}
    if len(models) > 1:
        names = sorted({f"{m.name} ({m.dtype}, {m.device})" for m in models})
        raise ValueError(f"the results come from different models ({', '.join(names)}); give one model's")
    if any(r.target_text is not None for r in results):
        raise ValueError(
            "AblationWidget runs encoders and decoders on texts; an encoder-decoder result cannot stand "
            "for its input here: pass texts= and model="
        )
    if any(r.text_pair is not None for r in results):
        raise ValueError(
            "a sentence-pair result is one input ([CLS] A [SEP] B), while text_pairs= embeds A and B "
            "apart and watches their cosine: pass texts= and text_pairs= for that"
        )
    if model is None:
        from ..runner.runner import runner_for

        model = runner_for(results[0].model)
    return [r.text for r in results], text_pairs, model
