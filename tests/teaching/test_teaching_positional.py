"""Positional encodings: formulas against hand-computed values, and the relative-distance properties they teach."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnwidgets.teaching import positional as P


def _is_toeplitz(m: np.ndarray, atol: float = 1e-4) -> bool:
    """Constant along every diagonal: entry [i, j] depends on j - i only."""
    return all(np.allclose(np.diagonal(m, k), np.diagonal(m, k)[0], atol=atol) for k in range(-m.shape[0] + 1, 1))


# -- sinusoidal ---------------------------------------------------------------------------------------------------


def test_sinusoidal_matches_hand_computed_values():
    pe = P.sinusoidal(3, 6)
    # position 0: sin 0 = 0 in even columns, cos 0 = 1 in odd ones
    np.testing.assert_allclose(pe[0], [0, 1, 0, 1, 0, 1], atol=1e-7)
    # position 2, d = 6: ω = 1, 10000^(-2/6) = 0.0464159, 10000^(-4/6) = 0.00215443
    expected = [0.9092974, -0.4161468, 0.0926985, 0.9956943, 0.0043089, 0.9999907]
    np.testing.assert_allclose(pe[2], expected, atol=1e-6)
    assert pe.dtype == np.float32 and pe.shape == (3, 6)


def test_sinusoidal_frequencies_and_odd_width():
    np.testing.assert_allclose(P.sinusoidal_frequencies(4), [1.0, 0.01])
    np.testing.assert_allclose(P.sinusoidal_frequencies(4, base=100.0), [1.0, 0.1])
    with pytest.raises(ValueError, match="even"):
        P.sinusoidal(4, 5)


def test_sinusoidal_dot_product_depends_only_on_offset_and_peaks_at_zero():
    pe = P.sinusoidal(40, 32)
    sim = P.position_similarity(pe)  # (40, 40)
    assert _is_toeplitz(sim)
    # the closed form Σ_i cos((m − n) ω_i) is what the matrix holds
    offsets = np.arange(40)[:, None] - np.arange(40)[None, :]
    np.testing.assert_allclose(sim, P.sinusoidal_dot_product(offsets, 32), atol=1e-4)
    assert (sim.argmax(axis=1) == np.arange(40)).all()  # each position is most similar to itself
    assert P.sinusoidal_dot_product(0, 32) == pytest.approx(16.0)


def test_learned_positions_have_no_relative_structure_until_trained():
    table = P.learned(40, 32, seed=1)
    assert table.shape == (40, 32) and table.std() == pytest.approx(0.02, rel=0.1)
    assert not _is_toeplitz(P.position_similarity(table))  # the Toeplitz check can fail
    given = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(P.learned(2, 3, table=given), given[:2])
    with pytest.raises(ValueError, match="at least 5 rows"):
        P.learned(5, 3, table=given)


def test_position_similarity_cosine_has_unit_diagonal():
    s = P.position_similarity(P.sinusoidal(6, 8), normalize=True)
    np.testing.assert_allclose(np.diag(s), 1.0, atol=1e-6)
    assert s.max() <= 1.0 + 1e-6


def test_relative_positions_are_key_minus_query():
    assert P.relative_positions(2, 3).tolist() == [[0, 1, 2], [-1, 0, 1]]


# -- RoPE ---------------------------------------------------------------------------------------------------------


def test_rope_rotates_pairs_by_position_times_theta():
    x = np.array([[1.0, 0.0, 1.0, 0.0]])  # one position, two pairs
    # at position m the pairs turn by m·θ_i with θ = (1, 1/100) for head_dim 4
    out = P.apply_rope(x, positions=np.array([math.pi / 2]))
    np.testing.assert_allclose(out[0], [0.0, 1.0, math.cos(math.pi / 200), math.sin(math.pi / 200)], atol=1e-12)
    # rotations keep lengths
    rng = np.random.default_rng(0)
    q = rng.normal(size=(7, 16))
    np.testing.assert_allclose(np.linalg.norm(P.apply_rope(q), axis=-1), np.linalg.norm(q, axis=-1))


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_rope_score_depends_only_on_relative_position(pairing):
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=16), rng.normal(size=16)

    def score(m: int, n: int) -> float:
        qm = P.apply_rope(q[None], positions=np.array([m]), pairing=pairing)[0]
        kn = P.apply_rope(k[None], positions=np.array([n]), pairing=pairing)[0]
        return float(qm @ kn)

    for m, n, shift in [(3, 1, 5), (0, 7, 11), (9, 9, 4)]:
        assert score(m, n) == pytest.approx(score(m + shift, n + shift), abs=1e-9)
    assert score(3, 1) != pytest.approx(score(3, 2), abs=1e-6)  # but it does depend on the offset
    assert _is_toeplitz(P.rope_relative_scores(q, k, 12, pairing=pairing), atol=1e-9)


def test_rope_without_rotation_is_not_relative():
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=(6, 8)), rng.normal(size=(6, 8))
    assert not _is_toeplitz(q @ k.T)  # different content per position: the check can fail
    assert not _is_toeplitz(P.rope_scores(q, k))


def test_rope_half_pairing_matches_transformers_llama():
    torch = pytest.importorskip("torch")
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    rng = np.random.default_rng(3)
    q, k = rng.normal(size=(1, 2, 5, 8)), rng.normal(size=(1, 2, 5, 8))  # (B, nh, T, hs)
    freqs = P.rope_angles(5, 8)  # (T, hs/2)
    emb = np.concatenate([freqs, freqs], axis=-1)[None]  # (1, T, hs): the rotate_half layout
    cos, sin = torch.from_numpy(np.cos(emb)), torch.from_numpy(np.sin(emb))
    q_ref, k_ref = llama.apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(k), cos, sin)
    np.testing.assert_allclose(P.apply_rope(q, pairing="half"), q_ref.numpy(), atol=1e-12)
    np.testing.assert_allclose(P.apply_rope(k, pairing="half"), k_ref.numpy(), atol=1e-12)
    assert not np.allclose(P.apply_rope(q, pairing="interleaved"), q_ref.numpy())


# -- ALiBi --------------------------------------------------------------------------------------------------------


def test_alibi_slopes_for_eight_heads_are_powers_of_one_half():
    np.testing.assert_allclose(P.alibi_slopes(8), [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256])


def test_alibi_slopes_for_a_head_count_that_is_not_a_power_of_two():
    # the paper's code: the 8-head slopes, then every other one of the 16-head slopes 2^(-0.5 k), k = 1, 3, 5, 7
    expected = [2.0 ** -k for k in range(1, 9)] + [2.0 ** -0.5, 2.0 ** -1.5, 2.0 ** -2.5, 2.0 ** -3.5]
    np.testing.assert_allclose(P.alibi_slopes(12), expected)


def test_alibi_bias_by_hand():
    sym = P.alibi_bias(3, n_heads=2, causal=False)  # h = 2: slopes 2^-4, 2^-8
    assert sym.shape == (2, 3, 3)
    np.testing.assert_allclose(sym[0], -(2.0 ** -4) * np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]]))
    causal = P.alibi_bias(3, n_heads=2)
    assert np.isneginf(causal[:, 0, 1:]).all() and np.isneginf(causal[:, 1, 2]).all()
    np.testing.assert_allclose(causal[1, 2], -(2.0 ** -8) * np.array([2, 1, 0]))


# -- T5 buckets ---------------------------------------------------------------------------------------------------


def test_t5_buckets_hand_worked():
    b = P.t5_relative_position_bucket
    # bidirectional, 32 buckets -> 16 per direction, 8 exact
    assert b(np.array([0, -1, -7, 1, 7])).tolist() == [0, 1, 7, 17, 23]
    # -20: 8 + log(20 / 8) / log(128 / 8) * 8 = 10.64 -> bucket 10
    assert int(b(-20)) == 10
    assert int(b(-128)) == 15 and int(b(-1000)) == 15 and int(b(1000)) == 31  # capped at the last bucket
    # causal (decoder): keys after the query all land in bucket 0; 16 exact distances
    assert b(np.array([5, 0, -3, -15]), bidirectional=False).tolist() == [0, 0, 3, 15]
    # -20: 16 + log(20 / 16) / log(128 / 16) * 16 = 17.7 -> 17
    assert int(b(-20, bidirectional=False)) == 17


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_buckets_match_transformers(bidirectional):
    torch = pytest.importorskip("torch")
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    rel = np.arange(-300, 301)
    ref = t5.T5Attention._relative_position_bucket(
        torch.from_numpy(rel), bidirectional=bidirectional, num_buckets=32, max_distance=128
    ).numpy()
    np.testing.assert_array_equal(P.t5_relative_position_bucket(rel, bidirectional=bidirectional), ref)


def test_t5_bias_is_a_function_of_the_bucket():
    table = np.arange(32 * 2, dtype=np.float32).reshape(32, 2)
    bias = P.t5_bias(5, 7, n_heads=2, table=table)
    assert bias.shape == (2, 5, 7)
    assert bias[1, 3, 0] == table[3, 1]  # offset -3 (key before query) -> bucket 3
    assert bias[1, 0, 3] == table[19, 1]  # offset +3 -> bucket 16 + 3
    assert _is_toeplitz(bias[0, :, :5])
    with pytest.raises(ValueError, match="num_buckets, n_heads"):
        P.t5_bias(3, n_heads=2, table=np.zeros((4, 2)))
