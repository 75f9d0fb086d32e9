"""Saving analyses and loading them back (issue 16.6): every object round-trips exactly, every file is tagged with its
model, and a file from another model, a newer format, another kind or a damaged file is refused with a clear message."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from lazy_helpers import lazy_result
from pandas.testing import assert_frame_equal

import attnwidgets as aw
from attnwidgets.analysis.corpus import CorpusStats
from attnwidgets.persist import (
    FORMAT,
    ModelMismatchError,
    SavedFileError,
    check_provenance,
    provenance,
    read_tags,
    write,
)
from attnwidgets.result import AttentionResult, ModelInfo


def assert_same_corpus_stats(a: CorpusStats, b: CorpusStats) -> None:
    assert (a.n_docs, a.n_tokens, a.words, a.smoothing) == (b.n_docs, b.n_tokens, b.words, b.smoothing)
    assert a.model == b.model
    ma, mb = a.mean(), b.mean()
    assert ma.keys() == mb.keys()
    for key in ma:
        np.testing.assert_array_equal(ma[key], mb[key])
    assert_frame_equal(a.frame(), b.frame())
    if a.pattern_counts is None:
        assert b.pattern_counts is None
    else:
        np.testing.assert_array_equal(a.pattern_counts, b.pattern_counts)
        assert_frame_equal(a.patterns(), b.patterns())
        np.testing.assert_array_equal(a.majority_pattern(), b.majority_pattern())
    try:
        da = a.distances()
    except ValueError:
        with pytest.raises(ValueError, match="distances=True"):
            b.distances()
    else:
        np.testing.assert_array_equal(da, b.distances())


# -- CorpusStats ---------------------------------------------------------------------------------------------------


def test_corpus_stats_of_a_long_input_round_trip(tmp_path) -> None:
    stats = aw.analysis.aggregate_stats([lazy_result(40), lazy_result(30, seed=1)], distances=True)
    assert_same_corpus_stats(stats, CorpusStats.load(stats.save(tmp_path / "lazy.npz"), model=stats.model))


def test_empty_corpus_stats_round_trip(tmp_path) -> None:
    back = CorpusStats.load(CorpusStats(words=True).save(tmp_path / "empty.npz"))
    assert (back.n_docs, back.words, back.model) == (0, True, None)
    with pytest.raises(ModelMismatchError, match="does not say which model"):
        CorpusStats.load(tmp_path / "empty.npz", model="bert-base-uncased")


# -- DependencyScores ----------------------------------------------------------------------------------------------


def assert_same_dependency_scores(a, b) -> None:
    assert a.relations == b.relations and (a.n_sentences, a.model) == (b.n_sentences, b.model)
    assert a.model_info == b.model_info and a.settings == b.settings
    for name in ("counts", "correct", "baseline_correct", "accuracy", "accuracy_all", "baseline"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert getattr(a, name).dtype == getattr(b, name).dtype, name
    assert_frame_equal(a.table(), b.table())
    assert_frame_equal(a.frame(), b.frame())
    assert repr(a) == repr(b)


def test_dependency_scores_that_know_only_a_name(tmp_path) -> None:
    """Scores built by hand know the model's name only: the file says so, and checks that name."""
    from attnwidgets.analysis.dependency import DependencyScores

    correct = np.arange(2 * 1 * 2 * 3, dtype=np.float64).reshape(2, 1, 2, 3) % 4
    scores = DependencyScores(["amod", "det", "nsubj"], np.array([4, 5, 6]), correct, np.ones((6, 3)), 2, "toy")
    path = scores.save(tmp_path / "toy.npz")
    assert read_tags(path)["model"] == {"name": "toy", "path": None}
    assert_same_dependency_scores(scores, DependencyScores.load(path, model="toy"))
    with pytest.raises(ModelMismatchError, match=r"'toy'.*'other'"):
        DependencyScores.load(path, model="other")


# -- sweeps, pruning, importance -----------------------------------------------------------------------------------


# -- attention results ---------------------------------------------------------------------------------------------


# -- bad files -----------------------------------------------------------------------------------------------------


@pytest.fixture
def saved_stats(tmp_path) -> Path:
    r = AttentionResult.from_arrays(np.array([[0.5, 0.5], [0.0, 1.0]]), ["[CLS]", "[SEP]"])
    return aw.analysis.aggregate_stats([r] * 2).save(tmp_path / "stats.npz")


def test_a_file_of_another_kind_is_refused(saved_stats) -> None:
    from attnwidgets.analysis.dependency import DependencyScores

    with pytest.raises(SavedFileError, match=r"holds a CorpusStats, not a DependencyScores.*aw.load"):
        DependencyScores.load(saved_stats)


@pytest.mark.parametrize("cut", [0.0, 0.3, 0.9])
def test_a_truncated_file_is_refused(saved_stats, cut) -> None:
    data = saved_stats.read_bytes()
    saved_stats.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(SavedFileError, match="damaged"):
        aw.load(saved_stats)


def test_a_corrupt_entry_is_refused(saved_stats) -> None:
    data = bytearray(saved_stats.read_bytes())
    data[60:80] = b"\x00" * 20  # inside the first compressed entry
    saved_stats.write_bytes(bytes(data))
    with pytest.raises(SavedFileError, match="damaged"):
        CorpusStats.load(saved_stats)


def test_files_that_are_not_ours_are_refused(tmp_path) -> None:
    np.save(tmp_path / "bare.npy", np.zeros(3))
    np.savez(tmp_path / "plain.npz", a=np.zeros(3))
    (tmp_path / "text.npz").write_text("hello")
    np.savez(tmp_path / "pickled.npz", a=np.array([{"x": 1}], dtype=object))
    for name in ("bare.npy", "plain.npz", "text.npz", "pickled.npz"):
        with pytest.raises(SavedFileError, match="not a file attnwidgets saved"):
            aw.load(tmp_path / name)
    with pytest.raises(FileNotFoundError, match="no saved file"):
        aw.load(tmp_path / "missing.npz")


def rewrite_tags(path: Path, change) -> None:
    with zipfile.ZipFile(path) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    tags = json.loads(str(np.load(path, allow_pickle=False)["__tags__"]))
    change(tags)
    buffer = io.BytesIO()
    np.save(buffer, np.array(json.dumps(tags)))
    entries["__tags__.npy"] = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)


def test_a_newer_format_is_refused_with_upgrade_advice(saved_stats) -> None:
    rewrite_tags(saved_stats, lambda t: t.update(attnwidgets_file=FORMAT + 1, attnwidgets="9.0"))
    with pytest.raises(SavedFileError, match=f"attnwidgets 9.0 in file format {FORMAT + 1}.*upgrade"):
        aw.load(saved_stats)


def test_an_unknown_kind_is_refused(saved_stats) -> None:
    rewrite_tags(saved_stats, lambda t: t.update(kind="Hologram"))
    with pytest.raises(SavedFileError, match="'Hologram', which this attnwidgets"):
        aw.load(saved_stats)


def test_loading_runs_no_code_from_the_file(saved_stats) -> None:
    """An object array would need pickle to read: under a name the format reads it is refused, never unpickled; under
    a name it does not read it is never opened at all (issue 23: only the entries the format names are read)."""
    buffer = io.BytesIO()
    np.save(buffer, np.array([print], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(saved_stats, "a") as z:
        z.writestr("evil.npy", buffer.getvalue())
    assert aw.load(saved_stats).n_docs == 2
    with zipfile.ZipFile(saved_stats) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    entries["sum.sep.npy"] = buffer.getvalue()
    with zipfile.ZipFile(saved_stats, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    with pytest.raises(SavedFileError, match=r"damaged.*'sum\.sep' as Python objects"):
        aw.load(saved_stats)


# -- provenance ----------------------------------------------------------------------------------------------------


def test_one_hub_commit_under_two_names_is_the_same_model_but_one_config_is_not() -> None:
    commit = "86b5e0934494bd15c9632b12f734a8a67f723594"
    saved = provenance(ModelInfo("bert-base-uncased", "encoder", 12, 12, 512, commit=commit))
    check_provenance(saved, ModelInfo("google-bert/bert-base-uncased", "encoder", 12, 12, 512, commit=commit))
    config = provenance(ModelInfo("./finetuned-a", "encoder", 12, 12, 512, commit="config-sha256:1234"))
    with pytest.raises(ModelMismatchError, match="finetuned-a"):
        check_provenance(config, ModelInfo("./finetuned-b", "encoder", 12, 12, 512, commit="config-sha256:1234"))


def test_numpy_numbers_in_settings_are_saved_as_numbers(tmp_path) -> None:
    write(tmp_path / "x.npz", "Example", {}, settings={"step": np.float32(0.25), "n": np.int64(3)})
    assert read_tags(tmp_path / "x.npz")["settings"] == {"step": 0.25, "n": 3}
    with pytest.raises(TypeError, match="not JSON"):
        write(tmp_path / "y.npz", "Example", {}, settings={"bad": object()})
    assert not (tmp_path / "y.npz").exists()


# -- large float arrays stored, not deflated (the saved-file document opens them without inflating) ----------------


def _noise_result(n: int = 40, layers: int = 2, heads: int = 3) -> AttentionResult:
    a = np.random.default_rng(1).random((layers, heads, n, n), dtype=np.float32) ** 8
    tokens = ["[CLS]", *(f"w{i}" for i in range(n - 2)), "[SEP]"]
    return AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), tokens)


def test_noisy_float_arrays_are_stored_and_compressible_ones_deflated(tmp_path, monkeypatch) -> None:
    from attnwidgets import persist

    monkeypatch.setattr(persist, "STORED_BYTES", 1024)
    r = _noise_result()
    path = aw.save(r, tmp_path / "r.npz")
    causal = np.tril(np.ones((40, 40), np.float32))
    zeros = write(tmp_path / "z.npz", "Example", {"a": causal / causal.sum(-1, keepdims=True),
                                                    "b": np.zeros(4096)})
    with zipfile.ZipFile(path) as z:
        kinds = {i.filename: i.compress_type for i in z.infolist()}
    assert kinds["attention.npy"] == zipfile.ZIP_STORED
    assert kinds["__tags__.npy"] == kinds["token_ids.npy"] == zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(zeros) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
    back = aw.load(path)
    np.testing.assert_array_equal(back.attention, r.attention)
    assert back.tokens == r.tokens and not back.attention.flags.writeable
    with np.load(path, allow_pickle=False) as plain:  # any npz reader reads it
        np.testing.assert_array_equal(plain["attention"], r.attention)


def test_a_file_written_by_savez_compressed_still_loads(tmp_path) -> None:
    """Files written before large arrays were stored (every entry deflated) open as before."""
    r = _noise_result()
    new = aw.save(r, tmp_path / "new.npz")
    with np.load(new, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    old = tmp_path / "old.npz"
    np.savez_compressed(old, **arrays)
    with zipfile.ZipFile(old) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
    back = aw.load(old)
    np.testing.assert_array_equal(back.attention, r.attention)
    assert read_tags(old) == read_tags(new)


def test_a_changed_byte_in_a_stored_entry_is_refused(tmp_path, monkeypatch) -> None:
    """A stored entry has no deflate stream to break: its CRC is what catches a changed weight."""
    from attnwidgets import persist

    monkeypatch.setattr(persist, "STORED_BYTES", 1024)
    path = aw.save(_noise_result(), tmp_path / "r.npz")
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("attention.npy")
        assert info.compress_type == zipfile.ZIP_STORED
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:  # where the entry's data starts, from its local header
        z.fp.seek(info.header_offset)
        local = z.fp.read(30)
    name_len, extra_len = int.from_bytes(local[26:28], "little"), int.from_bytes(local[28:30], "little")
    at = info.header_offset + 30 + name_len + extra_len + info.file_size - 3
    data[at] ^= 0x01  # a low bit of one weight: rows still sum to 1 within the tolerance
    path.write_bytes(bytes(data))
    with pytest.raises(SavedFileError, match=r"'attention' cannot be read \(BadZipFile: Bad CRC-32"):
        aw.load(path)


def test_from_arrays_without_copy_keeps_and_freezes_the_array() -> None:
    a = np.full((1, 2, 3, 3), 1 / 3, np.float32)
    kept = AttentionResult.from_arrays(a, ["[CLS]", "hi", "[SEP]"], copy=False)
    assert np.shares_memory(kept.attention, a) and not a.flags.writeable
    b = np.full((1, 2, 3, 3), 1 / 3, np.float32)
    copied = AttentionResult.from_arrays(b, ["[CLS]", "hi", "[SEP]"])
    assert not np.shares_memory(copied.attention, b) and b.flags.writeable
    f64 = AttentionResult.from_arrays(np.full((3, 3), 1 / 3), ["[CLS]", "hi", "[SEP]"], copy=False)
    assert f64.attention.dtype == np.float32  # another dtype is still converted


def test_a_loaded_result_holds_the_arrays_read_from_the_file(tmp_path, monkeypatch) -> None:
    """The loader checks the array it read in place: from_arrays gets copy=False, and makes no second copy."""
    from attnwidgets.result import AttentionResult as AR

    path = aw.save(_noise_result(), tmp_path / "r.npz")
    seen = {}
    original = AR.from_arrays.__func__

    def spy(cls, attention, tokens, **kwargs):
        seen["attention"] = attention
        return original(cls, attention, tokens, **kwargs)

    monkeypatch.setattr(AR, "from_arrays", classmethod(spy))
    back = aw.load(path)
    assert back.attention is seen["attention"]
