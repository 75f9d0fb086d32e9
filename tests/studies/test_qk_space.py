"""A head's query–key space across a corpus (AttentionViz): the normalisation and PCA against hand-computed cases,
the study against capture_qk on tiny random models, the view's payload and requests, the static twin, bad input."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
import attnwidgets.plots as awp
from attnwidgets.analysis.qk_space import QKSpace, build_qk_space, embed_2d, normalise_qk, pca_2d
from attnwidgets.studies import qk_space
from attnwidgets.viewdata.qk_space import qk_space_columns

TEXTS = ["The cat sat on the mat.", "A dog barked at the mailman yesterday evening.", "Birds sing."]


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# -- the normalisation, by hand -------------------------------------------------------------------------------------

def test_normalise_qk_on_a_hand_computed_case():
    q = np.array([[1.0, 0.0], [3.0, 0.0]])  # norms 1, 3: mean 2
    k = np.array([[0.0, 6.0], [0.0, 10.0]])  # norms 6, 10: mean 8 -> c = sqrt(8 / 2) = 2
    q2, k2, c, v = normalise_qk(q, k)
    assert c == 2.0
    assert q2.tolist() == [[2.0, 0.0], [6.0, 0.0]]  # c q
    # k / c = [[0, 3], [0, 5]], mean (0, 4); queries' mean (4, 0): v = (4, -4)
    assert v.tolist() == [4.0, -4.0]
    assert k2.tolist() == [[4.0, -1.0], [4.0, 1.0]]
    assert np.allclose(k2.mean(0), q2.mean(0))
    # the scaled (untranslated) vectors have equal mean norms
    assert np.isclose(np.linalg.norm(q2, axis=1).mean(), np.linalg.norm(k / c, axis=1).mean())


def test_normalisation_leaves_every_weight_unchanged():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(7, 5)) * 3 + 1
    k = rng.normal(size=(9, 5)) * 0.5 - 2
    q2, k2, c, _v = normalise_qk(q, k)
    assert c != pytest.approx(1.0)
    assert np.allclose(softmax(q @ k.T), softmax(q2 @ k2.T), atol=1e-12)
    assert not np.allclose(q @ k.T, q2 @ k2.T)  # the logits moved (by a constant per row), the weights did not


def test_normalise_qk_refuses_nan_and_mismatched_shapes():
    with pytest.raises(ValueError, match="NaN"):
        normalise_qk(np.array([[np.nan, 0.0]]), np.ones((1, 2)))
    with pytest.raises(ValueError, match="same d"):
        normalise_qk(np.ones((2, 3)), np.ones((2, 4)))


# -- PCA, by hand ---------------------------------------------------------------------------------------------------

def test_pca_of_points_on_a_line_is_their_distance_along_it():
    t = np.array([-2.0, -1.0, 0.5, 2.5])
    x = np.column_stack([t, t, np.zeros(4)]) + np.array([5.0, -1.0, 3.0])  # the line (1, 1, 0) through a point
    xy, ratio = pca_2d(x)
    centred = (t - t.mean()) * np.sqrt(2)  # distance along the line from the centroid
    assert np.allclose(xy[:, 0], centred)  # sign: the largest |coordinate| (2.5's) is positive
    assert np.allclose(xy[:, 1], 0, atol=1e-12)
    assert np.allclose(ratio, [1.0, 0.0])


def test_pca_of_a_rectangle_splits_the_variance_9_to_1():
    xy, ratio = pca_2d(np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 2.0], [6.0, 2.0]]))
    assert np.allclose(np.abs(xy), [[3, 1]] * 4)
    assert np.allclose(ratio, [0.9, 0.1])


def test_embed_2d_methods_and_their_errors(monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(20, 4))
    with pytest.raises(ValueError, match="unknown method 'mds'"):
        embed_2d(x, "mds")
    xy, ratio = embed_2d(x, "tsne")
    assert xy.shape == (20, 2) and ratio is None and np.isfinite(xy).all()
    try:
        import umap  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install umap-learn"):
            embed_2d(x, "umap")
    real = builtins.__import__

    def no_sklearn(name, *args, **kwargs):
        if name.startswith("sklearn"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sklearn)
    import sys

    for mod in [m for m in sys.modules if m.startswith("sklearn")]:
        monkeypatch.delitem(sys.modules, mod)
    with pytest.raises(ImportError, match=r"method='tsne' needs the 'scikit-learn' package.*pip install scikit-learn"):
        embed_2d(x, "tsne")


def test_build_qk_space_rows_and_the_attention_a_key_receives():
    q = [np.eye(3), np.eye(2, 3)]
    causal = np.tril(np.ones((3, 3), bool))
    w0 = np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0.2, 0.2, 0.6]])
    w1 = np.array([[0.25, 0.75], [0.5, 0.5]])
    s = build_qk_space(q, q, [w0, w1], [["a", "b", "c"], ["d", "e"]], masks=[causal, np.ones((2, 2), bool)],
                       layer=1, head=2, model="toy")
    assert (s.layer, s.head, s.n_points, s.n_sentences) == (1, 2, 10, 2)
    assert s.kind.tolist() == [0] * 5 + [1] * 5
    assert s.text == ["a", "b", "c", "d", "e"] * 2
    assert s.position.tolist() == [0, 0.5, 1, 0, 1] * 2
    assert np.isnan(s.received[:5]).all()
    # key a: seen by all 3 queries (1 + .5 + .2) / 3; key b: by 2 (.5 + .2) / 2; key c: by 1 (.6); d, e: column means
    assert np.allclose(s.received[5:], [1.7 / 3, 0.35, 0.6, 0.375, 0.625])
    assert s.explained is not None and 0 < s.explained.sum() <= 1 + 1e-9
    frame = s.frame()
    assert frame.shape == (10, 8) and frame["kind"].tolist()[:6] == ["query"] * 5 + ["key"]


def test_fewer_than_two_sentences_is_refused():
    with pytest.raises(ValueError, match="at least 2 sentences, got 1"):
        build_qk_space([np.eye(2)], [np.eye(2)], [np.eye(2)], [["a", "b"]])


# -- the study against capture_qk -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fixture,layer,head", [("tiny_bert", 1, 2), ("tiny_gpt2", 0, 3), ("tiny_llama", 1, 1)])
def test_study_matches_capture_qk_sentence_by_sentence(request, fixture, layer, head):
    model = request.getfixturevalue(fixture)
    # one padded batch of different lengths: padding must not leak into any sentence
    space = qk_space(TEXTS, layer, head, model=model, batch_size=3)
    assert isinstance(space, QKSpace) and space.n_sentences == 3
    queries, keys, weights = [], [], []
    for s, text in enumerate(TEXTS):
        cap = aw.runner.capture_qk(text, model=model, layer=layer).head(head)
        assert space.tokens[s] == aw.run(text, model=model).tokens
        assert np.allclose(space.weights[s], cap["weights"], atol=1e-5)
        queries.append(cap["q"])
        keys.append(cap["k"])  # under GQA, the key head this query head reads
        weights.append(cap["weights"])
        mine = (space.sentence == s) & (space.kind == 1)
        n = len(space.tokens[s])
        allowed = np.ones((n, n), bool) if fixture == "tiny_bert" else np.tril(np.ones((n, n), bool))  # causal
        expect = (cap["weights"] * allowed).sum(0) / allowed.sum(0)
        assert np.allclose(space.received[mine], expect, atol=1e-5)
    again = build_qk_space(queries, keys, weights, space.tokens)
    assert np.allclose(space.vectors, again.vectors, atol=1e-4)
    assert np.allclose(space.xy, again.xy, atol=1e-3)


def test_study_bad_input(tiny_bert):
    with pytest.raises(ValueError, match="at least 2 sentences, got 1"):
        qk_space(["one sentence only"], 0, 0, model=tiny_bert)
    with pytest.raises(TypeError, match="not one string"):
        qk_space("one sentence only", 0, 0, model=tiny_bert)
    with pytest.raises(IndexError, match=r"layer 2 is out of range: the model has 2 layers \(0..1\)"):
        qk_space(TEXTS, 2, 0, model=tiny_bert)
    with pytest.raises(IndexError, match=r"head 4 is out of range: the model has 4 heads \(0..3\) per layer"):
        qk_space(TEXTS, 0, 4, model=tiny_bert)
    with pytest.raises(TypeError, match="layer must be an integer"):
        qk_space(TEXTS, 0.5, 0, model=tiny_bert)
    with pytest.raises(ValueError, match="unknown method 'isomap'"):
        qk_space(TEXTS, 0, 0, model=tiny_bert, method="isomap")
    with pytest.raises(ValueError, match="color='pos' needs parts of speech"):
        qk_space(TEXTS, 0, 0, model=tiny_bert, color="pos")


def test_tsne_asked_for_but_not_installed(tiny_bert, monkeypatch):
    import importlib

    real = importlib.import_module

    def missing(name, *args, **kwargs):
        if name.startswith("sklearn"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", missing)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        qk_space(TEXTS, 0, 0, model=tiny_bert, method="tsne")


def test_parts_of_speech_from_a_conllu_file(tiny_bert):
    from attnwidgets.data import ud_sample_path

    space = qk_space(ud_sample_path(), 0, 1, model=tiny_bert, color="pos")
    assert space.upos is not None and space.color == "pos"
    tags = dict(zip(space.text, space.upos, strict=True))
    assert tags["[CLS]"] == "special" and tags["cat"] == "NOUN" and tags["the"] == "DET"
    points, names = qk_space_columns(space)
    assert "NOUN" in names["pos"] and (points[:, 8] >= -1).all()


# -- the view -------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def space() -> QKSpace:
    rng = np.random.default_rng(3)
    tokens = [["[CLS]", "a", "cat", "[SEP]"], ["[CLS]", "the", "dog", "ran", "[SEP]"], ["[CLS]", "a", "[SEP]"]]
    q = [rng.normal(size=(len(t), 6)) for t in tokens]
    k = [rng.normal(size=(len(t), 6)) for t in tokens]
    w = [softmax(a @ b.T) for a, b in zip(q, k, strict=True)]
    return build_qk_space(q, k, w, tokens, layer=1, head=0, model="toy")


def test_view_payload_is_one_packed_table(space):
    view = aw.QKSpaceView(space)
    p = view._payload["points"]
    assert p["dtype"] == "float32" and p["shape"] == [24, 9]
    table = np.frombuffer(bytes(p["buffer"]), "<f4").reshape(24, 9)
    assert np.allclose(table[:, :2], space.xy)
    assert table[:, 2].tolist() == space.kind.tolist() and table[:, 3].tolist() == space.sentence.tolist()
    assert view._meta["tokens"] == space.tokens and view._meta["token_names"][:2] == ["[CLS]", "[SEP]"]


def test_view_answers_a_sentence_with_its_map_and_refuses_bad_values(space):
    view = aw.QKSpaceView(space, color="attention")
    reply, buffers = view.answer({"what": "sentence", "sentence": 1})
    assert reply["shape"] == [5, 5]
    assert np.allclose(np.frombuffer(bytes(buffers[0]), "<f4").reshape(5, 5), space.weights[1])
    with pytest.raises(ValueError, match="sentence 3 is out of range"):
        view.answer({"what": "sentence", "sentence": 3})
    assert view._export_requests("view") == []
    view.sentence = 2
    assert view._export_requests("view") == [{"what": "sentence", "sentence": 2}]
    assert len(view._export_requests("all")) == 3
    with pytest.raises(traitlets.TraitError, match="sentence 3 is out of range: there are 3 sentences"):
        view.sentence = 3
    with pytest.raises(traitlets.TraitError, match="unknown color 'layer'"):
        view.color = "layer"
    with pytest.raises(traitlets.TraitError, match="color='pos' needs parts of speech"):
        view.color = "pos"
    with pytest.raises(TypeError, match="QKSpaceView shows a QKSpace"):
        aw.QKSpaceView(np.zeros((3, 2)))


# -- the static twin ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("color", ["position", "token", "attention"])
def test_twin_draws_every_query_filled_and_every_key_as_a_ring(space, color):
    fig = awp.plot_qk_space(space, color, sentence=1)
    ax = fig.axes[0]
    def is_ring(c) -> bool:
        return not len(c.get_facecolors()) or c.get_facecolors()[:, 3].max() == 0

    filled = sum(len(c.get_offsets()) for c in ax.collections if not is_ring(c))
    rings = [c for c in ax.collections if is_ring(c)]
    n_q = int((space.kind == 0).sum())
    outline = int((space.sentence == 1).sum())  # the marked sentence: rings around its points
    assert filled == n_q
    assert sum(len(c.get_offsets()) for c in rings) == (space.n_points - n_q) + outline
    assert " ".join(ax.get_title().split()).endswith(f"coloured by {color}")


def test_twin_refuses_a_sentence_out_of_range(space):
    with pytest.raises(ValueError, match="sentence 9 is out of range: there are 3 sentences"):
        awp.plot_qk_space(space, sentence=9)


def test_the_forward_stops_after_the_layer_it_needs(tiny_bert):
    from attnwidgets.runner import control, get_runner

    runner = get_runner(tiny_bert)
    ran: set[int] = set()
    handles = [m.register_forward_hook(lambda *_a, layer=site.layer: ran.add(layer))
               for m in runner.model.modules() if (site := control.site_of(m)) is not None]
    try:
        qk_space(TEXTS, 0, 1, model=runner)
        assert ran == {0}  # layer 1 never ran
        qk_space(TEXTS, 1, 1, model=runner)
        assert ran == {0, 1}
    finally:
        for h in handles:
            h.remove()


def test_the_twins_legend_shows_a_right_to_left_override_as_a_marker():
    # The legend drew the token itself, so U+202E reversed the rest of its entry (the page's legend too).
    q = [np.eye(3), np.eye(2, 3)]
    w = [np.full((3, 3), 1 / 3), np.full((2, 2), 0.5)]
    s = build_qk_space(q, q, w, [["a", "\u202eevil", "c"], ["d", "e"]], layer=0, head=0, model="toy")
    fig = awp.plot_qk_space(s, "token")
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "⟨U+202E⟩evil" in texts and not any("\u202e" in t for t in texts)
