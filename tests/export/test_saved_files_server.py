"""The server endpoint behind the document a saved file opens as (``GET /attnwidgets/saved?path=...``,
attnwidgets/server.py and saved_doc.py), on a real Jupyter server with a token: each kind ``aw.save`` writes answers
with the saved states of its views, whose numbers are the file's (decoded here and compared with the arrays that were
saved); a tampered, damaged, foreign or oversized file answers 4xx with the loader's own message and no traceback; a
path that leaves the server's folder (``..``, absolute, a link pointing out) or is hidden is refused; a request
without the server's token is refused.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import attnwidgets as aw
from attnwidgets.analysis.dependency import DependencyScores
from attnwidgets.persist import SavedFileError
from attnwidgets.result import AttentionResult, ModelInfo
from attnwidgets.studies.pruning import PruningCurve
from attnwidgets.studies.saved import save_importance
from attnwidgets.studies.sweeps import SweepResult

TOKEN = "secret-token-for-the-test"
INFO = ModelInfo("tiny", "encoder", n_layers=1, n_heads=2, max_length=8)
MAX_BYTES = 200_000  # the server's size limit in this test (ATTNWIDGETS_DOC_MAX_BYTES)
EVIL = "<img src=x onerror=alert(1)>"

rng = np.random.default_rng(0)
_a = rng.random((2, 3, 6, 6)).astype(np.float32)
ATTENTION = _a / _a.sum(-1, keepdims=True)  # (layer, head, query, key)


def _write_files(root: Path) -> None:
    r = AttentionResult.from_arrays(ATTENTION, ["[CLS]", EVIL, "b", "c", "d", "[SEP]"], text="x")
    aw.save(r, root / "result.npz")
    # Two inputs of a 1-layer, 2-head model: 'sep' is 0.5 for head 0 and 1.0 for head 1 (every row's share on [SEP]).
    a = np.zeros((1, 2, 2, 2), np.float32)
    a[0, 0] = [[0.5, 0.5], [0.5, 0.5]]
    a[0, 1] = [[0.0, 1.0], [0.0, 1.0]]
    two = AttentionResult.from_arrays(a, ["[CLS]", "[SEP]"])
    (root / "sub").mkdir()
    aw.save(aw.analysis.aggregate_stats([two, two]), root / "sub" / "stats.npz")
    correct = np.zeros((2, 1, 2, 2))
    correct[0, 0, :, 1] = 3  # 3 of the 4 det dependents right, by both heads; the 1 amod dependent wrong
    DependencyScores(["amod", "det"], np.array([1, 4]), correct, np.ones((6, 2)), 2, "tiny", INFO).save(
        root / "deps.npz")
    frame = pd.DataFrame(dict(unit=["head", "head"], layer=[0, 0], head=[0, 1], metric=[0.5, 0.9],
                              delta=[-0.25, 0.15], improves=[False, True]))
    SweepResult(frame, np.array([[0.5, 0.9]]), np.array([np.nan]), 0.75, "accuracy", "zero", 1.0, INFO).save(
        root / "sweep.npz")
    frame = pd.DataFrame(dict(share=[0.0, 0.5], n_pruned=[0, 1], metric=[0.8, 0.7], pruned=[[], [(0, 1)]]))
    PruningCurve(frame, "accuracy", [np.array([[0.6, 0.8]])], INFO).save(root / "curve.npz")
    save_importance(np.array([[0.6, 0.8]]), root / "imp.npz", model=INFO)
    # A result whose attention rows were scaled by 5/3 on disk: the loader refuses it.
    tampered = root / "tampered.npz"
    aw.save(r, tampered)
    _rewrite(tampered, "attention", lambda att: att * (5 / 3))
    np.savez(root / "plain.npz", x=np.arange(3))  # an .npz that attnwidgets did not write
    (root / "cut.npz").write_bytes((root / "imp.npz").read_bytes()[:300])  # cut short while copying
    (root / "big.npz").write_bytes(b"\0" * (MAX_BYTES + 1))
    (root / "notes.txt").write_text("hello")
    (root / ".hidden.npz").write_bytes((root / "imp.npz").read_bytes())
    outside = root.parent / "outside.npz"
    outside.write_bytes((root / "imp.npz").read_bytes())
    (root / "link.npz").symlink_to(outside)


def _rewrite(path: Path, name: str, change: Any) -> None:
    import io
    import zipfile

    with zipfile.ZipFile(path) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    buffer = io.BytesIO()
    np.save(buffer, change(np.load(io.BytesIO(entries[name + ".npy"]))), allow_pickle=False)
    entries[name + ".npy"] = buffer.getvalue()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in entries.items():
            z.writestr(n, data)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("top") / "root"
    root.mkdir()
    _write_files(root)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "ATTNWIDGETS_DOC_MAX_BYTES": str(MAX_BYTES),
           "JUPYTER_RUNTIME_DIR": str(tmp_path_factory.mktemp("runtime"))}
    log = root.parent / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "jupyter", "server", "--no-browser", f"--port={port}",
                                 "--ServerApp.ip=127.0.0.1", "--allow-root", f"--ServerApp.token={TOKEN}",
                                 f"--ServerApp.root_dir={root}",
                                 "--ServerApp.jpserver_extensions=attnwidgets.server=True"],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2):
                    break
            except OSError:
                assert proc.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.5)
        yield url, root
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def get(server: tuple[str, Path], path: str, token: str | None = TOKEN) -> tuple[int, dict[str, Any]]:
    query = urllib.parse.urlencode({"path": path})
    headers = {"Authorization": f"token {token}"} if token else {}
    request = urllib.request.Request(f"{server[0]}/attnwidgets/saved?{query}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        body = err.read()
        try:
            return err.code, json.loads(body)
        except ValueError:
            return err.code, {"body": body.decode("utf-8", "replace")}


def decode(spec: dict[str, Any]) -> np.ndarray:
    """A buffer of a saved state ({shape, dtype, buffer: {$b64}}) as an array."""
    raw = base64.b64decode(spec["buffer"]["$b64"])
    return np.frombuffer(raw, dtype=spec["dtype"]).reshape(spec["shape"])


def reply(view: dict[str, Any], **request: Any) -> np.ndarray:
    key = next(k for k in view["replies"] if all(json.loads(k).get(n) == v for n, v in request.items()))
    answer = view["replies"][key]
    return np.frombuffer(base64.b64decode(answer["buffers"][0]), answer["content"]["dtype"]).reshape(
        answer["content"]["shape"])


def grid(view: dict[str, Any]) -> dict[str, np.ndarray]:
    """A HeadStatsGrid's saved statistics, by name."""
    state = view["state"]
    stats = decode(state["_payload"]["stats"]).astype(np.float64)
    return dict(zip(state["_meta"]["names"], stats))


def views(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [v["state"] for v in answer["views"]]


def test_a_result_answers_its_heatmap_model_view_and_entropy_bars(server) -> None:
    status, answer = get(server, "result.npz")
    assert status == 200, answer
    assert answer["kind"] == "AttentionResult" and answer["name"] == "result.npz"
    heatmap, model_view, bars = views(answer)
    assert [heatmap["widget"], model_view["widget"], bars["widget"]] == ["AttentionHeatmap", "ModelView",
                                                                          "EntropyBars"]
    assert all(v["scope"] == "all" for v in (heatmap, model_view, bars))
    # The file's numbers (float16 in saved states): the shown head and another head from the saved replies.
    shown = decode(heatmap["state"]["_payload"]["matrix"]).astype(np.float32)
    np.testing.assert_allclose(shown, ATTENTION[0, 0], atol=1e-3)
    np.testing.assert_allclose(reply(heatmap, layer=1, head=2, what="matrix"), ATTENTION[1, 2], atol=1e-3)
    assert EVIL in heatmap["state"]["_meta"]["tokens"]["self"][0]  # the token text as it was saved: the page escapes it
    # Entropy of each head, computed here from the attention (mean over queries of -sum p log p).
    entropy = -(ATTENTION * np.log(ATTENTION)).sum(-1).mean(-1)
    np.testing.assert_allclose(grid(bars)["entropy"], entropy, rtol=2e-3)


def test_corpus_stats_answer_their_grids_with_the_files_numbers(server) -> None:
    status, answer = get(server, "sub/stats.npz")
    assert status == 200, answer
    assert answer["kind"] == "CorpusStats" and [v["widget"] for v in views(answer)] == ["HeadStatsGrid",
                                                                                          "EntropyBars"]
    assert grid(views(answer)[0])["sep"].tolist() == [[0.5, 1.0]]  # head 0 puts half of every row on [SEP]


def test_every_other_kind_answers_a_grid_of_its_numbers(server) -> None:
    status, deps = get(server, "deps.npz")
    assert status == 200, deps
    values = grid(views(deps)[0])
    np.testing.assert_allclose(values["dependent → head, all relations"], [[0.6, 0.6]], atol=1e-3)  # 3 of 5
    np.testing.assert_allclose(values["det: dependent → head"], [[0.75, 0.75]], atol=1e-3)  # 3 of 4
    assert deps["table"]["rows"][0][:2] == ["det", 4]
    status, sweep = get(server, "sweep.npz")
    assert status == 200, sweep
    values = grid(views(sweep)[0])
    np.testing.assert_allclose(values["change from the clean model"], [[0.5 - 0.75, 0.9 - 0.75]], atol=1e-3)
    assert views(sweep)[0]["state"]["_meta"]["signed"] == ["change from the clean model"]
    status, curve = get(server, "curve.npz")
    assert status == 200, curve
    np.testing.assert_allclose(grid(views(curve)[0])["importance"], [[0.6, 0.8]], atol=1e-3)
    assert curve["table"]["rows"] == [[0.0, 0, 0.8], [0.5, 1, 0.7]]
    status, imp = get(server, "imp.npz")
    assert status == 200, imp
    np.testing.assert_allclose(grid(views(imp)[0])["importance"], [[0.6, 0.8]], atol=1e-3)


def _loader_message(path: Path, name: str) -> str:
    with pytest.raises(SavedFileError) as err:
        aw.load(path)
    return str(err.value).replace(repr(str(path)), repr(name))


@pytest.mark.parametrize("name", ["tampered.npz", "plain.npz", "cut.npz"])
def test_a_tampered_damaged_or_foreign_file_answers_the_loaders_message(server, name: str) -> None:
    status, answer = get(server, name)
    assert status == 400, answer
    assert answer["error"] == _loader_message(server[1] / name, name)
    assert str(server[1]) not in answer["error"] and "Traceback" not in answer["error"]
    if name == "plain.npz":
        assert "is not a file attnwidgets saved" in answer["error"]


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(server) -> None:
    status, answer = get(server, "big.npz")
    assert status == 413 and "ATTNWIDGETS_DOC_MAX_BYTES" in answer["error"], answer


@pytest.mark.parametrize(("path", "status"), [
    ("../outside.npz", 403), ("sub/../../outside.npz", 403), ("link.npz", 403), (".hidden.npz", 403),
    ("/etc/passwd", 403), ("missing.npz", 404), ("notes.txt", 400), ("sub", 400), ("", 403)])
def test_paths_outside_the_root_hidden_or_not_npz_are_refused(server, path: str, status: int) -> None:
    got, answer = get(server, path)
    assert got == status, answer
    assert "views" not in answer and "error" in answer
    if path == "/etc/passwd":  # the absolute path of a file outside, known to exist: refused, not read
        assert "outside the server's folder" in answer["error"]


def test_absolute_path_of_a_file_inside_the_root_is_refused_too(server) -> None:
    got, answer = get(server, str(server[1] / "imp.npz"))
    assert got == 403, answer


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_a_request_without_the_servers_token_is_refused(server, token: str | None) -> None:
    status, answer = get(server, "imp.npz", token=token)
    assert status == 403, answer
    assert "views" not in answer
