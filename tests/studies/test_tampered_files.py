"""Files changed on disk, by accident or on purpose (issue 23 §1 and §2): ``aw.load`` and a resumed ``results_dir``
refuse every one with the package's own error, naming the file and what is wrong, instead of showing wrong numbers;
an archive bomb is refused (or never opened) before it is decompressed; and no write in a results folder follows a
link planted there.

Each file here is first saved by the package, then changed the way a hand, a bad copy or an attacker would: the
changed bytes are the only difference from a file that loads.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import time
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import attnwidgets as aw
from attnwidgets.analysis.corpus import CorpusStats
from attnwidgets.analysis.dependency import DependencyScores
from attnwidgets.analysis.sinks import sink_shares
from attnwidgets.persist import SavedFileError
from attnwidgets.result import AttentionResult, ModelInfo
from attnwidgets.studies import shards
from attnwidgets.studies.corpus import CorpusWork
from attnwidgets.studies.pruning import PruningCurve
from attnwidgets.studies.saved import save_importance
from attnwidgets.studies.sweeps import SweepResult

# -- crafting files ------------------------------------------------------------------------------------------------


def npy(arr: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, arr, allow_pickle=False)
    return buffer.getvalue()


def rewrite(path: Path, arrays: dict[str, np.ndarray] | None = None, tags: Callable[[dict], None] | None = None,
            raw: dict[str, bytes] | None = None, drop: tuple[str, ...] = ()) -> None:
    """Replace (or add) entries of the .npz at ``path``, change its tags in place, drop entries."""
    with zipfile.ZipFile(path) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    for name, arr in (arrays or {}).items():
        entries[name + ".npy"] = npy(arr)
    if tags is not None:
        t = json.loads(str(np.load(io.BytesIO(entries["__tags__.npy"]), allow_pickle=False)))
        tags(t)
        entries["__tags__.npy"] = npy(np.array(json.dumps(t)))
    entries.update(raw or {})
    for name in drop:
        entries.pop(name + ".npy")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)


def entry(path: Path, name: str) -> np.ndarray:
    with zipfile.ZipFile(path) as z:
        return np.load(io.BytesIO(z.read(name + ".npy")), allow_pickle=False)


def set_attr(key: str, value) -> Callable[[dict], None]:
    return lambda t: t["attrs"].__setitem__(key, value)


# -- AttentionResult -----------------------------------------------------------------------------------------------

TOKENS = ["[CLS]", "the", "[SEP]"]


@pytest.fixture
def result_file(tmp_path) -> Path:
    """A result whose every query puts all its weight on [CLS]: sink_shares is exactly 1."""
    a = np.zeros((1, 2, 3, 3), np.float32)
    a[..., 0] = 1.0
    r = AttentionResult.from_arrays(a, TOKENS, text="the")
    assert sink_shares(r).tolist() == [[1.0, 1.0]]
    return aw.save(r, tmp_path / "result.npz")


def scaled(path: Path) -> dict[str, np.ndarray]:  # rows sum to 5/3: sink_shares would report 1.667
    return {"attention": entry(path, "attention") * np.float32(5 / 3)}


def negative(path: Path) -> dict[str, np.ndarray]:  # rows sum to 1 with -1/3 on [CLS]: sink_shares -0.333
    a = np.zeros((1, 2, 3, 3), np.float32)
    a[..., 0], a[..., 1] = -1 / 3, 4 / 3
    return {"attention": a}


def with_nan(path: Path) -> dict[str, np.ndarray]:
    a = entry(path, "attention").copy()
    a[0, 1, 2, 1] = np.nan
    return {"attention": a}


RESULT_CASES = {
    "rows summing to 5/3": (scaled, None, r"weights that are not probabilities: .*sum to 1\.667"),
    "negative weights": (negative, None, r"weights below 0: in layer 0, head 0, query 0, key 0 has weight -0\.3333"),
    "NaN": (with_nan, None, r"not finite \(NaN or inf\): layer 0, head 1"),
    "integer attention": (lambda p: {"attention": entry(p, "attention").astype(np.int64)}, None,
                          r"'attention' as integers \(int64\), not floats"),
    "text attention": (lambda p: {"attention": np.full((1, 2, 3, 3), "x")}, None, r"'attention' as text"),
    "one token fewer than the attention": (None, set_attr("tokens", TOKENS[:2]),
                                           r"'attention' of shape \(1, 2, 3, 3\), not \(1, 2, 2, 2\)"),
    "more heads than its model": (lambda p: {"attention": np.full((1, 3, 3, 3), 1 / 3, np.float32)}, None,
                                  r"'attention' of shape \(1, 3, 3, 3\), not \(1, 2, 3, 3\)"),
    "segment ids outside 0/1": (lambda p: {"segment_ids": np.array([0, 2, 0])}, None, r"segment_ids must be 0"),
    "word ids of floats": (lambda p: {"word_ids": np.array([-1.0, 0.0, -1.0])}, None, r"'word_ids' as floats"),
    "a token that is not text": (None, set_attr("tokens", ["[CLS]", 7, "[SEP]"]), r"tokens are not a list of text"),
    "tags missing a field": (None, lambda t: t["attrs"].pop("text_pair"), r"its tags have no field 'text_pair'"),
    "model tags of the wrong type": (None, lambda t: t["model"].__setitem__("n_layers", "one"),
                                     r"n_layers='one'"),
    "an output with NaN": (lambda p: {"outputs.embedding": np.array([np.nan, 1.0])},
                           set_attr("outputs", ["embedding"]), r"output 'embedding' holds NaN"),
}


@pytest.mark.parametrize("case", list(RESULT_CASES))
def test_a_tampered_result_is_refused_naming_the_file_and_the_problem(result_file, case) -> None:
    arrays, tags, message = RESULT_CASES[case]
    rewrite(result_file, arrays(result_file) if arrays else None, tags)
    with pytest.raises(SavedFileError, match=message) as err:
        aw.load(result_file)
    assert str(result_file) in str(err.value)


def test_the_untampered_result_loads_and_a_sinks_result_keeps_its_looser_check(result_file, tmp_path) -> None:
    back = aw.load(result_file)
    assert sink_shares(back).tolist() == [[1.0, 1.0]]
    # a model with attention sinks keeps part of each row (gpt-oss): such a result saves and loads as it is ...
    a = np.full((1, 1, 2, 2), 0.3, np.float32)
    r = AttentionResult.from_arrays(a, ["a", "b"], sinks=True)
    path = aw.save(r, tmp_path / "sinks.npz")
    np.testing.assert_array_equal(aw.load(path).attention, a)
    # ... but even then rows past 1 are refused
    rewrite(path, {"attention": np.full((1, 1, 2, 2), 0.9, np.float32)})
    with pytest.raises(SavedFileError, match=r"sum to 1\.8"):
        aw.load(path)


def test_tampered_decoder_attention_is_refused(tmp_path) -> None:
    r = AttentionResult.from_arrays(np.full((1, 1, 2, 2), 0.5, np.float32), ["a", "b"], kind="encoder-decoder",
                                    target_tokens=["x", "y"], decoder_attention=np.array([[[[1, 0], [0.5, 0.5]]]]),
                                    cross_attention=np.full((1, 1, 2, 2), 0.5))
    path = aw.save(r, tmp_path / "seq2seq.npz")
    assert aw.load(path).decoder_attention.shape == (1, 1, 2, 2)
    rewrite(path, {"cross_attention": np.full((1, 1, 2, 2), 0.8, np.float32)})
    with pytest.raises(SavedFileError, match=r"cross-attention weights that are not probabilities.*sum to 1\.6"):
        aw.load(path)
    rewrite(path, {"cross_attention": np.full((1, 2, 2, 2), 0.5, np.float32)})
    with pytest.raises(SavedFileError, match=r"'cross_attention' of shape \(1, 2, 2, 2\), not \(1, 1, 2, 2\)"):
        aw.load(path)


def test_a_result_whose_attention_disagrees_with_its_model_is_not_saved(tmp_path) -> None:
    r = AttentionResult.from_arrays(np.full((1, 1, 2, 2), 0.5, np.float32), ["a", "b"],
                                    model=ModelInfo("m", "encoder", n_layers=2, n_heads=1, max_length=8))
    with pytest.raises(ValueError, match=r"1 layers x 1 heads, but its model 'm' has 2 x 1"):
        aw.save(r, tmp_path / "r.npz")


# -- CorpusStats ---------------------------------------------------------------------------------------------------


@pytest.fixture
def stats_file(tmp_path) -> Path:
    """Two inputs of a 1-layer, 2-head model: 'sep' is 0.5 and 1.0 per input."""
    a = np.zeros((1, 2, 2, 2), np.float32)
    a[0, 0] = [[0.5, 0.5], [0.5, 0.5]]
    a[0, 1] = [[0.0, 1.0], [0.0, 1.0]]
    r = AttentionResult.from_arrays(a, ["[CLS]", "[SEP]"])
    stats = aw.analysis.aggregate_stats([r, r], distances=True)
    assert stats.mean()["sep"].tolist() == [[0.5, 1.0]]
    return stats.save(tmp_path / "stats.npz")


def change(name: str, fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], dict[str, np.ndarray]]:
    return lambda path: {name: fn(entry(path, name))}


STATS_CASES = {
    "a sum scaled by 1000": (change("sum.sep", lambda v: v * 1000), None, r"mean 'sep' goes from 500 to 1000"),
    "a negative sum": (change("sum.cls", lambda v: -v - 1), None, r"mean 'cls' goes from -"),
    "a negative count": (change("count.sep", lambda v: v - 3), None, r"count of 'sep' goes from -1"),
    "a count past the inputs": (change("count.sep", lambda v: v + 5), None, r"outside 0..n_docs = 2"),
    "a NaN sum": (change("sum.sep", lambda v: v * np.nan), None, r"sum of 'sep' is not finite"),
    "a sum of another shape": (change("sum.sep", lambda v: np.zeros((1, 3))), None,
                               r"'sum\.sep' of shape \(1, 3\), not \(1, 2\)"),
    "counts as floats": (change("count.sep", lambda v: v.astype(np.float64)), None, r"'count\.sep' as floats"),
    "pattern counts for 3 inputs": (change("pattern_counts", lambda v: v * 3 // 2), None,
                                    r"one class per input and head \(n_docs = 2\)"),
    "negative head distances": (change("distances.total", lambda v: v - 1), None, r"head distances"),
    "a negative number of inputs": (None, set_attr("n_docs", -2), r"n_docs is -2, not a count"),
}


@pytest.mark.parametrize("case", list(STATS_CASES))
def test_tampered_corpus_stats_are_refused(stats_file, case) -> None:
    arrays, tags, message = STATS_CASES[case]
    rewrite(stats_file, arrays(stats_file) if arrays else None, tags)
    with pytest.raises(SavedFileError, match=message) as err:
        aw.load(stats_file)
    assert str(stats_file) in str(err.value)


# -- DependencyScores, SweepResult, PruningCurve, head importance --------------------------------------------------

INFO = ModelInfo("tiny", "encoder", n_layers=1, n_heads=2, max_length=8)


@pytest.fixture
def scores_file(tmp_path) -> Path:
    correct = np.zeros((2, 1, 2, 2))
    correct[0, 0, :, 1] = 3  # 3 of the 4 det dependents right
    s = DependencyScores(["amod", "det"], np.array([1, 4]), correct, np.ones((6, 2)), 2, "tiny", INFO)
    return s.save(tmp_path / "deps.npz")


@pytest.mark.parametrize(("arrays", "message"), [
    ({"correct": np.full((2, 1, 2, 2), 5.0)}, r"correct holds numbers outside 0..the count"),
    ({"counts": np.array([-1, 4])}, r"counts of dependents hold negative numbers"),
    ({"baseline_correct": np.full((6, 2), 7.0)}, r"baseline_correct holds numbers outside"),
    ({"correct": np.zeros((2, 2, 2, 2))}, r"'correct' of shape \(2, 2, 2, 2\), not \(2, 1, 2, 2\)"),
    ({"relations": np.array(["det", "det"])}, r"not a list of distinct names"),
])
def test_tampered_dependency_scores_are_refused(scores_file, arrays, message) -> None:
    assert aw.load(scores_file).counts.tolist() == [1, 4]
    rewrite(scores_file, arrays)
    with pytest.raises(SavedFileError, match=message):
        aw.load(scores_file)


@pytest.fixture
def sweep_file(tmp_path) -> Path:
    frame = pd.DataFrame(dict(unit=["head", "head"], layer=[0, 0], head=[0, 1], metric=[0.5, 0.9],
                              delta=[-0.25, 0.15], improves=[False, True]))
    sweep = SweepResult(frame, np.array([[0.5, 0.9]]), np.array([np.nan]), 0.75, "accuracy", "zero", 1.0, INFO)
    return sweep.save(tmp_path / "sweep.npz")


@pytest.mark.parametrize(("arrays", "tags", "message"), [
    ({"heads": np.array([[0.5, 9.0]]), "frame.3": np.array([0.5, 9.0]), "frame.4": np.array([-0.25, 8.25])}, None,
     r"accuracy values go from 0\.5 to 9, outside 0\.0\.\.1\.0"),
    ({"frame.3": np.array([0.5, 0.1])}, None, r"frame's 'metric' column is not that of its heads"),
    ({"heads": np.array([[0.5, 0.9, 0.1]])}, None, r"'heads' of shape \(1, 3\)|shaped \(1, 3\)"),
    ({"frame.2": np.array([0, 7])}, None, r"unit \('head', 0, 7\) outside its 1 layers x 2 heads"),
    (None, set_attr("baseline", "high"), r"baseline is 'high', not a number"),
])
def test_tampered_sweeps_are_refused(sweep_file, arrays, tags, message) -> None:
    assert aw.load(sweep_file).heads.tolist() == [[0.5, 0.9]]
    rewrite(sweep_file, arrays, tags)
    with pytest.raises(SavedFileError, match=message):
        aw.load(sweep_file)


@pytest.fixture
def curve_file(tmp_path) -> Path:
    frame = pd.DataFrame(dict(share=[0.0, 0.5], n_pruned=[0, 1], metric=[0.8, 0.7], pruned=[[], [(0, 1)]]))
    curve = PruningCurve(frame, "accuracy", [np.array([[0.6, 0.8]])], INFO)
    return curve.save(tmp_path / "curve.npz")


@pytest.mark.parametrize(("arrays", "message"), [
    ({"frame.0": np.array([0.0, 1.5])}, r"shares of heads pruned are outside 0\.\.1"),
    ({"pruned": np.array([[0, 5]])}, r"pruned head \(0, 5\) outside the model's heads \(1, 2\)"),
    ({"importance.0": np.array([[-0.6, 0.8]])}, r"importance maps hold values that are not numbers of 0 or more"),
    ({"frame.2": np.array([0.8, 1.7])}, r"accuracy values go from 0\.8 to 1\.7"),
    ({"pruned_lengths": np.array([0, 2])}, r"'pruned' of shape \(1, 2\), not \(2, 2\)"),
    ({"pruned_lengths": np.array([0, 40])}, r"numbers of pruned heads are outside 0\.\.the model's heads"),
])
def test_tampered_pruning_curves_are_refused(curve_file, arrays, message) -> None:
    assert aw.load(curve_file).frame["pruned"].tolist() == [[], [(0, 1)]]
    rewrite(curve_file, arrays)
    with pytest.raises(SavedFileError, match=message):
        aw.load(curve_file)


@pytest.mark.parametrize(("importance", "message"), [
    (np.array([[0.6, -0.8]]), r"negative or infinite"),
    (np.array([[0.6, np.inf]]), r"negative or infinite"),
    (np.array([[0.6, 0.8, 0.1]]), r"'importance' of shape \(1, 3\) \(3 elements\), more than 2"),
])
def test_tampered_head_importance_is_refused(tmp_path, importance, message) -> None:
    path = save_importance(np.array([[0.6, 0.8]]), tmp_path / "imp.npz", model=INFO)
    assert aw.load(path).tolist() == [[0.6, 0.8]]
    rewrite(path, {"importance": importance})
    with pytest.raises(SavedFileError, match=message):
        aw.load(path)


# -- archive bombs -------------------------------------------------------------------------------------------------


def zeros_entry(n_bytes: int) -> tuple[bytes, bytes, int]:
    """(.npy header, raw deflate stream, crc32) of a uint8 array of ``n_bytes`` zeros, built without compressing
    them: after a full flush a compressor's output for a MiB of zeros is the same every time."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "|u1", "fortran_order": False, "shape": (n_bytes,)})
    head = header.getvalue()
    block = bytes(2**20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    one = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    assert c.compress(block) + c.flush(zlib.Z_FULL_FLUSH) == one
    stream = first + one * (n_bytes // 2**20) + c.flush()
    crc = zlib.crc32(head)
    for _ in range(n_bytes // 2**20):
        crc = zlib.crc32(block, crc)
    return head, stream, crc


def add_deflated_entry(path: Path, name: str, stream: bytes, crc: int, size: int) -> None:
    """Rewrite the zip at ``path`` with one more entry whose deflate stream is given (zipfile cannot write one)."""
    with zipfile.ZipFile(path) as z:
        entries = [(n, z.read(n)) for n in z.namelist()]
    out, central = io.BytesIO(), io.BytesIO()
    items = [(n, zlib.compressobj(6, zlib.DEFLATED, -15), d) for n, d in entries]
    files = [(n, c.compress(d) + c.flush(), zlib.crc32(d), len(d)) for n, c, d in items]
    files.append((name, stream, crc, size))
    for fname, data, fcrc, fsize in files:
        offset = out.tell()
        encoded = fname.encode()
        out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 33, fcrc, len(data), fsize,
                              len(encoded), 0) + encoded + data)
        central.write(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 33, fcrc, len(data),
                                  fsize, len(encoded), 0, 0, 0, 0, 0, offset) + encoded)
    start = out.tell()
    out.write(central.getvalue())
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(files), len(files), len(central.getvalue()),
                          start, 0))
    path.write_bytes(out.getvalue())


def test_an_unused_gigabyte_entry_is_never_decompressed(stats_file) -> None:
    n = 2**30
    head, stream, crc = zeros_entry(n)
    add_deflated_entry(stats_file, "unused.npy", stream, crc, len(head) + n)
    assert stats_file.stat().st_size < 2 * 2**20  # a file of about 1 MiB ...
    with zipfile.ZipFile(stats_file) as z:
        assert z.getinfo("unused.npy").file_size == len(head) + n  # ... holding 1 GiB
    tracemalloc.start()
    start = time.perf_counter()
    try:
        stats = aw.load(stats_file)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert stats.mean()["sep"].tolist() == [[0.5, 1.0]]
    assert seconds < 2.0 and peak < 16 * 2**20, (seconds, peak)


def oversized(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    """An .npy entry whose header asks for ``shape`` but holds 8 bytes of data."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": descr, "fortran_order": False, "shape": shape})
    return header.getvalue() + bytes(8)


@pytest.mark.parametrize("shape", [(10**12,), (10**6, 10**6), (1, 2)])
def test_a_named_entry_declaring_a_huge_array_is_refused_before_reading(stats_file, shape) -> None:
    rewrite(stats_file, raw={"sum.sep.npy": oversized(shape)})
    with pytest.raises(SavedFileError, match=rf"'sum\.sep' of shape \({shape[0]}, ?.*not \(1, 2\)|declares"):
        aw.load(stats_file)


def test_a_result_declaring_a_huge_attention_is_refused(result_file) -> None:
    rewrite(result_file, raw={"attention.npy": oversized((10**3, 10**3, 10**3, 10**3), "<f4")})
    with pytest.raises(SavedFileError, match=r"'attention' of shape \(1000, 1000, 1000, 1000\), not \(1, 2, 3, 3\)"):
        aw.load(result_file)


def test_an_entry_whose_zip_size_disagrees_with_its_header_is_refused(stats_file) -> None:
    good = npy(entry(stats_file, "sum.sep"))
    rewrite(stats_file, raw={"sum.sep.npy": good + bytes(2**20)})  # a MiB past what the header asks for
    with pytest.raises(SavedFileError, match=r"'sum\.sep' declares 1,048,\d+ bytes, its header \d+"):
        aw.load(stats_file)


def test_oversized_tags_are_refused(stats_file) -> None:
    rewrite(stats_file, raw={"__tags__.npy": oversized((), "<U100000000")})
    with pytest.raises(SavedFileError, match=r"declares text of 100,000,000 characters"):
        aw.load(stats_file)


# -- results folders -----------------------------------------------------------------------------------------------

TEXTS = ["The cat sat on the mat.", "A dog barked.", "Rain fell all day long in the town.", "Hi.",
         "She read the letter twice.", "Birds sing.", "The old bridge was closed for repairs.", "We left."]
SETTINGS = {"study": "test"}


@pytest.fixture
def study(tiny_bert):
    from attnwidgets.runner import get_runner

    runner = get_runner(tiny_bert)
    plan = shards.plan([(t, None) for t in TEXTS], per_shard=4, lengths=[len(t) for t in TEXTS])
    assert len(plan) == 2

    def run(folder: Path):
        return shards.run(CorpusWork(batch_size=4), plan, runner, shards.Options(results_dir=folder, progress=False),
                          kind=CorpusStats, settings=SETTINGS, desc="", unit="")

    return run


def rewrite_shard(folder: Path, index: int, change: Callable[[dict[str, np.ndarray]], None]) -> None:
    path = folder / f"shard-{index:05d}.npz"
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    change(arrays)
    np.savez(path, **arrays)


def test_a_resumed_folder_checks_every_shard(study, tmp_path) -> None:
    folder = tmp_path / "run"
    whole = study(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    record = manifest["files"]["0"]
    assert len(record["sha256"]) == 64 and record["arrays"]["sum/sep"] == {"dtype": "<f8", "shape": [2, 4]}
    again = study(folder)  # untouched: resumed, the same numbers
    np.testing.assert_array_equal(again.mean()["sep"], whole.mean()["sep"])
    assert again.n_tokens == whole.n_tokens


@pytest.mark.parametrize(("change", "record", "message"), [
    (lambda a: a.__setitem__("sum/sep", a["sum/sep"][:, :3]), True,
     r"shard 0 \(shard-00000\.npz\) does not hold the arrays manifest\.json recorded: .*'sum/sep' of shape \(2, 3\), "
     r"not \(2, 4\)"),
    (lambda a: a.__setitem__("sum/sep", a["sum/sep"][:, :3]), False,
     r"shard 0 \(shard-00000\.npz\) has changed since it was written \(sha256"),
    (lambda a: a.__setitem__("sum/sep", a["sum/sep"] * 1000), False,
     r"shard 0 \(shard-00000\.npz\) has changed since it was written \(sha256"),
    (lambda a: a.__setitem__("count/sep", a["count/sep"].astype(np.int32)), True, r"'count/sep' as int32|as int32"),
])
def test_a_tampered_shard_is_named_and_refused_with_how_to_recompute_it(study, tmp_path, change, record,
                                                                         message) -> None:
    """``record``: the manifest's checksum of the shard is made to match, as a consistent hand edit would, to reach
    the checks behind it (the checksum is checked first, before anything is decompressed)."""
    folder = tmp_path / "run"
    study(folder)
    rewrite_shard(folder, 0, change)
    if record:
        manifest = json.loads((folder / "manifest.json").read_text())
        data = (folder / "shard-00000.npz").read_bytes()
        manifest["files"]["0"]["sha256"] = hashlib.sha256(data).hexdigest()
        (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(shards.ResultsFolderError, match=message) as err:
        study(folder)
    assert "Delete shard-00000.npz and shard-00000.json to compute that shard again" in str(err.value)
    (folder / "shard-00000.npz").unlink()
    (folder / "shard-00000.json").unlink()
    study(folder)  # as the message says: that shard is computed again


def test_a_missing_shard_is_refused_and_an_unrecorded_one_computed_again(study, tmp_path) -> None:
    folder = tmp_path / "run"
    whole = study(folder)
    (folder / "shard-00001.npz").unlink()
    with pytest.raises(shards.ResultsFolderError, match=r"shard 1 \(shard-00001\.npz\) is missing"):
        study(folder)
    (folder / "shard-00000.json").unlink()
    with pytest.raises(shards.ResultsFolderError, match=r"shard 0 \(shard-00000\.npz\) has no shard-00000\.json"):
        study(folder)
    # a shard the manifest has no record of never finished (a run stopped before the record): it is run again
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["files"]["0"], manifest["files"]["1"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    again = study(folder)
    assert again.n_tokens == whole.n_tokens
    assert sorted(json.loads((folder / "manifest.json").read_text())["files"]) == ["0", "1"]


def change_state(key: str, value) -> Callable[[dict], None]:
    return lambda meta: meta["state"].__setitem__(key, value)


@pytest.mark.parametrize(("name", "text", "record", "message"), [
    ("manifest.json", "{not json", False, r"manifest\.json is damaged \(JSONDecodeError"),
    ("manifest.json", "[1, 2]", False, r"manifest\.json is damaged \(it holds a list, not a mapping\)"),
    ("manifest.json", b"\xff\xfe\x00", False, r"manifest\.json is damaged \(UnicodeDecodeError"),
    ("manifest.json", None, False, r"manifest\.json is damaged \(its records of finished shards"),
    ("shard-00000.json", change_state("n_tokens", 5), False,
     r"shard 0 \(shard-00000\.npz\) has a shard-00000\.json that has changed since it was written"),
    ("shard-00000.json", "{not json", True, r"shard 0 \(shard-00000\.npz\) has a damaged shard-00000\.json"),
    ("shard-00000.json", "[]", True, r"shard 0 .* has a shard-00000\.json that is not a mapping"),
    ("shard-00000.json", change_state("n_docs", -1), True,
     r"shard 0 .* holds a CorpusStats that fails its checks \(its n_docs is -1, not a count\)"),
    ("shard-00000.json", change_state("n_docs", 2.5), True, r"fails its checks \(its n_docs is 2\.5, not a count\)"),
    # nested deeper than Python's JSON reader goes: a RecursionError before
    ("manifest.json", "[" * 100_000 + "]" * 100_000, False, r"manifest\.json is damaged \(it nests deeper"),
    ("shard-00000.json", "[" * 100_000 + "]" * 100_000, True, r"shard 0 .* has a shard-00000\.json nested deeper"),
])
def test_a_broken_manifest_or_shard_record_is_the_packages_error(study, tmp_path, name, text, record,
                                                                  message) -> None:
    """Broken JSON, JSON of the wrong types, a shard's JSON changed after it was written; ``record``: the manifest's
    checksum of the shard's JSON is made to match, as a consistent hand edit would, to reach the checks behind it."""
    folder = tmp_path / "run"
    study(folder)
    path = folder / name
    if text is None:  # the records of finished shards, of the wrong types
        manifest = json.loads(path.read_text())
        manifest["files"]["0"]["arrays"]["sum/sep"]["shape"] = "2x4"
        text = json.dumps(manifest)
    elif callable(text):
        meta = json.loads(path.read_text())
        text(meta)
        text = json.dumps(meta)
    data = text if isinstance(text, bytes) else text.encode()
    path.write_bytes(data)
    if record:
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["files"]["0"]["json_sha256"] = hashlib.sha256(data).hexdigest()
        (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(shards.ResultsFolderError, match=message) as err:
        study(folder)
    assert str(folder) in str(err.value)


def test_no_write_in_a_results_folder_follows_a_link(study, tmp_path) -> None:
    """Links planted at every name the folder's code writes: fixed temporary names pointing at files outside (which
    a write through them would change), final names pointing at files outside that do not exist yet (which a write
    through them would create). The run finishes, nothing outside the folder changes or appears, and every name in
    the folder is a plain file of the run's."""
    folder, outside = tmp_path / "run", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    names = ["manifest.json", "manifest.json.tmp"]
    for i in range(2):
        names += [f"shard-{i:05d}.npz", f"shard-{i:05d}.json", f"shard-{i:05d}.tmp.npz", f"shard-{i:05d}.json.tmp"]
    victims = {}
    for name in names:
        target = outside / f"victim-{name}"
        if "tmp" in name:
            target.write_text("keep me")
            victims[target] = "keep me"
        os.symlink(target, folder / name)
    whole = study(folder)
    assert {p.name: p.read_text() for p in outside.iterdir()} == {p.name: v for p, v in victims.items()}
    for name in ("manifest.json", "shard-00000.npz", "shard-00000.json", "shard-00001.npz", "shard-00001.json"):
        assert not (folder / name).is_symlink() and (folder / name).is_file(), name
    again = study(folder)  # and it resumes from what it wrote
    np.testing.assert_array_equal(again.mean()["sep"], whole.mean()["sep"])
    # a saved file's name that is a link is replaced, not written through
    os.symlink(outside / "victim-saved.npz", tmp_path / "saved.npz")
    whole.save(tmp_path / "saved.npz")
    assert not (outside / "victim-saved.npz").exists() and not (tmp_path / "saved.npz").is_symlink()



def test_a_results_dir_that_is_a_file_or_under_one_is_the_packages_error(study, tmp_path) -> None:
    # FileExistsError / NotADirectoryError from mkdir before
    afile = tmp_path / "results.txt"
    afile.write_text("not a folder")
    with pytest.raises(shards.ResultsFolderError, match=r"results\.txt' is a file, not a folder"):
        study(afile)
    with pytest.raises(shards.ResultsFolderError, match="cannot be made: part of its path is a file"):
        study(afile / "run")


def test_a_shard_swapped_for_an_archive_bomb_is_refused_before_it_is_decompressed(study, tmp_path) -> None:
    """The manifest made to record a 128 MiB array and the shard's entry swapped for a deflate bomb of that size (but
    its checksum not recomputed): refused by the checksum, which reads the small compressed file, before reading the
    entry inflates it (it was inflated first, then refused)."""
    folder = tmp_path / "run"
    study(folder)
    n = 2**27
    head, stream, crc = zeros_entry(n)
    shard = folder / "shard-00000.npz"
    with zipfile.ZipFile(shard) as z:
        kept = {name: z.read(name) for name in z.namelist() if name != "sum/sep.npy"}
    with zipfile.ZipFile(shard, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in kept.items():
            z.writestr(name, data)
    add_deflated_entry(shard, "sum/sep.npy", stream, crc, len(head) + n)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["0"]["arrays"]["sum/sep"] = {"dtype": "|u1", "shape": [n]}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(shards.ResultsFolderError, match=r"shard 0 \(shard-00000\.npz\) has changed since"):
            study(folder)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, (seconds, peak)


def test_tags_nested_too_deep_for_the_json_reader_are_refused_clearly(result_file) -> None:
    rewrite(result_file, raw={"__tags__.npy": npy(np.array("[" * 100_000 + "]" * 100_000))})
    with pytest.raises(SavedFileError, match="its tags nest deeper than Python's JSON reader can go"):
        aw.load(result_file)
