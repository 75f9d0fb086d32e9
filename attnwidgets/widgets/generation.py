"""GenerationView: a model's attention while it writes, step by step (front end: js/src/views/generation/)."""

from __future__ import annotations

from typing import Any

import traitlets

from ..analysis.sampling import check_sampling, reshape
from ..generation_result import GenerationResult
from ..viewdata.checks import check_head, check_layer
from ..viewdata.selection import SHARE_BY, selection_share
from ..viewdata.state import to_reply, to_wire
from ..viewdata.views.generation import (
    GenerationOptions,
    GenerationState,
    generation_matrix,
    generation_share,
    generation_state,
    share_key,
)
from ._base import AttnWidget, Colormap, Index, checked
from ._span import SpanSelection


def _check_step(step: int, n_steps: int) -> int:
    if not 0 <= step < n_steps:
        raise traitlets.TraitError(f"step {step} is out of range: {n_steps} tokens were generated (0..{n_steps - 1})")
    return step


class GenerationView(SpanSelection, AttnWidget):
    """The prompt and the generated text with a step scrubber: at each step, the attention of the query that chose
    the token, drawn on the text itself and as a steps x keys heatmap, with the step's top-k predictions.

    Select tokens of the prompt (the source of an encoder-decoder) as in the heatmap: click one, shift-click or drag
    to extend to a span, ctrl/cmd-click to add or remove one, Escape clears. ``selection`` holds their positions
    (those of ``generation.result.tokens``, so :func:`attnwidgets.link_span` links it with a heatmap, model view,
    head view or profile of that result), the span is marked on the text, and a panel draws, for every step, the
    share of that step's attention on them (:meth:`GenerationResult.span_share`): a line per layer (the mean of its
    heads) or, with ``share_by="head"``, per head of ``layer``. Click the panel to move the scrubber to that step.

    The slider, the arrow keys (left/right: one step; Home/End) and the play button move ``step``. Only the selected
    (kind, layer, head)'s steps x keys matrix is sent first (float16); other layers and heads are fetched when chosen.

    Parameters
    ----------
    generation : GenerationResult
        From :func:`attnwidgets.generate` or :func:`attnwidgets.teaching.generate_toy`.
    step : int
        The step shown (0-based; -1 is the last).
    layer, head : int
        ``head=-1`` shows the mean over the layer's heads (the default).
    kind : str
        "self" for a decoder; "decoder" or "cross" (default) for an encoder-decoder.
    selection : list of int
        Selected prompt (source) tokens; their span-share panel is drawn under the map.
    combine : str
        "sum" (default: the share of each step's attention on the selection) or "mean" (that share divided by the
        number of selected tokens).
    share_by : str
        "layer" (default), "head" or "role" (a generation with chat roles: :meth:`GenerationResult.with_roles`).
    sampling : bool
        Show the sampling playground under the top-k list: the step's distribution before and after
        ``temperature``, ``top_k``, ``top_p`` and ``min_p`` (:func:`attnwidgets.analysis.sampling.reshape` says how, in
        Hugging Face's order; computed over the k candidates each step kept, which is exact since ``top_k`` is at most
        k). The page's sliders set them; the tokens each rule cuts are greyed and named.
    lens : bool
        Show the logit lens under the top-k list: for the step shown, the top tokens read from its stream after the
        embeddings and after each layer (a table, each cell shaded by its probability). Needs a generation that kept
        it: ``aw.generate(..., lens_k=5)``.
    temperature, top_k, top_p, min_p : float, int, float, float
        The playground's settings (defaults 1.0, 0 = all k candidates, 1.0, 0.0: the model's own distribution).
    colormap, theme : str

    Examples
    --------
    >>> import attnwidgets as aw
    >>> w = aw.GenerationView(aw.generate("The cat", model="gpt2"), step=2)  # doctest: +SKIP
    """

    _bundle = "generation"

    step = Index(0).tag(sync=True)
    """int, default 0: the step shown. Two-way: scrubbing in the page sets it; setting it here moves the page."""

    layer = Index(0).tag(sync=True)
    """int, default 0: the layer shown."""

    head = Index(-1).tag(sync=True)
    """int, default -1 (mean over heads): the head shown."""

    kind = traitlets.Unicode("self").tag(sync=True)
    """str: "self" (decoders) or "decoder" / "cross" (encoder-decoders; "cross" first)."""

    colormap = Colormap().tag(sync=True)
    """str, default "" (the theme's): "blues", "viridis", "cividis", "greys" or "reds"."""

    combine = traitlets.Unicode("sum").tag(sync=True)
    """str, default "sum": how the panel combines the selected tokens: "sum" (the share of each step's attention
    that falls on them) or "mean" (that share over the number of tokens). Two-way: the page's menu sets it."""

    share_by = traitlets.Unicode("layer").tag(sync=True)
    """str, default "layer": the span-share panel's lines, one per layer (the mean of its heads), "head", one per
    head of ``layer``, or "role", one per role of a chat prompt (``generation.roles``; the mean of ``layer``'s
    heads, each line named by its role, drawn with no selection needed). Two-way: the page's menu sets it."""

    sampling = traitlets.Bool(False).tag(sync=True)
    """bool, default False: show the sampling playground (the page's "sampling" box toggles it)."""

    lens = traitlets.Bool(False).tag(sync=True)
    """bool, default False: show the logit lens of the step (the page's "lens" box toggles it; a generation made with
    ``lens_k``)."""

    temperature = traitlets.Float(1.0).tag(sync=True)
    """float, default 1.0: the playground's temperature (> 0; the page's slider sets it)."""

    top_k = traitlets.Int(0).tag(sync=True)
    """int, default 0 (all the k candidates kept per step): the playground's top-k, 0 or 1..k."""

    top_p = traitlets.Float(1.0).tag(sync=True)
    """float, default 1.0 (off): the playground's top-p, in (0, 1]."""

    min_p = traitlets.Float(0.0).tag(sync=True)
    """float, default 0.0 (off): the playground's min-p, in [0, 1]."""

    _share = traitlets.Dict().tag(sync=True)
    """dict: {key, lines (steps, n) float32, labels, error}: the span-share panel of the selection ({} if none)."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: title, kinds, [layers, heads] per kind, prompt/generated/key token texts, first_row, top-k tokens."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {key, matrix (N, keys) float16 with NaN for keys not yet written, topk_probs (N, k) float32}: the first
    view's steps x keys matrix; other (kind, layer, head) come by "matrix" request."""

    def __init__(self, generation: GenerationResult, **kwargs: Any) -> None:
        if not isinstance(generation, GenerationResult):
            raise TypeError(f"GenerationView takes a GenerationResult (from attnwidgets.generate), got "
                            f"{type(generation).__name__}")
        self._gen = generation
        self._result = generation.result
        kwargs.setdefault("kind", generation.default_kind)
        if isinstance(kwargs.get("step"), int) and not isinstance(kwargs["step"], bool) and kwargs["step"] < 0:
            kwargs["step"] += generation.n_steps
        super().__init__(**kwargs)
        self._check(self.kind, self.layer, self.head)
        _check_step(self.step, generation.n_steps)
        self._refresh()
        self._built = True
        self._refresh_share()

    @property
    def generation(self) -> GenerationResult:
        """The generation shown (read-only)."""
        return self._gen

    def _shape(self, kind: str) -> tuple[int, int]:
        return self._gen.result.attention_shape(kind)[:2]  # type: ignore[arg-type,return-value]

    def _check(self, kind: str, layer: int, head: int) -> None:
        g = self._gen
        if kind not in g.kinds:
            raise traitlets.TraitError(f"this generation has {g.kinds} attention per step, not {kind!r}")
        n_layers, n_heads = self._shape(kind)
        checked(check_layer, layer, n_layers)
        checked(check_head, head, n_heads)

    def _n_selectable(self, kind: str | None = None, words: bool | None = None) -> int:
        """The selection indexes ``generation.result.tokens`` (a decoder's fed tokens; an encoder-decoder's source)."""
        return self._gen.result.n_tokens

    def _span_view(self) -> tuple[str, int, int]:
        return ("encoder" if self._gen.is_encoder_decoder else "self"), self.layer, self.head

    @traitlets.validate("temperature", "top_k", "top_p", "min_p")
    def _valid_sampling(self, proposal: dict[str, Any]) -> Any:
        value = proposal["value"]
        if not hasattr(self, "_gen"):
            return value
        settings = {"temperature": self.temperature, "top_k": self.top_k, "top_p": self.top_p,
                    "min_p": self.min_p, proposal["trait"].name: value}
        k = self._gen.topk_ids.shape[1]
        checked(check_sampling, settings["temperature"], settings["top_k"] or k, settings["top_p"],
                settings["min_p"], k)
        return value

    def sampled(self, step: int | None = None) -> tuple[Any, list[str]]:
        """The playground at ``step`` (default the one shown): the sampler's distribution over the step's k
        candidates, float64 (k,), and the rule that cut each ("" kept)."""
        step = self.step if step is None else _check_step(step, self._gen.n_steps)
        return reshape(self._gen.topk_probs[step], temperature=self.temperature, top_k=self.top_k or None,
                       top_p=self.top_p, min_p=self.min_p)

    @traitlets.validate("lens")
    def _valid_lens(self, proposal: dict[str, Any]) -> bool:
        if proposal["value"] and hasattr(self, "_gen") and not self._gen.has_lens:
            raise traitlets.TraitError("lens=True needs a generation that kept the logit lens: generate with lens_k, "
                                       "e.g. aw.generate(prompt, model, lens_k=5)")
        return bool(proposal["value"])

    def step_lens(self, step: int | None = None) -> list[list[tuple[str, float]]]:
        """The logit lens the panel draws at ``step`` (default the one shown): per row (the embeddings, then each
        layer) its ``(token, probability)`` pairs (:meth:`GenerationResult.step_lens`)."""
        return self._gen.step_lens(self.step if step is None else step)

    @traitlets.validate("share_by")
    def _valid_share_by(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in SHARE_BY:
            raise traitlets.TraitError(f"share_by must be 'layer' (a line per layer), 'head' (a line per head of "
                                       f"layer) or 'role' (a line per role of a chat prompt), got "
                                       f"{proposal['value']!r}")
        if proposal["value"] == "role" and hasattr(self, "_gen") and not self._gen.roles:
            raise traitlets.TraitError("share_by='role' needs a generation with roles: generate from "
                                       "attnwidgets.runner.chat_prompt(...).text and pass g.with_roles(chat)")
        return str(proposal["value"])

    def share(self) -> tuple[Any, list[str]]:
        """``(lines, labels)``: what the span-share panel draws for the selection, (steps, lines) float32
        (:func:`attnwidgets.viewdata.selection.selection_share`). ValueError when nothing is selected or the
        selection reaches into the generated tokens."""
        return selection_share(self._gen, list(self.selection), self.combine, self.share_by, self.layer)

    @traitlets.observe("selection", "combine", "share_by", "layer")
    def _on_share(self, change: dict[str, Any]) -> None:
        if getattr(self, "_built", False):
            self._refresh_share()

    def _share_key(self) -> str:
        return share_key(list(self.selection), self.combine, self.share_by, self.layer)

    def _refresh_share(self) -> None:
        share = generation_share(self._gen, list(self.selection), self.combine, self.share_by, self.layer)
        self._share = {} if share is None else to_wire(share)

    @traitlets.validate("layer", "head", "kind", "step")
    def _valid(self, proposal: dict[str, Any]) -> Any:
        value = proposal["value"]
        if not hasattr(self, "_gen"):
            return value
        name = proposal["trait"].name
        if name == "step":
            if value < 0:
                value += self._gen.n_steps
            return _check_step(value, self._gen.n_steps)
        view = {"kind": self.kind, "layer": self.layer, "head": self.head, name: value}
        self._check(view["kind"], view["layer"], view["head"])
        return value

    def matrix(self, kind: str | None = None, layer: int | None = None, head: int | None = None) -> Any:
        """The (steps, keys) matrix the view draws (NaN: keys not yet written); current selection unless given."""
        return self._gen.steps_matrix(self.layer if layer is None else layer, self.head if head is None else head,
                                      self.kind if kind is None else kind)

    def _refresh(self) -> None:
        self._show(generation_state(self._gen, GenerationOptions(self.kind, self.layer, self.head)))

    def page_state(self) -> GenerationState | None:
        """The state of the matrix on screen: the synced one while the traits still choose it, else the same state
        of the kind, layer and head they choose now, which the page fetched by a "matrix" request (what
        :func:`attnwidgets.plots.paint` and the picture in the display bundle draw)."""
        state: GenerationState | None = super().page_state()
        if state is None or state.payload.key == f"{self.kind}/{self.layer}/{self.head}":
            return state
        return generation_state(self._gen, GenerationOptions(self.kind, self.layer, self.head))

    def _handlers(self) -> dict[str, Any]:
        return {"matrix": self._matrix_request}

    def _matrix_request(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        kind, layer, head = str(req["kind"]), int(req["layer"]), int(req["head"])
        self._check(kind, layer, head)
        return to_reply(generation_matrix(self._gen, GenerationOptions(kind, layer, head)))

    def _export_requests(self, scope: str) -> list[dict[str, Any]]:
        """Every (kind, layer, head or mean) a saved page can switch to, or only the one on screen."""
        if scope == "view":
            return [{"what": "matrix", "kind": self.kind, "layer": self.layer, "head": self.head}]
        return [{"what": "matrix", "kind": kind, "layer": layer, "head": head}
                for kind in self._gen.kinds for layer in range(self._shape(kind)[0])
                for head in range(-1, self._shape(kind)[1])]
