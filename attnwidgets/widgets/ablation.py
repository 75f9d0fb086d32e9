"""AblationWidget: disable or scale heads and layers and watch an output change, live (front end: js/src/ablation.ts).

The one widget that takes a model rather than a result: every change re-runs it. The torch work stays in the runner
(:func:`attnwidgets.runner.watch.watch_ablation`, which recomputes only the layers at and above the first edited one);
this module holds the state, the request handling and the payloads.

How a change travels. A click or (debounced) slider move in the page sends one ``apply`` request with the whole
ablation and a sequence number. The kernel runs it on the comm message and answers; while one request is in flight
the page sends nothing more and remembers only its latest state, which it sends when the answer arrives, so no
backlog can build up. The kernel also drops a request older than one it has already applied (two views of one
widget). Setting ``ablation`` (or ``mode``) from Python re-runs the same way and redraws the page.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..result import AttentionResult
from ._base import AttnWidget, pack

__all__ = ["AblationWidget", "remode"]

DISABLE_MODES = ("zero", "uniform", "mean")


def remode(ablation: dict[str, Any], mode: str) -> dict[str, Any]:
    """The ablation dict with every disabled head or layer switched to ``mode``; scaled heads keep their scale.

    Examples
    --------
    >>> remode({"edits": [{"stack": "self", "layer": 1, "head": 2, "mode": "zero", "scale": 0.0},
    ...                   {"stack": "self", "layer": 1, "head": 3, "mode": "scale", "scale": 0.5}]}, "uniform")
    {'edits': [{'stack': 'self', 'layer': 1, 'head': 2, 'mode': 'uniform', 'scale': 1.0}, \
{'stack': 'self', 'layer': 1, 'head': 3, 'mode': 'scale', 'scale': 0.5}]}
    """
    if mode not in DISABLE_MODES:
        raise ValueError(f"unknown mode {mode!r}: use 'zero', 'uniform' or 'mean'")
    edits = []
    for e in ablation.get("edits", []):
        if e.get("mode") in DISABLE_MODES:
            e = {**e, "mode": mode, "scale": 0.0 if mode == "zero" else 1.0}
        edits.append(dict(e))
    return {"edits": edits}


class _AblationTrait(traitlets.Dict):
    """A Dict trait that also accepts an :class:`~attnwidgets.runner.ablation.Ablation` (stored as its dict form)."""

    def validate(self, obj: Any, value: Any) -> Any:
        if value is None:
            value = {"edits": []}
        if hasattr(value, "to_dict") and hasattr(value, "edits"):
            value = value.to_dict()
        return super().validate(obj, value)


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, str):
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return None if not np.isfinite(f) else f


class AblationWidget(AttnWidget):
    """A layers x heads grid of toggles that re-runs the model and shows what the ablation does to an output.

    Click a head to disable it (and select it); "off" at the start of a row disables the whole layer; the slider
    scales the selected head's output from 0 to 1; the menu picks how a disabled head is replaced (zero output,
    uniform attention, or its mean pattern over a reference corpus); "reset" clears everything. The panel shows the
    watched numbers before and after (bars with the values) and the selected head's attention map before and after.

    Parameters
    ----------
    texts : list of str, optional
        What is run. For sentence pairs, the first sentence of each; for a ranking, the candidates. Default: three
        pairs of the shipped similarity set (:func:`attnwidgets.data.tasks.load_sts_pairs`).
    text_pairs : list of str, optional
        Second sentences: watch the cosine similarity of each pair's pooled embeddings.
    query : str, optional
        Watch the ranking of ``texts`` against this query.
    kind : str or callable
        "auto" (pairs / ranking / MLM top-k / class probabilities / embedding drift, by what is given and what the
        model has), one of those names, or ``fn(result) -> float | dict`` evaluated before and after on each text.
    model : str or Runner, optional
        Hub id, local folder or runner; the bundled all-MiniLM-L6-v2 by default.
    reference : "corpus", "texts" or MeanPattern
        What "mean" mode averages over: the shipped sentences (default), the watched texts, or a ready pattern.
        Computed once, the first time "mean" is used.
    k : int
        Top-k for masked-LM predictions.
    ablation, layer, head, mode, stack, item, theme
        Initial trait values (see the traits).

    Examples
    --------
    >>> import attnwidgets as aw
    >>> w = aw.AblationWidget(texts=["A man plays the guitar."], text_pairs=["A man is playing a guitar."])
    >>> w.ablation = aw.Ablation.heads({(5, 3): "zero"})
    >>> list(w.frame.columns)
    ['item', 'name', 'before', 'after', 'delta']
    >>> w.reset(); w.ablation
    {'edits': []}
    """

    _bundle = "ablation"

    ablation = _AblationTrait({"edits": []}).tag(sync=True)
    """dict, default ``{"edits": []}``: what is ablated, in :meth:`Ablation.to_dict` form (an ``Ablation`` may be
    assigned too). Two-way: the page's toggles, layer buttons and slider set it (and re-run the model); setting it
    here re-runs the model and redraws the grid. Invalid layers or heads raise a TraitError."""

    layer = traitlets.Int(0).tag(sync=True)
    """int, default 0: the selected head's layer (outlined in the grid; the slider and the maps are for it)."""

    head = traitlets.Int(0).tag(sync=True)
    """int, default 0: the selected head. Two-way like ``layer``: clicking a cell selects it."""

    mode = traitlets.Unicode("zero").tag(sync=True)
    """str, default "zero": how a disabled head is replaced: "zero" (output removed), "uniform" (1/n over the valid
    keys) or "mean" (its mean pattern over ``reference``). Changing it switches every disabled head and layer to the
    new mode and re-runs; scaled heads keep their scale. The page's menu sets it."""

    stack = traitlets.Unicode("self").tag(sync=True)
    """str, default "self" ("encoder" for encoder-decoders): which attention the grid edits and the maps show;
    "encoder", "decoder" or "cross" for encoder-decoders (a menu in the page)."""

    item = traitlets.Int(0).tag(sync=True)
    """int, default 0: which text the attention maps show (a menu in the page)."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, watched kind and its description, [layers, heads] per stack, a short label per text."""

    _output = traitlets.Dict().tag(sync=True)
    """dict: the latest watched numbers ``{kind, rows: [{item, name, before, after, delta}], ablation, seconds,
    seq}``: small JSON the page draws as before/after bars."""

    _heatmap = traitlets.Dict().tag(sync=True)
    """dict: the selected head's map ``{key, queries, keys, before, after}``, both as float32 binary buffers."""

    _running = traitlets.Bool(False).tag(sync=True)
    """bool: True while the kernel runs the model (the page shows "running…")."""

    def __init__(
        self,
        texts: Sequence[str] | None = None,
        *,
        text_pairs: Sequence[str] | None = None,
        query: str | None = None,
        kind: str | Callable[[AttentionResult], Any] = "auto",
        model: Any = None,
        reference: Any = "corpus",
        k: int = 5,
        **kwargs: Any,
    ) -> None:
        from ..runner import get_runner

        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings; wrap a single text in a list")
        if texts is None:
            if text_pairs is not None or query is not None:
                raise ValueError("text_pairs and query need texts= (the first sentences / the candidates)")
            from ..data.tasks import load_sts_pairs

            pairs = load_sts_pairs().head(3)
            texts, text_pairs = list(pairs.sentence_a), list(pairs.sentence_b)
        texts = [str(t) for t in texts]
        if not texts:
            raise ValueError("texts is empty: give at least one text to watch")
        if text_pairs is not None and not isinstance(text_pairs, str) and len(text_pairs) != len(texts):
            raise ValueError(f"text_pairs needs one second sentence per text: got {len(text_pairs)} for "
                             f"{len(texts)} texts")
        if isinstance(text_pairs, str):
            raise TypeError("text_pairs must be a list of strings, one per text")
        if not (callable(kind) or kind in ("auto", "mlm", "probs", "pairs", "ranking", "drift")):
            raise ValueError(f"unknown kind {kind!r}: use 'auto', 'mlm', 'probs', 'pairs', 'ranking', 'drift' or a "
                             "callable result -> float | dict")
        if not (isinstance(reference, str) and reference in ("corpus", "texts")) and not hasattr(reference, "digest"):
            raise ValueError("reference is 'corpus', 'texts' or a MeanPattern from attnwidgets.mean_pattern")
        self._runner = get_runner(model)
        self._texts = texts
        self._pairs = None if text_pairs is None else [str(t) for t in text_pairs]
        self._query = query
        self._kind = kind
        self._k = int(k)
        self._reference_spec = reference
        self._reference: Any = None if isinstance(reference, str) else reference
        self._watch: Any = None
        self._quiet = False
        self._seq = 0
        info = self._runner.info
        encdec = info.kind == "encoder-decoder"
        self._shapes = ({"encoder": [info.n_layers, info.n_heads],
                         "decoder": [info.n_decoder_layers, info.n_decoder_heads],
                         "cross": [info.n_decoder_layers, info.n_decoder_heads]}
                        if encdec else {"self": [info.n_layers, info.n_heads]})
        kwargs.setdefault("stack", "encoder" if encdec else "self")
        self._quiet = True  # the first run happens below, once every trait is set
        try:
            super().__init__(**kwargs)
        finally:
            self._quiet = False
        self._meta = {
            "title": info.name,
            "stacks": self._shapes,
            "items": [t if len(t) <= 48 else t[:45] + "..." for t in texts],
            "watch": self._describe(),
        }
        self._rerun()

    # -- reading -------------------------------------------------------------------------------------------------

    @property
    def runner(self) -> Any:
        """The runner that re-runs the model."""
        return self._runner

    @property
    def spec(self) -> Any:
        """The current ablation as an :class:`~attnwidgets.runner.ablation.Ablation` (with the mean reference)."""
        from ..runner.ablation import Ablation

        needs_mean = any(e.get("mode") == "mean" for e in self.ablation.get("edits", []))
        return Ablation.from_dict(self.ablation, reference=self._mean_reference() if needs_mean else None)

    @property
    def result(self) -> Any:
        """The latest :class:`~attnwidgets.runner.watch.WatchResult` (numbers and before/after results)."""
        return self._watch

    @property
    def frame(self) -> pd.DataFrame:
        """The latest watched numbers: ``item``, ``name``, ``before``, ``after``, ``delta``."""
        return self._watch.frame.copy()

    def reset(self) -> None:
        """Enable every head again (re-runs, which is a cache hit: the clean run is kept)."""
        self.ablation = {"edits": []}

    # -- validation ----------------------------------------------------------------------------------------------

    @traitlets.validate("ablation")
    def _valid_ablation(self, proposal: dict[str, Any]) -> dict[str, Any]:
        from ..runner.ablation import Ablation, MeanPattern

        value = proposal["value"]
        if not isinstance(value.get("edits", []), list):
            raise traitlets.TraitError("ablation must look like {'edits': [{stack, layer, head, mode, scale}, ...]}")
        try:
            # A placeholder reference for checking: the real one is computed only when a run needs it.
            ab = Ablation.from_dict(value, reference=MeanPattern({}))
            if hasattr(self, "_runner"):
                ab.validate(self._runner.info)
        except (KeyError, TypeError, ValueError) as exc:
            raise traitlets.TraitError(f"invalid ablation: {exc}") from exc
        return ab.to_dict()

    @traitlets.validate("mode")
    def _valid_mode(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in DISABLE_MODES:
            raise traitlets.TraitError(f"unknown mode {proposal['value']!r}: use 'zero', 'uniform' or 'mean'")
        return str(proposal["value"])

    @traitlets.validate("stack", "layer", "head", "item")
    def _valid_view(self, proposal: dict[str, Any]) -> Any:
        if not hasattr(self, "_shapes"):
            return proposal["value"]
        name, value = proposal["trait"].name, proposal["value"]
        stack = value if name == "stack" else self.stack
        if stack not in self._shapes:
            raise traitlets.TraitError(f"unknown stack {stack!r}: this model has {sorted(self._shapes)}")
        n_layers, n_heads = self._shapes[stack]
        limits = {"layer": n_layers, "head": n_heads, "item": len(self._texts)}
        if name in limits and not 0 <= value < limits[name]:
            raise traitlets.TraitError(f"{name} {value} is out of range: 0..{limits[name] - 1}")
        return value

    # -- running -------------------------------------------------------------------------------------------------

    def _describe(self) -> str:
        kind = "callable" if callable(self._kind) else self._kind
        if kind == "auto":
            kind = "pairs" if self._pairs is not None else "ranking" if self._query is not None else "auto"
        return {
            "pairs": "cosine similarity of each pair's pooled embeddings",
            "ranking": f"cosine similarity and rank against the query {self._query!r}",
            "mlm": "masked-LM probabilities at each [MASK]",
            "probs": "class probabilities",
            "drift": "cosine of each text's pooled embedding to the clean one",
            "callable": f"{getattr(self._kind, '__name__', 'fn')}(result) before and after",
        }.get(kind, "the model's output")

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
        """Run the current ablation and push the numbers and the selected head's maps to the page."""
        from ..runner.watch import watch_ablation

        self._running = True
        try:
            start = time.perf_counter()
            watch = watch_ablation(self._runner, self._texts, self.spec, kind=self._kind, text_pairs=self._pairs,
                                   query=self._query, k=self._k)
            seconds = time.perf_counter() - start
        except Exception as exc:
            self._error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._running = False
        self._watch = watch
        rows = [{"item": str(r["item"]), "label": self._label(str(r["item"])), "name": str(r["name"]),
                 **{key: _jsonable(r[key]) for key in ("before", "after", "delta")}}
                for r in watch.to_dict()["rows"]]
        with self.hold_sync():
            self._output = {"kind": watch.kind, "rows": rows, "ablation": self.ablation, "seconds": seconds,
                            "seq": self._seq}
            self._send_heatmap()
            self._error = ""

    def _label(self, item: str) -> str:
        """What a watched item is, for the panel: "pair 2" -> both sentences, "text 0 ..." -> the text."""
        words = item.split()
        if len(words) >= 2 and words[0] in ("pair", "text") and words[1].isdigit() and int(words[1]) < len(self._texts):
            i = int(words[1])
            if words[0] == "pair" and self._pairs is not None:
                return f"{item}: {self._texts[i]}  ↔  {self._pairs[i]}"
            return f"{item}: {self._texts[i]}"
        return item

    def _send_heatmap(self) -> None:
        if self._watch is None:
            return
        kind = self.stack
        before, queries, keys = self._watch.before[self.item].attention_of(kind)
        after, _, _ = self._watch.after[self.item].attention_of(kind)
        self._heatmap = {
            "key": f"{kind}/{self.item}/{self.layer}/{self.head}",
            "queries": list(queries),
            "keys": list(keys),
            "before": pack(before[self.layer, self.head]),
            "after": pack(after[self.layer, self.head]),
        }

    @traitlets.observe("ablation")
    def _on_ablation(self, _change: dict[str, Any]) -> None:
        if not self._quiet:
            self._rerun()

    @traitlets.observe("mode")
    def _on_mode(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        new = remode(self.ablation, change["new"])
        if new != self.ablation:
            self.ablation = new

    @traitlets.observe("layer", "head", "item", "stack")
    def _on_view(self, change: dict[str, Any]) -> None:
        if change["name"] == "stack" and not self._quiet:
            n_layers, n_heads = self._shapes[self.stack]
            self.layer, self.head = min(self.layer, n_layers - 1), min(self.head, n_heads - 1)
        if not self._quiet:
            self._send_heatmap()

    # -- requests from the page ----------------------------------------------------------------------------------

    def _handlers(self) -> dict[str, Any]:
        return {"apply": self._apply_request}

    def _apply_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        """``{what: "apply", seq, ablation, mode?}``: set the state the page shows and re-run once.

        A request older than one already applied is answered ``{stale: true}`` without running the model.
        """
        seq = int(req.get("seq", 0))
        if seq <= self._seq:
            return {"stale": True, "seq": seq, "latest": self._seq}, []
        self._seq = seq
        try:
            self._quiet = True  # the page already rewrote the edits for a new mode; run once, below
            if "mode" in req:
                self.mode = str(req["mode"])
            self.ablation = req.get("ablation") or {"edits": []}
        except traitlets.TraitError as exc:
            self._error = str(exc)
            raise
        finally:
            self._quiet = False
        self._rerun()
        return {"seq": seq, "ablation": self.ablation, "seconds": self._output["seconds"]}, []
