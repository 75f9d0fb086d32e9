"""Head roles (previous-token, duplicate-token, induction) on repeated random tokens: scores known by construction
(hand-made attention, and a real decoder whose attention is forced through the runner's hooks), shapes and sanity
on tiny GPT-2 and Llama (GQA), the ablation check, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnwidgets as aw
from attnwidgets.analysis.roles import ROLES, HeadRoles, role_positions, role_scores


def _pattern(kind: str, n: int, prefix: int = 1) -> np.ndarray:
    """(T, T) attention that is exactly one role (rows the role leaves undefined attend to themselves)."""
    T = prefix + 2 * n
    a = np.zeros((T, T))
    for i in range(T):
        if kind == "previous_token":
            j = i - 1 if i >= 1 else 0
        elif kind == "duplicate_token":
            j = i - n if i >= prefix + n else i
        elif kind == "induction":
            j = i - n + 1 if i >= prefix + n else i
        else:
            j = i
        a[i, j] = 1.0
    return a


@pytest.mark.parametrize("prefix", [0, 1])
def test_exact_patterns_score_one_on_their_role(prefix):
    n = 5
    heads = np.stack([_pattern(k, n, prefix) for k in (*ROLES, "self")])[None]  # (1, 4, T, T)
    s = role_scores(heads, n, prefix)
    assert s["previous_token"][0].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert s["duplicate_token"][0].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert s["induction"][0].tolist() == [0.0, 0.0, 1.0, 0.0]


def test_uniform_causal_head_by_hand():
    n, T = 3, 7
    a = np.tril(np.ones((T, T)))
    a /= a.sum(1, keepdims=True)
    s = role_scores(a[None, None], n)
    assert s["previous_token"][0, 0] == pytest.approx(np.mean([1 / (i + 1) for i in range(1, T)]))
    assert s["induction"][0, 0] == pytest.approx(np.mean([1 / (i + 1) for i in range(4, T)]))
    assert s["duplicate_token"][0, 0] == pytest.approx(s["induction"][0, 0])


def test_batch_is_averaged_and_positions_stated():
    n = 4
    both = np.stack([_pattern("induction", n)[None, None], _pattern("previous_token", n)[None, None]])
    s = role_scores(both, n)
    assert s["induction"][0, 0] == pytest.approx(0.5 + 0.5 * 0.0)
    q, k = role_positions(n)["induction"]
    assert (q - k).tolist() == [n - 1] * n


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="two copies of 3 tokens has 7"):
        role_scores(np.zeros((1, 1, 6, 6)), 3)
    with pytest.raises(ValueError, match="seq_len must be a positive integer"):
        role_scores(np.zeros((1, 1, 1, 1)), 0)
    with pytest.raises(ValueError, match="prefix"):
        role_positions(3, prefix=2)


class _Force:
    """An AblationLike whose hook replaces head (layer, head)'s weights by a fixed pattern."""

    def __init__(self, patterns: dict[tuple[int, int], np.ndarray]):
        self.patterns = patterns

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        return True

    def hooks(self, info):
        def hook(call, weights):
            w = weights.clone()
            for (layer, head), p in self.patterns.items():
                if call.site.layer == layer:
                    w[:, head] = torch.as_tensor(p, dtype=w.dtype)
            return w

        return [hook]


@pytest.mark.parametrize("fixture", ["tiny_gpt2", "tiny_llama"])
def test_forced_heads_in_a_real_decoder_score_exactly(fixture, request):
    path = request.getfixturevalue(fixture)
    n = 6
    forced = _Force({(0, 1): _pattern("previous_token", n), (1, 2): _pattern("induction", n),
                     (1, 0): _pattern("duplicate_token", n)})
    roles = aw.studies.head_roles(path, seq_len=n, n_seqs=3, ablation=forced)
    assert roles.shape == (2, 4)
    assert roles.scores["previous_token"][0, 1] == pytest.approx(1.0, abs=1e-6)
    assert roles.scores["induction"][1, 2] == pytest.approx(1.0, abs=1e-6)
    assert roles.scores["duplicate_token"][1, 0] == pytest.approx(1.0, abs=1e-6)
    assert roles.top("induction", 1) == [(1, 2)]
    assert roles.top("previous_token", 1) == [(0, 1)]
    # the other heads are the model's own, random: nowhere near 1
    other = np.delete(roles.scores["induction"].reshape(-1), 1 * 4 + 2)
    assert other.max() < 0.6


@pytest.mark.parametrize("fixture", ["tiny_gpt2", "tiny_llama"])
def test_random_decoders_shapes_and_sanity(fixture, request):
    path = request.getfixturevalue(fixture)
    roles = aw.studies.head_roles(path, seq_len=8, n_seqs=4, seed=1)
    assert isinstance(roles, HeadRoles) and roles.shape == (2, 4) and roles.prefix == 1
    for v in roles.scores.values():
        assert v.shape == (2, 4) and np.all((v >= 0) & (v <= 1))
    # equal to recomputing from the example's dense attention for a one-sequence run
    one = aw.studies.head_roles(path, seq_len=8, n_seqs=1, seed=1)
    again = role_scores(one.example.attention, 8, 1)
    for k in ROLES:
        np.testing.assert_allclose(one.scores[k], again[k], atol=1e-6)
    # the repeated block really is repeated, with no special tokens and no duplicates inside it
    ids = roles.extra["token_ids"]
    assert ids.shape == (4, 17)
    np.testing.assert_array_equal(ids[:, 1:9], ids[:, 9:])
    assert all(len(set(r)) == 8 for r in ids[:, 1:9].tolist())
    assert roles.example.tokens[0] == "<|endoftext|>" and roles.example.model.kind == "decoder"
    assert roles.extra["induction_loss"].shape == (4,)
    frame = roles.frame()
    assert list(frame.columns) == ["layer", "head", *ROLES] and len(frame) == 8
    row = frame[(frame["layer"] == 1) & (frame["head"] == 3)]
    assert row["induction"].item() == roles.scores["induction"][1, 3]
    # seeded
    np.testing.assert_array_equal(aw.studies.head_roles(path, seq_len=8, n_seqs=4, seed=1).scores["induction"],
                                  roles.scores["induction"])


def test_encoders_and_encoder_decoders_are_refused(tiny_bert, tiny_bart):
    with pytest.raises(ValueError, match=r"needs a decoder.*is an encoder"):
        aw.studies.head_roles(tiny_bert)
    with pytest.raises(ValueError, match=r"needs a decoder.*is an encoder-decoder"):
        aw.studies.head_roles(tiny_bart)
    with pytest.raises(ValueError, match="needs a decoder"):
        aw.studies.confirm_role(None)


def test_too_long_or_bad_counts_are_refused(tiny_gpt2):
    with pytest.raises(ValueError, match="takes at most 64"):
        aw.studies.head_roles(tiny_gpt2, seq_len=40)
    with pytest.raises(ValueError, match="n_seqs must be an integer"):
        aw.studies.head_roles(tiny_gpt2, n_seqs=0)
    with pytest.raises(ValueError, match="unknown role"):
        aw.studies.head_roles(tiny_gpt2, seq_len=4, n_seqs=1).top("copying")


def test_confirm_role_ablates_the_top_heads(tiny_gpt2):
    roles = aw.studies.head_roles(tiny_gpt2, seq_len=8, n_seqs=4)
    check = aw.studies.confirm_role(tiny_gpt2, roles, k=2, n_random=3, seq_len=8, n_seqs=4)
    assert check.heads == roles.top("induction", 2)
    assert len(check.random_heads) == 3 and all(len(h) == 2 and not set(h) & set(check.heads)
                                                for h in check.random_heads)
    # the losses are real: the ablated runs differ from the clean one, and the clean loss matches induction_loss
    assert check.clean == pytest.approx(aw.studies.induction_loss(tiny_gpt2, seq_len=8, n_seqs=4, seed=1))
    assert check.ablated != check.clean
    f = check.frame()
    assert len(f) == 5 and f["rise"].iloc[0] == 0.0
    assert "raises the induction loss" in repr(check)


def _toy_roles():
    from attnwidgets.analysis.roles import HeadRoles

    n = 3
    ex = np.stack([_pattern("previous_token", n), _pattern("induction", n)])[None].astype(np.float32)
    result = aw.AttentionResult.from_arrays(ex, ["<s>", "a", "b", "c", "a", "b", "c"], kind="decoder")
    scores = role_scores(ex, n)
    return HeadRoles(scores, result, n, 1, 1, 0, "toy")


def test_view_opens_the_best_head():
    roles = _toy_roles()
    view = aw.HeadRolesView(roles)
    assert (view.grid.layer, view.grid.head, view.heatmap.head) == (0, 1, 1)
    assert view.grid.values("induction").tolist() == [[0.0, 1.0]]
    assert view.grid._meta["labels"]["induction"] == "induction score"
    assert aw.HeadRolesView(roles, "previous_token").heatmap.head == 0
    with pytest.raises(ValueError, match="unknown role"):
        aw.HeadRolesView(roles, "copying")
    with pytest.raises(TypeError, match="takes the HeadRoles"):
        aw.HeadRolesView({"induction": np.zeros((1, 2))})
    with pytest.raises(ValueError, match="layer 3 is out of range"):
        aw.HeadRolesView(roles, layer=3)


def test_static_twins():
    roles = _toy_roles()
    fig = aw.plots.plot_head_roles(roles, "previous_token")
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["previous-token score", "head 0.0 on the repeated tokens"]
    assert fig._suptitle.get_text() == "toy · 1 x [BOS] + 2 x 3 random tokens"
    # the drawn map is the head's attention (the induction stripe for head 1)
    fig = aw.plots.plot_head_roles(roles, "induction")
    drawn = next(ax for ax in fig.axes if ax.get_title().startswith("head 0.1"))
    data = drawn.collections[0].get_array() if drawn.collections else drawn.images[0].get_array()
    matrix = np.ma.filled(np.ma.asarray(data, dtype=float), np.nan).reshape(7, 7)
    np.testing.assert_allclose(np.nan_to_num(matrix), _pattern("induction", 3), atol=1e-6)
    from attnwidgets.plots.roles import LiveInductionCurve

    live = LiveInductionCurve(total=10, display=False)
    assert live.figure().axes[0].get_title() == ""  # what is displayed before the first evaluation
    live.update(0, 3.4, np.array([[0.05, 0.1]]))
    live.update(10, 1.0, np.array([[0.1, 0.9]]))
    ax = live.figure().axes
    assert ax[0].get_title() == "step 10: loss 1.00, max induction 0.90"
    lines = ax[1].get_lines()
    assert [round(v, 2) for v in lines[1].get_ydata()] == [0.1, 0.9] and lines[1].get_linewidth() == 2.5
    with pytest.raises(ValueError, match="one entry per evaluation"):
        aw.plots.plot_induction_curve([0, 1], [1.0], np.zeros((2, 1, 1)))
