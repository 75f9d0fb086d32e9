"""One contract for every view (STYLE.md): the same first argument, the same names, types, defaults and messages for
the same ideas, one payload trait, and a page from ``save_html``.

Every view class is built through one parametrised fixture from tiny inputs (non-square attention where the view
can show it). A new view joins by adding a :class:`ViewCase` to ``VIEWS``; ``test_every_view_is_covered`` fails
until it does.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.analysis import CorpusStats
from attnwidgets.generation_result import GenerationResult
from attnwidgets.qk_result import QKCapture
from attnwidgets.result import AttentionResult
from attnwidgets.viewdata.checks import (
    THEMES,
    WORDS_ENCODER_DECODER,
    check_head,
    check_int,
    check_layer,
    check_theme,
)
from attnwidgets.viewdata.views.routers import check_router_layer
from attnwidgets.widgets import AttnWidget
from attnwidgets.widgets._base import Colormap, Index

TOKENS = ["[CLS]", "the", "play", "##ing", "cat", "[SEP]"]
WORD_IDS = np.array([-1, 0, 1, 1, 2, -1])

#: The shared traits: name -> (trait class, class default). HeadView's head defaults to -1 (every head's lines).
SHARED: dict[str, tuple[type, Any]] = {
    "layer": (Index, 0),
    "head": (Index, 0),
    "kind": (traitlets.Unicode, "self"),
    "words": (traitlets.Bool, False),
    "colormap": (Colormap, ""),
    "theme": (traitlets.Unicode, "light"),
}

#: Payload traits of the old design; none may come back under its own name.
OLD_PAYLOADS = ("_initial", "_stats", "_thumbs", "_panels", "_mask", "_heatmap", "_points")


@dataclass
class Inputs:
    """Tiny inputs every view is built from (made once per module)."""

    encdec: AttentionResult  # 2 layers x 3 heads; cross attention 7 target x 5 source tokens
    bert: AttentionResult  # the tiny BERT of conftest.py
    results: list[AttentionResult]  # two 2 x 3 results with word ids
    corpus: CorpusStats
    capture: QKCapture  # 2 heads, 5 queries x 7 keys (grouped: 1 kv head)
    generation: GenerationResult  # a decoder's 2 layers x 3 heads: prompt of 3 tokens, 4 generated


@dataclass
class ViewCase:
    """How to build one view and what its contract says."""

    cls: type[AttnWidget]
    first: str  # the first positional parameter
    make: Callable[..., AttnWidget]  # (inputs, **traits) -> widget
    shared: tuple[str, ...]  # which of SHARED it has
    shape: tuple[int, int] | None = None  # (layers, heads) it selects among, when it has layer/head
    head_mean: bool = True  # head=-1 is allowed (the mean, the whole layer, every head)
    defaults: dict[str, Any] = field(default_factory=dict)  # class defaults that differ from SHARED
    layer_error: Callable[[Any], str] | None = None  # the message for a bad layer, when not check_layer's

    @property
    def id(self) -> str:
        return self.cls.__name__


def _qk_layer_error(value: Any) -> str:
    check_int(value, "layer")
    return f"layer {value} was not captured"


VIEWS: list[ViewCase] = [
    ViewCase(aw.AttentionHeatmap, "result", lambda i, **kw: aw.AttentionHeatmap(i.encdec, kind="cross", **kw),
             ("layer", "head", "kind", "words", "colormap", "theme"), (2, 3)),
    ViewCase(aw.ModelView, "result", lambda i, **kw: aw.ModelView(i.encdec, kind="cross", **kw),
             ("layer", "head", "kind", "colormap", "theme"), (2, 3), head_mean=False),
    ViewCase(aw.HeadView, "result", lambda i, **kw: aw.HeadView(i.bert, **kw),
             ("layer", "head", "kind", "words", "theme"), None, defaults={"head": -1}),
    ViewCase(aw.EntropyBars, "result", lambda i, **kw: aw.EntropyBars(i.bert, **kw),
             ("layer", "head", "words", "theme"), None),
    ViewCase(aw.HeadStatsGrid, "result", lambda i, **kw: aw.HeadStatsGrid(i.corpus, **kw),
             ("layer", "head", "words", "colormap", "theme"), (2, 3)),
    ViewCase(aw.HeadClusterMap, "result", lambda i, **kw: aw.HeadClusterMap(i.results, **kw),
             ("layer", "head", "words", "colormap", "theme"), (2, 3)),
    ViewCase(aw.QKStepThrough, "capture", lambda i, **kw: aw.QKStepThrough(i.capture, **kw),
             ("layer", "head", "colormap", "theme"), (1, 2), head_mean=False, layer_error=_qk_layer_error),
    ViewCase(aw.PositionalExplorer, "encoding", lambda i, **kw: aw.PositionalExplorer("alibi", length=6, **kw),
             ("head", "colormap", "theme"), (1, 8), head_mean=False),
    ViewCase(aw.MaskExplorer, "mask", lambda i, **kw: aw.MaskExplorer("sliding_window", length=6, **kw),
             ("theme",)),
    ViewCase(aw.AttentionProfile, "result", lambda i, **kw: aw.AttentionProfile(i.encdec, kind="cross", **kw),
             ("layer", "head", "kind", "colormap", "theme"), (2, 3), defaults={"head": -1}),
    # What an ablation shows is texts (every change re-runs the model); a result stands for its text and model.
    ViewCase(aw.GenerationView, "generation", lambda i, **kw: aw.GenerationView(i.generation, **kw),
             ("layer", "head", "kind", "colormap", "theme"), (2, 3), defaults={"head": -1}),
    ViewCase(aw.AblationWidget, "texts", lambda i, **kw: aw.AblationWidget(i.bert, watch="drift", **kw),
             ("layer", "head", "kind", "colormap", "theme"), (2, 4), head_mean=False),
    ViewCase(aw.AttentionCompare, "a", lambda i, **kw: aw.AttentionCompare(i.results[0], i.results[1], **kw),
             ("layer", "head", "kind", "words", "colormap", "theme"), (2, 3)),
    # What fill-in-the-mask shows is a text with [MASK] (the bundled model's shipped head; 6 layers x 12 heads).
    ViewCase(aw.FillMask, "text", lambda i, **kw: aw.FillMask("The cat sat on the [MASK].", **kw),
             ("layer", "head", "theme"), (6, 12), defaults={"head": -1}),
    # What patching shows is a PatchingResult (patch_heads on two texts of the tiny BERT: it runs both again).
    ViewCase(aw.widgets.PatchingView, "patching", lambda i, **kw: aw.widgets.PatchingView(_patching(i), **kw),
             ("layer", "head", "kind", "words", "colormap", "theme"), (2, 4)),
    # What a QK space shows is one head's queries and keys over a corpus (no layer/head to switch: a new study).
    ViewCase(aw.QKSpaceView, "space", lambda i, **kw: aw.QKSpaceView(_qk_space(), **kw), ("colormap", "theme")),
    # What a router view shows is a MoE model's routing; its layers are those with a router (here 0 and 1).
    ViewCase(aw.RouterView, "routes", lambda i, **kw: aw.RouterView(_routes(), **kw), ("layer", "theme"), (2, 0),
             layer_error=lambda v: _message(check_router_layer, v, [0, 1])),
]


_PATCHED: dict[str, Any] = {}


def _patching(i: Inputs) -> Any:
    """patch_heads of the tiny BERT's text against itself (made once): every tokenizer gives both the same length."""
    key = str(id(i))
    if key not in _PATCHED:
        from attnwidgets.runner.runner import runner_for
        from attnwidgets.studies import patch_heads

        runner = runner_for(i.bert.model)
        answer = None
        if runner.head == "causal-lm":  # scored by a token: one of the text's own
            ids = runner.encode([i.bert.text]).inputs["input_ids"][0].tolist()
            answer = runner.tokenizer.decode([ids[-1]])
        _PATCHED[key] = patch_heads(i.bert.text, i.bert.text, answer=answer, model=runner)
    return _PATCHED[key]


def _routes() -> Any:
    from attnwidgets.router_result import RouterResult

    rng = np.random.default_rng(1)
    experts = np.stack([[rng.permutation(4)[:2] for _ in range(5)] for _ in range(2)])  # (2 layers, 5 tokens, top 2)
    return RouterResult(list("abcde"), [0, 1], rng.normal(size=(2, 5, 4)).astype(np.float32), experts,
                        np.full(experts.shape, 0.5, np.float32))


def _qk_space() -> Any:
    from attnwidgets.analysis.qk_space import build_qk_space

    rng = np.random.default_rng(0)
    q = [rng.normal(size=(n, 4)) for n in (3, 5)]
    w = [np.full((n, n), 1 / n) for n in (3, 5)]
    return build_qk_space(q, q, w, [list("abc"), list("defgh")])

IDS = [v.id for v in VIEWS]


@pytest.fixture(scope="module")
def inputs(tiny_bert: str) -> Inputs:
    rng = np.random.default_rng(0)
    n, m = 5, 7
    enc = rng.dirichlet(np.ones(n), size=(2, 3, n)).astype(np.float32)
    dec = np.tril(rng.random((2, 3, m, m))).astype(np.float32)
    dec /= dec.sum(-1, keepdims=True)
    cross = rng.dirichlet(np.ones(n), size=(2, 3, m)).astype(np.float32)
    encdec = AttentionResult.from_arrays(enc, list("abcde"), kind="encoder-decoder", target_tokens=list("ABCDEFG"),
                                         decoder_attention=dec, cross_attention=cross)
    results = [AttentionResult.from_arrays(rng.dirichlet(np.ones(len(TOKENS)), size=(2, 3, len(TOKENS)))
                                           .astype(np.float32), TOKENS, word_ids=WORD_IDS) for _ in range(2)]
    corpus = CorpusStats(patterns=False)
    corpus.update(results)
    capture = _capture(rng, n, m)
    bert = aw.run("The cat sat on the mat.", model=tiny_bert)
    return Inputs(encdec, bert, results, corpus, capture, _generation(rng))


def _generation(rng: np.random.Generator) -> GenerationResult:
    """A decoder's generation by hand: prompt a b c, generated D E F G (fed: a b c D E F)."""
    att = np.tril(rng.random((2, 3, 6, 6))).astype(np.float32) + np.eye(6, dtype=np.float32)
    att /= att.sum(-1, keepdims=True)
    r = AttentionResult.from_arrays(att, list("abcDEF"), kind="decoder")
    probs = np.sort(rng.dirichlet(np.ones(3), size=4).astype(np.float32), 1)[:, ::-1].copy()
    return GenerationResult(r, "a b c", list("abc"), np.arange(3), list("DEFG"), np.arange(3, 7),
                            np.arange(12).reshape(4, 3), probs, [["D", "x", "y"], ["E", "x", "y"], ["F", "x", "y"],
                                                                  ["G", "x", "y"]], text="DEFG")


def _capture(rng: np.random.Generator, n: int, m: int) -> QKCapture:
    """2 query heads sharing 1 kv head, n queries x m keys."""
    q, k, v = rng.normal(size=(2, n, 4)), rng.normal(size=(1, m, 4)), rng.normal(size=(1, m, 4))
    return QKCapture.from_vectors(q, k, v, [f"q{i}" for i in range(n)], key_tokens=[f"k{i}" for i in range(m)],
                                  mask=np.ones((n, m), bool))


@pytest.fixture(params=VIEWS, ids=IDS)
def view(request: pytest.FixtureRequest, inputs: Inputs) -> tuple[ViewCase, Callable[..., AttnWidget]]:
    """(the case, a factory that builds the view from the tiny inputs with the given traits)."""
    case: ViewCase = request.param
    return case, lambda **kw: case.make(inputs, **kw)


def _shape(case: ViewCase, w: AttnWidget) -> tuple[int, int]:
    if case.shape is not None:
        return case.shape
    shape = getattr(w, "selection_shape", None)
    if shape is None:  # HeadView: the shown result's kind
        attention, _, _ = w.result.attention_of(w.kind)  # type: ignore[attr-defined]
        shape = attention.shape[:2]
    return int(shape[0]), int(shape[1])


def _message(check: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    try:
        check(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        return str(exc)
    raise AssertionError(f"{check.__name__}{args} accepted the value")


def test_every_view_is_covered():
    exported = {name for name in aw.widgets.__all__ if isinstance(getattr(aw.widgets, name), type)
                and issubclass(getattr(aw.widgets, name), AttnWidget) and name != "AttnWidget"}
    assert exported == {v.id for v in VIEWS}


def test_first_argument_is_what_the_view_shows(view):
    case, _ = view
    params = [p for p in inspect.signature(case.cls.__init__).parameters.values() if p.name != "self"]
    assert params[0].name == case.first
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD


def test_shared_traits_have_one_name_type_and_default(view):
    case, make = view
    traits = case.cls.class_traits()
    assert {name for name in SHARED if name in traits} == set(case.shared)
    for name in case.shared:
        kind, default = SHARED[name]
        trait = traits[name]
        assert isinstance(trait, kind), f"{case.id}.{name} is a {type(trait).__name__}, not a {kind.__name__}"
        assert trait.metadata.get("sync"), f"{case.id}.{name} is not synced to the page"
        assert trait.default_value == case.defaults.get(name, default), f"{case.id}.{name} default"
    w = make()
    assert w.theme in THEMES


def test_one_payload_trait(view):
    case, make = view
    w = make()
    assert isinstance(case.cls.class_traits()["_payload"], traitlets.Dict)
    assert "_payload" in w.trait_names(sync=True)
    assert w._payload, f"{case.id} sent no payload"
    assert not set(OLD_PAYLOADS) & set(w.trait_names()), f"{case.id} keeps an old payload trait"


@pytest.mark.parametrize("bad", [True, None, 1.5, -1, "one", "oob"])
def test_bad_layer_is_a_trait_error_with_the_checks_message(view, bad):
    case, make = view
    if "layer" not in case.shared:
        pytest.skip(f"{case.id} has no layer")
    w = make()
    n_layers, _ = _shape(case, w)
    value = n_layers if bad == "oob" else bad
    if case.layer_error is not None and isinstance(value, int) and not isinstance(value, bool):
        expected = case.layer_error(value)
    else:
        expected = _message(check_layer, value, n_layers)
    with pytest.raises(traitlets.TraitError) as exc:
        make(layer=value)
    assert str(exc.value).startswith(expected)
    before = w.layer
    with pytest.raises(traitlets.TraitError) as exc:
        w.layer = value
    assert str(exc.value).startswith(expected)
    assert w.layer == before, "a refused layer leaves the view as it was"


@pytest.mark.parametrize("bad", [True, 0.5, "oob", -2])
def test_bad_head_is_a_trait_error_with_the_checks_message(view, bad):
    case, make = view
    if "head" not in case.shared:
        pytest.skip(f"{case.id} has no head")
    w = make()
    _, n_heads = _shape(case, w)
    value = n_heads if bad == "oob" else bad
    expected = _message(check_head, value, n_heads, allow_mean=case.head_mean)
    with pytest.raises(traitlets.TraitError) as exc:
        make(head=value)
    assert str(exc.value) == expected
    with pytest.raises(traitlets.TraitError) as exc:
        w.head = value
    assert str(exc.value) == expected


def test_head_minus_one_follows_the_contract(view):
    case, make = view
    if "head" not in case.shared:
        pytest.skip(f"{case.id} has no head")
    if case.head_mean:
        assert make(head=-1).head == -1
    else:
        with pytest.raises(traitlets.TraitError, match=r"head -1 is out of range"):
            make(head=-1)


def test_unknown_keyword_is_a_type_error(view):
    _, make = view
    with pytest.raises(TypeError, match="unexpected keyword"):
        make(colour="red")


def test_bad_theme_and_colormap(view):
    case, make = view
    with pytest.raises(traitlets.TraitError) as exc:
        make(theme="nope")
    assert str(exc.value) == _message(check_theme, "nope")
    w = make(theme="lecture")
    assert w.theme == "lecture"
    if "colormap" in case.shared:
        with pytest.raises(traitlets.TraitError, match="unknown colormap 'jet'"):
            make(colormap="jet")
        allowed = case.cls.class_traits()["colormap"].allowed
        w.colormap = allowed[-1]
        assert w.colormap == allowed[-1]


def test_save_html_writes_a_page(view, tmp_path):
    case, make = view
    w = make()
    assert isinstance(w._export_requests("view"), list) and isinstance(w._export_requests("all"), list)
    path = aw.save_html(w, tmp_path / f"{case.id}.html")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and case.id in text
    assert '"_payload"' in text, "the page carries the payload"


def test_the_first_argument_has_one_name(inputs):
    """The pre-release spellings (source=, captures=) are gone: the first argument is required, and an old keyword is
    refused with the names the view takes."""
    for cls in (aw.EntropyBars, aw.HeadStatsGrid, aw.HeadClusterMap):
        assert cls(inputs.results).selection_shape == (2, 3)
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'result'"):
            cls(source=inputs.results)
        with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['source'\]"):
            cls(inputs.results, source=inputs.results)
    assert aw.QKStepThrough(inputs.capture).head == 0
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'capture'"):
        aw.QKStepThrough(captures=inputs.capture)


def test_head_view_head_and_heads_stay_in_step(inputs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # heads= is not deprecated: it is the page's several-head selection
        w = aw.HeadView(inputs.encdec, heads=[1])
    assert w.head == 1
    w.head = -1
    assert w.heads == [0, 1, 2]
    w.head = 2
    assert w.heads == [2]
    w.heads = [0, 2]
    assert w.head == -1
    with pytest.raises(traitlets.TraitError, match="head 3 is out of range"):
        w.heads = [3]


@pytest.mark.parametrize("cls", [aw.AttentionHeatmap, aw.HeadView], ids=lambda c: c.__name__)
def test_word_level_of_an_encoder_decoder_is_refused_with_one_message(inputs, cls):
    """Word level has no decoder or cross attention: AttentionHeatmap took words=True and save_html failed later with
    "this result has no 'decoder' attention: it came from a encoder-decoder model"; now both views refuse it when it
    is set, with viewdata.checks' one message."""
    with pytest.raises(traitlets.TraitError) as exc:
        cls(inputs.encdec, words=True)
    assert str(exc.value) == WORDS_ENCODER_DECODER
    w = cls(inputs.encdec)
    with pytest.raises(traitlets.TraitError, match="not encoder-decoders"):
        w.words = True
    assert w.words is False and w._error == ""
